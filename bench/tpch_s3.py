"""TPC-H Q1 and Q6 as written on s3:// (issue 62): the queries of bench/tpch.py over the same
lineitem-shaped table, stored on a local S3-compatible server (moto, the tests' server), the
data cache off. Writes bench/TPCH_S3.md and bench/TPCH_S3.json.

    LANCE_HOST_LIB=<release liblance_host.so> python3 bench/tpch_s3.py [--rows 6000000] [--runs 3]
        [--work DIR]

The Lance table is written to the server by pylance 14.0.2 with its defaults (1,000,000 rows per
file), the Parquet file (pyarrow's defaults) is uploaded as it is. Sides, each run a fresh
process (one untimed warm-up execution, then the timed one): lance-host one call, lance-host
splits + merge (2 spawned workers), pylance + pyarrow, Polars on Parquet (its own object-store
reader). DuckDB is not a side here: reading s3:// needs its httpfs extension, which DuckDB cannot
download on this machine. A side's requests are the server's log lines during its timed
execution (the warm-up opened the table; a cold open is counted once, separately). Every answer
equals lance-host's one-call answer (bench/aggregates.py's check).
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

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from aggregates import generate, same, vm_kib  # noqa: E402
from tpch import KEYS, QUERIES, cpu_seconds, query_runner  # noqa: E402

URI = "s3://bench/lineitem.lance"
PARQUET = "s3://bench/lineitem.parquet"
SIDES = ["lance-host (one call)", "lance-host (splits + merge, 2 workers)", "pylance + pyarrow", "Polars on Parquet"]


def child(side, query, opts, log):
    import lance_host as lh
    import write
    session = lh.SessionOptions.defaults()
    session.data_cache_disabled = True
    lh.configure_session(session)
    base = vm_kib("VmRSS")
    mark = len(write.requests_in(log))
    run = query_runner(side, query, URI, PARQUET, None, opts, data_cache=False)
    run()  # warm-up: opens the table
    cold = len(write.requests_in(log, mark))
    mark = len(write.requests_in(log))
    cpu, start = cpu_seconds(), time.perf_counter()
    out = run()
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    time.sleep(0.2)  # the server logs a request after answering it
    reqs = write.requests_in(log, mark)
    keys = KEYS[query]
    rows = [[r[k] for k in keys] + [v for n, v in r.items() if n not in keys] for r in out]
    print("RESULT " + json.dumps({
        "seconds": seconds, "cpu": cpu, "rss_growth_mib": (vm_kib("VmHWM") - base) / 1024,
        "requests": len(reqs), "gets": sum('"GET ' in r for r in reqs), "warm_up_requests": cold,
        "profile": lh.build_profile(),
        "rows": sorted([[v if isinstance(v, str) else float(v) for v in r] for r in rows], key=str)}))


def upload(work, opts):
    import boto3
    import lance
    local = lance.dataset(str(work / "lineitem.lance"))
    lance.write_dataset(local.scanner(batch_size=65_536).to_reader(), URI, storage_options=opts,
                        max_rows_per_file=1_000_000)
    s3 = boto3.client("s3", endpoint_url=opts["aws_endpoint"], aws_access_key_id="a", aws_secret_access_key="b",
                      region_name="us-east-1")
    s3.upload_file(str(work / "lineitem.parquet"), "bench", "lineitem.parquet")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=6_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default=None, help="reuse a directory holding bench/tpch.py's generated table")
    ap.add_argument("--child", nargs=4)
    args = ap.parse_args()
    if args.child:
        side, query, opts, log = args.child
        return child(side, query, json.loads(opts), log)
    if not os.environ.get("LANCE_HOST_LIB"):
        sys.exit("set LANCE_HOST_LIB to the release liblance_host.so")
    import write
    from report import publish, rotated, spread

    work = Path(args.work or tempfile.mkdtemp(prefix="lh-tpch-"))
    if not (work / "lineitem.lance").exists():
        generate(str(work / "lineitem.lance"), str(work / "lineitem.parquet"), args.rows)
    srv, log, opts = write.moto()
    load = os.getloadavg()
    results = {q: {s: [] for s in SIDES} for q in QUERIES}
    try:
        t0 = time.perf_counter()
        upload(work, opts)
        print(f"uploaded in {time.perf_counter() - t0:.0f} s", flush=True)
        for query in QUERIES:
            answer = None
            for run in range(args.runs):
                for side in rotated(SIDES, run):
                    out = subprocess.run([sys.executable, __file__, "--child", side, query, json.dumps(opts), str(log)],
                                         env=dict(os.environ, LANCE_LOG="error"), capture_output=True, text=True,
                                         timeout=3600)
                    line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
                    if out.returncode != 0 or not line:
                        raise SystemExit(f"{query} {side} failed:\n{out.stderr[-3000:]}")
                    r = json.loads(line[0][7:])
                    rows = r.pop("rows")
                    answer = answer if answer is not None or side != SIDES[0] else rows
                    if answer is not None and not same(rows, answer):
                        raise SystemExit(f"{query}: {side} answered differently:\n{rows}\nvs\n{answer}")
                    results[query][side].append(r)
                    print(query, side, f"{r['seconds']:.2f} s", f"{r['requests']} requests", flush=True)
    finally:
        srv.kill()
        srv.wait()
    load_after = os.getloadavg()
    (ROOT / "TPCH_S3.json").write_text(json.dumps({"rows": args.rows, "runs": args.runs, "results": results,
                                                   "load": [load, load_after]}, indent=1))
    med = statistics.median
    lines = [
        "# TPC-H Q1 and Q6 as written, on s3://",
        "",
        f"Generated by `bench/tpch_s3.py --rows {args.rows} --runs {args.runs}` on {time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} cores, load average {load[0]:.2f} before and {load_after[0]:.2f} after, library built "
        f"`{results['Q1'][SIDES[0]][0]['profile']}`. The table of bench/TPCH.md ({args.rows:,} rows written by "
        "pylance with its defaults; the Parquet file by pyarrow) on a local moto server (Python: slow per request "
        "and per byte, so times follow the server more than the readers; the requests do not). The data cache is "
        "off. Each run is a fresh process per side (sides rotating): a warm-up execution that opens the table, "
        "then the timed one. Every answer equals lance-host's one-call answer.",
        "",
        "| query | side | time, s: median (min–max) | × lance-host one call | requests (GETs) | warm-up requests | "
        "RSS growth, MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    for query in QUERIES:
        base = [r["seconds"] for r in results[query][SIDES[0]]]
        for side in SIDES:
            rs = results[query][side]
            secs = [r["seconds"] for r in rs]
            ratio = [s / b for s, b in zip(secs, base)]
            lines.append(f"| {query} | {side} | {spread(secs, 2)} | {med(ratio):.2f} | "
                         f"{med([r['requests'] for r in rs]):.0f} ({med([r['gets'] for r in rs]):.0f}) | "
                         f"{med([r['warm_up_requests'] for r in rs]):.0f} | "
                         f"{med([r['rss_growth_mib'] for r in rs]):.0f} |")
    lines += [
        "",
        "What the sides do: lance-host computes the expressions and the groups inside its scan (one call), or in "
        "row-slice splits on two worker processes whose partial states are merged; pylance reads the columns with "
        "the filter applied and pyarrow computes; Polars reads the Parquet file with its own reader (row-group "
        "statistics can skip groups; Lance's 2.x files have no such statistics, the filter is evaluated per row). "
        "The splits side's requests are both workers' together. The pylance side opens the dataset in every "
        "execution (as in bench/TPCH.md), so its timed requests include reading the manifest; lance-host's sides "
        "open the table once, in the warm-up.",
    ]
    publish(ROOT / "TPCH_S3.md", lines)


if __name__ == "__main__":
    main()
