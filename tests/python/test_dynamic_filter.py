"""Dynamic filters (issue 60): a predicate the host tightens while a scan runs. Every batch a
stream returns after an update returned holds exactly the rows the final predicate keeps of
the rows the scan had not returned yet (pylance's answer to the same predicate written out,
with the row positions of an ordered scan); SQL and key-set updates; NaN of both signs,
infinities and NULLs as a static filter treats them; the filter's columns read and dropped
when the host did not project them; split scans, polled streams, bad updates refused."""
import threading

import lance
import pyarrow as pa
import pytest

import lance_host as lh

N = 12_000
BATCH = 500


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("dynamic") / "t.lance")
    ids = list(range(N))
    x = [float("nan") if i % 97 == 0 else -float("nan") if i % 89 == 0 else float("inf") if i % 83 == 0
         else -float("inf") if i % 79 == 0 else -0.0 if i % 73 == 0 else None if i % 71 == 0
         else (i % 200) - 100.5 for i in ids]
    data = pa.table({
        "id": pa.array(ids, pa.int64()),
        "g": pa.array([None if i % 61 == 0 else i % 10 for i in ids], pa.int32()),
        "x": pa.array(x, pa.float64()),
        "name": pa.array([f"név-{i % 37}\x00{i}" for i in ids]),
    })
    lance.write_dataset(data, uri, max_rows_per_file=4000)
    return uri


def ids_where(uri, predicate, lo=0):
    t = lance.dataset(uri).to_table(columns=["id"], filter=f"id >= {lo} AND ({predicate})")
    return sorted(t["id"].to_pylist())


def test_tightened_mid_stream_gives_exactly_the_rows_of_the_final_predicate(table):
    ds = lh.open(table)
    f = lh.DynamicFilter(ds, ["g", "x"])
    assert f.generation == 0
    stream = ds.scan_stream(columns=["id", "name"], dynamic_filter=f, batch_size=BATCH)
    assert stream.schema.names == ["id", "name"]
    it = iter(stream)
    first = [next(it) for _ in range(3)]  # no predicate yet: every row
    assert [b.num_rows for b in first] == [BATCH] * 3
    seen = 3 * BATCH

    f.set_sql("g < 5")
    assert f.generation == 1
    part = []
    for _ in range(4):
        b = next(it)
        assert b.schema.names == ["id", "name"]
        part.extend(b["id"].to_pylist())
    # the scan is ordered: the rows after the update are the table's from `seen` on
    cut = part[-1] + 1
    assert part == [i for i in ids_where(table, "g < 5", seen) if i < cut]

    f.set_keys("g", pa.array([1, 3], pa.int64()))  # tighter: a subset of g < 5
    rest = [i for b in it for i in b["id"].to_pylist()]
    assert rest == ids_where(table, "g IN (1, 3)", cut)
    assert f.generation == 2


@pytest.mark.parametrize("predicate", [
    "x > 0", "x < 0", "x = 0", "x >= -100", "x IS NULL", "x IS NOT NULL AND g = 3", "isnan(x)",
    "NOT isnan(x) AND x < 1e308", "g IS NULL OR x > 1e308", "g BETWEEN 2 AND 4",
])
def test_a_predicate_set_before_reading_equals_the_static_filter(table, predicate):
    """NaN of both signs, infinities, -0.0 and NULLs: the dynamic predicate keeps exactly the
    rows pylance's static filter keeps."""
    ds = lh.open(table)
    f = lh.DynamicFilter(ds, ["x", "g"])
    f.set_sql(predicate)
    got = sorted(i for b in ds.scan_stream(columns=["id"], dynamic_filter=f, batch_size=BATCH)
                 for i in b["id"].to_pylist())
    assert got == ids_where(table, predicate)


def test_split_scans_and_polled_streams_take_the_filter(table):
    ds = lh.open(table)
    f = lh.DynamicFilter(ds, "g")
    f.set_sql("g = 7")
    got = []
    for s in ds.plan_scan(target_rows=3000):
        got.extend(ds.scan_split(s, columns=["id", "x"], dynamic_filter=f).read_all()["id"].to_pylist())
    assert sorted(got) == ids_where(table, "g = 7")

    # a predicate that keeps nothing: batches it empties are skipped, the stream just ends
    f.set_keys("g", pa.array([], pa.int32()))
    stream = ds.scan_stream(columns=["id"], dynamic_filter=f, batch_size=BATCH)
    woke = threading.Event()
    while True:
        state, batch = stream.poll(woke.set)
        if state == "end":
            break
        if state == "pending":
            assert woke.wait(60)
            woke.clear()
            continue
        assert batch.num_rows > 0
        pytest.fail("a batch came through a predicate that keeps no row")


