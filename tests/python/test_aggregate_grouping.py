"""The library's own grouping and summing of an aggregate's rows (issue 62, src/aggregate/fused.rs):
on tables pylance wrote, an aggregate of group-key columns and COUNT/SUM/AVG of integers and
decimals (columns or `+ - *` over decimals) is computed by the library (the session metric
`aggregate.grouped_by_library` grows) and equals, bit for bit and type for type, the same call
with DataFusion's aggregate (`LANCE_HOST_AGGREGATE=datafusion`), and exact sums computed in
Python from the rows pylance reads: keys of short and long strings, NUL bytes, non-ASCII and
empty strings, NULL keys, negative integers, dates, four keys at once; NULL values; deleted
rows; filters keeping all, some and none of the rows; row-slice partials merged; a product
leaving 128 bits on a kept row (the same error on both paths) and on a row the filter drops
(an answer); what it does not compute (a fifth key, a float sum, a key expression) left to
DataFusion."""

import datetime
import decimal
import os

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")

E = lh.Expression
D = decimal.Decimal
EXACT = decimal.Context(prec=100)


def grouped():
    return lh.metrics()["aggregate.grouped_by_library"]


def with_datafusion(fn):
    os.environ["LANCE_HOST_AGGREGATE"] = "datafusion"
    try:
        return fn()
    finally:
        del os.environ["LANCE_HOST_AGGREGATE"]


def key_of(r, keys):
    return tuple(str(r[k]) for k in keys)


def both(call, keys, here=True):
    """`call()` through the path the library picks (grouped by the library or not: `here`) and
    with DataFusion's aggregate; equal in schema and rows. Returns the rows by key."""
    g0 = grouped()
    got = call()
    g1 = grouped()
    assert (g1 > g0) == here, (g0, g1)
    ref = with_datafusion(call)
    assert grouped() == g1, "LANCE_HOST_AGGREGATE=datafusion turns the library's grouping off"
    assert got.schema == ref.schema
    rows = sorted(got.to_pylist(), key=lambda r: key_of(r, keys))
    assert rows == sorted(ref.to_pylist(), key=lambda r: key_of(r, keys))
    assert len({key_of(r, keys) for r in rows}) == len(rows), "each group once"
    return {key_of(r, keys): r for r in rows}


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(62)
    n = 60_000
    ids = np.arange(n)
    short = np.array(["A", "N", "R", "ä", "日本", "", "nul\0x"], dtype=object)[rng.integers(0, 7, n)]
    money = lambda lo, hi, nulls: pa.array(  # noqa: E731
        [None if nulls and i % nulls == 0 else D(int(v)).scaleb(-2) for i, v in enumerate(rng.integers(lo, hi, n))],
        pa.decimal128(15, 2))
    t = pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": pa.array([None if i % 13 == 0 else v for i, v in enumerate(short)]),
        "long": pa.array([None if i % 11 == 0 else f"customer-{i % 17:05d}-" + "x" * (i % 20) for i in range(n)]),
        "k32": pa.array([None if i % 9 == 0 else int(i % 7) - 3 for i in range(n)], pa.int32()),
        "day": pa.array([datetime.date(1998, 1, 1) + datetime.timedelta(days=int(d)) for d in rng.integers(0, 365, n)]),
        "price": money(100, 10_000_000, 31),
        "disc": money(0, 11, 0),
        "tax": money(0, 9, 0),
        # 10^37 on a few rows: its square leaves 128 bits
        "huge": pa.array([D(10) ** 37 if i % 1000 == 5 else D(int(i % 100)) for i in range(n)], pa.decimal128(38, 0)),
        "wide": pa.array(np.where(ids % 5000 == 1, 2**62, ids), pa.int64()),
        "x": pa.array(rng.normal(size=n)),
        # keys without NULLs, narrow enough to pack (up to 7 bytes) but for a few rows of the
        # second fragment (8 bytes): units of both kinds in one aggregate
        "flag": pa.array([("eight888" if 30_000 <= i < 30_010 else
                           ["A", "N", "", "日", "nul\0", "seven77"][int(v)]) for i, v in enumerate(rng.integers(0, 6, n))]),
        "k8": pa.array([int(i % 7) - 3 for i in range(n)], pa.int8()),
    })
    uri = str(tmp_path_factory.mktemp("grouping") / "t.lance")
    lance.write_dataset(t, uri, max_rows_per_file=25_000)
    lance.dataset(uri).delete("id % 97 = 0")
    return uri


