"""The `lance_host` Python package (python/), installed by the README's test command with pip:
it imports with nothing else set, covers every C function of the header, and reads a
pylance-written table (local and s3://) the way a distributed engine does — splits and
snapshot tokens pickled to worker processes, scans, vector and full-text search, merges, take,
counts, statistics, prewarm, catalogs, session, call contexts, logging and metrics."""

import os
import pickle
import re
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")

ROOT = Path(__file__).resolve().parents[2]
DIM = 8


def test_imports_with_nothing_set_and_uses_the_bundled_library():
    env = {k: v for k, v in os.environ.items() if k != "LANCE_HOST_LIB"}
    out = subprocess.run(
        [sys.executable, "-c", "import lance_host, lance_host._ffi as f; print(lance_host.version()); print(f.library_path())"],
        capture_output=True, text=True, env=env, cwd="/", check=True).stdout.split()
    assert out[0] == lh.version() and re.fullmatch(r"\d+\.\d+\.\d+", out[0])
    # The installed copy (site-packages, or dist-packages on Debian's python), not the source tree.
    assert out[1].endswith("lance_host/liblance_host.so") and not out[1].startswith(str(ROOT)), out[1]
    assert lh.version_number() >= 500


def test_every_c_function_has_a_cpp_and_a_python_counterpart():
    """Reads the header's function list: each function is called by the C++ header (frees count
    where they are the RAII deleters) and by the Python package's public module."""
    header = (ROOT / "include" / "lance_host.h").read_text()
    functions = set(re.findall(r"\b(lance_[a-z0-9_]+)\(", header)) - {"lance_host_h"}
    functions = {f for f in functions if re.search(rf"^[A-Za-z].*\b{f}\(", header, re.M)}
    package = Path(lh.__file__).parent
    source = "\n".join(p.read_text() for p in sorted(package.glob("*.py")) if p.name != "_ffi.py")
    declared = set(lh._ffi.SIGNATURES)
    assert functions == declared, f"header vs declarations: {sorted(functions ^ declared)}"
    # Used by the public API (not only declared): each name appears as LIB.<name> in the package's modules.
    unused = sorted(f for f in functions if not re.search(rf"LIB\.{f}\b", source))
    assert not unused, f"C functions without a Python counterpart: {unused}"
    cpp = (ROOT / "include" / "lance_host.hpp").read_text()
    missing = sorted(f for f in functions if not re.search(rf"\b{f}\b", cpp))
    assert not missing, f"C functions without a C++ counterpart: {missing}"


def batch(start, end):
    rng = np.random.default_rng(start)
    ids = np.arange(start, end)
    words = ["alpha", "beta", "gamma", "delta", "quick", "brown", "fox"]
    text = [" ".join(words[(i * k) % 7] for k in range(1, 6)) for i in ids]
    vec = rng.normal(size=(end - start, DIM)).astype(np.float32)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "cat": pa.array([f"c{i % 3}" for i in ids]),
        "text": pa.array(text),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), DIM),
    })


def write(uri, storage_options=None):
    kw = dict(max_rows_per_file=300, storage_options=storage_options)
    ds = lance.write_dataset(batch(0, 1200), uri, **kw)
    ds.create_index("vec", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=2, name="vec_idx")
    ds.create_scalar_index("text", "INVERTED", with_position=True, name="text_idx")
    ds = lance.write_dataset(batch(1200, 1500), uri, mode="append", **kw)
    ds.delete("id % 17 = 3")
    return lance.dataset(uri, storage_options=storage_options)


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("pkg") / "t.lance")
    return uri, write(uri)


def scan_worker(args):
    """A worker process: the split and the snapshot token arrive pickled / as bytes."""
    token, split = args
    import lance_host
    ds = lance_host.open_snapshot(token)
    assert ds.version == split.version
    return os.getpid(), ds.scan_split(split, columns=["id"]).read_all()["id"].to_pylist()


