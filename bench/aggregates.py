"""Aggregates inside the splits (issue 47) against what a user would pick instead, on a generated
lineitem-shaped table: a TPC-H-like Q1 (4 group keys, 8 aggregates, a date filter) and Q6 (a
filtered SUM). Writes bench/AGGREGATES.md and bench/AGGREGATES.json.

    LANCE_HOST_LIB=<release liblance_host.so> \\
    LANCE_HOST_DUCKDB_EXTENSION=build/duckdb/lance_host.duckdb_extension \\
      python3 bench/aggregates.py [--rows 6000000] [--runs 5] [--s3-rows 1000000]

Sides (each measured run is a fresh process: one untimed warm-up execution, then the timed one;
the peak RSS it reports is the process's growth over its size after imports and opening):
- lance-host, one process: `Dataset.aggregate` (partial states of the whole table, merged);
- lance-host, 2 worker processes: splits of the pinned table (row slices, about rows/2 each),
  partial states computed in two spawned workers and shipped back as Arrow IPC, merged;
- pylance + pyarrow: `to_table(columns, filter)` then `group_by().aggregate()`;
- DuckDB over `lance_scan` (this project's extension): SQL GROUP BY, WHERE evaluated by DuckDB;
- DuckDB `lance_aggregate` (this project's extension): the aggregate computed by lance-host;
- DuckDB over a Parquet file of the same rows: DuckDB's own scan and aggregate.
Every side's answer is compared with the one-process lance-host answer (group keys and counts
exactly, sums and averages to 1e-9 relative).

On s3:// (a local S3-compatible server, `--s3-rows` rows copied there): the lance-host sides and
pylance + pyarrow, each run a cold process (open the table, one execution, timed together), and
the requests each run sent (the server's log).
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

KEYS = ["l_returnflag", "l_linestatus", "l_shipmode", "l_shipinstruct"]
Q1_FILTER = "l_shipdate <= date '1998-09-02'"
Q1 = [("l_quantity", "sum"), ("l_extendedprice", "sum"), ("l_discount", "sum"), ("l_tax", "sum"),
      ("l_quantity", "mean"), ("l_extendedprice", "mean"), ("l_discount", "mean"), ([], "count_all")]
Q6_FILTER = ("l_shipdate >= date '1994-01-01' AND l_shipdate < date '1995-01-01' "
             "AND l_discount >= CAST(0.05 AS DECIMAL(15,2)) AND l_discount <= CAST(0.07 AS DECIMAL(15,2)) "
             "AND l_quantity < 24")
Q6 = [("l_extendedprice", "sum")]
QUERIES = {"Q1": (KEYS, Q1, Q1_FILTER), "Q6": ([], Q6, Q6_FILTER)}
SIDES = ["lance-host (1 process)", "lance-host (2 workers)", "pylance + pyarrow", "DuckDB over lance_scan",
         "DuckDB lance_aggregate", "DuckDB over Parquet", "reference: lance-host scan, no aggregate"]
S3_SIDES = SIDES[:3]


def generate(uri, parquet, n):
    import lance
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(47)
    chunk = 1_000_000
    writer = None
    for start in range(0, n, chunk):
        m = min(chunk, n - start)

        def dec(values):  # int64 cents as decimal128(15, 2)
            pairs = np.empty((m, 2), dtype=np.int64)
            pairs[:, 0] = values
            pairs[:, 1] = values >> 63
            return pa.Array.from_buffers(pa.decimal128(15, 2), m, [None, pa.py_buffer(pairs.tobytes())])

        def cat(labels, idx):
            return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int8)), pa.array(labels)).cast(pa.string())

        qty = rng.integers(1, 51, m)
        price = qty * rng.integers(90_000, 110_000, m) // 100
        ship = rng.integers(8035, 10561, m)  # 1992-01-02 .. 1998-12-01 as days since 1970
        flag = np.where(ship > 9298, 1, rng.integers(0, 2, m) * 2)  # N after mid-1995, else A or R
        t = pa.table({
            "l_orderkey": pa.array(np.arange(start, start + m) // 4, pa.int64()),
            "l_quantity": dec(qty * 100),
            "l_extendedprice": dec(price),
            "l_discount": dec(rng.integers(0, 11, m)),
            "l_tax": dec(rng.integers(0, 9, m)),
            "l_returnflag": cat(["A", "N", "R"], flag),
            "l_linestatus": cat(["F", "O"], (ship > 9298).astype(np.int8)),
            "l_shipdate": pa.array(ship.astype(np.int32)).cast(pa.date32()),
            "l_shipinstruct": cat(["COLLECT COD", "DELIVER IN PERSON", "NONE", "TAKE BACK RETURN"], rng.integers(0, 4, m)),
            "l_shipmode": cat(["AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"], rng.integers(0, 7, m)),
            "l_comment": pa.array([f"comment {i % 9973}" for i in range(start, start + m)]),
        })
        lance.write_dataset(t, uri, mode="create" if start == 0 else "append", max_rows_per_file=chunk)
        if writer is None:
            writer = pq.ParquetWriter(parquet, t.schema)
        writer.write_table(t, row_group_size=122_880)
    writer.close()


def sql(keys, aggs, flt, source):
    names = {"sum": "sum", "mean": "avg", "count_all": "count"}
    cols = [f"{names[f]}({c if c else '*'})" for c, f in aggs]
    group = f" GROUP BY {', '.join(keys)}" if keys else ""
    return f"SELECT {', '.join(keys + cols)} FROM {source} WHERE {flt}{group}"


def normalize(rows):
    """Rows as sorted tuples: keys as text, numbers as floats (decimal sums stay exact enough)."""
    out = []
    for r in rows:
        out.append(tuple(v if isinstance(v, str) or v is None else float(v) for v in r))
    return sorted(out, key=lambda r: tuple(str(v) for v in r))


def vm_kib(key):
    """A figure of /proc/self/status in KiB (VmRSS, VmHWM: this process's own, reset by exec;
    ru_maxrss keeps the high-water mark of the process that exec'd this one)."""
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def child(args):
    import lance_host as lh  # first: the extension then uses this library instance

    side, query = args.child, args.query
    keys, aggs, flt = QUERIES[query]
    storage = json.loads(args.storage) if args.storage else None
    base = vm_kib("VmRSS")
    start = time.perf_counter()
    run = None
    if side.startswith("lance-host (1"):
        ds = lh.open(args.uri, storage_options=storage)

        def run():
            return ds.aggregate(aggs, group_by=keys, filter=flt).to_pylist()
    elif side.startswith("lance-host (2"):
        import multiprocessing
        import pyarrow as pa

        pool = multiprocessing.get_context("spawn").Pool(2, initializer=_worker_init, initargs=(args.uri, storage))
        ds = lh.open(args.uri, storage_options=storage)

        def run():
            plan = ds.plan_scan(ds.count_rows() // 2 + 1)
            out = pool.map(_worker_partial, [(bytes(s), aggs, keys, flt) for s in plan])
            parts = [pa.ipc.open_stream(b).read_all() for b, _ in out]
            run.worker_rss = max(r for _, r in out)
            return lh.merge_aggregates(parts).to_pylist()
    elif side.startswith("reference"):
        ds = lh.open(args.uri, storage_options=storage)

        def run():  # the rows the aggregate reads, decoded and counted: the scan's share of the time
            cols = sorted({c for c, _ in aggs if c} | set(keys))
            run.scanned = sum(b.num_rows for b in ds.scan(columns=cols, filter=flt))
            return None
    elif side.startswith("pylance"):
        import lance

        def run():
            cols = sorted({c for c, _ in aggs if c} | set(keys))
            t = lance.dataset(args.uri, storage_options=storage).to_table(columns=cols, filter=flt)
            return t.group_by(keys, use_threads=True).aggregate(aggs).to_pylist() if keys else \
                t.group_by([]).aggregate(aggs).to_pylist()
    else:
        import duckdb

        con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
        con.execute(f"LOAD '{args.extension}'")
        if side == "DuckDB over lance_scan":
            q = sql(keys, aggs, flt.replace("date '", "DATE '"), f"lance_scan('{args.uri}')")
        elif side == "DuckDB over Parquet":
            q = sql(keys, aggs, flt.replace("date '", "DATE '"), f"read_parquet('{args.parquet}')")
        else:
            names = {"sum": "sum", "mean": "avg", "count_all": "count"}
            spec = ", ".join(f"'{names[f]}({c if c else '*'})'" for c, f in aggs)
            gb = f"group_by := [{', '.join(repr(k) for k in keys)}], " if keys else ""
            q = f"SELECT * FROM lance_aggregate('{args.uri}', {gb}aggregates := [{spec}], filter := $${flt}$$)"

        def run():
            cur = con.execute(q)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]
    if not args.cold:
        run()  # warm-up
        start = time.perf_counter()
    rows = run()
    seconds = time.perf_counter() - start
    result = {
        "seconds": seconds,
        "rss_growth_mib": (vm_kib("VmHWM") - base) / 1024,
        "worker_rss_mib": getattr(run, "worker_rss", 0) / 1024,
        "rows": None if rows is None else normalize([tuple(r.values()) for r in rows]),
        "profile": lh.build_profile(),
    }
    print("RESULT " + json.dumps(result))


_DS = None


def _worker_init(uri, storage):
    global _DS
    import lance_host as lh

    _DS = lh.open(uri, storage_options=storage)


def _worker_partial(job):
    import lance_host as lh
    import pyarrow as pa

    split, aggs, keys, flt = job
    part, _ = _DS.aggregate_split(lh.Split.from_bytes(split), aggs, group_by=keys, filter=flt)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, part.schema) as w:
        w.write_table(part)
    return sink.getvalue().to_pybytes(), vm_kib("VmHWM")


