"""Cluster engines over the bench's 3M-row table: Apache Spark (local[2]) and Ray Data (a local
cluster of 2 CPUs), lance-host's sources against what a user of each has without them.

  spark lance_host   spark.read.format("lance_host") (lance_host.spark): one partition per scan
                     split, executors open the shipped snapshot token, filters pushed to Lance
  spark pylance      a Python data source over pylance's fragment API written for this bench
                     (one partition per fragment, the same filter translation): the nearest
                     equivalent a Spark user has without a JVM connector
  ray lance_host     lance_host.ray.read_lance_host (one read task per scan split)
  ray read_lance     ray.data.read_lance (Ray's own Lance source, on pylance)

Work: `scan` = count(*) and sum(price) over id, cat, price (every row); `filter_agg` = rows with
price < 10 grouped by cat: count and sum(price) (the filter is pushed on every side). Each
process starts its engine, runs the query once untimed (JVM/cluster warm-up, caches), then times
it; sides alternate; medians of --runs processes. Also, on s3:// (moto, a 30-fragment copy of the
table's scalar columns): the planning time and requests of lance-host, and the manifest reads the
read tasks make (lance-host: tasks open the token; read_lance: tasks open the dataset).

    python3 bench/engines.py [--runs 3]        # writes bench/ENGINES_SPARK_RAY.md
"""

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from report import publish

ROOT = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("LANCE_HOST_BENCH_DIR", Path.home() / ".cache" / "lance-host" / "bench"))
TABLE = os.environ.get("LANCE_HOST_BENCH_TABLE", str(CACHE / "rows3000000" / "bench.lance"))
COLS = ["id", "cat", "price"]


# ---- the sides, each run in its own process -------------------------------------------------

def pylance_source():
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from lance_host.spark import _and, push_filters

    class Reader(DataSourceReader):
        def __init__(self, options, schema):
            self.options, self.cols, self.pushed = options, [f.name for f in schema.fields], []

        def pushFilters(self, filters):
            return push_filters(filters, self.pushed)

        def partitions(self):
            import lance

            return [InputPartition(f.fragment_id) for f in lance.dataset(self.options["uri"]).get_fragments()]

        def read(self, partition):
            import lance

            frag = lance.dataset(self.options["uri"]).get_fragment(partition.value)
            yield from frag.to_batches(columns=self.cols, filter=_and(self.pushed))

    class Source(DataSource):
        @classmethod
        def name(cls):
            return "pylance_fragments"

        def schema(self):
            return "id bigint, cat string, price double"

        def reader(self, schema):
            return Reader(dict(self.options), schema)

    return Source


def spark_side(side, work):
    from pyspark.sql import SparkSession, functions as F

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.python.filterPushdown.enabled", "true")
             .config("spark.driver.memory", "4g").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1").getOrCreate())
    if side == "lance_host":
        from lance_host.spark import register

        register(spark)
        df = spark.read.format("lance_host").option("uri", TABLE).option("columns", ",".join(COLS)).load()
    else:
        spark.dataSource.register(pylance_source())
        df = spark.read.format("pylance_fragments").option("uri", TABLE).load()

    def query():
        if work == "scan":
            return df.agg(F.count("*"), F.sum("price")).collect()
        return df.where("price < 10").groupBy("cat").agg(F.count("*"), F.sum("price")).orderBy("cat").collect()

    query()
    t = time.perf_counter()
    rows = query()
    ms = (time.perf_counter() - t) * 1e3
    spark.stop()
    return ms, [list(r) for r in rows]


def ray_side(side, work):
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    flt = "price < 10" if work == "filter_agg" else None

    def query():
        if side == "lance_host":
            import lance_host.ray as lhr

            d = lhr.read_lance_host(TABLE, columns=COLS, filter=flt)
        else:
            d = ray.data.read_lance(TABLE, columns=COLS, filter=flt)
        if work == "scan":
            return [[d.count(), d.sum("price")]]
        g = d.groupby("cat").aggregate(ray.data.aggregate.Count(), ray.data.aggregate.Sum("price")).take_all()
        return sorted([r["cat"], r["count()"], r["sum(price)"]] for r in g)

    query()
    t = time.perf_counter()
    rows = query()
    ms = (time.perf_counter() - t) * 1e3
    ray.shutdown()
    return ms, rows


# ---- s3: planning and task-side manifest reads ------------------------------------------------

