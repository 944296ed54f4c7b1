"""Ray Data on a local cluster reading and searching a pylance-written table through
lance_host.ray: rows equal a single-process read and Ray's own read_lance; one read task per
split, run in worker processes; a filter is applied by Lance (the library returns fewer rows);
the distributed vector search equals the library's single-process merge and pylance's exact
search on the all-flat plan."""

import glob
import json
import os

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")
import ray  # noqa: E402  (installed by the test command: never skipped)

import lance_host.ray as lhr  # noqa: E402

DIM = 8


def batch(start, end):
    rng = np.random.default_rng(start + 1)
    ids = np.arange(start, end)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "cat": pa.array([f"c{i % 5}" for i in ids]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.normal(size=(end - start) * DIM).astype(np.float32)), DIM),
    })


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    stats = tmp_path_factory.mktemp("raystats")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"LANCE_HOST_RAY_STATS_DIR": str(stats),
                                       "LANCE_HOST_LIB": os.environ.get("LANCE_HOST_LIB", "")}})
    yield stats
    ray.shutdown()


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("ray") / "t.lance")
    lance.write_dataset(batch(0, 1600), uri, max_rows_per_file=400)
    ds = lance.dataset(uri)
    ds.create_index("vec", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=2, name="vec_idx")
    lance.write_dataset(batch(1600, 2000), uri, mode="append", max_rows_per_file=400)
    lance.dataset(uri).delete("id % 11 = 2")
    return uri, lance.dataset(uri)


def records(d):
    out = [json.load(open(p)) for p in glob.glob(os.path.join(d, "task-*.json"))]
    for p in glob.glob(os.path.join(d, "task-*.json")):
        os.remove(p)
    return out


def test_read_equals_single_process_and_read_lance(cluster, table):
    uri, pyds = table
    records(cluster)
    src = lhr.LanceHostDatasource(uri, columns=["id", "cat"])
    assert src.splits == len(lh.open(uri).plan_scan())
    rows = lhr.read_lance_host(uri, columns=["id", "cat"]).take_all()
    got = sorted((r["id"], r["cat"]) for r in rows)
    t = pyds.to_table(columns=["id", "cat"])
    assert got == sorted(zip(t["id"].to_pylist(), t["cat"].to_pylist()))
    theirs = ray.data.read_lance(uri, columns=["id", "cat"]).take_all()
    assert got == sorted((r["id"], r["cat"]) for r in theirs)
    recs = records(cluster)
    assert sorted(r["split"] for r in recs) == list(range(src.splits)), "each split read exactly once"
    assert all(r["pid"] != os.getpid() for r in recs)


def test_filter_is_applied_by_lance(cluster, table):
    uri, pyds = table
    records(cluster)
    flt = "id < 500 AND cat = 'c3'"
    got = sorted(r["id"] for r in lhr.read_lance_host(uri, columns=["id"], filter=flt).take_all())
    want = sorted(pyds.to_table(columns=["id"], filter=flt)["id"].to_pylist())
    assert got == want
    assert sum(r["rows"] for r in records(cluster)) == len(want) < pyds.count_rows()
    # count() may come from the read tasks' metadata: exact without a filter (deletions
    # excluded), unknown (so counted by reading) with one.
    assert lhr.read_lance_host(uri, columns=["id"], filter=flt).count() == len(want)
    assert lhr.read_lance_host(uri, columns=["id"]).count() == pyds.count_rows()
    records(cluster)


