"""Indexes built by lance_host, checked by pylance 14.0.2: pylance's plans use them (explain),
an IVF_PQ built by lance_host reaches pylance's recall@10 with the same parameters and data
(within 0.02), full-text search over a lance_host-built INVERTED index equals pylance's over its
own (ids and scores), BTREE / BITMAP / LABEL_LIST give the same filtered counts; drops and bad
input."""

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")

DIM = 32
ROWS = 6000
WORDS = ["quick", "brown", "fox", "lazy", "dog", "jumps", "over", "river", "stone", "bridge", "night", "light"]


def data():
    rng = np.random.default_rng(3)
    centers = rng.normal(size=(16, DIM)).astype(np.float32)
    vecs = (centers[rng.integers(0, 16, ROWS)] + 0.3 * rng.normal(size=(ROWS, DIM))).astype(np.float32)
    ids = np.arange(ROWS)
    text = [" ".join(WORDS[(i * p) % len(WORDS)] for p in (1, 3, 7, 11)[: 2 + i % 3]) for i in ids]
    tags = [[f"t{(i + j) % 6}" for j in range(i % 3)] for i in ids]
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "category": pa.array([["red", "green", "blue"][i % 3] for i in ids]),
        "tags": pa.array(tags, pa.list_(pa.string())),
        "text": pa.array(text),
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), DIM),
    }), vecs


def recall(uri, vecs, queries, truth):
    ds = lance.dataset(uri)
    hits = 0
    for q, want in zip(queries, truth):
        got = ds.to_table(nearest={"column": "emb", "q": q, "k": 10, "nprobes": 4, "refine_factor": 10}, columns=["id"])["id"].to_pylist()
        hits += len(set(got) & set(want))
    return hits / (10 * len(queries))


def test_ivf_pq_built_by_lance_host_is_used_by_pylance_with_pylance_recall(tmp_path):
    t, vecs = data()
    ours, theirs = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    lance.write_dataset(t, ours, max_rows_per_file=2000)
    lance.write_dataset(t, theirs, max_rows_per_file=2000)
    built = lh.open(ours).create_vector_index("emb", "IVF_PQ", name="emb_idx", num_partitions=16, num_sub_vectors=8)
    assert built.version == 2 and [i.name for i in built.indexes()] == ["emb_idx"]
    lance.dataset(theirs).create_index("emb", "IVF_PQ", name="emb_idx", num_partitions=16, num_sub_vectors=8)
    py = lance.dataset(ours)
    assert [i["name"] for i in py.list_indices()] == ["emb_idx"]
    assert py.list_indices()[0]["type"] == lance.dataset(theirs).list_indices()[0]["type"]
    plan = py.scanner(nearest={"column": "emb", "q": vecs[0], "k": 10}).explain_plan()
    assert "ANN" in plan, plan
    rng = np.random.default_rng(9)
    queries = vecs[rng.integers(0, ROWS, 100)] + 0.01
    dist = ((vecs[None, :, :] - queries[:, None, :]) ** 2).sum(-1)
    truth = [list(np.argsort(d)[:10]) for d in dist]
    ours_recall, theirs_recall = recall(ours, vecs, queries, truth), recall(theirs, vecs, queries, truth)
    # (4 of 16 partitions probed, refined 10x: what is left is the index's partitioning and codes)
    assert abs(ours_recall - theirs_recall) <= 0.02 + 1e-9, (ours_recall, theirs_recall)
    assert ours_recall > 0.8
    # lance_host's own plan: one split per built segment, no flat split
    plan = built.plan_vector_search("emb")
    assert plan.splits and all(s.kind == lh.SPLIT_INDEX_SEGMENT for s in plan.splits)