def test_updates_from_another_thread_while_reading(table):
    """The join thread tightens while the probe thread reads: each batch read after an update
    returned satisfies it."""
    ds = lh.open(table)
    f = lh.DynamicFilter(ds, ["g"])
    stream = ds.scan_stream(columns=["id", "g"], dynamic_filter=f, batch_size=200)
    allowed = [set(range(10)) | {None}, set(range(8)), {0, 2, 4}, {4}]
    done = []
    it = iter(stream)
    for step, keep in enumerate(allowed):
        if step:
            t = threading.Thread(target=f.set_sql, args=(f"g IN ({', '.join(map(str, sorted(keep)))})",))
            t.start()
            t.join()
        for _ in range(5):
            b = next(it, None)
            if b is None:
                break
            assert set(b["g"].to_pylist()) <= keep, (step, set(b["g"].to_pylist()))
            done.append(b.num_rows)
    assert len(done) == 20 and f.generation == 3


def test_bad_filters_and_updates_are_refused_and_change_nothing(table, tmp_path):
    ds = lh.open(table)
    with pytest.raises(lh.InvalidArgumentError, match="nope"):
        lh.DynamicFilter(ds, ["g", "nope"])
    with pytest.raises(lh.InvalidArgumentError, match="at least one column"):
        lh.DynamicFilter(ds, [])
    with pytest.raises(lh.InvalidArgumentError, match="twice"):
        lh.DynamicFilter(ds, ["g", "g"])
    f = lh.DynamicFilter(ds, ["g"])
    f.set_sql("g > 2")
    for bad in ["x > 0", "g >", "g IN (", "id = 3", "$1 = g"]:
        with pytest.raises(lh.InvalidArgumentError):
            f.set_sql(bad)
    with pytest.raises(lh.InvalidArgumentError):
        f.set_keys("x", pa.array([1.0]))
    with pytest.raises(lh.InvalidArgumentError):
        f.set_keys("g", pa.array(["not a number"]))
    assert f.generation == 1
    got = sorted(i for b in ds.scan_stream(columns=["id"], dynamic_filter=f) for i in b["id"].to_pylist())
    assert got == ids_where(table, "g > 2")  # the refused updates left "g > 2" in place

    with pytest.raises(lh.InvalidArgumentError, match="limit"):
        ds.scan(columns=["id"], dynamic_filter=f, limit=10)
    other = str(tmp_path / "other.lance")
    lance.write_dataset(pa.table({"g": pa.array([1, 2], pa.int32())}), other)
    with pytest.raises(lh.InvalidArgumentError, match="made for table"):
        lh.open(other).scan(dynamic_filter=f)

    # a stream keeps the predicate it last saw after the handle is freed
    stream = ds.scan_stream(columns=["id"], dynamic_filter=f, batch_size=BATCH)
    f.close()
    got = sorted(i for b in stream for i in b["id"].to_pylist())
    assert got == ids_where(table, "g > 2")
    with pytest.raises(lh.FailedPreconditionError):
        f.set_sql("g > 3")


def test_a_deleted_rows_split_refuses_key_sets_and_dynamic_filters(tmp_path):
    """The deleted rows of a change plan are read from an older version without Lance's scan:
    a key set or a dynamic filter there is refused, never silently ignored."""
    uri = str(tmp_path / "changes.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(100), pa.int64())}), uri, enable_stable_row_ids=True)
    lance.dataset(uri).delete("id < 10")
    ds = lh.open(uri)
    deleted = [s for s in ds.plan_changes(1, types=["delete"])]
    assert deleted
    f = lh.DynamicFilter(ds, ["id"])
    for kw in ({"keys": ("id", [1, 2])}, {"dynamic_filter": f}):
        with pytest.raises(lh.InvalidArgumentError, match="key set, dynamic filter"):
            ds.scan_split(deleted[0], ["id"], **kw).read_all()
    assert sorted(ds.scan_split(deleted[0], ["id"]).read_all()["id"].to_pylist()) == list(range(10))
