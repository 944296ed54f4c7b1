"""Aggregates computed inside the splits (issue 47): lance-host's COUNT/SUM/MIN/MAX/AVG with
GROUP BY and a filter equal pyarrow's `group_by().aggregate()` on the rows pylance reads, on a
table with deletions, an appended fragment after a scalar index, NULLs and NaN, every supported
type; partial states of splits (in this process and in spawned workers, shipped as split bytes,
through Arrow IPC) merge to the one-call answer; an integer SUM that leaves int64 is refused;
hostile specs are clean errors."""

import datetime
import decimal
import math
import multiprocessing
import pickle

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")

ROWS = 6_000


def _rows(start, n, rng):
    ids = np.arange(start, start + n)
    f64 = rng.normal(size=n)
    f64[rng.random(n) < 0.03] = np.nan
    f32 = rng.normal(size=n).astype(np.float32)
    f32[ids % 97 == 5] = np.nan
    null = rng.random(n) < 0.1
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "g": pa.array([None if i % 23 == 0 else f"g{i % 7}" for i in ids]),
        "h": pa.array((ids % 3).astype(np.int32)),
        "b": pa.array([None if i % 31 == 0 else bool(i % 2) for i in ids]),
        "i8": pa.array(((ids % 200) - 100).astype(np.int8), mask=null),
        "i32": pa.array((ids * 7919 % 100_000 - 50_000).astype(np.int32)),
        "i64": pa.array(ids * 1_000_003 - 3_000_000_000, pa.int64(), mask=rng.random(n) < 0.05),
        "u16": pa.array((ids % 60_000).astype(np.uint16)),
        "u64": pa.array((ids * 12_345_678_901).astype(np.uint64)),
        "f32": pa.array(f32),
        "f64": pa.array(f64, mask=null),
        "dec": pa.array([None if i % 11 == 0 else decimal.Decimal(int(i * 37 % 100_000) - 50_000).scaleb(-2)
                         for i in ids], pa.decimal128(15, 2)),
        "s": pa.array([None if i % 13 == 0 else f"s{(i * 31) % 1000:04d}" for i in ids]),
        "d": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=int(i % 900)) for i in ids], pa.date32()),
        "ts": pa.array((ids * 1_000_000).astype("datetime64[us]"), pa.timestamp("us")),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4).astype(np.float32)), 4),
        "tags": pa.array([[int(i % 5)] * int(i % 3) for i in ids], pa.list_(pa.int32())),
    })


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("agg") / "t.lance")
    rng = np.random.default_rng(47)
    lance.write_dataset(_rows(0, ROWS, rng), uri, max_rows_per_file=2_000)
    ds = lance.dataset(uri)
    ds.create_scalar_index("h", "BTREE")
    # deletions inside fragments, one fragment emptied of half its rows
    ds.delete("id % 17 = 3 OR (id >= 2500 AND id < 3500)")
    # an appended fragment the index does not cover
    lance.write_dataset(_rows(ROWS, 1_500, rng), uri, mode="append")
    return uri


NUMERIC = ["i8", "i32", "i64", "u16", "u64", "f32", "f64", "dec"]
ORDERED = ["s", "b", "d", "ts"]


def _all_aggregates():
    aggs = [([], "count_all")]
    for c in NUMERIC:
        aggs += [(c, "count"), (c, "sum"), (c, "min"), (c, "max"), (c, "mean")]
    for c in ORDERED:
        aggs += [(c, "count"), (c, "min"), (c, "max")]
    aggs += [("vec", "count"), ("tags", "count")]
    return aggs


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    return a == b


def _rows_by_key(t: pa.Table, keys):
    rows = {}
    for r in t.to_pylist():
        k = tuple(r[c] for c in keys)
        assert k not in rows, f"group {k} twice"
        rows[k] = list(r.values())[len(keys):]
    return rows


