"""Another language consumes the library: Python ctypes calls the C ABI and pyarrow imports
the ArrowArrayStream it returns.

Environment: LANCE_HOST_LIB (path to liblance_host.so) and LANCE_HOST_TESTKIT (the testkit
binary, used to write a fresh warehouse). The README's test command sets both.
"""

import ctypes
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

LANCE_OK = 0
LANCE_ERR_INVALID_ARGUMENT = 1
LANCE_ERR_NOT_FOUND = 2


class ArrowArrayStream(ctypes.Structure):
    _fields_ = [
        ("get_schema", ctypes.c_void_p),
        ("get_next", ctypes.c_void_p),
        ("get_last_error", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


class ScanOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("columns", ctypes.POINTER(ctypes.c_char_p)),
        ("num_columns", ctypes.c_size_t),
        ("filter_sql", ctypes.c_char_p),
        ("filter_substrait", ctypes.c_void_p),
        ("filter_substrait_len", ctypes.c_size_t),
        ("limit", ctypes.c_int64),
        ("offset", ctypes.c_int64),
        ("batch_size", ctypes.c_uint64),
        ("with_row_id", ctypes.c_bool),
        ("with_row_addr", ctypes.c_bool),
        ("fragment_ids", ctypes.POINTER(ctypes.c_uint64)),
        ("num_fragment_ids", ctypes.c_size_t),
        ("scan_in_order", ctypes.c_bool),
        ("batch_readahead", ctypes.c_uint32),
        ("fragment_readahead", ctypes.c_uint32),
        ("io_buffer_bytes", ctypes.c_uint64),
    ]


@pytest.fixture(scope="module")
def lib():
    path = os.environ.get("LANCE_HOST_LIB")
    assert path, "set LANCE_HOST_LIB to liblance_host.so"
    lib = ctypes.CDLL(path)
    lib.lance_dataset_open.restype = ctypes.c_void_p
    lib.lance_dataset_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_uint64]
    lib.lance_dataset_free.argtypes = [ctypes.c_void_p]
    lib.lance_dataset_version.restype = ctypes.c_uint64
    lib.lance_dataset_version.argtypes = [ctypes.c_void_p]
    lib.lance_dataset_scan_v2.restype = ctypes.c_int32
    lib.lance_dataset_scan_v2.argtypes = [
        ctypes.c_void_p,
        ctypes.POINTER(ScanOptions),
        ctypes.POINTER(ArrowArrayStream),
    ]
    lib.lance_scan_options_init_v2.argtypes = [ctypes.POINTER(ScanOptions), ctypes.c_size_t]
    lib.lance_last_error_code.restype = ctypes.c_int32
    lib.lance_last_error_message.restype = ctypes.c_char_p
    return lib


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    testkit = os.environ.get("LANCE_HOST_TESTKIT")
    assert testkit, "set LANCE_HOST_TESTKIT to the lance-host-testkit binary"
    root = tmp_path_factory.mktemp("wh") / "warehouse"
    out = subprocess.run([testkit, "warehouse", str(root)], check=True, capture_output=True)
    facts = dict(
        line.split("=", 1) for line in out.stdout.decode().splitlines() if "=" in line
    )
    return root, facts


def open_table(lib, path, version=0):
    handle = lib.lance_dataset_open(str(path).encode(), None, version)
    assert handle, lib.lance_last_error_message().decode()
    return handle


def scan(lib, handle, opts=None):
    stream = ArrowArrayStream()
    rc = lib.lance_dataset_scan_v2(handle, ctypes.byref(opts) if opts else None, ctypes.byref(stream))
    if rc != LANCE_OK:
        return rc, lib.lance_last_error_message().decode()
    reader = pa.RecordBatchReader._import_from_c(ctypes.addressof(stream))
    return rc, reader.read_all()


def test_pyarrow_reads_a_full_scan(lib, warehouse):
    root, facts = warehouse
    handle = open_table(lib, root / "people.lance")
    try:
        assert lib.lance_dataset_version(handle) == int(facts["people.versions"])
        rc, table = scan(lib, handle)
        assert rc == LANCE_OK
        assert table.num_rows == int(facts["people.v3.rows"])
        assert pc.sum(table["id"]).as_py() == int(facts["people.v3.sum_id"])
        assert table.schema.names == ["id", "name", "category", "score", "embedding"]
        names = table["name"].to_pylist()
        ids = table["id"].to_pylist()
        assert all(n == f"person-{i}" for n, i in zip(names, ids))
    finally:
        lib.lance_dataset_free(handle)


def test_filter_projection_and_old_version(lib, warehouse):
    root, facts = warehouse
    handle = open_table(lib, root / "people.lance", 1)
    try:
        opts = ScanOptions()
        lib.lance_scan_options_init_v2(ctypes.byref(opts), ctypes.sizeof(opts))
        cols = (ctypes.c_char_p * 2)(b"id", b"score")
        opts.columns = cols
        opts.num_columns = 2
        opts.filter_sql = b"id >= 250"
        opts.with_row_id = True
        rc, table = scan(lib, handle, opts)
        assert rc == LANCE_OK
        assert table.schema.names == ["id", "score", "_rowid"]
        # Version 1 holds ids below v1.rows, none deleted yet.
        assert table["id"].to_pylist() == list(range(250, int(facts["people.v1.rows"])))
    finally:
        lib.lance_dataset_free(handle)


