"""Apache Spark (local[2], pyspark's Python Data Source API) reading and searching a
pylance-written table through lance_host.spark: the answer equals a single-process read; Spark
partitions are the library's splits, each read exactly once by a Python worker process (not
this driver); pushed filters are applied by Lance (the library returns fewer rows), others by
Spark; a pinned version holds while a writer commits; vector search top k equals the library's
merge and brute force, with and without a prefilter, on indexed and flat splits."""

import glob
import json
import os
import threading

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")
import pyspark  # noqa: E402,F401  (installed by the test command: never skipped)

from lance_host.spark import merge_top_k, register  # noqa: E402

DIM = 8
ROOT_EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples"


def batch(start, end):
    rng = np.random.default_rng(start)
    ids = np.arange(start, end)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "cat": pa.array([f"c{i % 4}" for i in ids]),
        "price": pa.array(ids * 0.5, pa.float64()),
        "flag": pa.array(ids % 3 == 0),
        "u32": pa.array(ids * 7, pa.uint32()),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.normal(size=(end - start) * DIM).astype(np.float32)), DIM),
    })


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("spark") / "t.lance")
    lance.write_dataset(batch(0, 2000), uri, max_rows_per_file=400)
    ds = lance.dataset(uri)
    ds.create_index("vec", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=2, name="vec_idx")
    lance.write_dataset(batch(2000, 2600), uri, mode="append", max_rows_per_file=400)
    ds = lance.dataset(uri)
    ds.delete("id % 13 = 5")
    return uri, lance.dataset(uri)


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    s = (SparkSession.builder.master("local[2]").appName("lance-host-test")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.sql.python.filterPushdown.enabled", "true")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.driver.host", "127.0.0.1")
         .getOrCreate())
    register(s)
    yield s
    s.stop()


def tasks(d):
    return [json.load(open(p)) for p in glob.glob(os.path.join(d, "task-*.json"))]


def rows_of(df, cols):
    return sorted(tuple(r[c] for c in cols) for r in df.collect())


def test_scan_equals_single_process_and_partitions_are_splits(spark, table, tmp_path):
    uri, pyds = table
    df = spark.read.format("lance_host").option("uri", uri).option("stats_dir", str(tmp_path)).load()
    splits = lh.open(uri).plan_scan()
    assert df.rdd.getNumPartitions() == len(splits)
    t = pyds.to_table()
    cols = ["id", "cat", "price", "flag", "u32"]
    assert rows_of(df, cols) == sorted(zip(*[t[c].to_pylist() for c in cols]))
    # Types Spark cannot hold, converted: uint32 -> long, fixed-size list -> array<float>.
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert types["u32"] == "bigint" and types["vec"] == "array<float>"
    vecs = {r["id"]: r["vec"] for r in df.select("id", "vec").collect()}
    assert vecs[7] == pytest.approx(t["vec"][t["id"].to_pylist().index(7)].as_py())
    # Each split read exactly once, by a Python worker process, never by this driver.
    recs = tasks(str(tmp_path))
    splits_read = [r["split"] for r in recs]
    assert len(recs) >= len(splits) and set(splits_read) == set(range(len(splits)))
    first_pass = {}
    for r in recs:
        first_pass.setdefault(r["split"], []).append(r)
    assert all(r["pid"] != os.getpid() for r in recs)
    assert sum(first_pass[i][0]["rows"] for i in range(len(splits))) == pyds.count_rows()


def test_spark_filters_are_applied_by_spark_and_the_filter_option_by_lance(spark, table, tmp_path):
    """register() pushes no Spark filter (pyspark 4.1-4.3 reuse a pushed reader, see
    test_a_filtered_query_never_changes_a_later_one): Spark's where() is right and the library
    returned every row; the `filter` option is applied by Lance (fewer rows returned)."""
    uri, pyds = table

    def run(where, sub, **options):
        d = tmp_path / sub
        d.mkdir()
        reader = spark.read.format("lance_host").option("uri", uri).option("stats_dir", str(d))
        for k, v in options.items():
            reader = reader.option(k, v)
        got = rows_of(reader.load().where(where).select("id"), ["id"])
        return [g[0] for g in got], sum(r["rows"] for r in tasks(str(d))), [r["filter"] for r in tasks(str(d))]

    want = sorted(pyds.to_table(columns=["id"], filter="id < 900 AND cat IN ('c1', 'c2') AND NOT flag")["id"].to_pylist())
    ids, returned, filters = run("id < 900 AND cat IN ('c1', 'c2') AND NOT flag AND price IS NOT NULL", "spark")
    assert ids == want
    assert returned == pyds.count_rows() and filters == [None] * len(filters)
    t = pyds.to_table(columns=["id", "cat"])
    want = sorted(i for i, c in zip(t["id"].to_pylist(), t["cat"].to_pylist()) if c.endswith("3"))
    assert run("cat LIKE '%3'", "like")[0] == want
    # The filter option (Lance SQL) and a Spark filter together.
    ids, returned, filters = run("id < 400", "both", filter="price >= 100")
    want = sorted(pyds.to_table(columns=["id"], filter="price >= 100 AND id < 400")["id"].to_pylist())
    assert ids == want
    assert returned == pyds.count_rows(filter="price >= 100") < pyds.count_rows()
    assert all(f == "(price >= 100)" for f in filters)