def _assert_equal(ours: pa.Table, expected: pa.Table, keys):
    assert ours.num_rows == expected.num_rows
    a, b = _rows_by_key(ours, keys), _rows_by_key(expected, keys)
    assert a.keys() == b.keys()
    for k in a:
        for name, x, y in zip(ours.column_names[len(keys):], a[k], b[k]):
            assert _same(x, y), f"group {k}, {name}: {x!r} != {y!r}"


def _expected(uri, aggs, keys, filter=None):
    rows = lance.dataset(uri).to_table(filter=filter)
    return rows.group_by(keys, use_threads=False).aggregate(aggs) if keys else rows.group_by([]).aggregate(aggs)


@pytest.mark.parametrize("keys", [[], ["g"], ["g", "h"], ["b"], ["d"]])
def test_every_type_and_rule_equals_pyarrow(table, keys):
    ds = lh.open(table)
    aggs = _all_aggregates()
    ours = ds.aggregate(aggs, group_by=keys)
    expected = _expected(table, aggs, keys)
    # types as documented: the result of the column's kind
    types = dict(zip(ours.column_names, ours.schema.types))
    assert types["sum(i64)"] == pa.int64() and types["sum(u64)"] == pa.uint64()
    assert types["sum(f32)"] == pa.float64() and types["sum(dec)"] == pa.decimal128(38, 2)
    assert types["avg(dec)"] == pa.decimal128(15, 2) and types["avg(i32)"] == pa.float64()
    assert types["min(s)"] == pa.string() and types["max(ts)"] == pa.timestamp("us")
    # pyarrow's float32 sum and mean are float64 as well; compare values
    expected = expected.select(keys + [c for c in expected.column_names if c not in keys])
    _assert_equal(ours.rename_columns(expected.column_names), expected, keys)


@pytest.mark.parametrize("filter", ["h = 1", "f64 > 0.5 AND g IS NOT NULL", "id >= 6000", "id < 0"])
def test_filters_apply_before_the_aggregate(table, filter):
    ds = lh.open(table)
    aggs = [([], "count_all"), ("i64", "sum"), ("f64", "max"), ("dec", "mean"), ("s", "min")]
    for keys in ([], ["g"]):
        ours = ds.aggregate(aggs, group_by=keys, filter=filter)
        expected = _expected(table, aggs, keys, filter)
        _assert_equal(ours.rename_columns(expected.column_names), expected, keys)
    empty = ds.aggregate(aggs, filter="id < 0")
    assert empty.to_pylist() == [{"count(*)": 0, "sum(i64)": None, "max(f64)": None, "avg(dec)": None, "min(s)": None}]
    assert ds.aggregate(aggs, group_by="g", filter="id < 0").num_rows == 0


def _partials(ds, plan, aggs, keys, filter=None):
    return [ds.aggregate_split(s, aggs, group_by=keys, filter=filter)[0] for s in plan]


@pytest.mark.parametrize("target", [0, 700, 2_500])
def test_partials_of_splits_merge_to_the_one_call_answer(table, target):
    ds = lh.open(table)
    aggs = _all_aggregates()
    plan = ds.plan_scan(target, slices=True)
    assert len(plan) >= 2
    for keys, filter in (([], None), (["g", "h"], None), (["g"], "f64 > 0")):
        one = ds.aggregate(aggs, group_by=keys, filter=filter)
        parts = _partials(ds, plan, aggs, keys, filter)
        assert all(p.num_rows <= 100 for p in parts), "partials are a few rows per group"
        _assert_equal(lh.merge_aggregates(parts), one, keys)
        # through Arrow IPC (the state metadata travels with the schema)
        shipped = []
        for p in parts:
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, p.schema) as w:
                w.write_table(p)
            shipped.append(pa.ipc.open_stream(sink.getvalue()).read_all())
        _assert_equal(lh.merge_aggregates(shipped), one, keys)


def _worker(args):
    uri, split_bytes, aggs, keys = args
    import lance_host
    split = pickle.loads(split_bytes)
    ds = split.open_dataset()
    part, _ = ds.aggregate_split(split, aggs, group_by=keys)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, part.schema) as w:
        w.write_table(part)
    return sink.getvalue().to_pybytes()


