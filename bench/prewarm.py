"""Prewarm benchmark: what `lance_dataset_prewarm_index` buys a process serving vector queries
from an `s3://` table (served by a local S3-compatible server), written to bench/PREWARM.md.

    python3 bench/prewarm.py --bin <lance-host-bench> [--rows N] [--runs 2]

For nprobes 1, 8 and 32, processes alternate between 'cold' (the 20 query vectors, no prewarm)
and 'warm' (prewarm of every segment of the index, then the same 20 queries). Per query the
server's access log gives the requests to index files, to data files (row fetch and re-rank
reads) and to metadata (manifests, deletion files); the library's per-stream statistics give the
bytes (index files / everything else). Also: per-segment prewarm of one split's segment (then
that split's searches), and the latency of a foreground query thread while a prewarm runs next
to it versus the same thread without a prewarm.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from run import ANSI, start_moto, upload  # noqa: E402

REQ = re.compile(r'"(GET|HEAD|PUT|POST|DELETE) (\S+)')


def log_requests(log):
    """(method, path) of every request line of the server's access log."""
    with open(log, errors="replace") as f:
        return [(m.group(1), m.group(2)) for m in (REQ.search(ANSI.sub("", l)) for l in f) if m]


def classify(requests):
    out = {"index": 0, "data": 0, "metadata": 0}
    for _, p in requests:
        if "/_indices/" in p:
            out["index"] += 1
        elif "/data/" in p:
            out["data"] += 1
        else:
            out["metadata"] += 1
    return out


def run(cmd, env, log, classify=classify):
    """Run one process with the MARK handshake; return its JSON result and, per marked span,
    `classify` of the requests the server logged in it."""
    p = subprocess.Popen(cmd, env=dict(os.environ, **env, BENCH_HANDSHAKE="1"), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    spans, begin, result = {}, None, None
    for line in p.stdout:
        line = line.strip()
        if line.startswith("MARK begin "):
            begin = len(log_requests(log))
        elif line.startswith("MARK end "):
            time.sleep(0.15)  # let the server finish logging
            spans[line[len("MARK end "):]] = classify(log_requests(log)[begin:])
        elif line.startswith("{") or line.startswith("["):
            result = json.loads(line)
        if line.startswith("MARK "):
            p.stdin.write("\n")
            p.stdin.flush()
    err = p.stderr.read()
    if p.wait() != 0 or result is None:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err[-4000:]}")
    return result, spans


