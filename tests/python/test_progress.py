"""Progress reports of long calls besides index builds (issue 62): one-call and staged writes
(rows taken from the host's stream), compaction (rewrite tasks) and cleanup (its steps) report
to the receiver of the bound call context; what they did is checked with pylance."""
import time

import lance
import pyarrow as pa

import lance_host as lh

ROWS = 200_000
BATCH = 10_000


def rows(start, n):
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"id": ids, "name": pa.array([f"n{i}" for i in range(start, start + n)])})


def reader(table, batch=BATCH):
    return pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=batch))


def recording():
    reports = []
    return reports, lh.CallContext(progress=lambda stage, done, total, unit: reports.append((stage, done, total, unit)))


def check_write_reports(reports, n):
    assert {(s, u) for s, _, _, u in reports} == {("write", "rows")}, reports
    done = [d for _, d, _, _ in reports]
    assert done[0] == 0 and reports[0][2] == 0, reports
    assert done == sorted(done), reports
    # the last report gives every row as done and total; the ones before have no total yet
    assert reports[-1][1:3] == (n, n), reports
    assert all(t == 0 for _, _, t, _ in reports[:-1]), reports
    # one report per 65,536 rows at least, not one per batch
    assert n // 65_536 + 1 <= len(reports) <= n // BATCH + 2, reports


def test_a_one_call_write_reports_the_rows_taken_from_the_host(tmp_path):
    uri = str(tmp_path / "w.lance")
    data = rows(0, ROWS)
    reports, ctx = recording()
    with ctx:
        lh.write_table(uri, reader(data))
    check_write_reports(reports, ROWS)
    got = lance.dataset(uri).to_table().sort_by("id")
    assert got.equals(data)
    # an append reports its own rows; without a context nothing is reported and it writes the same
    reports, ctx = recording()
    with ctx:
        lh.write_table(uri, reader(rows(ROWS, 70_000)), mode="append")
    check_write_reports(reports, 70_000)
    lh.write_table(uri, reader(rows(ROWS + 70_000, 5)), mode="append")
    assert lance.dataset(uri).count_rows() == ROWS + 70_005


def test_a_staged_write_reports_its_share(tmp_path):
    uri = str(tmp_path / "s.lance")
    lance.write_dataset(rows(0, 10), uri)
    at = lh.open(uri)
    reports, ctx = recording()
    with ctx:
        share = lh.stage_write(uri, reader(rows(10, 100_000)), at=at)
    check_write_reports(reports, 100_000)
    assert lance.dataset(uri).count_rows() == 10, "staging committed nothing"
    lh.commit(uri, [share])
    assert lance.dataset(uri).to_table().sort_by("id").equals(rows(0, 100_010))


def test_a_merge_insert_reports_its_source_rows(tmp_path):
    uri = str(tmp_path / "m.lance")
    lance.write_dataset(rows(0, 50_000), uri)
    source = rows(40_000, 80_000)  # 10,000 rows update, 70,000 insert
    reports, ctx = recording()
    with ctx:
        lh.open(uri).merge_insert(reader(source), on="id", when_matched="update_all", when_not_matched="insert")
    check_write_reports(reports, 80_000)
    assert lance.dataset(uri).to_table().sort_by("id").equals(rows(0, 120_000))


def test_a_failing_host_stream_reports_no_end(tmp_path):
    """A write whose host stream fails never reports done = total (it did not finish)."""
    uri = str(tmp_path / "f.lance")
    good = rows(0, 100_000).to_batches(max_chunksize=BATCH)

    def batches():
        yield from good
        raise ValueError("the host's source broke")

    reports, ctx = recording()
    with ctx:
        try:
            lh.write_table(uri, pa.RecordBatchReader.from_batches(good[0].schema, batches()))
            raise AssertionError("the write succeeded")
        except lh.LanceError:
            pass
    assert reports and reports[0][1:3] == (0, 0), reports
    assert all(t == 0 for _, _, t, _ in reports), reports


def test_compaction_reports_each_rewrite_task(tmp_path):
    uri = str(tmp_path / "c.lance")
    data = rows(0, 12_000)
    lance.write_dataset(data, uri, max_rows_per_file=1_000)
    before = lance.dataset(uri)
    assert len(before.get_fragments()) == 12
    reports, ctx = recording()
    with ctx:
        ds, result = lh.open(uri).compact(target_rows_per_fragment=3_000)
    assert {(s, u) for s, _, _, u in reports} == {("compact", "tasks")}, reports
    total = reports[0][2]
    assert total >= 2, reports  # several tasks, so the reports in between mean something
    assert [d for _, d, _, _ in reports] == list(range(total + 1)), reports
    assert all(t == total for _, _, t, _ in reports), reports
    after = lance.dataset(uri)
    # the same versions and fragments as pylance's compaction of the same table
    twin = str(tmp_path / "twin.lance")
    lance.write_dataset(data, twin, max_rows_per_file=1_000)
    lance.dataset(twin).optimize.compact_files(target_rows_per_fragment=3_000)
    twin = lance.dataset(twin)
    assert after.version == ds.version == twin.version > before.version
    assert len(after.get_fragments()) == len(twin.get_fragments()) == result.fragments_added < 12
    assert result.fragments_removed == 12
    assert after.to_table().sort_by("id").equals(data)
    # nothing left to do: no task, no report, no commit
    reports.clear()
    with ctx:
        ds2, _ = lh.open(uri).compact(target_rows_per_fragment=3_000)
    assert reports == [] and ds2.version == after.version == lance.dataset(uri).version


def test_cleanup_reports_its_steps(tmp_path):
    uri = str(tmp_path / "k.lance")
    lance.write_dataset(rows(0, 100), uri)
    for i in range(3):
        lance.write_dataset(rows(100 * (i + 1), 100), uri, mode="append")
    assert len(lance.dataset(uri).versions()) == 4
    time.sleep(0.05)
    reports, ctx = recording()
    with ctx:
        result = lh.open(uri).cleanup(older_than_ms=1)
    assert reports == [("cleanup", d, 3, "steps") for d in range(4)], reports
    assert result.versions_removed == 3
    assert [v["version"] for v in lance.dataset(uri).versions()] == [4]
    assert lance.dataset(uri).count_rows() == 400
