"""The library's own page decoder under aggregates (issue 62, src/decode): on tables pylance
wrote, an aggregate whose columns it can read goes through it (the session metric
`aggregate.reads_own_decoder` grows), one whose pages it does not read goes through Lance's
scanner (`aggregate.reads_lance_decoder`), and the answers are the same either way — checked
against the same call with `LANCE_HOST_DECODER=lance` and against DuckDB or pyarrow over the rows
pylance reads: TPC-H Q1 and Q6 in one call and as merged row-slice partials, NaN of both signs
and infinities, NUL bytes and non-ASCII keys, 38-digit decimals, a sum that leaves int64, a
column added after the first write, columns and group keys with NULLs, and a table in the legacy
file format (Lance's to read)."""

import decimal
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from test_aggregate_expressions import Q1, Q1_AGGS, Q1_FILTER, Q6, Q6_FILTER, _duckdb, _same_value, write_lineitem

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")
duckdb = pytest.importorskip("duckdb")

Q6_AGGS = [(lh.Expression("l_extendedprice * l_discount"), "sum", "revenue")]


def reads():
    m = lh.metrics()
    return m["aggregate.reads_own_decoder"], m["aggregate.reads_lance_decoder"]


def with_lance_decoder(fn):
    os.environ["LANCE_HOST_DECODER"] = "lance"
    try:
        return fn()
    finally:
        del os.environ["LANCE_HOST_DECODER"]


def rows(t, keys):
    """The rows sorted by `keys`, a NaN of either sign written "NaN" (NaN != NaN in Python)."""
    nan = lambda v: "NaN" if isinstance(v, float) and v != v else v  # noqa: E731
    out = [{k: nan(v) for k, v in r.items()} for r in t.to_pylist()]
    return sorted(out, key=lambda r: tuple(str(r[k]) for k in keys))


def both(ds, aggs, keys=None, flt=None, expect_own=True):
    """The aggregate through the path the library picks (checked: `expect_own`) and through
    Lance's decoder; they must be equal."""
    own0, lance0 = reads()
    picked = ds.aggregate(aggs, group_by=keys, filter=flt)
    own1, lance1 = reads()
    assert (own1 - own0, lance1 - lance0) == ((1, 0) if expect_own else (0, 1))
    forced = with_lance_decoder(lambda: ds.aggregate(aggs, group_by=keys, filter=flt))
    assert reads()[0] == own1, "LANCE_HOST_DECODER=lance turns the decoder off"
    assert rows(picked, keys or []) == rows(forced, keys or [])
    return picked


@pytest.fixture(scope="module")
def lineitem(tmp_path_factory):
    return write_lineitem(tmp_path_factory)


def test_q1_and_q6_read_by_the_library_equal_duckdb(lineitem):
    uri, t = lineitem
    ds = lh.open(uri)
    keys = ["l_returnflag", "l_linestatus"]
    got = rows(both(ds, Q1_AGGS, keys, Q1_FILTER), keys)
    want = _duckdb(t, Q1)
    assert len(got) == len(want) == 6
    for g, w in zip(got, want):
        for k, v in w.items():
            _same_value(k, g[k], v)
    q6 = both(ds, Q6_AGGS, None, Q6_FILTER)
    assert decimal.Decimal(q6.column("revenue")[0].as_py()) == _duckdb(t, Q6)[0]["revenue"]


def test_row_slice_partials_read_by_the_library_merge_to_the_one_call(lineitem):
    uri, _ = lineitem
    ds = lh.open(uri)
    keys = ["l_returnflag", "l_linestatus"]
    plan = ds.plan_scan(1500, slices=True)  # row slices of the 4,000-row fragments
    assert sum(s.row_slice is not None for s in plan) >= 10
    own0, _ = reads()
    parts = [ds.aggregate_split(s, Q1_AGGS, group_by=keys, filter=Q1_FILTER)[0] for s in plan]
    assert reads()[0] - own0 == len(plan)
    merged = lh.merge_aggregates(parts)
    assert rows(merged, keys) == rows(ds.aggregate(Q1_AGGS, group_by=keys, filter=Q1_FILTER), keys)


