"""Reads of a one-fragment table by Spark and Ray (issue 46): one scan split per fragment (the
only plan before 0.11: one partition, one task, one core) against row slices of the fragment
(`target_rows` = rows / 4: four partitions or tasks on both cores). Each engine sums a column
and counts the rows of the whole table; the sides alternate run by run on one session per
engine. Writes bench/SUB_FRAGMENT_SPLITS.md.

    LANCE_HOST_LIB=<liblance_host.so> python3 bench/sub_fragment_splits.py [--rows 4000000] [--runs 5]

The table (id int64, val float64, cat string, 8 x float32) is written by pylance as one
fragment, with 1 row in 50 deleted. Both sides read the same columns (id, val) and return the
same sum and count (checked every run against pylance's).
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from report import publish, rotated, spread

ROOT = Path(__file__).resolve().parent


def table(uri, n):
    import lance
    import numpy as np
    import pyarrow as pa

    ids = np.arange(n, dtype=np.int64)
    rng = np.random.default_rng(1)
    t = pa.table({
        "id": pa.array(ids),
        "val": pa.array(rng.random(n)),
        "cat": pa.array(np.array(["a", "b", "c"], dtype=object)[ids % 3]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8, dtype=np.float32)), 8),
    })
    lance.write_dataset(t, uri, max_rows_per_file=n, max_rows_per_group=n)
    ds = lance.dataset(uri)
    ds.delete("id % 50 = 7")
    ds = lance.dataset(uri)
    assert len(ds.get_fragments()) == 1
    vals = ds.to_table(columns=["val"])["val"]
    import pyarrow.compute as pc
    return ds.count_rows(), pc.sum(vals).as_py()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    import lance_host as lh
    import ray
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import lance_host.ray as lhr
    from lance_host.spark import register

    work = Path(tempfile.mkdtemp(prefix="lh-slices-"))
    uri = str(work / "one.lance")
    count, total = table(uri, args.rows)
    target = count // 4 + 1
    plans = {"one split per fragment": 0, f"row slices (target_rows={target:,})": target}
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"LANCE_HOST_LIB": os.environ.get("LANCE_HOST_LIB", "")}})

    def spark_read(t):
        df = spark.read.format("lance_host").option("uri", uri).option("columns", "id,val")
        if t:
            df = df.option("target_rows", str(t))
        df = df.load()
        r = df.agg(F.count("*").alias("n"), F.sum("val").alias("s")).collect()[0]
        return df.rdd.getNumPartitions(), r["n"], r["s"]

    def ray_read(t):
        ds = lhr.read_lance_host(uri, columns=["id", "val"], target_rows=t)
        n, s = 0, 0.0
        for b in ds.iter_batches(batch_format="pyarrow", batch_size=None):
            n += b.num_rows
            import pyarrow.compute as pc
            s += pc.sum(b["val"]).as_py() or 0.0
        return len(lh.open(uri).plan_scan(t)), n, s

    engines = {"Spark (local[2])": spark_read, "Ray (2 CPUs)": ray_read}
    times = {(e, p): [] for e in engines for p in plans}
    parts = {}
    for engine, fn in engines.items():
        for name, t in plans.items():  # warm-up: sessions, workers, the file in the page cache
            fn(t)
        for run in range(args.runs):
            for name in rotated(list(plans), run):
                start = time.perf_counter()
                n_parts, n, s = fn(plans[name])
                times[(engine, name)].append(time.perf_counter() - start)
                parts[(engine, name)] = n_parts
                assert n == count and abs(s - total) < 1e-6 * max(1.0, abs(total)), (engine, name, n, s)
    spark.stop()
    ray.shutdown()
    shutil.rmtree(work, ignore_errors=True)

    import lance_host
    lib = os.environ.get("LANCE_HOST_LIB", "the installed package's library")
    build = lance_host.build_profile()
    lines = [
        "# Spark and Ray reads of a one-fragment table: row slices against one split per fragment",
        "",
        f"`python3 bench/sub_fragment_splits.py --rows {args.rows} --runs {args.runs}` on this 2-core machine; "
        f"library: `{lib}` ({build} build{'' if build == 'release' else ' — times are indicative: a release build decodes faster, which makes the scan share smaller and the engines own overhead larger'}). "
        f"{count:,} visible rows in one fragment (1 in 50 deleted); each run counts the rows and sums `val` "
        "(columns id, val) and checks both against pylance's. Median (min–max) seconds of "
        f"{args.runs} alternating runs after one warm-up of each side.",
        "",
        "| engine | plan | partitions / read tasks | seconds |",
        "| --- | --- | ---: | ---: |",
    ]
    for engine in engines:
        for name in plans:
            lines.append(f"| {engine} | {name} | {parts[(engine, name)]} | {spread(times[(engine, name)], 2)} |")
    lines.append("")
    for engine in engines:
        one, sliced = (statistics_median(times[(engine, n)]) for n in plans)
        lines.append(f"- {engine}: row slices take {sliced / one:.2f}× the time of one split per fragment.")
    lines += [
        "",
        "What the two plans do differently: the same rows and bytes are read either way (a slice reads only",
        "its rows' pages: scanning the slices one after another in one process takes about the time of one",
        "whole-fragment scan), and Lance already decodes one split with both cores. So slices pay off where the",
        "engine's own per-partition work is the bottleneck (Ray's block handling runs in two processes instead",
        "of one) and cost where it is not (Spark starts a Python worker and unpickles the reader per",
        "partition; at this size that fixed cost is a visible share of the run).",
    ]
    publish(ROOT / "SUB_FRAGMENT_SPLITS.md", lines)


def statistics_median(values):
    import statistics
    return statistics.median(values)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