def test_partials_from_spawned_workers_merge_on_the_parent(table):
    ds = lh.open(table)
    aggs = [([], "count_all"), ("i64", "sum"), ("u64", "sum"), ("f64", "mean"), ("dec", "mean"),
            ("f32", "min"), ("s", "max"), ("ts", "min")]
    keys = ["g"]
    plan = ds.plan_scan(1_000, slices=True)
    jobs = [(table, pickle.dumps(s), aggs, keys) for s in plan]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        shipped = pool.map(_worker, jobs)
    parts = [pa.ipc.open_stream(b).read_all() for b in shipped]
    _assert_equal(lh.merge_aggregates(parts), ds.aggregate(aggs, group_by=keys), keys)


def test_an_integer_sum_beyond_int64_is_refused_not_wrapped(tmp_path):
    uri = str(tmp_path / "big.lance")
    big = 2 ** 62
    lance.write_dataset(pa.table({"k": ["a", "a", "b", "b"], "v": pa.array([big, big, big, -big], pa.int64()),
                                  "u": pa.array([2 ** 63, 2 ** 63, 1, 2], pa.uint64())}), uri)
    ds = lh.open(uri)
    # pyarrow wraps this sum; lance-host refuses
    assert pa.table({"v": [big, big]}).group_by([]).aggregate([("v", "sum")])["v_sum"][0].as_py() < 0
    with pytest.raises(lh.OutOfRangeError, match="does not fit int64"):
        ds.aggregate([("v", "sum")], group_by="k")
    with pytest.raises(lh.OutOfRangeError, match="uint64"):
        ds.aggregate([("u", "sum")])
    # the group that fits, and the exact average of the one that does not
    assert ds.aggregate([("v", "sum")], group_by="k", filter="k = 'b'").to_pylist() == [{"k": "b", "sum(v)": 0}]
    assert ds.aggregate([("v", "mean")], group_by="k", filter="k = 'a'").to_pylist() == [{"k": "a", "avg(v)": float(big)}]


def _other_table(uri):
    other = uri.replace("t.lance", "other.lance")
    lance.write_dataset(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), other, mode="overwrite")
    return other


