"""An aggregate spec given as a Substrait plan (`LanceAggregateSpec.substrait_plan`, issue 62):
TPC-H Q1 and Q6 as a host's planner would hand them over (FilterRel, ProjectRel of the
expressions, AggregateRel), equal to DuckDB's answer on the rows pylance wrote, in one call and as
merged row-slice partials; float comparisons with Substrait's IEEE meaning (NaN of either sign)
equal to pyarrow's, whatever type the plan declares for a column; and every plan the translation
does not take refused with an error naming what it refused."""

import datetime
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")
duckdb = pytest.importorskip("duckdb")
pytest.importorskip("substrait")

from substrait.proto import AggregateRel, Expression, FetchRel, FilterRel, ProjectRel, Rel, SortRel, Type  # noqa: E402
from substrait_plans import sx_call, sx_date, sx_decimal, sx_field, sx_fp64, sx_measure, sx_plan, sx_read  # noqa: E402
from test_aggregate_expressions import Q1, Q6, _duckdb, _ours, _same_value, write_lineitem  # noqa: E402

# function anchors of the plans below
F = {1: "lte", 2: "multiply", 3: "subtract", 4: "add", 5: "gte", 6: "lt", 7: "and", 8: "between",
     10: "sum", 11: "avg", 12: "count", 13: "min", 14: "max"}
QTY, PRICE, DISC, TAX, FLAG, STATUS, SHIP = range(7)
Q1_NAMES = ["l_returnflag", "l_linestatus", "sum_qty", "sum_base_price", "sum_disc_price", "sum_charge",
            "avg_qty", "avg_price", "avg_disc", "count_order"]


@pytest.fixture(scope="module")
def lineitem(tmp_path_factory):
    return write_lineitem(tmp_path_factory)


def q1_plan(schema):
    read = sx_read("lineitem", schema)
    shipped = FilterRel(input=read, condition=sx_call(1, sx_field(SHIP), sx_date(datetime.date(1998, 9, 2))))
    one = sx_decimal("1", 1, 0)
    disc_price = sx_call(2, sx_field(PRICE), sx_call(3, one, sx_field(DISC)))
    charge = sx_call(2, disc_price, sx_call(4, one, sx_field(TAX)))
    project = ProjectRel(input=Rel(filter=shipped), expressions=[disc_price, charge])  # fields 7 and 8
    agg = AggregateRel(
        input=Rel(project=project), grouping_expressions=[sx_field(FLAG), sx_field(STATUS)],
        groupings=[AggregateRel.Grouping(expression_references=[0, 1])],
        measures=[sx_measure(10, sx_field(QTY)), sx_measure(10, sx_field(PRICE)), sx_measure(10, sx_field(7)),
                  sx_measure(10, sx_field(8)), sx_measure(11, sx_field(QTY)), sx_measure(11, sx_field(PRICE)),
                  sx_measure(11, sx_field(DISC)), sx_measure(12)])
    return sx_plan(Rel(aggregate=agg), Q1_NAMES, F).SerializeToString()


def q6_plan(schema):
    cond = sx_call(7, sx_call(5, sx_field(SHIP), sx_date(datetime.date(1994, 1, 1))),
                   sx_call(6, sx_field(SHIP), sx_date(datetime.date(1995, 1, 1))),
                   sx_call(8, sx_field(DISC), sx_decimal("0.05", 15, 2), sx_decimal("0.07", 15, 2)),
                   sx_call(6, sx_field(QTY), sx_decimal("24", 15, 2)))
    project = ProjectRel(input=Rel(filter=FilterRel(input=sx_read("lineitem", schema), condition=cond)),
                         expressions=[sx_call(2, sx_field(PRICE), sx_field(DISC))])
    agg = AggregateRel(input=Rel(project=project), measures=[sx_measure(10, sx_field(7))])
    return sx_plan(Rel(aggregate=agg), ["revenue"], F).SerializeToString()