def spark_answer(df, query):
    """Run one of the query shapes of the reuse repro on `df`: a sorted list of tuples."""
    if query == "all":
        return sorted(tuple(r) for r in df.select("id", "cat").collect())
    if query == "count":
        return [(df.count(),)]
    if query == "groups":
        return sorted(tuple(r) for r in df.groupBy("cat").count().collect())
    if query == "narrow":
        return sorted(tuple(r) for r in df.select("id").collect())
    return sorted(tuple(r) for r in df.where(query).select("id", "cat").collect())


def pylance_answer(pyds, query):
    t = pyds.to_table(columns=["id", "cat"])
    rows = list(zip(t["id"].to_pylist(), t["cat"].to_pylist()))
    if query == "all":
        return sorted(rows)
    if query == "count":
        return [(len(rows),)]
    if query == "groups":
        from collections import Counter
        return sorted(Counter(c for _, c in rows).items())
    if query == "narrow":
        return sorted((i,) for i, _ in rows)
    return sorted((x["id"], x["cat"]) for x in pyds.to_table(columns=["id", "cat"], filter=query).to_pylist())


REUSE_SEQUENCES = [
    ["cat = 'c1'", "count", "groups", "all"],                 # the repro
    ["narrow", "all", "cat = 'c2'", "narrow"],                # projection, then none
    ["id < 300", "cat IN ('c0', 'c3')", "id >= 2500", "count"],  # different filters
]


@pytest.mark.parametrize("cached", [False, True])
@pytest.mark.parametrize("sequence", REUSE_SEQUENCES)
def test_a_filtered_query_never_changes_a_later_one(spark, table, sequence, cached):
    """Queries of one DataFrame, each equal to pylance's answer whatever ran before it on the
    same DataFrame (0.10.5: after where(cat = 'c1'), count() and groupBy counted the filtered
    rows only)."""
    uri, pyds = table
    df = spark.read.format("lance_host").option("uri", uri).load()
    if cached:
        df = df.cache()
    for query in sequence:
        assert spark_answer(df, query) == pylance_answer(pyds, query), query


def test_filter_pushdown_only_where_the_probe_finds_spark_safe(spark, table):
    """register(spark, filter_pushdown=True) probes the session: on a Spark that reuses a
    pushed reader (pyspark 4.1-4.3) it is NotSupportedError naming what the probe saw, and the
    session is left as it was (setting unchanged, the formats reading correctly); on a Spark
    that does not, the formats push filters and the reuse sequences still answer right."""
    from lance_host.spark import pushdown_reuse_problem

    uri, pyds = table
    before = spark.conf.get("spark.sql.python.filterPushdown.enabled", None)
    try:
        register(spark, filter_pushdown=True)
    except lh.NotSupportedError as e:
        assert "reused the reader" in str(e) and pyspark.__version__ in str(e)
        assert spark.conf.get("spark.sql.python.filterPushdown.enabled", None) == before
        assert pushdown_reuse_problem(spark) is not None
        with pytest.raises(Exception, match="LANCE_ERR_INVALID_ARGUMENT.*filter_pushdown=True"):
            spark.read.format("lance_host").option("uri", uri).option("pushdown", "true").load().count()
    else:
        assert pushdown_reuse_problem(spark) is None
        try:
            df = spark.read.format("lance_host").option("uri", uri).load()
            for query in REUSE_SEQUENCES[0] + REUSE_SEQUENCES[2]:
                assert spark_answer(df, query) == pylance_answer(pyds, query), query
        finally:
            register(spark)
    df = spark.read.format("lance_host").option("uri", uri).load()
    for query in REUSE_SEQUENCES[0]:
        assert spark_answer(df, query) == pylance_answer(pyds, query), query


def test_pushed_filter_translation_is_exact():
    """The Lance SQL of each translatable Spark filter selects, through pylance, the rows
    Python's own evaluation of the filter selects; others are not translated."""
    from pyspark.sql import datasource as d

    from lance_host.spark import to_lance_sql

    rows = [{"id": i, "cat": None if i % 5 == 0 else f"c{i % 3}", "x": float(i) / 4, "b": i % 2 == 0}
            for i in range(40)]
    t = pa.Table.from_pylist(rows)
    import tempfile
    uri = tempfile.mkdtemp() + "/f.lance"
    lance.write_dataset(t, uri)
    pyds = lance.dataset(uri)
    cases = [
        (d.EqualTo(("id",), 7), lambda r: r["id"] == 7),
        (d.GreaterThan(("x",), 2.5), lambda r: r["x"] > 2.5),
        (d.LessThanOrEqual(("id",), 3), lambda r: r["id"] <= 3),
        (d.In(("cat",), ("c1", "c2")), lambda r: r["cat"] in ("c1", "c2")),
        (d.IsNull(("cat",)), lambda r: r["cat"] is None),
        (d.Not(d.EqualTo(("b",), True)), lambda r: r["b"] is not True),
        (d.EqualNullSafe(("cat",), "c0"), lambda r: r["cat"] == "c0"),
        (d.EqualTo(("cat",), "it's"), lambda r: r["cat"] == "it's"),
    ]
    for f, keep in cases:
        sql = to_lance_sql(f)
        assert sql is not None, f
        got = sorted(pyds.to_table(columns=["id"], filter=sql)["id"].to_pylist())
        assert got == sorted(r["id"] for r in rows if keep(r)), (f, sql)
    assert to_lance_sql(d.GreaterThan(("x",), float("nan"))) is None
    assert to_lance_sql(d.EqualTo(("cat",), "a\0b")) is None  # Lance refuses NUL in a filter
    assert to_lance_sql(d.In(("cat",), ("c1", "\0"))) is None
    assert to_lance_sql(d.EqualTo(("s", "inner"), 1)) is None
    assert to_lance_sql(d.StringContains(("cat",), "c")) is None


