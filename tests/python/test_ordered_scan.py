"""Ordered scans (LanceScanOptions.order_by, since 0.13): the rows of a scan or of each split
sorted before offset and limit, equal to pyarrow's sort of what pylance reads; bad orderings are
refused. Ties are broken by id in every check so the expected rows are unique."""

import math

import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("ordered") / "t.lance")
    n = 5000
    price = [None if i % 11 == 0 else float((i * 7919) % 1000) / 10 for i in range(n)]
    price[5] = math.nan
    t = pa.table({"id": pa.array(range(n), pa.int64()), "price": pa.array(price, pa.float64()),
                  "name": pa.array([None if i % 13 == 0 else f"n{(i * 31) % 977:04d}" for i in range(n)]),
                  "vec": pa.FixedSizeListArray.from_arrays(pa.array([float(i % 5) for i in range(4 * n)], pa.float32()), 4)})
    lance.write_dataset(t, uri, max_rows_per_file=1000)
    return uri


def expected(uri, keys, limit=None, offset=0, fragment=None):
    """The ids in the order an engine like Spark sorts: NaN above every number, nulls first for
    ASC and last for DESC (unless NULLS says otherwise), ties by id ascending."""
    ds = lance.dataset(uri)
    t = ds.get_fragment(fragment).to_table() if fragment is not None else ds.to_table()
    rows = sorted(t.select(["id", "price", "name"]).to_pylist(), key=lambda r: r["id"])
    for column, ascending, *nulls in reversed(keys):
        nulls_first = nulls[0] if nulls else ascending
        present = [r for r in rows if r[column] is not None]
        missing = [r for r in rows if r[column] is None]

        def key(r):
            v = r[column]
            return (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)

        present.sort(key=key, reverse=not ascending)  # stable: earlier keys' order kept within ties
        rows = missing + present if nulls_first else present + missing
    ids = [r["id"] for r in rows]
    return ids[offset:offset + limit if limit is not None else None]


@pytest.mark.parametrize("order_by,keys", [
    ("price DESC, id", [("price", False)]),
    ("price ASC, id ASC", [("price", True)]),
    ("name, id", [("name", True)]),
    ("name DESC NULLS LAST, id", [("name", False, False)]),
    ("name DESC NULLS FIRST, id", [("name", False, True)]),
])
def test_a_sorted_scan_with_a_limit_equals_pyarrows_sort(table, order_by, keys):
    ds = lh.open(table)
    got = ds.scan(columns=["id", "price", "name"], order_by=order_by, limit=25).read_all()
    assert got["id"].to_pylist() == expected(table, keys, limit=25)
    got = ds.scan(order_by=order_by, limit=10, offset=7).read_all()  # every column
    assert got["id"].to_pylist() == expected(table, keys, limit=10, offset=7)


def test_each_split_is_sorted_on_its_own_rows(table):
    ds = lh.open(table)
    plan = ds.plan_scan()
    assert len(plan) == 5
    top = []
    for s in plan:
        got = ds.scan_split(s, columns=["id", "price"], order_by="price DESC, id", limit=4).read_all()
        frag = s.fragment_ids[0] if hasattr(s, "fragment_ids") else None
        if frag is not None:
            assert got["id"].to_pylist() == expected(table, [("price", False)], limit=4, fragment=frag)
        top += got["id"].to_pylist()
    # the top 4 of the table is among the splits' top 4s: what an engine's final top-n merges
    assert set(expected(table, [("price", False)], limit=4)) <= set(top)


@pytest.mark.parametrize("bad,columns,match", [
    ("nope DESC", None, "does not have"),
    ("vec", None, "primitive"),
    ("price SIDEWAYS", None, "cannot read"),
    ("price DESC NULLS MIDDLE", None, "FIRST or LAST"),
    ("price,", None, "missing"),
    ('"price', None, "not closed"),
    (",price", None, "no column"),
    ("price DESC", ["id"], "not one of the scan's columns"),
])
def test_bad_orderings_are_refused(table, bad, columns, match):
    with pytest.raises(lh.InvalidArgumentError, match=match):
        lh.open(table).scan(columns=columns, order_by=bad, limit=3).read_all()


def test_no_ordering_is_storage_order(table):
    ds = lh.open(table)
    assert ds.scan(columns=["id"], order_by="", limit=5).read_all()["id"].to_pylist() == [0, 1, 2, 3, 4]
    assert ds.scan(columns=["id"], order_by="`id` DESC", limit=3).read_all()["id"].to_pylist() == [4999, 4998, 4997]