def same(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if len(x) != len(y):
            return False
        for u, v in zip(x, y):
            if isinstance(u, float) and isinstance(v, float):
                # AVG of a decimal is rounded to the column's scale (0.01) by lance-host and pyarrow,
                # a double in DuckDB: half a unit apart at most; sums and counts agree exactly
                if abs(u - v) > max(1e-9 * max(abs(u), abs(v)), 0.0051):
                    return False
            elif u != v:
                return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=6_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--work", default=None, help="reuse a directory holding the generated table")
    ap.add_argument("--child")
    ap.add_argument("--query")
    ap.add_argument("--uri")
    ap.add_argument("--parquet")
    ap.add_argument("--extension", default=os.environ.get("LANCE_HOST_DUCKDB_EXTENSION"))
    ap.add_argument("--storage", default="")
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--s3-rows", type=int, default=1_000_000)
    args = ap.parse_args()
    if args.child:
        return child(args)
    sys.path.insert(0, str(ROOT))
    from report import publish, rotated, spread
    from write import moto, requests_in

    work = Path(args.work or tempfile.mkdtemp(prefix="lh-agg-"))
    uri, parquet = str(work / "lineitem.lance"), str(work / "lineitem.parquet")
    if not Path(uri).exists():
        t0 = time.perf_counter()
        generate(uri, parquet, args.rows)
        print(f"generated {args.rows:,} rows in {time.perf_counter() - t0:.0f} s", flush=True)
    def measure(sides, target, storage=None, log=None):
        results = {q: {s: [] for s in sides} for q in QUERIES}
        answers = {}
        for query in QUERIES:
            for run in range(args.runs):
                for side in rotated(sides, run):
                    cmd = [sys.executable, __file__, "--child", side, "--query", query, "--uri", target,
                           "--parquet", parquet, "--extension", args.extension or ""]
                    if storage:
                        cmd += ["--storage", json.dumps(storage), "--cold"]
                    mark = len(requests_in(log)) if log else 0
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
                    line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
                    if out.returncode != 0 or not line:
                        raise SystemExit(f"{query} {side} failed:\n{out.stderr[-3000:]}")
                    r = json.loads(line[0][7:])
                    if log:
                        r["requests"] = len(requests_in(log, mark))
                    rows = r.pop("rows")
                    rows = None if rows is None else [tuple(x) for x in rows]
                    if side == sides[0] and query not in answers:
                        answers[query] = rows
                    if rows is not None and not same(rows, answers.get(query, rows)):
                        raise SystemExit(f"{query}: {side} answered differently:\n{rows[:3]}\nvs\n{answers[query][:3]}")
                    results[query][side].append(r)
                    print(query, side, f"{r['seconds']:.3f} s", f"{r['rss_growth_mib']:.0f} MiB",
                          r.get("requests", ""), r["profile"], flush=True)
        return results

    results = measure(SIDES, uri)
    s3 = None
    if args.s3_rows:
        import lance

        srv, log, opts = moto()
        try:
            s3_uri = "s3://bench/lineitem.lance"
            src = lance.dataset(uri)
            lance.write_dataset(src.scanner(limit=args.s3_rows).to_reader() if args.s3_rows < src.count_rows()
                                else src.to_batches(), s3_uri, schema=src.schema, storage_options=opts,
                                max_rows_per_file=1_000_000)
            s3 = measure(S3_SIDES, s3_uri, opts, log)
        finally:
            srv.terminate()
    (ROOT / "AGGREGATES.json").write_text(json.dumps({"rows": args.rows, "runs": args.runs, "results": results,
                                                      "s3_rows": args.s3_rows, "s3": s3}, indent=1))
    profile = results["Q1"][SIDES[0]][0]["profile"]
    lines = [
        "# Aggregates inside the splits against pylance + pyarrow and DuckDB",
        "",
        f"`python3 bench/aggregates.py --rows {args.rows} --runs {args.runs}` on this 2-core machine, library "
        f"build profile **{profile}**. A lineitem-shaped table of {args.rows:,} rows (11 columns: decimals(15,2), "
        f"a date, five strings, 1M-row fragments) written by pylance on the local disk (warm page cache), "
        "and a Parquet file of the same rows. Median (min–max) of "
        f"{args.runs} alternating runs, each a fresh process (one warm-up execution, then the timed one); "
        "peak RSS is the process's high-water mark (VmHWM) above its resident size after imports (for the 2-worker "
        "side, the larger worker's VmHWM is given separately: the workers hold the split's data, the coordinator only "
        "partial states). The reference row scans the columns the aggregate reads, with its filter, and only counts "
        "the rows: the share of the time that is Lance's read and decode. "
        "Every side's answer equals the one-process lance-host answer (checked every run; decimal averages are rounded to the column's scale by lance-host and pyarrow, doubles in DuckDB: equal to half a cent).",
        "",
        "- Q1 (TPC-H-like): `" + Q1_FILTER + "`, GROUP BY " + ", ".join(KEYS) +
        "; SUM and AVG of quantity, price, discount; SUM of tax; COUNT(*) (8 aggregates). TPC-H's Q1 also sums "
        "`price * (1 - discount)` and `... * (1 + tax)`: expressions are not aggregate arguments here, so no "
        "side computes them.",
        "- Q6 (TPC-H-like): `" + Q6_FILTER + "`, SUM(l_extendedprice) (TPC-H sums `price * discount`).",
        "",
        "| query | side | seconds | × lance-host (1 process) | peak RSS growth MiB | worker peak RSS MiB |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for query in QUERIES:
        ref = statistics.median(r["seconds"] for r in results[query][SIDES[0]])
        for side in SIDES:
            rs = results[query][side]
            secs = [r["seconds"] for r in rs]
            rss = statistics.median(r["rss_growth_mib"] for r in rs)
            wrss = statistics.median(r["worker_rss_mib"] for r in rs)
            lines.append(f"| {query} | {side} | {spread(secs, 3)} | {statistics.median(secs) / ref:.2f} | {rss:.0f} | "
                         f"{wrss:.0f} |" if wrss else
                         f"| {query} | {side} | {spread(secs, 3)} | {statistics.median(secs) / ref:.2f} | {rss:.0f} | |")
    if s3:
        lines += [
            "",
            f"On `s3://` (a local S3-compatible server; the first {args.s3_rows:,} rows of the table copied there). "
            "Each run is a cold process: opening the table and one execution, timed together; requests are "
            "the server's count for the run (lance-host's data cache starts empty in every process).",
            "",
            "| query | side | seconds | × lance-host (1 process) | requests |",
            "| --- | --- | ---: | ---: | ---: |",
        ]
        for query in QUERIES:
            ref = statistics.median(r["seconds"] for r in s3[query][S3_SIDES[0]])
            for side in S3_SIDES:
                rs = s3[query][side]
                secs = [r["seconds"] for r in rs]
                lines.append(f"| {query} | {side} | {spread(secs, 3)} | {statistics.median(secs) / ref:.2f} | "
                             f"{spread([r['requests'] for r in rs])} |")
    lines += [
        "",
        "Where the sides do different work: lance-host and pylance read only the columns the query needs and "
        "apply the filter in Lance's scan; pylance then materializes every matching row as a pyarrow table "
        "before pyarrow groups it, lance-host aggregates as the rows are decoded and keeps only the groups. "
        "DuckDB over `lance_scan` receives every row of the needed columns through the Arrow C stream "
        "(the WHERE is DuckDB's) and aggregates in DuckDB; `lance_aggregate` is lance-host's aggregate "
        "called from DuckDB. DuckDB over Parquet reads a different file format (row groups with min/max "
        "statistics DuckDB uses to skip row groups for the date filter) with its own scan. The 2-worker side "
        "pays process dispatch and Arrow IPC of the partial states per run; on 2 cores it competes with the "
        "one-process side's own parallel decoding.",
    ]
    publish(ROOT / "AGGREGATES.md", lines)


if __name__ == "__main__":
    main()
