"""The JVM Spark connector (java/, org.lancehost.spark) against what a Spark user has without it,
on one 3M-row table, Spark local[2]:

  jvm        spark.read.format("lance_host") from the connector bundle jar: columnar batches over the
             library's Arrow buffers, columns/filters/limit/aggregates pushed down
  python     lance_host.spark's Python data source (pyspark's data source API: Python workers,
             Arrow batches serialized to the JVM; no column, limit or aggregate pushdown)
  pylance    a Python data source over pylance written for this bench (one partition per
             fragment; filters translated as lance_host.spark translates them; writes through
             pylance's write_fragments and one Append commit)

Work (one process per measurement: start Spark, run the work once untimed, then time it):
  count        SELECT count(*)
  filtered     SELECT id, price WHERE price < 10 (about 3% of the rows) collected to the driver
  grouped_sum  SELECT cat, count(*), sum(price), sum(qty) GROUP BY cat
  search       exact top 10 nearest neighbours of a query vector (use_index=false on every side)
  append       append 1,000,000 rows (id, cat, price, qty, vec) to a copy of a small table

Every side's answer is checked against the JVM side's (counts, sums to 1e-9 relative, ids).

    LANCE_HOST_SPARK_BUNDLE=<java/spark/spark-4.x_2.13/target/*-bundle.jar of a release build> \\
    LANCE_HOST_LIB=<release liblance_host.so> python3 bench/spark_jvm.py [--runs 3] [--rows 3000000]

Writes bench/SPARK_JVM.md and bench/SPARK_JVM.json.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report import publish

ROOT = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("LANCE_HOST_BENCH_DIR", Path.home() / ".cache" / "lance-host" / "bench"))
DIM = 16
WORKS = ["count", "filtered", "grouped_sum", "search", "append"]
SIDES = ["jvm", "python", "pylance"]
APPEND_ROWS = 1_000_000


def make_table(uri, rows):
    import lance
    import numpy as np
    import pyarrow as pa

    if Path(uri).exists():
        return
    tmp = uri + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)

    def batches():
        rng = np.random.default_rng(7)
        step = 250_000
        for start in range(0, rows, step):
            n = min(step, rows - start)
            ids = np.arange(start, start + n, dtype=np.int64)
            yield pa.record_batch({
                "id": ids,
                "cat": pa.array([f"c{i % 10}" for i in ids]),
                "price": rng.uniform(0, 300, n),
                "qty": (ids % 97).astype(np.int32),
                "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * DIM).astype(np.float32)), DIM),
            })

    schema = next(batches()).schema
    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), tmp, max_rows_per_file=100_000)
    os.rename(tmp, uri)


def query_vector():
    import numpy as np

    return [float(x) for x in np.random.default_rng(11).standard_normal(DIM).astype(np.float32)]


# ---- the pylance-backed source ---------------------------------------------------------------

def pylance_source():
    import pyarrow as pa
    from pyspark.sql.datasource import (DataSource, DataSourceArrowWriter, DataSourceReader, InputPartition,
                                        WriterCommitMessage)

    from lance_host.spark import _and, push_filters

    class Reader(DataSourceReader):
        def __init__(self, options, schema):
            self.options, self.cols, self.pushed = options, [f.name for f in schema.fields], []

        def pushFilters(self, filters):
            return push_filters(filters, self.pushed)

        def partitions(self):
            import lance

            if "vector" in self.options:  # pylance searches a dataset, not a fragment: one task
                return [InputPartition(-1)]
            return [InputPartition(f.fragment_id) for f in self.dataset().get_fragments()]

        def dataset(self):  # option storage_json: the storage options (s3://), as JSON
            import lance

            return lance.dataset(self.options["uri"], storage_options=json.loads(self.options.get("storage_json", "{}")) or None)

        def read(self, partition):
            ds = self.dataset()
            if "vector" in self.options:  # pylance's exact top k of the table, with _distance
                q = json.loads(self.options["vector"])
                t = ds.to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": int(self.options["k"]),
                                                         "use_index": False})
                t = t.select(["id", "_distance"])
                yield from t.to_batches()
                return
            frag = ds.get_fragment(partition.value)
            for b in frag.to_batches(columns=self.cols, filter=_and(self.pushed)):
                # Spark's Python sources take lists, not fixed-size lists
                cols = [c.cast(pa.list_(c.type.value_type)) if pa.types.is_fixed_size_list(c.type) else c
                        for c in b.columns]
                yield pa.RecordBatch.from_arrays(cols, names=b.schema.names)

    class Commit(WriterCommitMessage):
        def __init__(self, fragments):
            self.fragments = fragments

    class Writer(DataSourceArrowWriter):
        def __init__(self, options, schema):
            self.uri = options["uri"]
            self.schema = schema

        def write(self, iterator):
            import lance
            from lance.fragment import write_fragments

            ds = lance.dataset(self.uri)

            def convert(rb):  # Spark's arrays into the table's fixed-size lists, its types
                cols = []
                for f in ds.schema:
                    c = rb.column(rb.schema.get_field_index(f.name))
                    if pa.types.is_fixed_size_list(f.type):
                        c = pa.FixedSizeListArray.from_arrays(c.flatten(), f.type.list_size)
                    cols.append(c.cast(f.type) if c.type != f.type else c)
                return pa.RecordBatch.from_arrays(cols, schema=ds.schema)

            batches = (convert(rb) for rb in iterator)
            reader = pa.RecordBatchReader.from_batches(ds.schema, batches)
            return Commit(write_fragments(reader, self.uri, schema=ds.schema))

        def commit(self, messages):
            import lance

            frags = [f for m in messages for f in m.fragments]
            ds = lance.dataset(self.uri)
            lance.LanceDataset.commit(self.uri, lance.LanceOperation.Append(frags), read_version=ds.version)

    class Source(DataSource):
        @classmethod
        def name(cls):
            return "pylance_bench"

        def schema(self):
            if "vector" in self.options:
                return "id bigint, _distance float"
            return "id bigint, cat string, price double, qty int, vec array<float>"

        def reader(self, schema):
            return Reader(dict(self.options), schema)

        def writer(self, schema, overwrite):
            return Writer(dict(self.options), schema)

    return Source


# ---- one measurement (run in its own process) ------------------------------------------------

def spark_session(side):
    """A local[2] session for `side`, with its source registered (the JVM side: the connector's bundle jar,
    natives inside)."""
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.driver.memory", "4g").config("spark.sql.shuffle.partitions", "2")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1"))
    if side == "pylance":  # its reader pushes filters (a fresh DataFrame per execution)
        b = b.config("spark.sql.python.filterPushdown.enabled", "true")
    if side == "jvm":
        # the bundle carries the library it was built with (LANCE_HOST_PREFIX=<release prefix> mvn package)
        b = b.config("spark.jars", str(Path(os.environ["LANCE_HOST_SPARK_BUNDLE"]).resolve()))
    spark = b.getOrCreate()
    if side == "python":
        from lance_host.spark import register

        register(spark)
    elif side == "pylance":
        spark.dataSource.register(pylance_source())
    return spark


def run_side(side, work, table, append_to):
    from pyspark.sql import functions as F

    spark = spark_session(side)
    q = query_vector()
    fmt = {"jvm": "lance_host", "python": "lance_host", "pylance": "pylance_bench"}[side]

    def table_df():
        return spark.read.format(fmt).option("uri", table).load()

    def work_once():
        if work == "count":
            return [table_df().count()]
        if work == "filtered":
            rows = table_df().where("price < 10").select("id", "price").collect()
            return [len(rows), sum(r[0] for r in rows), sum(r[1] for r in rows)]
        if work == "grouped_sum":
            rows = (table_df().groupBy("cat").agg(F.count("*"), F.sum("price"), F.sum("qty")).orderBy("cat").collect())
            return [list(r) for r in rows]
        if work == "search":
            if side == "pylance":
                hits = (spark.read.format(fmt).option("uri", table).option("vector", json.dumps(q))
                        .option("k", "10").load())
            else:
                hits = (spark.read.format("lance_host_search").option("uri", table).option("column", "vec")
                        .option("vector", json.dumps(q)).option("k", "10").option("use_index", "false")
                        .option("columns", "id").load())
            return [r[0] for r in hits.orderBy("_distance").limit(10).select("id").collect()]
        if work == "append":
            target = append_to()
            df = spark.range(0, APPEND_ROWS, 1, 2).selectExpr(
                "id + 10000000 AS id", "concat('c', CAST(id % 10 AS STRING)) AS cat", "CAST(id % 300 AS DOUBLE) AS price",
                "CAST(id % 97 AS INT) AS qty",
                f"transform(sequence(1, {DIM}), x -> CAST(x + id % 7 AS FLOAT)) AS vec")
            w = df.write.format(fmt).option("uri", target).mode("append")
            w.save(target) if side == "jvm" else w.save()
            import lance

            ds = lance.dataset(target)
            return [ds.count_rows(), ds.version]
        raise ValueError(work)

    work_once()
    t = time.perf_counter()
    answer = work_once()
    ms = (time.perf_counter() - t) * 1e3
    spark.stop()
    return ms, answer


def child(args):
    table = args.table
    seed = args.append_seed

    def append_to():
        # A fresh copy of the small seed table per execution: every append lands on 1 version.
        d = tempfile.mkdtemp(prefix="lh-append-")
        target = os.path.join(d, "t.lance")
        shutil.copytree(seed, target)
        return target

    ms, answer = run_side(args.side, args.work, table, append_to)
    print("RESULT " + json.dumps({"ms": ms, "answer": answer}), flush=True)


def same(a, b):
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    return a == b


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--rows", type=int, default=3_000_000)
    p.add_argument("--works", default=",".join(WORKS))
    p.add_argument("--child", action="store_true")
    p.add_argument("--side")
    p.add_argument("--work")
    p.add_argument("--table")
    p.add_argument("--append-seed")
    args = p.parse_args()
    if args.child:
        return child(args)

    table = str(CACHE / f"spark{args.rows}" / "t.lance")
    Path(table).parent.mkdir(parents=True, exist_ok=True)
    make_table(table, args.rows)
    seed = str(CACHE / "spark_append_seed" / "t.lance")
    if not Path(seed).exists():
        import lance

        lance.write_dataset(lance.dataset(table).to_table(limit=1000), seed)

    results = {}
    env = dict(os.environ)
    works = args.works.split(",")
    for run in range(args.runs):
        for work in works:
            order = SIDES[run % 3:] + SIDES[:run % 3]  # sides rotate
            for side in order:
                out = subprocess.run([sys.executable, __file__, "--child", "--side", side, "--work", work,
                                      "--table", table, "--append-seed", seed],
                                     capture_output=True, text=True, env=env, timeout=1800)
                line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
                if out.returncode != 0 or not line:
                    raise SystemExit(f"{side} {work} failed:\n{out.stderr[-4000:]}")
                r = json.loads(line[0][7:])
                results.setdefault(work, {}).setdefault(side, []).append(r)
                print(f"run {run} {work:12s} {side:8s} {r['ms']:9.0f} ms", flush=True)

    lines = ["# The JVM Spark connector against the Python data source and a pylance-backed source", "",
             f"Generated by `bench/spark_jvm.py` on {time.strftime('%Y-%m-%d')}, 2 cores, Spark "
             f"{__import__('pyspark').__version__} `local[2]` (driver memory 4 GiB), library: "
             f"{__import__('lance_host').build_profile()} (the Python sides'). Table: {args.rows:,} rows in "
             f"{args.rows // 100_000} fragments (id, cat, price, qty, vec: {DIM} float32). {args.runs} processes "
             "per side and work, sides rotating; each process runs the work once untimed (JVM and "
             "Python worker start, caches), then times it. Cells: median (min-max) ms; ratios are "
             "medians of the per-run ratios side / jvm.", "",
             "| work | jvm ms | python ms | pylance ms | python / jvm | pylance / jvm | same answer |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    data = {}
    for work in works:
        r = results[work]

        def cell(side):
            ms = [x["ms"] for x in r[side]]
            return f"{statistics.median(ms):.0f} ({min(ms):.0f}-{max(ms):.0f})"

        def ratio(side):
            rs = [o["ms"] / j["ms"] for o, j in zip(r[side], r["jvm"])]
            return f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})"

        ok = all(same(x["answer"], r["jvm"][0]["answer"]) for s in SIDES for x in r[s])
        lines.append(f"| {work} | {cell('jvm')} | {cell('python')} | {cell('pylance')} | {ratio('python')} | "
                     f"{ratio('pylance')} | {'yes' if ok else 'NO'} |")
        data[work] = {s: [x["ms"] for x in r[s]] for s in SIDES} | {"same_answer": ok}
    lines += ["",
              "What each side does differently: `count` — the JVM side answers COUNT(*) from the manifest "
              "(aggregate pushdown); the Python sides scan a column of every row and Spark counts. "
              "`filtered` — the JVM side reads 2 columns and Lance filters (pushed predicate); the Python data "
              "source reads every column Spark can hold and Spark filters (it pushes no filter by default, see "
              "docs/python.md); the pylance source pushes the filter and reads the schema's columns. "
              "`grouped_sum` — the JVM side computes the aggregate in the library (complete pushdown); the "
              "others ship every row to Spark. `search` — the lance-host sides return each split's exact top 10 "
              "and Spark takes the global top 10; the pylance source runs pylance's exact search over the whole "
              "table in one task (pylance does not search a single fragment). `append` — the JVM side streams Arrow batches into staged "
              "writes and commits once; the Python sides convert Spark rows to Arrow in Python workers."]
    publish(ROOT / "SPARK_JVM.md", lines)
    (ROOT / "SPARK_JVM.json").write_text(json.dumps({"rows": args.rows, "runs": args.runs, "works": data}, indent=1) + "\n")


if __name__ == "__main__":
    main()
