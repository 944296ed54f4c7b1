"""The C++ walk-through (walkthrough.cpp) in Python, on the `lance_host` package alone: a
catalog, a pinned snapshot, scan splits pickled to worker processes with a snapshot token,
vector search per split merged, a take, full-text search with shipped statistics, prewarm, a
count and an explain.

    python3 examples/walkthrough.py <warehouse directory> [--vectors TABLE] [--vector COLUMN]
        [--key COLUMN] [--docs TABLE | --docs ''] [--text COLUMN] [--query PHRASE]
        [--filter SQL] [--index NAME]

Every table and column comes from the arguments (defaults: the demo warehouse's names); `--docs
''` skips the full-text part, and the index to prewarm defaults to the first vector index on the
vector column.
"""

import argparse
import pickle
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import lance_host as lh


def scan_on_worker(token, split_bytes, key):
    """What a worker process does with what it received."""
    ds = lh.open_snapshot(token)
    return ds.scan_split(pickle.loads(split_bytes), columns=[key]).read_all().num_rows


def main(warehouse, vectors="vectors", vector="embedding", key="id", docs="docs", text="text",
         query="quick brown fox", filter=None, index=None):
    """Runs the walk-through; returns (rows scanned, neighbours found, full-text hits)."""
    catalog = lh.Catalog({"root": warehouse})
    ds = catalog.open_table(vectors)
    print(f"{vectors} at version {ds.version}: {ds.count_rows()} rows")

    token = ds.export_snapshot()
    splits = [pickle.dumps(s) for s in ds.plan_scan()]
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        rows = sum(pool.map(scan_on_worker, [token] * len(splits), splits, [key] * len(splits)))
    print(f"scanned {rows} rows in {len(splits)} splits on worker processes")

    first = ds.scan(columns=[vector], limit=1).read_all()[vector][0].as_py()
    plan = ds.plan_vector_search(vector)
    parts = [ds.search_split(s, vector, first, k=5, nprobes=8, refine_factor=5, columns=[key]) for s in plan]
    top = lh.merge_top_k(parts, 5).read_all()
    for rowid, dist in zip(top["_rowid"].to_pylist(), top["_distance"].to_pylist()):
        print(f"  neighbour row {rowid} at distance {dist:.4f}")
    print(f"took {key}s", ds.take(top["_rowid"].to_pylist(), columns=[key])[key].to_pylist())

    hits = 0
    if docs:
        table = catalog.open_table(docs)
        stats = table.fts_stats(text, query, match="phrase")
        found = lh.merge_fts([table.fts_search_split(s, text, query, stats, k=3, match="phrase", columns=[key])
                              for s in table.plan_fts(text)], 3).read_all()
        for i, score in zip(found[key].to_pylist(), found["_score"].to_pylist()):
            print(f"  '{query}' in {key} {i}, score {score:.3f}")
        hits = found.num_rows

    if index is None:
        index = next((i.name for i in ds.indexes() if i.column == vector and i.metric), None)
    if index:
        io = ds.prewarm_index(index)
        print(f"prewarm of {index} read {io.index_read_bytes} index bytes")
    filter = filter or f"{key} < 100"
    print(f"{ds.count_rows(filter)} rows match {filter}")
    print(ds.explain_scan(filter=filter))
    return rows, top.num_rows, hits


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("warehouse")
    for name, default in [("vectors", "vectors"), ("vector", "embedding"), ("key", "id"), ("docs", "docs"),
                          ("text", "text"), ("query", "quick brown fox"), ("filter", None), ("index", None)]:
        parser.add_argument(f"--{name}", default=default)
    main(**vars(parser.parse_args()))
