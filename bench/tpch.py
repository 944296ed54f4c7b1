"""TPC-H Q1 and Q6 as written (issue 62), and plain scans against the machine's floors, on the
lineitem-shaped table of bench/aggregates.py. Writes bench/TPCH.md and bench/TPCH.json.

    LANCE_HOST_LIB=<release liblance_host.so> \\
    LANCE_HOST_DUCKDB_EXTENSION=build/duckdb/lance_host.duckdb_extension \\
      python3 bench/tpch.py [--rows 6000000] [--runs 5] [--work DIR]

Q1 and Q6 are TPC-H's text: Q1 sums `l_extendedprice * (1 - l_discount)` and
`l_extendedprice * (1 - l_discount) * (1 + l_tax)`, Q6 sums `l_extendedprice * l_discount`.
Sides (each run a fresh process: one untimed warm-up execution, then the timed one):
- lance-host, one call: `Dataset.aggregate` with `Expression` arguments;
- lance-host, splits + merge: row-slice splits' partial states computed in 2 spawned workers,
  shipped back as Arrow IPC and merged;
- pylance + pyarrow: `to_table(columns, filter)`, the expressions and the grouping in pyarrow;
- DuckDB on Parquet, DuckDB over `lance_scan` (the WHERE DuckDB's, or handed to lance-host as
  `filter :=`), DuckDB `lance_aggregate` (this project's extension; the expressions go to
  lance-host);
- Polars on Parquet (`scan_parquet`, lazy).
Every answer is compared with lance-host's one-call answer in every run (to 1e-9 relative; AVG
of a decimal to half a cent: lance-host and pyarrow round it to the column's scale).

Scans: the four decimal columns, and the one string column, read to Arrow batches by each
reader; throughput is the decoded Arrow bytes per CPU-second (user + system time of the
process during the run), next to two floors measured in the same run: one thread copying memory,
and reading the table's files from the page cache.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from aggregates import generate, same, vm_kib  # noqa: E402  (the table, the answer check, VmHWM)

Q1_FILTER = "l_shipdate <= date '1998-09-02'"  # DATE '1998-12-01' - INTERVAL 90 DAY
Q6_FILTER = ("l_shipdate >= date '1994-01-01' AND l_shipdate < date '1995-01-01' "
             "AND l_discount >= CAST(0.05 AS DECIMAL(15,2)) AND l_discount <= CAST(0.07 AS DECIMAL(15,2)) "
             "AND l_quantity < CAST(24 AS DECIMAL(15,2))")
Q1_SQL = """SELECT l_returnflag, l_linestatus, SUM(l_quantity) AS sum_qty, SUM(l_extendedprice) AS sum_base_price,
 SUM(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
 SUM(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
 AVG(l_quantity) AS avg_qty, AVG(l_extendedprice) AS avg_price, AVG(l_discount) AS avg_disc, COUNT(*) AS count_order
FROM {src} WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL 90 DAY
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus"""
Q6_SQL = """SELECT SUM(l_extendedprice * l_discount) AS revenue FROM {src}
WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'
  AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24"""
DISC = "l_extendedprice * (1 - l_discount)"
CHARGE = "l_extendedprice * (1 - l_discount) * (1 + l_tax)"
# (argument, function, alias); an argument in EXPR is a Lance SQL expression
Q1_AGGS = [("l_quantity", "sum", "sum_qty"), ("l_extendedprice", "sum", "sum_base_price"),
           (DISC, "sum", "sum_disc_price"), (CHARGE, "sum", "sum_charge"),
           ("l_quantity", "avg", "avg_qty"), ("l_extendedprice", "avg", "avg_price"),
           ("l_discount", "avg", "avg_disc"), (None, "count_all", "count_order")]
Q6_AGGS = [("l_extendedprice * l_discount", "sum", "revenue")]
EXPR = {DISC, CHARGE, "l_extendedprice * l_discount"}
KEYS = {"Q1": ["l_returnflag", "l_linestatus"], "Q6": []}
QUERIES = {"Q1": (Q1_AGGS, Q1_FILTER, Q1_SQL), "Q6": (Q6_AGGS, Q6_FILTER, Q6_SQL)}
COLUMNS = {"Q1": ["l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_returnflag", "l_linestatus", "l_shipdate"],
           "Q6": ["l_quantity", "l_extendedprice", "l_discount", "l_shipdate"]}
SIDES = ["lance-host (one call)", "lance-host (one call, DataFusion's aggregate)", "lance-host (one call, Lance's decoder)",
         "lance-host (splits + merge, 2 workers)",
         "pylance + pyarrow", "DuckDB on Parquet", "DuckDB over lance_scan", "DuckDB over lance_scan, Lance's decoder",
         "DuckDB over lance_scan(filter)",
         "DuckDB lance_aggregate", "Polars on Parquet"]
# the same side with the library's own page decoder turned off (src/decode; LANCE_HOST_DECODER=lance)
LANCE_DECODER = ", Lance's decoder"
# the same side with the library's own grouping turned off (src/aggregate/fused.rs;
# LANCE_HOST_AGGREGATE=datafusion): DataFusion's aggregate over the same read
DF_AGGREGATE = ", DataFusion's aggregate"
SCANS = {"4 decimal columns": ["l_quantity", "l_extendedprice", "l_discount", "l_tax"], "l_comment": ["l_comment"]}
SCAN_SIDES = ["lance-host", "lance-host, Lance's decoder", "pylance", "DuckDB on Parquet", "Polars on Parquet"]


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _lh_aggs(aggs):
    import lance_host as lh
    return [(lh.Expression(a) if a in EXPR else a, f, n) for a, f, n in aggs]


def query_runner(side, query, uri, parquet, extension, opts=None, data_cache=True):
    """A function running `query` on `side`, returning rows as tuples in the order of Q1_SQL's
    columns, or a scan runner returning the decoded Arrow bytes. `opts`: the storage options of
    an object-store `uri` and `parquet`; `data_cache=False` turns the data cache off in the
    splits side's worker processes too (bench/tpch_s3.py)."""
    import pyarrow as pa
    aggs, flt, text = QUERIES[query]
    keys = KEYS[query]
    if side == "lance-host (one call)":
        import lance_host as lh
        ds = lh.open(uri, storage_options=opts)
        return lambda: ds.aggregate(_lh_aggs(aggs), group_by=keys, filter=flt).to_pylist()
    if side.startswith("lance-host (splits"):
        import multiprocessing
        import lance_host as lh
        pool = multiprocessing.get_context("spawn").Pool(2, initializer=_worker_init, initargs=(uri, opts, data_cache))
        ds = lh.open(uri, storage_options=opts)

        def run():
            plan = ds.plan_scan(ds.count_rows() // 2 + 1)
            out = pool.map(_worker_partial, [(bytes(s), aggs, keys, flt) for s in plan])
            run.worker_rss = max(r for _, r in out)
            return lh.merge_aggregates([pa.ipc.open_stream(b).read_all() for b, _ in out]).to_pylist()
        return run
    if side == "pylance + pyarrow":
        import decimal
        import lance
        import pyarrow.compute as pc
        one = pa.scalar(decimal.Decimal(1), pa.decimal128(15, 2))

        def run():
            t = lance.dataset(uri, storage_options=opts).to_table(columns=COLUMNS[query], filter=flt)
            if query == "Q6":
                return [{"revenue": pc.sum(pc.multiply(t["l_extendedprice"], t["l_discount"])).as_py()}]
            # price * (1 - discount) is decimal(32, 4); times (1 + tax) would need precision 49, so
            # the product is narrowed first (a checked cast: an overflow raises)
            disc = pc.multiply(t["l_extendedprice"], pc.subtract(one, t["l_discount"])).cast(pa.decimal128(21, 4))
            t = t.append_column("disc", disc).append_column("charge", pc.multiply(disc, pc.add(one, t["l_tax"])))
            r = t.group_by(keys, use_threads=True).aggregate(
                [("l_quantity", "sum"), ("l_extendedprice", "sum"), ("disc", "sum"), ("charge", "sum"),
                 ("l_quantity", "mean"), ("l_extendedprice", "mean"), ("l_discount", "mean"), ([], "count_all")])
            return r.sort_by([(k, "ascending") for k in keys]).to_pylist()
        return run
    if side == "Polars on Parquet":
        import polars as pl

        def run():
            f = pl.col
            lf = pl.scan_parquet(parquet, storage_options=opts)
            # Polars keeps a decimal product at its left operand's scale (rounding every row), so
            # the money columns are summed as decimals and the expressions computed in doubles
            if query == "Q6":
                p = f("l_extendedprice").cast(pl.Float64) * f("l_discount").cast(pl.Float64)
                lf = lf.filter((f("l_shipdate") >= pl.date(1994, 1, 1)) & (f("l_shipdate") < pl.date(1995, 1, 1))
                               & f("l_discount").cast(pl.Float64).is_between(0.05, 0.07) & (f("l_quantity") < 24))
                return lf.select(p.sum().alias("revenue")).collect().to_dicts()
            price, disc = f("l_extendedprice").cast(pl.Float64), f("l_discount").cast(pl.Float64)
            lf = lf.filter(f("l_shipdate") <= pl.date(1998, 9, 2)).group_by(keys).agg(
                f("l_quantity").sum(), f("l_extendedprice").sum(), (price * (1 - disc)).sum().alias("d"),
                (price * (1 - disc) * (1 + f("l_tax").cast(pl.Float64))).sum().alias("c"),
                f("l_quantity").cast(pl.Float64).mean().alias("aq"), price.mean().alias("ap"),
                disc.mean().alias("ad"), pl.len())
            return lf.sort(keys).collect().to_dicts()
        return run
    import duckdb
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{extension}'")
    if side == "DuckDB on Parquet":
        q = text.format(src=f"read_parquet('{parquet}')")
    elif side == "DuckDB over lance_scan":
        q = text.format(src=f"lance_scan('{uri}')")
    elif side == "DuckDB over lance_scan(filter)":
        # the WHERE handed to lance_scan as Lance SQL instead of evaluated by DuckDB
        where = text.index("WHERE")
        rest = text.find("GROUP BY", where)
        q = (text[:where] + (text[rest:] if rest >= 0 else "")).format(src=f"lance_scan('{uri}', filter := $${flt}$$)")
    else:
        names = {"sum": "sum", "avg": "avg", "count_all": "count"}
        spec = ", ".join(f"'{names[fn]}({a or '*'})'" for a, fn, _ in aggs)
        gb = f"group_by := [{', '.join(repr(k) for k in keys)}], " if keys else ""
        q = f"SELECT * FROM lance_aggregate('{uri}', {gb}aggregates := [{spec}], filter := $${flt}$$)"
        if keys:
            q += " ORDER BY " + ", ".join(keys)

    def run():
        cur = con.execute(q)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
    return run


def scan_runner(side, cols, uri, parquet):
    """A function reading `cols` of the whole table to Arrow batches, returning their bytes."""
    if side == "lance-host":
        import lance_host as lh
        ds = lh.open(uri)
        return lambda: sum(b.nbytes for b in ds.scan(columns=cols))
    if side == "pylance":
        import lance
        return lambda: sum(b.nbytes for b in lance.dataset(uri).to_batches(columns=cols))
    if side == "Polars on Parquet":
        import polars as pl
        return lambda: pl.scan_parquet(parquet).select(cols).collect().to_arrow().nbytes
    import duckdb
    con = duckdb.connect()
    q = f"SELECT {', '.join(cols)} FROM read_parquet('{parquet}')"
    return lambda: sum(b.nbytes for b in con.execute(q).to_arrow_reader(65_536))


def child(args):
    import lance_host  # noqa: F401  first: the DuckDB extension then uses this library instance
    side = args.child
    if LANCE_DECODER in side:
        os.environ["LANCE_HOST_DECODER"] = "lance"
        args.child = side.replace(LANCE_DECODER, "")
    if DF_AGGREGATE in side:
        os.environ["LANCE_HOST_AGGREGATE"] = "datafusion"
        args.child = side.replace(DF_AGGREGATE, "")
    base = vm_kib("VmRSS")
    if args.scan:
        run = scan_runner(args.child, SCANS[args.scan], args.uri, args.parquet)
    else:
        run = query_runner(args.child, args.query, args.uri, args.parquet, args.extension)
    run()  # warm-up
    cpu, start = cpu_seconds(), time.perf_counter()
    out = run()
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    result = {"seconds": seconds, "cpu": cpu, "rss_growth_mib": (vm_kib("VmHWM") - base) / 1024,
              "worker_rss_mib": getattr(run, "worker_rss", 0) / 1024, "profile": lance_host.build_profile()}
    # which decoder read the lance-host sides' data (the session's counters; zero for the others)
    metrics = lance_host.metrics()
    result["own_decoder_reads"] = metrics["aggregate.reads_own_decoder"] + metrics["scan.reads_own_decoder"]
    if (args.child.startswith("lance-host") and ("(one call)" in args.child or args.scan)) or "lance_scan" in args.child:
        own = "LANCE_HOST_DECODER" not in os.environ
        assert (result["own_decoder_reads"] > 0) == own, (side, result["own_decoder_reads"])
    # which aggregate computed the one-call sides' partial states
    result["grouped_by_library"] = metrics["aggregate.grouped_by_library"]
    if args.child == "lance-host (one call)" and not args.scan:
        own = "LANCE_HOST_DECODER" not in os.environ and "LANCE_HOST_AGGREGATE" not in os.environ
        assert (result["grouped_by_library"] > 0) == own, (side, result["grouped_by_library"])
    if args.scan:
        result["bytes"] = out
    else:
        keys = KEYS[args.query]  # key columns first (pyarrow puts them last), groups in key order
        rows = [[r[k] for k in keys] + [v for n, v in r.items() if n not in keys] for r in out]
        result["rows"] = sorted([[v if isinstance(v, str) else float(v) for v in r] for r in rows], key=str)
    print("RESULT " + json.dumps(result))


_DS = None


def _worker_init(uri, opts=None, data_cache=True):
    global _DS
    import lance_host as lh
    if not data_cache:
        session = lh.SessionOptions.defaults()
        session.data_cache_disabled = True
        lh.configure_session(session)
    _DS = lh.open(uri, storage_options=opts)


def _worker_partial(job):
    import lance_host as lh
    import pyarrow as pa
    split, aggs, keys, flt = job
    part, _ = _DS.aggregate_split(lh.Split.from_bytes(split), _lh_aggs(aggs), group_by=keys, filter=flt)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, part.schema) as w:
        w.write_table(part)
    return sink.getvalue().to_pybytes(), vm_kib("VmHWM")


def floors(work):
    """GB per CPU-second of one thread copying 1 GiB of memory, and of reading the table's data
    files from the page cache (read twice; the second pass is timed)."""
    import numpy as np
    src = np.ones(1 << 30, dtype=np.uint8)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    copies = []
    for _ in range(5):
        c = cpu_seconds()
        np.copyto(dst, src)
        copies.append(src.nbytes / (cpu_seconds() - c) / 1e9)
    del src, dst
    files = [p for p in (work / "lineitem.lance" / "data").iterdir()]
    buf = bytearray(64 << 20)
    view = memoryview(buf)
    reads = []
    for attempt in range(4):
        total, c = 0, cpu_seconds()
        for p in files:
            fd = os.open(p, os.O_RDONLY)
            try:
                while n := os.readv(fd, [view]):
                    total += n
            finally:
                os.close(fd)
        if attempt:
            reads.append(total / (cpu_seconds() - c) / 1e9)
    return statistics.median(copies), statistics.median(reads)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=6_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--work", default=None, help="reuse a directory holding the generated table")
    ap.add_argument("--child")
    ap.add_argument("--query")
    ap.add_argument("--scan")
    ap.add_argument("--uri")
    ap.add_argument("--parquet")
    ap.add_argument("--extension", default=os.environ.get("LANCE_HOST_DUCKDB_EXTENSION"))
    args = ap.parse_args()
    if args.child:
        return child(args)
    from report import publish, rotated, spread

    work = Path(args.work or tempfile.mkdtemp(prefix="lh-tpch-"))
    uri, parquet = str(work / "lineitem.lance"), str(work / "lineitem.parquet")
    if not Path(uri).exists():
        t0 = time.perf_counter()
        generate(uri, parquet, args.rows)
        print(f"generated {args.rows:,} rows in {time.perf_counter() - t0:.0f} s", flush=True)

    def one(cmd):
        out = subprocess.run([sys.executable, __file__, "--uri", uri, "--parquet", parquet,
                              "--extension", args.extension or ""] + cmd, capture_output=True, text=True, timeout=1800)
        line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
        if out.returncode != 0 or not line:
            raise SystemExit(f"{cmd} failed:\n{out.stderr[-3000:]}")
        return json.loads(line[0][7:])

    load = os.getloadavg()
    results = {q: {s: [] for s in SIDES} for q in QUERIES}
    for query in QUERIES:
        answer = None
        for run in range(args.runs):
            for side in rotated(SIDES, run):
                r = one(["--child", side, "--query", query])
                rows = r.pop("rows")
                answer = answer if answer is not None or side != SIDES[0] else rows
                if answer is not None and not same(rows, answer):
                    raise SystemExit(f"{query}: {side} answered differently:\n{rows}\nvs\n{answer}")
                results[query][side].append(r)
                print(query, side, f"{r['seconds']:.3f} s", f"{r['cpu']:.2f} CPU-s", r["profile"], flush=True)
    scans = {s: {side: [] for side in SCAN_SIDES} for s in SCANS}
    for scan in SCANS:
        for run in range(args.runs):
            for side in rotated(SCAN_SIDES, run):
                r = one(["--child", side, "--scan", scan])
                scans[scan][side].append(r)
                print(scan, side, f"{r['seconds']:.3f} s", f"{r['bytes'] / r['cpu'] / 1e9:.2f} GB/CPU-s", flush=True)
    copy, read = floors(work)
    load_after = os.getloadavg()
    (ROOT / "TPCH.json").write_text(json.dumps({"rows": args.rows, "runs": args.runs, "results": results,
                                                "scans": scans, "floors": {"copy": copy, "page_cache_read": read},
                                                "load": [load, load_after]}, indent=1))
    profile = results["Q1"][SIDES[0]][0]["profile"]
    med = statistics.median
    lines = [
        "# TPC-H Q1 and Q6 as written, and scans against the floors",
        "",
        f"`python3 bench/tpch.py --rows {args.rows} --runs {args.runs}` on this 2-core machine (load average "
        f"{load[0]:.2f} before, {load_after[0]:.2f} after), library build profile **{profile}**. The lineitem-shaped "
        f"table of bench/aggregates.py: {args.rows:,} rows, money as decimal(15,2), written by pylance with its "
        "defaults (1M-row fragments), and the same rows in one Parquet file (pyarrow's defaults). Median (min–max) "
        f"of {args.runs} alternating runs, each a fresh process (one warm-up execution, then the timed one, page "
        "cache warm); CPU is the process's user + system time during the run (for the 2-worker side the "
        "coordinator's only); peak RSS growth is VmHWM above the resident size after imports. Every side's answer "
        "equals lance-host's one-call answer in every run.",
        "",
        "Q1 and Q6 as TPC-H writes them: Q1 groups by return flag and line status and sums "
        f"`{DISC}` and `{CHARGE}`; Q6 sums `l_extendedprice * l_discount` over a year, a discount band and "
        "quantity < 24.",
        "",
        "| query | side | seconds | CPU-s | × lance-host (one call) | peak RSS growth MiB |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for query in QUERIES:
        ref = med(r["seconds"] for r in results[query][SIDES[0]])
        for side in SIDES:
            rs = results[query][side]
            secs = [r["seconds"] for r in rs]
            rss = f"{med(r['rss_growth_mib'] for r in rs):.0f}"
            if rs[0]["worker_rss_mib"]:
                rss += f" (workers {med(r['worker_rss_mib'] for r in rs):.0f})"
            lines.append(f"| {query} | {side} | {spread(secs, 3)} | {med(r['cpu'] for r in rs):.2f} | "
                         f"{med(secs) / ref:.2f} | {rss} |")
    lines += [
        "",
        f"Scans of the whole table to Arrow batches; floors on this machine: one thread copies memory at "
        f"**{copy:.1f} GB per CPU-second**, reading the table's files from the page cache runs at "
        f"**{read:.1f} GB per CPU-second**.",
        "",
        "| columns | reader | seconds | Arrow GB | GB per CPU-second | peak RSS growth MiB |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for scan in SCANS:
        for side in SCAN_SIDES:
            rs = scans[scan][side]
            lines.append(f"| {scan} | {side} | {spread([r['seconds'] for r in rs], 3)} | {rs[0]['bytes'] / 1e9:.2f} | "
                         f"{spread([r['bytes'] / r['cpu'] / 1e9 for r in rs], 2)} | "
                         f"{med(r['rss_growth_mib'] for r in rs):.0f} |")
    lines += [
        "",
        "The sides marked \"Lance's decoder\" run with lance-host's own page decoder turned off "
        "(`LANCE_HOST_DECODER=lance`): the same plan over Lance's scanner, which shows what the decoder "
        "(src/decode, docs/aggregates.md) changes; every run checks which decoder read the data. "
        "The side marked \"DataFusion's aggregate\" runs with the library's own grouping turned off "
        "(`LANCE_HOST_AGGREGATE=datafusion`): DataFusion's hash aggregate over the same decoded rows, which shows "
        "what the grouping (src/aggregate/fused.rs, docs/aggregates.md) changes; every run checks which one "
        "computed the states. "
        "Where the sides do different work: lance-host computes the expressions and sums inside its scan, 1,024 "
        "rows at a time over 128-bit integers (exact decimals, every operation checked), and keeps only the groups; pylance + pyarrow materializes every matching row, "
        "then computes and groups in pyarrow (exact decimals; the Q1 product is narrowed to decimal(21,4) by a "
        "checked cast, as pyarrow cannot multiply to precision 49); Polars computes the two expression sums and the "
        "averages in doubles (its decimal product keeps the left operand's scale, rounding every row); DuckDB "
        "reads Parquet, a different file format, with row-group statistics it can skip by (the tables' dates are "
        "random, so nothing is skipped here), and over `lance_scan` receives every row of the columns through the "
        "Arrow C stream and filters itself, over `lance_scan(filter)` hands the WHERE to lance-host as Lance SQL "
        "(`filter :=`; the query has no WHERE of DuckDB's) and receives only the kept rows. The scans' byte counts differ by reader where Arrow layouts differ "
        "(string views, large offsets).",
    ]
    publish(ROOT / "TPCH.md", lines)


if __name__ == "__main__":
    main()