def test_distributed_scan_in_worker_processes(table):
    uri, pyds = table
    ds = lh.open(uri)
    assert ds.count_rows() == pyds.count_rows()
    assert ds.count_rows("cat = 'c1'") == pyds.count_rows("cat = 'c1'")
    splits = ds.plan_scan()
    assert len(splits) == len(pyds.get_fragments())
    shipped = [pickle.loads(pickle.dumps(s)) for s in splits]
    assert [bytes(s) for s in shipped] == [bytes(s) for s in splits]
    token = ds.export_snapshot()
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        results = list(pool.map(scan_worker, [(token, s) for s in shipped]))
    assert all(pid != os.getpid() for pid, _ in results)
    ids = sorted(i for _, part in results for i in part)
    assert ids == sorted(pyds.to_table(columns=["id"])["id"].to_pylist())


def test_scan_options_stream_stats_and_cancel(table):
    uri, pyds = table
    ds = lh.open(uri)
    r = ds.scan(columns=["id", "cat"], filter="id < 100", with_row_id=True)
    assert isinstance(r, pa.RecordBatchReader)
    t = r.read_all()
    assert t.column_names == ["id", "cat", "_rowid"]
    assert t["id"].to_pylist() == [i for i in range(100) if i % 17 != 3]
    assert ds.scan(limit=5, offset=10, columns=["id"]).read_all()["id"].to_pylist() == pyds.to_table(
        columns=["id"], limit=5, offset=10)["id"].to_pylist()
    with ds.scan_stream(columns=["id"]) as s:
        n = sum(b.num_rows for b in s)
        assert n == pyds.count_rows()
        assert isinstance(s.io_stats(), lh.IoStats)
    s = ds.scan_stream(columns=["id"], batch_size=10)
    next(s)
    s.cancel()
    with pytest.raises(OSError) as e:
        for _ in s:
            pass
    assert e.value.errno == 125
    plan_text = ds.explain_scan(filter="id > 3")
    assert "id > Int64(3)" in plan_text and uri in plan_text, plan_text


def test_vector_and_full_text_search_and_take(table):
    uri, pyds = table
    ds = lh.open(uri)
    q = pyds.take([5], columns=["vec"])["vec"].to_pylist()[0]
    plan = ds.plan_vector_search("vec", use_index=False)
    assert plan.index_name is None and "use_index" in plan.reason
    parts = [ds.search_split(s, "vec", q, k=5, columns=["id"]) for s in plan]
    top = lh.merge_top_k(parts, 5).read_all()
    exact = pyds.to_table(nearest={"column": "vec", "q": q, "k": 5, "use_index": False}, columns=["id"])
    assert top["id"].to_pylist() == exact["id"].to_pylist()
    rows = ds.take(top["_rowid"].to_pylist(), columns=["id"])
    assert rows["id"].to_pylist() == top["id"].to_pylist()
    iplan = ds.plan_vector_search("vec")
    assert iplan.index_name == "vec_idx"
    assert "vec_idx" in ds.explain_search(iplan[0], "vec", q, k=5) or "ANN" in ds.explain_search(iplan[0], "vec", q, k=5)
    seg = [s for s in iplan if s.kind == lh.SPLIT_INDEX_SEGMENT]
    cands = lh.merge_top_k([ds.search_split(s, "vec", q, k=5, refine_factor=2, defer_refine=True) for s in seg], 10)
    refined = ds.refine(cands, "vec", q, k=5).read_all()
    assert refined.num_rows == 5 and refined["_distance"].to_pylist() == sorted(refined["_distance"].to_pylist())
    # Full text: statistics once, every split, merged: pylance's answer.
    fplan = ds.plan_fts("text")
    stats = ds.fts_stats("text", "quick fox")
    merged = lh.merge_fts([ds.fts_search_split(s, "text", "quick fox", stats, k=10, columns=["id"]) for s in fplan], 10).read_all()
    from lance.query import MatchQuery
    want = pyds.to_table(full_text_query=MatchQuery("quick fox", "text"), limit=10, columns=["id"])
    np.testing.assert_allclose(merged["_score"].to_numpy(), want["_score"].to_numpy(), rtol=1e-5)
    assert "text_idx" in ds.explain_fts(fplan[0], "text", "quick fox", stats)
    fused = lh.rrf_merge(lh.merge_top_k([ds.search_split(s, "vec", q, k=5) for s in plan], 5),
                         lh.merge_fts([ds.fts_search_split(s, "text", "quick fox", stats, k=5) for s in fplan], 5), 5)
    assert fused.read_all().column_names == ["_rowid", "_relevance_score", "_distance", "_score"]