def test_a_runtime_key_set_reaches_every_task(cluster, table):
    """keys=(column, values): a join's build-side keys, shipped once, applied by each task's
    scan; with the filter ANDed; the tasks read only the matching rows; count() reads."""
    uri, pyds = table
    records(cluster)
    keys = pa.array([3, 13, 2, 24, 1999, 400, 3999, 10**9], pa.int64())  # 2, 24: deleted (id % 11 = 2)
    got = sorted(r["id"] for r in lhr.read_lance_host(uri, columns=["id"], keys=("id", keys)).take_all())
    want = sorted(pyds.to_table(columns=["id"], filter="id IN (3, 13, 2, 24, 1999, 400, 3999, 1000000000)")["id"].to_pylist())
    assert got == want and 0 < len(want) < len(keys)
    assert sum(r["rows"] for r in records(cluster)) == len(want)
    both = lhr.read_lance_host(uri, columns=["id"], keys=("id", [3, 13, 400, 1999]), filter="id > 100")
    assert sorted(r["id"] for r in both.take_all()) == sorted(
        pyds.to_table(columns=["id"], filter="id IN (3, 13, 400, 1999) AND id > 100")["id"].to_pylist())
    assert lhr.read_lance_host(uri, columns=["id"], keys=("cat", ["c1"])).count() == pyds.count_rows("cat = 'c1'")
    records(cluster)
    with pytest.raises(lh.InvalidArgumentError, match="keys"):
        lhr.read_lance_host(uri, keys=["id", 3])


@pytest.mark.parametrize("prefilter", [None, "cat = 'c1'"])
def test_distributed_vector_search(cluster, table, prefilter):
    uri, pyds = table
    q = pyds.take([33], columns=["vec"])["vec"][0].as_py()
    got, pids = lhr.vector_search(uri, "vec", q, 10, nprobes=4, refine=20, filter=prefilter, columns=["id"],
                                  return_pids=True)
    assert all(p != os.getpid() for p in pids)
    ds = lh.open(uri)
    plan = ds.plan_vector_search("vec")
    lib = lh.merge_top_k([ds.search_split(s, "vec", q, 10, nprobes=4, refine_factor=20, prefilter=prefilter,
                                          columns=["id"]) for s in plan], 10).read_all()
    assert got["id"].to_pylist() == lib["id"].to_pylist()
    flat = lhr.vector_search(uri, "vec", q, 10, filter=prefilter, columns=["id"], use_index=False)
    exact = pyds.to_table(columns=["id"], filter=prefilter, prefilter=prefilter is not None,
                          nearest={"column": "vec", "q": q, "k": 10, "use_index": False})
    assert flat["id"].to_pylist() == exact["id"].to_pylist()
    # At most 2 tasks: the flat splits combined into two, the same exact answer.
    n_flat = len(ds.plan_vector_search("vec", use_index=False))
    assert n_flat > 2
    capped, pids = lhr.vector_search(uri, "vec", q, 10, filter=prefilter, columns=["id"], use_index=False,
                                     max_tasks=2, return_pids=True)
    assert len(pids) == 2 and capped["id"].to_pylist() == exact["id"].to_pylist()
    # The index plan in one task per split kind: k rows, exact distances in order.
    one, pids = lhr.vector_search(uri, "vec", q, 10, nprobes=4, refine=20, filter=prefilter, columns=["id"],
                                  max_tasks=1, return_pids=True)
    assert len(pids) == len({s.kind for s in plan}) and one.num_rows == 10
    d = one["_distance"].to_pylist()
    assert d == sorted(d) and one["id"].to_pylist()[0] == got["id"].to_pylist()[0]
    with pytest.raises(lh.InvalidArgumentError, match="max_tasks"):
        lhr.vector_search(uri, "vec", q, 10, max_tasks=0)


def test_the_ray_example_runs(cluster, table):
    """examples/spark_and_ray.py (the README's example): Ray's answer equals one process's."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "spark_and_ray.py"
    spec = importlib.util.spec_from_file_location("spark_and_ray", path)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    uri, pyds = table
    q = pyds.take([5], columns=["vec"])["vec"][0].as_py()
    assert ex.ray_example(uri, "vec", q, "cat = 'c1'") == ex.single_process(uri, "vec", q, "cat = 'c1'")


def test_misspelled_columns_and_task_errors(cluster, table):
    """No silent drops: an unknown projected column is an InvalidArgumentError naming it before
    anything runs (count() used to answer from the metadata); an error raised in a Ray task
    reaches the caller as the library's own exception type with its message."""
    uri, _ = table
    with pytest.raises(lh.InvalidArgumentError, match="unknown column 'prise'; the table's columns: id, cat, vec"):
        lhr.read_lance_host(uri, columns=["prise"])
    with pytest.raises(lh.InvalidArgumentError, match="unknown column 'vek'"):
        lhr.vector_search(uri, "vek", [0.0] * DIM, 5)
    # Ray Data may wrap a task's exception in its own type; the library's code name and message
    # must arrive (an unpicklable error used to arrive as UnserializableException).
    with pytest.raises(Exception, match="LANCE_ERR_INVALID_ARGUMENT") as e:
        lhr.read_lance_host(uri, filter="nope >").count()
    assert "nope" in str(e.value) and "Unserializable" not in str(e.value)