def exact_sums(rows, keys, terms):
    """Per group of `keys`: count and the exact sum of each term (a function of a row, None
    when a value it uses is NULL) over pylance's rows."""
    out = {}
    for r in rows:
        g = out.setdefault(key_of(r, keys), {"n": 0, "sums": [None] * len(terms)})
        g["n"] += 1
        for j, f in enumerate(terms):
            v = f(r)
            if v is not None:
                g["sums"][j] = EXACT.add(g["sums"][j] or 0, v)
    return out


def test_q1_shaped_aggregates_equal_datafusion_and_exact_sums(table):
    uri = table
    ds = lh.open(uri)
    keys = ["s", "k32"]
    flt = "day <= date '1998-09-02'"
    aggs = [("price", "sum", "sum_price"),
            (E("price * (1 - disc)"), "sum", "sum_disc"),
            (E("price * (1 - disc) * (1 + tax)"), "sum", "sum_charge"),
            ("price", "avg", "avg_price"), ("disc", "avg", "avg_disc"),
            ("price", "count", "n_price"), (None, "count_all", "n"), ("wide", "sum", "sum_wide")]
    got = both(lambda: ds.aggregate(aggs, group_by=keys, filter=flt), keys)
    rows = lance.dataset(uri).to_table(filter=flt).to_pylist()
    mul = EXACT.multiply
    want = exact_sums(rows, keys, [
        lambda r: r["price"],
        lambda r: None if r["price"] is None else mul(r["price"], 1 - r["disc"]),
        lambda r: None if r["price"] is None else mul(mul(r["price"], 1 - r["disc"]), 1 + r["tax"]),
        lambda r: r["wide"],
    ])
    assert set(got) == set(want)
    for k, r in got.items():
        w = want[k]
        assert r["n"] == w["n"], k
        assert r["sum_price"] == w["sums"][0] and r["sum_disc"] == w["sums"][1], k
        assert r["sum_charge"] == w["sums"][2] and r["sum_wide"] == w["sums"][3], k
        assert r["n_price"] == sum(1 for x in rows if key_of(x, keys) == k and x["price"] is not None)
    # NULL keys are groups of their own; the flags' odd strings are there
    assert {"None", "", "nul\0x", "日本", "ä"} <= {k[0] for k in got} and "None" in {k[1] for k in got}


def test_long_string_date_and_four_keys_and_no_key(table):
    uri = table
    ds = lh.open(uri)
    for keys in (["long"], ["day"], ["day", "k32", "s", "long"]):
        got = both(lambda: ds.aggregate([("long", "count", "c"), ("id", "sum", "si"), ("price", "avg", "ap"),
                                         (E("price * disc"), "sum", "rev")], group_by=keys, filter="id % 3 <> 1"), keys)
        rows = lance.dataset(uri).to_table(filter="id % 3 <> 1").to_pylist()
        want = exact_sums(rows, keys, [lambda r: r["id"], lambda r: None if r["price"] is None else EXACT.multiply(r["price"], r["disc"])])
        assert {k: (r["si"], r["rev"]) for k, r in got.items()} == {k: tuple(w["sums"]) for k, w in want.items()}
    # no group key: one row, also when the filter keeps no row (COUNT 0, SUM NULL)
    for flt in (None, "disc >= CAST(0.05 AS DECIMAL(15,2)) AND disc <= CAST(0.07 AS DECIMAL(15,2)) AND price < CAST(24 AS DECIMAL(15,2))", "id < 0"):
        got = both(lambda: ds.aggregate([(E("price * disc"), "sum", "rev"), (None, "count_all", "n")], filter=flt), [])
        rows = lance.dataset(uri).to_table(filter=flt).to_pylist()
        want = exact_sums(rows, [], [lambda r: None if r["price"] is None else EXACT.multiply(r["price"], r["disc"])])
        (r,) = got.values()
        assert r["n"] == len(rows) and r["rev"] == (want[()]["sums"][0] if rows else None)
    # grouped, and the filter keeps no row: no group
    assert both(lambda: ds.aggregate([("id", "sum", "si")], group_by=["s"], filter="id < 0"), ["s"]) == {}


