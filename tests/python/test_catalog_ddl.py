"""Catalog writes checked by another side: namespaces and tables lance_host creates in a
directory catalog are seen by pylance's own DirectoryNamespace (and read by pylance), what
pylance's namespace creates is seen by lance_host, and lance_host's REST catalog does the same
against pylance's own REST adapter (a server pylance starts over a directory)."""

import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
ns_mod = pytest.importorskip("lance.namespace")
lh = pytest.importorskip("lance_host")


def rows(start, end):
    return pa.table({"id": pa.array(range(start, end), pa.int64()),
                     "name": pa.array([f"n{i}" for i in range(start, end)])})


def pylance_tables(ns, path):
    req = ns_mod.ListTablesRequest(id=list(path))
    return sorted(ns.list_tables(req).tables)


def pylance_namespaces(ns, path):
    req = ns_mod.ListNamespacesRequest(id=list(path))
    return sorted(ns.list_namespaces(req).namespaces)


def pylance_location(ns, path, table):
    return ns.describe_table(ns_mod.DescribeTableRequest(id=list(path) + [table])).location


def check_round_trip(cat, pyns):
    """lance_host writes through `cat`; pylance's namespace `pyns` (over the same directory) sees
    it, and the other way round."""
    cat.create_namespace(["sales"])
    cat.create_namespace(["sales", "eu"])
    ds, r = cat.create_table("orders", rows(0, 500), ["sales", "eu"], commit_message="ctas")
    assert (r.version, r.rows_written) == (1, 500)
    assert pylance_namespaces(pyns, []) == ["sales"] and pylance_namespaces(pyns, ["sales"]) == ["eu"]
    assert pylance_tables(pyns, ["sales", "eu"]) == ["orders"]
    py = lance.dataset(pylance_location(pyns, ["sales", "eu"], "orders"))
    assert py.to_table().sort_by("id").equals(rows(0, 500))
    assert py.read_transaction(1).transaction_properties["__lance_commit_message"] == "ctas"
    # pylance adds a namespace and a table; lance_host lists and reads them
    pyns.create_namespace(ns_mod.CreateNamespaceRequest(id=["sales", "us"]))
    declared = pyns.declare_table(ns_mod.DeclareTableRequest(id=["sales", "us", "leads"]))
    lance.write_dataset(rows(0, 30), declared.location)
    assert cat.list_namespaces(["sales"]) == [["sales", "eu"], ["sales", "us"]]
    assert cat.list_tables(["sales", "us"]) == ["leads"]
    assert cat.open_table("leads", ["sales", "us"]).count_rows() == 30
    # a failed CREATE TABLE leaves nothing
    with pytest.raises(lh.InvalidArgumentError):
        cat.create_table("orders", rows(0, 1), ["sales", "eu"])
    assert pylance_tables(pyns, ["sales", "eu"]) == ["orders"]
    with pytest.raises(lh.InvalidArgumentError, match="cascade"):
        cat.drop_namespace(["sales"])
    cat.drop_table("orders", ["sales", "eu"])
    assert pylance_tables(pyns, ["sales", "eu"]) == []
    with pytest.raises(lh.NotFoundError):
        cat.drop_table("orders", ["sales", "eu"])
    cat.drop_namespace(["sales"], cascade=True)
    assert pylance_namespaces(pyns, []) == []
    cat.drop_namespace(["sales"], missing_ok=True)


def test_directory_catalog_writes_are_seen_by_pylance_namespace(tmp_path):
    root = str(tmp_path / "warehouse")
    cat = lh.Catalog({"type": "dir", "root": root})
    check_round_trip(cat, ns_mod.DirectoryNamespace(root=root))


def test_rest_catalog_writes_through_pylance_rest_adapter(tmp_path):
    root = str(tmp_path / "warehouse")
    adapter = ns_mod.RestAdapter("dir", {"root": root}, host="127.0.0.1", port=0)
    adapter.start()
    try:
        cat = lh.Catalog({"type": "rest", "uri": f"http://127.0.0.1:{adapter.port}"})
        check_round_trip(cat, ns_mod.DirectoryNamespace(root=root))
    finally:
        adapter.stop()
