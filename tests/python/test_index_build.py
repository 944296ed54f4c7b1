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


def build_segment(args):
    """A worker process: open the table, build the segment of one task, return its bytes."""
    uri, task = args
    import lance_host
    return lance_host.open(uri).execute_index_build_task(task)


def test_a_one_process_index_build_reports_progress_to_the_call_context(tmp_path):
    """Issue 62: a one-process vector index build ran 323 s without a report (the distributed
    build reported). Lance's stages reach the bound call context's receiver, each starting at 0
    and ending at its total; a scalar index build reports too; pylance sees the index."""
    t, _ = data()
    uri = str(tmp_path / "one.lance")
    lance.write_dataset(t, uri, max_rows_per_file=1500)
    reports = []
    with lh.CallContext(progress=lambda stage, done, total, unit: reports.append((stage, done, total, unit))):
        lh.open(uri).create_vector_index("emb", "IVF_PQ", name="emb_idx", num_partitions=8, num_sub_vectors=8)
    stages = {s for s, _, _, _ in reports}
    assert reports and all(total == 0 or done <= total for _, done, total, _ in reports), reports
    for stage in stages:
        mine = [r for r in reports if r[0] == stage]
        assert mine[0][1] == 0 and mine[-1][1] == mine[-1][2], (stage, mine)
    assert [i["name"] for i in lance.dataset(uri).list_indices()] == ["emb_idx"]
    # without a context nothing is reported and the build works the same
    lh.open(uri).create_scalar_index("id", "BTREE", name="id_idx")
    assert {i["name"] for i in lance.dataset(uri).list_indices()} == {"emb_idx", "id_idx"}


def test_distributed_ivf_pq_on_two_worker_processes_reaches_the_single_process_recall(tmp_path):
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context
    t, vecs = data()
    dist, single = str(tmp_path / "dist.lance"), str(tmp_path / "single.lance")
    lance.write_dataset(t, dist, max_rows_per_file=1500)
    lance.write_dataset(t, single, max_rows_per_file=1500)
    lh.open(single).create_vector_index("emb", "IVF_PQ", name="emb_idx", num_partitions=16, num_sub_vectors=8)
    coordinator = lh.open(dist)
    reports = []
    with lh.CallContext(progress=lambda stage, done, total, unit: reports.append((stage, done, total, unit))):
        model = coordinator.train_vector_index("emb", "IVF_PQ", num_partitions=16, num_sub_vectors=8)
    assert reports and all(total == 0 or done <= total for _, done, total, _ in reports), reports
    tasks = coordinator.plan_vector_index_build("emb", model, name="emb_idx", num_splits=2)
    assert len(tasks) == 2
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        segments = list(pool.map(build_segment, [(dist, task) for task in tasks]))
    assert lance.dataset(dist).version == 1, "the workers committed nothing"
    built = coordinator.commit_index_build(segments)
    py = lance.dataset(dist)
    assert built.version == py.version == 2
    # pylance lists an index once per segment: one index, two segments
    assert [i["name"] for i in py.list_indices()] == ["emb_idx", "emb_idx"]
    assert {i["type"] for i in py.list_indices()} == {lance.dataset(single).list_indices()[0]["type"]} == {"IVF_PQ"}
    assert py.stats.index_stats("emb_idx")["num_unindexed_rows"] == 0
    assert "ANN" in py.scanner(nearest={"column": "emb", "q": vecs[0], "k": 10}).explain_plan()
    rng = np.random.default_rng(11)
    queries = vecs[rng.integers(0, ROWS, 100)] + 0.01
    d = ((vecs[None, :, :] - queries[:, None, :]) ** 2).sum(-1)
    truth = [list(np.argsort(x)[:10]) for x in d]
    dist_recall, single_recall = recall(dist, vecs, queries, truth), recall(single, vecs, queries, truth)
    assert abs(dist_recall - single_recall) <= 0.02 + 1e-9, (dist_recall, single_recall)
    assert dist_recall > 0.8
    assert [s.kind for s in built.plan_vector_search("emb").splits] == [lh.SPLIT_INDEX_SEGMENT] * 2
    # the kept model indexes appended rows; no flat split remains
    lance.write_dataset(t.slice(0, 500), dist, mode="append")
    appended = lh.open(dist)
    tasks = appended.plan_vector_index_build("emb", model, unindexed_only=True)
    grown = appended.commit_index_build([appended.execute_index_build_task(x) for x in tasks])
    assert [s.kind for s in grown.plan_vector_search("emb").splits] == [lh.SPLIT_INDEX_SEGMENT] * 3
    assert lance.dataset(dist).stats.index_stats("emb_idx")["num_unindexed_rows"] == 0
    with pytest.raises(lh.CorruptError):
        coordinator.plan_vector_index_build("emb", model[:-3] + b"xyz")


