"""Python configures the process-wide session through ctypes: the data cache's settings
(memory tier, block size, disk tier), its figures in the session stats and metrics, the
disk tier's directory lock between two processes, and the errors for bad settings.

Each scenario runs in a fresh Python process, because the session is configured once per
process before first use. Environment: LANCE_HOST_LIB, LANCE_HOST_TESTKIT (see
test_ctypes_stream.py).
"""

import os
import subprocess
import sys
import textwrap

import pytest

from test_ctypes_stream import warehouse  # noqa: F401 (fixture)

CHILD = textwrap.dedent(
    r'''
    import ctypes, os, sys
    lib = ctypes.CDLL(os.environ["LANCE_HOST_LIB"])
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32

    class SessionOptions(ctypes.Structure):
        _fields_ = [("struct_size", ctypes.c_size_t), ("index_cache_bytes", u64),
                    ("metadata_cache_bytes", u64), ("worker_threads", u32),
                    ("scan_batch_readahead", u32), ("scan_fragment_readahead", u32),
                    ("scan_io_buffer_bytes", u64), ("data_cache_memory_bytes", u64),
                    ("data_cache_disk_bytes", u64), ("data_cache_block_bytes", u64),
                    ("data_cache_disk_dir", ctypes.c_char_p), ("data_cache_disabled", u32)]

    STATS = ["index_hits", "index_misses", "index_entries", "index_bytes", "metadata_hits",
             "metadata_misses", "metadata_entries", "metadata_bytes", "data_cache_hits",
             "data_cache_misses", "data_cache_hit_bytes", "data_cache_storage_requests",
             "data_cache_storage_bytes", "data_cache_evictions", "data_cache_errors",
             "data_cache_memory_bytes", "data_cache_disk_bytes", "data_cache_memory_capacity",
             "data_cache_disk_capacity", "data_cache_disk_enabled", "data_cache_disk_write_drops"]

    class SessionStats(ctypes.Structure):
        _fields_ = [("struct_size", ctypes.c_size_t)] + [(n, u64) for n in STATS]

    lib.lance_last_error_message.restype = ctypes.c_char_p
    lib.lance_dataset_open.restype = ctypes.c_void_p
    lib.lance_dataset_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_uint64]
    lib.lance_dataset_free.argtypes = [ctypes.c_void_p]
    lib.lance_dataset_count_rows.argtypes = [ctypes.c_void_p, ctypes.POINTER(u64)]

    mode, cache_dir, table = sys.argv[1], sys.argv[2], sys.argv[3]
    o = SessionOptions()
    assert lib.lance_session_options_default_v2(ctypes.byref(o), ctypes.sizeof(o)) == 0
    assert (o.data_cache_memory_bytes, o.data_cache_block_bytes) == (256 << 20, 64 << 10)
    assert not o.data_cache_disk_dir and o.data_cache_disabled == 0
    if mode == "errors":
        o.data_cache_block_bytes = 5000
        assert lib.lance_session_configure_v2(ctypes.byref(o)) == 1
        assert b"data_cache_block_bytes" in lib.lance_last_error_message()
        o.data_cache_block_bytes = 0
        o.data_cache_memory_bytes = 1024
        assert lib.lance_session_configure_v2(ctypes.byref(o)) == 1
        assert b"four blocks" in lib.lance_last_error_message()
        o.data_cache_memory_bytes = 0
        o.data_cache_disabled = 1
        o.data_cache_disk_dir = cache_dir.encode()
        assert lib.lance_session_configure_v2(ctypes.byref(o)) == 1
        assert b"memory tier" in lib.lance_last_error_message()
        o.data_cache_disk_dir = None
        assert lib.lance_session_configure_v2(ctypes.byref(o)) == 0
        s = SessionStats(struct_size=ctypes.sizeof(SessionStats))
        assert lib.lance_session_stats_v2(ctypes.byref(s)) == 0
        assert s.data_cache_memory_capacity == 0 and s.data_cache_disk_enabled == 0
        print("OFF-OK")
        sys.exit(0)
    if mode == "baddir":
        # A directory that cannot be created: configure accepts it (nothing is touched before
        # first use); the first call that starts the session fails with the reason, and so
        # does every later one.
        o.data_cache_disk_dir = cache_dir.encode()
        assert lib.lance_session_configure_v2(ctypes.byref(o)) == 0
        for _ in range(2):
            assert not lib.lance_dataset_open(table.encode(), None, 0)
            assert lib.lance_last_error_code() == 1, lib.lance_last_error_code()
            msg = lib.lance_last_error_message()
            assert b"data cache directory" in msg and cache_dir.encode() in msg, msg
        print("BADDIR-OK")
        sys.exit(0)
    o.data_cache_memory_bytes = 8 << 20
    o.data_cache_block_bytes = 4096
    o.data_cache_disk_dir = cache_dir.encode()
    o.data_cache_disk_bytes = 4 << 20
    assert lib.lance_session_configure_v2(ctypes.byref(o)) == 0, lib.lance_last_error_message()
    ds = lib.lance_dataset_open(table.encode(), None, 0)
    assert ds, lib.lance_last_error_message()
    n = u64()
    assert lib.lance_dataset_count_rows(ds, ctypes.byref(n)) == 0 and n.value > 0
    s = SessionStats(struct_size=ctypes.sizeof(SessionStats))
    assert lib.lance_session_stats_v2(ctypes.byref(s)) == 0
    assert s.data_cache_memory_capacity == 8 << 20
    # A local table does not go through the data cache.
    assert s.data_cache_hits == 0 and s.data_cache_misses == 0
    assert lib.lance_session_flush_data_cache() == 0
    print(f"DISK={s.data_cache_disk_enabled} CAPACITY={s.data_cache_disk_capacity}", flush=True)
    if mode == "hold":
        sys.stdin.readline()  # keep the directory until the parent is done
    lib.lance_dataset_free(ds)
    '''
)


def child(mode, cache_dir, table, **kw):
    env = dict(os.environ)
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, mode, str(cache_dir), str(table)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.PIPE, text=True, **kw,
    )


def test_data_cache_settings_and_errors(tmp_path, warehouse):  # noqa: F811
    root, _ = warehouse
    p = child("errors", tmp_path / "unused", root / "people.lance")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0 and "OFF-OK" in out, err


def test_a_disk_directory_that_cannot_be_created_is_a_clear_error(tmp_path, warehouse):  # noqa: F811
    root, _ = warehouse
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    p = child("baddir", blocker / "cache", root / "people.lance")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0 and "BADDIR-OK" in out, out + err


def test_disk_tier_is_locked_by_one_process(tmp_path, warehouse):  # noqa: F811
    root, _ = warehouse
    table = root / "people.lance"
    holder = child("hold", tmp_path / "cache", table)
    try:
        line = holder.stdout.readline()
        assert line.startswith("DISK=1 CAPACITY=4194304"), line + holder.stderr.read()
        # A second process on the same directory runs without the disk tier.
        other = child("use", tmp_path / "cache", table)
        out, err = other.communicate(timeout=120)
        assert other.returncode == 0, err
        assert "DISK=0 CAPACITY=0" in out, out
    finally:
        holder.stdin.close()
        holder.wait(timeout=120)
    assert holder.returncode == 0, holder.stderr.read()
    # Released: the next process gets it.
    again = child("use", tmp_path / "cache", table)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0 and "DISK=1" in out, out + err
