"""A commit checks what it commits (issue 45), with pylance 14.0.2 as the reader that judges:
the same share twice, a share committed after its abort, a share committed again under a new
statement id, and a statement committed again after re-planning are refused (or found), and
pylance reads the table as it was, every row once; an overwrite racing an append never drops
the append; a row-level change's counts equal what pylance sees in the new version."""

import threading

import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")


def rows(start, end):
    return pa.table({"id": pa.array(range(start, end), pa.int64()),
                     "val": pa.array([f"v{i}" for i in range(start, end)])})


def ids(uri):
    return sorted(lance.dataset(uri).to_table(columns=["id"])["id"].to_pylist())


def test_a_share_twice_or_after_its_abort_is_refused_and_pylance_reads_every_row_once(tmp_path):
    uri = str(tmp_path / "t.lance")
    lh.write_table(uri, rows(0, 10))
    at = lh.open(uri)
    s1 = lh.stage_write(uri, rows(10, 20), "append", at=at)
    s2 = lh.stage_write(uri, rows(20, 30), "append", at=at)
    for shares in ([s1, s1], [s2, s1, s2]):
        with pytest.raises(lh.InvalidArgumentError, match="again"):
            lh.commit(uri, shares)
    assert lance.dataset(uri).version == 1 and ids(uri) == list(range(10))
    lh.abort_staged([s2])
    with pytest.raises(lh.InvalidArgumentError, match="does not exist"):
        lh.commit(uri, [s2])
    assert lance.dataset(uri).version == 1 and ids(uri) == list(range(10))
    _, r = lh.commit(uri, [s1])
    assert r.committed and ids(uri) == list(range(20))
    # the committed share again, under another statement id: refused, pylance sees it once
    with pytest.raises(lh.InvalidArgumentError, match="already part of version 2"):
        lh.commit(uri, [s1], statement_id="other")
    assert ids(uri) == list(range(20))


def test_a_statement_is_committed_once_across_re_planning(tmp_path):
    uri = str(tmp_path / "t.lance")
    lh.write_table(uri, rows(0, 100))
    s = lh.stage_write(uri, rows(100, 400), "append", at=lh.open(uri))
    _, r = lh.commit(uri, [s], statement_id="q-7")
    assert (r.version, r.committed) == (2, True)
    lance.write_dataset(rows(1000, 1200), uri, mode="append")  # another writer
    # the coordinator restarts: re-pins the latest version, stages afresh, commits again
    again = lh.stage_write(uri, rows(100, 400), "append", at=lh.open(uri))
    _, r = lh.commit(uri, [again], statement_id="q-7")
    assert (r.version, r.committed) == (2, False)
    got = ids(uri)
    assert len(got) == 600 and got == sorted(set(got)), "every row once, as pylance reads it"
    lh.abort_staged([again])