def test_q1_plan_equals_duckdb_in_one_call_and_as_merged_partials(lineitem):
    uri, t = lineitem
    want = _duckdb(t, Q1)
    ds = lh.open(uri)
    plan = q1_plan(t.schema)
    out = ds.aggregate_substrait(plan)
    assert out.column_names == Q1_NAMES
    got = _ours(out, ["l_returnflag", "l_linestatus"])
    assert len(got) == len(want) == 6
    for g, w in zip(got, want):
        for k, v in w.items():
            _same_value(k, g[k], v)
    assert pa.types.is_decimal(out.schema.field("sum_charge").type)
    # a host calls again (a retry, a second bind): the same answer
    assert _ours(ds.aggregate_substrait(plan), ["l_returnflag", "l_linestatus"]) == got
    splits = ds.plan_scan(1500, slices=True)
    assert len(splits) >= 10
    parts = [ds.aggregate_split_substrait(s, plan)[0] for s in splits]
    assert _ours(lh.merge_aggregates(parts), ["l_returnflag", "l_linestatus"]) == got


def test_q6_plan_equals_duckdb(lineitem):
    uri, t = lineitem
    want = _duckdb(t, Q6)[0]["revenue"]
    got = lh.open(uri).aggregate_substrait(q6_plan(t.schema))
    assert got.column_names == ["revenue"] and got.num_rows == 1
    assert decimal.Decimal(got["revenue"][0].as_py()) == want


@pytest.fixture(scope="module")
def floats(tmp_path_factory):
    """NaN of both signs, +-0.0, +-inf and NULLs beside integers and a string key, as pylance wrote them."""
    rng = np.random.default_rng(7)
    n = 3000
    specials = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.5, 2.0, -3.25])
    x = np.where(rng.random(n) < 0.3, specials[rng.integers(0, len(specials), n)], rng.normal(0, 4, n))
    assert np.signbit(x[np.isnan(x)]).any() and (~np.signbit(x[np.isnan(x)])).any()
    table = pa.table({
        "g": pa.array(np.array(["a", "b", "c"])[rng.integers(0, 3, n)]),
        "x": pa.array(x, mask=rng.random(n) < 0.05),
        "i": pa.array(rng.integers(-1000, 1000, n), pa.int64()),
    })
    uri = str(tmp_path_factory.mktemp("floats") / "floats.lance")
    lance.write_dataset(table, uri, max_rows_per_file=1000)
    return uri, lance.dataset(uri).to_table()


def _float_plan(schema, types=None, names=("g", "n", "sum_x", "min_x", "max_x")):
    X, G = schema.names.index("x"), schema.names.index("g")
    cond = sx_call(6, sx_field(X), sx_fp64(2.0))  # x < 2.0: a NaN of either sign compares false
    agg = AggregateRel(input=Rel(filter=FilterRel(input=sx_read("floats", schema, types=types), condition=cond)),
                       grouping_expressions=[sx_field(G)], groupings=[AggregateRel.Grouping(expression_references=[0])],
                       measures=[sx_measure(12), sx_measure(10, sx_field(X)), sx_measure(13, sx_field(X)),
                                 sx_measure(14, sx_field(X))])
    return sx_plan(Rel(aggregate=agg), list(names), F).SerializeToString()


def _pyarrow_floats(t):
    kept = t.filter(pc.less(t["x"], 2.0))
    assert pc.is_nan(t["x"]).to_pylist().count(True) > 0  # NaN rows exist and are left out
    want = kept.group_by("g").aggregate([([], "count_all"), ("x", "sum"), ("x", "min"), ("x", "max")])
    return {r["g"]: (r["count_all"], r["x_sum"], r["x_min"], r["x_max"]) for r in want.to_pylist()}


def test_float_comparisons_keep_ieee_meaning_whatever_type_the_plan_declares(floats):
    uri, t = floats
    want = _pyarrow_floats(t)
    ds = lh.open(uri)
    as_declared = ds.aggregate_substrait(_float_plan(t.schema))
    # a plan that declares the float column an integer gets the table's meaning all the same
    mislabeled = ds.aggregate_substrait(_float_plan(t.schema, types={"x": Type(i64=Type.I64())}))
    for out in (as_declared, mislabeled):
        got = {r["g"]: (r["n"], r["sum_x"], r["min_x"], r["max_x"]) for r in out.to_pylist()}
        assert got.keys() == want.keys() and len(got) == 3
        for g, (n, s, lo, hi) in got.items():
            wn, ws, wlo, whi = want[g]
            assert (n, lo, hi) == (wn, wlo, whi), g
            assert s == pytest.approx(ws, rel=1e-12) or (s == ws)  # -inf sums stay -inf