def test_combined_splits_search_once_and_equal_pylance(tmp_path):
    # Two index segments (an index, an append, an index delta) and an unindexed tail.
    uri = str(tmp_path / "segs.lance")
    pyds = lance.write_dataset(batch(0, 1200), uri, max_rows_per_file=300)
    pyds.create_index("vec", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=2, name="vec_idx")
    pyds = lance.write_dataset(batch(1200, 1800), uri, mode="append", max_rows_per_file=300)
    pyds.optimize.optimize_indices(num_indices_to_merge=0)
    pyds = lance.write_dataset(batch(1800, 2000), uri, mode="append", max_rows_per_file=300)
    ds = lh.open(uri)
    plan = ds.plan_vector_search("vec")
    segs = [s for s in plan if s.kind == lh.SPLIT_INDEX_SEGMENT]
    flat = [s for s in plan if s.kind == lh.SPLIT_FLAT]
    assert len(segs) == 2 and flat, plan.reason
    both = pickle.loads(pickle.dumps(lh.Split.combine(segs)))
    assert both.segment_uuids == [s.segment_uuid for s in segs]
    assert both.fragment_ids == segs[0].fragment_ids + segs[1].fragment_ids
    assert both.row_count == segs[0].row_count + segs[1].row_count
    with pytest.raises(lh.InvalidArgumentError, match="segment_uuids"):
        both.segment_uuid
    assert flat[0].segment_uuids == [] and flat[0].segment_uuid is None
    for seed in (5, 700, 1900):
        q = pyds.take([seed], columns=["vec"])["vec"].to_pylist()[0]
        # The recommended path with one call for both segments: deferred candidates, one
        # global re-rank, merged with the exact flat tail; pylance's global search.
        cands = ds.search_split(both, "vec", q, k=10, nprobes=2, refine_factor=4, defer_refine=True, columns=["id"])
        refined = ds.refine(cands, "vec", q, k=10, columns=["id"])
        tail = [ds.search_split(s, "vec", q, k=10, columns=["id"]) for s in flat]
        got = lh.merge_top_k([refined, *tail], 10).read_all()
        want = pyds.to_table(nearest={"column": "vec", "q": q, "k": 10, "nprobes": 2, "refine_factor": 4}, columns=["id"])
        assert got["id"].to_pylist() == want["id"].to_pylist(), seed
        np.testing.assert_allclose(got["_distance"].to_numpy(), want["_distance"].to_numpy(), rtol=1e-4)
    with pytest.raises(lh.InvalidArgumentError, match="split 1 cannot be combined"):
        lh.Split.combine([segs[0], flat[0]])
    with pytest.raises(lh.InvalidArgumentError, match="no splits"):
        lh.Split.combine([])
    with pytest.raises(TypeError):
        lh.Split.combine([segs[0], b"bytes"])
    # Split.group: at most n splits, at least one per kind, each kind's splits dealt round-robin.
    assert [bytes(s) for s in lh.Split.group(plan, None)] == [bytes(s) for s in plan]
    one = lh.Split.group(plan, 1)
    assert sorted(s.kind for s in one) == sorted({s.kind for s in plan})
    assert sorted(f for s in one for f in s.fragment_ids) == sorted(f for s in plan for f in s.fragment_ids)
    assert [s.segment_uuids for s in one if s.kind == lh.SPLIT_INDEX_SEGMENT] == [both.segment_uuids]
    many = lh.Split.group(plan, 100)
    assert sorted(bytes(s) for s in many) == sorted(bytes(s) for s in plan)
    for bad in (0, -1, True, 2.0, "2"):
        with pytest.raises(lh.InvalidArgumentError, match="at least 1"):
            lh.Split.group(plan, bad)


