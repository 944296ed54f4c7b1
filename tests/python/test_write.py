"""Writes through lance_host, checked by another reader: pylance 14.0.2 reads exactly what
lance_host wrote (every Arrow type the read path supports, nulls, versions, commit messages),
lance_host reads what pylance wrote on top, deletes equal pylance's own, and the distributed
protocol holds across worker processes (stage on N processes, one commit; concurrent appends
lose nothing; an overwrite racing a commit is one ConflictError; a retried commit is exactly
once; aborted shares leave no files)."""

import decimal
import os
import pickle
from concurrent.futures import ProcessPoolExecutor
from datetime import date, datetime, timezone
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")


def typed(start, end):
    """Rows with every type the read path hands to hosts, nulls included."""
    n = end - start
    ids = np.arange(start, end)
    null = [i % 7 == 3 for i in ids]
    rng = np.random.default_rng(start)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "i8": pa.array(ids % 100, pa.int8()), "i16": pa.array(ids % 30000, pa.int16()), "i32": pa.array(ids, pa.int32()),
        "u8": pa.array(ids % 200, pa.uint8()), "u16": pa.array(ids % 60000, pa.uint16()), "u32": pa.array(ids, pa.uint32()),
        "u64": pa.array(ids * 3, pa.uint64()),
        "f32": pa.array(ids / 3, pa.float32()), "f64": pa.array(ids / 7, pa.float64(), mask=np.array(null)),
        "flag": pa.array([i % 2 == 0 for i in ids], mask=np.array(null)),
        "name": pa.array([None if z else f"row {i}" for i, z in zip(ids, null)], pa.string()),
        "big": pa.array([f"large {i}" for i in ids], pa.large_string()),
        "raw": pa.array([bytes([int(i) % 256]) * int(i % 5) for i in ids], pa.binary()),
        "day": pa.array([date(2020, 1, 1 + int(i) % 28) for i in ids], pa.date32()),
        "at": pa.array([datetime(2021, 5, 1, tzinfo=timezone.utc)] * n, pa.timestamp("us", tz="UTC")),
        "price": pa.array([decimal.Decimal(int(i)) / 100 for i in ids], pa.decimal128(12, 2)),
        "tags": pa.array([[f"t{i % 3}"] * int(i % 3) for i in ids], pa.list_(pa.string())),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8, dtype=np.float32)), 8),
        "point": pa.StructArray.from_arrays([pa.array(ids, pa.int32()), pa.array(ids * 2, pa.int32())], ["x", "y"]),
    })


def sorted_table(t):
    return t.sort_by("id")


def test_pylance_reads_exactly_what_lance_host_wrote_and_the_other_way(tmp_path):
    uri = str(tmp_path / "typed.lance")
    want = pa.concat_tables([typed(0, 700), typed(700, 1000)])
    ds, r = lh.write_table(uri, want, commit_message="typed load", max_rows_per_file=400,
                           transaction_properties={"engine": "test"})
    assert (r.version, r.rows_written, r.committed) == (1, 1000, True) and r.files_written == 3
    py = lance.dataset(uri)
    assert py.schema == want.schema
    assert sorted_table(py.to_table()).equals(want)
    props = py.read_transaction(1).transaction_properties
    assert props["__lance_commit_message"] == "typed load" and props["engine"] == "test"
    # pylance appends on top; lance_host reads both writers' rows
    lance.write_dataset(typed(1000, 1200), uri, mode="append")
    both = lh.open(uri)
    assert both.version == 2 and both.count_rows() == 1200
    assert sorted_table(both.scan().read_all()).equals(sorted_table(lance.dataset(uri).to_table()))
    # lance_host appends after pylance, at the handle's version
    ds3, r = lh.write_table(uri, typed(1200, 1300), mode="append", at=both)
    assert r.version == 3 and lance.dataset(uri).count_rows() == 1300
    # an overwrite, then the versions both readers see
    lh.write_table(uri, typed(5, 10), mode="overwrite", storage_options={})
    py = lance.dataset(uri)
    assert [v["version"] for v in py.versions()] == [v.version for v in lh.open(uri).versions()] == [1, 2, 3, 4]
    assert sorted_table(py.to_table()).equals(typed(5, 10))
    assert lance.dataset(uri, version=3).count_rows() == 1300


