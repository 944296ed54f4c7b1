"""Branches and clones (lance_dataset_open_branch, _create_branch, _delete_branch, _branches,
_shallow_clone), with pylance 14.0.2 as the other reader and writer: what lance-host writes on a
branch pylance reads on that branch (and main is untouched), what pylance writes on a branch
lance-host reads, snapshot tokens and splits of a branch version ship and read that version,
staged writes commit on the branch, and a shallow clone reads like its source."""

import pickle

import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")


def rows(start, end, tag):
    return pa.table({"id": pa.array(range(start, end), pa.int64()), "tag": pa.array([tag] * (end - start))})


def ids(t):
    return sorted(t["id"].to_pylist())


def pylance_branch(uri, branch, version=None):
    return lance.dataset(uri).checkout_version((branch, version))


def test_lance_host_writes_on_a_branch_and_pylance_reads_it(tmp_path):
    uri = str(tmp_path / "t")
    lance.write_dataset(rows(0, 100, "main"), uri)
    main = lh.open(uri)
    dev = main.create_branch("dev")
    assert dev.branch == "dev" and main.branch == "main"
    assert dev.uri.endswith("/tree/dev")
    assert ids(dev.scan().read_all()) == list(range(100))
    # a one-call append and a staged append, both on the branch
    dev2, r = lh.write_table(dev.uri, rows(100, 110, "dev"), "append", at=dev)
    assert dev2.branch == "dev"
    share = lh.stage_write(dev2.uri, rows(110, 120, "dev"), "append", at=dev2)
    dev3, r = lh.commit(dev2.uri, [share], expected_version=dev2.version)
    dev4, _ = dev3.delete("id < 5")
    # pylance reads the branch's versions, and main is untouched
    assert ids(pylance_branch(uri, "dev").to_table()) == list(range(5, 120))
    assert ids(pylance_branch(uri, "dev", dev2.version).to_table()) == list(range(110))
    assert lance.dataset(uri).version == 1
    assert ids(lance.dataset(uri).to_table()) == list(range(100))
    assert main.branches() == {"dev": ("main", 1)}
    assert set(lance.dataset(uri).branches.list()) == {"dev"}
    # reopening the branch by name, at a version and at its latest
    assert ids(lh.open(uri, branch="dev", version=dev2.version).scan().read_all()) == list(range(110))
    assert lh.open(uri, branch="dev").version == dev4.version
    assert lh.open(uri, branch="main").version == 1


def test_pylance_writes_on_a_branch_and_lance_host_reads_it(tmp_path):
    uri = str(tmp_path / "t")
    ds = lance.write_dataset(rows(0, 50, "main"), uri)
    lance.write_dataset(rows(50, 60, "main"), uri, mode="append")  # main v2
    b = lance.dataset(uri).create_branch("feature", 1)  # from main v1
    b.insert(rows(1000, 1010, "feat"))
    feat = lh.open(uri, branch="feature")
    assert feat.branch == "feature"
    assert ids(feat.scan().read_all()) == list(range(50)) + list(range(1000, 1010))
    assert lh.open(uri).branches() == {"feature": ("main", 1)}
    # a branch of a branch, created here, read by pylance
    nested = feat.create_branch("feature-fix")
    lh.write_table(nested.uri, rows(2000, 2001, "fix"), "append", at=nested)
    assert ids(pylance_branch(uri, "feature-fix").to_table()) == list(range(50)) + list(range(1000, 1010)) + [2000]
    assert lh.open(uri).branches()["feature-fix"] == ("feature", feat.version)


def test_branch_snapshots_and_splits_ship_the_branch(tmp_path):
    uri = str(tmp_path / "t")
    lance.write_dataset(rows(0, 300, "main"), uri, max_rows_per_file=100)
    dev = lh.open(uri).create_branch("dev")
    dev, _ = lh.write_table(dev.uri, rows(300, 310, "dev"), "append", at=dev)
    lance.write_dataset(rows(500, 600, "main"), uri, mode="append")  # main moves on
    token = dev.export_snapshot()
    worker = lh.open_snapshot(token)
    assert worker.branch == "dev" and worker.version == dev.version
    got = []
    for s in dev.plan_scan(100):
        s = pickle.loads(pickle.dumps(s))
        got += worker.scan_split(s, ["id"]).read_all()["id"].to_pylist()
    assert sorted(got) == list(range(310))


def test_delete_branch_and_bad_names(tmp_path):
    uri = str(tmp_path / "t")
    lance.write_dataset(rows(0, 10, "main"), uri)
    main = lh.open(uri)
    tmp = main.create_branch("tmp")
    with pytest.raises(lh.InvalidArgumentError, match="own branch"):
        tmp.delete_branch("tmp")
    with pytest.raises(lh.LanceError):
        main.create_branch("tmp")  # exists
    for bad in ["", "main", "a b", "../x", "/x", "x/"]:
        with pytest.raises(lh.InvalidArgumentError):
            main.create_branch(bad)
    main.delete_branch("tmp")
    assert main.branches() == {}
    assert lance.dataset(uri).branches.list() == {}
    with pytest.raises(lh.NotFoundError):
        lh.open(uri, branch="tmp")
    with pytest.raises(lh.LanceError):
        main.delete_branch("never-was")


def test_shallow_clone_reads_like_its_source(tmp_path):
    uri = str(tmp_path / "t")
    lance.write_dataset(rows(0, 100, "main"), uri)
    lance.dataset(uri).delete("id < 10")
    src = lh.open(uri)
    clone = src.shallow_clone(str(tmp_path / "clone"))
    assert ids(lance.dataset(str(tmp_path / "clone")).to_table()) == list(range(10, 100))
    c2, _ = lh.write_table(clone.uri, rows(100, 105, "c"), "append", at=clone)
    assert ids(lance.dataset(str(tmp_path / "clone")).to_table()) == list(range(10, 105))
    assert ids(lance.dataset(uri).to_table()) == list(range(10, 100)), "the source is untouched"
    with pytest.raises(lh.LanceError):
        src.shallow_clone(str(tmp_path / "clone"))  # exists


def test_catalog_tables_at_a_branch_or_a_tag(tmp_path):
    root = tmp_path / "wh"
    root.mkdir()
    uri = str(root / "t.lance")
    lance.write_dataset(rows(0, 10, "main"), uri)
    ds = lance.dataset(uri)
    b = ds.create_branch("dev")
    b.insert(rows(10, 13, "dev"))
    lance.dataset(uri).tags.create("first", 1)
    lance.write_dataset(rows(20, 30, "main"), uri, mode="append")
    cat = lh.Catalog({"root": str(root)})
    assert ids(cat.open_table("t", branch="dev").scan().read_all()) == list(range(13))
    assert cat.open_table("t", branch="dev", version=1).scan().read_all().num_rows == 10
    assert cat.open_table("t", tag="first").version == 1
    assert cat.open_table("t").scan().read_all().num_rows == 20
    with pytest.raises(lh.NotFoundError):
        cat.open_table("t", branch="nope")
    with pytest.raises(lh.LanceError):
        cat.open_table("t", tag="nope")
    with pytest.raises(lh.InvalidArgumentError):
        cat.open_table("t", tag="first", version=1)