def test_metadata_statistics_indexes_prewarm_and_counts(table):
    uri, pyds = table
    ds = lh.open(uri)
    assert [f.id for f in ds.fragments()] == [f.fragment_id for f in pyds.get_fragments()]
    assert [v.version for v in ds.versions()] == [v["version"] for v in pyds.versions()]
    assert ds.latest_version() == pyds.version == ds.version
    assert ds.schema.names == pyds.schema.names
    st = ds.statistics()
    assert sum(f[1] - f[2] for f in st.fragments) == pyds.count_rows()
    assert {c[0] for c in st.columns} >= {"id", "text"}
    idx = {i.name: i for i in ds.indexes()}
    assert idx["vec_idx"].metric and idx["text_idx"].index_type.upper() == "INVERTED"
    # pylance trained vec_idx with num_partitions=2 (see the fixture above)
    assert [s.num_partitions for s in idx["vec_idx"].segments] == [2] * len(idx["vec_idx"].segments)
    assert all(s.num_partitions is None for s in idx["text_idx"].segments)
    io = ds.prewarm_index("text_idx")
    assert isinstance(io, lh.IoStats)
    ds.prewarm_index("vec_idx", segments=[idx["vec_idx"].segments[0].uuid])
    ds.prewarm_index_quietly("vec_idx")
    n, io = ds.count_split_rows(ds.plan_scan()[0], "id >= 0")
    assert n == ds.fragments()[0].logical_rows
    assert ds.count_rows_with_io("cat = 'c2'")[0] == pyds.count_rows("cat = 'c2'")
    old = lh.open(uri, version=1)
    assert old.count_rows() == 1200
    assert lh.open_at_timestamp(uri, 2**62).version == ds.version
    assert ds.plan_scan()[0].open_dataset().version == ds.version


def test_errors_catalog_session_context_logging_metrics(table, tmp_path):
    uri, _ = table
    with pytest.raises(lh.LanceError) as e:
        lh.open(str(tmp_path / "missing.lance"))
    assert e.value.code == 2 and e.value.name == "LANCE_ERR_NOT_FOUND" and lh.error_code_name(2) == e.value.name
    with pytest.raises(lh.LanceError) as e:
        lh.Split.from_bytes(b"not a split")
    assert e.value.name == "LANCE_ERR_CORRUPT"
    with pytest.raises(lh.LanceError, match="unknown column"):
        lh.open(uri).scan(columns=["nope"])
    # A directory catalog over the table's parent.
    cat = lh.Catalog({"root": str(Path(uri).parent)})
    assert "t" in cat.list_tables()
    assert cat.list_namespaces() == []
    info = cat.describe_table("t")
    assert info.location.rstrip("/").endswith("t.lance") and info.latest_version == lh.open(uri).version
    assert cat.open_table("t").count_rows() == lh.open(uri).count_rows()
    # A cancelled call context fails the calls of its thread.
    ctx = lh.CallContext(timeout_ms=0)
    ctx.cancel()
    with ctx:
        with pytest.raises(lh.LanceError) as e:
            lh.open(uri)
        assert e.value.name == "LANCE_ERR_CANCELLED"
    assert lh.open(uri).count_rows() > 0
    # Session figures, metrics, log records.
    st = lh.session_stats()
    assert st["metadata_hits"] + st["metadata_misses"] > 0 and st["metadata_entries"] > 0, st
    with pytest.raises(lh.LanceError):
        lh.configure_session(lh.SessionOptions.defaults())  # the session is already running
    lh.flush_data_cache()
    m = lh.metrics()
    assert m["ops.open"] >= 3 and m["ops.scan"] >= 1, m
    records = []
    lh.set_log_callback(lambda lvl, target, msg: records.append((lvl, target, msg)), level="debug")
    lh.open(uri).scan(columns=["id"]).read_all()
    lh.set_log_callback(None)
    assert records, "no log record reached the callback"


def s3_worker(args):
    token, split, opts = args
    import lance_host
    return lance_host.open_snapshot(token, storage_options=opts).scan_split(split, columns=["id"]).read_all().num_rows


