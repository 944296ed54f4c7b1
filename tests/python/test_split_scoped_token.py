"""Split-scoped snapshot tokens (issue 62, scale): a planner ships each worker the manifest cut
down to its split's fragments; the worker's scans, counts and aggregates of that split equal
pylance's answer at the pinned version, the token's size follows the split rather than the
table, and every call that would read the whole table through such a handle is refused."""

import multiprocessing as mp

import pyarrow as pa
import pyarrow.compute as pc
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")

N, PER_FILE = 6000, 200  # 30 fragments


def rows(start, n):
    ids = list(range(start, start + n))
    price = [float("nan") if i % 97 == 0 else (-float("nan") if i % 89 == 0 else (i % 53) * 1.25) for i in ids]
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "price": pa.array(price, pa.float64()),
        "name": pa.array([None if i % 11 == 0 else f"名前-{i % 40}\u00e9" for i in ids]),
        "cat": pa.array([f"c{i % 5}" for i in ids]),
    })


@pytest.fixture(scope="module", params=["row addresses", "stable row ids"])
def table(request, tmp_path_factory):
    """30 fragments written by pylance, a BTREE index on `id`, a bitmap index on `cat`, and
    deleted rows; a version after the one the tests pin moves the table on."""
    stable = request.param == "stable row ids"
    uri = str(tmp_path_factory.mktemp("scoped") / "t.lance")
    lance.write_dataset(rows(0, N), uri, max_rows_per_file=PER_FILE, enable_stable_row_ids=stable)
    ds = lance.dataset(uri)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.delete("id % 7 = 0 OR id BETWEEN 1000 AND 1199")  # fragment 5 wholly deleted
    pinned = lance.dataset(uri).version
    lance.write_dataset(rows(N, 400), uri, mode="append")  # moves on after the pin
    return uri, pinned


def judge(uri, version, columns, filter=None, with_row_id=False):
    return lance.dataset(uri, version=version).to_table(columns=columns, filter=filter, with_row_id=with_row_id)


def by_id(t):
    return t.sort_by("id")


def scoped_workers(uri, version, target_rows=0):
    """(split bytes, scoped token) per split of the plan, as a planner ships them."""
    planner = lh.open(uri, version=version)
    return [(bytes(s), planner.export_split_snapshot(s)) for s in planner.plan_scan(target_rows)], planner


@pytest.mark.parametrize("target_rows", [0, 70])
def test_split_scans_on_scoped_tokens_equal_pylance(table, target_rows):
    uri, version = table
    shipped, planner = scoped_workers(uri, version, target_rows)
    assert len(shipped) >= 29
    if target_rows:
        assert any(lh.Split.from_bytes(s).row_slice is not None for s, _ in shipped)
    for filt in [None, "id > 2500 AND cat = 'c3'", "price > 20.0 OR name IS NULL", "name = '名前-3é'"]:
        got = []
        for split_bytes, token in shipped:
            worker = lh.open_snapshot(token)
            assert worker.version == version
            got.append(worker.scan_split(lh.Split.from_bytes(split_bytes), ["id", "price", "name", "cat"],
                                         filter=filt, with_row_id=True).read_all())
        got = by_id(pa.concat_tables(got))
        want = by_id(judge(uri, version, ["id", "price", "name", "cat"], filt, with_row_id=True))
        assert got.num_rows == want.num_rows > 0, filt
        assert got.column("_rowid").equals(want.column("_rowid")), filt
        for c in ["id", "name", "cat"]:
            assert got.column(c).equals(want.column(c)), (filt, c)
        # NaN of either sign: compare the bit patterns
        bits = lambda t: pc.cast(t.column("price"), pa.float64()).to_numpy(zero_copy_only=False).view("u8").tolist()
        assert bits(got) == bits(want), filt


def test_counts_and_aggregates_of_scoped_splits_equal_pylance(table):
    uri, version = table
    shipped, _ = scoped_workers(uri, version, 500)
    total, partials = 0, []
    for split_bytes, token in shipped:
        worker = lh.open_snapshot(token)
        split = lh.Split.from_bytes(split_bytes)
        n, _ = worker.count_split_rows(split, "cat = 'c1'")
        total += n
        partials.append(worker.aggregate_split(split, [("id", "sum"), (None, "count_all")], group_by="cat",
                                               filter="id > 10")[0])
    want = judge(uri, version, ["id", "cat"])
    assert total == pc.sum(pc.equal(want["cat"], "c1")).as_py()
    merged = lh.merge_aggregates(partials).sort_by("cat")
    w = want.filter(pc.greater(want["id"], 10)).group_by("cat").aggregate([("id", "sum"), ("id", "count")]).sort_by("cat")
    assert merged.column(0).to_pylist() == w["cat"].to_pylist()
    assert merged.column(1).to_pylist() == w["id_sum"].to_pylist()
    assert merged.column(2).to_pylist() == w["id_count"].to_pylist()


