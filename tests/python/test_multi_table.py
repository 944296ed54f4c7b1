"""Multi-table commits (lance_commit_tables): the staged writes of several tables commit
together — every table gets its new version or none does — through a namespace that manages
the tables' versions and commits several tables at once (`batch_commit_tables`). The namespace
here is this repo's REST server with `--batch-commits` (the directory namespace with version
tracking, plus a batch commit); pylance is the other reader, by path and through the namespace.
Without such a namespace (pylance's own REST adapter, a directory catalog) the answer is
NotSupportedError and nothing is committed."""

import os
import pickle
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")
ln = pytest.importorskip("lance.namespace")


def server_binary():
    given = os.environ.get("LANCE_HOST_REST_SERVER")
    if given:
        return given
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.expanduser("~/.cache/lance-host/target")
    path = os.path.join(target, "debug", "lance-host-rest-server")
    if not os.path.exists(path):
        pytest.fail(f"the REST server binary is not built ({path}); run `cargo build -p lance-host-rest-server`")
    return path


class Server:
    def __init__(self, root, *flags):
        self.proc = subprocess.Popen([server_binary(), str(root), *flags], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("LISTENING "), line
        self.uri = f"http://127.0.0.1:{int(line.split()[1])}"

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture()
def server(tmp_path):
    s = Server(tmp_path / "warehouse", "--batch-commits")
    try:
        yield s
    finally:
        s.stop()


def rows(start, end, tag):
    return pa.table({"id": pa.array(range(start, end), pa.int64()), "tag": [tag] * (end - start)})


def make_tables(cat, names, n=100):
    return {name: cat.create_table(name, rows(0, n, "base"))[0] for name in names}


def manifests(ds):
    """The manifest files in a table's _versions: registered versions by number, staging ones
    by their whole name."""
    names = os.listdir(os.path.join(ds.uri.removeprefix("file://"), "_versions"))
    out = []
    for f in names:
        if f.endswith(".manifest"):
            v = int(f.split(".")[0])
            out.append(str(v if v < 2**63 else 2**64 - 1 - v))
        elif ".manifest" in f:
            out.append(f)
    return sorted(out)


def pylance_ids(server, name):
    """The rows of `name` as pylance reads its latest version through the namespace."""
    ns = ln.RestNamespace(uri=server.uri)
    ds = lance.dataset(namespace_client=ns, table_id=[name])
    return ds.version, sorted(ds.to_table()["id"].to_pylist())


def pylance_tags(server, name):
    ns = ln.RestNamespace(uri=server.uri)
    return lance.dataset(namespace_client=ns, table_id=[name]).to_table()["tag"].to_pylist()


def test_three_tables_commit_together_and_pylance_reads_every_one(server):
    cat = lh.Catalog({"type": "rest", "uri": server.uri})
    t = make_tables(cat, ["a", "b", "c"])
    worker = {k: lh.open_snapshot(v.export_snapshot()) for k, v in t.items()}
    shares_a = [lh.stage_write(t["a"].uri, rows(100 + 10 * i, 110 + 10 * i, "x"), "append", at=worker["a"])
                for i in range(3)]
    shares_b = [lh.stage_write(t["b"].uri, rows(500, 520, "x"), "append", at=worker["b"])]
    delete_c = [worker["c"].stage_delete("id < 30")]
    out = lh.commit_tables([(t["a"].uri, shares_a), (t["b"].uri, shares_b, {"statement_id": "etl-1/b"}),
                            (t["c"].uri, delete_c)])
    assert [r.version for _, r in out] == [2, 2, 2]
    assert all(r.committed for _, r in out)
    assert out[0][1].rows_written == 30 and out[2][1].rows_deleted == 30
    assert [ds.version for ds, _ in out] == [2, 2, 2]
    # pylance, through the namespace and by path, reads every table's new version
    assert pylance_ids(server, "a") == (2, list(range(130)))
    assert pylance_ids(server, "b") == (2, list(range(100)) + list(range(500, 520)))
    assert pylance_ids(server, "c") == (2, list(range(30, 100)))
    assert lance.dataset(t["a"].uri).version == 2
    # lance-host's own latest agrees
    assert cat.open_table("c").count_rows() == 70


def test_a_refused_table_commits_no_table(server):
    cat = lh.Catalog({"type": "rest", "uri": server.uri})
    t = make_tables(cat, ["a", "b"])
    share_a = lh.stage_write(t["a"].uri, rows(100, 110, "x"), "append", at=t["a"])
    share_b = lh.stage_write(t["b"].uri, rows(100, 110, "x"), "append", at=t["b"])
    # pylance moves b on through the namespace: a precondition on b's version fails
    ns = ln.RestNamespace(uri=server.uri)
    lance.write_dataset(rows(900, 905, "py"), namespace_client=ns, table_id=["b"], mode="append")
    with pytest.raises(lh.ConflictError, match="table 1"):
        lh.commit_tables([(t["a"].uri, [share_a]), (t["b"].uri, [share_b], {"expected_version": 1})])
    assert pylance_ids(server, "a") == (1, list(range(100)))
    assert pylance_ids(server, "b") == (2, list(range(100)) + list(range(900, 905)))
    # a's prepared manifest is gone again: the registered version's manifest is the only one
    assert manifests(t["a"]) == ["1"]
    # the shares stay valid: the same commit without the stale precondition lands on both
    out = lh.commit_tables([(t["a"].uri, [share_a]), (t["b"].uri, [share_b])])
    assert [r.version for _, r in out] == [2, 3]
    assert pylance_ids(server, "a") == (2, list(range(110)))
    assert pylance_ids(server, "b")[0] == 3


def test_a_repeated_commit_with_statement_ids_returns_the_versions(server):
    cat = lh.Catalog({"type": "rest", "uri": server.uri})
    t = make_tables(cat, ["a", "b"])
    shares = {k: lh.stage_write(v.uri, rows(100, 105, "x"), "append", at=v) for k, v in t.items()}
    tables = [(t[k].uri, [shares[k]], {"statement_id": f"job-9/{k}"}) for k in ("a", "b")]
    first = lh.commit_tables(tables)
    again = lh.commit_tables(tables)
    assert [r.version for _, r in again] == [r.version for _, r in first] == [2, 2]
    assert [r.committed for _, r in again] == [False, False]
    assert pylance_ids(server, "a") == (2, list(range(105)))


def test_a_lost_answer_is_an_unknown_outcome_and_the_repeated_commit_finds_the_versions(tmp_path):
    """The namespace registers the batch, then its answer is lost (the server's test fault):
    the caller hears that the outcome is unknown, the staged files stay (the versions use
    them), and the same commit again returns the versions that landed without a second one."""
    marker = tmp_path / "lose-next-answer"
    s = Server(tmp_path / "warehouse", "--batch-commits", "--lose-answer-marker", str(marker))
    try:
        cat = lh.Catalog({"type": "rest", "uri": s.uri})
        t = make_tables(cat, ["a", "b"])
        shares = {k: lh.stage_write(v.uri, rows(100, 110, k), "append", at=v) for k, v in t.items()}
        tables = [(t[k].uri, [shares[k]], {"statement_id": f"lost-1/{k}"}) for k in ("a", "b")]
        marker.touch()
        with pytest.raises(lh.LanceError, match="outcome is unknown") as e:
            lh.commit_tables(tables)
        assert not isinstance(e.value, (lh.NotSupportedError, lh.ConflictError, lh.InvalidArgumentError))
        assert not marker.exists()
        assert pylance_ids(s, "a") == (2, list(range(110)))
        assert pylance_ids(s, "b") == (2, list(range(110)))
        again = lh.commit_tables(tables)
        assert [r.version for _, r in again] == [2, 2]
        assert [r.committed for _, r in again] == [False, False]
        assert pylance_ids(s, "a") == (2, list(range(110)))
        assert pylance_tags(s, "b") == ["base"] * 100 + ["b"] * 10
    finally:
        s.stop()


def test_bad_calls_commit_nothing(server, tmp_path):
    cat = lh.Catalog({"type": "rest", "uri": server.uri})
    t = make_tables(cat, ["a", "b"])
    share = lh.stage_write(t["a"].uri, rows(100, 105, "x"), "append", at=t["a"])
    with pytest.raises(lh.InvalidArgumentError, match="twice"):
        lh.commit_tables([(t["a"].uri, [share]), (t["a"].uri, [share])])
    with pytest.raises(lh.InvalidArgumentError, match="at least one table"):
        lh.commit_tables([])
    with pytest.raises(lh.InvalidArgumentError, match=r"tables\[0\] must be"):
        lh.commit_tables([(t["a"].uri,)])
    with pytest.raises(lh.InvalidArgumentError, match="params must be a dict"):
        lh.commit_tables([(t["a"].uri, [share], "statement-1")])
    # a share of table a given as table b's
    with pytest.raises(lh.InvalidArgumentError, match="table 1"):
        lh.commit_tables([(t["a"].uri, [share]), (t["b"].uri, [share])])
    # a table no namespace manages
    plain, _ = lh.write_table(str(tmp_path / "plain.lance"), rows(0, 10, "p"), "create")
    plain_share = lh.stage_write(plain.uri, rows(10, 20, "p"), "append", at=plain)
    with pytest.raises(lh.NotSupportedError, match="namespace"):
        lh.commit_tables([(t["a"].uri, [share]), (plain.uri, [plain_share])])
    assert pylance_ids(server, "a") == (1, list(range(100)))
    assert lance.dataset(plain.uri).version == 1


def test_a_namespace_without_batch_commits_is_not_supported(tmp_path):
    # pylance's REST adapter manages versions but has no batch commit
    adapter = ln.RestAdapter("dir", {"root": str(tmp_path / "root"), "table_version_tracking_enabled": "true"}, port=0)
    adapter.start()
    try:
        cat = lh.Catalog({"type": "rest", "uri": f"http://127.0.0.1:{adapter.port}"})
        t = make_tables(cat, ["a", "b"])
        shares = {k: lh.stage_write(v.uri, rows(100, 110, "x"), "append", at=v) for k, v in t.items()}
        with pytest.raises(lh.NotSupportedError, match="cannot commit several tables together"):
            lh.commit_tables([(t[k].uri, [shares[k]]) for k in ("a", "b")])
        ns = ln.RestNamespace(uri=f"http://127.0.0.1:{adapter.port}")
        for k in ("a", "b"):
            ds = lance.dataset(namespace_client=ns, table_id=[k])
            assert ds.version == 1 and ds.count_rows() == 100
            assert manifests(t[k]) == ["1"], "no prepared manifest is left"
    finally:
        adapter.stop()


def test_racing_coordinators_land_both_tables_or_neither(server):
    """8 coordinators commit shares of the same two tables at once."""
    cat = lh.Catalog({"type": "rest", "uri": server.uri})
    t = make_tables(cat, ["a", "b"], n=10)
    n = 8
    shares = {i: {k: lh.stage_write(v.uri, rows(1000 * (i + 1), 1000 * (i + 1) + 5, f"c{i}"), "append", at=v)
                  for k, v in t.items()} for i in range(n)}
    outcome = {}
    start = threading.Barrier(n)

    def coordinator(i):
        start.wait()
        try:
            lh.commit_tables([(t[k].uri, [shares[i][k]]) for k in ("a", "b")])
            outcome[i] = "landed"
        except lh.ConflictError:
            outcome[i] = "conflict"

    threads = [threading.Thread(target=coordinator, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    # a coordinator that lost a race prepares again on the new versions: every commit lands
    assert outcome == {i: "landed" for i in range(n)}
    tags_a, tags_b = pylance_tags(server, "a"), pylance_tags(server, "b")
    for i in range(n):
        assert tags_a.count(f"c{i}") == tags_b.count(f"c{i}") == 5, i
    va, vb = pylance_ids(server, "a")[0], pylance_ids(server, "b")[0]
    assert va == vb == 1 + n

    # without retries, a lost race is a conflict that commits nothing on either table
    shares = {i: {k: lh.stage_write(v.uri, rows(100 * (i + 1), 100 * (i + 1) + 2, f"r{i}"), "append", at=v)
                  for k, v in t.items()} for i in range(n)}
    outcome.clear()
    start = threading.Barrier(n)

    def once(i):
        start.wait()
        try:
            lh.commit_tables([(t[k].uri, [shares[i][k]], {"commit_retries": 0}) for k in ("a", "b")])
            outcome[i] = "landed"
        except lh.ConflictError:
            outcome[i] = "conflict"

    threads = [threading.Thread(target=once, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    tags_a, tags_b = set(pylance_tags(server, "a")), set(pylance_tags(server, "b"))
    for i in range(n):
        assert (f"r{i}" in tags_a) == (f"r{i}" in tags_b) == (outcome[i] == "landed"), (i, outcome)
    landed = sum(o == "landed" for o in outcome.values())
    assert landed >= 1
    assert pylance_ids(server, "a")[0] == pylance_ids(server, "b")[0] == 1 + n + landed


COORDINATOR = textwrap.dedent("""
    import pickle, sys
    import lance_host as lh
    uri, shares_file = sys.argv[1], sys.argv[2]
    cat = lh.Catalog({"type": "rest", "uri": uri})
    tables = {k: cat.open_table(k) for k in ("a", "b", "c")}
    with open(shares_file, "rb") as f:
        shares = pickle.load(f)
    print("READY", flush=True)
    lh.commit_tables([(tables[k].uri, [shares[k]]) for k in ("a", "b", "c")])
    print("DONE", flush=True)
""")


def test_coordinators_killed_mid_commit_leave_all_tables_or_none(server, tmp_path):
    cat = lh.Catalog({"type": "rest", "uri": server.uri})
    names = ("a", "b", "c")
    make_tables(cat, names, n=10)
    script = tmp_path / "coordinator.py"
    script.write_text(COORDINATOR)
    env = dict(os.environ)

    def run(i, kill_after):
        latest = {k: cat.open_table(k) for k in names}
        shares = {k: lh.stage_write(v.uri, rows(1000 * (i + 1), 1000 * (i + 1) + 3, f"k{i}"), "append", at=v)
                  for k, v in latest.items()}
        f = tmp_path / f"shares-{i}.pkl"
        f.write_bytes(pickle.dumps(shares))
        p = subprocess.Popen([sys.executable, str(script), server.uri, str(f)], stdout=subprocess.PIPE, text=True,
                             env=env)
        assert p.stdout.readline().strip() == "READY"
        began = time.monotonic()
        if kill_after is None:
            assert p.stdout.readline().strip() == "DONE"
            p.wait(timeout=120)
            assert p.returncode == 0
            return time.monotonic() - began, True
        time.sleep(kill_after)
        p.send_signal(signal.SIGKILL)
        rest = p.stdout.read()
        p.wait(timeout=60)
        return None, "DONE" in rest

    # how long one commit of three tables takes here, unkilled
    took, _ = run(0, None)
    rng = random.Random(7)
    finished_before_kill = {0: True}
    for i in range(1, 11):
        # the first is killed as soon as its commit call begins (inside the call on any machine);
        # the others at random moments up to 1.5 times an unkilled commit
        _, done = run(i, 0.0 if i == 1 else rng.uniform(0, took * 1.5))
        finished_before_kill[i] = done
    # a last commit through the namespace: every batch the server received is complete by then
    run(11, None)
    finished_before_kill[11] = True
    tags = {k: set(pylance_tags(server, k)) for k in names}
    landed = 0
    for i in range(12):
        present = [f"k{i}" in tags[k] for k in names]
        assert all(present) or not any(present), (i, present)
        if finished_before_kill[i]:
            assert all(present), i
        landed += all(present)
    killed_in_commit = sum(not d for d in finished_before_kill.values())
    assert killed_in_commit >= 1, finished_before_kill
    # one version per landed commit on every table, listed alike by the namespace and by path
    for k in names:
        version, ids = pylance_ids(server, k)
        assert version == 1 + landed
        assert lance.dataset(cat.describe_table(k).location).version == version
        assert len(ids) == 10 + 3 * landed


def test_cleanup_removes_the_staging_manifests_no_version_needs(server, tmp_path):
    """What a killed or refused commit can leave in _versions — a staging manifest past the
    latest version, or one of a version whose manifest is in place — goes with cleanup
    (unverified files: only with delete_unverified or after 7 days); versions stay readable."""
    import shutil
    import uuid
    cat = lh.Catalog({"type": "rest", "uri": server.uri})
    managed = make_tables(cat, ["a"])["a"]
    managed, _ = lh.write_table(managed.uri, rows(100, 110, "x"), "append", at=managed)
    plain, _ = lh.write_table(str(tmp_path / "plain.lance"), rows(0, 10, "p"), "create")
    plain, _ = lh.write_table(plain.uri, rows(10, 20, "p"), "append", at=plain)
    for ds in (managed, plain):
        d = os.path.join(ds.uri.removeprefix("file://"), "_versions")
        final = f"{2**64 - 1 - 2:020d}.manifest"
        for v in (2, 3):  # one of the latest version (its manifest in place), one past it
            shutil.copy(os.path.join(d, final), os.path.join(d, f"{2**64 - 1 - v:020d}.manifest-{uuid.uuid4()}"))
        assert len(manifests(ds)) == 4
    time.sleep(0.05)
    for ds in (managed, plain):
        ds.cleanup(0)  # version 1 goes; the staging manifests are younger than 7 days: kept
        assert len([m for m in manifests(ds) if ".manifest-" in m]) == 2
        ds.cleanup(0, delete_unverified=True)
        assert manifests(ds) == ["2"], manifests(ds)
        assert lh.open(ds.uri).count_rows() == ds.count_rows()
    assert pylance_ids(server, "a") == (2, list(range(110)))
    assert lance.dataset(plain.uri).version == 2 and lance.dataset(plain.uri).count_rows() == 20


def test_a_direct_write_past_the_namespace_is_not_read_as_latest(server):
    """The namespace is the source of the latest version: pylance writing straight to the
    table's storage (not through the namespace) makes a version the namespace never
    registered; lance-host's catalog, lance-host by URI and pylance through the namespace all
    keep reading the namespace's latest. The next commit through the namespace lands after the
    version the direct write took (Lance rebases over it, as over any concurrent append), so
    from then on the namespace's latest holds both writes — for lance-host and pylance alike."""
    cat = lh.Catalog({"type": "rest", "uri": server.uri})
    t = make_tables(cat, ["t"])["t"]
    v2, _ = lh.write_table(t.uri, rows(100, 110, "lh"), "append", at=t)
    lance.write_dataset(rows(900, 905, "direct"), t.uri.removeprefix("file://"), mode="append")
    assert lance.dataset(t.uri.removeprefix("file://")).version == 3  # storage has it
    assert cat.open_table("t").version == 2
    assert cat.describe_table("t").latest_version == 2
    assert lh.open(t.uri).version == 2
    assert lh.open(t.uri).count_rows() == 110
    assert pylance_ids(server, "t") == (2, list(range(110)))
    v4, r = lh.write_table(t.uri, rows(200, 201, "x"), "append", at=v2)
    assert r.version == 4
    want = list(range(110)) + list(range(200, 201)) + list(range(900, 905))
    assert pylance_ids(server, "t") == (4, want)
    assert cat.open_table("t").version == 4 and cat.open_table("t").count_rows() == len(want)