def test_distributed_full_text_and_btree_equal_pylance(tmp_path):
    t, _ = data()
    ours, theirs = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    lance.write_dataset(t, ours, max_rows_per_file=1000)
    lance.write_dataset(t, theirs, max_rows_per_file=1000)
    lance.dataset(theirs).create_scalar_index("text", "INVERTED", with_position=True)
    ds = lh.open(ours)
    # three segments as built, then rebuilt and merged into one: both answer as pylance's index
    for merge, replace in [(False, False), (True, True)]:
        tasks = ds.plan_inverted_index_build("text", with_position=True, num_splits=3, replace=replace)
        assert len(tasks) == 3
        ds = ds.commit_index_build([lh.open(ours).execute_index_build_task(x) for x in tasks], merge=merge)
        assert [i["type"] for i in lance.dataset(ours).list_indices()] == ["Inverted"] * (1 if merge else 3)
        for query in ["fox", "quick river", "night light stone"]:
            a = lance.dataset(ours).to_table(full_text_query=query, columns=["id"]).sort_by("id")
            b = lance.dataset(theirs).to_table(full_text_query=query, columns=["id"]).sort_by("id")
            assert a["id"].to_pylist() == b["id"].to_pylist(), (merge, query)
            assert np.allclose(a["_score"].to_numpy(), b["_score"].to_numpy(), atol=1e-5), (merge, query)
    tasks = ds.plan_scalar_index_build("id", "BTREE", num_splits=2)
    ds = ds.commit_index_build([ds.execute_index_build_task(x) for x in tasks])
    py = lance.dataset(ours)
    for f in ["id < 500", "id >= 4000 AND id < 4100", "id = 5999"]:
        assert ds.count_rows(f) == py.count_rows(filter=f) == lance.dataset(theirs).count_rows(filter=f), f
        assert "ScalarIndexQuery" in py.scanner(filter=f, columns=["id"]).explain_plan(), f


def build_all_tasks(uri, tasks):
    """A worker that builds task after task (killed somewhere along the way)."""
    import lance_host
    ds = lance_host.open(uri)
    for _ in range(20):
        for task in tasks:
            ds.execute_index_build_task(task)


def test_a_worker_killed_mid_build_leaves_nothing_and_cleanup_removes_its_files(tmp_path):
    import os
    import signal
    import time
    from multiprocessing import get_context
    from pathlib import Path
    t, _ = data()
    uri = str(tmp_path / "killed.lance")
    lance.write_dataset(t, uri, max_rows_per_file=1000)
    ds = lh.open(uri)
    tasks = ds.plan_inverted_index_build("text", with_position=True)
    indices = Path(uri) / "_indices"
    worker = get_context("spawn").Process(target=build_all_tasks, args=(uri, tasks))
    worker.start()
    deadline = time.monotonic() + 120
    while not (indices.exists() and any(indices.iterdir())):
        assert worker.is_alive() and time.monotonic() < deadline, "the worker wrote no segment"
        time.sleep(0.01)
    os.kill(worker.pid, signal.SIGKILL)
    worker.join()
    assert worker.exitcode == -signal.SIGKILL
    assert any(indices.iterdir()), "the killed worker left files"
    py = lance.dataset(uri)
    assert py.version == 1 and py.list_indices() == [], "nothing committed"
    lh.open(uri).cleanup(older_than_ms=0, delete_unverified=True)
    assert not indices.exists() or not any(indices.iterdir()), list(indices.iterdir())
    # the build still completes afterwards
    built = ds.commit_index_build([ds.execute_index_build_task(x) for x in tasks])
    import pyarrow.compute as pc
    with_fox = pc.sum(pc.match_substring(t["text"], "fox").cast(pa.int64())).as_py()
    assert lance.dataset(uri).to_table(full_text_query="fox", columns=["id"]).num_rows == with_fox > 0
    assert [s.kind for s in built.plan_fts("text").splits] == [lh.SPLIT_FTS_SEGMENT] * len(tasks)
