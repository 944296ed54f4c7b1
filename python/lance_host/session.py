"""The process: the library's version and build, session settings, call contexts (deadlines,
cancellation), logging, host credentials and metrics."""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from . import _ffi
from ._ffi import LIB
from .errors import _check, _choice, LanceError, _ptr
from ._marshal import _kv, LOG_LEVELS


def version() -> str:
    """The loaded library's version (lance_host_version)."""
    return LIB.lance_host_version().decode()


def build_profile() -> str:
    """How the loaded library was compiled: "release", or "debug" (the demo's and the test
    command's build, and a package installed from it: index training and full scans are many
    times slower — build a release library for real work, see docs/building.md)."""
    return LIB.lance_host_build_profile().decode()


def build_features() -> list:
    """The optional features of the loaded library (lance_host_build_features): the object
    stores beyond S3 ("store-gcs", "store-azure", ...), "commit-dynamodb", the CJK tokenizers
    ("tokenizer-jieba", "tokenizer-lindera") and "mimalloc"; docs/building.md lists them."""
    text = LIB.lance_host_build_features().decode()
    return text.split(",") if text else []


def version_number() -> int:
    """major * 10000 + minor * 100 + patch (lance_host_version_number)."""
    return LIB.lance_host_version_number()



@dataclass
class SessionOptions:
    """Process-wide session settings (LanceSessionOptions); None/0 = the library's default."""
    index_cache_bytes: int = 0
    metadata_cache_bytes: int = 0
    worker_threads: int = 0
    scan_batch_readahead: int = 0
    scan_fragment_readahead: int = 0
    scan_io_buffer_bytes: int = 0
    data_cache_memory_bytes: int = 0
    data_cache_disk_bytes: int = 0
    data_cache_block_bytes: int = 0
    data_cache_disk_dir: Optional[str] = None
    data_cache_disabled: bool = False

    @staticmethod
    def defaults() -> "SessionOptions":
        """The library's default settings, as filled in by lance_session_options_default_v2."""
        o = _ffi.SessionOptions()
        _check(LIB.lance_session_options_default_v2(ctypes.byref(o), ctypes.sizeof(o)))
        d = {f: getattr(o, f) for f, _ in _ffi.SessionOptions._fields_[1:]}
        d["data_cache_disk_dir"] = d["data_cache_disk_dir"].decode() if d["data_cache_disk_dir"] else None
        d["data_cache_disabled"] = bool(d["data_cache_disabled"])
        return SessionOptions(**d)


def configure_session(options: SessionOptions) -> None:
    """Configure the process-wide session before its first use (lance_session_configure_v2)."""
    o = _ffi.SessionOptions()
    _check(LIB.lance_session_options_default_v2(ctypes.byref(o), ctypes.sizeof(o)))
    for f, _ in _ffi.SessionOptions._fields_[1:]:
        v = getattr(options, f)
        if f == "data_cache_disk_dir":
            o.data_cache_disk_dir = v.encode() if v else None
        elif f == "data_cache_disabled":
            o.data_cache_disabled = 1 if v else 0
        else:
            setattr(o, f, v or 0)
    _check(LIB.lance_session_configure_v2(ctypes.byref(o)))


def session_stats() -> dict:
    """Cache figures of the process-wide session (lance_session_stats_v2)."""
    s = _ffi.SessionStats.new()
    _check(LIB.lance_session_stats_v2(ctypes.byref(s)))
    return {f: getattr(s, f) for f, _ in _ffi.SessionStats._fields_[1:]}


def flush_data_cache() -> None:
    """Wait until the data cache's disk tier holds what was read (lance_session_flush_data_cache)."""
    _check(LIB.lance_session_flush_data_cache())