def test_version_option_holds_while_a_writer_commits(spark, tmp_path):
    uri = str(tmp_path / "moving.lance")
    lance.write_dataset(batch(0, 500), uri, max_rows_per_file=100)
    stop = threading.Event()

    def writer():
        at = 500
        while not stop.is_set():
            lance.write_dataset(batch(at, at + 50), uri, mode="append")
            at += 50

    w = threading.Thread(target=writer)
    w.start()
    try:
        for _ in range(3):
            df = spark.read.format("lance_host").option("uri", uri).option("version", "1").load()
            assert sorted(r["id"] for r in df.select("id").collect()) == list(range(500))
    finally:
        stop.set()
        w.join()
    assert lance.dataset(uri).version > 1, "the writer committed nothing while Spark read"


def single_process_top_k(uri, q, k, **query):
    ds = lh.open(uri)
    plan = ds.plan_vector_search("vec", use_index=query.pop("use_index", True))
    return lh.merge_top_k([ds.search_split(s, "vec", q, k, columns=["id"], **query) for s in plan], k).read_all()


@pytest.mark.parametrize("prefilter", [None, "cat = 'c2'"])
def test_vector_search_top_k(spark, table, prefilter, tmp_path):
    uri, pyds = table
    q = pyds.take([77], columns=["vec"])["vec"][0].as_py()
    k = 10
    reader = (spark.read.format("lance_host_search").option("uri", uri).option("column", "vec")
              .option("vector", json.dumps(q)).option("k", str(k)).option("nprobes", "4").option("refine", "20")
              .option("columns", "id").option("stats_dir", str(tmp_path)))
    if prefilter:
        reader = reader.option("filter", prefilter)
    df = reader.load()
    plan = lh.open(uri).plan_vector_search("vec")
    assert df.rdd.getNumPartitions() == len(plan)
    kinds = {s.kind for s in plan}
    assert len(kinds) == 2, "expected index-segment and flat splits"
    top = [r["id"] for r in df.orderBy("_distance", "_rowid").limit(k).collect()]
    merged = merge_top_k(df, k)
    opts = {"nprobes": 4, "refine_factor": 20, "prefilter": prefilter}
    lib = single_process_top_k(uri, q, k, **opts)
    assert top == merged["id"].to_pylist() == lib["id"].to_pylist()
    # Brute force (all-flat plan) equals pylance's exact search.
    flat = (spark.read.format("lance_host_search").option("uri", uri).option("column", "vec")
            .option("vector", json.dumps(q)).option("k", str(k)).option("use_index", "false").option("columns", "id"))
    if prefilter:
        flat = flat.option("filter", prefilter)
    exact = pyds.to_table(columns=["id"], filter=prefilter, prefilter=prefilter is not None,
                          nearest={"column": "vec", "q": q, "k": k, "use_index": False})
    assert merge_top_k(flat.load(), k)["id"].to_pylist() == exact["id"].to_pylist()
    # max_partitions: the flat splits combined into 2 partitions give the same exact answer.
    n_flat = len(lh.open(uri).plan_vector_search("vec", use_index=False))
    assert n_flat > 2
    capped = flat.option("max_partitions", "2").load()
    assert capped.rdd.getNumPartitions() == 2
    assert merge_top_k(capped, k)["id"].to_pylist() == exact["id"].to_pylist()
    # The index plan with one partition per split kind: k rows with exact distances, in order.
    one = reader.option("max_partitions", "1").load()
    assert one.rdd.getNumPartitions() == len(kinds)
    best = merge_top_k(one, k)
    d = best["_distance"].to_pylist()
    assert best.num_rows == k and d == sorted(d) and best["id"][0].as_py() == lib["id"][0].as_py()
    for bad in ("0", "-1", "two"):
        with pytest.raises(Exception, match="max_partitions"):
            reader.option("max_partitions", bad).load().collect()
    assert all(r["pid"] != os.getpid() for r in tasks(str(tmp_path)))