def test_ray_writes_stage_on_tasks_and_commit_once(cluster, tmp_path):
    """write_lance_host: every write task stages its blocks, one commit makes one version that
    pylance reads row for row; an append; an overwrite; a bad mode is refused."""
    from lance_host.ray import write_lance_host

    uri = str(tmp_path / "ray_written.lance")
    source = ray.data.from_arrow([pa.table({"id": pa.array(range(i * 500, i * 500 + 500), pa.int64()),
                                            "name": [f"n{j}" for j in range(i * 500, i * 500 + 500)]})
                                  for i in range(4)])
    assert source.num_blocks() == 4
    r = write_lance_host(source, uri, commit_message="from ray")
    py = lance.dataset(uri)
    assert py.version == 1 and r.version == 1 and r.rows_written == 2000 and r.committed
    assert sorted(py.to_table(columns=["id"])["id"].to_pylist()) == list(range(2000))
    assert py.read_transaction(1).transaction_properties["__lance_commit_message"] == "from ray"
    more = ray.data.from_arrow(pa.table({"id": pa.array(range(2000, 2100), pa.int64()),
                                         "name": [f"n{j}" for j in range(2000, 2100)]}))
    assert write_lance_host(more, uri).version == 2 and lance.dataset(uri).count_rows() == 2100
    assert lhr.read_lance_host(uri).count() == 2100
    assert write_lance_host(more, uri, mode="overwrite").version == 3 and lance.dataset(uri).count_rows() == 100
    with pytest.raises(lh.InvalidArgumentError, match="valid: 'append', 'overwrite'"):
        write_lance_host(more, uri, mode="upsert")


def test_ray_builds_an_index_on_tasks_and_commits_once(cluster, tmp_path):
    """lance_host.ray.build_index: the driver trains and plans, Ray tasks in worker processes
    build the segments, one commit; pylance uses the index; the kept model indexes appended
    fragments; a BTREE the same way with pylance's counts."""
    from lance_host.ray import build_index

    uri = str(tmp_path / "ray_indexed.lance")
    lance.write_dataset(batch(0, 1600), uri, max_rows_per_file=400)
    ds, model, pids = build_index(uri, "vec", "IVF_PQ", num_partitions=4, num_sub_vectors=2, num_splits=2,
                                  return_pids=True)
    assert len(pids) == 2 and os.getpid() not in pids
    py = lance.dataset(uri)
    assert ds.version == py.version == 2 and {i["name"] for i in py.list_indices()} == {"vec_idx"}
    assert "ANN" in py.scanner(nearest={"column": "vec", "q": batch(0, 1)["vec"][0].values.to_numpy(), "k": 5}).explain_plan()
    assert [s.kind for s in ds.plan_vector_search("vec").splits] == [lh.SPLIT_INDEX_SEGMENT] * 2
    lance.write_dataset(batch(1600, 2000), uri, mode="append", max_rows_per_file=400)
    grown, _ = build_index(uri, "vec", "IVF_PQ", model=model, unindexed_only=True)
    assert [s.kind for s in grown.plan_vector_search("vec").splits] == [lh.SPLIT_INDEX_SEGMENT] * 3
    same, _ = build_index(uri, "vec", "IVF_PQ", model=model, unindexed_only=True)
    assert same.version == grown.version, "nothing left to index commits nothing"
    with_btree, _ = build_index(uri, "id", "BTREE", num_splits=2)
    py = lance.dataset(uri)
    assert with_btree.version == py.version
    for f in ["id < 100", "id >= 1900"]:
        assert with_btree.count_rows(f) == py.count_rows(filter=f) == lance.dataset(uri, version=1).count_rows(filter=f) + (100 if ">=" in f else 0)
        assert "ScalarIndexQuery" in py.scanner(filter=f, columns=["id"]).explain_plan()
    with pytest.raises(lh.InvalidArgumentError, match="unknown index type"):
        build_index(uri, "id", "HASH")