class CallContext:
    """A cancellation and deadline for blocking calls on the thread that enters it
    (lance_call_context_*). Use as a context manager: `with CallContext(timeout_ms=500): ...`."""

    def __init__(self, timeout_ms: int = 0,
                 progress: Optional[Callable[[str, int, int, str], None]] = None):
        """`progress(stage, done, total, unit)` receives the progress reports of long calls made
        inside the context (index builds; total 0 = unknown), from library threads one at a
        time; an exception it raises is ignored."""
        self._h = _ptr(LIB.lance_call_context_new(timeout_ms))
        self._progress = None
        if progress is not None:
            def trampoline(stage, done, total, unit, _user):
                try:
                    progress(stage.decode(errors="replace"), done, total, unit.decode(errors="replace"))
                except Exception:  # noqa: BLE001 - a report must never unwind into the library
                    pass
            self._progress = _ffi.PROGRESS_CALLBACK(trampoline)  # kept alive with the context
            _check(LIB.lance_call_context_set_progress(self._h, self._progress, None))

    def cancel(self) -> None:
        """Thread-safe."""
        _check(LIB.lance_call_context_cancel(self._h))

    def __enter__(self):
        _check(LIB.lance_call_context_enter(self._h))
        return self

    def __exit__(self, *exc):
        LIB.lance_call_context_enter(None)

    def __del__(self):
        if getattr(self, "_h", None):
            LIB.lance_call_context_free(self._h)
            self._h = None


_log_callback = None  # keeps the ctypes trampoline alive


def set_log_callback(callback: Optional[Callable[[int, str, str], None]], level: str = "info") -> None:
    """Receive the library's and Lance's log records at `level` or more severe; None stops it
    (lance_log_set_callback). The callback runs on library threads and must be thread-safe."""
    global _log_callback
    if callback is None:
        _check(LIB.lance_log_set_callback(_ffi.LOG_CALLBACK(), None, 0))
        _log_callback = None
        return

    def trampoline(lvl, target, message, _user):
        try:
            callback(lvl, target.decode("utf-8", "replace"), message.decode("utf-8", "replace"))
        except Exception:
            pass

    cb = _ffi.LOG_CALLBACK(trampoline)
    _check(LIB.lance_log_set_callback(cb, None, _choice("log level", level, LOG_LEVELS)))
    _log_callback = cb


_credentials = {}  # registration id -> its ctypes trampolines, until the library releases them
_credentials_released = []  # released trampolines, dropped at the next registration (never while running)
_credentials_lock = threading.Lock()
_credentials_next = [0]


def register_credentials(uri: str, storage_options: Mapping[str, str],
                         fetch: Callable[[str], Mapping[str, str]]) -> None:
    """Refresh the storage options of the table at `uri` through `fetch` (lance_credentials_register),
    for a host that keeps credentials in its own secret store: every open and write of that table
    in this process with exactly `storage_options` (which must carry `expires_at_millis`, epoch
    ms) asks `fetch(table_uri)` for a complete new set of options shortly before the current ones
    expire. `fetch` runs on library threads; raising `PermissionDeniedError` (or
    `PermissionError`) fails the operation that needed the options with PERMISSION_DENIED, any
    other exception with LANCE_ERR_IO."""
    def trampoline(table_uri, sink, _user):
        try:
            options = fetch(table_uri.decode("utf-8", "replace"))
            for k, v in dict(options).items():
                rc = LIB.lance_storage_options_sink_set(sink, str(k).encode(), str(v).encode())
                if rc:
                    return rc
            return 0
        except LanceError as e:
            return e.code
        except PermissionError:
            return 9
        except Exception:
            return 3

    with _credentials_lock:
        _credentials_released.clear()
        _credentials_next[0] += 1
        key = _credentials_next[0]

    def release(_user):
        with _credentials_lock:
            entry = _credentials.pop(key, None)
            if entry is not None:
                _credentials_released.append(entry)

    cb, free = _ffi.CREDENTIALS_CALLBACK(trampoline), _ffi.FREE_USER_DATA(release)
    with _credentials_lock:
        _credentials[key] = (cb, free)
    rc = LIB.lance_credentials_register(uri.encode(), _kv(storage_options), cb, None, free)
    if rc:
        with _credentials_lock:
            _credentials.pop(key, None)
        _check(rc)


def metrics() -> dict:
    """The library's counters (lance_metric_count / lance_metric)."""
    out = {}
    for i in range(LIB.lance_metric_count()):
        name, value = ctypes.c_char_p(), ctypes.c_uint64()
        _check(LIB.lance_metric(i, ctypes.byref(name), ctypes.byref(value)))
        out[name.value.decode()] = value.value
    return out