def test_s3_table(tmp_path):
    import socket
    import time
    import urllib.request
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "integration" / "moto_server.py"), str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ep = f"http://127.0.0.1:{port}"
        for _ in range(150):
            try:
                urllib.request.urlopen(urllib.request.Request(f"{ep}/pkg", method="PUT")).read()
                break
            except Exception:
                time.sleep(0.2)
        opts = {"aws_access_key_id": "a", "aws_secret_access_key": "b", "aws_region": "us-east-1",
                "aws_endpoint": ep, "allow_http": "true", "aws_virtual_hosted_style_request": "false"}
        uri = "s3://pkg/t.lance"
        pyds = write(uri, opts)
        ds = lh.open(uri, storage_options=opts)
        assert ds.count_rows() == pyds.count_rows()
        token = ds.export_snapshot()
        with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
            counts = list(pool.map(s3_worker, [(token, s, opts) for s in ds.plan_scan()]))
        assert sum(counts) == pyds.count_rows()
        with ds.scan_stream(columns=["id"]) as s:
            s.read_all()
            assert s.io_stats().read_requests > 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_readme_walkthrough_runs():
    """examples/walkthrough.py, as the README's "From Python" section runs it, on the warehouse."""
    warehouse = os.environ["LANCE_HOST_WAREHOUSE"]
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "walkthrough.py"), warehouse],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    facts = dict(l.split("=", 1) for l in (Path(warehouse) / "FIXTURE").read_text().splitlines() if "=" in l)
    assert f"scanned {facts['vectors.rows']} rows" in out.stdout, out.stdout
    assert out.stdout.count("neighbour row") == 5 and out.stdout.count("'quick brown fox' in id") == 3, out.stdout


def test_the_walkthrough_takes_its_table_and_columns_from_arguments(table):
    """examples/walkthrough.py on a pylance table whose vector column is `vec`, not the demo's
    `embedding`: every name comes from the arguments."""
    uri, pyds = table
    root, name = os.path.split(uri)
    name = name.removesuffix(".lance")
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "walkthrough.py"), root, "--vectors", name,
                          "--vector", "vec", "--docs", name, "--text", "text", "--filter", "cat = 'c2'"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"scanned {pyds.count_rows()} rows" in out.stdout, out.stdout
    assert out.stdout.count("neighbour row") == 5 and "prewarm of vec_idx" in out.stdout, out.stdout
    matching = pyds.count_rows("cat = 'c2'")
    assert f"{matching} rows match cat = 'c2'" in out.stdout, out.stdout
    phrase = sum(1 for t in pyds.to_table(columns=["text"])["text"].to_pylist() if "quick brown fox" in t)
    assert out.stdout.count("'quick brown fox' in id") == min(3, phrase), out.stdout


def test_distance_range_equals_pylance(table):
    """distance_range=(lower, upper) keeps lower <= _distance < upper before each split's top k:
    flat splits, index segments (re-ranked) and the deferred global re-rank all equal pylance's
    exact search with the same range."""
    uri, pyds = table
    ds = lh.open(uri)
    q = pyds.take([40], columns=["vec"])["vec"].to_pylist()[0]
    exact_all = pyds.to_table(nearest={"column": "vec", "q": q, "k": 60, "use_index": False}, columns=["id"])
    d = exact_all["_distance"].to_pylist()
    lo, hi = d[3], d[25]
    want = pyds.to_table(nearest={"column": "vec", "q": q, "k": 10, "use_index": False, "distance_range": (lo, hi)},
                         columns=["id"])
    assert want.num_rows == 10 and min(want["_distance"].to_pylist()) >= lo
    flat = lh.merge_top_k([ds.search_split(s, "vec", q, k=10, columns=["id"], distance_range=(lo, hi))
                           for s in ds.plan_vector_search("vec", use_index=False)], 10).read_all()
    assert flat["id"].to_pylist() == want["id"].to_pylist()
    plan = ds.plan_vector_search("vec")
    segs = [s for s in plan if s.kind == lh.SPLIT_INDEX_SEGMENT]
    flats = [s for s in plan if s.kind == lh.SPLIT_FLAT]
    assert segs and flats
    opts = dict(k=10, columns=["id"], nprobes=2, distance_range=(lo, hi))
    per_split = lh.merge_top_k([ds.search_split(s, "vec", q, refine_factor=50, **opts) for s in plan], 10).read_all()
    # Index segments apply the range as Lance does (approximate, then exact): every row is in
    # range, a row near a bound can be missed, and the trained index differs run to run.
    in_range = set(pyds.to_table(nearest={"column": "vec", "q": q, "k": 1500, "use_index": False,
                                          "distance_range": (lo, hi)}, columns=["id"])["id"].to_pylist())
    dist = per_split["_distance"].to_pylist()
    assert all(lo <= x < hi for x in dist) and dist == sorted(dist)
    assert set(per_split["id"].to_pylist()) <= in_range
    cands = lh.merge_top_k([ds.search_split(s, "vec", q, refine_factor=50, defer_refine=True, **opts) for s in segs], 500)
    refined = ds.refine(cands, "vec", q, k=10, distance_range=(lo, hi))
    deferred = lh.merge_top_k([refined] + [ds.search_split(s, "vec", q, **opts) for s in flats], 10).read_all()
    assert deferred["id"].to_pylist() == want["id"].to_pylist()
    for bad, why in [((2.0, 1.0), "inverted"), ((float("nan"), None), "finite")]:
        with pytest.raises(lh.LanceError, match=why):
            ds.search_split(plan[0], "vec", q, k=5, distance_range=bad)