def s3_figures():
    import urllib.request

    import lance
    import pyarrow.dataset  # noqa: F401

    import lance_host as lh

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = CACHE / "engines_moto.log"
    srv = subprocess.Popen([sys.executable, str(ROOT.parent / "tests" / "integration" / "moto_server.py"), str(port)],
                           stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    ep = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                urllib.request.urlopen(urllib.request.Request(f"{ep}/eng", method="PUT")).read()
                break
            except Exception:
                time.sleep(0.2)
        opts = {"aws_access_key_id": "a", "aws_secret_access_key": "b", "aws_region": "us-east-1",
                "aws_endpoint": ep, "allow_http": "true", "aws_virtual_hosted_style_request": "false"}
        src = lance.dataset(TABLE)
        uri = "s3://eng/t.lance"
        t = src.to_table(columns=COLS, limit=600_000)
        lance.write_dataset(t, uri, max_rows_per_file=20_000, storage_options=opts)

        def requests_since(mark):
            lines = [re.sub(r"\x1b\[[0-9;]*m", "", x) for x in open(log).read().splitlines()[mark:]]
            lines = [x for x in lines if '"GET ' in x or '"HEAD ' in x or '"PUT ' in x or '"POST ' in x or '"LIST' in x]
            manifests = [x for x in lines if "_versions/" in x and '"GET ' in x]
            return len(lines), len(manifests)

        def mark():
            return len(open(log).read().splitlines())

        m = mark()
        t0 = time.perf_counter()
        ds = lh.open(uri, storage_options=opts)
        splits = ds.plan_scan()
        token = ds.export_snapshot()
        plan_ms = (time.perf_counter() - t0) * 1e3
        plan_req, plan_manifest = requests_since(m)
        import ray

        import lance_host.ray as lhr

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        m = mark()
        # sum(), not count(): count() may come from the read tasks' metadata without reading.
        n = lhr.read_lance_host(uri, columns=COLS, storage_options=opts).sum("id")
        host_req, host_manifest = requests_since(m)
        m = mark()
        n2 = ray.data.read_lance(uri, columns=COLS, storage_options=opts).sum("id")
        ray_req, ray_manifest = requests_since(m)
        ray.shutdown()
        from pyspark.sql import SparkSession, functions as F

        from lance_host.spark import register

        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
                 .getOrCreate())
        register(spark)
        reader = spark.read.format("lance_host").option("uri", uri).option("columns", ",".join(COLS))
        for k, v in opts.items():
            reader = reader.option(f"storage.{k}", v)
        m = mark()
        n3 = reader.load().agg(F.sum("id")).collect()[0][0]
        spark_req, spark_manifest = requests_since(m)
        spark.stop()
        # Tasks alone: the split scans from the token in fresh processes, without the planning open.
        m = mark()
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context

        with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
            counts = list(pool.map(_task, [(token, bytes(s), opts) for s in splits]))
        task_req, task_manifest = requests_since(m)
        return {"fragments": len(splits), "rows": n, "rows_read_lance": n2, "plan_ms": plan_ms,
                "plan_requests": plan_req, "plan_manifest_gets": plan_manifest, "token_bytes": len(token),
                "ray_lance_host_requests": host_req, "ray_lance_host_manifest_gets": host_manifest,
                "ray_read_lance_requests": ray_req, "ray_read_lance_manifest_gets": ray_manifest,
                "task_only_requests": task_req, "task_only_manifest_gets": task_manifest, "task_rows": sum(counts),
                "spark_requests": spark_req, "spark_manifest_gets": spark_manifest, "rows_spark": n3}
    finally:
        srv.terminate()
        srv.wait(timeout=30)


def _task(args):
    import lance_host as lh

    token, split, opts = args
    ds = lh.open_snapshot(token, storage_options=opts)
    return ds.scan_split(lh.Split.from_bytes(split), columns=["id"]).read_all().num_rows


def main():
    global TABLE
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--side", nargs=3, metavar=("ENGINE", "SIDE", "WORK"))
    ap.add_argument("--skip-s3", action="store_true")
    ap.add_argument("--s3-only", action="store_true", help="rerun only the s3:// section of the report")
    ap.add_argument("--table", default=TABLE)
    a = ap.parse_args()
    TABLE = a.table
    os.environ["LANCE_HOST_BENCH_TABLE"] = TABLE
    if a.side:
        engine, side, work = a.side
        ms, rows = (spark_side if engine == "spark" else ray_side)(side, work)
        print(json.dumps({"ms": ms, "rows": rows}))
        return
    if a.s3_only:
        report = (ROOT / "ENGINES_SPARK_RAY.md").read_text().split("\n## s3://")[0].rstrip("\n").split("\n")
        return write_report(report, s3_figures())
    combos = [("spark", "lance_host"), ("spark", "pylance"), ("ray", "lance_host"), ("ray", "read_lance")]
    results = {}
    for work in ("scan", "filter_agg"):
        for r in range(a.runs):
            order = combos[r % 4:] + combos[:r % 4]
            for engine, side in order:
                p = subprocess.run([sys.executable, __file__, "--side", engine, side, work], capture_output=True, text=True)
                if p.returncode != 0:
                    print(p.stderr[-3000:], file=sys.stderr)
                    raise SystemExit(f"{engine} {side} {work} failed")
                out = json.loads(p.stdout.strip().splitlines()[-1])
                results.setdefault((work, engine, side), []).append(out)
                print(f"{work} run={r} {engine} {side}: {out['ms']:.0f} ms", file=sys.stderr)
    s3 = None if a.skip_s3 else s3_figures()

    same = {(w, e): _close(results[(w, e, "lance_host")][0]["rows"], results[(w, e, o)][0]["rows"])
            for w in ("scan", "filter_agg") for e, o in (("spark", "pylance"), ("ray", "read_lance"))}
    ms = {k: [o["ms"] for o in v] for k, v in results.items()}
    write_report(table_lines(ms, same, a.runs), s3)