def test_narrow_keys_packed_and_units_with_a_wide_value(table):
    """Two to four keys without NULLs of up to 8 bytes each (strings up to 7) are grouped by their
    packed values; a unit with an 8-byte string is grouped through each key's numbers; the groups
    are the same either way."""
    uri = table
    ds = lh.open(uri)
    rows = lance.dataset(uri).to_table(filter="price IS NOT NULL OR id % 2 = 0").to_pylist()
    # the last two: a group per row (tables that grow many times; new values of many rows)
    for keys in (["flag", "k8"], ["flag", "day"], ["k8", "flag", "day"], ["day", "k8"], ["flag", "k8", "k32"],
                 ["k8", "id"], ["id"]):
        got = both(lambda: ds.aggregate([(None, "count_all", "n"), ("price", "sum", "sp"),
                                         (E("price * (1 - disc)"), "sum", "sd")],
                                        group_by=keys, filter="price IS NOT NULL OR id % 2 = 0"), keys)
        want = exact_sums(rows, keys, [lambda r: r["price"],
                                       lambda r: None if r["price"] is None else EXACT.multiply(r["price"], 1 - r["disc"])])
        assert {k: (r["n"], r["sp"], r["sd"]) for k, r in got.items()} == \
            {k: (w["n"], w["sums"][0], w["sums"][1]) for k, w in want.items()}, keys
        if "flag" in keys:
            assert "eight888" in {k[keys.index("flag")] for k in got}


def test_row_slice_partials_merge_to_the_one_call_answer(table):
    uri = table
    ds = lh.open(uri)
    keys = ["s", "k32"]
    aggs = [(E("price * (1 - disc) * (1 + tax)"), "sum", "charge"), ("price", "avg", "ap"), (None, "count_all", "n")]
    one = both(lambda: ds.aggregate(aggs, group_by=keys, filter="day > date '1998-03-01'"), keys)
    plan = ds.plan_scan(7_000, slices=True)
    assert len(plan) >= 6
    g0 = grouped()
    parts = [ds.aggregate_split(s, aggs, group_by=keys, filter="day > date '1998-03-01'")[0] for s in plan]
    assert grouped() - g0 == len(plan)
    merged = lh.merge_aggregates(parts)
    assert {key_of(r, keys): r for r in merged.to_pylist()} == one


def test_a_product_leaving_128_bits(table):
    uri = table
    ds = lh.open(uri)
    aggs = [(E("huge * huge"), "sum", "sq")]
    # on kept rows: the error DataFusion's aggregate gives, on both paths
    errors = []
    for call in (lambda: ds.aggregate(aggs, group_by=["s"]), lambda: with_datafusion(lambda: ds.aggregate(aggs, group_by=["s"]))):
        with pytest.raises(lh.LanceError) as e:
            call()
        errors.append((type(e.value), str(e.value)))
    assert errors[0] == errors[1] and "overflow" in errors[0][1].lower()
    # only on rows the filter drops: an answer, computed by the library
    got = both(lambda: ds.aggregate(aggs, group_by=["s"], filter="id % 1000 <> 5"), ["s"])
    rows = lance.dataset(uri).to_table(filter="id % 1000 <> 5").to_pylist()
    want = exact_sums(rows, ["s"], [lambda r: EXACT.multiply(r["huge"], r["huge"])])
    assert {k: r["sq"] for k, r in got.items()} == {k: w["sums"][0] for k, w in want.items()}
    # an int64 sum that leaves int64 is refused on both paths
    for call in (lambda: ds.aggregate([("wide", "sum", "s")]), lambda: with_datafusion(lambda: ds.aggregate([("wide", "sum", "s")]))):
        with pytest.raises(lh.OutOfRangeError, match="does not fit int64"):
            call()


def test_what_the_library_does_not_group_is_datafusions(table):
    ds = lh.open(table)
    five = ["s", "long", "k32", "day", "id"]
    both(lambda: ds.aggregate([(None, "count_all", "n")], group_by=five), five, here=False)
    both(lambda: ds.aggregate([("x", "sum", "sx")], group_by=["s"]), ["s"], here=False)
    both(lambda: ds.aggregate([("x", "min", "mx")], group_by=["s"]), ["s"], here=False)
    both(lambda: ds.aggregate([("price", "sum", "p")], group_by=[E("day + INTERVAL '1' DAY")]),
         ["day + INTERVAL '1' DAY"], here=False)