def test_batch_search_equals_pylance_per_query(table):
    """A batch of query vectors in one call per split, merged per query, equals pylance's
    exact search of each query."""
    uri, pyds = table
    ds = lh.open(uri)
    qs = pyds.take([3, 77, 500, 1300], columns=["vec"])["vec"].to_pylist()
    plan = ds.plan_vector_search("vec", use_index=False)
    merged = lh.merge_top_k([ds.search_split(s, "vec", qs, k=6, columns=["id"]) for s in plan], 6).read_all()
    assert merged["query_index"].to_pylist() == [i for i in range(4) for _ in range(6)]
    for i, q in enumerate(qs):
        want = pyds.to_table(nearest={"column": "vec", "q": q, "k": 6, "use_index": False}, columns=["id"])
        got = merged.filter(pc.equal(merged["query_index"], i))
        assert got["id"].to_pylist() == want["id"].to_pylist()
    with pytest.raises(lh.LanceError, match="same dimension"):
        ds.search_split(plan[0], "vec", [qs[0], qs[1][:3]], k=3)
    with pytest.raises(lh.LanceError, match="dimension"):
        ds.search_split(plan[0], "vec", [qs[0][:3], qs[1][:3]], k=3)
    with pytest.raises(lh.LanceError, match="no vector"):
        ds.search_split(plan[0], "vec", [], k=3)
    with pytest.raises(lh.LanceError, match="query vector 1 of the batch has a NaN"):
        ds.search_split(plan[0], "vec", [qs[0], [float("nan")] * len(qs[0])], k=3)


def mv_batch(start, end, seed):
    rng = np.random.default_rng(seed)
    rows = [rng.normal(size=(int(rng.integers(2, 5)), DIM)).astype(np.float32).tolist() for _ in range(start, end)]
    return pa.table({"id": pa.array(np.arange(start, end), pa.int64()),
                     "mv": pa.array(rows, type=pa.list_(pa.list_(pa.float32(), DIM)))})


def test_multivector_search_equals_pylance(tmp_path):
    """A multivector column (a list of vectors per row): planned like a vector column (segments
    of its IVF_PQ cosine index plus flat splits), each split searched with a query of several
    vectors, merged. The all-flat plan equals pylance's exact multivector search; the index
    plan returns k rows with distances in order."""
    uri = str(tmp_path / "mv.lance")
    ds = lance.write_dataset(mv_batch(0, 1200, 1), uri, max_rows_per_file=300)
    ds.create_index("mv", "IVF_PQ", metric="cosine", num_partitions=2, num_sub_vectors=2, name="mv_idx")
    ds = lance.write_dataset(mv_batch(1200, 1500, 2), uri, mode="append", max_rows_per_file=300)
    ds.delete("id % 19 = 4")
    q = np.random.default_rng(9).normal(size=(3, DIM)).astype(np.float32).tolist()
    want = ds.to_table(nearest={"column": "mv", "q": q, "k": 8, "use_index": False, "metric": "cosine"},
                       columns=["id"])
    h = lh.open(uri)
    flat = h.plan_vector_search("mv", metric="cosine", use_index=False)
    got = lh.merge_top_k([h.search_split(s, "mv", q, k=8, metric="cosine", columns=["id"]) for s in flat], 8).read_all()
    assert "query_index" not in got.column_names
    assert got["id"].to_pylist() == want["id"].to_pylist()
    np.testing.assert_allclose(got["_distance"].to_numpy(), want["_distance"].to_numpy(), rtol=1e-5)
    plan = h.plan_vector_search("mv")
    assert plan.index_name == "mv_idx"
    assert {s.kind for s in plan} == {lh.SPLIT_INDEX_SEGMENT, lh.SPLIT_FLAT}
    top = lh.merge_top_k([h.search_split(s, "mv", q, k=8, nprobes=2, refine_factor=5, columns=["id"]) for s in plan], 8).read_all()
    d = top["_distance"].to_pylist()
    assert top.num_rows == 8 and d == sorted(d)
    assert not any(i % 19 == 4 for i in top["id"].to_pylist())
    with pytest.raises(lh.LanceError, match="multivector"):
        h.search_split(plan[0], "mv", q, k=3, defer_refine=True, refine_factor=2)


