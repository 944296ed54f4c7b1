"""Commit preconditions (LanceWriteParams.expected_version, .required_config) and the table
config they fence on (lance_dataset_update_config, lance_dataset_config), with pylance 14.0.2 as
the other reader and writer: a commit lands only on the version it names and only while the
config holds the fencing token; 20 racing committers land exactly one commit; no commit lands
past a failed precondition, also while pylance moves the token; the one-call row changes honour
them; calls that commit nothing refuse them."""

import os
import threading

import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")


def rows(start, end, tag="v"):
    return pa.table({"id": pa.array(range(start, end), pa.int64()),
                     "tag": pa.array([tag] * (end - start))})


def table(uri, n=100):
    lance.write_dataset(rows(0, n, "base"), uri)
    return lance.dataset(uri)


def tags_at(uri, version=None):
    t = lance.dataset(uri, version=version).to_table(columns=["tag"])
    out = {}
    for tag in t["tag"].to_pylist():
        out[tag] = out.get(tag, 0) + 1
    return out


def data_files(uri):
    return sorted(f for f in os.listdir(os.path.join(uri, "data")))


def test_expected_version_one_call_write(tmp_path):
    uri = str(tmp_path / "t")
    table(uri)
    lance.write_dataset(rows(100, 110, "py"), uri, mode="append")  # version 2
    ds, r = lh.write_table(uri, rows(200, 210, "ours"), "append", expected_version=2)
    assert r.version == 3 and r.committed
    before = data_files(uri)
    with pytest.raises(lh.ConflictError, match="version 2.*version 3"):
        lh.write_table(uri, rows(300, 310, "stale"), "append", expected_version=2)
    assert lance.dataset(uri).version == 3
    assert tags_at(uri) == {"base": 100, "py": 10, "ours": 10}
    assert data_files(uri) == before, "a refused write leaves no data file behind"


def test_expected_version_staged_commit_refuses_a_rebase(tmp_path):
    uri = str(tmp_path / "t")
    table(uri)
    at = lh.open(uri)
    shares = [lh.stage_write(uri, rows(1000 + 10 * i, 1010 + 10 * i, f"w{i}"), "append", at=at) for i in range(2)]
    lance.write_dataset(rows(100, 105, "py"), uri, mode="append")  # version 2, rebasable
    with pytest.raises(lh.ConflictError):
        lh.commit(uri, shares, expected_version=1)
    assert lance.dataset(uri).version == 2
    # named on the version the table is at, the same shares land (rebased over pylance's append)
    ds, r = lh.commit(uri, shares, expected_version=2)
    assert r.version == 3
    assert tags_at(uri) == {"base": 100, "py": 5, "w0": 10, "w1": 10}


