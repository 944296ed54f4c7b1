"""Data cache benchmark on `s3://` (a local S3-compatible server): lance-host with its data cache
(memory + disk tier), lance-host without it, and pylance, side by side in one run, cold, warm
(same process) and after a restart (a new process on the same disk tier), and write
bench/DATACACHE.md.

    python3 bench/datacache.py --bin <lance-host-bench> [--rows N] [--runs 3] [--iters 3]

Per process: the first iteration is the cold one (measured, with its requests), then the
measured warm iterations (scans and take: --iters; search: the 20 query vectors). The
'restart' side is a second lance-host process configured with the same disk-tier directory
that the 'cached' process of the same run filled. Requests are what the server logged per
iteration; bytes per iteration are the library's own counts (lance-host sides only).
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402  (the shared helpers of bench/run.py)

WORKS = [
    ("scan", "full scan, 5 columns without `vec`"),
    ("filter", "filtered scan `price < 10`, 2 columns"),
    ("take", "take 1,000 row ids (2 columns)"),
    ("search8", "vector search k=10 nprobes=8 refine 4 (20 queries)"),
]
# Budgets of the cached sides: large enough for the working set of every work at once.
MEM = 3 << 30
DISK = 6 << 30


QUERIES = 20


def side_run(args, side, work, uri, facts, log, env):
    """One process. Scans and take: the first iteration is cold, the next --iters warm. Search:
    the first pass over the 20 query vectors is 'cold' (each query's partitions and candidates
    read for the first time; median per query), the second pass over the same vectors 'warm'."""
    cmd = run.side_cmd("pylance" if side == "pylance" else "host", args, work, uri, facts)
    env = dict(env, BENCH_ITERS=str(args.iters), BENCH_COLD="1", BENCH_PASSES="2")
    res = run.run_side(cmd, env, log)
    req = res["requests"]
    if work.startswith("search"):
        res["cold_ms"] = statistics.median(res["ms"][:QUERIES])
        res["cold_requests"] = statistics.median(req[1:1 + QUERIES])
        res["ms"] = res["ms"][QUERIES:]
        res["warm_requests"] = req[1 + QUERIES:]
    else:
        res["cold_requests"] = req[0]
        res["warm_requests"] = req[1:]
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--data", default=str(Path.home() / ".cache/lance-host/bench"))
    ap.add_argument("--works", default=",".join(w for w, _ in WORKS))
    ap.add_argument("--report", default=str(HERE / "DATACACHE.md"))
    args = ap.parse_args()
    data = Path(args.data) / f"rows{args.rows}"
    data.mkdir(parents=True, exist_ok=True)
    table, facts = data / "bench.lance", data / "facts.json"
    if not facts.exists():
        print(f"==> writing {args.rows} rows to {table}", file=sys.stderr, flush=True)
        subprocess.run([args.bin, "write", str(table), str(facts), str(args.rows)], check=True)
    meta = json.loads(facts.read_text())
    size = sum(p.stat().st_size for p in table.rglob("*") if p.is_file())
    works = [w for w in args.works.split(",") if w]
    results = {w: {s: [] for s in ("cached", "restart", "nocache", "pylance")} for w in works}
    with tempfile.TemporaryDirectory() as tmp:
        proc, ep, log = run.start_moto(tmp)
        try:
            print("==> uploading the table to the local S3-compatible server", file=sys.stderr, flush=True)
            run.upload(ep, table, "bench", "bench.lance")
            uri = "s3://bench/bench.lance"
            base = {"BENCH_S3_ENDPOINT": ep}
            for work in works:
                for r in range(args.runs):
                    cache_dir = Path(tmp) / f"cache-{work}-{r}"
                    cached = dict(base, BENCH_DATA_CACHE="on", BENCH_DATA_CACHE_MEM=str(MEM),
                                  BENCH_DATA_CACHE_DIR=str(cache_dir), BENCH_DATA_CACHE_DISK=str(DISK))
                    sides = [("pylance", base), ("nocache", dict(base, BENCH_DATA_CACHE="off")), ("cached", cached)]
                    sides = sides[r % 3:] + sides[: r % 3]
                    # The restart always follows the process that filled its directory.
                    sides.insert(next(i for i, s in enumerate(sides) if s[0] == "cached") + 1, ("restart", cached))
                    for name, env in sides:
                        res = side_run(args, name, work, uri, str(facts), log, env)
                        results[work][name].append(res)
                        print(f"  {work} run {r + 1} {name}: cold {res['cold_ms']:.0f} ms "
                              f"({res['cold_requests']} req), warm {statistics.median(res['ms']):.1f} ms "
                              f"({statistics.median(res['warm_requests'])} req)", file=sys.stderr, flush=True)
                    shutil.rmtree(cache_dir, ignore_errors=True)
        finally:
            proc.terminate()
    write_report(args, meta, size, works, results)


def med_of(results, key):
    return statistics.median(statistics.median(r[key]) if isinstance(r[key], list) else r[key] for r in results)


def write_report(args, meta, size, works, results):
    desc = dict(WORKS)
    lines = ["# lance-host data cache on `s3://`", ""]
    lines.append(
        f"Generated by `bench/datacache.py` on {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, release "
        f"profile (mimalloc). Table: {meta['rows']:,} rows, {size / 2**30:.2f} GiB, {meta['fragments']} fragments, "
        f"on a local S3-compatible server (moto, Python: slow per request, so latency mostly follows requests). "
        f"Sides: **cached** = lance-host with a {MEM >> 30} GiB memory tier and a {DISK >> 30} GiB disk tier in a "
        f"fresh directory; **restart** = a new lance-host process on the directory the cached process filled; "
        f"**no cache** = lance-host with `data_cache_disabled`; **pylance** 14.0.2. Each side runs in its own "
        f"process, {args.runs} runs, sides rotating. Scans and take: 'cold' is a process's first iteration, "
        f"'warm' the median of the next {args.iters}. Search: 'cold' is the median query of a first pass over "
        f"the 20 query vectors (after one warm-up query), 'warm' the median query of a second pass over the "
        f"same vectors. Cells are medians over the runs."
    )
    lines.append("")
    lines.append("| work | side | cold ms | warm ms | requests cold | requests warm (per iteration) | peak RSS MiB |")
    lines.append("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for w in works:
        for side, label in (("cached", "lance-host, data cache"), ("restart", "lance-host, restarted on the disk tier"),
                            ("nocache", "lance-host, no data cache"), ("pylance", "pylance")):
            rs = results[w][side]
            if not rs:
                continue
            cold = statistics.median(r["cold_ms"] for r in rs)
            warm = med_of(rs, "ms")
            cr = statistics.median(r["cold_requests"] for r in rs)
            wr = statistics.median(statistics.median(r["warm_requests"]) for r in rs)
            rss = statistics.median(r["maxrss_kb"] for r in rs) / 1024
            lines.append(f"| {desc[w]} | {label} | {run.fmt_ms(cold)} | {run.fmt_ms(warm)} | {cr:g} | {wr:g} | {rss:.0f} |")
    lines.append("")
    lines.append("| work | warm: pylance / cached (min–max) | restart: pylance / restart-cold (min–max) | warm requests: no cache / pylance |")
    lines.append("| --- | ---: | ---: | ---: |")
    for w in works:
        r = results[w]
        if not (r["cached"] and r["pylance"]):
            continue
        warm = sorted(statistics.median(p["ms"]) / statistics.median(c["ms"]) for p, c in zip(r["pylance"], r["cached"]))
        rest = sorted(statistics.median(p["ms"]) / x["cold_ms"] for p, x in zip(r["pylance"], r["restart"]))
        nc = statistics.median(statistics.median(x["warm_requests"]) for x in r["nocache"])
        py = statistics.median(statistics.median(x["warm_requests"]) for x in r["pylance"])
        lines.append(
            f"| {desc[w]} | {statistics.median(warm):.1f}× ({warm[0]:.1f}–{warm[-1]:.1f}) | "
            f"{statistics.median(rest):.1f}× ({rest[0]:.1f}–{rest[-1]:.1f}) | {nc:g} / {py:g} |"
        )
    lines.append("")
    lines.append("Data cache figures of the cached and restarted processes (session stats at the end, medians):")
    lines.append("")
    lines.append("| work | side | blocks hit | blocks missed | bytes from cache | bytes from storage | memory tier bytes | disk tier bytes |")
    lines.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for w in works:
        for side in ("cached", "restart"):
            rs = [r for r in results[w][side] if r.get("data_cache")]
            if not rs:
                continue
            m = lambda k: statistics.median(r["data_cache"][k] for r in rs)  # noqa: E731
            lines.append(
                f"| {desc[w]} | {side} | {m('hits'):,.0f} | {m('misses'):,.0f} | {m('hit_bytes') / 2**20:,.1f} MiB | "
                f"{m('storage_bytes') / 2**20:,.1f} MiB | {m('memory_bytes') / 2**20:,.1f} MiB | {m('disk_bytes') / 2**20:,.1f} MiB |"
            )
    lines.append("")
    lines.append("## Where the sides do different work")
    lines.append("")
    lines.append(
        "- Search: lance-host runs the recommended distributed path (plan, every index segment searched "
        "with deferred refine, one exact re-rank of the merged candidates, the flat tail merged, the "
        "winners' `id` taken by row id); pylance runs one global search with `refine_factor` projecting "
        "`id`. Both probe the same partitions and re-rank the same number of candidates."
    )
    lines.append(
        "- Requests are the server's log lines during an iteration (GET and HEAD of every file, manifests "
        "included). A restarted process opens the table (manifest reads) before its cold iteration, as "
        "every side does."
    )
    lines.append(
        "- The cached sides' budgets hold the whole working set; with a smaller memory tier, repeated "
        "scans larger than the budget evict each other and refetch (see the README's capacity planning)."
    )
    Path(args.report).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.report}", file=sys.stderr)


if __name__ == "__main__":
    main()
