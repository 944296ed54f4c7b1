"""Row-level changes by row address (lance_dataset_stage_row_deletes + staged appends, one
commit), with pylance 14.0.2 as the reader that judges: workers whose deletes are not aligned to
fragments commit as one version; a share twice, a row already deleted, an address outside the
version and a mix with another kind are refused with the table unchanged; a concurrent change
of other rows is rebased over, one of the same rows is a conflict (never both updates); a
statement commits once; an abort leaves no file."""

import os

import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")


def rows(start, end, tag="v"):
    return pa.table({"id": pa.array(range(start, end), pa.int64()),
                     "val": pa.array([f"{tag}{i}" for i in range(start, end)])})


def table(uri, n=1000, per_file=250):
    lance.write_dataset(rows(0, n), uri, max_rows_per_file=per_file)
    return lance.dataset(uri)


def addresses(uri, where, version=None):
    """`_rowaddr` of the rows matching `where`, read by pylance, with their ids."""
    t = lance.dataset(uri, version=version).to_table(columns=["id"], filter=where, with_row_address=True)
    return t["id"].to_pylist(), t["_rowaddr"].to_pylist()


def content(uri):
    t = lance.dataset(uri).to_table(columns=["id", "val"]).sort_by("id")
    return list(zip(t["id"].to_pylist(), t["val"].to_pylist()))


def files(uri):
    return sorted(os.path.relpath(os.path.join(d, f), uri) for d, _, fs in os.walk(uri) for f in fs
                  if "_versions" not in d and "_transactions" not in d)


def test_an_update_staged_by_workers_across_fragments_is_one_version_pylance_reads(tmp_path):
    uri = str(tmp_path / "t.lance")
    table(uri)
    at = lh.open(uri)
    assert at.version == 1
    ids, addrs = addresses(uri, "id % 7 = 3")
    assert len({a >> 32 for a in addrs}) == 4, "the changed rows lie in every fragment"
    # Two workers, their rows interleaved (as a shuffle leaves them), not one fragment each.
    shares = []
    for w in range(2):
        mine = [(i, a) for k, (i, a) in enumerate(zip(ids, addrs)) if k % 2 == w]
        d = at.stage_row_deletes([a for _, a in mine])
        assert d.result.rows_deleted == len(mine) and d.result.version == 0
        new = pa.table({"id": pa.array([i for i, _ in mine], pa.int64()),
                        "val": pa.array([f"u{i}" for i, _ in mine])})
        shares += [d, lh.stage_write(uri, new, "append", at=at)]
    before = files(uri)
    _, r = lh.commit(uri, shares)
    assert (r.version, r.committed, r.rows_deleted, r.rows_inserted) == (2, True, len(ids), len(ids))
    assert lance.dataset(uri).version == 2
    want = [(i, f"u{i}" if i % 7 == 3 else f"v{i}") for i in range(1000)]
    assert content(uri) == want
    # one deletion file per fragment, whatever the number of workers
    added = [f for f in files(uri) if f not in before and f.startswith("_deletions")]
    assert len(added) == 4
    # pylance's own view of the change: a delete-and-insert update, every row once
    assert lance.dataset(uri).count_rows() == 1000


def test_deleting_every_row_of_a_fragment_removes_it(tmp_path):
    uri = str(tmp_path / "t.lance")
    table(uri, n=500, per_file=250)
    at = lh.open(uri)
    _, addrs = addresses(uri, "id < 250")
    _, r = lh.commit(uri, [at.stage_row_deletes(addrs)])
    assert r.rows_deleted == 250 and r.rows_inserted == 0
    ds = lance.dataset(uri)
    assert len(ds.get_fragments()) == 1
    assert content(uri) == [(i, f"v{i}") for i in range(250, 500)]