def test_twenty_racing_committers_land_exactly_one(tmp_path):
    uri = str(tmp_path / "t")
    table(uri)
    v = lance.dataset(uri).version
    at = lh.open(uri)
    shares = [lh.stage_write(uri, rows(1000 + 10 * i, 1010 + 10 * i, f"c{i}"), "append", at=at) for i in range(20)]
    outcomes = [None] * 20
    start = threading.Barrier(20)

    def run(i):
        start.wait()
        try:
            _, r = lh.commit(uri, [shares[i]], expected_version=v)
            outcomes[i] = r.version
        except lh.ConflictError as e:
            outcomes[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [i for i, o in enumerate(outcomes) if isinstance(o, int)]
    assert len(won) == 1, outcomes
    assert outcomes[won[0]] == v + 1
    assert all(isinstance(o, lh.ConflictError) for i, o in enumerate(outcomes) if i != won[0])
    assert lance.dataset(uri).version == v + 1
    assert tags_at(uri) == {"base": 100, f"c{won[0]}": 10}


def test_no_commit_lands_past_a_failed_precondition_among_plain_appenders(tmp_path):
    uri = str(tmp_path / "t")
    table(uri)
    v = lance.dataset(uri).version
    at = lh.open(uri)
    results = {}
    start = threading.Barrier(20)

    def run(i):
        fenced = i % 2 == 0
        share = lh.stage_write(uri, rows(1000 + 10 * i, 1010 + 10 * i, f"{'p' if fenced else 'a'}{i}"), "append", at=at)
        start.wait()
        try:
            _, r = lh.commit(uri, [share], **({"expected_version": v} if fenced else {}))
            results[i] = r.version
        except lh.ConflictError as e:
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    plain = [results[i] for i in range(1, 20, 2)]
    assert all(isinstance(r, int) for r in plain), "plain appends rebase over each other"
    fenced_won = [i for i in range(0, 20, 2) if isinstance(results[i], int)]
    assert len(fenced_won) <= 1
    latest = lance.dataset(uri)
    assert latest.version == v + 10 + len(fenced_won)
    # every version pylance reads after v adds exactly one writer's rows; a fenced writer's rows
    # first appear in version v + 1 or nowhere
    for version in range(v + 1, latest.version + 1):
        new = {k: n for k, n in tags_at(uri, version).items() if tags_at(uri, version - 1).get(k) != n}
        assert len(new) == 1, (version, new)
        tag = next(iter(new))
        if tag.startswith("p"):
            assert version == v + 1, f"fenced commit {tag} landed at {version}, past version {v}"


def test_fencing_token_in_the_table_config(tmp_path):
    uri = str(tmp_path / "t")
    table(uri)
    ds, r = lh.open(uri).update_config({"job.fence": "job-1", "owner": "etl"})
    assert r.committed and ds.config() == {"job.fence": "job-1", "owner": "etl"}
    assert lance.dataset(uri).config() == {"job.fence": "job-1", "owner": "etl"}, "pylance reads what we set"
    lh.write_table(uri, rows(100, 110, "job-1"), "append", required_config={"job.fence": "job-1"})
    lance.dataset(uri).update_config({"job.fence": "job-2"})  # another job takes over (pylance)
    v = lance.dataset(uri).version
    with pytest.raises(lh.FailedPreconditionError, match="job.fence.*job-1.*'job-2'"):
        lh.write_table(uri, rows(200, 210, "job-1"), "append", required_config={"job.fence": "job-1"})
    at = lh.open(uri)
    share = lh.stage_write(uri, rows(300, 310, "job-1"), "append", at=at)
    with pytest.raises(lh.FailedPreconditionError):
        lh.commit(uri, [share], required_config={"job.fence": "job-1"})
    with pytest.raises(lh.FailedPreconditionError, match="is not set"):
        lh.commit(uri, [share], required_config={"other": "x"})
    assert lance.dataset(uri).version == v
    assert tags_at(uri) == {"base": 100, "job-1": 10}
    # compare-and-set of the token itself: the stale one fails, the current one moves it
    with pytest.raises(lh.FailedPreconditionError):
        at.update_config({"job.fence": "job-3"}, required_config={"job.fence": "job-1"})
    ds, _ = at.update_config({"job.fence": "job-3"}, remove=["owner"], required_config={"job.fence": "job-2"})
    assert lance.dataset(uri).config() == {"job.fence": "job-3"}
    assert ds.config() == {"job.fence": "job-3"}


def test_no_commit_lands_while_pylance_moves_the_fence(tmp_path):
    uri = str(tmp_path / "t")
    table(uri)
    lh.open(uri).update_config({"fence": "a"})
    stop = threading.Event()
    refused = []

    def writer():
        i = 0
        while not stop.is_set() and i < 60:
            try:
                lh.write_table(uri, rows(10_000 + i, 10_001 + i, "a"), "append", required_config={"fence": "a"})
            except lh.FailedPreconditionError:
                refused.append(i)
                return
            except lh.ConflictError:
                pass
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    # let some commits land, then move the token with pylance
    while lance.dataset(uri).version < 5 and t.is_alive():
        pass
    lance.dataset(uri).update_config({"fence": "b"})
    t.join(timeout=300)
    stop.set()
    assert not t.is_alive()
    assert refused, "the writer was fenced out"
    latest = lance.dataset(uri).version
    moved = None
    for version in range(2, latest + 1):
        ds = lance.dataset(uri, version=version)
        if ds.config().get("fence") == "b" and moved is None:
            moved = version
        if moved is not None and version > moved:
            assert ds.count_rows() == lance.dataset(uri, version=version - 1).count_rows(), \
                f"version {version} added rows after the fence moved in version {moved}"
    assert moved is not None


def test_one_call_row_changes_honour_the_preconditions(tmp_path):
    uri = str(tmp_path / "t")
    table(uri)
    at = lh.open(uri)
    lance.write_dataset(rows(100, 110, "py"), uri, mode="append")  # version 2
    with pytest.raises(lh.ConflictError):
        at.delete("id < 10", expected_version=1)
    with pytest.raises(lh.ConflictError):
        at.update({"tag": "'u'"}, where="id < 10", expected_version=1)
    with pytest.raises(lh.ConflictError):
        at.merge_insert(rows(0, 5, "m"), "id", "update_all", expected_version=1)
    assert lance.dataset(uri).version == 2
    ds, r = at.delete("id < 10", expected_version=2)
    assert r.version == 3
    # the returned handle commits freely afterwards: the preconditions were of that commit
    ds2, r2 = ds.delete("id < 20")
    assert r2.version == 4
    ds3, r3 = ds2.update({"tag": "'u'"}, where="id < 30", required_config={})
    ds4, r4 = ds3.merge_insert(rows(25, 35, "m"), "id", "update_all", expected_version=5)
    assert r4.version == 6
    # ids 0..19 deleted; 20..29 updated to 'u', then 25..34 merged as 'm'
    assert tags_at(uri) == {"base": 65, "u": 5, "m": 10, "py": 10}
    t = lance.dataset(uri).to_table().sort_by("id")
    assert t["id"].to_pylist() == list(range(20, 110))
    assert t.filter(pa.compute.field("id") < 25)["tag"].to_pylist() == ["u"] * 5


def test_calls_that_commit_nothing_refuse_preconditions(tmp_path):
    uri = str(tmp_path / "t")
    with pytest.raises(lh.InvalidArgumentError, match="create"):
        lh.write_table(uri, rows(0, 10), "create", expected_version=1)
    assert not os.path.exists(uri) or not os.listdir(uri)
    table(uri)
    at = lh.open(uri)
    with pytest.raises(lh.InvalidArgumentError, match="staged write"):
        lh.stage_write(uri, rows(0, 10), "append", at=at, expected_version=1)
    with pytest.raises(lh.InvalidArgumentError, match="staged write"):
        lh.stage_write(uri, rows(0, 10), "append", at=at, required_config={"a": "b"})
    with pytest.raises(lh.InvalidArgumentError):
        at.update_config({})
    with pytest.raises(lh.InvalidArgumentError, match="both set and removed"):
        at.update_config({"a": "1"}, remove=["a"])
    with pytest.raises(lh.InvalidArgumentError):
        at.update_config({"a": "1"}, statement_id="s")
    assert lance.dataset(uri).version == 1