def test_an_overwrite_racing_an_append_never_drops_it(tmp_path):
    uri = str(tmp_path / "t.lance")
    lh.write_table(uri, rows(0, 10))
    for round_ in range(10):
        at = lh.open(uri)
        base = 1000 * (round_ + 1)
        ow = lh.stage_write(uri, rows(base, base + 5), "overwrite", at=at)
        ap = lh.stage_write(uri, rows(base + 500, base + 503), "append", at=at)
        out = {}
        gate = threading.Barrier(2)

        def run(name, share, mode):
            gate.wait()
            try:
                out[name] = lh.commit(uri, [share])[1].version
            except lh.ConflictError:
                out[name] = None

        threads = [threading.Thread(target=run, args=("o", ow, "overwrite")),
                   threading.Thread(target=run, args=("a", ap, "append"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        got = set(ids(uri))
        appended = set(range(base + 500, base + 503))
        if out["a"] is not None:
            assert appended <= got, f"round {round_}: pylance lost the append ({out})"
            if out["o"] is not None:
                assert out["o"] < out["a"], out
        else:
            assert out["o"] is not None
        for name, share in (("o", ow), ("a", ap)):
            if out[name] is None:
                lh.abort_staged([share])


def test_update_and_merge_counts_equal_what_pylance_sees(tmp_path):
    uri = str(tmp_path / "t.lance")
    lh.write_table(uri, rows(0, 100))

    def new_files(v_before, v_after):
        files = lambda v: {f.path: f for frag in lance.dataset(uri, version=v).get_fragments()
                           for f in frag.metadata.files}
        old = files(v_before)
        return [f for p, f in files(v_after).items() if p not in old]

    ds, r = lh.open(uri).update({"val": "'x'"}, where="id < 10")
    added = new_files(1, 2)
    assert r.rows_updated == 10 and r.files_written == len(added) > 0 and r.bytes_written > 0
    ds, r = ds.merge_insert(rows(90, 120), on="id", when_matched="update_all")
    added = new_files(2, 3)
    assert (r.rows_updated, r.rows_inserted) == (10, 20)
    assert r.files_written == len(added) and r.fragments_written >= 1
    assert ids(uri) == list(range(120))


@pytest.mark.parametrize("storage_version", ["2.0", "2.1", "2.2"])
def test_staged_nested_columns_commit_in_every_format_and_forged_columns_do_not(tmp_path, storage_version):
    """The commit compares each data file's (field id, column) pairs with what Lance's writer
    gives the file's schema: real shares of nested types commit in every format and pylance reads
    the rows (forged pairs are refused in tests/integration/commit_checks.rs)."""
    import numpy as np

    def nested(start, end):
        n = end - start
        cols = {
            "id": pa.array(range(start, end), pa.int64()),
            "tags": pa.array([[f"t{i}"] * (i % 3) for i in range(start, end)], pa.list_(pa.string())),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(n * 4, dtype=np.float32)), 4),
            "point": pa.StructArray.from_arrays([pa.array(range(n), pa.int32()), pa.array(range(n), pa.float64())], ["x", "y"]),
        }
        if storage_version == "2.2":  # maps need format 2.2
            cols["m"] = pa.array([{"k": i} for i in range(n)], pa.map_(pa.string(), pa.int64()))
        return pa.table(cols)

    uri = str(tmp_path / "nested.lance")
    lh.write_table(uri, nested(0, 50), storage_version=storage_version)
    share = lh.stage_write(uri, nested(50, 80), "append", at=lh.open(uri))
    _, r = lh.commit(uri, [share])
    assert r.committed and ids(uri) == list(range(80))
    assert lance.dataset(uri).to_table().sort_by("id").equals(
        pa.concat_tables([nested(0, 50), nested(50, 80)]).cast(lance.dataset(uri).schema))


def test_statement_markers_are_ignored_by_pylance_and_survive_its_cleanup(tmp_path):
    """The exactly-once marker under `_lance_host/` is no Lance file: pylance opens, reads,
    validates and cleans up the table as if it were not there."""
    import os
    import time

    uri = str(tmp_path / "t.lance")
    lh.write_table(uri, rows(0, 10))
    s = lh.stage_write(uri, rows(10, 20), "append", at=lh.open(uri))
    lh.commit(uri, [s], statement_id="marker-1")
    marker_dir = os.path.join(uri, "_lance_host", "statements")
    assert os.listdir(marker_dir), "the commit recorded its statement"
    lh.write_table(uri, rows(20, 30), "append")
    py = lance.dataset(uri)
    py.validate()
    assert ids(uri) == list(range(30))
    time.sleep(0.01)
    py.cleanup_old_versions(older_than=__import__("datetime").timedelta(0), delete_unverified=True)
    assert ids(uri) == list(range(30)) and lance.dataset(uri).version == 3
    # a retry of the statement still finds it (in the versions still there), or refuses
    again = lh.stage_write(uri, rows(10, 20), "append", at=lh.open(uri))
    try:
        _, r = lh.commit(uri, [again], statement_id="marker-1")
        assert r.committed is False
    except lh.FailedPreconditionError as e:
        assert "cleaned up" in str(e)
        lh.abort_staged([again])
    assert ids(uri) == list(range(30)), "the statement's rows once"