def test_vectors_round_trip_through_ray(cluster, tmp_path):
    """Ray (numpy, pandas, Arrow) -> Lance -> Ray keeps fixed_size_list: numpy embeddings (Ray's
    tensor type) create a vector column and append to a pylance-written one (0.10.5: "large_list"
    refused); an overwrite keeps the vector type (0.10.5 silently made it large_list); a list
    column becomes vectors by vector_columns; a row of another length is an error naming it; the
    written table takes an IVF_PQ index; reading it back through Ray gives the same vectors."""
    import pandas as pd

    from lance_host.ray import write_lance_host

    rng = np.random.default_rng(5)
    vecs = rng.normal(size=(300, DIM)).astype(np.float32)
    items = ray.data.from_items([{"id": i, "vec": vecs[i]} for i in range(300)], override_num_blocks=3)
    made = str(tmp_path / "numpy.lance")
    write_lance_host(items, made)
    py = lance.dataset(made)
    assert py.schema.field("vec").type == pa.list_(pa.float32(), DIM)
    got = py.to_table().sort_by("id")
    assert np.array_equal(np.stack(got["vec"].to_numpy(zero_copy_only=False)), vecs)
    py.create_index("vec", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=2)
    hits = lh.open(made).vector_search("vec", vecs[42].tolist(), k=1, nprobes=2, refine_factor=20, columns=["id"])
    assert hits["id"].to_pylist() == [42]

    # pandas with numpy cells, appended to a pylance-written vector table.
    existing = str(tmp_path / "pylance.lance")
    lance.write_dataset(batch(0, 100).select(["id", "vec"]), existing)
    frame = pd.DataFrame({"id": np.arange(100, 150), "vec": list(vecs[:50].astype(np.float64))})
    write_lance_host(ray.data.from_pandas(frame), existing)
    pe = lance.dataset(existing)
    assert pe.schema.field("vec").type == pa.list_(pa.float32(), DIM) and pe.count_rows() == 150
    back = pe.to_table(filter="id >= 100").sort_by("id")
    assert np.allclose(np.stack(back["vec"].to_numpy(zero_copy_only=False)), vecs[:50])

    # An overwrite with Ray tensors keeps the table's vector type.
    write_lance_host(items, existing, mode="overwrite")
    pe = lance.dataset(existing)
    assert pe.schema.field("vec").type == pa.list_(pa.float32(), DIM) and pe.count_rows() == 300

    # Arrow list columns: declared vectors; a wrong length is an error naming the row.
    lists = pa.table({"id": pa.array(range(20), pa.int64()),
                      "vec": pa.array([list(map(float, vecs[i])) for i in range(20)], pa.list_(pa.float32()))})
    declared = str(tmp_path / "declared.lance")
    write_lance_host(ray.data.from_arrow(lists), declared, vector_columns={"vec": DIM})
    assert lance.dataset(declared).schema.field("vec").type == pa.list_(pa.float32(), DIM)
    short = pa.table({"id": pa.array([20, 21], pa.int64()),
                      "vec": pa.array([[1.0] * DIM, [1.0] * 3], pa.list_(pa.float32()))})
    with pytest.raises(Exception, match=f"column 'vec': row 1 has 3 values, the vectors hold {DIM}"):
        write_lance_host(ray.data.from_arrow(short), declared)
    assert lance.dataset(declared).count_rows() == 20

    # Ray reads the vectors back as fixed-size lists, equal to what was written.
    read = lhr.read_lance_host(made).to_arrow_refs()
    table = pa.concat_tables(ray.get(read)).sort_by("id")
    assert pa.types.is_fixed_size_list(table.schema.field("vec").type)
    assert np.array_equal(np.stack(table["vec"].to_numpy(zero_copy_only=False)), vecs)


