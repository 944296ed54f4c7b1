"""The Ray fixes of issue 46 on two Ray nodes on this machine (ray.cluster_utils.Cluster: a head
and a worker node, one CPU each), one cluster for the file: a one-fragment table is read by
tasks on both nodes; numpy vectors written from both nodes keep fixed_size_list and take an
IVF_PQ index; a misspelled keyword is an error. pylance is the judge."""

import glob
import json
import os

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")
import ray  # noqa: E402  (installed by the test command: never skipped)
from ray.cluster_utils import Cluster  # noqa: E402

import lance_host.ray as lhr  # noqa: E402

DIM = 8


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    stats = tmp_path_factory.mktemp("raystats2")
    env = {"LANCE_HOST_RAY_STATS_DIR": str(stats), "LANCE_HOST_LIB": os.environ.get("LANCE_HOST_LIB", "")}
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    c.add_node(num_cpus=1)
    ray.init(address=c.address, log_to_driver=False, runtime_env={"env_vars": env})
    c.wait_for_nodes()
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    yield stats
    ray.shutdown()
    c.shutdown()


@ray.remote(num_cpus=1)
def _node_and_pid(_):
    import time

    time.sleep(0.5)
    return ray.get_runtime_context().get_node_id(), os.getpid()


def test_reads_below_a_fragment_use_both_nodes(cluster, tmp_path):
    uri = str(tmp_path / "one.lance")
    ids = np.arange(8000)
    lance.write_dataset(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(ids % 97, pa.int64())}), uri)
    lance.dataset(uri).delete("id % 13 = 5")
    py = lance.dataset(uri)
    assert len(py.get_fragments()) == 1
    for p in glob.glob(os.path.join(str(cluster), "task-*.json")):
        os.remove(p)
    got = lhr.read_lance_host(uri, columns=["id", "v"], target_rows=1000)
    table = pa.concat_tables(ray.get(got.to_arrow_refs()))
    assert sorted(table["id"].to_pylist()) == sorted(py.to_table(columns=["id"])["id"].to_pylist())
    assert sum(table["v"].to_pylist()) == sum(py.to_table(columns=["v"])["v"].to_pylist())
    recs = [json.load(open(p)) for p in glob.glob(os.path.join(str(cluster), "task-*.json"))]
    assert len(recs) == len(lh.open(uri).plan_scan(1000)) == 8
    assert len({r["pid"] for r in recs}) >= 2
    # The cluster runs tasks on both nodes (the read's tasks are scheduled the same way).
    nodes = {n for n, _ in ray.get([_node_and_pid.remote(i) for i in range(4)])}
    assert len(nodes) == 2


def test_numpy_vectors_from_both_nodes_keep_their_type(cluster, tmp_path):
    from lance_host.ray import write_lance_host

    rng = np.random.default_rng(9)
    vecs = rng.normal(size=(400, DIM)).astype(np.float32)
    items = ray.data.from_items([{"id": i, "vec": vecs[i]} for i in range(400)], override_num_blocks=4)
    uri = str(tmp_path / "vec.lance")
    write_lance_host(items, uri)
    write_lance_host(items, uri, mode="overwrite")
    py = lance.dataset(uri)
    assert py.schema.field("vec").type == pa.list_(pa.float32(), DIM) and py.count_rows() == 400
    py.create_index("vec", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=2)
    top = lhr.vector_search(uri, "vec", vecs[7].tolist(), k=1, nprobes=2, refine=20, columns=["id"])
    assert top["id"].to_pylist() == [7]


def test_a_misspelled_keyword_is_an_error(cluster, tmp_path):
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), uri)
    with pytest.raises(lh.InvalidArgumentError, match="did you mean 'target_rows'"):
        lhr.read_lance_host(uri, target_row=10)


def test_a_distributed_aggregate_runs_on_both_nodes_and_equals_pyarrow(cluster, tmp_path):
    uri = str(tmp_path / "agg.lance")
    ids = np.arange(12_000)
    lance.write_dataset(pa.table({"id": pa.array(ids, pa.int64()),
                                  "g": pa.array([f"g{i % 4}" if i % 29 else None for i in ids]),
                                  "x": pa.array((ids % 1000) / 7.0),
                                  "n": pa.array((ids * 31) % 5000, pa.int32())}), uri)
    lance.dataset(uri).delete("id % 11 = 4")
    aggs = [([], "count_all"), ("x", "sum"), ("n", "max"), ("n", "mean"), ("id", "min")]
    got, pids = lhr.aggregate(uri, aggs, group_by="g", filter="n > 100", target_rows=1_500, return_pids=True)
    assert len(pids) == len(lh.open(uri).plan_scan(1_500)) >= 7 and len(set(pids)) >= 2
    expected = lance.dataset(uri).to_table(filter="n > 100").group_by("g").aggregate(aggs)
    key = lambda r: str(r["g"])  # noqa: E731
    ours = sorted(got.to_pylist(), key=key)
    want = sorted(expected.rename_columns(got.column_names).to_pylist(), key=key)
    assert len(ours) == len(want) == 5
    for a, b in zip(ours, want):
        assert a.keys() == b.keys()
        for k in a:
            assert a[k] == pytest.approx(b[k], rel=1e-12) if isinstance(a[k], float) else a[k] == b[k], (k, a, b)
