"""One run, a row per path: lance-host (the `lance_host` package over the release library)
against pylance 14.0.2 on the same tables, each side in fresh processes, sides alternating.

    LANCE_HOST_LIB=<release liblance_host.so> python3 bench/paths.py [--runs 3] [--only key,key]

Tables (all made by pylance, cached under ~/.cache/lance-host/bench; the first three are made
by the bench's other scripts, which this one runs when they are missing):
- the main table of bench/REPORT.md (3,000,000 rows, 30 fragments, IVF_PQ in 2 segments over
  2,700,000 rows plus a 300,000-row unindexed tail, 128-d `vec`), for scans, take, counts,
  vector search, Spark and Ray;
- the full-text corpora of bench/FTS.md (1,000,000 documents; 2 INVERTED segments + a 5 %
  unindexed tail, and 3 segments fully indexed) with their queries;
- the vector table of bench/SPLIT_COST.md (100,000 64-d rows, IVF_PQ in 2 segments) for the
  flat search and, copied to a local S3-compatible server, vector search on `s3://` with the
  data cache off and on;
- a blob table (made here: 200 blobs of 4 KiB to 2 MiB, Blob v2 column).

Per process: open, one warm-up, the measured iterations; a process's figure is the median of
its iterations. Reported: the median over --runs processes per side (min-max), the median of
per-run ratios lance-host / pylance (min-max), whether both sides gave the same answer, and
each side's peak RSS. lance-host runs what an engine runs through the C ABI: plans, split
searches (a worker's splits combined with `Split.combine`), merges, one refine. Writes
bench/PATHS.md and bench/PATHS.json.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from report import publish, spread

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("LANCE_HOST_BENCH_DIR", Path.home() / ".cache" / "lance-host" / "bench"))
MAIN = CACHE / "rows3000000" / "bench.lance"
MAIN_FACTS = CACHE / "rows3000000" / "facts.json"
FTS_TAIL = CACHE / "fts1000000.lance"
FTS_FULL = CACHE / "fts1000000_indexed.lance"
SPLIT_COST = CACHE / "split_cost"
BLOBS = CACHE / "paths_blobs.lance"
# key, label, iterations per process
PATHS = [
    ("scan_wide", "scan, all 6 columns incl. 128-d `vec` (3M rows)", 3),
    ("scan_narrow", "scan, 5 columns without `vec`", 3),
    ("scan_filter", "filtered scan `price < 10`, 2 columns", 5),
    ("scan_parallel", "split-parallel scan, 2 threads, 3 columns", 10),
    ("take", "take 1,000 row ids, 2 columns", 20),
    ("count", "count rows `price < 10`", 5),
    ("vector_index", "vector search, index (2 segments + tail), nprobes 8, refine 4", 20),
    ("vector_flat", "vector search, flat (100,000 rows, 64-d)", 20),
    ("vector_batch", "vector search, 20 queries: one batch call per split vs a pylance loop, nprobes 8, refine 4", 3),
    ("vector_s3_off", "vector search on `s3://`, data cache off (2 segments, nprobes 4, refine 4)", 20),
    ("vector_s3_on", "vector search on `s3://`, data cache on", 20),
    ("fts_tail_single", "full-text, 2 segments + unindexed tail, single term", 0),
    ("fts_tail_three", "full-text, 2 segments + unindexed tail, 3 terms", 0),
    ("fts_tail_phrase", "full-text, 2 segments + unindexed tail, phrase", 0),
    ("fts_full_single", "full-text, 3 segments fully indexed, single term", 0),
    ("fts_full_three", "full-text, 3 segments fully indexed, 3 terms", 0),
    ("fts_full_phrase", "full-text, 3 segments fully indexed, phrase", 0),
    ("blobs", "blob range reads (200 blobs, 5 ranges each)", 3),
    ("open_s3", "worker open of a pinned version on `s3://` from shipped bytes, then its row count", 20),
    ("spark_scan", "Spark: count(*), sum(price) over 3M rows", 1),
    ("spark_filter", "Spark: `price < 10` grouped by cat", 1),
    ("ray_scan", "Ray Data: count, sum(price) over 3M rows", 1),
    ("ray_filter", "Ray Data: `price < 10` grouped by cat", 1),
]
DIFFERENT_WORK = [
    "Vector search (index, `s3://`): lance-host plans the pinned snapshot, searches the index segments in one "
    "combined split with `defer_refine` (the best 40 candidates by quantized distance, `_rowid` only), re-ranks "
    "them once with `refine`, searches the unindexed tail (one combined flat split, started first so that it runs "
    "while the segments are searched and re-ranked), merges, and takes the 10 "
    "winners' `id` by `_rowid`; pylance runs one global search with `refine_factor=4`: the same candidates, "
    "re-rank and reads, the same answer. (Splits projecting `id` read it for all 40 candidates: on `s3://` "
    "0.5 requests per query more than pylance, 45.5 against 45.0; taking the winners' columns by `_rowid` "
    "brought it to 45.0 each.)",
    "Vector batch: lance-host sends the 20 query vectors in one call per split (segments re-rank in the split, "
    "k × 4 × 2 candidates per query, since a batch has no deferred re-rank); pylance runs its search once per "
    "query (its own batch nearest ran out of memory at 1,000 queries, bench/BATCH.md). The answers differ by "
    "design; 'same answer' there means lance-host's recall@10 against the exact top 10 is at least pylance's.",
    "Full-text search: with an unindexed tail lance-host computes the corpus statistics, searches the segments "
    "(one combined split) and the tail (one combined flat split) with them and merges, per query; fully "
    "indexed, its one split of every segment is the whole corpus and is searched without a statistics pass "
    "(the search computes them, as pylance's does; since 0.10). With an unindexed "
    "tail, lance-host tokenizes each tail fragment once per process (the warm-up query; later queries read "
    "it from the session's cache), while pylance tokenizes the tail in every query. Answers: scores within "
    "1e-4 and the same rows above the 10th score.",
    "Scans: lance-host's pyarrow reader over the Arrow C stream; pylance's `to_batches`. Split-parallel: "
    "lance-host's scan splits (one per fragment) on 2 Python threads; pylance's fragments on 2 threads; both "
    "sides read batch by batch (until 2026-12-02 lance-host's side collected each split into a table, extra "
    "work pylance's side did not do).",
    "Take: the same 1,000 row ids; pylance's `_take_rows`. Count: `count_rows` with the filter on both sides.",
    "Blob reads: `take_blobs` then 5 reads of up to 100 bytes per blob (start, a third, half, end, offset 7); "
    "pylance's `BlobFile.read_range`. lance-host reads a local table's blob ranges on the calling thread "
    "(`src/blob.rs`); pylance through Lance's I/O scheduler.",
    "Spark and Ray: `bench/engines.py`'s sides — lance-host's data sources against a pylance fragment source "
    "for Spark (no JVM connector) and Ray's own `read_lance`; the time of the query after one untimed run.",
    "Worker open on `s3://`: what a worker does with what its coordinator shipped — lance-host opens the "
    "snapshot token (`open_snapshot`; the token carries the manifest, its index metadata and where it lives, "
    "never credentials), pylance unpickles the dataset (its pickle carries the serialized manifest and the "
    "storage options, credentials included); then `count_rows()` from the manifest on both sides.",
    "Peak RSS: a Python process with pyarrow and the side's library loaded (Spark and Ray: the driver).",
]
LABELS = {k: label for k, label, _ in PATHS}
ITERS = {k: n for k, _, n in PATHS}


# ---- tables ------------------------------------------------------------------------------------

def ensure_tables(bench_bin, keys):
    """Write the tables the paths of `keys` read, where missing."""
    main = any(k.startswith(("scan", "take", "count", "spark", "ray")) or k in ("vector_index", "vector_batch")
               for k in keys)
    if main and not MAIN.exists():
        if not bench_bin:
            raise SystemExit(f"{MAIN} is missing: pass --bin <lance-host-bench> to write it")
        subprocess.run([bench_bin, "write", str(MAIN), str(MAIN_FACTS), "3000000"], check=True)
    if any(k.startswith("fts") for k in keys) and (not FTS_TAIL.exists() or not FTS_FULL.exists()):
        sys.path.insert(0, str(HERE))
        import fts
        for uri, full in ((FTS_TAIL, False), (FTS_FULL, True)):
            if not uri.exists():
                fts.write_corpus(str(uri), 1_000_000, index_tail=full)
                Path(f"{uri}.queries.json").write_text(json.dumps(fts.make_queries(str(uri))))
    sys.path.insert(0, str(HERE))
    import split_cost
    if any(k in ("vector_flat", "open_s3") or "s3" in k for k in keys):
        split_cost.make(SPLIT_COST)
    if "blobs" in keys and not BLOBS.exists():
        import numpy as np
        import pyarrow as pa
        import lance
        from lance.blob import Blob, blob_array, blob_field
        sizes = [4096 << (i % 10) for i in range(200)]
        vals = [np.random.default_rng(i).integers(0, 256, n, dtype=np.uint8).tobytes() for i, n in enumerate(sizes)]
        schema = pa.schema([pa.field("id", pa.int64()), blob_field("blob")])
        t = pa.table({"id": pa.array(range(200), pa.int64()),
                      "blob": blob_array([Blob.from_bytes(v) for v in vals])}, schema=schema)
        lance.write_dataset(t, str(BLOBS), data_storage_version="2.2", max_rows_per_file=50)


def fts_queries(uri, kind):
    qs = json.loads(Path(f"{uri}.queries.json").read_text())
    # [text, kind]: kind 0 = match (OR), 2 = phrase
    if kind == "single":
        return [(t, k) for t, k in qs if k == 0 and " " not in t]
    if kind == "three":
        return [(t, k) for t, k in qs if k == 0 and t.count(" ") == 2]
    return [(t, k) for t, k in qs if k == 2]


def vector_queries(path, facts):
    """(query vectors, nprobes) of a vector row: the main table's 20 queries, or on s3:// the
    split-cost table's."""
    if path == "vector_index":
        return facts["queries"], 8
    import split_cost
    return [q.tolist() for q in split_cost.queries(20)[0]], 4


