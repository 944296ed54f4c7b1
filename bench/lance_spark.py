"""lance-host's Spark connector against lance-spark, the Lance project's own connector, on the same
Spark and the same 3M-row table (issue 61's bench):

  lance-host   org.lancehost:lance-host-spark-3.5_2.12 (java/spark/spark-3.5_2.12, its bundle jar
               built over a release library): spark.read.format("lance_host")
  lance-spark  org.lance:lance-spark-3.5_2.12:0.4.0 and its dependencies from Maven Central (Lance's
               Java SDK org.lance:lance-core:4.0.0 inside): spark.read.format("lance")
  parquet      Spark's own Parquet reader on the same rows written by pyarrow (the yardstick)

All three on pyspark 3.5.7 (Spark 3.5, Scala 2.12, installed into a venv of the bench cache),
`local[2]`, driver memory 4 GiB. Work, one process per measurement (start Spark, run the work once
untimed, then time it), sides rotating:
  count        SELECT count(*)
  filtered     SELECT id, price WHERE price < 10 (about 3 % of the rows), collected
  grouped_sum  SELECT cat, count(*), sum(price), sum(qty) GROUP BY cat
  scan         SELECT sum(hash(id, cat, price, qty)): every row of four columns reaches Spark
  append       append 1,000,000 rows (id, cat, price, qty) to a copy of a small table
Every answer is checked against the Parquet side's (sums to 1e-9 relative); the appends are read
back by pylance (rows and one new version). Peak memory: the JVM's VmHWM when the work is done.

    LANCE_HOST_SPARK35_BUNDLE=<java/spark/spark-3.5_2.12/target/*-bundle.jar built with
      LANCE_HOST_PREFIX=<release prefix>> python3 bench/lance_spark.py [--runs 3] [--rows 3000000]

Writes bench/LANCE_SPARK.md and bench/LANCE_SPARK.json.
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

from report import publish, rotated, spread
from spark_jvm import make_table, same

ROOT = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("LANCE_HOST_BENCH_DIR", Path.home() / ".cache" / "lance-host" / "bench"))
VENV = CACHE / "venv-spark35"
PYSPARK = "pyspark==3.5.7"
LANCE_SPARK = ("org.lance", "lance-spark-3.5_2.12", "0.4.0")
WORKS = ["count", "filtered", "grouped_sum", "scan", "append"]
SIDES = ["lance-host", "lance-spark", "parquet"]
APPEND_ROWS = 1_000_000


# ---- set-up (the parent, with pylance) -------------------------------------------------------

def make_tables(uri, parquet, rows):
    """The table of bench/spark_jvm.py as pylance writes it (30 fragments) and the same rows as
    Parquet (pyarrow), one file per fragment: Spark reads both with the same parallelism."""
    import lance
    import pyarrow.parquet as pq

    make_table(uri, rows)
    if Path(parquet).exists():
        return
    os.makedirs(parquet + ".tmp", exist_ok=True)
    for i, frag in enumerate(lance.dataset(uri).get_fragments()):
        pq.write_table(frag.to_table(), os.path.join(parquet + ".tmp", f"part-{i:03d}.parquet"))
    os.rename(parquet + ".tmp", parquet)


def spark35_python():
    """The venv's python with pyspark 3.5 (made once)."""
    py = VENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", PYSPARK], check=True)
    return str(py)