def test_catalog_table_and_timestamp_options(spark, tmp_path):
    """A table named through a directory catalog (table + catalog.root), and a snapshot pinned
    by commit time (timestamp_ms): the rows of that version."""
    root = tmp_path / "wh"
    uri = str(root / "t.lance")
    lance.write_dataset(batch(0, 300), uri, max_rows_per_file=100)
    lance.write_dataset(batch(300, 450), uri, mode="append")
    df = (spark.read.format("lance_host").option("table", "t").option("catalog.root", str(root)).load())
    assert sorted(r["id"] for r in df.select("id").collect()) == list(range(450))
    # the commit time at the microsecond (pylance's); a millisecond cut below it is before
    # version 1 was committed (open at a timestamp compares microseconds, as pylance's asof)
    t1_us = round(lance.dataset(uri).versions()[0]["timestamp"].timestamp() * 1_000_000)
    old = spark.read.format("lance_host").option("uri", uri).option("timestamp_us", str(t1_us + 2)).load()
    assert sorted(r["id"] for r in old.select("id").collect()) == list(range(300))
    old = spark.read.format("lance_host").option("uri", uri).option("timestamp_ms", str(t1_us // 1000 + 1)).load()
    assert sorted(r["id"] for r in old.select("id").collect()) == list(range(300))
    with pytest.raises(Exception, match="give one"):
        (spark.read.format("lance_host").option("uri", uri).option("timestamp_ms", "1")
         .option("timestamp_us", "1").load().collect())
    with pytest.raises(Exception, match="set option 'uri'"):
        spark.read.format("lance_host").load().collect()


def test_a_dataframe_reads_the_snapshot_its_schema_came_from(spark, tmp_path):
    """schema() pins the snapshot it opened and the reader plans on it: rows appended after the
    DataFrame was made are not read (one version per DataFrame, as with Delta), and planning does
    not open the table again. A user-given schema skips schema(): the reader opens the latest."""
    uri = str(tmp_path / "pinned.lance")
    lance.write_dataset(batch(0, 300), uri, max_rows_per_file=100)
    df = spark.read.format("lance_host").option("uri", uri).load()
    search = (spark.read.format("lance_host_search").option("uri", uri).option("column", "vec")
              .option("vector", json.dumps([0.1] * DIM)).option("k", "1000").option("use_index", "false").load())
    lance.write_dataset(batch(300, 450), uri, mode="append")
    assert sorted(r["id"] for r in df.select("id").collect()) == list(range(300))
    assert sorted(r["id"] for r in search.select("id").collect()) == list(range(300))
    latest = spark.read.format("lance_host").schema("id bigint").option("uri", uri).load()
    assert latest.count() == 450
    assert spark.read.format("lance_host").option("uri", uri).load().count() == 450


def test_user_schema_projects_columns(spark, table, tmp_path):
    """pyspark 4.1's Python data sources have no column-pruning hook: a user-specified schema
    (or the columns option) is the projection the library reads."""
    uri, pyds = table
    df = (spark.read.format("lance_host").schema("id bigint, cat string").option("uri", uri)
          .option("stats_dir", str(tmp_path)).load())
    assert df.columns == ["id", "cat"]
    t = pyds.to_table(columns=["id", "cat"])
    assert rows_of(df, ["id", "cat"]) == sorted(zip(t["id"].to_pylist(), t["cat"].to_pylist()))
    narrow = spark.read.format("lance_host").option("uri", uri).option("columns", "id").load()
    assert narrow.columns == ["id"] and narrow.count() == pyds.count_rows()


def test_sessions_without_python_filter_pushdown(spark, table):
    """A session with spark.sql.python.filterPushdown.enabled off reads (the reader pushes
    nothing); pushdown=false is accepted, pushdown=true without a probed registration and a
    misspelled value are errors naming the option."""
    uri, pyds = table
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    try:
        for options in ({}, {"pushdown": "false"}):
            reader = spark.read.format("lance_host").option("uri", uri)
            for k, v in options.items():
                reader = reader.option(k, v)
            got = sorted(r["id"] for r in reader.load().where("id < 50").select("id").collect())
            assert got == sorted(pyds.to_table(columns=["id"], filter="id < 50")["id"].to_pylist())
        with pytest.raises(Exception, match="LANCE_ERR_INVALID_ARGUMENT.*'pushdown' must be"):
            spark.read.format("lance_host").option("uri", uri).option("pushdown", "yes").load().count()
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")


def test_the_spark_example_runs(spark, table):
    """examples/spark_and_ray.py (the README's example): Spark's answer equals one process's."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("spark_and_ray", ROOT_EXAMPLES / "spark_and_ray.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    uri, pyds = table
    q = pyds.take([5], columns=["vec"])["vec"][0].as_py()
    assert ex.spark_example(spark, uri, "vec", q, "cat = 'c1'") == ex.single_process(uri, "vec", q, "cat = 'c1'")


def test_misspelled_columns_and_missing_options_are_errors(spark, table):
    """No silent drops: an unknown column in the columns option is an error naming it and the
    table's columns; a search without its column option says which option is missing; an error
    raised in a Spark task reaches the driver with the library's code name and message."""
    uri, _ = table
    with pytest.raises(Exception, match="unknown column 'prise'; the table's columns: id, cat, price"):
        spark.read.format("lance_host").option("uri", uri).option("columns", "id,prise").load().collect()
    with pytest.raises(Exception, match="option 'column' \\(the vector column to search\\) is required"):
        (spark.read.format("lance_host_search").option("uri", uri).option("vector", json.dumps([0.0] * DIM))
         .load().collect())
    with pytest.raises(Exception, match="unknown column 'vek'"):
        (spark.read.format("lance_host_search").option("uri", uri).option("column", "vek")
         .option("vector", json.dumps([0.0] * DIM)).load().collect())
    for bad in ["[0.0, ", "{\"a\": 1}", "[]", "[\"x\"]"]:
        with pytest.raises(Exception, match="option 'vector'"):
            (spark.read.format("lance_host_search").option("uri", uri).option("column", "vec")
             .option("vector", bad).load().collect())
    with pytest.raises(Exception, match="set option 'uri'"):
        spark.read.format("lance_host_search").option("column", "vec").load().collect()
    with pytest.raises(Exception, match="option 'version' must be an integer, not 'latest'"):
        spark.read.format("lance_host").option("uri", uri).option("version", "latest").load().collect()
    with pytest.raises(Exception, match="option 'k' must be an integer"):
        (spark.read.format("lance_host_search").option("uri", uri).option("column", "vec")
         .option("vector", json.dumps([0.0] * DIM)).option("k", "ten").load().collect())
    # The filter is applied in the tasks: a bad one fails there and the driver sees why.
    with pytest.raises(Exception, match="LANCE_ERR_INVALID_ARGUMENT") as e:
        spark.read.format("lance_host").option("uri", uri).option("filter", "nope >").load().collect()
    assert "nope" in str(e.value)


def test_spark_writes_stage_on_tasks_and_commit_once(spark, tmp_path):
    """df.write.format("lance_host"): every task stages, the driver commits one version; pylance
    reads exactly the rows; append then overwrite; a failing task leaves no version and no
    staged file behind."""
    from pyspark.sql import functions as F

    uri = str(tmp_path / "written.lance")
    df = spark.range(0, 3000, numPartitions=3).select(
        F.col("id"), (F.col("id") % 7).cast("int").alias("bucket"), F.concat(F.lit("r"), F.col("id")).alias("name"))
    df.write.format("lance_host").option("uri", uri).option("commit_message", "from spark").mode("append").save()
    py = lance.dataset(uri)
    assert py.version == 1 and py.count_rows() == 3000, "three tasks, one version"
    assert sorted(py.to_table(columns=["id"])["id"].to_pylist()) == list(range(3000))
    assert py.read_transaction(1).transaction_properties["__lance_commit_message"] == "from spark"
    more = spark.range(3000, 3500, numPartitions=2).select(
        F.col("id"), (F.col("id") % 7).cast("int").alias("bucket"), F.concat(F.lit("r"), F.col("id")).alias("name"))
    more.write.format("lance_host").option("uri", uri).mode("append").save()
    assert lance.dataset(uri).version == 2 and lance.dataset(uri).count_rows() == 3500
    # read back through the data source: the same rows
    back = spark.read.format("lance_host").option("uri", uri).load()
    assert back.count() == 3500 and back.where("bucket = 3").count() == lance.dataset(uri).count_rows("bucket = 3")
    # a failing task: no version appears and (the task failed before staging) no file
    files = len(list((tmp_path / "written.lance" / "data").iterdir()))

    @F.udf("bigint")
    def explode_on(i):
        if i == 3400:
            raise ValueError("task failure on purpose")
        return i

    failing = more.coalesce(1).select(explode_on("id").alias("id"), "bucket", "name")
    with pytest.raises(Exception, match="task failure on purpose"):
        failing.write.format("lance_host").option("uri", uri).mode("append").save()
    assert lance.dataset(uri).version == 2
    assert len(list((tmp_path / "written.lance" / "data").iterdir())) == files
    # the driver's abort deletes what the finished tasks staged (called as Spark calls it)
    from lance_host.spark import _Writer
    writer = _Writer({"uri": uri}, None, False)
    shares = [writer.write(iter(more.limit(50).toArrow().to_batches())), None]
    assert len(list((tmp_path / "written.lance" / "data").iterdir())) == files + 1
    writer.abort(shares)
    assert len(list((tmp_path / "written.lance" / "data").iterdir())) == files
    assert lance.dataset(uri).version == 2
    # overwrite
    df.where("id < 10").write.format("lance_host").option("uri", uri).mode("overwrite").save()
    assert lance.dataset(uri).version == 3 and lance.dataset(uri).count_rows() == 10


def test_spark_builds_an_index_on_executors_and_commits_once(spark, tmp_path):
    """lance_host.spark.build_index: one Spark task per build split, one commit; pylance's
    full-text search over the result equals its own index."""
    from lance_host.spark import build_index

    uri, theirs = str(tmp_path / "spark_indexed.lance"), str(tmp_path / "theirs.lance")
    words = ["alpha", "beta", "gamma", "delta", "omega"]
    t = batch(0, 2000).append_column("text", pa.array([f"{words[i % 5]} {words[i * 3 % 5]}" for i in range(2000)]))
    lance.write_dataset(t, uri, max_rows_per_file=500)
    lance.write_dataset(t, theirs)
    lance.dataset(theirs).create_scalar_index("text", "INVERTED")
    ds, model, pids = build_index(spark, uri, "text", "INVERTED", num_splits=2, return_pids=True)
    assert model == b"" and len(pids) == 2 and os.getpid() not in pids
    assert ds.version == lance.dataset(uri).version == 2
    for q in ["alpha", "gamma omega"]:
        a = lance.dataset(uri).to_table(full_text_query=q, columns=["id"]).sort_by("id")
        b = lance.dataset(theirs).to_table(full_text_query=q, columns=["id"]).sort_by("id")
        assert a["id"].to_pylist() == b["id"].to_pylist() and a.num_rows > 0, q
        assert np.allclose(a["_score"].to_numpy(), b["_score"].to_numpy(), atol=1e-5), q
    vec, _ = build_index(spark, uri, "vec", "IVF_FLAT", num_partitions=4, num_splits=4, merge=True)
    assert [s.kind for s in vec.plan_vector_search("vec").splits] == [lh.SPLIT_INDEX_SEGMENT]


def test_vectors_round_trip_through_spark(spark, tmp_path):
    """Spark -> Lance -> Spark keeps fixed_size_list: a read leaves the dimension on the field's
    metadata; appending the DataFrame to its pylance-written table keeps every type (vectors,
    uint32; 0.10.5 failed: "should have type fixed_size_list:float:8 but type was list"); a new
    table made from it has vectors that take an IVF_PQ index; a plain array column becomes a
    vector column by the vector_columns option, a row of another length is an error naming it;
    an overwrite keeps the table's vector type. Checked with pylance."""
    from pyspark.sql import types as ST

    from lance_host._vectors import DIM_KEY

    src = str(tmp_path / "src.lance")
    lance.write_dataset(batch(0, 600), src, max_rows_per_file=200)
    df = spark.read.format("lance_host").option("uri", src).load()
    assert df.schema["vec"].metadata == {DIM_KEY: DIM}
    df.where("id < 100").write.format("lance_host").option("uri", src).mode("append").save()
    py = lance.dataset(src)
    assert py.schema == lance.dataset(src, version=1).schema
    assert py.count_rows() == 700
    twice = sorted((r["id"], r["u32"], tuple(r["vec"]))
                   for r in py.to_table(columns=["id", "u32", "vec"], filter="id < 100").to_pylist())
    assert len(twice) == 200 and twice[::2] == twice[1::2]

    made = str(tmp_path / "made.lance")
    df.write.format("lance_host").option("uri", made).mode("append").save()
    pm = lance.dataset(made)
    assert pm.schema.field("vec").type == pa.list_(pa.float32(), DIM)
    pm.create_index("vec", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=2)
    q = batch(0, 600)["vec"][17].as_py()
    hits = lh.open(made).vector_search("vec", q, k=1, nprobes=2, refine_factor=10, columns=["id"])
    assert hits["id"].to_pylist() == [17]

    rows = [(i, [float(i + j) for j in range(DIM)]) for i in range(50)]
    plain = spark.createDataFrame(rows, ST.StructType([ST.StructField("id", ST.LongType()),
                                                        ST.StructField("vec", ST.ArrayType(ST.FloatType()))]))
    declared = str(tmp_path / "declared.lance")
    plain.write.format("lance_host").option("uri", declared).option("vector_columns", f"vec={DIM}").mode("append").save()
    assert lance.dataset(declared).schema.field("vec").type == pa.list_(pa.float32(), DIM)
    bad = spark.createDataFrame(rows + [(50, [1.0] * (DIM - 1))], plain.schema).coalesce(1)
    with pytest.raises(Exception, match=f"column 'vec': row 50 has {DIM - 1} values, the vectors hold {DIM}"):
        bad.write.format("lance_host").option("uri", declared).mode("append").save()
    assert lance.dataset(declared).count_rows() == 50
    with pytest.raises(Exception, match="option 'vector_columns' must look like"):
        plain.write.format("lance_host").option("uri", str(tmp_path / "x.lance")).option("vector_columns", "vec").mode("append").save()
    plain.write.format("lance_host").option("uri", declared).mode("overwrite").save()
    assert lance.dataset(declared).schema.field("vec").type == pa.list_(pa.float32(), DIM)
    assert lance.dataset(declared).count_rows() == 50


def test_one_fragment_is_read_by_several_partitions(spark, tmp_path):
    """target_rows cuts a one-fragment table into row slices: Spark gets one partition per
    slice (0.10.5: one), each read once, and counts and sums equal pylance's."""
    from pyspark.sql import functions as F

    uri = str(tmp_path / "one.lance")
    lance.write_dataset(batch(0, 4000), uri)
    lance.dataset(uri).delete("id % 9 = 4")
    py = lance.dataset(uri)
    assert len(py.get_fragments()) == 1
    d = tmp_path / "stats"
    d.mkdir()
    df = (spark.read.format("lance_host").option("uri", uri).option("target_rows", "1000")
          .option("stats_dir", str(d)).load())
    assert df.rdd.getNumPartitions() == len(lh.open(uri).plan_scan(1000)) == 4
    agg = df.agg(F.count("*").alias("n"), F.sum("id").alias("s")).collect()[0]
    assert (agg["n"], agg["s"]) == (py.count_rows(), sum(py.to_table(columns=["id"])["id"].to_pylist()))
    recs = tasks(str(d))
    assert sorted(r["split"] for r in recs) == [0, 1, 2, 3] and sum(r["rows"] for r in recs) == py.count_rows()


def test_unknown_options_are_errors_and_paths_work(spark, table, tmp_path):
    """A misspelled option is an error naming the closest valid one (0.10.5 ignored it and
    answered unfiltered, at the latest version or with default search settings); load(path)
    and save(path) name the table."""
    uri, pyds = table
    for fmt, key, want in [("lance_host", "fitler", "filter"), ("lance_host", "verison", "version"),
                           ("lance_host_search", "nprobe", "nprobes")]:
        reader = spark.read.format(fmt).option("uri", uri).option(key, "1")
        if fmt == "lance_host_search":
            reader = reader.option("column", "vec").option("vector", json.dumps([0.0] * DIM))
        with pytest.raises(Exception, match=f"unknown option '{key}'.*did you mean '{want}'"):
            reader.load().collect()
    out = str(tmp_path / "by_path.lance")
    df = spark.read.format("lance_host").load(uri)
    assert df.count() == pyds.count_rows()
    df.select("id", "cat").write.format("lance_host").mode("append").save(out)
    assert lance.dataset(out).count_rows() == pyds.count_rows()
    with pytest.raises(Exception, match="unknown option 'max_rows_per_fle'.*did you mean 'max_rows_per_file'"):
        df.select("id").write.format("lance_host").option("max_rows_per_fle", "10").mode("append").save(out)
    with pytest.raises(Exception, match="option 'uri' \\(the table to write\\) is required"):
        df.select("id").write.format("lance_host").mode("append").save()


def test_a_distributed_aggregate_on_executors_equals_spark_and_pyarrow(spark, table):
    """lance_host.spark.aggregate: one task per split computes partial states on an executor,
    the driver merges; equal to Spark's own groupBy over the lance_host DataFrame and to pyarrow
    over pylance's rows (a table with deletions and an appended, unindexed fragment)."""
    from pyspark.sql import functions as F

    from lance_host.spark import aggregate

    uri, py = table
    aggs = [([], "count_all"), ("price", "sum"), ("u32", "max"), ("id", "min"), ("price", "mean")]
    got, pids = aggregate(spark, uri, aggs, group_by="cat", filter="flag = false", target_rows=300, return_pids=True)
    assert len(pids) == len(lh.open(uri).plan_scan(300)) >= 8
    ours = {r["cat"]: r for r in got.to_pylist()}
    df = spark.read.format("lance_host").option("uri", uri).load()
    by_spark = {r["cat"]: r for r in df.where("flag = false").groupBy("cat").agg(
        F.count("*").alias("n"), F.sum("price").alias("s"), F.max("u32").alias("mx"), F.min("id").alias("mn"),
        F.avg("price").alias("a")).collect()}
    assert ours.keys() == by_spark.keys() and len(ours) == 4
    for k, r in ours.items():
        s = by_spark[k]
        assert (r["count(*)"], r["max(u32)"], r["min(id)"]) == (s["n"], s["mx"], s["mn"])
        assert r["sum(price)"] == pytest.approx(s["s"], rel=1e-12) and r["avg(price)"] == pytest.approx(s["a"], rel=1e-12)
    expected = py.to_table(filter="flag = false").group_by("cat").aggregate(aggs)
    for r in expected.rename_columns(got.column_names).to_pylist():
        o = ours[r["cat"]]
        assert o["count(*)"] == r["count(*)"] and o["max(u32)"] == r["max(u32)"] and o["min(id)"] == r["min(id)"]
        assert o["sum(price)"] == pytest.approx(r["sum(price)"], rel=1e-12)


def test_branch_and_change_data_options_equal_pylance(spark, tmp_path):
    uri = str(tmp_path / "versions.lance")
    lance.write_dataset(batch(0, 300), uri, max_rows_per_file=100, enable_stable_row_ids=True)
    lance.write_dataset(batch(300, 340), uri, mode="append")
    lance.dataset(uri).update({"cat": "'changed'"}, where="id < 12")
    lance.dataset(uri).delete("id >= 200 AND id < 207")
    end = lance.dataset(uri).version
    d = lance.dataset(uri).delta(begin_version=1, end_version=end)
    want = sorted([(i, "insert") for i in d.get_inserted_rows().read_all()["id"].to_pylist()]
                  + [(i, "update") for i in d.get_updated_rows().read_all()["id"].to_pylist()]
                  + [(i, "delete") for i in range(200, 207)])
    df = (spark.read.format("lance_host").option("uri", uri).option("changes_since", "1")
          .option("columns", "id,cat").load())
    assert df.columns == ["id", "cat", "_rowid", "_row_created_at_version", "_row_last_updated_at_version",
                          "_change_type"]
    assert sorted((r["id"], r["_change_type"]) for r in df.collect()) == want
    assert df.filter("_change_type = 'update'").count() == 12
    with pytest.raises(Exception, match="changes_since"):
        (spark.read.format("lance_host").option("uri", uri).option("changes_since", "1")
         .option("filter", "id > 3").load().collect())
    # a branch pylance wrote on, read by name; main is not it
    b = lance.dataset(uri).create_branch("dev")
    b.insert(batch(5000, 5010))
    dev = spark.read.format("lance_host").option("uri", uri).option("branch", "dev").load()
    assert dev.count() == lance.dataset(uri).count_rows() + 10
    assert spark.read.format("lance_host").option("uri", uri).load().count() == lance.dataset(uri).count_rows()
    got = (spark.read.format("lance_host").option("uri", uri).option("branch", "dev")
           .option("changes_since", str(end)).load())
    assert sorted(r["id"] for r in got.collect()) == list(range(5000, 5010))
    lance.dataset(uri).tags.create("first", 1)
    assert spark.read.format("lance_host").option("uri", uri).option("tag", "first").load().count() == 300
    with pytest.raises(Exception, match="tag"):
        spark.read.format("lance_host").option("uri", uri).option("tag", "first").option("version", "2").load()


def nan_table():
    """Floats at the edges: NaN with and without its sign bit (x86's 0/0 sets it), +-inf,
    zero of either sign, NULL and plain numbers, in a double and a float column."""
    import struct
    neg_nan = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
    values = []
    for i in range(60):
        values.append([neg_nan, float("nan"), float("-inf"), float("inf"), None, -0.0, 0.0][i % 7]
                      if i % 3 == 0 else (i - 30) * 0.5)
    d = pa.array(values, pa.float64())
    f = pa.array(np.array([np.nan if v is None else v for v in values], np.float64).astype(np.float32),
                 pa.float32(), mask=np.array([v is None for v in values]))
    return pa.table({"id": pa.array(range(60), pa.int64()), "d": d, "f": f})


def test_float_predicates_with_nans_of_either_sign_equal_spark_on_parquet(spark, tmp_path):
    """Issue 58 item 1: pushed float comparisons keep Spark's NaN semantics (every NaN equal
    and above every number) whatever the NaN's sign bit; Spark over Parquet is the judge."""
    import pyarrow.parquet as pq
    t = nan_table()
    uri, parquet = str(tmp_path / "nans.lance"), str(tmp_path / "nans.parquet")
    lance.write_dataset(t, uri, max_rows_per_file=20)
    pq.write_table(t, parquet)
    lh_df = spark.read.format("lance_host").option("uri", uri).load()
    pq_df = spark.read.parquet(parquet)
    spark.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        for cond in ["d > 1.0", "d < 0.0", "d >= 5.0", "d <= -1.0", "d > -1e300", "d < 1e300", "NOT (d < 0.0)",
                     "d = 2.5", "d <> 2.5", "f > 1.0", "f < 0.0", "f >= -0.5", "f <= 0.0"]:
            got = sorted(r["id"] for r in lh_df.filter(cond).select("id").collect())
            want = sorted(r["id"] for r in pq_df.filter(cond).select("id").collect())
            assert got == want, cond
            assert lh_df.filter(cond).count() == len(want), cond
        got = [r["id"] for r in lh_df.orderBy(lh_df.d.desc(), lh_df.id).limit(6).collect()]
        want = [r["id"] for r in pq_df.orderBy(pq_df.d.desc(), pq_df.id).limit(6).collect()]
        assert got == want
    finally:
        spark.conf.unset("spark.sql.parquet.filterPushdown")


def test_float_comparisons_translate_with_nans_of_either_sign():
    from pyspark.sql import datasource as d

    from lance_host.spark import to_lance_sql

    import tempfile
    t = nan_table()
    uri = tempfile.mkdtemp() + "/n.lance"
    lance.write_dataset(t, uri)
    pyds = lance.dataset(uri)
    rows = t.to_pylist()

    def spark_cmp(v, op, x):  # Spark's semantics: NULL unknown, every NaN above every number
        if v is None:
            return False
        key = (1, 0.0) if v != v else (0, v)
        return {">": key > (0, x), ">=": key >= (0, x), "<": key < (0, x), "<=": key <= (0, x)}[op]

    for cls, op in [(d.GreaterThan, ">"), (d.GreaterThanOrEqual, ">="), (d.LessThan, "<"), (d.LessThanOrEqual, "<=")]:
        for x in [1.0, 0.0, -1.0, -1e300]:
            # Spark pushes literals of the column's type: a float column gets float32 values
            for col in (["d", "f"] if abs(x) < 3e38 else ["d"]):
                sql = to_lance_sql(cls((col,), x))
                got = sorted(pyds.to_table(columns=["id"], filter=sql)["id"].to_pylist())
                assert got == [r["id"] for r in rows if spark_cmp(r[col], op, x)], (col, op, x, sql)
