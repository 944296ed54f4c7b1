"""Issue 58, the one commit pipeline: every write entry point of the C ABI that takes commit
parameters (through the Python package) x {the same statement id retried, a stale
expected_version, a fencing token another writer moved}. Each commits once or refuses, nothing in
between: pylance 14.0.2 reads the table after every step and compares it with what one
application of the change gives."""

import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")


def rows(start, end, tag):
    return pa.table({"id": pa.array(range(start, end), pa.int64()), "tag": pa.array([tag] * (end - start))})


def seed(uri):
    lance.write_dataset(rows(0, 20, "base"), uri)
    lh.open(uri).update_config({"fence": "a"})  # version 2


def content(uri):
    return sorted((r["id"], r["tag"]) for r in lance.dataset(uri).to_table().to_pylist())


def staged_append(uri, at, **p):
    share = lh.stage_write(uri, rows(500, 505, "staged"), "append", at=at)
    return lh.commit(uri, [share], **p)


def staged_delete(uri, at, **p):
    return lh.commit(uri, [at.stage_delete("id < 4")], **p)


def staged_merge(uri, at, **p):
    return lh.commit(uri, [at.stage_merge_insert(rows(18, 23, "sm"), "id", "update_all")], **p)


# name -> a call that makes one change at the handle `at` (its pinned version) with params `p`
ENTRY_POINTS = {
    "append": lambda uri, at, **p: lh.write_table(uri, rows(100, 105, "app"), "append", **p),
    "overwrite": lambda uri, at, **p: lh.write_table(uri, rows(200, 203, "over"), "overwrite", **p),
    "staged append": staged_append,
    "staged delete": staged_delete,
    "staged merge-insert": staged_merge,
    "delete": lambda uri, at, **p: at.delete("id % 3 = 0", **p),
    "update": lambda uri, at, **p: at.update({"tag": "concat(tag, '+')"}, where="id < 6", **p),
    "merge-insert": lambda uri, at, **p: at.merge_insert(rows(15, 25, "m"), "id", "update_all", **p),
}


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_retried_statement_id_commits_once(tmp_path, entry):
    uri = str(tmp_path / "t")
    seed(uri)
    call = ENTRY_POINTS[entry]
    at = lh.open(uri)
    first, r1 = call(uri, at, statement_id=f"{entry}-1")
    assert r1.committed
    once = content(uri)
    version = lance.dataset(uri).version
    assert version == 3
    # the engine lost the answer: the same plan again, and again planned at the newer version
    _, r2 = call(uri, at, statement_id=f"{entry}-1")
    _, r3 = call(uri, lh.open(uri), statement_id=f"{entry}-1")
    assert not r2.committed and not r3.committed
    assert lance.dataset(uri).version == version
    assert content(uri) == once
    # the retry's answer names the version the statement made
    assert r2.version == version and r3.version == version


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_stale_expected_version_commits_nothing(tmp_path, entry):
    uri = str(tmp_path / "t")
    seed(uri)
    at = lh.open(uri)
    lance.write_dataset(rows(900, 902, "py"), uri, mode="append")  # the table moved on: version 3
    before = content(uri)
    with pytest.raises(lh.ConflictError):
        ENTRY_POINTS[entry](uri, at, expected_version=2, statement_id=f"{entry}-stale")
    assert lance.dataset(uri).version == 3
    assert content(uri) == before
    # the same statement id is free afterwards: nothing was recorded for it
    _, r = ENTRY_POINTS[entry](uri, lh.open(uri), expected_version=3, statement_id=f"{entry}-stale")
    assert r.committed and lance.dataset(uri).version == 4


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_moved_fencing_token_commits_nothing(tmp_path, entry):
    uri = str(tmp_path / "t")
    seed(uri)
    at = lh.open(uri)
    lance.dataset(uri).update_config({"fence": "b"})  # another job took over (pylance): version 3
    before = content(uri)
    with pytest.raises(lh.FailedPreconditionError):
        ENTRY_POINTS[entry](uri, at, required_config={"fence": "a"})
    assert lance.dataset(uri).version == 3
    assert content(uri) == before
    _, r = ENTRY_POINTS[entry](uri, lh.open(uri), required_config={"fence": "b"})
    assert r.committed and lance.dataset(uri).version == 4
