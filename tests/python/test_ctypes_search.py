"""Another language drives the distributed vector-search API: plan, ship split bytes, search
each split, merge the top-K and take the winners, all through ctypes; pyarrow reads the
streams. The exact answer is computed here from the table's own vectors (read with a scan)."""

import ctypes
import os
import subprocess

import pyarrow as pa
import pytest

from test_ctypes_stream import ArrowArrayStream, LANCE_OK

LANCE_METRIC_L2 = 1
LANCE_SPLIT_INDEX_SEGMENT = 2
LANCE_ELEMENT_F32 = 2


class VectorQuery(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("column", ctypes.c_char_p),
        ("vector", ctypes.c_void_p),
        ("dimension", ctypes.c_size_t),
        ("element_type", ctypes.c_int32),
        ("k", ctypes.c_uint64),
        ("metric", ctypes.c_int32),
        ("nprobes", ctypes.c_uint32),
        ("refine_factor", ctypes.c_uint32),
        ("ef", ctypes.c_uint32),
        ("prefilter_sql", ctypes.c_char_p),
        ("columns", ctypes.POINTER(ctypes.c_char_p)),
        ("num_columns", ctypes.c_size_t),
        ("with_row_id", ctypes.c_bool),
        ("defer_refine", ctypes.c_bool),
    ]


class IoStats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t)] + [
        (name, ctypes.c_uint64)
        for name in (
            "read_requests",
            "read_bytes",
            "index_read_requests",
            "index_read_bytes",
            "index_cache_hits",
            "index_cache_misses",
            "data_cache_hits",
            "data_cache_misses",
            "data_cache_hit_bytes",
        )
    ]


@pytest.fixture(scope="module")
def lib():
    lib = ctypes.CDLL(os.environ["LANCE_HOST_LIB"])
    P = ctypes.c_void_p
    sigs = {
        "lance_dataset_open": (P, [ctypes.c_char_p, P, ctypes.c_uint64]),
        "lance_dataset_free": (None, [P]),
        "lance_dataset_scan_v2": (ctypes.c_int32, [P, P, ctypes.POINTER(ArrowArrayStream)]),
        "lance_dataset_plan_vector_search": (
            ctypes.c_int32,
            [P, ctypes.c_char_p, ctypes.c_int32, ctypes.c_bool, ctypes.c_uint64, ctypes.POINTER(P)],
        ),
        "lance_split_plan_count": (ctypes.c_size_t, [P]),
        "lance_split_plan_get": (P, [P, ctypes.c_size_t]),
        "lance_split_plan_free": (None, [P]),
        "lance_split_kind": (ctypes.c_int32, [P]),
        "lance_split_serialize": (
            ctypes.c_int32,
            [P, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)), ctypes.POINTER(ctypes.c_size_t)],
        ),
        "lance_bytes_free": (None, [ctypes.POINTER(ctypes.c_uint8), ctypes.c_size_t]),
        "lance_split_deserialize": (P, [ctypes.c_char_p, ctypes.c_size_t]),
        "lance_split_open_dataset": (P, [P, P]),
        "lance_split_free": (None, [P]),
        "lance_vector_query_init_v2": (ctypes.c_int32, [ctypes.POINTER(VectorQuery), ctypes.c_size_t]),
        "lance_split_search_v2": (
            ctypes.c_int32,
            [P, P, ctypes.POINTER(VectorQuery), ctypes.POINTER(ArrowArrayStream)],
        ),
        "lance_topk_merge": (
            ctypes.c_int32,
            [ctypes.POINTER(ArrowArrayStream), ctypes.c_size_t, ctypes.c_uint64, ctypes.c_uint64,
             ctypes.POINTER(ArrowArrayStream)],
        ),
        "lance_dataset_take_rows": (
            ctypes.c_int32,
            [P, ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t, P, ctypes.c_size_t,
             ctypes.POINTER(ArrowArrayStream)],
        ),
        "lance_dataset_refine_v2": (
            ctypes.c_int32,
            [P, ctypes.POINTER(VectorQuery), ctypes.POINTER(ArrowArrayStream),
             ctypes.POINTER(ArrowArrayStream)],
        ),
        "lance_split_segment_uuid": (ctypes.c_int32, [P, ctypes.c_char_p]),
        "lance_dataset_prewarm_index_segments_v2": (
            ctypes.c_int32,
            [P, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(IoStats)],
        ),
        "lance_last_error_message": (ctypes.c_char_p, []),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


@pytest.fixture(scope="module")
def vectors_uri(tmp_path_factory):
    root = tmp_path_factory.mktemp("whv") / "warehouse"
    out = subprocess.run(
        [os.environ["LANCE_HOST_TESTKIT"], "warehouse", str(root)], check=True, capture_output=True
    )
    facts = dict(l.split("=", 1) for l in out.stdout.decode().splitlines() if "=" in l)
    return facts["vectors.uri"]


def read(stream):
    return pa.RecordBatchReader._import_from_c(ctypes.addressof(stream)).read_all()