def test_hostile_specs_are_clean_errors(table):
    ds = lh.open(table)
    with pytest.raises(lh.InvalidArgumentError, match="unknown column 'nope'"):
        ds.aggregate([("nope", "sum")])
    with pytest.raises(lh.InvalidArgumentError, match="unknown column 'nope'"):
        ds.aggregate([([], "count_all")], group_by="nope")
    with pytest.raises(lh.InvalidArgumentError, match="at most 1024"):
        ds.aggregate([("i64", "sum", f"s{i}") for i in range(10_000)])
    with pytest.raises(lh.NotSupportedError, match="group by 'vec'"):
        ds.aggregate([([], "count_all")], group_by="vec")
    with pytest.raises(lh.NotSupportedError, match="SUM of a List"):
        ds.aggregate([("tags", "sum")])
    with pytest.raises(lh.NotSupportedError, match="MIN of a FixedSizeList"):
        ds.aggregate([("vec", "min")])
    with pytest.raises(lh.NotSupportedError, match="AVG of a Utf8"):
        ds.aggregate([("s", "mean")])
    with pytest.raises(lh.InvalidArgumentError, match="unknown function 'median'"):
        ds.aggregate([("i64", "median")])
    with pytest.raises(lh.InvalidArgumentError, match="at least one aggregate"):
        ds.aggregate([])
    with pytest.raises(lh.InvalidArgumentError, match="already"):
        ds.aggregate([("i64", "sum"), ("i64", "sum")])
    with pytest.raises(lh.InvalidArgumentError, match="filter"):
        ds.aggregate([("i64", "sum")], filter="   ")
    with pytest.raises(lh.InvalidArgumentError, match="offset"):
        ds.aggregate([("i64", "sum")], filter="id = 1; DROP TABLE t")
    with pytest.raises(lh.InvalidArgumentError, match="placeholder"):
        ds.aggregate([("i64", "sum")], filter="id = $1")
    # partials of different specs, and batches that are not partial states, do not merge
    plan = ds.plan_scan(0)
    a = ds.aggregate_split(plan[0], [("i64", "sum")])[0]
    b = ds.aggregate_split(plan[1], [("i64", "max")])[0]
    with pytest.raises(lh.InvalidArgumentError, match="another aggregate"):
        lh.merge_aggregates([a, b])
    with pytest.raises(lh.InvalidArgumentError, match="not a partial-state batch"):
        lh.merge_aggregates([pa.table({"x": [1]})])
    with pytest.raises(lh.InvalidArgumentError, match="no partial states"):
        lh.merge_aggregates([])

    # forged state metadata: refused by name, never a crash or a wrong merge
    good = ds.aggregate_split(plan[0], [([], "count_all"), ("i64", "sum")], group_by="g")[0]

    def forged(column, **meta):
        i = good.schema.get_field_index(column)
        f = good.schema.field(i)
        m = {k.decode(): v.decode() for k, v in f.metadata.items()}
        m.update(meta)
        return good.cast(good.schema.set(i, f.with_metadata(m)))

    for t, needle in [(forged("agg1_sum", **{"lance_host.kind": "float"}), "its state needs Float64"),
                      (forged("agg0_count", **{"lance_host.state": "sum", "lance_host.kind": "signed"}), "state needs"),
                      (forged("agg0_count", **{"lance_host.aggregate": str(10 ** 12)}), "bad aggregate index"),
                      (forged("agg0_count", **{"lance_host.state": "median"}), "unknown state")]:
        with pytest.raises(lh.InvalidArgumentError, match=needle):
            lh.merge_aggregates([t])
    # splits that are not this table's scan splits
    search = ds.plan_vector_search("vec")[0]
    with pytest.raises(lh.InvalidArgumentError, match="scan splits"):
        ds.aggregate_split(search, [([], "count_all")])
    other = lh.open(_other_table(table))
    with pytest.raises(lh.InvalidArgumentError):
        ds.aggregate_split(other.plan_scan(0)[0], [([], "count_all")])
    # the table is still fine
    assert ds.aggregate([([], "count_all")]).column(0)[0].as_py() == lance.dataset(table).count_rows()


def test_a_large_table_is_aggregated_on_every_core_and_equals_pyarrow(tmp_path):
    """Above 200,000 rows the one-call aggregate plans splits of rows / cores (row slices of a
    one-fragment table) and merges their partials: the answer is pyarrow's."""
    uri = str(tmp_path / "large.lance")
    n = 300_000
    ids = np.arange(n)
    lance.write_dataset(pa.table({"id": pa.array(ids, pa.int64()),
                                  "g": pa.array(np.array(["a", "b", "c", None], dtype=object)[ids % 4]),
                                  "x": pa.array(np.where(ids % 101 == 0, np.nan, ids / 7.0)),
                                  "dec": pa.array(ids % 10_000, pa.int64()).cast(pa.decimal128(19, 0))
                                  .cast(pa.decimal128(12, 2))}), uri)
    lance.dataset(uri).delete("id % 9 = 2 OR (id > 140000 AND id < 160000)")
    ds = lh.open(uri)
    assert len(lance.dataset(uri).get_fragments()) == 1
    aggs = [([], "count_all"), ("id", "sum"), ("x", "max"), ("x", "mean"), ("dec", "mean"), ("dec", "sum"), ("id", "min")]
    for keys, filter in (([], None), (["g"], None), (["g"], "id % 3 = 0")):
        _assert_equal(ds.aggregate(aggs, group_by=keys, filter=filter).rename_columns(
            _expected(uri, aggs, keys, filter).column_names), _expected(uri, aggs, keys, filter), keys)
