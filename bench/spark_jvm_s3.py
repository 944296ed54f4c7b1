"""The JVM Spark connector on s3:// (a local moto server): requests and time per query against the
Python data source and the pylance-backed source of bench/spark_jvm.py, on one table uploaded to
the server. Spark local[2].

Each process starts Spark, runs the query once (cold: every open, manifest and data read), then
again (warm: the same session, a second query), and reports the requests the server logged for
each run. Sides rotate; medians of --runs processes. Answers are checked against the JVM side's.

    LANCE_HOST_RELEASE_LIB=<release liblance_host.so> LANCE_HOST_JAVA_BUILD=build/java \\
    LANCE_HOST_LIB=<release liblance_host.so> python3 bench/spark_jvm_s3.py [--runs 3] [--rows 600000]

Writes bench/SPARK_JVM_S3.md and bench/SPARK_JVM_S3.json.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import publish  # noqa: E402
from run import start_moto, upload  # noqa: E402
from spark_jvm import CACHE, make_table, same, spark_session  # noqa: E402
from write import requests_in  # noqa: E402

ROOT = Path(__file__).resolve().parent
WORKS = ["count", "filtered", "grouped_sum"]
SIDES = ["jvm", "python", "pylance"]
BUCKET = "bench"


def storage(ep):
    return {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "aws_region": "us-east-1",
            "aws_endpoint": ep, "allow_http": "true", "aws_virtual_hosted_style_request": "false"}


def child(side, work, uri, ep, log):
    from pyspark.sql import functions as F

    spark = spark_session(side)
    opts = storage(ep)

    def table_df():
        if side == "pylance":
            return spark.read.format("pylance_bench").option("uri", uri).option("storage_json", json.dumps(opts)).load()
        r = spark.read.format("lance_host").option("uri", uri)
        for k, v in opts.items():
            r = r.option(f"storage.{k}", v)
        return r.load()

    def once():
        if work == "count":
            return [table_df().count()]
        if work == "filtered":
            rows = table_df().where("price < 10").select("id", "price").collect()
            return [len(rows), sum(r[0] for r in rows), sum(r[1] for r in rows)]
        if work == "grouped_sum":
            rows = table_df().groupBy("cat").agg(F.count("*"), F.sum("price"), F.sum("qty")).orderBy("cat").collect()
            return [list(r) for r in rows]
        raise ValueError(work)

    def counted():
        time.sleep(0.5)  # the server logs a request after answering it
        return len(requests_in(log))

    m0 = counted()
    t = time.perf_counter()
    once()
    cold_ms = (time.perf_counter() - t) * 1e3
    m1 = counted()
    t = time.perf_counter()
    answer = once()
    warm_ms = (time.perf_counter() - t) * 1e3
    m2 = counted()
    spark.stop()
    print("RESULT " + json.dumps({"cold_ms": cold_ms, "warm_ms": warm_ms, "cold_requests": m1 - m0,
                                  "warm_requests": m2 - m1, "answer": answer}), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--rows", type=int, default=600_000)
    p.add_argument("--child", nargs=5)
    args = p.parse_args()
    if args.child:
        return child(*args.child)

    local = str(CACHE / f"spark{args.rows}" / "t.lance")
    Path(local).parent.mkdir(parents=True, exist_ok=True)
    make_table(local, args.rows)
    env = dict(os.environ)
    release = os.environ.get("LANCE_HOST_RELEASE_LIB")
    if release:  # the JNI library finds liblance_host.so.0 through LD_LIBRARY_PATH before its RUNPATH
        d = tempfile.mkdtemp(prefix="lh-release-")
        os.symlink(release, os.path.join(d, "liblance_host.so.0"))
        env["LD_LIBRARY_PATH"] = d
    tmp = tempfile.mkdtemp(prefix="lh-s3-")
    proc, ep, log = start_moto(tmp)
    results = {}
    try:
        upload(ep, local, BUCKET, "t.lance")
        uri = f"s3://{BUCKET}/t.lance"
        for run in range(args.runs):
            for work in WORKS:
                for side in SIDES[run % 3:] + SIDES[:run % 3]:
                    out = subprocess.run([sys.executable, __file__, "--child", side, work, uri, ep, str(log)],
                                         capture_output=True, text=True, env=env, timeout=1800)
                    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
                    if out.returncode != 0 or not line:
                        raise SystemExit(f"{side} {work} failed:\n{out.stderr[-4000:]}")
                    r = json.loads(line[0][7:])
                    results.setdefault(work, {}).setdefault(side, []).append(r)
                    print(f"run {run} {work:12s} {side:8s} cold {r['cold_ms']:7.0f} ms {r['cold_requests']:5d} req  "
                          f"warm {r['warm_ms']:7.0f} ms {r['warm_requests']:5d} req", flush=True)
    finally:
        proc.terminate()
        proc.wait()

    def med(xs):
        return statistics.median(xs), min(xs), max(xs)

    lines = ["# The JVM Spark connector on s3://: requests and time per query", "",
             f"Generated by `bench/spark_jvm_s3.py` on {time.strftime('%Y-%m-%d')}, 2 cores, Spark "
             f"{__import__('pyspark').__version__} `local[2]`, library: {'release' if release else 'as installed'}. "
             f"Table: {args.rows:,} rows in {args.rows // 100_000} fragments (the table of bench/spark_jvm.py) "
             "on a local moto server; requests counted from the server's log. Each process runs the query "
             "twice: cold (a fresh session: opens, manifests, data) and warm (a second query in the same "
             f"session). {args.runs} processes per side, sides rotating; cells: median (min-max).", "",
             "| work | side | cold requests | cold ms | warm requests | warm ms | same answer |",
             "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    data = {}
    for work in WORKS:
        r = results[work]
        for side in SIDES:
            xs = r[side]
            ok = all(same(x["answer"], r["jvm"][0]["answer"]) for x in xs)

            def cell(key, fmt="{:.0f}"):
                m, lo, hi = med([x[key] for x in xs])
                return f"{fmt.format(m)} ({fmt.format(lo)}-{fmt.format(hi)})"

            lines.append(f"| {work} | {side} | {cell('cold_requests')} | {cell('cold_ms')} | "
                         f"{cell('warm_requests')} | {cell('warm_ms')} | {'yes' if ok else 'NO'} |")
            data.setdefault(work, {})[side] = xs
    lines += ["",
              "Sides as in bench/SPARK_JVM.md. What each side does differently: `count` — the JVM side answers "
              "COUNT(*) from the manifest (no data read); the Python sides read a column of every row. "
              "`filtered` — the JVM side reads 2 columns and Lance filters; the Python data source reads every "
              "column Spark can hold; the pylance source pushes the filter and reads the schema's columns. "
              "`grouped_sum` — the JVM side aggregates in the library (3 columns read); the others ship every "
              "row to Spark. JVM read tasks open the query's broadcast snapshot token (the manifest travels with "
              "it), so they make no manifest reads; the pylance source opens the dataset in every task. Warm runs: "
              "both lance-host sides serve data pages from the library's data cache (on by default for "
              "object stores, docs/object-storage.md), so their second query asks the store only for the "
              "latest version (the JVM side: 2 requests) and what the cache does not hold; pylance has no "
              "such cache and reads the same as cold."]
    publish(ROOT / "SPARK_JVM_S3.md", lines)
    (ROOT / "SPARK_JVM_S3.json").write_text(json.dumps({"rows": args.rows, "runs": args.runs, "works": data},
                                                       indent=1) + "\n")


if __name__ == "__main__":
    main()