def test_distributed_search_from_python(lib, vectors_uri):
    ds = lib.lance_dataset_open(vectors_uri.encode(), None, 0)
    assert ds, lib.lance_last_error_message()
    try:
        st = ArrowArrayStream()
        assert lib.lance_dataset_scan_v2(ds, None, ctypes.byref(st)) == LANCE_OK
        table = read(st)
        ids = table["id"].to_pylist()
        vecs = table["embedding"].to_pylist()
        query = [ctypes.c_float(x + 0.01).value for x in vecs[ids.index(1234)]]

        def dist(v):
            return sum((a - b) * (a - b) for a, b in zip(v, query))

        exact = [i for _, i in sorted((dist(v), i) for i, v in zip(ids, vecs))[:10]]

        for use_index, defer in ((False, False), (True, False), (True, True)):
            plan = ctypes.c_void_p()
            rc = lib.lance_dataset_plan_vector_search(
                ds, b"embedding", LANCE_METRIC_L2, use_index, 0, ctypes.byref(plan)
            )
            assert rc == LANCE_OK, lib.lance_last_error_message()
            # Coordinator: split bytes, as they would travel to workers.
            shipped = []
            kinds = []
            for i in range(lib.lance_split_plan_count(plan)):
                split = lib.lance_split_plan_get(plan, i)
                kinds.append(lib.lance_split_kind(split))
                buf = ctypes.POINTER(ctypes.c_uint8)()
                n = ctypes.c_size_t()
                assert lib.lance_split_serialize(split, ctypes.byref(buf), ctypes.byref(n)) == 0
                shipped.append(ctypes.string_at(buf, n.value))
                lib.lance_bytes_free(buf, n)
                lib.lance_split_free(split)
            lib.lance_split_plan_free(plan)
            assert (LANCE_SPLIT_INDEX_SEGMENT in kinds) == use_index

            # Workers: rebuild, open the pinned table, search.
            q = VectorQuery()
            lib.lance_vector_query_init_v2(ctypes.byref(q), ctypes.sizeof(q))
            qbuf = (ctypes.c_float * len(query))(*query)
            q.column = b"embedding"
            q.vector = ctypes.cast(qbuf, ctypes.c_void_p)
            q.dimension = len(query)
            q.element_type = LANCE_ELEMENT_F32
            q.k = 10
            q.nprobes = 4
            q.defer_refine = defer
            q.refine_factor = 4 if defer else 0
            results = (ArrowArrayStream * len(shipped))()
            for i, data in enumerate(shipped):
                split = lib.lance_split_deserialize(data, len(data))
                assert split, lib.lance_last_error_message()
                wds = lib.lance_split_open_dataset(split, None)
                assert wds, lib.lance_last_error_message()
                if kinds[i] == LANCE_SPLIT_INDEX_SEGMENT:
                    # The worker warms exactly the segment it serves.
                    uuid = ctypes.create_string_buffer(16)
                    assert lib.lance_split_segment_uuid(split, uuid) == LANCE_OK
                    io = IoStats(struct_size=ctypes.sizeof(IoStats))
                    rc = lib.lance_dataset_prewarm_index_segments_v2(wds, b"emb_pq", uuid.raw, 16, ctypes.byref(io))
                    assert rc == LANCE_OK, lib.lance_last_error_message()
                    assert io.index_cache_hits + io.index_cache_misses == 1
                    rc = lib.lance_dataset_prewarm_index_segments_v2(wds, b"emb_pq", uuid.raw, 15, None)
                    assert rc != LANCE_OK and b"multiple of 16" in lib.lance_last_error_message()
                rc = lib.lance_split_search_v2(wds, split, ctypes.byref(q), ctypes.byref(results[i]))
                assert rc == LANCE_OK, lib.lance_last_error_message()
                lib.lance_dataset_free(wds)
                lib.lance_split_free(split)

            # Coordinator: merge and take the winners. With deferred refine, the segments'
            # approximate candidates are merged and re-ranked once, then merged with the
            # exact flat results.
            merged = ArrowArrayStream()
            if defer:
                seg = [i for i, k in enumerate(kinds) if k == LANCE_SPLIT_INDEX_SEGMENT]
                flat = [i for i, k in enumerate(kinds) if k != LANCE_SPLIT_INDEX_SEGMENT]
                approx = (ArrowArrayStream * len(seg))(*[results[i] for i in seg])
                candidates = ArrowArrayStream()
                assert lib.lance_topk_merge(approx, len(seg), 40, 0, ctypes.byref(candidates)) == 0
                exact_streams = (ArrowArrayStream * (len(flat) + 1))(*[results[i] for i in flat])
                rc = lib.lance_dataset_refine_v2(
                    ds, ctypes.byref(q), ctypes.byref(candidates), ctypes.byref(exact_streams[len(flat)])
                )
                assert rc == LANCE_OK, lib.lance_last_error_message()
                assert lib.lance_topk_merge(exact_streams, len(flat) + 1, 10, 0, ctypes.byref(merged)) == 0
                top = read(merged)
                # Exact distances after the re-rank.
                for i, d in zip(top["id"].to_pylist(), top["_distance"].to_pylist()):
                    assert abs(dist(vecs[ids.index(i)]) - d) <= 1e-3 * max(d, 1.0)
            else:
                assert lib.lance_topk_merge(results, len(shipped), 10, 0, ctypes.byref(merged)) == 0
                top = read(merged)
            rowids = (ctypes.c_uint64 * top.num_rows)(*top["_rowid"].to_pylist())
            taken = ArrowArrayStream()
            assert lib.lance_dataset_take_rows(ds, rowids, top.num_rows, None, 0, ctypes.byref(taken)) == 0
            winners = read(taken)["id"].to_pylist()
            assert winners == top["id"].to_pylist()
            if use_index:
                assert winners[0] == 1234
                assert len(set(winners) & set(exact)) >= 5
            else:
                assert winners == exact
    finally:
        lib.lance_dataset_free(ds)