def test_numpy_batches_with_vectors_write_back(cluster, tmp_path):
    """Issue 58 item 19: `map_batches(batch_format="numpy")` gives a vector column back as Ray's
    variable-shaped tensors; writing them failed ("invalid utf-8 sequence"). They append to the
    table's vectors, create vectors of their one length, and ragged rows are written as lists;
    a column of pickled Python objects is refused naming the column, the table unchanged."""
    from lance_host.ray import write_lance_host

    src = str(tmp_path / "src.lance")
    lance.write_dataset(batch(0, 240).select(["id", "vec"]), src, max_rows_per_file=80)
    want = lance.dataset(src).to_table().sort_by("id")

    def shift(b):
        b["id"] = b["id"] + 1000
        b["vec"] = b["vec"] * 2  # a (rows, DIM) array or an object array of rows
        return b

    moved = lhr.read_lance_host(src).map_batches(shift, batch_format="numpy")
    write_lance_host(moved, src)  # an append to the table's fixed_size_list<float, DIM>
    py = lance.dataset(src)
    assert py.schema.field("vec").type == pa.list_(pa.float32(), DIM) and py.count_rows() == 480
    back = py.to_table(filter="id >= 1000").sort_by("id")
    assert back["id"].to_pylist() == [i + 1000 for i in want["id"].to_pylist()]
    assert np.array_equal(np.stack(back["vec"].to_numpy(zero_copy_only=False)),
                          2 * np.stack(want["vec"].to_numpy(zero_copy_only=False)))

    made = str(tmp_path / "made.lance")
    write_lance_host(moved, made)  # a create: vectors of the rows' one length
    assert lance.dataset(made).schema.field("vec").type == pa.list_(pa.float32(), DIM)
    assert lance.dataset(made).count_rows() == 240

    def ragged(b):
        b["vec"] = np.array([v[: 1 + int(i) % DIM] for i, v in zip(b["id"], b["vec"])], dtype=object)
        return b

    lists = str(tmp_path / "ragged.lance")
    write_lance_host(lhr.read_lance_host(src, filter="id < 240").map_batches(ragged, batch_format="numpy"), lists)
    got = lance.dataset(lists).to_table().sort_by("id")
    assert [len(v) for v in got["vec"].to_pylist()] == [1 + i % DIM for i in range(240)]

    def pickled(b):
        b["vec"] = np.array([complex(float(i), 1.0) for i in b["id"]], dtype=object)  # Ray pickles these
        return b

    with pytest.raises(Exception, match="column 'vec' holds Python objects"):
        write_lance_host(lhr.read_lance_host(src).map_batches(pickled, batch_format="numpy"), src)
    assert lance.dataset(src).count_rows() == 480


def test_one_fragment_is_read_by_several_tasks(cluster, tmp_path):
    """target_rows cuts a one-fragment table into row slices: one Ray read task per slice
    (0.10.5: one), the rows equal pylance's."""
    uri = str(tmp_path / "one.lance")
    lance.write_dataset(batch(0, 3000), uri)
    lance.dataset(uri).delete("id % 7 = 1")
    py = lance.dataset(uri)
    assert len(py.get_fragments()) == 1
    source = lhr.LanceHostDatasource(uri, columns=["id"], target_rows=800)
    assert source.splits == 4
    got = lhr.read_lance_host(uri, columns=["id"], target_rows=800)
    ids = sorted(r["id"] for r in got.take_all())
    assert ids == sorted(py.to_table(columns=["id"])["id"].to_pylist())
    assert got.count() == py.count_rows()