def test_deletes_equal_pylance_deletes(tmp_path):
    ours, theirs = str(tmp_path / "a.lance"), str(tmp_path / "b.lance")
    data = typed(0, 2000)
    lh.write_table(ours, data)
    lance.write_dataset(data, theirs)
    for predicate in ["id % 3 = 0", "name IS NULL", "f32 > 500 AND flag", "tags IS NOT NULL AND u8 < 10"]:
        before = lh.open(ours)
        after, r = before.delete(predicate)
        py = lance.dataset(theirs)
        n = py.count_rows()
        py.delete(predicate)
        assert r.rows_deleted == n - lance.dataset(theirs).count_rows(), predicate
        assert sorted_table(lance.dataset(ours).to_table()).equals(sorted_table(lance.dataset(theirs).to_table()))
        assert before.count_rows() == n, "the handle keeps its version"
    with pytest.raises(lh.InvalidArgumentError):
        lh.open(ours).delete("no_such_column = 1")


def stage_on_worker(args):
    """A worker process: the snapshot token and its share of the rows arrive pickled."""
    uri, token, start, end = args
    import lance_host
    at = lance_host.open_snapshot(token)
    return lance_host.stage_write(uri, typed(start, end), at=at)


def append_on_worker(args):
    uri, start, end = args
    import lance_host
    for _ in range(20):  # Lance rebases concurrent appends; retry if its own budget ran out
        try:
            return lance_host.write_table(uri, typed(start, end), mode="append")[1].version
        except lance_host.ConflictError:
            continue
    raise AssertionError("no append succeeded")