def lance_spark_classpath():
    """lance-spark's jar and its runtime dependencies from Maven Central (resolved once)."""
    out = CACHE / "lance-spark-classpath.txt"
    if out.exists():
        return out.read_text().strip()
    group, artifact, version = LANCE_SPARK
    with tempfile.TemporaryDirectory() as d:
        Path(d, "pom.xml").write_text(f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>bench</groupId><artifactId>lance-spark-side</artifactId><version>1</version>
  <dependencies><dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>
    <version>{version}</version></dependency></dependencies>
</project>
""")
        subprocess.run(["mvn", "-B", "-ntp", "-q", "dependency:build-classpath", f"-Dmdep.outputFile={out}",
                        "-Dmdep.includeScope=runtime"], cwd=d, check=True)
    return out.read_text().strip()


# ---- one measurement (the child, on pyspark 3.5) ---------------------------------------------

def spark_session(side, classpath, bundle):
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.driver.memory", "4g").config("spark.sql.shuffle.partitions", "2")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1"))
    if side == "lance-host":
        b = b.config("spark.jars", bundle)
    elif side == "lance-spark":
        # before Spark's own jars: lance-spark needs the Arrow Java 18 it was built with (Spark
        # 3.5 ships Arrow 12)
        b = b.config("spark.driver.extraClassPath", classpath)
    return b.getOrCreate()


def jvm_peak_mib(spark):
    pid = spark.sparkContext._gateway.proc.pid
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def run_side(side, work, table, parquet, append_to, classpath, bundle):
    from pyspark.sql import functions as F

    spark = spark_session(side, classpath, bundle)

    def table_df():
        if side == "parquet":
            return spark.read.parquet(parquet)
        return spark.read.format({"lance-host": "lance_host", "lance-spark": "lance"}[side]).load(table)

    targets = []

    def work_once():
        if work == "count":
            return [table_df().count()]
        if work == "filtered":
            rows = table_df().where("price < 10").select("id", "price").collect()
            return [len(rows), sum(r[0] for r in rows), sum(r[1] for r in rows)]
        if work == "grouped_sum":
            rows = table_df().groupBy("cat").agg(F.count("*"), F.sum("price"), F.sum("qty")).orderBy("cat").collect()
            return [list(r) for r in rows]
        if work == "scan":
            return [table_df().selectExpr("sum(CAST(hash(id, cat, price, qty) AS BIGINT))").collect()[0][0]]
        if work == "append":
            target = append_to(side)
            targets.append(target)
            df = spark.range(0, APPEND_ROWS, 1, 2).selectExpr(
                "id + 10000000 AS id", "concat('c', CAST(id % 10 AS STRING)) AS cat",
                "CAST(id % 300 AS DOUBLE) AS price", "CAST(id % 97 AS INT) AS qty")
            if side == "parquet":
                df.write.mode("append").parquet(target)
            else:
                df.write.format({"lance-host": "lance_host", "lance-spark": "lance"}[side]).mode("append").save(target)
            return [target]
        raise ValueError(work)

    work_once()
    t = time.perf_counter()
    answer = work_once()
    ms = (time.perf_counter() - t) * 1e3
    peak = jvm_peak_mib(spark)
    spark.stop()
    return ms, answer, peak


def child(args):
    def append_to(side):
        # a fresh copy of the small seed table per execution: every append lands on one version
        d = tempfile.mkdtemp(prefix="lh-ls-append-")
        if side == "parquet":
            target = os.path.join(d, "t.parquet")
            shutil.copytree(args.append_seed + ".parquet", target)
        else:
            target = os.path.join(d, "t.lance")
            shutil.copytree(args.append_seed, target)
        return target

    ms, answer, peak = run_side(args.side, args.work, args.table, args.parquet, append_to,
                                args.classpath, args.bundle)
    print("RESULT " + json.dumps({"ms": ms, "answer": answer, "peak_mib": peak}), flush=True)


# ---- the parent ------------------------------------------------------------------------------

def appended(side, target, seed_rows):
    """What an append left: rows and new versions, read by pylance (Parquet: pyarrow)."""
    if side == "parquet":
        import pyarrow.parquet as pq

        return [pq.read_table(target).num_rows - seed_rows, None]
    import lance

    ds = lance.dataset(target)
    return [ds.count_rows() - seed_rows, ds.version - 1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--rows", type=int, default=3_000_000)
    p.add_argument("--works", default=",".join(WORKS))
    p.add_argument("--child", action="store_true")
    for a in ("--side", "--work", "--table", "--parquet", "--append-seed", "--classpath", "--bundle"):
        p.add_argument(a)
    args = p.parse_args()
    if args.child:
        return child(args)

    bundle = os.environ.get("LANCE_HOST_SPARK35_BUNDLE")
    if not bundle or not Path(bundle).is_file():
        raise SystemExit("set LANCE_HOST_SPARK35_BUNDLE to the lance-host-spark-3.5_2.12 bundle jar of a release build")
    import lance
    import pyarrow.parquet as pq

    table = str(CACHE / f"spark{args.rows}" / "t.lance")  # the table of bench/spark_jvm.py
    parquet = str(CACHE / f"spark{args.rows}" / "t.parquet")
    Path(table).parent.mkdir(parents=True, exist_ok=True)
    make_tables(table, parquet, args.rows)
    seed = str(CACHE / "ls_append_seed" / "t.lance")
    if not Path(seed).exists():
        # the columns the append writes (the 3M-row table also has a vector column)
        lance.write_dataset(lance.dataset(table).to_table(limit=1000, columns=["id", "cat", "price", "qty"]), seed)
        os.makedirs(seed + ".parquet")
        pq.write_table(lance.dataset(seed).to_table(), os.path.join(seed + ".parquet", "part-0.parquet"))
    seed_rows = lance.dataset(seed).count_rows()
    py = spark35_python()
    classpath = lance_spark_classpath()

    results = {}
    works = args.works.split(",")
    loads = []
    for run in range(args.runs):
        for work in works:
            for side in rotated(SIDES, run):
                loads.append(os.getloadavg()[0])
                out = subprocess.run([py, __file__, "--child", "--side", side, "--work", work, "--table", table,
                                      "--parquet", parquet, "--append-seed", seed, "--classpath", classpath,
                                      "--bundle", str(Path(bundle).resolve())],
                                     capture_output=True, text=True, timeout=1800, cwd=str(ROOT))
                line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
                if out.returncode != 0 or not line:
                    raise SystemExit(f"{side} {work} failed:\n{out.stderr[-4000:]}")
                r = json.loads(line[0][7:])
                if work == "append":
                    target = r["answer"][0]
                    r["answer"] = appended(side, target, seed_rows)
                    shutil.rmtree(Path(target).parent, ignore_errors=True)
                results.setdefault(work, {}).setdefault(side, []).append(r)
                print(f"run {run} {work:12s} {side:12s} {r['ms']:9.0f} ms  peak {r['peak_mib']:.0f} MiB", flush=True)

    lines = ["# lance-host's Spark connector against lance-spark", "",
             f"Generated by `bench/lance_spark.py` on {time.strftime('%Y-%m-%d')}, 2 cores (load average "
             f"{min(loads):.2f}-{max(loads):.2f} before the runs), {PYSPARK} `local[2]` (driver memory 4 GiB), "
             f"lance-host: its Spark 3.5 bundle over a release library; lance-spark: "
             f"`{':'.join(LANCE_SPARK)}` from Maven Central. Table: {args.rows:,} rows written by pylance "
             f"{lance.__version__} in {args.rows // 100_000} fragments (id bigint, cat string, price double, "
             f"qty int, vec: 16 float32; the work reads the first four), and the same rows as Parquet files, one per fragment. {args.runs} processes per side and work, sides "
             "rotating; each process runs the work once untimed, then times it. Cells: median (min-max) ms; "
             "ratios: medians of the per-run ratios of time to lance-host's time (above 1: slower than "
             "lance-host); peak: the driver JVM's VmHWM in MiB, median.", "",
             "| work | lance-host ms | lance-spark ms | Parquet ms | lance-spark / lance-host | Parquet / lance-host "
             "| peak MiB (lance-host / lance-spark / Parquet) | same answer |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    data = {}
    for work in works:
        r = results[work]

        def ratio(side):
            rs = [o["ms"] / h["ms"] for o, h in zip(r[side], r["lance-host"])]
            return spread(rs, 2)

        judge = r["parquet"][0]["answer"]
        if work == "append":  # every side added the rows; the Lance sides in one version each
            ok = all(x["answer"][0] == APPEND_ROWS for s in SIDES for x in r[s]) and all(
                x["answer"][1] == 1 for s in ("lance-host", "lance-spark") for x in r[s])
        else:
            ok = all(same(x["answer"], judge) for s in SIDES for x in r[s])
        peaks = " / ".join(f"{statistics.median([x['peak_mib'] for x in r[s]]):.0f}" for s in SIDES)
        lines.append(f"| {work} | {spread(x['ms'] for x in r['lance-host'])} | {spread(x['ms'] for x in r['lance-spark'])} "
                     f"| {spread(x['ms'] for x in r['parquet'])} | {ratio('lance-spark')} | {ratio('parquet')} "
                     f"| {peaks} | {'yes' if ok else 'NO'} |")
        data[work] = {s: [{"ms": x["ms"], "peak_mib": x["peak_mib"]} for x in r[s]] for s in SIDES}
        data[work]["same_answer"] = ok
    lines += ["", "What each side does differently: `count` — both Lance connectors answer COUNT(*) from the table's "
              "metadata (lance-host: a pushed aggregate; lance-spark: a local row count), Spark's Parquet reader "
              "counts the files' rows. `grouped_sum` — lance-host computes the aggregate in the library per split "
              "(complete pushdown; on Spark 3.5 without ANSI mode since the INT sum of a table under 2^32 rows "
              "cannot overflow); lance-spark and Parquet ship the rows to Spark. `filtered` — every side pushes the predicate to its "
              "reader. `scan` — nothing is pushed but the columns: every row reaches Spark on every side. `append` "
              "— lance-host stages the tasks' files and commits once; lance-spark writes fragments per task and "
              "commits once; Parquet writes files."]
    (ROOT / "LANCE_SPARK.json").write_text(json.dumps(data, indent=1) + "\n")
    publish(ROOT / "LANCE_SPARK.md", lines)


if __name__ == "__main__":
    main()