def recall(found, truth):
    return round(statistics.mean(len(set(f) & set(t)) / len(t) for f, t in zip(found, truth)), 4)


# ---- one side of one path, in its own process ----------------------------------------------

def run_host(path, env):
    import lance_host as lh
    facts = json.loads(MAIN_FACTS.read_text()) if MAIN_FACTS.exists() else {}
    if path == "vector_s3_off":
        opts = lh.SessionOptions.defaults()
        opts.data_cache_disabled = True
        lh.configure_session(opts)
    if path.startswith("scan") or path in ("take", "count", "vector_index", "vector_batch"):
        ds = lh.open(str(MAIN))
    if path == "scan_wide":
        return lambda i: sum(b.num_rows for b in ds.scan())
    if path == "scan_narrow":
        return lambda i: sum(b.num_rows for b in ds.scan(columns=["id", "cat", "price", "ts", "payload"]))
    if path == "scan_filter":
        return lambda i: round(sum(b["price"].to_numpy().sum() for b in ds.scan(columns=["id", "price"], filter="price < 10")), 3)
    if path == "scan_parallel":
        splits = list(ds.plan_scan())

        def part(t):
            # Batch by batch, as the pylance side reads its fragments.
            return sum(b.num_rows for s in splits[t::2] for b in ds.scan_split(s, columns=["id", "cat", "price"]))
        pool = ThreadPoolExecutor(2)
        return lambda i: sum(pool.map(part, range(2)))
    if path == "take":
        return lambda i: ds.take(facts["take_ids"], columns=["id", "price"])["id"].to_pylist()
    if path == "count":
        return lambda i: ds.count_rows("price < 10")
    if path in ("vector_index", "vector_s3_off", "vector_s3_on"):
        qs, nprobes = vector_queries(path, facts)
        if path != "vector_index":
            ds = lh.open(env["S3_URI"], storage_options=json.loads(env["S3_OPTS"]))
        plan = ds.plan_vector_search("vec")
        segs = lh.Split.combine([s for s in plan if s.kind == lh.SPLIT_INDEX_SEGMENT])
        flats = [s for s in plan if s.kind == lh.SPLIT_FLAT]
        flat = [lh.Split.combine(flats)] if flats else []

        def search(i):
            # The recommended path (docs/distributed.md): the splits project `_rowid` only, the
            # merged candidates are re-ranked once, and the winners' columns are taken by
            # `_rowid` — the reads of pylance's one global search.
            # Every split's search starts before any result is read (each call starts its search
            # and returns): the tail's flat search runs while the segments are searched and
            # re-ranked.
            q = qs[i % len(qs)]
            tails = [ds.search_split(s, "vec", q, 10, columns=["_rowid"]) for s in flat]
            cands = ds.search_split(segs, "vec", q, 10, nprobes=nprobes, refine_factor=4, defer_refine=True,
                                    columns=["_rowid"])
            refined = ds.refine(lh.merge_top_k([cands], 40), "vec", q, k=10)
            parts = [refined] + tails
            top = lh.merge_top_k(parts, 10).read_all()["_rowid"].to_pylist()
            return ds.take(top, columns=["id"])["id"].to_pylist()
        return search
    if path == "vector_flat":
        import split_cost
        facts2 = split_cost.make(SPLIT_COST)
        ds = lh.open(facts2["vec"])
        qs = split_cost.queries(20)[0]
        one = lh.Split.combine(list(ds.plan_vector_search("vec", use_index=False)))
        return lambda i: ds.search_split(one, "vec", qs[i % 20], 10, columns=["id"]).read_all()["id"].to_pylist()
    if path == "vector_batch":
        qs = facts["queries"]
        plan = ds.plan_vector_search("vec")
        segs = lh.Split.combine([s for s in plan if s.kind == lh.SPLIT_INDEX_SEGMENT])
        flat = lh.Split.combine([s for s in plan if s.kind == lh.SPLIT_FLAT])

        def batch(i):
            # Every query in one call per split; the segments re-rank in the split (a batch has no
            # deferred re-rank), k x 4 x 2 candidates per query, so recall is compared, not rows.
            parts = [ds.search_split(segs, "vec", qs, 10, nprobes=8, refine_factor=4, columns=["id"]),
                     ds.search_split(flat, "vec", qs, 10, columns=["id"])]
            t = lh.merge_top_k(parts, 10).read_all()
            per = [[] for _ in qs]
            for q, row in zip(t["query_index"].to_pylist(), t["id"].to_pylist()):
                per[q].append(row)
            return recall(per, facts["truth"])
        return batch
    if path.startswith("fts"):
        uri = FTS_TAIL if "tail" in path else FTS_FULL
        ds = lh.open(str(uri))
        qs = fts_queries(uri, path.rsplit("_", 1)[1])
        plan = ds.plan_fts("text")
        segs = [s for s in plan if s.kind == lh.SPLIT_FTS_SEGMENT]
        flats = [s for s in plan if s.kind == lh.SPLIT_FTS_FLAT]
        splits = [lh.Split.combine(segs)] + ([lh.Split.combine(flats)] if flats else [])

        def fts(i):
            text, kind = qs[i % len(qs)]
            match = "phrase" if kind == 2 else "or"
            if flats:
                stats = ds.fts_stats("text", text, match=match)
                parts = [ds.fts_search_split(s, "text", text, stats, k=10, match=match, columns=["id"]) for s in splits]
                t = lh.merge_fts(parts, 10).read_all()
            else:  # fully indexed: one split is the whole corpus, searched without a statistics pass
                t = ds.fts_search_split(splits[0], "text", text, None, k=10, match=match, columns=["id"]).read_all()
            return t["id"].to_pylist(), [round(x, 4) for x in t["_score"].to_pylist()]
        return fts
    if path == "open_s3":
        opts = json.loads(env["S3_OPTS"])
        token = lh.open(env["S3_URI"], storage_options=opts).export_snapshot()

        def open_token(i):
            d = lh.open_snapshot(token, storage_options=opts)
            return [d.version, d.count_rows()]
        return open_token
    if path == "blobs":
        ds = lh.open(str(BLOBS))
        ids = ds.scan(columns=["id"], with_row_id=True).read_all()["_rowid"].to_pylist()

        def blobs(i):
            b = ds.take_blobs("blob", ids)
            total = 0
            for j in range(len(ids)):
                size = b.info(j).size
                for off in (0, size // 3, size // 2, size - 100, 7):
                    total += sum(b.read(j, off, min(100, size - off)))
            return total
        return blobs
    raise SystemExit(f"unknown path {path}")


def run_pylance(path, env):
    import lance
    facts = json.loads(MAIN_FACTS.read_text()) if MAIN_FACTS.exists() else {}
    if path.startswith("scan") or path in ("take", "count", "vector_index", "vector_batch"):
        ds = lance.dataset(str(MAIN))
    if path == "scan_wide":
        return lambda i: sum(b.num_rows for b in ds.to_batches())
    if path == "scan_narrow":
        return lambda i: sum(b.num_rows for b in ds.to_batches(columns=["id", "cat", "price", "ts", "payload"]))
    if path == "scan_filter":
        return lambda i: round(sum(b["price"].to_numpy().sum() for b in ds.to_batches(columns=["id", "price"], filter="price < 10")), 3)
    if path == "scan_parallel":
        frags = ds.get_fragments()

        def part(t):
            return sum(b.num_rows for f in frags[t::2] for b in f.to_batches(columns=["id", "cat", "price"]))
        pool = ThreadPoolExecutor(2)
        return lambda i: sum(pool.map(part, range(2)))
    if path == "take":
        return lambda i: ds._take_rows(facts["take_ids"], columns=["id", "price"])["id"].to_pylist()
    if path == "count":
        return lambda i: ds.count_rows("price < 10")
    if path in ("vector_index", "vector_s3_off", "vector_s3_on"):
        qs, nprobes = vector_queries(path, facts)
        if path != "vector_index":
            ds = lance.dataset(env["S3_URI"], storage_options=json.loads(env["S3_OPTS"]))
        return lambda i: ds.to_table(columns=["id"], nearest={"column": "vec", "q": qs[i % len(qs)], "k": 10,
                                                              "nprobes": nprobes, "refine_factor": 4})["id"].to_pylist()
    if path == "vector_batch":
        qs = facts["queries"]

        def loop(i):
            per = [ds.to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 10, "nprobes": 8,
                                                        "refine_factor": 4})["id"].to_pylist() for q in qs]
            return recall(per, facts["truth"])
        return loop
    if path == "vector_flat":
        import split_cost
        facts2 = split_cost.make(SPLIT_COST)
        ds = lance.dataset(facts2["vec"])
        qs = split_cost.queries(20)[0]
        return lambda i: ds.to_table(columns=["id"], nearest={"column": "vec", "q": qs[i % 20], "k": 10,
                                                              "use_index": False})["id"].to_pylist()
    if path.startswith("fts"):
        from lance.query import MatchQuery, PhraseQuery
        uri = FTS_TAIL if "tail" in path else FTS_FULL
        ds = lance.dataset(str(uri))
        qs = fts_queries(uri, path.rsplit("_", 1)[1])

        def fts(i):
            text, kind = qs[i % len(qs)]
            q = PhraseQuery(text, "text") if kind == 2 else MatchQuery(text, "text")
            t = ds.to_table(full_text_query=q, limit=10, columns=["id"])
            return t["id"].to_pylist(), [round(x, 4) for x in t["_score"].to_pylist()]
        return fts
    if path == "open_s3":
        import pickle
        shipped = pickle.dumps(lance.dataset(env["S3_URI"], storage_options=json.loads(env["S3_OPTS"])))

        def open_pickled(i):
            d = pickle.loads(shipped)
            return [d.version, d.count_rows()]
        return open_pickled
    if path == "blobs":
        ds = lance.dataset(str(BLOBS))
        ids = ds.to_table(columns=["id"], with_row_id=True)["_rowid"].to_pylist()

        def blobs(i):
            files = ds.take_blobs("blob", ids=ids)
            total = 0
            for f in files:
                size = f.size()
                for off in (0, size // 3, size // 2, size - 100, 7):
                    total += sum(f.read_range(off, min(100, size - off)))
            return total
        return blobs
    raise SystemExit(f"unknown path {path}")


def worker(side, path):
    sys.path.insert(0, str(HERE))
    env = dict(os.environ)
    if path.startswith(("spark", "ray")):
        engine, work = path.split("_")
        out = subprocess.run([sys.executable, str(HERE / "engines.py"), "--table", str(MAIN), "--side", engine,
                              {"host": "lance_host", "pylance": "pylance" if engine == "spark" else "read_lance"}[side],
                              "scan" if work == "scan" else "filter_agg"],
                             capture_output=True, text=True, check=True)
        got = json.loads(out.stdout.strip().splitlines()[-1])
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        print(json.dumps({"ms": got["ms"], "answer": got["rows"], "maxrss_kb": rss}))
        return
    fn = (run_host if side == "host" else run_pylance)(path, env)
    n = ITERS[path]
    if path.startswith("fts"):
        uri = FTS_TAIL if "tail" in path else FTS_FULL
        n = len(fts_queries(uri, path.rsplit("_", 1)[1]))
    fn(0)  # warm-up
    log = env.get("S3_LOG")
    mark = len(requests_in(log)) if log and "s3" in path else 0
    times, answers = [], []
    for i in range(n):
        t = time.perf_counter()
        answers.append(fn(i))
        times.append((time.perf_counter() - t) * 1e3)
    out = {"ms": statistics.median(times), "answer": answers,
           "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
    if log and "s3" in path:
        time.sleep(0.3)  # the server writes its log line after the response
        out["requests_per_iteration"] = len(requests_in(log, mark)) / n
    print(json.dumps(out, default=str))


# ---- the driver --------------------------------------------------------------------------------

def same(path, a, b):
    """Both sides' answers agree (full-text: scores within 1e-4 and the same rows above the 10th
    score; Spark and Ray: sums within 1e-9 relative)."""
    if path.startswith(("spark", "ray")):
        flat = lambda x: [v for r in x for v in (r if isinstance(r, list) else [r])]
        fa, fb = flat(a), flat(b)
        return len(fa) == len(fb) and all(x == y if isinstance(x, str) else abs(float(x) - float(y)) <= 1e-9 * max(abs(float(y)), 1)
                                          for x, y in zip(fa, fb))
    if path == "vector_batch":
        return min(a) >= max(b)  # recall: lance-host's at least pylance's
    if path.startswith("fts"):
        for (ia, sa), (ib, sb) in zip(a, b):
            if len(sa) != len(sb) or any(abs(x - y) > 1e-4 * max(abs(y), 1e-3) for x, y in zip(sa, sb)):
                return False
            if sb:
                last = sb[-1]
                above = lambda ids, ss: sorted(i for i, s in zip(ids, ss) if s > last + 1e-4 * max(abs(last), 1e-3))
                if above(ia, sa) != above(ib, sb):
                    return False
        return True
    return a == b


def requests_in(log, mark=0):
    sys.path.insert(0, str(HERE))
    import write
    return write.requests_in(log, mark)


def start_s3():
    """The S3-compatible server of bench/write.py, with the split-cost vector table copied in."""
    sys.path.insert(0, str(HERE))
    import write
    srv, log, opts = write.moto()
    ep = opts["aws_endpoint"]
    import boto3
    s3 = boto3.client("s3", endpoint_url=ep, aws_access_key_id="a", aws_secret_access_key="b", region_name="us-east-1")
    import split_cost
    local = Path(split_cost.make(SPLIT_COST)["vec"])
    for f in local.rglob("*"):
        if f.is_file():
            s3.upload_file(str(f), "bench", f"vec.lance/{f.relative_to(local)}")
    return srv, "s3://bench/vec.lance", opts, str(log)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--bin", default="")
    ap.add_argument("--worker", nargs=2, metavar=("SIDE", "PATH"))
    ap.add_argument("--report", action="store_true", help="rewrite PATHS.md from PATHS.json, no run")
    a = ap.parse_args()
    if a.worker:
        return worker(*a.worker)
    if a.report:
        saved = json.loads((HERE / "PATHS.json").read_text())
        return write_report({k: saved[k] for k, _, _ in PATHS if k in saved}, a.runs)
    keys = [k for k, _, _ in PATHS if not a.only or k in a.only.split(",")]
    ensure_tables(a.bin, keys)
    srv, s3_uri, s3_opts, s3_log = start_s3() if any("s3" in k for k in keys) else (None, "", {}, "")
    env = dict(os.environ, LANCE_LOG="error", S3_URI=s3_uri, S3_OPTS=json.dumps(s3_opts), S3_LOG=s3_log)
    saved = HERE / "PATHS.json"
    # --only reruns some paths and keeps the others' figures of the last run.
    results = json.loads(saved.read_text()) if a.only and saved.exists() else {}
    try:
        for key in keys:
            per = {"host": [], "pylance": []}
            rss = {"host": [], "pylance": []}
            requests = {"host": [], "pylance": []}
            agree = True
            for r in range(a.runs):
                answers = {}
                for side in (("host", "pylance") if r % 2 == 0 else ("pylance", "host")):
                    p = subprocess.run([sys.executable, __file__, "--worker", side, key], capture_output=True,
                                       text=True, env=env)
                    if p.returncode != 0:
                        print(p.stderr[-3000:], file=sys.stderr)
                        raise SystemExit(f"{key} {side} failed")
                    out = json.loads(p.stdout.strip().splitlines()[-1])
                    per[side].append(out["ms"])
                    rss[side].append(out["maxrss_kb"] / 1024)
                    if "requests_per_iteration" in out:
                        requests[side].append(out["requests_per_iteration"])
                    answers[side] = out["answer"]
                agree &= same(key, answers["host"], answers["pylance"])
                print(key, r, {s: round(v[-1], 2) for s, v in per.items()}, flush=True)
            ratios = [h / p for h, p in zip(per["host"], per["pylance"])]
            results[key] = {"host_ms": per["host"], "pylance_ms": per["pylance"], "ratios": ratios,
                            "same_answer": agree, "host_rss_mib": rss["host"], "pylance_rss_mib": rss["pylance"],
                            "date": time.strftime("%Y-%m-%d %H:%M")}
            if requests["host"]:
                results[key]["host_requests"] = requests["host"]
                results[key]["pylance_requests"] = requests["pylance"]
            saved.write_text(json.dumps(results, indent=1))
    finally:
        if srv:
            srv.terminate()
            srv.wait(timeout=30)
    write_report({k: results[k] for k, _, _ in PATHS if k in results}, a.runs)


def write_report(results, runs):
    counts = sorted({len(r["host_ms"]) for r in results.values()})
    runs = f"{counts[0]} runs" if len(counts) == 1 else f"{counts[0]} to {counts[-1]} runs per row (a row rerun with --only keeps that run's count)"
    lines = [
        "# Every path, one run: lance-host against pylance",
        "",
        f"Generated by `bench/paths.py` on {time.strftime('%Y-%m-%d')}, 2 cores, lance-host "
        f"{'release library' if os.environ.get('LANCE_HOST_LIB') else 'bundled library'} through the `lance_host` "
        f"package, pylance 14.0.2, the same tables. {runs}, the order of the sides alternating, each side a fresh "
        "process per run; a process's figure is the median of its iterations after one warm-up (full-text: every "
        "query of the category once). Cells: median over runs (min–max); ratio: median of per-run ratios "
        "lance-host / pylance (min–max); below 1.0 lance-host is faster. Peak RSS: the process's high-water mark "
        "(Spark and Ray: the engine's driver process).",
        "",
        "| path | lance-host ms | pylance ms | lance-host / pylance | same answer | peak RSS MiB lance-host / pylance |",
        "| --- | ---: | ---: | ---: | --- | ---: |",
    ]
    for key, r in results.items():
        lines.append(f"| {LABELS[key]} | {spread(r['host_ms'], 1)} | {spread(r['pylance_ms'], 1)} | {spread(r['ratios'], 2)} | "
                     f"{'yes' if r['same_answer'] else 'no'} | {statistics.median(r['host_rss_mib']):.0f} / "
                     f"{statistics.median(r['pylance_rss_mib']):.0f} |")
    counted = [(k, r) for k, r in results.items() if r.get("host_requests")]
    if counted:
        lines += ["", "Requests per iteration on `s3://` (the S3-compatible server's log, measured iterations "
                  "only; median over runs, min–max):", "",
                  "| path | lance-host | pylance |", "| --- | ---: | ---: |"]
        lines += [f"| {LABELS[k]} | {spread(r['host_requests'], 1)} | {spread(r['pylance_requests'], 1)} |" for k, r in counted]
    lines += ["", "## Where the sides do different work", ""] + [f"- {n}" for n in DIFFERENT_WORK]
    publish(HERE / "PATHS.md", lines)


if __name__ == "__main__":
    main()