def test_a_one_fragment_table_is_sliced_by_default_when_ray_asks_for_more_tasks(cluster, tmp_path):
    """Without target_rows, a table with fewer fragments than the read tasks Ray asks for is cut
    into row slices of about rows / parallelism (issue 62: one task read it); small tables and
    target_rows stay as they were; the rows equal pylance's."""
    uri = str(tmp_path / "big_one.lance")
    n = 4 * lhr.MIN_SLICE_ROWS
    lance.write_dataset(pa.table({"id": pa.array(range(n), pa.int64())}), uri, max_rows_per_file=n)
    py = lance.dataset(uri)
    assert len(py.get_fragments()) == 1
    source = lhr.LanceHostDatasource(uri, columns=["id"])
    assert source.splits == 1
    assert len(source.get_read_tasks(4)) == 4
    assert len(source.get_read_tasks(200)) == 4, "slices keep at least MIN_SLICE_ROWS rows"
    assert len(source.get_read_tasks(1)) == 1
    assert len(lhr.LanceHostDatasource(uri, columns=["id"], target_rows=n).get_read_tasks(4)) == 1
    got = lhr.read_lance_host(uri, columns=["id"], override_num_blocks=4)
    assert got.count() == n
    assert got.sum("id") == sum(range(n))
    small = str(tmp_path / "small_one.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(1000), pa.int64())}), small)
    assert len(lhr.LanceHostDatasource(small, columns=["id"]).get_read_tasks(4)) == 1


def test_misspelled_keywords_are_errors(cluster, table):
    """read_lance_host with a misspelled keyword is an error naming the closest valid one
    (0.10.5: Ray handed it to the source, which ignored it and read unfiltered); keywords of the
    library's functions are checked by Python (TypeError)."""
    uri, py = table
    with pytest.raises(lh.InvalidArgumentError, match="unknown keyword 'fitler'.*did you mean 'filter'"):
        lhr.read_lance_host(uri, fitler="id < 10")
    assert lhr.read_lance_host(uri, columns=["id"], override_num_blocks=2).count() == py.count_rows()
    with pytest.raises(TypeError, match="nprobe"):
        lhr.vector_search(uri, "vec", [0.0] * DIM, k=3, nprobe=4)


def test_branch_and_change_data_equal_pylance(cluster, tmp_path):
    uri = str(tmp_path / "versions.lance")
    t = lambda a, b: pa.table({"id": pa.array(range(a, b), pa.int64()), "tag": [f"t{i}" for i in range(a, b)]})
    lance.write_dataset(t(0, 200), uri, max_rows_per_file=70, enable_stable_row_ids=True)
    lance.write_dataset(t(200, 230), uri, mode="append")
    lance.dataset(uri).update({"tag": "'u'"}, where="id < 5")
    lance.dataset(uri).delete("id >= 100 AND id < 103")
    end = lance.dataset(uri).version
    d = lance.dataset(uri).delta(begin_version=1, end_version=end)
    want = sorted([(i, "insert") for i in d.get_inserted_rows().read_all()["id"].to_pylist()]
                  + [(i, "update") for i in d.get_updated_rows().read_all()["id"].to_pylist()]
                  + [(i, "delete") for i in range(100, 103)])
    rows = lhr.read_lance_host(uri, changes_since=1, columns=["id"]).take_all()
    assert sorted((r["id"], r["_change_type"]) for r in rows) == want
    with pytest.raises(lh.InvalidArgumentError, match="changes_since"):
        lhr.read_lance_host(uri, changes_since=1, filter="id > 1")
    b = lance.dataset(uri).create_branch("dev")
    b.insert(t(900, 905))
    assert lhr.read_lance_host(uri, branch="dev").count() == lance.dataset(uri).count_rows() + 5
    got = lhr.read_lance_host(uri, branch="dev", changes_since=end, columns=["id"]).take_all()
    assert sorted(r["id"] for r in got) == list(range(900, 905))
    lance.dataset(uri).tags.create("first", 1)
    assert lhr.read_lance_host(uri, tag="first").count() == 200
    with pytest.raises(lh.InvalidArgumentError, match="tag"):
        lhr.read_lance_host(uri, tag="first", version=2)
