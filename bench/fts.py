"""Full-text search benchmark: distributed lance-host (plan once; per query the corpus statistics,
every split searched with them, merged) against pylance's single-process full-text search, on
the same synthetic corpus, side by side in one run, alternating processes. Writes bench/FTS.md.

    python3 bench/fts.py --bin <lance-host-bench> [--docs 1000000] [--runs 3]

The corpus (made here, seeded): a Zipf-distributed vocabulary of 50,000 words, documents of 8
to 60 words; pylance writes it and builds an INVERTED index (with positions) on 85% of the rows,
indexes the next 10% as a second segment (optimize_indices) and leaves 5% unindexed.
"""

import argparse
import json
import re
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from report import publish

VOCAB = 50_000


def words(n_docs, seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(8, 61, size=n_docs)
    ranks = rng.zipf(1.2, size=int(lengths.sum()))
    ranks = np.where(ranks > VOCAB, rng.integers(1, VOCAB, size=ranks.size), ranks)
    return lengths, ranks


def docs_table(start, n, seed):
    vocab = np.array([f"w{i}" for i in range(VOCAB + 1)], dtype=object)
    parts = []
    for c, at in enumerate(range(0, n, 50_000)):
        m = min(50_000, n - at)
        lengths, ranks = words(m, seed * 1000 + c)
        toks = vocab[ranks]
        ends = np.cumsum(lengths)
        texts = [" ".join(toks[e - L:e]) for e, L in zip(ends, lengths)]
        parts.append(pa.table({"id": pa.array(np.arange(start + at, start + at + m), pa.int64()),
                               "text": pa.array(texts)}))
    return pa.concat_tables(parts)


def storage_options(uri):
    ep = os.environ.get("BENCH_S3_ENDPOINT")
    if ep and uri.startswith("s3://"):
        return {"aws_endpoint": ep, "aws_region": "us-east-1", "aws_access_key_id": "testing",
                "aws_secret_access_key": "testing", "allow_http": "true",
                "aws_virtual_hosted_style_request": "false"}
    return None


def write_corpus(uri, n_docs, index_tail=False):
    import lance
    a, b = int(n_docs * 0.85), int(n_docs * 0.95)
    kw = dict(max_rows_per_file=100_000, storage_options=storage_options(uri))
    t0 = time.time()
    ds = lance.write_dataset(docs_table(0, a, 1), uri, **kw)
    ds.create_scalar_index("text", "INVERTED", with_position=True, name="text_idx")
    ds = lance.write_dataset(docs_table(a, b - a, 2), uri, mode="append", **kw)
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    ds = lance.write_dataset(docs_table(b, n_docs - b, 3), uri, mode="append", **kw)
    if index_tail:
        ds.optimize.optimize_indices(num_indices_to_merge=0)
    return time.time() - t0


def make_queries(uri):
    import lance
    ds = lance.dataset(uri, storage_options=storage_options(uri))
    sample = ds.take(list(range(0, 2000, 40)), columns=["text"])["text"].to_pylist()
    single = ["w1", "w2", "w5", "w17", "w60", "w250", "w1000", "w4000", "w20000", "w49999"]
    rng = np.random.default_rng(5)
    three = [" ".join(rng.choice([f"w{r}" for r in (1, 3, 8, 30, 100, 400, 2000, 9000)], 3, replace=False))
             for _ in range(10)]
    phrases = []
    for text in sample[:10]:
        w = text.split()
        phrases.append(" ".join(w[2:4]))
    return [[q, 0] for q in single + three] + [[q, 2] for q in phrases]


def category(i):
    return "single-term" if i < 10 else ("3-term" if i < 20 else "phrase")


def pylance_side(uri, queries_path):
    import lance
    from lance.query import MatchQuery, PhraseQuery
    ds = lance.dataset(uri, storage_options=storage_options(uri))
    out = []
    for text, kind in json.load(open(queries_path)):
        q = PhraseQuery(text, "text") if kind == 2 else MatchQuery(text, "text")
        t = time.perf_counter()
        r = ds.to_table(full_text_query=q, limit=10, with_row_id=True, columns=["id", "_score"])
        ms = (time.perf_counter() - t) * 1e3
        out.append({"text": text, "kind": kind, "ms": ms, "ids": r["_rowid"].to_pylist(),
                    "scores": r["_score"].to_pylist()})
    print(json.dumps({"side": "pylance", "queries": out}))


def run_side(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if p.returncode != 0:
        sys.exit(f"{cmd} failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=os.path.expanduser("~/.cache/lance-host/bench"))
    ap.add_argument("--s3-docs", type=int, default=200_000, help="corpus size on s3:// (0 = skip)")
    ap.add_argument("--only-s3", action="store_true", help="rerun only the s3:// section of FTS.md")
    ap.add_argument("--side", help=argparse.SUPPRESS)
    ap.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.side == "pylance":
        return pylance_side(*a.rest)
    if a.only_s3:
        report = Path(__file__).with_name("FTS.md")
        text = report.read_text()
        head = (text[:text.index("\n## s3://")] if "\n## s3://" in text else text).rstrip("\n") + "\n"
        report.write_text(head + "\n" + "\n".join(s3_section(a)) + "\n")
        print(report.read_text())
        return
    lines = ["# Full-text search: distributed lance-host vs pylance", ""]
    lines.append(f"Corpus: {a.docs:,} documents (Zipf vocabulary of {VOCAB:,} words, 8-60 words each), written "
                 "by pylance, INVERTED index with positions; release build; "
                 f"{a.runs} alternating runs of each side (A B A B), each run a fresh process doing all "
                 "30 queries once (10 single-term, 10 three-term, 10 two-word phrases; k = 10). "
                 "Per side and category: median and p95 over all queries of all runs.")
    lines.append("")
    lines.append("lance-host does per query what a distributed engine does, in one thread: the corpus "
                 "statistics (each segment's stored statistics; the unindexed fragments tokenized), then "
                 "each split searched with them (returning `_rowid` and `_score`), then the merge, then "
                 "one take of the winners' `id` (pylance returns `id` too). **Different work:** with an unindexed "
                 "tail, lance-host tokenizes each unindexed fragment once per process (the first query's "
                 "statistics pass; the statistics and flat splits of every query then read the tokenized "
                 "fragment from the session's index cache), where pylance tokenizes the tail in every query; "
                 "the first query of each run is reported on its own. The second table has no unindexed tail.")
    for variant, index_tail in [("2 segments (85% + 10%), 5% unindexed", False),
                                ("3 segments, everything indexed", True)]:
        uri = str(Path(a.dir) / f"fts{a.docs}{'_indexed' if index_tail else ''}.lance")
        build_s = None
        if not Path(uri).exists():
            build_s = write_corpus(uri, a.docs, index_tail)
        lines += section(a, uri, variant, build_s)
    if a.s3_docs:
        lines += s3_section(a)
    publish(Path(__file__).with_name("FTS.md"), lines)


def same_answer(h, p):
    """Scores equal within 1e-5 relative position by position; rows above the 10th score equal."""
    if len(h["scores"]) != len(p["scores"]):
        return False
    if any(abs(x - y) > 1e-5 * max(abs(y), 1e-6) for x, y in zip(h["scores"], p["scores"])):
        return False
    if not p["scores"]:
        return True
    last = p["scores"][-1] * (1 + 1e-5)
    above = lambda q: {r for r, s in zip(q["ids"], q["scores"]) if s > last}
    return above(h) == above(p)


def section(a, uri, variant, build_s):
    qpath = uri + ".queries.json"
    queries = make_queries(uri)
    json.dump(queries, open(qpath, "w"))
    host_runs, py_runs = [], []
    for _ in range(a.runs):
        host_runs.append(run_side([a.bin, "fts", uri, qpath]))
        py_runs.append(run_side([sys.executable, __file__, "--side", "pylance", uri, qpath]))
    warm = run_side([a.bin, "fts", uri, qpath], {"BENCH_PREWARM": "1"})
    out = ["", f"## {variant}", ""]
    if build_s:
        out.append(f"Writing and indexing took {build_s:.0f} s.")
        out.append("")
    out.append("| queries | lance-host median ms (min-max of run medians) | p95 ms | pylance median ms (min-max of run medians) | p95 ms | ratio (medians; min-max of per-run ratios) | lance-host: statistics / segments / flat ms (medians) |")
    out.append("| --- | --- | --- | --- | --- | --- | --- |")
    for cat in ["single-term", "3-term", "phrase"]:
        hq = [q for run in host_runs for i, q in enumerate(run["queries"]) if category(i) == cat]
        h = [q["ms"] for q in hq]
        p = [q["ms"] for run in py_runs for i, q in enumerate(run["queries"]) if category(i) == cat]
        run_med = lambda runs: [statistics.median([q["ms"] for i, q in enumerate(r["queries"]) if category(i) == cat])
                                for r in runs]
        hm, pm = run_med(host_runs), run_med(py_runs)
        ratios = [a / b for a, b in zip(hm, pm)]
        parts = " / ".join(f"{statistics.median([q[k] for q in hq]):.1f}" for k in ("stats_ms", "segment_ms", "flat_ms"))
        out.append(f"| {cat} | {statistics.median(h):.1f} ({min(hm):.1f}-{max(hm):.1f}) | {pct(h, 95):.1f} | "
                   f"{statistics.median(p):.1f} ({min(pm):.1f}-{max(pm):.1f}) | {pct(p, 95):.1f} | "
                   f"{statistics.median(h) / statistics.median(p):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) | {parts} |")
    first_h = [r["queries"][0]["ms"] for r in host_runs]
    first_p = [r["queries"][0]["ms"] for r in py_runs]
    sb = [q["stats_bytes"] for q in host_runs[0]["queries"]]
    same = sum(same_answer(h, p) for h, p in zip(host_runs[0]["queries"], py_runs[0]["queries"]))
    wm = [q["index_cache_misses"] for q in warm["queries"]]
    out.append("")
    out.append(f"- First query of each run (where the table has an unindexed tail, lance-host tokenizes it here): lance-host "
               f"{statistics.median(first_h):.1f} ms ({min(first_h):.1f}-{max(first_h):.1f}), pylance "
               f"{statistics.median(first_p):.1f} ms ({min(first_p):.1f}-{max(first_p):.1f}).")
    out.append(f"- Statistics bytes per query: median {statistics.median(sb):.0f}, max {max(sb)}.")
    out.append(f"- Same answer as pylance (scores within 1e-5 position by position, same rows above the "
               f"10th score): {same} of {len(queries)} queries.")
    out.append(f"- After `lance_dataset_prewarm_index`: index-cache misses of the segment searches, max over "
               f"the 30 queries: {max(wm)}.")
    return out


def s3_section(a):
    """Requests per query on s3:// (a local S3-compatible server), cold process and warm."""
    port = 9317
    script = Path(__file__).resolve().parents[1] / "tests" / "integration" / "moto_server.py"
    log_path = Path(a.dir) / "fts_moto.log"
    log = open(log_path, "w")
    proc = subprocess.Popen([sys.executable, str(script), str(port)], stdout=subprocess.DEVNULL, stderr=log)

    def server_requests():
        """Requests the server has logged so far (every GET/HEAD/PUT/... it answered)."""
        text = re.sub(r"\x1b\[[0-9;]*m", "", log_path.read_text(errors="replace"))  # colour codes
        return len(re.findall(r'"(?:GET|HEAD|PUT|POST|DELETE) ', text))

    counted = {}

    def measured(name, cmd, env=None):
        before = server_requests()
        out = run_side(cmd, env)
        time.sleep(0.5)  # let the server flush its log
        counted[name] = server_requests() - before
        return out

    try:
        import urllib.request
        ep = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(urllib.request.Request(f"{ep}/ftsbench", method="PUT")).read()
                break
            except Exception:
                time.sleep(0.2)
        os.environ["BENCH_S3_ENDPOINT"] = ep
        uri = "s3://ftsbench/docs.lance"
        write_corpus(uri, a.s3_docs)
        qpath = str(Path(a.dir) / "fts_s3.queries.json")
        json.dump(make_queries(uri), open(qpath, "w"))
        cold = measured("off", [a.bin, "fts", uri, qpath], {"BENCH_DATA_CACHE": "off"})
        cached = measured("on", [a.bin, "fts", uri, qpath])
        warm = measured("warm", [a.bin, "fts", uri, qpath], {"BENCH_PREWARM": "1", "BENCH_DATA_CACHE": "off"})
        py = measured("pylance", [sys.executable, __file__, "--side", "pylance", uri, qpath])
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    med = lambda run, key, skip=1: statistics.median([q[key] for q in run["queries"][skip:]])
    out = ["", f"## s3:// (local S3-compatible server), {a.s3_docs:,} documents, same layout as the first table", ""]
    out.append("| lance-host process | first query: requests (statistics + splits) | later queries: median requests | median ms | segment index-file requests (median) |")
    out.append("| --- | --- | --- | --- | --- |")
    for name, run in [("data cache off", cold), ("data cache on (default)", cached), ("prewarmed, data cache off", warm)]:
        first = run["queries"][0]
        out.append(f"| {name} | {first['requests']} ({first['stats_requests']} + {first['requests'] - first['stats_requests']}) | "
                   f"{med(run, 'requests'):.0f} | {med(run, 'ms'):.1f} | {med(run, 'index_requests'):.0f} |")
    out.append("")
    out.append(f"pylance in the same run: median {med(py, 'ms'):.1f} ms per query after its first.")
    out.append("")
    n = len(cold["queries"])
    out.append(f"Requests the server logged per process (open, planning and all {n} queries; the same work on both "
               "sides — lance-host through its C ABI as an engine calls it, with statistics, split searches and "
               "merge per query; pylance's single-process search):")
    out.append("")
    out.append("| process | server requests | per query |")
    out.append("| --- | --- | --- |")
    for name, key in [("lance-host, data cache off", "off"), ("lance-host, data cache on", "on"),
                      ("lance-host, prewarmed, data cache off (prewarm included)", "warm"), ("pylance", "pylance")]:
        out.append(f"| {name} | {counted[key]} | {counted[key] / n:.1f} |")
    return out


if __name__ == "__main__":
    main()