def test_workers_stage_and_one_commit_makes_one_version_exactly_once(tmp_path):
    uri = str(tmp_path / "staged.lance")
    lh.write_table(uri, typed(0, 100))
    coordinator = lh.open(uri)
    token = coordinator.export_snapshot()
    shares = [(uri, token, 1000 * w, 1000 * w + 300) for w in range(1, 5)]
    with ProcessPoolExecutor(4, mp_context=get_context("spawn")) as pool:
        staged = list(pool.map(stage_on_worker, shares))
    assert all(s.result.rows_written == 300 for s in staged)
    assert lance.dataset(uri).version == 1, "staging commits nothing"
    staged = [pickle.loads(pickle.dumps(s)) for s in staged]  # as shipped to the coordinator
    ds, r = lh.commit(uri, staged, statement_id="stmt-7", commit_message="4 workers")
    assert (r.version, r.rows_written, r.committed) == (2, 1200, True)
    py = lance.dataset(uri)
    assert py.version == 2 and py.read_transaction(2).transaction_properties["__lance_commit_message"] == "4 workers"
    want = pa.concat_tables([typed(0, 100)] + [typed(s, e) for _, _, s, e in shares])
    assert sorted_table(py.to_table()).equals(sorted_table(want))
    # the coordinator retries after a crash between commit and answer: same version, rows once
    again, r = lh.commit(uri, staged, statement_id="stmt-7")
    assert (r.version, r.committed) == (2, False) and lance.dataset(uri).count_rows() == 1300
    # damaged bytes
    bad = bytearray(bytes(staged[0]))
    bad[len(bad) // 2] ^= 0xFF
    with pytest.raises(lh.CorruptError, match="staged"):
        lh.commit(uri, [lh.StagedWrite(bytes(bad))])
    assert lance.dataset(uri).version == 2


def test_four_processes_appending_at_once_lose_no_row(tmp_path):
    uri = str(tmp_path / "concurrent.lance")
    lh.write_table(uri, typed(0, 10))
    jobs = [(uri, 10_000 * w, 10_000 * w + 250) for w in range(1, 5)]
    with ProcessPoolExecutor(4, mp_context=get_context("spawn")) as pool:
        versions = list(pool.map(append_on_worker, jobs))
    assert sorted(versions) == [2, 3, 4, 5]
    ids = lance.dataset(uri).to_table(columns=["id"])["id"].to_pylist()
    want = list(range(10)) + [i for _, s, e in jobs for i in range(s, e)]
    assert sorted(ids) == sorted(want) and len(ids) == len(set(ids))


def test_an_overwrite_racing_a_commit_is_one_conflict_and_aborted_files_go(tmp_path):
    uri = str(tmp_path / "race.lance")
    lh.write_table(uri, typed(0, 100))
    planned = lh.open(uri)
    share = lh.stage_write(uri, typed(500, 510), mode="overwrite", at=planned)
    lance.write_dataset(typed(100, 150), uri, mode="append")  # another writer commits first
    with pytest.raises(lh.ConflictError, match="planned at version 1") as e:
        lh.commit(uri, [share])
    assert e.value.code == 13 and isinstance(e.value, RuntimeError)
    py = lance.dataset(uri)
    assert py.version == 2 and py.count_rows() == 150, "the table is intact"
    data = Path(uri) / "data"
    files = len(list(data.iterdir()))
    assert lh.abort_staged([share]) == 1 and len(list(data.iterdir())) == files - 1
    assert lh.abort_staged([share]) == 0
    assert lance.dataset(uri).count_rows() == 150


def test_bad_writes_raise_and_write_nothing(tmp_path):
    uri = str(tmp_path / "bad.lance")
    lh.write_table(uri, typed(0, 10))
    with pytest.raises(lh.InvalidArgumentError, match="already exists"):
        lh.write_table(uri, typed(0, 10))
    with pytest.raises(lh.InvalidArgumentError):
        lh.write_table(uri, pa.table({"id": ["not an int"]}), mode="append")
    with pytest.raises(lh.InvalidArgumentError, match="valid: 'create', 'append', 'overwrite'"):
        lh.write_table(uri, typed(0, 1), mode="upsert")
    with pytest.raises(lh.InvalidArgumentError, match="max_rows_per_file"):
        lh.write_table(uri, typed(0, 1), mode="append", max_rows_per_file=-1)
    with pytest.raises(lh.InvalidArgumentError, match="data must be"):
        lh.write_table(uri, [1, 2, 3], mode="append")

    def failing():
        yield typed(100, 110).to_batches()[0]
        raise ValueError("the source broke")

    reader = pa.RecordBatchReader.from_batches(typed(0, 1).schema, failing())
    with pytest.raises(lh.HostStreamError, match="the source broke"):
        lh.write_table(uri, reader, mode="append")
    assert lance.dataset(uri).version == 1 and lance.dataset(uri).count_rows() == 10


def test_updates_equal_pylance_updates(tmp_path):
    ours, theirs = str(tmp_path / "a.lance"), str(tmp_path / "b.lance")
    data = typed(0, 1500)
    lh.write_table(ours, data, max_rows_per_file=500)
    lance.write_dataset(data, theirs, max_rows_per_file=500)
    for values, where in [({"f32": "f32 * 2", "name": "'renamed'"}, "id % 4 = 1"),
                          ({"i32": "i32 + 1000"}, None),
                          ({"flag": "NOT flag"}, "flag IS NOT NULL AND id < 300")]:
        before = lh.open(ours)
        after, r = before.update(values, where)
        n = lance.dataset(theirs).update(values, where)["num_rows_updated"]
        assert r.rows_updated == n and r.committed, (values, where)
        assert sorted_table(after.scan().read_all()).equals(sorted_table(lance.dataset(theirs).to_table()))
    with pytest.raises(lh.InvalidArgumentError):
        lh.open(ours).update({"no_such_column": "1"})
    with pytest.raises(lh.InvalidArgumentError):
        lh.open(ours).update({"i32": "i32 +"})
    with pytest.raises(lh.InvalidArgumentError, match="non-empty mapping"):
        lh.open(ours).update({})


MERGES = [
    # (our arguments, how pylance's builder is configured)
    (dict(when_matched="update_all"), lambda b: b.when_matched_update_all().when_not_matched_insert_all()),
    (dict(when_matched="do_nothing"), lambda b: b.when_not_matched_insert_all()),
    (dict(when_matched="update_if", when_matched_condition="source.f32 > target.f32"),
     lambda b: b.when_matched_update_all("source.f32 > target.f32").when_not_matched_insert_all()),
    (dict(when_matched="update_all", when_not_matched="do_nothing", when_not_matched_by_source="delete"),
     lambda b: b.when_matched_update_all().when_not_matched_by_source_delete()),
    (dict(when_matched="update_all", when_not_matched_by_source="delete_if", by_source_condition="id < 200"),
     lambda b: b.when_matched_update_all().when_not_matched_insert_all().when_not_matched_by_source_delete("id < 200")),
]


@pytest.mark.parametrize("case", range(len(MERGES)))
def test_merge_inserts_equal_pylance_merge_inserts(tmp_path, case):
    ours_args, theirs_builder = MERGES[case]
    ours, theirs = str(tmp_path / "a.lance"), str(tmp_path / "b.lance")
    data = typed(0, 1000)
    lh.write_table(ours, data)
    lance.write_dataset(data, theirs)
    # the source: changed copies of ids 500..1200 (500 match, 200 are new)
    source = typed(500, 1200)
    source = source.set_column(source.schema.get_field_index("f32"), "f32",
                               pa.array(np.where(np.arange(700) % 2 == 0, 1e6, -1.0), pa.float32()))
    after, r = lh.open(ours).merge_insert(source, "id", **ours_args)
    stats = theirs_builder(lance.dataset(theirs).merge_insert("id")).execute(source)
    assert (r.rows_inserted, r.rows_updated, r.rows_deleted) == (
        stats["num_inserted_rows"], stats["num_updated_rows"], stats["num_deleted_rows"]), (r, stats)
    assert sorted_table(after.scan().read_all()).equals(sorted_table(lance.dataset(theirs).to_table()))


def test_bad_merge_inserts_write_nothing(tmp_path):
    uri = str(tmp_path / "m.lance")
    ds, _ = lh.write_table(uri, typed(0, 100))
    with pytest.raises(lh.InvalidArgumentError, match="no_key"):
        ds.merge_insert(typed(0, 10), "no_key", when_matched="update_all")
    with pytest.raises(lh.InvalidArgumentError, match="valid: 'do_nothing'"):
        ds.merge_insert(typed(0, 10), "id", when_matched="upsert")
    with pytest.raises(lh.InvalidArgumentError, match="when_matched_condition"):
        ds.merge_insert(typed(0, 10), "id", when_matched="update_if")
    with pytest.raises(lh.LanceError):
        ds.merge_insert(typed(0, 10), "id", when_matched="fail")
    with pytest.raises(lh.InvalidArgumentError):
        ds.merge_insert(pa.table({"id": ["x"]}), "id", when_matched="update_all")
    assert lance.dataset(uri).version == 1 and lance.dataset(uri).count_rows() == 100


def test_maintenance_interoperates_with_pylance(tmp_path):
    uri = str(tmp_path / "maint.lance")
    ds, _ = lh.write_table(uri, typed(0, 100))
    for i in range(1, 5):
        ds, _ = lh.write_table(uri, typed(i * 100, i * 100 + 100), mode="append", at=ds)
    ds.create_tag("v2", 2)
    lance.dataset(uri).tags.create("from-pylance", 3)
    assert ds.tags() == {"from-pylance": 3, "v2": 2}
    assert {k: v["version"] for k, v in lance.dataset(uri).tags.list().items()} == {"from-pylance": 3, "v2": 2}
    compacted, r = ds.compact()
    assert r.version == compacted.version == lance.dataset(uri).version > 5
    assert (r.fragments_removed, r.fragments_added) == (5, 1)
    assert len(lance.dataset(uri).get_fragments()) == 1
    written = pa.concat_tables([typed(i * 100, i * 100 + 100) for i in range(5)])
    assert sorted_table(lance.dataset(uri).to_table()).equals(written)
    at_tag = lh.open_tag(uri, "v2")
    assert at_tag.version == 2 and at_tag.count_rows() == 200
    import time
    time.sleep(0.05)
    removed = compacted.cleanup(older_than_ms=1)
    assert removed.versions_removed >= 3 and removed.bytes_removed > 0
    assert [v["version"] for v in lance.dataset(uri).versions()] == [2, 3, r.version]  # tagged + latest
    restored = at_tag.restore()
    assert restored.version == r.version + 1 and lance.dataset(uri).count_rows() == 200
    ds.delete_tag("v2")
    assert "v2" not in lance.dataset(uri).tags.list()
    with pytest.raises(lh.NotFoundError):
        lh.open_tag(uri, "v2")
    with pytest.raises(lh.InvalidArgumentError, match="bad tag name"):
        ds.create_tag("a/b")


def delete_on_worker(args):
    """A worker process: the table's pinned version (token) and its split arrive pickled."""
    token, split, predicate = args
    import lance_host
    return lance_host.open_snapshot(token).stage_delete(predicate, split)


def test_a_delete_staged_on_worker_processes_equals_pylance_delete(tmp_path):
    ours, theirs = str(tmp_path / "a.lance"), str(tmp_path / "b.lance")
    data = typed(0, 2000)
    lh.write_table(ours, data, max_rows_per_file=400)
    lance.write_dataset(data, theirs, max_rows_per_file=400)
    predicate = "id % 3 = 0 OR (id >= 1600 AND id < 2000) OR name IS NULL"
    coordinator = lh.open(ours)
    splits = coordinator.plan_scan(0)
    assert len(splits) == 5
    jobs = [(coordinator.export_snapshot(), s, predicate) for s in splits]
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        shares = list(pool.map(delete_on_worker, jobs))
    assert lance.dataset(ours).version == 1, "staging commits nothing"
    after, r = lh.commit(ours, shares, statement_id="del-1", commit_message="distributed delete")
    py = lance.dataset(theirs)
    n = py.count_rows()
    py.delete(predicate)
    assert r.rows_deleted == sum(s.result.rows_deleted for s in shares) == n - lance.dataset(theirs).count_rows()
    assert r.version == 2 and lance.dataset(ours).version == 2
    assert sorted_table(lance.dataset(ours).to_table()).equals(sorted_table(lance.dataset(theirs).to_table()))
    assert len(lance.dataset(ours).get_fragments()) == 4, "the fragment all of whose rows went is gone"
    assert lance.dataset(ours).read_transaction(2).transaction_properties["__lance_commit_message"] == "distributed delete"
    assert lh.commit(ours, shares, statement_id="del-1")[1].committed is False
    with pytest.raises(lh.InvalidArgumentError, match="two staged deletes"):
        lh.commit(ours, [shares[0], shares[0]])


@pytest.mark.parametrize("case", [0, 3])
def test_a_staged_merge_insert_equals_pylance_merge_insert(tmp_path, case):
    ours_args, theirs_builder = MERGES[case]
    ours, theirs = str(tmp_path / "a.lance"), str(tmp_path / "b.lance")
    data = typed(0, 1000)
    lh.write_table(ours, data)
    lance.write_dataset(data, theirs)
    source = typed(500, 1200)
    staged = pickle.loads(pickle.dumps(lh.open(ours).stage_merge_insert(source, "id", **ours_args)))
    assert lance.dataset(ours).version == 1
    after, r = lh.commit(ours, [staged])
    stats = theirs_builder(lance.dataset(theirs).merge_insert("id")).execute(source)
    assert (r.rows_inserted, r.rows_updated, r.rows_deleted) == (
        stats["num_inserted_rows"], stats["num_updated_rows"], stats["num_deleted_rows"])
    assert (staged.result.rows_inserted, staged.result.rows_updated) == (r.rows_inserted, r.rows_updated)
    assert sorted_table(lance.dataset(ours).to_table()).equals(sorted_table(lance.dataset(theirs).to_table()))


def compact_on_worker(args):
    uri, task = args
    import lance_host
    return lance_host.open(uri).execute_compaction_task(task)


def test_a_compaction_run_on_worker_processes_is_one_version_pylance_reads(tmp_path):
    uri = str(tmp_path / "c.lance")
    ds, _ = lh.write_table(uri, typed(0, 100))
    for i in range(1, 9):
        ds, _ = lh.write_table(uri, typed(i * 100, i * 100 + 100), mode="append", at=ds)
    ds, _ = ds.delete("id % 10 = 0")
    tasks = ds.plan_compaction(target_rows_per_fragment=300)
    assert len(tasks) >= 2 and all(isinstance(t, bytes) for t in tasks)
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        results = list(pool.map(compact_on_worker, [(uri, t) for t in tasks]))
    assert lance.dataset(uri).version == ds.version, "workers commit nothing"
    compacted, r = ds.commit_compaction(results, target_rows_per_fragment=300)
    assert r.version == lance.dataset(uri).version > ds.version
    assert r.fragments_removed == 9 and len(lance.dataset(uri).get_fragments()) == r.fragments_added
    want = pa.concat_tables([typed(i * 100, i * 100 + 100) for i in range(9)])
    want = want.filter(pa.compute.not_equal(pa.compute.remainder(want["id"], 10), 0))
    assert sorted_table(lance.dataset(uri).to_table()).equals(sorted_table(want))
    with pytest.raises(lh.CorruptError):
        ds.commit_compaction([tasks[0]])


def test_added_and_dropped_columns_equal_pylance(tmp_path):
    ours, theirs = str(tmp_path / "a.lance"), str(tmp_path / "b.lance")
    data = typed(0, 500)
    ds, _ = lh.write_table(ours, data)
    lance.write_dataset(data, theirs)
    ds = ds.add_columns({"twice": "id * 2", "label": "concat(name, '!')"})
    lance.dataset(theirs).add_columns({"twice": "id * 2", "label": "concat(name, '!')"})
    ds = ds.add_null_columns(pa.schema([pa.field("note", pa.string()), pa.field("score", pa.float64())]))
    lance.dataset(theirs).add_columns([pa.field("note", pa.string()), pa.field("score", pa.float64())])
    ds = ds.drop_columns(["raw", "note"])
    lance.dataset(theirs).drop_columns(["raw", "note"])
    mine, other = lance.dataset(ours).to_table(), lance.dataset(theirs).to_table()
    assert mine.schema == other.schema
    assert sorted_table(mine).equals(sorted_table(other))
    assert sorted_table(ds.scan().read_all()).equals(sorted_table(other))
    assert lance.dataset(ours).version == 4
    with pytest.raises(lh.InvalidArgumentError, match="already exists"):
        ds.add_columns({"twice": "1"})
    with pytest.raises(lh.InvalidArgumentError, match="not nullable"):
        ds.add_null_columns(pa.schema([pa.field("strict", pa.int32(), nullable=False)]))
    with pytest.raises(lh.InvalidArgumentError, match="ghost"):
        ds.drop_columns("ghost")
    assert lance.dataset(ours).version == 4


def slow_stage(uri, token, marker):
    """A worker that stages a long stream: it writes files as it goes and is killed mid-way."""
    import lance_host

    def batches():
        for i in range(10_000):
            if i == 3:
                Path(marker).touch()
            yield typed(10_000 + i * 50, 10_050 + i * 50).to_batches()[0]
            import time
            time.sleep(0.05)

    reader = pa.RecordBatchReader.from_batches(typed(0, 1).schema, batches())
    lance_host.stage_write(uri, reader, at=lance_host.open_snapshot(token), max_rows_per_file=100)


def test_a_worker_killed_mid_stage_leaves_nothing_visible_and_cleanup_removes_its_files(tmp_path):
    import signal
    import time
    uri = str(tmp_path / "killed.lance")
    ds, _ = lh.write_table(uri, typed(0, 100))
    committed_files = set(os.listdir(Path(uri) / "data"))
    marker = tmp_path / "started"
    worker = get_context("spawn").Process(target=slow_stage, args=(uri, ds.export_snapshot(), str(marker)))
    worker.start()
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert worker.is_alive() and time.monotonic() < deadline, "the worker did not start staging"
        time.sleep(0.05)
    while len(set(os.listdir(Path(uri) / "data")) - committed_files) == 0:
        assert time.monotonic() < deadline, "the worker wrote no file"
        time.sleep(0.05)
    os.kill(worker.pid, signal.SIGKILL)
    worker.join()
    assert worker.exitcode == -signal.SIGKILL
    orphans = set(os.listdir(Path(uri) / "data")) - committed_files
    assert orphans, "the killed worker left files"
    py = lance.dataset(uri)
    assert py.version == 1 and sorted_table(py.to_table()).equals(typed(0, 100)), "nothing visible"
    removed = lh.open(uri).cleanup(older_than_ms=0, delete_unverified=True)
    assert set(os.listdir(Path(uri) / "data")) == committed_files
    assert lance.dataset(uri).to_table().num_rows == 100


def test_a_handle_opened_from_a_token_commits_as_any_other(tmp_path):
    """A handle opened from a snapshot token resolves its own version from the token (no request
    to find the manifest) and everything else as Lance does: a delete planned on it after
    another writer appended commits on top of that append, and pylance reads the result."""
    uri = str(tmp_path / "t.lance")
    ds, _ = lh.write_table(uri, typed(0, 300), max_rows_per_file=100)
    token = ds.export_snapshot()
    lance.write_dataset(typed(300, 400), uri, mode="append")  # another writer: version 2
    at = lh.open_snapshot(token)
    assert at.version == 1
    new, r = at.delete("id % 2 = 0")
    assert (new.version, r.rows_deleted) == (3, 150)
    theirs = lance.dataset(uri)
    assert theirs.version == 3
    assert sorted(theirs.to_table(columns=["id"])["id"].to_pylist()) == \
        [i for i in range(300) if i % 2] + list(range(300, 400))
    # The token's handle still reads its version; the latest version is found as usual.
    assert at.count_rows() == 300 and at.latest_version() == 3


def test_commit_refuses_file_layout_parameters(tmp_path):
    """`commit` would not use a file-layout parameter (the shares' files are written): refused
    naming the function, nothing committed."""
    import lance_host as lh2
    uri = str(tmp_path / "c.lance")
    share = lh2.stage_write(uri, pa.table({"id": pa.array([1, 2], pa.int64())}), mode="create")
    with pytest.raises(lh2.InvalidArgumentError, match="max_rows_per_file"):
        lh2.commit(uri, [share], max_rows_per_file=10)
    assert not (tmp_path / "c.lance" / "_versions").exists()
    _, r = lh2.commit(uri, [share], commit_message="ok")
    assert r.rows_written == 2