def med(xs):
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--data", default=str(Path.home() / ".cache/lance-host/bench"))
    ap.add_argument("--report", default=str(HERE / "PREWARM.md"))
    args = ap.parse_args()
    data = Path(args.data) / f"rows{args.rows}"
    table, facts = data / "bench.lance", data / "facts.json"
    if not facts.exists():
        subprocess.run([args.bin, "write", str(table), str(facts), str(args.rows)], check=True)
    meta = json.loads(facts.read_text())
    idx_bytes = sum(p.stat().st_size for p in (table / "_indices").rglob("*") if p.is_file())
    uri = "s3://bench/bench.lance"
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        proc, ep, log = start_moto(tmp)
        env = {"BENCH_S3_ENDPOINT": ep}
        try:
            print("==> uploading the table to the local S3-compatible server", file=sys.stderr, flush=True)
            upload(ep, table, "bench", "bench.lance")
            plan = [(m, n) for n in (1, 8, 32) for m in ("cold", "warm")] + [("segment", 8)]
            for r in range(args.runs):
                for mode, n in plan if r % 2 == 0 else [(m, n) for n in (1, 8, 32) for m in ("warm", "cold")] + [("segment", 8)]:
                    print(f"==> {mode} nprobes={n} run {r + 1}", file=sys.stderr, flush=True)
                    res, res["spans"] = run([args.bin, "prewarm", mode, str(n), uri, str(facts)], env, log)
                    results.setdefault((mode, n), []).append(res)
                for w in ("1", "0") if r % 2 == 0 else ("0", "1"):
                    print(f"==> interference prewarm={w} run {r + 1}", file=sys.stderr, flush=True)
                    res, res["spans"] = run([args.bin, "prewarm", "interference", "8", uri, str(facts)], dict(env, BENCH_PREWARM=w), log)
                    results.setdefault(("interference", w), []).append(res)
        finally:
            proc.terminate()

    L = ["# Prewarm benchmark", ""]
    L.append(
        f"Generated by `bench/prewarm.py` (run by `bench/bench.sh`) on {time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} cores, release build. Table: the benchmark table of bench/REPORT.md "
        f"({meta['rows']:,} rows, IVF_PQ `vec_idx` in 2 segments, {idx_bytes / 2**20:.0f} MiB of index "
        f"files, plus a {meta['tail_rows']:,}-row unindexed tail) on `s3://` through a local "
        f"S3-compatible server (moto). Query: plan, every split (index segments with deferred re-rank, "
        f"the tail flat), merge, one global re-rank (refine factor 4), take the winners' `id` — "
        f"k = 10, the 20 query vectors of the table's facts. {args.runs} processes per row, modes "
        f"alternating; each process starts with empty caches. Requests come from the server's "
        f"access log per query (index files / data files / metadata); bytes from the library's "
        f"per-stream statistics (index files / everything else)."
    )
    L.append("")
    L.append("### Prewarm of every segment")
    L.append("")
    L.append("| nprobes | prewarm ms | prewarm requests (index / other) | prewarm MiB read | index-cache MiB after | peak RSS MiB |")
    L.append("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in (1, 8, 32):
        rs = results[("warm", n)]
        pw = [r["prewarm"] for r in rs]
        L.append(
            f"| {n} | {med(p['ms'] for p in pw):.0f} | "
            f"{med(r['spans']['prewarm']['index'] for r in rs):.0f} / "
            f"{med(r['spans']['prewarm']['data'] + r['spans']['prewarm']['metadata'] for r in rs):.0f} | "
            f"{med(p['read_bytes'] for p in pw) / 2**20:.1f} | "
            f"{med(r['index_cache_bytes'] for r in rs) / 2**20:.1f} | {med(r['maxrss_kb'] for r in rs) / 1024:.0f} |"
        )
    L.append("")
    L.append("### Per query: cold process versus after the prewarm (medians over the 20 queries × runs)")
    L.append("")
    L.append("| nprobes | mode | latency ms (median) | first query ms | index requests | data requests | metadata requests | index KiB | other KiB | recall@10 | peak RSS MiB |")
    L.append("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    summary = {}
    for n in (1, 8, 32):
        for mode in ("cold", "warm"):
            rs = results[(mode, n)]
            qs = [(q, r["spans"][f"q{i}"]) for r in rs for i, q in enumerate(r["queries"])]
            row = {
                "ms": med(q["ms"] for q, _ in qs),
                "first": med(r["queries"][0]["ms"] for r in rs),
                "index": med(s["index"] for _, s in qs),
                "index_total": sum(s["index"] for _, s in qs),
                "data": med(s["data"] for _, s in qs),
                "meta": med(s["metadata"] for _, s in qs),
                "ikib": med(q["index_bytes"] for q, _ in qs) / 1024,
                "okib": med(q["other_bytes"] for q, _ in qs) / 1024,
                "recall": statistics.mean(q["recall"] for q, _ in qs),
                "rss": med(r["maxrss_kb"] for r in rs) / 1024,
            }
            summary[(mode, n)] = row
            L.append(
                f"| {n} | {mode} | {row['ms']:.0f} | {row['first']:.0f} | {row['index']:.0f} (total {row['index_total']}) | "
                f"{row['data']:.0f} | {row['meta']:.0f} | {row['ikib']:.0f} | {row['okib']:.0f} | {row['recall']:.3f} | {row['rss']:.0f} |"
            )
    L.append("")
    rs = results[("segment", 8)]
    qs = [(q, r["spans"][f"q{i}"]) for r in rs for i, q in enumerate(r["queries"])]
    L.append("### Per-segment prewarm (the first index-segment split's segment only), then that split's searches (nprobes 8)")
    L.append("")
    L.append("| prewarm ms | prewarm index requests | prewarm MiB read | index-cache MiB after | query ms (median) | index requests per query (total) | data requests per query |")
    L.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    L.append(
        f"| {med(r['prewarm']['ms'] for r in rs):.0f} | {med(r['spans']['prewarm']['index'] for r in rs):.0f} | "
        f"{med(r['prewarm']['read_bytes'] for r in rs) / 2**20:.1f} | {med(r['index_cache_bytes'] for r in rs) / 2**20:.1f} | "
        f"{med(q['ms'] for q, _ in qs):.0f} | {med(s['index'] for _, s in qs):.0f} ({sum(s['index'] for _, s in qs)}) | "
        f"{med(s['data'] for _, s in qs):.0f} |"
    )
    L.append("")
    L.append("### A foreground query thread while a prewarm runs next to it (nprobes 8, cold process)")
    L.append("")
    during, same_without = [], []
    for r_with, r_without in zip(results[("interference", "1")], results[("interference", "0")]):
        s, e = r_with["prewarm"]["start_ms"], r_with["prewarm"]["end_ms"]
        idx = [i for i, q in enumerate(r_with["queries"]) if q["start_ms"] < e and q["start_ms"] + q["ms"] > s]
        during += [r_with["queries"][i]["ms"] for i in idx]
        same_without += [r_without["queries"][i]["ms"] for i in idx]
    after = [q["ms"] for r in results[("interference", "1")] for q in r["queries"] if q["start_ms"] > r["prewarm"]["end_ms"]]
    later_without = [q["ms"] for r in results[("interference", "0")] for q in r["queries"][-10:]]
    L.append("| queries | median ms with a prewarm running | the same query positions without a prewarm | median ms after the prewarm | the last 10 queries without a prewarm |")
    L.append("| ---: | ---: | ---: | ---: | ---: |")
    L.append(f"| {len(during)} | {med(during):.0f} | {med(same_without):.0f} | {med(after):.0f} | {med(later_without):.0f} |")
    L.append("")
    L.append("## Reading")
    L.append("")
    L.append(
        f"- Latencies are medians over {args.runs} processes per mode (20 queries each); their spread is not "
        "reported, so latency differences between the modes are indicative, not established. The request "
        "counts are exact."
    )
    w8, c8 = summary[("warm", 8)], summary[("cold", 8)]
    L.append(
        f"- After the prewarm, queries made {sum(summary[('warm', n)]['index_total'] for n in (1, 8, 32))} "
        f"index-file requests in total over all {3 * 20 * args.runs} measured queries; the cold processes made "
        f"{sum(summary[('cold', n)]['index_total'] for n in (1, 8, 32))}."
    )
    L.append(
        f"- What remains per warm query are data-file reads (the re-rank's vectors, the flat tail, the winners' ids) "
        f"and metadata: at nprobes 8, {w8['data']:.0f} data and {w8['meta']:.0f} metadata requests (cold: "
        f"{c8['index']:.0f} index, {c8['data']:.0f} data, {c8['meta']:.0f} metadata). Prewarm does not warm data files."
    )
    L.append(
        "- The prewarm reads the whole index once (every partition of every segment) in Lance's bounded "
        "windows; a process that only ever probes a few partitions reads less without it, at the price of "
        "the first queries' latency."
    )
    Path(args.report).write_text("\n".join(L) + "\n")
    Path(args.report).with_suffix(".json").write_text(json.dumps(
        {f"{k[0]}:{k[1]}": v for k, v in results.items()}, indent=1))
    print(f"wrote {args.report}", file=sys.stderr)


if __name__ == "__main__":
    main()
