"""The C++ walk-through (walkthrough.cpp) in Python, on the `lance_host` package alone: a
catalog, a pinned snapshot, scan splits pickled to worker processes with a snapshot token,
vector search per split merged, a take, full-text search with shipped statistics, prewarm, a
count and an explain.

    python3 examples/walkthrough.py <warehouse directory> [vector table] [text table]
"""

import pickle
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import lance_host as lh


def scan_on_worker(token, split_bytes):
    """What a worker process does with what it received."""
    ds = lh.open_snapshot(token)
    return ds.scan_split(pickle.loads(split_bytes), columns=["id"]).read_all().num_rows


def main(warehouse, vectors="vectors", docs="docs"):
    catalog = lh.Catalog({"root": warehouse})
    ds = catalog.open_table(vectors)
    print(f"{vectors} at version {ds.version}: {ds.count_rows()} rows")

    token = ds.export_snapshot()
    splits = [pickle.dumps(s) for s in ds.plan_scan()]
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        rows = sum(pool.map(scan_on_worker, [token] * len(splits), splits))
    print(f"scanned {rows} rows in {len(splits)} splits on worker processes")

    query = ds.scan(columns=["embedding"], limit=1).read_all()["embedding"][0].as_py()
    plan = ds.plan_vector_search("embedding")
    parts = [ds.search_split(s, "embedding", query, k=5, nprobes=8, refine_factor=5, columns=["id"]) for s in plan]
    top = lh.merge_top_k(parts, 5).read_all()
    for rowid, dist in zip(top["_rowid"].to_pylist(), top["_distance"].to_pylist()):
        print(f"  neighbour row {rowid} at distance {dist:.4f}")
    print("took ids", ds.take(top["_rowid"].to_pylist(), columns=["id"])["id"].to_pylist())

    text = catalog.open_table(docs)
    stats = text.fts_stats("text", "quick brown fox", match="phrase")
    hits = lh.merge_fts([text.fts_search_split(s, "text", "quick brown fox", stats, k=3, match="phrase", columns=["id"])
                         for s in text.plan_fts("text")], 3).read_all()
    for i, score in zip(hits["id"].to_pylist(), hits["_score"].to_pylist()):
        print(f"  'quick brown fox' in id {i}, score {score:.3f}")

    io = ds.prewarm_index("emb_pq")
    n, count_io = ds.count_rows_with_io("id < 100")
    print(f"prewarm read {io.index_read_bytes} index bytes; {n} rows have id < 100")
    print(ds.explain_scan(filter="id < 100"))
    return rows, top.num_rows, hits.num_rows


if __name__ == "__main__":
    main(*sys.argv[1:])