def test_a_renamed_column_key_and_count_distinct(floats):
    uri, t = floats
    G, X = t.schema.names.index("g"), t.schema.names.index("x")
    agg = AggregateRel(input=sx_read("floats", t.schema), grouping_expressions=[sx_field(G)],
                       groupings=[AggregateRel.Grouping(expression_references=[0])],
                       measures=[sx_measure(12, sx_field(X), distinct=True), sx_measure(12, sx_field(X))])
    out = lh.open(uri).aggregate_substrait(sx_plan(Rel(aggregate=agg), ["group", "distinct_x", "non_null_x"], F)
                                           .SerializeToString())
    assert out.column_names == ["group", "distinct_x", "non_null_x"]
    con = duckdb.connect()
    con.register("t", t)
    # SQL counts every NaN as one value and -0.0 as 0.0, as DuckDB does
    want = {g: (d, c) for g, d, c in con.execute("SELECT g, count(DISTINCT x), count(x) FROM t GROUP BY g").fetchall()}
    assert {r["group"]: (r["distinct_x"], r["non_null_x"]) for r in out.to_pylist()} == want


def test_plans_the_translation_does_not_take_are_refused(floats):
    uri, t = floats
    ds = lh.open(uri)
    read = sx_read("floats", t.schema)
    count = AggregateRel(input=read, measures=[sx_measure(12)])
    I = t.schema.names.index("i")
    wrapping = AggregateRel(input=Rel(project=ProjectRel(input=read, expressions=[sx_call(4, sx_field(I), sx_field(I))])),
                            measures=[sx_measure(10, sx_field(len(t.schema)))])
    limited = FetchRel(input=Rel(aggregate=count), count_expr=Expression(literal=Expression.Literal(i64=1)))
    missing = t.schema.append(pa.field("nope", pa.int64()))
    cases = [
        (sx_plan(read, [], F), lh.InvalidArgumentError, "no AggregateRel"),
        (sx_plan(Rel(fetch=limited), [], F), lh.NotSupportedError, "FetchRel"),
        (sx_plan(Rel(sort=SortRel(input=Rel(aggregate=count))), [], F), lh.NotSupportedError, "SortRel"),
        # integer arithmetic could wrap: refused, also when the plan declares the column a double
        (sx_plan(Rel(aggregate=wrapping), [], F), lh.NotSupportedError, "integer arithmetic"),
        (sx_plan(Rel(aggregate=AggregateRel(
            input=Rel(project=ProjectRel(input=sx_read("floats", t.schema, types={"i": Type(fp64=Type.FP64())}),
                                         expressions=[sx_call(4, sx_field(I), sx_field(I))])),
            measures=[sx_measure(10, sx_field(len(t.schema)))])), [], F), lh.NotSupportedError, "integer arithmetic"),
        (sx_plan(Rel(aggregate=AggregateRel(input=sx_read("floats", missing), measures=[sx_measure(12)])), [], F),
         lh.InvalidArgumentError, "`nope`, which is not a column"),
        (sx_plan(Rel(aggregate=count), ["a", "b"], F), lh.NotSupportedError, "names"),
        # SELECT DISTINCT g: a valid plan the spec cannot say (it computes at least one aggregate)
        (sx_plan(Rel(aggregate=AggregateRel(input=read, grouping_expressions=[sx_field(0)],
                                            groupings=[AggregateRel.Grouping(expression_references=[0])])),
                 [], F), lh.NotSupportedError, "without measures"),
    ]
    for plan, error, message in cases:
        for call in (lambda p: ds.aggregate_substrait(p), lambda p: ds.aggregate_split_substrait(ds.plan_scan(0)[0], p)):
            with pytest.raises(error, match=message):
                call(plan.SerializeToString())
    for garbage in (b"\xff\x00garbage", b""):
        with pytest.raises(lh.InvalidArgumentError, match="Substrait plan"):
            ds.aggregate_substrait(garbage)
    with pytest.raises(lh.InvalidArgumentError, match="bytes"):
        ds.aggregate_substrait("SELECT count(*) FROM t")
    # the table is as it was, and a good plan still runs on the same handle
    assert ds.aggregate_substrait(sx_plan(Rel(aggregate=count), ["n"], F).SerializeToString()).to_pylist() == \
        [{"n": t.num_rows}]