def test_errors_reach_python(lib, warehouse):
    root, _ = warehouse
    assert not lib.lance_dataset_open(str(root / "missing.lance").encode(), None, 0)
    assert lib.lance_last_error_code() == LANCE_ERR_NOT_FOUND
    assert b"missing.lance" in lib.lance_last_error_message()
    handle = open_table(lib, root / "events.lance")
    try:
        opts = ScanOptions()
        lib.lance_scan_options_init_v2(ctypes.byref(opts), ctypes.sizeof(opts))
        cols = (ctypes.c_char_p * 1)(b"nope")
        opts.columns = cols
        opts.num_columns = 1
        rc, msg = scan(lib, handle, opts)
        assert rc == LANCE_ERR_INVALID_ARGUMENT
        assert "nope" in msg
    finally:
        lib.lance_dataset_free(handle)


def test_counts_and_cancel_from_python(lib, warehouse):
    """Exact counts agree with pyarrow's own count of a scan; a cancelled stream raises."""
    root, facts = warehouse
    lib.lance_dataset_count_rows_where_v2.restype = ctypes.c_int32
    lib.lance_dataset_count_rows_where_v2.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p,
    ]
    lib.lance_stream_cancel.restype = ctypes.c_int32
    lib.lance_stream_cancel.argtypes = [ctypes.POINTER(ArrowArrayStream)]
    handle = open_table(lib, root / "people.lance")
    try:
        n = ctypes.c_uint64()
        assert lib.lance_dataset_count_rows_where_v2(handle, None, ctypes.byref(n), None) == LANCE_OK
        assert n.value == int(facts["people.v3.rows"])
        assert lib.lance_dataset_count_rows_where_v2(handle, b"id >= 250", ctypes.byref(n), None) == LANCE_OK
        opts = ScanOptions()
        lib.lance_scan_options_init_v2(ctypes.byref(opts), ctypes.sizeof(opts))
        opts.filter_sql = b"id >= 250"
        rc, table = scan(lib, handle, opts)
        assert rc == LANCE_OK and table.num_rows == n.value > 0
        rc = lib.lance_dataset_count_rows_where_v2(handle, b"nope > 1", ctypes.byref(n), None)
        assert rc != LANCE_OK and b"nope" in lib.lance_last_error_message()

        stream = ArrowArrayStream()
        assert lib.lance_dataset_scan_v2(handle, None, ctypes.byref(stream)) == LANCE_OK
        assert lib.lance_stream_cancel(ctypes.byref(stream)) == LANCE_OK
        reader = pa.RecordBatchReader._import_from_c(ctypes.addressof(stream))
        with pytest.raises(Exception, match="cancelled"):
            reader.read_all()
        # Session counters by name.
        lib.lance_metric_count.restype = ctypes.c_size_t
        lib.lance_metric.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_uint64)]
        metrics = {}
        for i in range(lib.lance_metric_count()):
            name, value = ctypes.c_char_p(), ctypes.c_uint64()
            assert lib.lance_metric(i, ctypes.byref(name), ctypes.byref(value)) == LANCE_OK
            metrics[name.value.decode()] = value.value
        assert metrics["ops.count"] >= 3 and metrics["ops.scan"] >= 2 and metrics["stream.rows"] > 0
    finally:
        lib.lance_dataset_free(handle)


def test_version_and_struct_sizes(lib, warehouse):
    """The version calls agree, and a struct from another header version is handled by its
    struct_size: a forgotten size is an error, a newer caller's zeroed extra bytes are fine."""
    root, facts = warehouse
    lib.lance_host_version.restype = ctypes.c_char_p
    lib.lance_host_version_number.restype = ctypes.c_uint32
    major, minor, patch = (int(p) for p in lib.lance_host_version().decode().split("."))
    assert lib.lance_host_version_number() == major * 10000 + minor * 100 + patch
    handle = open_table(lib, root / "people.lance")
    try:
        opts = ScanOptions()  # struct_size left 0
        rc, msg = scan(lib, handle, opts)
        assert rc == LANCE_ERR_INVALID_ARGUMENT
        assert "struct_size is 0" in msg

        class Newer(ctypes.Structure):
            _fields_ = [("known", ScanOptions), ("added", ctypes.c_uint64 * 2)]

        newer = Newer()
        lib.lance_scan_options_init_v2(ctypes.byref(newer.known), ctypes.sizeof(Newer))
        assert newer.known.struct_size == ctypes.sizeof(Newer)
        rc, table = scan(lib, handle, newer.known)
        assert rc == LANCE_OK and table.num_rows == int(facts["people.v3.rows"])
    finally:
        lib.lance_dataset_free(handle)
