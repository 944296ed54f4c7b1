"""Cost per split: a worker that searches every segment of a snapshot, split by split or with
the splits combined into one (`Split.combine`, `lance_splits_combine`), against pylance's one
global search of the same version — vector search and full-text search, driven from Python.

    LANCE_HOST_LIB=<release liblance_host.so> python3 bench/split_cost.py [--runs 3] [--queries 200]

Tables (made here, seeded, cached under --dir):
- vectors: 100,000 64-d float32 rows around 200 centres; pylance writes 80,000 and builds IVF_PQ
  (64 partitions, 16 sub-vectors), then appends 20,000 and indexes them as a second segment
  (optimize_indices, num_indices_to_merge=0). Versions with 1 and 2 segments, all rows indexed.
- documents: 300,000 Zipf documents in three appends, each indexed as its own INVERTED segment
  (with positions), all rows indexed.

Same work on every side:
- vector: k 10, nprobes 4, no re-rank (lance-host: `defer_refine`, so segments return their
  quantized distances as pylance's search without `refine_factor` does), project `id`;
- vector, re-ranked: refine 4, lance-host's recommended path (deferred candidates merged to 40,
  one `refine`), pylance's search with refine_factor 4;
- full text: the statistics pass, the segment searches and the merge (lance-host), pylance's
  full_text_query; k 10, projecting `id`; one term, three terms (OR) and two-word phrases. A
  fourth side, 'combined, no statistics', searches the one split of every segment without a
  statistics pass (the table is fully indexed, so that split is the whole corpus; 0.10).
Each process (one side, one table state) answers every query once after two warm-up queries
and reports the median milliseconds; sides alternate between runs (A B C, B C A, ...). Reported:
the median over runs with min-max, and the median of per-run ratios against pylance with min-max.
Writes bench/SPLIT_COST.md.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from report import publish, spread

HERE = Path(__file__).resolve().parent
DIM = 64
WORDS = 20_000


def vectors(n, seed, centres):
    from recall import vectors as clustered
    return clustered(n, seed, centres)


def vector_table(start, vecs):
    from recall import table
    return table(start, vecs)


def documents(start, n, seed):
    import numpy as np
    import pyarrow as pa
    rng = np.random.default_rng(seed)
    lengths = rng.integers(8, 40, n)
    words = np.minimum(rng.zipf(1.3, lengths.sum()), WORDS) - 1
    text, at = [], 0
    for length in lengths:
        text.append(" ".join(f"w{w}" for w in words[at:at + length]))
        at += length
    return pa.table({"id": pa.array(np.arange(start, start + n), pa.int64()), "text": pa.array(text)})


def make(d):
    """Write both tables once; returns {"vec": uri, "vec_versions": {segments: version}, "doc": uri}."""
    import lance
    import numpy as np
    facts_path = d / "facts.json"
    if facts_path.exists():
        return json.loads(facts_path.read_text())
    d.mkdir(parents=True, exist_ok=True)
    vec_uri, doc_uri = str(d / "vec.lance"), str(d / "doc.lance")
    centres = np.random.default_rng(1).normal(scale=2.0, size=(200, DIM))
    ds = lance.write_dataset(vector_table(0, vectors(80_000, 2, centres)), vec_uri, max_rows_per_file=20_000,
                             mode="overwrite")
    ds.create_index("vec", index_type="IVF_PQ", num_partitions=64, num_sub_vectors=16, name="vec_idx")
    versions = {1: lance.dataset(vec_uri).version}
    ds = lance.write_dataset(vector_table(80_000, vectors(20_000, 12, centres)), vec_uri, mode="append")
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    versions[2] = lance.dataset(vec_uri).version
    for part in range(3):
        t = documents(part * 100_000, 100_000, 40 + part)
        ds = lance.write_dataset(t, doc_uri, mode="overwrite" if part == 0 else "append", max_rows_per_file=50_000)
        if part == 0:
            ds.create_scalar_index("text", "INVERTED", with_position=True, name="text_idx")
        else:
            ds.optimize.optimize_indices(num_indices_to_merge=0)
    facts = {"vec": vec_uri, "vec_versions": versions, "doc": doc_uri}
    facts_path.write_text(json.dumps(facts))
    return json.loads(facts_path.read_text())


def queries(n):
    """Query vectors and, per full-text kind, query texts: one term, three terms, two-word phrases
    of common words."""
    import numpy as np
    rng = np.random.default_rng(5)
    vecs = [rng.normal(scale=2.0, size=DIM).astype(np.float32) for _ in range(n)]
    texts = {
        "fts": [f"w{rng.integers(0, 300)}" for _ in range(n)],
        "fts3": [" ".join(f"w{w}" for w in rng.integers(0, 300, 3)) for _ in range(n)],
        "phrase": [" ".join(f"w{w}" for w in rng.integers(0, 12, 2)) for _ in range(n)],
    }
    return vecs, texts


def worker(side, work, facts, version, n):
    """One process: answer the queries of `work` on one side; print {"ms": median}. A work ending
    in `_again` answers every query once untimed first (terms already seen)."""
    import lance
    import lance_host as lh
    again = work.endswith("_again")
    work = work.removesuffix("_again")
    vecs, all_texts = queries(n)
    texts = all_texts.get(work)
    match = "phrase" if work == "phrase" else "or"
    if work.startswith("vector"):
        uri, refine = facts["vec"], (4 if work == "vector_refine" else None)
        if side == "pylance":
            py = lance.dataset(uri, version=version)
            nearest = {"column": "vec", "k": 10, "nprobes": 4}
            if refine:
                nearest["refine_factor"] = refine

            def run(i):
                return answer(py.to_table(columns=["id"], nearest=dict(nearest, q=vecs[i])), "_distance")
        else:
            ds = lh.open(uri, version=version)
            plan = ds.plan_vector_search("vec")
            splits = [lh.Split.combine(list(plan))] if side == "combined" else list(plan)

            def run(i):
                q = vecs[i]
                parts = [ds.search_split(s, "vec", q, 10, nprobes=4, refine_factor=refine, defer_refine=True,
                                         columns=["id"]) for s in splits]
                if refine:
                    merged = lh.merge_top_k(parts, 10 * refine)
                    return answer(ds.refine(merged, "vec", q, k=10, columns=["id"]).read_all(), "_distance")
                return answer(lh.merge_top_k(parts, 10).read_all(), "_distance")
    else:
        uri = facts["doc"]
        if side == "pylance":
            from lance.query import MatchQuery, PhraseQuery
            py = lance.dataset(uri)
            kind = PhraseQuery if match == "phrase" else MatchQuery

            def run(i):
                return answer(py.to_table(full_text_query=kind(texts[i], "text"), limit=10,
                                          columns=["id"]), "_score")
        else:
            ds = lh.open(uri)
            plan = ds.plan_fts("text")
            splits = [lh.Split.combine(list(plan))] if side in ("combined", "whole") else list(plan)

            def run(i):
                if side == "whole":
                    return answer(ds.fts_search_split(splits[0], "text", texts[i], None, k=10, match=match,
                                                      columns=["id"]).read_all(), "_score")
                stats = ds.fts_stats("text", texts[i], match=match)
                parts = [ds.fts_search_split(s, "text", texts[i], stats, k=10, match=match, columns=["id"])
                         for s in splits]
                return answer(lh.merge_fts(parts, 10).read_all(), "_score")
    for i in range(n) if again else range(2):
        run(i)
    times, answers = [], []
    for i in range(n):
        t = time.perf_counter()
        answers.append(run(i))
        times.append((time.perf_counter() - t) * 1e3)
    print(json.dumps({"ms": statistics.median(times), "answers": answers}))


def answer(table, key):
    """(ids, distances or scores) of one result, for comparing sides."""
    return table["id"].to_pylist(), table[key].to_pylist()


def same_answer(a, b):
    """The same ranking values (1e-5 relative) and the same rows strictly better than the k-th
    value: rows tied with the k-th value may be any of the tied ones on either side."""
    (ids_a, va), (ids_b, vb) = a, b
    if len(va) != len(vb) or any(abs(x - y) > 1e-5 * max(abs(y), 1e-6) for x, y in zip(va, vb)):
        return False
    if not vb:
        return True
    last, tol = vb[-1], 1e-5 * max(abs(vb[-1]), 1e-6)
    better = lambda ids, vals: sorted(i for i, v in zip(ids, vals) if abs(v - last) > tol)
    return better(ids_a, va) == better(ids_b, vb)


WORKS = [
    ("vector", 1, "vector search, 1 segment, no re-rank"),
    ("vector", 2, "vector search, 2 segments, no re-rank"),
    ("vector_refine", 2, "vector search, 2 segments, refine 4 (deferred + one refine)"),
    ("fts", 3, "full-text search, 3 segments, single term"),
    ("fts3", 3, "full-text search, 3 segments, 3 terms"),
    ("phrase", 3, "full-text search, 3 segments, phrase"),
    ("fts_again", 3, "full-text search, 3 segments, single term, terms seen before"),
]
SIDES = ["split by split", "combined", "pylance"]
WHOLE = "combined, no statistics"
SIDE_KEYS = {"split by split": "separate", "combined": "combined", "pylance": "pylance", WHOLE: "whole"}


def sides(work):
    return SIDES + [WHOLE] if not work.startswith("vector") else SIDES


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--dir", default=str(Path.home() / ".cache" / "lance-host" / "bench" / "split_cost"))
    ap.add_argument("--worker", nargs=4, metavar=("SIDE", "WORK", "VERSION", "N"))
    a = ap.parse_args()
    facts = make(Path(a.dir))
    if a.worker:
        side, work, version, n = a.worker
        worker(side, work, facts, int(version), int(n))
        return
    results = {}
    for work, segments, label in WORKS:
        version = facts["vec_versions"][str(segments)] if work.startswith("vector") else 0
        these = sides(work)
        per = {s: [] for s in these}
        same, like_pylance, total = True, 0, 0
        for run in range(a.runs):
            order = these[run % len(these):] + these[:run % len(these)]
            answers = {}
            for side in order:
                # LANCE_LOG=error: pylance would otherwise log a deprecation warning per query.
                out = subprocess.run([sys.executable, __file__, "--dir", a.dir, "--worker", SIDE_KEYS[side], work,
                                      str(version), str(a.queries)], capture_output=True, text=True, check=True,
                                     env=dict(os.environ, LANCE_LOG="error"))
                got = json.loads(out.stdout.strip().splitlines()[-1])
                per[side].append(got["ms"])
                answers[side] = got["answers"]
            # The two lance-host sides answer alike; pylance's rows are listed for the record.
            same &= all(map(same_answer, answers["split by split"], answers["combined"]))
            if WHOLE in answers:
                same &= all(map(same_answer, answers[WHOLE], answers["combined"]))
            like_pylance += sum(map(same_answer, answers["combined"], answers["pylance"]))
            total += len(answers["pylance"])
            print(work, segments, {s: round(per[s][-1], 3) for s in these}, flush=True)
        results[label] = (per, same, f"{like_pylance} of {total}")
    lines = [
        "# Cost per split: split by split, combined, and pylance's one search",
        "",
        f"Generated by `bench/split_cost.py` on {time.strftime('%Y-%m-%d')}, 2 cores, lance-host driven from "
        f"Python over the library{' built in the release profile' if os.environ.get('LANCE_HOST_LIB') else ''}, "
        f"pylance 14.0.2. {a.runs} runs, the order of the sides rotated each run, each run one fresh process "
        f"per side answering {a.queries} queries after two warm-up queries; a process's figure is its median "
        "milliseconds per query. Cells: median over runs (min–max); ratios: median of per-run ratios against "
        "pylance (min–max).",
        "",
        "Same work on each side: vector search k 10, nprobes 4, projecting `id` — without a re-rank lance-host "
        "passes `defer_refine` so segments return quantized distances as pylance's search without "
        "`refine_factor` does; with refine 4 lance-host takes its recommended path (deferred candidates merged to "
        "40, one `refine`) against pylance's `refine_factor=4`. Full-text search: lance-host computes the corpus "
        "statistics, searches the splits and merges (the distributed protocol, in one process) against "
        "pylance's `full_text_query`; k 10; every query has its own terms, so each process loads the "
        "posting lists of a query's terms at that query, except in the 'terms seen before' row, where each "
        "process answers every query once before the timed pass. 'split by split' searches each split of the plan with its own "
        "call; 'combined' searches one split made with `Split.combine` of the whole plan; 'combined, no "
        "statistics' (full text only, since 0.10) searches that split without the statistics pass: the table is "
        "fully indexed, so it is the whole corpus and Lance's search computes the statistics, as pylance's does. "
        "Two answers are the "
        "same when their distances or scores agree within 1e-5 position by position and the rows strictly "
        "better than the 10th value are the same (rows tied with the 10th may be any of the tied rows).",
        "",
        "| work | split by split ms | combined ms | combined, no statistics ms | pylance ms | split by split / pylance "
        "| combined / pylance | combined, no statistics / pylance | same answer on every lance-host side | "
        "queries with pylance's answer (combined) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for label, (per, same, like) in results.items():
        ratio = lambda side: spread([x / p for x, p in zip(per[side], per["pylance"])], 2) if side in per else "—"
        whole = spread(per[WHOLE], 2) if WHOLE in per else "—"
        lines.append(f"| {label} | {spread(per['split by split'], 2)} | {spread(per['combined'], 2)} | {whole} | "
                     f"{spread(per['pylance'], 2)} | {ratio('split by split')} | {ratio('combined')} | {ratio(WHOLE)} "
                     f"| {'yes' if same else 'no'} | {like} |")
    publish(HERE / "SPLIT_COST.md", lines)


if __name__ == "__main__":
    main()