def test_non_blocking_poll_thread_event_and_asyncio(table):
    """Stream.poll with a wake callback (a threading.Event here) and the asyncio iterator built
    on it give the rows of the blocking scan; polling past the end and a cancelled stream are
    errors with their codes."""
    import asyncio
    import threading

    uri, pyds = table
    ds = lh.open(uri)
    expected = pyds.to_table(columns=["id"])["id"].to_pylist()
    s = ds.scan_stream(columns=["id"], batch_size=64)
    got, pendings = [], 0
    while True:
        woken = threading.Event()
        state, b = s.poll(woken.set)
        if state == "end":
            break
        if state == "ready":
            got += b.column(0).to_pylist()
        else:
            pendings += 1
            assert woken.wait(60), "a pending stream was never woken"
    assert got == expected
    with pytest.raises(lh.LanceError) as e:
        s.poll()
    assert e.value.name == "LANCE_ERR_FAILED_PRECONDITION"
    s.close()

    async def read_async():
        out = []
        with ds.scan_stream(columns=["id"], batch_size=64) as st:
            async for b in st.batches_async():
                out += b.column(0).to_pylist()
        return out

    assert asyncio.run(read_async()) == expected

    s = ds.scan_stream(columns=["id"], batch_size=10)
    s.cancel()
    with pytest.raises(lh.LanceError) as e:
        s.poll()
    assert e.value.name == "LANCE_ERR_CANCELLED"
    s.close()


def test_the_package_has_a_version():
    """lance_host.__version__ is the loaded library's version, in the package's public names."""
    import lance_host

    assert lance_host.__version__ == lance_host.version()
    assert lance_host.__version__.count(".") == 2 and "__version__" in lance_host.__all__


def test_the_library_says_how_it_was_built():
    """build_profile() tells a debug library (the test command's) from a release one, as the
    library was compiled: the test command builds with Cargo's dev profile."""
    import os

    import lance_host

    want = "debug" if "/debug/" in os.path.realpath(os.environ.get("LANCE_HOST_LIB", "")) or \
        "build/prefix" in os.environ.get("LANCE_HOST_LIB", "") else None
    assert lance_host.build_profile() in ("debug", "release")
    if want:
        assert lance_host.build_profile() == want


def test_the_namespace_shows_only_the_public_api():
    """dir(lance_host) lists the public API, not what the package imports (ctypes, pa, LIB,
    typing names), and every name it lists exists (spark, ray, polars and daft as submodules)."""
    import lance_host

    names = dir(lance_host)
    assert not {"ctypes", "pa", "LIB", "Optional", "threading", "dataclass"} & set(names)
    assert set(lance_host.__all__) <= set(names)
    # the engine adapters are submodules, imported on use (their engines are optional extras)
    assert all(hasattr(lance_host, n) for n in names if n not in ("spark", "ray", "polars", "daft"))


def test_a_debug_library_warns_once_when_the_package_loads():
    """Issue 62: `import lance_host` on a library that is not a release build warns, once per
    process, naming the library and how to build a release one; a release library is silent."""
    import lance_host
    code = "import lance_host, lance_host.spark, lance_host"
    out = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    warned = out.stderr.count("lance_host: the loaded library")
    if lance_host.build_profile() == "release":
        assert warned == 0, out.stderr
    else:
        assert warned == 1, out.stderr
        assert f"is a {lance_host.build_profile()} build" in out.stderr and "--release" in out.stderr, out.stderr