def test_bad_shares_are_refused_and_the_table_is_unchanged(tmp_path):
    uri = str(tmp_path / "t.lance")
    table(uri)
    at = lh.open(uri)
    _, addrs = addresses(uri, "id < 20")
    # at staging: an address twice, a fragment the version lacks, a row past the fragment's end
    with pytest.raises(lh.InvalidArgumentError, match="twice"):
        at.stage_row_deletes([addrs[0], addrs[1], addrs[0]])
    with pytest.raises(lh.InvalidArgumentError, match="fragment 77"):
        at.stage_row_deletes([77 << 32])
    with pytest.raises(lh.InvalidArgumentError, match="250 rows"):
        at.stage_row_deletes([(1 << 32) | 250])
    with pytest.raises(lh.InvalidArgumentError):
        at.stage_row_deletes([-1])
    # at the commit: one share twice, two shares deleting one row
    d = at.stage_row_deletes(addrs[:10])
    with pytest.raises(lh.InvalidArgumentError, match="also deletes"):
        lh.commit(uri, [d, d])
    with pytest.raises(lh.InvalidArgumentError, match="also deletes"):
        lh.commit(uri, [d, at.stage_row_deletes(addrs[5:15])])
    # row deletes with another kind of share
    other = at.stage_delete("id = 500")
    with pytest.raises(lh.InvalidArgumentError, match="row deletes and appends"):
        lh.commit(uri, [d, other])
    lh.abort_staged([other])  # the staged delete's own deletion file
    # damaged bytes
    raw = bytearray(bytes(d))
    raw[-3] ^= 0xFF
    with pytest.raises(lh.CorruptError):
        lh.commit(uri, [lh.StagedWrite(bytes(raw))])
    assert lance.dataset(uri).version == 1 and content(uri) == [(i, f"v{i}") for i in range(1000)]
    assert not any(f.startswith("_deletions") for f in files(uri))


def test_a_row_already_deleted_at_the_planned_version_is_refused(tmp_path):
    uri = str(tmp_path / "t.lance")
    ds = table(uri)
    _, stale = addresses(uri, "id < 5", version=1)
    ds.delete("id < 3")  # version 2: three of those rows are gone
    at = lh.open(uri)
    assert at.version == 2
    d = at.stage_row_deletes(stale)  # in range: staging cannot know
    with pytest.raises(lh.InvalidArgumentError, match="already deleted in version 2"):
        lh.commit(uri, [d])
    assert lance.dataset(uri).version == 2 and lance.dataset(uri).count_rows() == 997


def test_a_concurrent_change_of_other_rows_is_rebased_over_and_of_the_same_rows_conflicts(tmp_path):
    uri = str(tmp_path / "t.lance")
    table(uri)
    at = lh.open(uri)
    _, mine = addresses(uri, "id IN (1, 2)")  # fragment 0
    shares = [at.stage_row_deletes(mine),
              lh.stage_write(uri, rows(1, 3, "u"), "append", at=at)]
    lance.dataset(uri).delete("id = 5")  # another writer, same fragment, other row: version 2
    _, r = lh.commit(uri, shares)
    assert r.version == 3
    got = dict(content(uri))
    assert 5 not in got and got[1] == "u1" and got[2] == "u2" and len(got) == 999

    # two statements planned at one version update the same row: the first lands, the second fails
    at = lh.open(uri)
    _, same = addresses(uri, "id = 10")
    first = [at.stage_row_deletes(same), lh.stage_write(uri, rows(10, 11, "a"), "append", at=at)]
    second = [at.stage_row_deletes(same), lh.stage_write(uri, rows(10, 11, "b"), "append", at=at)]
    lh.commit(uri, first)
    with pytest.raises(lh.ConflictError):
        lh.commit(uri, second)
    lh.abort_staged(second)
    got = content(uri)
    assert [v for i, v in got if i == 10] == ["a10"], "one update of the row, never both"
    assert len(got) == 999


def test_a_statement_commits_once_and_an_abort_leaves_no_file(tmp_path):
    uri = str(tmp_path / "t.lance")
    table(uri)
    at = lh.open(uri)
    _, addrs = addresses(uri, "id >= 990")
    shares = [at.stage_row_deletes(addrs), lh.stage_write(uri, rows(990, 1000, "u"), "append", at=at)]
    _, r = lh.commit(uri, shares, statement_id="upd-1")
    assert (r.version, r.committed) == (2, True)
    _, r = lh.commit(uri, shares, statement_id="upd-1")
    assert (r.version, r.committed) == (2, False)
    assert lance.dataset(uri).version == 2 and len(content(uri)) == 1000

    before = files(uri)
    at = lh.open(uri)
    _, addrs = addresses(uri, "id < 10")
    shares = [at.stage_row_deletes(addrs), lh.stage_write(uri, rows(0, 10, "x"), "append", at=at)]
    assert files(uri) != before  # the append wrote its data file
    lh.abort_staged(shares)
    assert files(uri) == before
    assert lance.dataset(uri).version == 2


def test_row_deletes_survive_the_trip_as_bytes(tmp_path):
    uri = str(tmp_path / "t.lance")
    table(uri, n=100, per_file=50)
    at = lh.open(uri)
    _, addrs = addresses(uri, "id % 10 = 0")
    d = at.stage_row_deletes(addrs)
    back = lh.StagedWrite(bytes(d))
    _, r = lh.commit(uri, [back])
    assert r.rows_deleted == 10
    assert [i for i, _ in content(uri)] == [i for i in range(100) if i % 10]