def table_lines(ms, same, runs):
    """The report's table: per side the median with min-max of its runs; per pair the median of
    the per-run ratios (runs are paired in order) with min-max, and whether they all lie on one
    side of 1.0 (anything else is noise)."""
    def cell(v):
        return f"{statistics.median(v):.0f} ({min(v):.0f}-{max(v):.0f})"

    lines = ["# Spark and Ray", "",
             f"Generated by `bench/engines.py` on {time.strftime('%Y-%m-%d')}, 2 cores. Table: the main bench's "
             "3,000,000 rows (30 fragments); columns id, cat, price. Spark 4.1.1 `local[2]` (driver memory 4 GiB), "
             f"Ray 2.52.1 with 2 CPUs. {runs} processes per side, sides alternating; a process runs the query once "
             "untimed, then times it. Cells: median (min-max) in ms; the ratio is the median of the per-run ratios "
             "other / lance-host (min-max); 'reading' says whether every run's ratio lies on one side of 1.0.",
             "",
             "`spark pylance` is a Python data source over pylance's fragment API written for this bench (one "
             "partition per fragment, the same filter translation as lance_host's): without a JVM connector, the "
             "nearest equivalent a Spark user has. `ray read_lance` is Ray's own `ray.data.read_lance`.", "",
             "| work | engine | lance-host ms | other side ms | other / lance-host | reading | same answer |",
             "| --- | --- | ---: | ---: | ---: | --- | --- |"]
    for work in ("scan", "filter_agg"):
        for engine, other in (("spark", "pylance"), ("ray", "read_lance")):
            mine, theirs = ms[(work, engine, "lance_host")], ms[(work, engine, other)]
            ratios = sorted(t / m for m, t in zip(mine, theirs))
            if ratios[0] > 1:
                reading = "lance-host faster"
            elif ratios[-1] < 1:
                reading = "lance-host slower"
            else:
                reading = "noise"
            lines.append(f"| {work} | {engine} (vs {other}) | {cell(mine)} | {cell(theirs)} | "
                         f"{statistics.median(ratios):.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f}) | {reading} | "
                         f"{'yes' if same[(work, engine)] else 'NO'} |")
    return lines



def write_report(lines, s3):
    if s3:
        lines += ["", "## s3:// (moto): planning and the read tasks' manifest reads", "",
                  f"A copy of the table's id, cat and price, first 600,000 rows in {s3['fragments']} fragments, on a "
                  "local moto server; requests counted from the server's log.", "",
                  f"- Planning (open + plan_scan + export_snapshot, lance-host): {s3['plan_ms']:.0f} ms, "
                  f"{s3['plan_requests']} requests ({s3['plan_manifest_gets']} manifest GETs); the token is "
                  f"{s3['token_bytes']:,} bytes.",
                  f"- Read tasks from the token alone ({s3['fragments']} split scans in 2 fresh worker processes): "
                  f"{s3['task_only_requests']} requests, {s3['task_only_manifest_gets']} manifest GETs.",
                  f"- Ray `read_lance_host` (planning + tasks): {s3['ray_lance_host_requests']} requests, "
                  f"{s3['ray_lance_host_manifest_gets']} manifest GETs; Ray `read_lance`: "
                  f"{s3['ray_read_lance_requests']} requests, {s3['ray_read_lance_manifest_gets']} manifest GETs "
                  f"(both read every row: sum(id) = {s3['rows']:,} / {s3['rows_read_lance']:,}).",
                  f"- Spark `lance_host` (planning + tasks): {s3['spark_requests']} requests, "
                  f"{s3['spark_manifest_gets']} manifest GETs, all on the planning side (schema() and partitions() "
                  f"each open the table once; the tasks open the token); sum(id) = {s3['rows_spark']:,}."]
    publish(ROOT / "ENGINES_SPARK_RAY.md", lines)


def _close(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            if isinstance(u, float) or isinstance(v, float):
                if abs(float(u) - float(v)) > 1e-6 * max(1.0, abs(float(u))):
                    return False
            elif u != v:
                return False
    return True


if __name__ == "__main__":
    main()
