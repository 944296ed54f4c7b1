"""The recipes of docs/distributed.md's "Exact results", checked against pylance on a table with
two IVF_PQ segments and an unindexed tail:
- an all-flat plan (`use_index=False`), merged, is pylance's exact search, row for row;
- index segments searched with `defer_refine`, merged, re-ranked once (`refine`) and merged with
  the flat splits is pylance's indexed search with the same `nprobes` and `refine_factor`, row
  for row;
- the default per-split re-rank finds at least as many true neighbours as pylance's indexed
  search (each segment re-ranks its own candidates)."""

import shutil

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")

DIM, K, QUERIES = 16, 10, 20


def batch(start, end):
    rng = np.random.default_rng(start)
    return pa.table({"id": pa.array(np.arange(start, end), pa.int64()),
                     "emb": pa.FixedSizeListArray.from_arrays(
                         pa.array(rng.random((end - start) * DIM, dtype=np.float32)), DIM)})


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("exact") / "t.lance")
    ds = lance.write_dataset(batch(0, 3000), uri, max_rows_per_file=1000)
    ds.create_index("emb", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=4)
    ds = lance.write_dataset(batch(3000, 4000), uri, mode="append")
    ds.optimize.optimize_indices(num_indices_to_merge=0)  # a second segment
    ds = lance.write_dataset(batch(4000, 4300), uri, mode="append")  # an unindexed tail
    return uri, lance.dataset(uri)


def ids(table):
    return table["id"].to_pylist()


@pytest.mark.parametrize("refine", [1, 5])
def test_exact_and_indexed_recipes_equal_pylance(table, refine):
    uri, pyds = table
    ds = lh.open(uri)
    (index,) = ds.indexes()
    assert len(index.segments) == 2
    nprobes = index.segments[0].num_partitions  # probe every partition
    assert nprobes == 4
    flat_plan = ds.plan_vector_search("emb", use_index=False)
    plan = ds.plan_vector_search("emb")
    segs = [s for s in plan if s.kind == lh.SPLIT_INDEX_SEGMENT]
    flats = [s for s in plan if s.kind != lh.SPLIT_INDEX_SEGMENT]
    assert len(segs) == 2 and flats
    found = {"per_split": 0, "pylance_indexed": 0}
    for q in np.random.default_rng(refine).random((QUERIES, DIM), dtype=np.float32):
        v = q.tolist()
        exact = ids(pyds.to_table(nearest={"column": "emb", "q": q, "k": K, "use_index": False}, columns=["id"]))
        indexed = ids(pyds.to_table(nearest={"column": "emb", "q": q, "k": K, "nprobes": nprobes,
                                             "refine_factor": refine}, columns=["id"]))
        flat = lh.merge_top_k([ds.search_split(s, "emb", v, k=K, columns=["id"]) for s in flat_plan], K)
        assert ids(flat.read_all()) == exact
        query = dict(k=K, nprobes=nprobes, refine_factor=refine, columns=["id"])
        cands = lh.merge_top_k([ds.search_split(s, "emb", v, defer_refine=True, **query) for s in segs], K * refine)
        refined = ds.refine(cands, "emb", v, k=K, columns=["id"])
        deferred = lh.merge_top_k([refined] + [ds.search_split(s, "emb", v, **query) for s in flats], K)
        assert ids(deferred.read_all()) == indexed
        per_split = ids(lh.merge_top_k([ds.search_split(s, "emb", v, **query) for s in plan], K).read_all())
        found["per_split"] += len(set(per_split) & set(exact))
        found["pylance_indexed"] += len(set(indexed) & set(exact))
    assert found["per_split"] >= found["pylance_indexed"], found