def test_a_scoped_token_is_small_and_carries_its_split_only(table):
    uri, version = table
    planner = lh.open(uri, version=version)
    full = planner.export_snapshot()
    splits = planner.plan_scan(0)
    one = planner.export_split_snapshot(splits[0])
    assert len(full) - len(one) > 29 * 50, (len(one), len(full))  # 29 fragments fewer
    assert uri.encode() in one
    # bytes of a two-fragment split lie between
    two = planner.export_split_snapshot(lh.Split.combine(splits[:2]))
    assert len(one) < len(two) < len(full)


def test_whole_table_calls_on_a_scoped_handle_are_refused(table):
    uri, version = table
    planner = lh.open(uri, version=version)
    splits = planner.plan_scan(0)
    worker = lh.open_snapshot(planner.export_split_snapshot(splits[3]))
    # what every handle answers
    assert worker.version == version and worker.uri == planner.uri
    assert worker.schema == planner.schema
    refused = {
        "count_rows": lambda: worker.count_rows(),
        "scan": lambda: worker.scan(["id"]).read_all(),
        "fragments": lambda: worker.fragments(),
        "export_snapshot": lambda: worker.export_snapshot(),
        "take": lambda: worker.take([0]),
        "plan_scan": lambda: worker.plan_scan(0),
        "aggregate": lambda: worker.aggregate([(None, "count_all")]),
        "another split": lambda: worker.scan_split(splits[4], ["id"]).read_all(),
    }
    for what, call in refused.items():
        with pytest.raises(lh.InvalidArgumentError) as e:
            call()
        assert "split-scoped snapshot token" in e.value.message, what
    assert "fragment" in str(e.value)
    # a split of its own fragment runs; a scoped token of it can be made again
    assert worker.scan_split(splits[3], ["id"]).read_all().num_rows == splits[3].row_count
    again = lh.open_snapshot(worker.export_split_snapshot(splits[3]))
    assert again.scan_split(splits[3], ["id"]).read_all().num_rows == splits[3].row_count
    with pytest.raises(lh.InvalidArgumentError):
        worker.export_split_snapshot(splits[4])


def test_only_scan_splits_get_scoped_tokens(tmp_path):
    uri = str(tmp_path / "v.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(300), pa.int64()),
                                  "v": pa.FixedSizeListArray.from_arrays(pa.array([float(i % 17) for i in range(1200)], pa.float32()), 4)}),
                        uri, max_rows_per_file=100)
    ds = lh.open(uri)
    flat = ds.plan_vector_search("v", use_index=False)
    assert flat
    with pytest.raises(lh.NotSupportedError) as e:
        ds.export_split_snapshot(flat[0])
    assert "scan splits only" in e.value.message
    other = lh.open(uri, version=1)
    lance.write_dataset(pa.table({"id": pa.array([1000], pa.int64()),
                                  "v": pa.FixedSizeListArray.from_arrays(pa.array([1.0] * 4, pa.float32()), 4)}), uri, mode="append")
    newer = lh.open(uri)
    with pytest.raises(lh.InvalidArgumentError):
        newer.export_split_snapshot(other.plan_scan(0)[0])  # a split of another version


def test_damaged_scoped_tokens_are_corrupt(table):
    uri, version = table
    planner = lh.open(uri, version=version)
    token = planner.export_split_snapshot(planner.plan_scan(0)[2])
    for bad in [token[:-1], token[:-9], token[:20], token[:-4] + bytes(4)]:
        with pytest.raises(lh.CorruptError):
            lh.open_snapshot(bad)
    flipped = bytearray(token)
    flipped[len(token) // 2] ^= 0x40
    with pytest.raises(lh.CorruptError):
        lh.open_snapshot(bytes(flipped))


def _worker(args):
    split_bytes, token = args
    import lance_host as lh
    worker = lh.open_snapshot(token)
    return worker.scan_split(lh.Split.from_bytes(split_bytes), ["id"], filter="cat = 'c2'").read_all()["id"].to_pylist()


def test_scoped_tokens_run_in_other_processes(table):
    uri, version = table
    shipped, _ = scoped_workers(uri, version, 0)
    with mp.get_context("spawn").Pool(2) as pool:
        got = sorted(i for part in pool.map(_worker, shipped) for i in part)
    assert got == sorted(judge(uri, version, ["id"], "cat = 'c2'")["id"].to_pylist())