@pytest.fixture(scope="module")
def edges(tmp_path_factory):
    rng = np.random.default_rng(7)
    n = 30_000
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.25, 1e308])
    x = specials[rng.integers(0, len(specials), n)]
    x[rng.integers(0, n, n // 2)] = rng.normal(size=n // 2)
    keys = np.array(["a", "ä", "日本", "nul\0x", "", "b"])[rng.integers(0, 6, n)]
    keys[1::4] = keys[0::4][: len(keys[1::4])]  # each 38-digit value meets its negation in one group
    big = 10**38 - 1
    d = [big if i % 4 == 0 else -big if i % 4 == 1 else int(v) for i, v in enumerate(rng.integers(-10**6, 10**6, n))]
    wide = decimal.Context(prec=60)
    with np.errstate(over="ignore"):
        f = x.astype(np.float32)  # 1e308 becomes +inf
    t = pa.table({
        "k": pa.array(keys),
        "x": pa.array(x),
        "f": pa.array(f),
        "i": pa.array(rng.integers(-1000, 1000, n)),
        "wide": pa.array(np.where(np.arange(n) < 3, 2**62, 1)),
        "d38": pa.array([decimal.Decimal(v).scaleb(-4, context=wide) for v in d], pa.decimal128(38, 4)),
    })
    uri = str(tmp_path_factory.mktemp("edges") / "edges.lance")
    lance.write_dataset(t, uri, max_rows_per_file=12_000)
    return uri, t


def test_nan_of_both_signs_infinities_and_odd_keys_read_by_the_library(edges):
    uri, t = edges
    ds = lh.open(uri)
    aggs = [("x", "min", "mn"), ("x", "max", "mx"), ("x", "sum", "s"), (None, "count_all", "n"),
            ("f", "max", "fmx"), ("i", "sum", "si")]
    got = both(ds, aggs, ["k"], "x < 2.0")
    # pyarrow over the rows pylance's filter keeps (the filter is Lance SQL on both sides; MIN and
    # MAX leave NaN out as pyarrow does)
    rows_ = lance.dataset(uri).to_table(filter="x < 2.0")
    assert got.column("n").to_pylist() and sum(got.column("n").to_pylist()) == rows_.num_rows
    want = rows_.group_by("k").aggregate([("x", "min"), ("x", "max"), ("i", "sum"), ("f", "max")])
    w = {r["k"]: r for r in want.to_pylist()}
    for r in got.to_pylist():
        assert r["mn"] == w[r["k"]]["x_min"] and r["mx"] == w[r["k"]]["x_max"], r["k"]
        assert r["si"] == w[r["k"]]["i_sum"] and r["fmx"] == w[r["k"]]["f_max"], r["k"]
    assert {r["k"] for r in got.to_pylist()} == set(pc.unique(rows_.column("k")).to_pylist())


def test_38_digit_decimals_and_an_int64_overflow_read_by_the_library(edges):
    uri, t = edges
    ds = lh.open(uri)
    got = both(ds, [("d38", "sum", "s"), ("d38", "min", "mn"), ("d38", "max", "mx")], ["k"])
    want = {r["k"]: r for r in t.group_by("k").aggregate([("d38", "min"), ("d38", "max")]).to_pylist()}
    exact = {}
    for k, v in zip(t.column("k").to_pylist(), t.column("d38").to_pylist()):
        exact[k] = decimal.Context(prec=60).add(exact.get(k, 0), v)
    for r in got.to_pylist():
        assert r["mn"] == want[r["k"]]["d38_min"] and r["mx"] == want[r["k"]]["d38_max"]
        assert r["s"] == exact[r["k"]], r["k"]
    # sums beyond 38 digits and 2**62 three times beyond int64: refused on both paths, never wrapped
    for aggs, flt, message in (([("d38", "sum", "s")], "d38 > 0", "does not fit decimal128"),
                               ([("wide", "sum", "s")], None, "does not fit int64")):
        for call in (lambda: ds.aggregate(aggs, filter=flt),
                     lambda: with_lance_decoder(lambda: ds.aggregate(aggs, filter=flt))):
            with pytest.raises(lh.OutOfRangeError, match=message):
                call()


def test_a_column_added_later_and_columns_with_nulls(tmp_path):
    uri = str(tmp_path / "t.lance")
    n = 9_000
    lance.write_dataset(pa.table({"id": pa.array(range(n)), "g": pa.array([f"g{i % 5}" for i in range(n)])}), uri,
                        max_rows_per_file=4_000)
    lance.dataset(uri).add_columns({"y": "id * 3 % 11"})  # a second data file per fragment
    ds = lh.open(uri)
    got = both(ds, [("y", "sum", "s"), ("id", "max", "m")], ["g"], "id % 2 = 0")
    t = lance.dataset(uri).to_table(filter="id % 2 = 0")
    want = {r["g"]: r for r in t.group_by("g").aggregate([("y", "sum"), ("id", "max")]).to_pylist()}
    assert {r["g"]: (r["s"], r["m"]) for r in got.to_pylist()} == {g: (r["y_sum"], r["id_max"]) for g, r in want.items()}
    # nulls: pages with definition levels are read by the library too
    nulls = pa.table({"id": pa.array([None if i % 3 == 0 else i for i in range(n)], pa.int64()),
                      "g": pa.array([None if i % 7 == 0 else f"g{i % 5}" for i in range(n)])})
    lance.write_dataset(nulls, uri + "2")
    # the legacy file format 2.0 is Lance's to read
    lance.write_dataset(nulls, uri + "3", data_storage_version="2.0")
    for path, own in ((uri + "2", True), (uri + "3", False)):
        got = both(lh.open(path), [("id", "sum", "s"), ("id", "count", "c"), (None, "count_all", "n")], ["g"],
                   expect_own=own)
        t = lance.dataset(path).to_table()
        want = t.group_by("g").aggregate([("id", "sum"), ("id", "count"), ([], "count_all")]).to_pylist()
        assert {r["g"]: (r["s"], r["c"], r["n"]) for r in got.to_pylist()} == \
            {r["g"]: (r["id_sum"], r["id_count"], r["count_all"]) for r in want}


def scans():
    return lh.metrics()["scan.reads_own_decoder"]


def same_bits(got, want):
    """Equal tables, floats compared by their bits (NaN of either sign, -0.0)."""
    assert got.schema == want.schema and got.num_rows == want.num_rows
    for name in want.column_names:
        g, w = got.column(name).combine_chunks(), want.column(name).combine_chunks()
        if pa.types.is_floating(w.type):
            bits = pa.int64() if w.type == pa.float64() else pa.int32()
            g, w = g.view(bits), w.view(bits)
        assert g.equals(w), name


def test_plain_scans_read_by_the_library_equal_pylance_and_lances_decoder(edges, lineitem):
    """A plain scan of a local table goes through the decoder (`scan.reads_own_decoder`): the
    same rows, bit for bit, as pylance's read and as the library's scan with the decoder off;
    batch_size honoured; row-slice splits."""
    uri, _ = edges
    ds = lh.open(uri)
    cols = ["k", "x", "f", "i", "d38"]
    before = scans()
    got = ds.scan(columns=cols).read_all()
    assert scans() == before + 1
    want = lance.dataset(uri).to_table(columns=cols)
    same_bits(got, want)
    # `wide` is written with a run-length page of two buffers, which the decoder leaves to Lance
    before = scans()
    same_bits(ds.scan().read_all(), lance.dataset(uri).to_table())
    assert scans() == before, "a scan touching a page the decoder does not read is Lance's"
    forced = with_lance_decoder(lambda: ds.scan(columns=["k", "d38"]).read_all())
    assert ds.scan(columns=["k", "d38"]).read_all().equals(forced)
    sizes = [b.num_rows for b in ds.scan(columns=["i"], batch_size=1000)]
    assert max(sizes) == 1000 and sum(sizes) == want.num_rows
    # row slices of a table with deleted rows, as a host's splits read them
    luri, lrows = lineitem
    lds = lh.open(luri)
    before = scans()
    plan = lds.plan_scan(1500, slices=True)
    parts = [lds.scan_split(s, columns=["l_extendedprice", "l_returnflag"]).read_all() for s in plan]
    assert scans() == before + len(plan)
    got = pa.concat_tables(parts)
    assert sorted(zip(got.column(0).to_pylist(), got.column(1).to_pylist())) == \
        sorted(zip(lrows.column("l_extendedprice").to_pylist(), lrows.column("l_returnflag").to_pylist()))


def filtered_both(ds, uri, columns, flt, **kw):
    """A filtered scan through the decoder (checked by the metric) equal, bit for bit, to pylance's
    filtered read and to the same scan with the decoder off; the batches it handed on."""
    before = scans()
    batches = list(ds.scan(columns=columns, filter=flt, **kw))
    assert scans() == before + 1, flt
    schema = lance.dataset(uri).to_table(columns=columns).schema
    got = pa.Table.from_batches(batches, schema=schema)
    same_bits(got, lance.dataset(uri).to_table(columns=columns, filter=flt))
    same_bits(got, with_lance_decoder(lambda: ds.scan(columns=columns, filter=flt, **kw).read_all()))
    return batches


def test_filtered_scans_read_by_the_library_equal_pylance_and_lances_decoder(edges, lineitem, tmp_path):
    """A filtered scan of a local table is read by the decoder too: the filter's columns decoded
    first, the others only where a row is kept; the rows are pylance's, in pylance's order, with
    filters that keep all, some, few and no rows, on columns projected or not, over NaN of both
    signs, infinities, NUL bytes, non-ASCII strings, 38-digit decimals and NULLs; row slices of a
    table with deleted rows; batch sizes honoured. A filter on an indexed column stays Lance's."""
    uri, t = edges
    ds = lh.open(uri)
    for cols, flt in ((["k", "i"], "x < 2.0"), (["x", "f"], "x >= 0.0"), (["k", "x"], "k IN ('日本', 'b', '')"),
                      (["d38", "k"], "d38 > 0 AND i % 7 = 3"), (["i"], "f > 1e30"), (["x"], "i > 1000000"),
                      (["k", "i", "d38"], "k LIKE '%u%' OR x = 1.5"), (["i", "x"], "i BETWEEN -3 AND 3"),
                      (["k"], "d38 < -1000000000000")):
        filtered_both(ds, uri, cols, flt)
    # NaN of either sign and the infinities at the ends of the order (as Arrow orders floats)
    filtered_both(ds, uri, ["x", "k"], "x < -1e307 OR x > 1e307")
    sizes = [b.num_rows for b in filtered_both(ds, uri, ["i", "k"], "i >= -500", batch_size=700)]
    assert max(sizes) <= 700 and sum(sizes) == pc.sum(pc.greater_equal(t.column("i"), -500)).as_py()
    # NULLs: a filter answering NULL drops the row, as Lance's
    n = 9_000
    nulls = pa.table({"id": pa.array([None if i % 3 == 0 else i for i in range(n)], pa.int64()),
                      "g": pa.array([None if i % 7 == 0 else f"g{i % 5}" for i in range(n)]),
                      "v": pa.array([i * 0.5 for i in range(n)])})
    nuri = str(tmp_path / "nulls.lance")
    lance.write_dataset(nulls, nuri, max_rows_per_file=4_000)
    lance.dataset(nuri).delete("id % 5 = 1")
    nds = lh.open(nuri)
    for cols, flt in ((["v"], "id > 4000"), (["id", "g"], "g = 'g2' OR id IS NULL"), (["g"], "g IS NOT NULL AND v < 10")):
        filtered_both(nds, nuri, cols, flt)
    # row slices of a table with deleted rows, as a host's splits read them with a filter
    luri, lrows = lineitem
    lds = lh.open(luri)
    flt = "l_shipdate <= DATE '1998-09-02' AND l_returnflag = 'R'"
    plan = lds.plan_scan(1500, slices=True)
    before = scans()
    parts = [lds.scan_split(s, columns=["l_extendedprice", "l_linestatus"], filter=flt).read_all() for s in plan]
    assert scans() == before + len(plan)
    got = pa.concat_tables(parts)
    want = lance.dataset(luri).to_table(columns=["l_extendedprice", "l_linestatus"], filter=flt)
    assert 0 < got.num_rows < lrows.num_rows
    assert sorted(zip(*[c.to_pylist() for c in got.columns])) == sorted(zip(*[c.to_pylist() for c in want.columns]))
    # an index on the filtered column: Lance answers the filter from it
    lance.dataset(nuri).create_scalar_index("id", "BTREE")
    before = scans()
    got = lh.open(nuri).scan(columns=["v"], filter="id > 4000").read_all()
    assert scans() == before, "a filter on an indexed column is Lance's"
    assert got.equals(lance.dataset(nuri).to_table(columns=["v"], filter="id > 4000"))