def test_every_vector_type_builds_and_bad_input_commits_nothing(tmp_path):
    t, _ = data()
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(t, uri)
    ds = lh.open(uri)
    for kind in ["IVF_FLAT", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ"]:
        ds = ds.create_vector_index("emb", kind, name=kind.lower(), num_partitions=4, num_sub_vectors=4,
                                    metric="cosine" if kind == "IVF_FLAT" else None)
    types = {i["name"]: i["type"] for i in lance.dataset(uri).list_indices()}
    assert set(types) == {"ivf_flat", "ivf_sq", "ivf_hnsw_flat", "ivf_hnsw_pq", "ivf_hnsw_sq"}, types
    version = lance.dataset(uri).version
    for kwargs, err in [(dict(column="nope"), "nope"), (dict(column="id"), "fixed-size list"),
                        (dict(column="emb", num_partitions=ROWS + 1), "num_partitions"),
                        (dict(column="emb", num_sub_vectors=5), "divide"),
                        (dict(column="emb", name="ivf_sq"), "already exists"),
                        (dict(column="emb", index_type="IVF_MAGIC"), "index_type")]:
        with pytest.raises(lh.InvalidArgumentError, match=err):
            ds.create_vector_index(**kwargs)
    assert lance.dataset(uri).version == version
    dropped = ds.drop_index("ivf_sq")
    assert "ivf_sq" not in {i["name"] for i in lance.dataset(uri).list_indices()}
    with pytest.raises(lh.NotFoundError):
        dropped.drop_index("ivf_sq")
    replaced = dropped.create_vector_index("emb", "IVF_PQ", name="ivf_flat", replace=True, num_partitions=4,
                                           num_sub_vectors=4)
    after = {i["name"]: i["type"] for i in lance.dataset(uri).list_indices()}
    assert types["ivf_flat"] == "IVF_FLAT" and after["ivf_flat"] == "IVF_PQ" and len(after) == 4
    assert replaced.version == lance.dataset(uri).version


def test_full_text_over_a_lance_host_index_equals_pylance(tmp_path):
    t, _ = data()
    ours, theirs = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    lance.write_dataset(t, ours)
    lance.write_dataset(t, theirs)
    lh.open(ours).create_inverted_index("text", with_position=True)
    lance.dataset(theirs).create_scalar_index("text", "INVERTED", with_position=True)
    for query in ["fox", "quick river", "night light stone"]:
        a = lance.dataset(ours).to_table(full_text_query=query, columns=["id"]).sort_by("id")
        b = lance.dataset(theirs).to_table(full_text_query=query, columns=["id"]).sort_by("id")
        assert a["id"].to_pylist() == b["id"].to_pylist(), query
        assert np.allclose(a["_score"].to_numpy(), b["_score"].to_numpy(), atol=1e-5), query
    # lance_host's full-text plan over its own index: segment splits only
    plan = lh.open(ours).plan_fts("text")
    assert plan.splits and all(s.kind == lh.SPLIT_FTS_SEGMENT for s in plan.splits)
    with pytest.raises(lh.InvalidArgumentError, match="string column"):
        lh.open(ours).create_inverted_index("id")


def test_scalar_indexes_give_the_same_counts_and_are_in_pylance_plans(tmp_path):
    t, _ = data()
    uri = str(tmp_path / "s.lance")
    lance.write_dataset(t, uri)
    ds = lh.open(uri)
    ds = ds.create_scalar_index("id").create_scalar_index("category", "BITMAP").create_scalar_index("tags", "LABEL_LIST")
    py = lance.dataset(uri)
    assert {i["name"] for i in py.list_indices()} == {"id_idx", "category_idx", "tags_idx"}
    for f in ["id < 500", "category = 'blue'", "array_has_any(tags, ['t2'])"]:
        assert ds.count_rows(f) == py.count_rows(filter=f) == lance.dataset(uri, version=1).count_rows(filter=f)
        assert "ScalarIndexQuery" in py.scanner(filter=f, columns=["id"]).explain_plan(), f
    with pytest.raises(lh.InvalidArgumentError, match="BTREE"):
        ds.create_scalar_index("tags", name="bad")


def test_appended_rows_are_indexed_by_optimize(tmp_path):
    t, vecs = data()
    uri = str(tmp_path / "o.lance")
    lance.write_dataset(t.slice(0, 5000), uri)
    ds = lh.open(uri).create_vector_index("emb", "IVF_PQ", num_partitions=8, num_sub_vectors=8)
    lance.write_dataset(t.slice(5000), uri, mode="append")
    appended = lh.open(uri)
    assert any(s.kind == lh.SPLIT_FLAT for s in appended.plan_vector_search("emb").splits)
    optimized = appended.optimize_indexes()
    assert all(s.kind == lh.SPLIT_INDEX_SEGMENT for s in optimized.plan_vector_search("emb").splits)
    stats = lance.dataset(uri).stats.index_stats("emb_idx")
    assert stats["num_unindexed_rows"] == 0, stats
    with pytest.raises(lh.NotFoundError):
        optimized.optimize_indexes("ghost")


def search_after_prewarm(args):
    """A fresh process: prewarm the index (no query), then search every split of the plan;
    returns the prewarm's misses and each search's index-cache misses and hits."""
    uri, q = args
    import lance_host
    ds = lance_host.open(uri)
    warm = ds.prewarm_index("emb_idx")
    out = []
    for split in ds.plan_vector_search("emb").splits:
        stream = ds.search_split(split, "emb", q, k=10)
        stream.read_all()
        io = stream.io_stats()
        out.append((io.index_cache_misses, io.index_cache_hits))
    return warm.index_cache_misses, out


def test_a_freshly_built_index_prewarms_to_zero_index_cache_misses(tmp_path):
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context
    t, vecs = data()
    uri = str(tmp_path / "p.lance")
    lance.write_dataset(t, uri, max_rows_per_file=2000)
    lh.open(uri).create_vector_index("emb", "IVF_PQ", name="emb_idx", num_partitions=8, num_sub_vectors=8)
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        warm_misses, searches = pool.submit(search_after_prewarm, (uri, vecs[5].tolist())).result()
    assert warm_misses > 0, "the prewarm loaded the index"
    assert searches and all(m == 0 and h > 0 for m, h in searches), searches
