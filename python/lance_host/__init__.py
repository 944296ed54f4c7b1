"""lance-host for Python: read Lance tables the way a distributed engine does — pinned snapshots,
splits that travel as bytes, scans, vector and full-text search per split, merges, take,
prewarm — through liblance_host's C ABI (bundled with this package). Arrow data arrives as
`pyarrow` objects without copies (Arrow C Data / C Stream interfaces). No pylance needed.

    import lance_host
    ds = lance_host.open("/data/t.lance")
    for split in ds.plan_scan():          # picklable; ship to workers
        reader = ds.scan_split(split, columns=["id"])

Errors raise `LanceError` (`.code`, `.name`, `.message`), as the subclass for its code that is also
the matching built-in (`ValueError`, `LookupError`, `TimeoutError`, ...); errors pickle. Every function mirrors one or more C
functions of `include/lance_host.h`; their documentation there is normative.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, Optional, Sequence, Union

import pyarrow as pa

from . import _ffi
from ._ffi import LIB

__all__ = [
    "LanceError", "InvalidArgumentError", "NotFoundError", "LanceIOError", "NotSupportedError", "InternalError",
    "FailedPreconditionError", "PermissionDeniedError", "CorruptError", "LanceTimeoutError", "CancelledError",
    "error_class", "open", "open_at_timestamp", "open_snapshot", "Dataset", "Split", "Stream", "IoStats",
    "Catalog", "TableInfo", "CallContext", "DynamicFilter", "SessionOptions", "configure_session", "session_stats",
    "flush_data_cache", "set_log_callback", "register_credentials", "metrics", "merge_top_k", "merge_fts", "rrf_merge", "version",
    "build_profile", "version_number", "error_code_name", "SPLIT_SCAN", "SPLIT_INDEX_SEGMENT", "SPLIT_FLAT", "SPLIT_FTS_SEGMENT",
    "SPLIT_FTS_FLAT", "ConflictError", "HostStreamError", "OutOfRangeError", "merge_aggregates", "AGGREGATE_FUNCTIONS", "Expression", "WriteResult", "StagedWrite", "write_table", "stage_write", "commit",
    "commit_tables", "abort_staged", "CompactResult", "CleanupResult", "open_tag", "build_index", "__version__",
]

SPLIT_SCAN, SPLIT_INDEX_SEGMENT, SPLIT_FLAT, SPLIT_FTS_SEGMENT, SPLIT_FTS_FLAT = 1, 2, 3, 4, 5
METRICS = {None: 0, "l2": 1, "cosine": 2, "dot": 3, "hamming": 4}
WRITE_MODES = {"create": 0, "append": 1, "overwrite": 2}
VECTOR_INDEX_TYPES = {"IVF_PQ": 0, "IVF_FLAT": 1, "IVF_SQ": 2, "IVF_HNSW_FLAT": 3, "IVF_HNSW_PQ": 4, "IVF_HNSW_SQ": 5}
SCALAR_INDEX_TYPES = {"BTREE": 0, "BITMAP": 1, "LABEL_LIST": 2}
WHEN_MATCHED = {"do_nothing": 0, "update_all": 1, "update_if": 2, "delete": 3, "fail": 4}
WHEN_NOT_MATCHED = {"insert": 0, "do_nothing": 1}
WHEN_NOT_MATCHED_BY_SOURCE = {"keep": 0, "delete": 1, "delete_if": 2}
TEXT_MATCH = {"or": 0, "any": 0, "and": 1, "all": 1, "phrase": 2}
LOG_LEVELS = {"off": 0, "error": 1, "warn": 2, "info": 3, "debug": 4, "trace": 5}
_ELEMENTS = {"float16": (1, ctypes.c_uint16), "float32": (2, ctypes.c_float), "float64": (3, ctypes.c_double),
             "uint8": (4, ctypes.c_uint8), "int8": (5, ctypes.c_int8)}


class LanceError(Exception):
    """A failed call: `code` is the library's `LanceErrorCode`, `name` its name, `message` the
    library's message. Each code raises one subclass that is also the built-in exception Python
    code catches for it (see `error_class`): an invalid argument is a `ValueError`, a missing
    table, column or row a `LookupError` and `FileNotFoundError`, a timeout a `TimeoutError`, and
    so on. Errors pickle with their code and message, so an error raised in a worker process
    (multiprocessing, concurrent.futures, Spark, Ray) reaches the parent as the same type."""

    def __init__(self, code: int, message: str):
        self.code = code
        self.name = error_code_name(code)
        self.message = message
        super().__init__(f"{self.name}: {message}")
        if isinstance(self, OSError):
            self.errno = _CODE_ERRNO.get(code)

    def __reduce__(self):
        return (_error, (self.code, self.message))


class InvalidArgumentError(LanceError, ValueError):
    """LANCE_ERR_INVALID_ARGUMENT: a bad argument (an unknown column or option, a bad value)."""


class NotFoundError(LanceError, FileNotFoundError, LookupError):
    """LANCE_ERR_NOT_FOUND: a table, version, namespace, index, column or row that does not exist."""


class LanceIOError(LanceError, OSError):
    """LANCE_ERR_IO: storage failed (network, object store, file system)."""


class NotSupportedError(LanceError, NotImplementedError):
    """LANCE_ERR_NOT_SUPPORTED: the table or the request uses something this library does not do."""


class InternalError(LanceError, RuntimeError):
    """LANCE_ERR_INTERNAL and LANCE_ERR_PANIC: a bug in the library (please report it)."""


class FailedPreconditionError(LanceError, RuntimeError):
    """LANCE_ERR_FAILED_PRECONDITION: the call is not allowed in this state (e.g. a fork after use)."""


class PermissionDeniedError(LanceError, PermissionError):
    """LANCE_ERR_UNAUTHENTICATED and LANCE_ERR_PERMISSION_DENIED: storage refused the credentials."""


class CorruptError(LanceError, OSError):
    """LANCE_ERR_CORRUPT: bytes that cannot be what they claim (a damaged file, a bad token)."""


class LanceTimeoutError(LanceError, TimeoutError):
    """LANCE_ERR_TIMEOUT: the call context's deadline passed."""


class ConflictError(LanceError, RuntimeError):
    """LANCE_ERR_CONFLICT: a commit lost to a concurrent writer it cannot be combined with;
    nothing of it is visible. Plan again at the new version and retry."""


class HostStreamError(LanceError, RuntimeError):
    """LANCE_ERR_HOST_STREAM: the caller's own input stream failed (its batches raised, or a
    batch had another schema than the stream's); nothing was committed. Since 0.11."""


class OutOfRangeError(LanceError, ArithmeticError):
    """LANCE_ERR_OUT_OF_RANGE: a result does not fit its type (an integer SUM beyond int64);
    never a wrapped value. Since 0.12."""


class CancelledError(LanceError, OSError):
    """LANCE_ERR_CANCELLED: the operation was cancelled (a stream's `cancel`, a call context)."""


_ERROR_CLASSES = {
    1: InvalidArgumentError, 2: NotFoundError, 3: LanceIOError, 4: NotSupportedError, 5: InternalError,
    6: InternalError, 7: FailedPreconditionError, 8: PermissionDeniedError, 9: PermissionDeniedError,
    10: CorruptError, 11: LanceTimeoutError, 12: CancelledError, 13: ConflictError,
    14: HostStreamError, 15: OutOfRangeError,
}

# The errno values a failed stream's get_next returns (the C Stream interface; the list in the
# header's lance_dataset_scan_v2 comment, which a test compares) and the codes they stand for,
# so a stream read with `for batch in stream` raises what `poll` raises. EIO (5) also covers
# internal failures; it maps to LanceIOError.
_ERRNO_CODES = {5: 3, 2: 2, 22: 1, 13: 9, 74: 10, 95: 4, 110: 11, 125: 12}
# The errno an error that is also an OSError carries (`e.errno`): the one its stream reports.
_CODE_ERRNO = {2: 2, 3: 5, 8: 13, 9: 13, 10: 74, 11: 110, 12: 125}


def error_class(code: int) -> type:
    """The `LanceError` subclass raised for a `LanceErrorCode` (`LanceError` for an unknown code)."""
    return _ERROR_CLASSES.get(code, LanceError)


def _error(code: int, message: str) -> LanceError:
    return error_class(code)(code, message)


def _choice(kind: str, value, choices: Mapping):
    """`choices[value]`, or InvalidArgumentError naming the valid choices."""
    try:
        return choices[value]
    except (KeyError, TypeError):
        valid = ", ".join(repr(c) for c in choices if c is not None)
        raise _error(1, f"unknown {kind} {value!r}; valid: {valid}") from None


def error_code_name(code: int) -> str:
    """The name of a `LanceErrorCode` value (lance_error_code_name)."""
    return LIB.lance_error_code_name(code).decode()


def _last_error() -> LanceError:
    return _error(LIB.lance_last_error_code(), (LIB.lance_last_error_message() or b"").decode("utf-8", "replace"))


def _check(rc: int) -> None:
    if rc != 0:
        raise _last_error()


def _ptr(p):
    if not p:
        raise _last_error()
    return p


def version() -> str:
    """The loaded library's version (lance_host_version)."""
    return LIB.lance_host_version().decode()


def build_profile() -> str:
    """How the loaded library was compiled: "release", or "debug" (the demo's and the test
    command's build, and a package installed from it: index training and full scans are many
    times slower — build a release library for real work, see docs/building.md)."""
    return LIB.lance_host_build_profile().decode()


def version_number() -> int:
    """major * 10000 + minor * 100 + patch (lance_host_version_number)."""
    return LIB.lance_host_version_number()


def _check_columns(schema: pa.Schema, columns: Optional[Sequence[str]]) -> None:
    """InvalidArgumentError naming every column of `columns` that `schema` lacks, and the
    table's columns (for projections the Spark and Ray layers check before they plan)."""
    if columns is None:
        return
    if isinstance(columns, str):
        raise _error(1, f"columns must be a list of column names, not the string {columns!r}")
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise _error(1, f"unknown column{'s' if len(missing) > 1 else ''} {', '.join(repr(c) for c in missing)}; "
                        f"the table's columns: {', '.join(schema.names)}")


def _metric(metric: Optional[str]) -> int:
    if metric is not None and not isinstance(metric, str):
        raise _error(1, f"metric must be a string, not {type(metric).__name__}")
    return _choice("metric", metric.lower() if metric else None, METRICS)


def _cstrings(items: Optional[Sequence[str]]):
    if not items:
        return None, 0
    arr = (ctypes.c_char_p * len(items))(*[s.encode() for s in items])
    return arr, len(items)


def _kv(options: Optional[Mapping[str, str]]):
    if not options:
        return None
    flat = []
    for k, v in options.items():
        flat += [str(k).encode(), str(v).encode()]
    return (ctypes.c_char_p * (len(flat) + 1))(*flat, None)


def _take_bytes(out, n) -> bytes:
    data = ctypes.string_at(out, n.value)
    LIB.lance_bytes_free(out, n.value)
    return data


def _take_string(p) -> str:
    s = ctypes.string_at(p).decode()
    LIB.lance_string_free(p)
    return s


@dataclass(frozen=True)
class IoStats:
    """I/O of one operation (LanceIoStats)."""
    read_requests: int = 0
    read_bytes: int = 0
    index_read_requests: int = 0
    index_read_bytes: int = 0
    index_cache_hits: int = 0
    index_cache_misses: int = 0
    data_cache_hits: int = 0
    data_cache_misses: int = 0
    data_cache_hit_bytes: int = 0

    @staticmethod
    def _from(c: _ffi.IoStats) -> "IoStats":
        return IoStats(**{f: getattr(c, f) for f, _ in _ffi.IoStats._fields_[1:]})


# ---- streams --------------------------------------------------------------------------------

def _import_reader(stream: _ffi.ArrowArrayStream) -> pa.RecordBatchReader:
    """Move a C stream into pyarrow (zero copy). pyarrow turns a failed read into a plain
    OSError carrying the stream's message; the reader returned re-raises it as the typed error
    the message names (`PermissionDeniedError` for LANCE_ERR_PERMISSION_DENIED, ...), as
    iterating a `Stream` does."""
    inner = pa.RecordBatchReader._import_from_c(ctypes.addressof(stream))

    def batches():
        try:
            yield from inner
        except OSError as e:
            if isinstance(e, LanceError):
                raise
            typed = _typed_stream_error(str(e))
            if typed is None:
                raise
            raise typed from None
        finally:
            inner.close()

    return pa.RecordBatchReader.from_batches(inner.schema, batches())


def _typed_stream_error(message: str) -> Optional[LanceError]:
    """The LanceError a stream's message names (`LANCE_ERR_<NAME>: ...`), or None."""
    import re

    m = re.search(r"LANCE_ERR_([A-Z_]+)", message)
    if not m:
        return None
    for code in _ERROR_CLASSES:
        if error_code_name(code) == "LANCE_ERR_" + m.group(1):
            return _error(code, message[m.end():].lstrip(": ") or message)
    return None


class Stream:
    """A lance-host stream kept under this object's control, for hosts that want its I/O
    statistics (`io_stats`, lance_stream_io_stats_v2) or to cancel it from another thread
    (`cancel`, lance_stream_cancel). Iterating yields `pyarrow.RecordBatch`es without copying
    their data; `reader()` hands the rest to pyarrow as a `RecordBatchReader` (after which
    `io_stats`/`cancel` are no longer available)."""

    def __init__(self, c_stream: _ffi.ArrowArrayStream):
        self._s = c_stream
        self._lock = threading.Lock()
        schema = _ffi.ArrowSchema()
        if self._s.get_schema(ctypes.byref(self._s), ctypes.byref(schema)) != 0:
            err = self._s.get_last_error(ctypes.byref(self._s))
            self.close()
            raise _error(3, (err or b"cannot read the stream's schema").decode())
        self.schema = pa.Schema._import_from_c(ctypes.addressof(schema))

    @property
    def _live(self) -> bool:
        return bool(self._s and ctypes.cast(self._s.release, ctypes.c_void_p).value)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return self

    def __next__(self) -> pa.RecordBatch:
        if not self._live:
            raise StopIteration
        arr = _ffi.ArrowArray()
        rc = self._s.get_next(ctypes.byref(self._s), ctypes.byref(arr))
        if rc != 0:
            msg = self._s.get_last_error(ctypes.byref(self._s))
            raise _error(_ERRNO_CODES.get(rc, 3), (msg or b"stream failed").decode("utf-8", "replace"))
        if not ctypes.cast(arr.release, ctypes.c_void_p).value:
            raise StopIteration
        schema = _ffi.ArrowSchema()
        self.schema._export_to_c(ctypes.addressof(schema))
        return pa.RecordBatch._import_from_c(ctypes.addressof(arr), ctypes.addressof(schema))

    def read_all(self) -> pa.Table:
        """Every remaining batch as one `pyarrow.Table` (blocks until the stream ends; raises the
        stream's error)."""
        return pa.Table.from_batches(list(self), schema=self.schema)

    def poll(self, wake: Optional[Callable[[], None]] = None):
        """Read without blocking (lance_stream_poll_next): returns ("ready", batch),
        ("pending", None) or ("end", None). After "pending", `wake()` is called once, from a
        library thread, when polling again may make progress; it must be quick and must not
        touch this stream (e.g. `loop.call_soon_threadsafe(event.set)`). Raises LanceError for a
        failed, cancelled or timed-out stream, and when polled again after "end"."""
        if not self._live:
            raise _error(1, "the stream is closed or was handed to pyarrow")
        callback = _ffi.WAKE(lambda _user: wake()) if wake is not None else _ffi.WAKE()
        # Kept alive while the library may call it: until the next poll or the release.
        self._wake = callback
        arr = _ffi.ArrowArray()
        status = ctypes.c_int32(-1)
        _check(LIB.lance_stream_poll_next(ctypes.byref(self._s), ctypes.byref(arr), callback, None, ctypes.byref(status)))
        if status.value == _ffi.POLL_READY:
            schema = _ffi.ArrowSchema()
            self.schema._export_to_c(ctypes.addressof(schema))
            return "ready", pa.RecordBatch._import_from_c(ctypes.addressof(arr), ctypes.addressof(schema))
        return ("pending" if status.value == _ffi.POLL_PENDING else "end"), None

    async def batches_async(self):
        """The batches as an async iterator for asyncio: polls, and while the stream is
        pending awaits its wake-up instead of blocking the event loop's thread."""
        import asyncio

        loop = asyncio.get_running_loop()
        while True:
            woken = asyncio.Event()
            state, batch = self.poll(lambda: loop.call_soon_threadsafe(woken.set))
            if state == "ready":
                yield batch
            elif state == "end":
                return
            else:
                await woken.wait()

    def io_stats(self) -> IoStats:
        """The operation's I/O so far (final once the stream ended)."""
        if not self._live:
            raise _error(1, "the stream is closed or was handed to pyarrow")
        out = _ffi.IoStats.new()
        _check(LIB.lance_stream_io_stats_v2(ctypes.byref(self._s), ctypes.byref(out)))
        return IoStats._from(out)

    def cancel(self) -> None:
        """Stop the stream's work (thread-safe); the next read fails with ECANCELED."""
        if self._live:
            _check(LIB.lance_stream_cancel(ctypes.byref(self._s)))

    def reader(self) -> pa.RecordBatchReader:
        """Hand the rest of the stream to pyarrow (zero copy)."""
        if not self._live:
            raise _error(1, "the stream is closed or was already handed over")
        return _import_reader(self._s)

    def _release_to_c(self) -> _ffi.ArrowArrayStream:
        """Give the C stream to a function that takes ownership of it (merges, refine)."""
        if not self._live:
            raise _error(1, "the stream is closed or was already handed over")
        moved = _ffi.ArrowArrayStream()
        ctypes.memmove(ctypes.byref(moved), ctypes.byref(self._s), ctypes.sizeof(moved))
        self._s.release = _ffi.RELEASE()
        return moved

    def close(self) -> None:
        """Releases the stream (cancels work still running). Idempotent; also done by `with` and on
        garbage collection."""
        if self._live:
            self._s.release(ctypes.byref(self._s))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _streams_in(streams) -> list:
    """C streams from `Stream`s or pyarrow readers / tables (ownership moves to the library)."""
    out = []
    for s in streams:
        if isinstance(s, Stream):
            out.append(s._release_to_c())
            continue
        if isinstance(s, pa.Table):
            s = pa.RecordBatchReader.from_batches(s.schema, s.to_batches())
        c = _ffi.ArrowArrayStream()
        s._export_to_c(ctypes.addressof(c))
        out.append(c)
    return out


def _merge(fn, streams, k: int, offset: int) -> Stream:
    cs = _streams_in(streams)
    arr = (_ffi.ArrowArrayStream * len(cs))()
    for i, c in enumerate(cs):
        ctypes.memmove(ctypes.byref(arr[i]), ctypes.byref(c), ctypes.sizeof(c))
    out = _ffi.ArrowArrayStream()
    _check(fn(arr, len(cs), k, offset, ctypes.byref(out)))
    return Stream(out)


def merge_top_k(streams, k: int, offset: int = 0) -> Stream:
    """Global top-k by `_distance` (ties by `_rowid`) of vector split results (lance_topk_merge).
    Takes ownership of the inputs (`Stream`s or pyarrow readers/tables)."""
    return _merge(LIB.lance_topk_merge, streams, k, offset)


def merge_fts(streams, k: int, offset: int = 0) -> Stream:
    """Global top-k by `_score` (ties by `_rowid`) of full-text split results (lance_fts_merge)."""
    return _merge(LIB.lance_fts_merge, streams, k, offset)


def rrf_merge(vector, text, k: int, rrf_k: float = 60.0) -> Stream:
    """Reciprocal-rank fusion of a merged vector result and a merged full-text result
    (lance_rrf_merge): `_rowid`, `_relevance_score`, `_distance`, `_score`."""
    v, t = _streams_in([vector, text])
    out = _ffi.ArrowArrayStream()
    _check(LIB.lance_rrf_merge(ctypes.byref(v), ctypes.byref(t), k, rrf_k, ctypes.byref(out)))
    return Stream(out)


# ---- splits ---------------------------------------------------------------------------------

class Split:
    """One unit of distributed work on a pinned snapshot. Picklable: it travels as the library's
    versioned, checksummed bytes (`bytes(split)`, `Split.from_bytes`)."""

    def __init__(self, handle):
        self._h = _ptr(handle)

    @staticmethod
    def from_bytes(data: bytes) -> "Split":
        """lance_split_deserialize: CORRUPT for damaged bytes."""
        return Split(LIB.lance_split_deserialize(data, len(data)))

    def __bytes__(self) -> bytes:
        out, n = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t()
        _check(LIB.lance_split_serialize(self._h, ctypes.byref(out), ctypes.byref(n)))
        return _take_bytes(out, n)

    def __reduce__(self):
        return (Split.from_bytes, (bytes(self),))

    @property
    def kind(self) -> int:
        """The split's kind as the C enum LanceSplitKind (scan, vector index segment, flat,
        full-text ...)."""
        return LIB.lance_split_kind(self._h)

    @property
    def version(self) -> int:
        """The table version the split was planned at."""
        return LIB.lance_split_version(self._h)

    @property
    def uri(self) -> str:
        """The table's URI the split belongs to."""
        return LIB.lance_split_uri(self._h).decode()

    @property
    def row_count(self) -> int:
        """The rows the split covers, as planned (before any filter; exact for scan splits)."""
        return LIB.lance_split_row_count(self._h)

    @property
    def row_slice(self) -> Optional[tuple[int, int]]:
        """For a scan split of part of one fragment: (offset, count) of the physical rows it
        covers (deleted rows keep their slots); None for a split of whole fragments."""
        offset, count = ctypes.c_uint64(), ctypes.c_uint64()
        rc = LIB.lance_split_row_slice(self._h, ctypes.byref(offset), ctypes.byref(count))
        if rc < 0:
            raise _last_error()
        return (offset.value, count.value) if rc == 1 else None

    @property
    def fragment_ids(self) -> list[int]:
        """The ids of the fragments the split covers."""
        n = ctypes.c_size_t()
        p = LIB.lance_split_fragment_ids(self._h, ctypes.byref(n))
        return [p[i] for i in range(n.value)]

    @property
    def segment_uuid(self) -> Optional[bytes]:
        """The index segment's 16-byte UUID, or None for splits without one. InvalidArgumentError
        for a split of several segments (see `segment_uuids`)."""
        out = (ctypes.c_uint8 * 16)()
        rc = LIB.lance_split_segment_uuid(self._h, out)
        if rc == 2:  # LANCE_ERR_NOT_FOUND: not a segment split
            return None
        _check(rc)
        return bytes(out)

    @property
    def segment_uuids(self) -> list[bytes]:
        """The 16-byte UUIDs of the index segments the split searches (lance_split_segment_uuids):
        one for a planned segment split, several for a combined one, none for the other kinds."""
        n = ctypes.c_size_t(0)
        p = LIB.lance_split_segment_uuids(self._h, ctypes.byref(n))
        if not p:  # no segments (the arguments are never NULL here)
            return []
        data = ctypes.string_at(p, 16 * n.value)
        return [data[i:i + 16] for i in range(0, len(data), 16)]

    @staticmethod
    def combine(splits: Sequence["Split"]) -> "Split":
        """One split that does the work of `splits` (of one plan, one kind) in a single call
        (lance_splits_combine): a worker that runs several splits plans and opens once. Their
        results equal the merged results of the parts (a vector search of several segments
        re-ranks k x refine x segments candidates); InvalidArgumentError names a split that does
        not fit (another snapshot, kind, column or index, or a repeated fragment)."""
        parts = list(splits)
        for i, s in enumerate(parts):
            if not isinstance(s, Split):
                raise TypeError(f"split {i} is a {type(s).__name__}, not a Split")
        arr = (ctypes.c_void_p * max(len(parts), 1))(*[s._h for s in parts])
        out = ctypes.c_void_p()
        _check(LIB.lance_splits_combine(arr, len(parts), ctypes.byref(out)))
        return Split(out.value)

    @staticmethod
    def group(splits: Sequence["Split"], max_groups: Optional[int]) -> list:
        """A plan's splits as at most `max_groups` splits for as many workers (but at least one
        per split kind: index segments and unindexed fragments do not combine), the splits of a
        kind dealt round-robin and each group combined with `Split.combine`. None keeps one
        split per worker; InvalidArgumentError for a `max_groups` below 1."""
        parts = list(splits)
        if max_groups is None:
            return parts
        if isinstance(max_groups, bool) or not isinstance(max_groups, int) or max_groups < 1:
            raise _error(1, f"the number of groups must be an integer of at least 1, got {max_groups!r}")
        kinds: dict = {}
        for s in parts:
            kinds.setdefault(s.kind, []).append(s)
        per_kind = max(1, max_groups // max(len(kinds), 1))
        out = []
        for same in kinds.values():
            groups = [same[i::per_kind] for i in range(min(per_kind, len(same)))]
            out += [g[0] if len(g) == 1 else Split.combine(g) for g in groups]
        return out

    def open_dataset(self, storage_options: Optional[Mapping[str, str]] = None) -> "Dataset":
        """Open the split's table at exactly its version (lance_split_open_dataset)."""
        return Dataset(LIB.lance_split_open_dataset(self._h, _kv(storage_options)))

    def __del__(self):
        if getattr(self, "_h", None):
            LIB.lance_split_free(self._h)
            self._h = None

    def __repr__(self):
        return f"Split(kind={self.kind}, uri={self.uri!r}, version={self.version}, fragments={self.fragment_ids})"


@dataclass
class SplitPlan:
    """Splits plus why the planner chose them."""
    splits: list
    index_name: Optional[str]
    reason: str

    def __iter__(self):
        return iter(self.splits)

    def __len__(self):
        return len(self.splits)

    def __getitem__(self, i):
        return self.splits[i]


def _plan(handle) -> SplitPlan:
    try:
        n = LIB.lance_split_plan_count(handle)
        splits = [Split(LIB.lance_split_plan_get(handle, i)) for i in range(n)]
        name = LIB.lance_split_plan_index_name(handle)
        reason = LIB.lance_split_plan_reason(handle).decode()
        return SplitPlan(splits, name.decode() if name else None, reason)
    finally:
        LIB.lance_split_plan_free(handle)


# ---- datasets -------------------------------------------------------------------------------

class _ExportedKeys:
    """A key-set filter's values exported through Arrow's C data interface for one call. The
    library moves the array out when it reads the options; whatever is left (the schema, and
    the array when the call failed before reading it) is released when this object goes."""

    _RELEASE_ARRAY = ctypes.CFUNCTYPE(None, ctypes.POINTER(_ffi.ArrowArray))
    _RELEASE_SCHEMA = ctypes.CFUNCTYPE(None, ctypes.POINTER(_ffi.ArrowSchema))

    def __init__(self, values):
        self.array, self.schema = _ffi.ArrowArray(), _ffi.ArrowSchema()  # nothing to release yet
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        elif not isinstance(values, pa.Array):
            try:
                values = pa.array(values)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
                raise _error(1, f"keys: the values must be a pyarrow array or a list of one type: {e}") from None
        values._export_to_c(ctypes.addressof(self.array), ctypes.addressof(self.schema))

    def __del__(self):
        if self.array.release:
            self._RELEASE_ARRAY(self.array.release)(ctypes.byref(self.array))
        if self.schema.release:
            self._RELEASE_SCHEMA(self.schema.release)(ctypes.byref(self.schema))


def _scan_options(columns=None, filter=None, substrait=None, limit=None, offset=None, batch_size=None,
                  with_row_id=False, with_row_addr=False, fragment_ids=None, scan_in_order=True,
                  batch_readahead=None, fragment_readahead=None, io_buffer_bytes=None, order_by=None,
                  keys=None, dynamic_filter=None):
    o = _ffi.ScanOptions()
    _check(LIB.lance_scan_options_init_v2(ctypes.byref(o), ctypes.sizeof(o)))
    keep = []
    cols, n = _cstrings(columns)
    keep.append(cols)
    o.columns, o.num_columns = cols, n
    if filter is not None:
        o.filter_sql = filter.encode()
    if substrait is not None:
        buf = (ctypes.c_uint8 * len(substrait)).from_buffer_copy(substrait)
        keep.append(buf)
        o.filter_substrait = ctypes.cast(buf, ctypes.POINTER(ctypes.c_uint8))
        o.filter_substrait_len = len(substrait)
    o.limit = -1 if limit is None else limit
    o.offset = offset or 0
    o.batch_size = batch_size or 0
    o.with_row_id, o.with_row_addr, o.scan_in_order = with_row_id, with_row_addr, scan_in_order
    if fragment_ids is not None:
        ids = (ctypes.c_uint64 * len(fragment_ids))(*fragment_ids)
        keep.append(ids)
        o.fragment_ids, o.num_fragment_ids = ids, len(fragment_ids)
    o.batch_readahead = batch_readahead or 0
    o.fragment_readahead = fragment_readahead or 0
    o.io_buffer_bytes = io_buffer_bytes or 0
    if order_by is not None:
        if not isinstance(order_by, str):
            raise _error(1, f"order_by must be a string like 'price DESC, id', not {order_by!r}")
        o.order_by = order_by.encode()
    if keys is not None:
        if not isinstance(keys, tuple) or len(keys) != 2 or not isinstance(keys[0], str):
            raise _error(1, f"keys must be (column, values), e.g. ('id', pyarrow.array([1, 5])), not {keys!r}")
        exported = _ExportedKeys(keys[1])
        keep.append(exported)
        o.key_filter_column = keys[0].encode()
        o.key_filter_values = ctypes.pointer(exported.array)
        o.key_filter_schema = ctypes.pointer(exported.schema)
    if dynamic_filter is not None:
        if not isinstance(dynamic_filter, DynamicFilter):
            raise _error(1, f"dynamic_filter must be a lance_host.DynamicFilter, not {type(dynamic_filter).__name__}")
        keep.append(dynamic_filter)
        o.dynamic_filter = dynamic_filter._live()
    return o, keep


class DynamicFilter:
    """A predicate to tighten while scans run (lance_dynamic_filter_*): made for one table and
    the columns its predicates may name; pass it as `scan(..., dynamic_filter=f)` (or to split
    scans), then `set_sql(...)` or `set_keys(column, values)` from any thread. Every batch a
    running scan returns after an update returned is filtered with it; batches returned before
    are not revisited. A scan with a dynamic filter takes no limit or offset."""

    def __init__(self, dataset: "Dataset", columns: Sequence[str]):
        self._h = None
        if isinstance(columns, str):
            columns = [columns]
        cols, n = _cstrings(list(columns))
        out = ctypes.c_void_p()
        _check(LIB.lance_dynamic_filter_new(dataset._h, cols, n, ctypes.byref(out)))
        self._h = out.value

    def _live(self):
        if not self._h:
            raise _error(7, "the dynamic filter is closed")
        return self._h

    def set_sql(self, sql: Optional[str]) -> None:
        """Replace the predicate with a SQL condition over the filter's columns (None = every
        row passes)."""
        _check(LIB.lance_dynamic_filter_set_sql(self._live(), sql.encode() if sql is not None else None))

    def set_keys(self, column: str, values) -> None:
        """Replace the predicate with `column IN (values)` (a pyarrow array or a list)."""
        exported = _ExportedKeys(values)
        _check(LIB.lance_dynamic_filter_set_keys(self._live(), column.encode(), ctypes.byref(exported.array),
                                                 ctypes.byref(exported.schema)))

    @property
    def generation(self) -> int:
        """How many updates were accepted."""
        n = ctypes.c_uint64()
        _check(LIB.lance_dynamic_filter_generation(self._live(), ctypes.byref(n)))
        return n.value

    def close(self) -> None:
        """Free the filter (lance_dynamic_filter_free); running scans keep its last predicate."""
        if self._h:
            LIB.lance_dynamic_filter_free(self._h)
            self._h = None

    def __del__(self):
        self.close()


def _vector_query(column, vector, k=10, metric=None, nprobes=None, refine_factor=None, ef=None,
                  prefilter=None, columns=None, with_row_id=True, defer_refine=False, element_type="float32",
                  distance_range=None):
    q = _ffi.VectorQuery()
    _check(LIB.lance_vector_query_init_v2(ctypes.byref(q), ctypes.sizeof(q)))
    code, ctype = _choice("element_type", element_type, _ELEMENTS)
    values = list(vector)
    if not values:
        raise _error(1, "the query holds no vector (an empty vector or an empty batch)")
    num_queries = 1
    if values and hasattr(values[0], "__len__"):  # a batch: one row per query vector
        num_queries = len(values)
        dim = len(values[0])
        if any(len(v) != dim for v in values):
            raise _error(1, "every query vector of a batch must have the same dimension")
        values = [x for v in values for x in v]
    buf = (ctype * len(values))(*values)
    cols, n = _cstrings(columns)
    q.column = column.encode()
    q.vector = ctypes.cast(buf, ctypes.c_void_p)
    q.dimension = len(values) // num_queries
    q.num_queries = num_queries
    q.element_type = code
    q.k = k
    q.metric = _metric(metric)
    q.nprobes = nprobes or 0
    q.refine_factor = refine_factor or 0
    q.ef = ef or 0
    q.prefilter_sql = prefilter.encode() if prefilter else None
    q.columns, q.num_columns = cols, n
    q.with_row_id, q.defer_refine = with_row_id, defer_refine
    if distance_range is not None:
        lower, upper = distance_range
        if lower is not None:
            q.distance_lower, q.distance_bounds = lower, q.distance_bounds | 1
        if upper is not None:
            q.distance_upper, q.distance_bounds = upper, q.distance_bounds | 2
    return q, (buf, cols)


def _stats_arg(stats):
    """Shipped statistics as (bytes, length); None is (NULL, 0): no statistics."""
    if stats is None:
        return None, 0
    if not isinstance(stats, (bytes, bytearray)):
        raise TypeError(f"stats must be bytes from fts_stats or None, not {type(stats).__name__}")
    return bytes(stats), len(stats)


def _text_query(column, text, k=10, match="or", slop=0, prefilter=None, columns=None, with_row_id=True):
    q = _ffi.TextQuery()
    _check(LIB.lance_text_query_init(ctypes.byref(q), ctypes.sizeof(q)))
    cols, n = _cstrings(columns)
    q.column, q.text = column.encode(), text.encode()
    q.match_kind = _choice("match", match.lower() if isinstance(match, str) else match, TEXT_MATCH)
    q.slop, q.k = slop, k
    q.prefilter_sql = prefilter.encode() if prefilter else None
    q.columns, q.num_columns = cols, n
    q.with_row_id = with_row_id
    return q, (cols,)


BLOB_KINDS = {0: "null", 1: "inline", 2: "packed", 3: "dedicated", 4: "external", 5: "managed"}


@dataclass(frozen=True)
class BlobInfo:
    row_id: int
    size: int
    kind: str
    uri: Optional[str]

    @property
    def is_null(self) -> bool:
        return self.kind == "null"


class Blobs:
    """The blobs of some rows of one blob column (`Dataset.take_blobs`), in request order:
    `info(i)` describes blob i, `read(i, offset, length)` reads a byte range of it without
    reading the rest. Reads may run on several threads at once."""

    def __init__(self, handle):
        self._h = handle

    def __len__(self) -> int:
        return LIB.lance_blobs_count(self._h)

    def info(self, i: int) -> BlobInfo:
        out = _ffi.BlobInfo.new()
        _check(LIB.lance_blobs_info(self._h, i, ctypes.byref(out)))
        return BlobInfo(out.row_id, out.size, BLOB_KINDS.get(out.kind, str(out.kind)),
                        out.uri.decode() if out.uri else None)

    def read(self, i: int, offset: int = 0, length: Optional[int] = None) -> bytes:
        """Bytes offset .. offset + length of blob i (default: to its end)."""
        if length is None:
            length = max(self.info(i).size - offset, 0)
        out, n = _ffi.u8p(), ctypes.c_size_t()
        _check(LIB.lance_blobs_read_alloc(self._h, i, offset, length, ctypes.byref(out), ctypes.byref(n)))
        return _take_bytes(out, n)

    def readinto(self, i: int, offset: int, buffer) -> int:
        """Fill a writable buffer (bytearray, memoryview, numpy array) with the bytes of
        blob i from `offset`; returns the number of bytes read (the buffer's length)."""
        view = memoryview(buffer).cast("B")
        n = view.nbytes
        c = (ctypes.c_char * n).from_buffer(view) if n else None
        _check(LIB.lance_blobs_read(self._h, i, offset, n, c, n))
        return n

    def io_stats(self) -> IoStats:
        out = _ffi.IoStats.new()
        _check(LIB.lance_blobs_io_stats(self._h, ctypes.byref(out)))
        return IoStats._from(out)

    def close(self) -> None:
        """Frees the blob handle. Idempotent; also done by `with` and on garbage collection."""
        if self._h:
            LIB.lance_blobs_free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


@dataclass(frozen=True)
class FragmentInfo:
    id: int
    logical_rows: int
    physical_rows: int
    deleted_rows: int
    data_file_count: int


@dataclass(frozen=True)
class VersionInfo:
    version: int
    timestamp_ms: int


@dataclass(frozen=True)
class IndexSegment:
    """One physical segment of an index: its UUID, the visible fragments it covers, their
    rows, and for a vector index its IVF partition count (`nprobes=num_partitions` probes the
    whole segment; None for other indexes)."""
    uuid: bytes
    fragment_ids: list
    indexed_rows: int
    num_partitions: Optional[int] = None


@dataclass(frozen=True)
class IndexInfo:
    name: str
    column: str
    index_type: str
    metric: Optional[str]
    segments: list


@dataclass(frozen=True)
class TableStatistics:
    fragments: list = field(default_factory=list)  # (fragment_id, physical_rows, deleted_rows, bytes_on_disk or None)
    columns: list = field(default_factory=list)    # (name, bytes_on_disk or None)
    io: IoStats = IoStats()


class Dataset:
    """A table pinned at one version (LanceDataset). Thread-safe; free with `close()` or by GC."""

    def __init__(self, handle):
        self._h = _ptr(handle)

    # identity
    @property
    def version(self) -> int:
        """The pinned version this handle reads (it never moves)."""
        return LIB.lance_dataset_version(self._h)

    @property
    def uri(self) -> str:
        """The table's URI."""
        return LIB.lance_dataset_uri(self._h).decode()

    @property
    def storage_format(self) -> str:
        """The data storage format version of the table's files, e.g. '2.0'."""
        return LIB.lance_dataset_storage_format(self._h).decode()

    @property
    def schema(self) -> pa.Schema:
        """The table's Arrow schema at the pinned version."""
        s = _ffi.ArrowSchema()
        _check(LIB.lance_dataset_schema(self._h, ctypes.byref(s)))
        return pa.Schema._import_from_c(ctypes.addressof(s))

    def latest_version(self) -> int:
        """The table's latest committed version now (reads the store; the handle stays pinned)."""
        out = ctypes.c_uint64()
        _check(LIB.lance_dataset_latest_version(self._h, ctypes.byref(out)))
        return out.value

    def versions(self) -> list[VersionInfo]:
        """Every version of the table with its commit time, oldest first."""
        p, n = ctypes.POINTER(_ffi.VersionInfo)(), ctypes.c_size_t()
        _check(LIB.lance_dataset_versions(self._h, ctypes.byref(p), ctypes.byref(n)))
        try:
            return [VersionInfo(p[i].version, p[i].timestamp_ms) for i in range(n.value)]
        finally:
            LIB.lance_version_info_list_free(p, n.value)

    def fragments(self) -> list[FragmentInfo]:
        """The fragments of the pinned version: id, logical/physical/deleted rows, data files."""
        p, n = ctypes.POINTER(_ffi.FragmentInfo)(), ctypes.c_size_t()
        _check(LIB.lance_dataset_fragments(self._h, ctypes.byref(p), ctypes.byref(n)))
        try:
            return [FragmentInfo(p[i].id, p[i].logical_rows, p[i].physical_rows, p[i].deleted_rows,
                                 p[i].data_file_count) for i in range(n.value)]
        finally:
            LIB.lance_fragment_info_list_free(p, n.value)

    def export_snapshot(self) -> bytes:
        """A token a worker opens without reading the manifest (lance_dataset_export_snapshot)."""
        out, n = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t()
        _check(LIB.lance_dataset_export_snapshot(self._h, ctypes.byref(out), ctypes.byref(n)))
        return _take_bytes(out, n)

    # counts and statistics
    def count_rows(self, filter: Optional[str] = None) -> int:
        """Rows of the pinned version, or rows matching the Lance SQL `filter`."""
        return self.count_rows_with_io(filter)[0]

    def count_rows_with_io(self, filter: Optional[str] = None) -> tuple[int, IoStats]:
        """`count_rows` and the I/O it made (an unfiltered count reads only metadata: zero I/O
        figures)."""
        out, io = ctypes.c_uint64(), _ffi.IoStats.new()
        if filter is None:
            _check(LIB.lance_dataset_count_rows(self._h, ctypes.byref(out)))
            return out.value, IoStats()
        _check(LIB.lance_dataset_count_rows_where_v2(self._h, filter.encode(), ctypes.byref(out), ctypes.byref(io)))
        return out.value, IoStats._from(io)

    def count_split_rows(self, split: Split, filter: Optional[str] = None) -> tuple[int, IoStats]:
        """Rows of one scan split (optionally matching `filter`) and the I/O made."""
        out, io = ctypes.c_uint64(), _ffi.IoStats.new()
        _check(LIB.lance_split_count_rows_v2(self._h, split._h, filter.encode() if filter else None,
                                             ctypes.byref(out), ctypes.byref(io)))
        return out.value, IoStats._from(io)

    # aggregates computed inside the splits
    def aggregate(self, aggregates, group_by=None, filter: Optional[str] = None) -> pa.Table:
        """COUNT/SUM/MIN/MAX/AVG of the pinned version, grouped by `group_by` (a column or
        columns), over the rows matching the Lance SQL `filter` (lance_dataset_aggregate).
        `aggregates` is a list of `(column, function)` or `(column, function, alias)`, pyarrow
        style: functions `count`, `count_all` (column None or []: COUNT(*)), `sum`, `min`, `max`,
        `avg` (or `mean`), `count_distinct` (SQL's COUNT(DISTINCT): exact across splits; floats
        count every NaN once and -0.0 as 0.0); in place of a column, an `Expression` (Lance SQL over the row, e.g.
        `Expression("price * (1 - discount)")`). Result columns: the group-by columns, then one per aggregate named by
        its alias or `sum(col)`, `count(*)`, ... An integer SUM beyond int64 raises
        OutOfRangeError (never wrapped)."""
        return self.aggregate_with_io(aggregates, group_by, filter)[0]

    def aggregate_with_io(self, aggregates, group_by=None, filter: Optional[str] = None) -> tuple[pa.Table, IoStats]:
        """`aggregate` and the I/O it made."""
        spec, keep = _aggregate_spec(aggregates, group_by, filter)
        out, io = _ffi.ArrowArrayStream(), _ffi.IoStats.new()
        _check(LIB.lance_dataset_aggregate(self._h, ctypes.byref(spec), ctypes.byref(out), ctypes.byref(io)))
        return Stream(out).read_all(), IoStats._from(io)

    def aggregate_split(self, split: Split, aggregates, group_by=None,
                        filter: Optional[str] = None) -> tuple[pa.Table, IoStats]:
        """The partial states of one scan split (lance_dataset_aggregate_split) and the I/O made:
        a small table (group keys, then `agg<i>_<state>` columns) to merge with the other
        splits' partials by `merge_aggregates`. Works on a shipped split in another process."""
        spec, keep = _aggregate_spec(aggregates, group_by, filter)
        out, io = _ffi.ArrowArrayStream(), _ffi.IoStats.new()
        _check(LIB.lance_dataset_aggregate_split(self._h, split._h, ctypes.byref(spec), ctypes.byref(out),
                                                 ctypes.byref(io)))
        return Stream(out).read_all(), IoStats._from(io)

    def statistics(self) -> TableStatistics:
        """Per-fragment rows and bytes and per-column bytes on disk, with the I/O made to get them."""
        h, io = ctypes.c_void_p(), _ffi.IoStats.new()
        _check(LIB.lance_dataset_statistics_v2(self._h, ctypes.byref(h), ctypes.byref(io)))
        try:
            frags, cols = [], []
            for i in range(LIB.lance_table_stats_fragment_count(h)):
                f = _ffi.FragmentStats.new()
                _check(LIB.lance_table_stats_fragment_v2(h, i, ctypes.byref(f)))
                frags.append((f.fragment_id, f.physical_rows, f.deleted_rows,
                              f.bytes_on_disk if f.has_bytes_on_disk else None))
            for i in range(LIB.lance_table_stats_column_count(h)):
                c = _ffi.ColumnStats.new()
                _check(LIB.lance_table_stats_column_v2(h, i, ctypes.byref(c)))
                cols.append((c.name.decode(), c.bytes_on_disk if c.has_bytes_on_disk else None))
            return TableStatistics(frags, cols, IoStats._from(io))
        finally:
            LIB.lance_table_stats_free(h)

    # scans
    def scan(self, columns: Optional[Sequence[str]] = None, filter: Optional[str] = None, **options) -> pa.RecordBatchReader:
        """Scan as a `pyarrow.RecordBatchReader` (zero copy). Options: substrait, limit, offset,
        batch_size, with_row_id, with_row_addr, fragment_ids, scan_in_order, batch_readahead,
        fragment_readahead, io_buffer_bytes, order_by ('price DESC, id': sorted before offset
        and limit, a top-n with a limit), keys (a runtime key-set filter: `(column, values)`,
        values a pyarrow array or a list; only rows whose column holds one of them, ANDed with
        `filter` and `substrait`, which may be given together) (see LanceScanOptions)."""
        return self.scan_stream(columns, filter, **options).reader()

    def scan_stream(self, columns=None, filter=None, **options) -> Stream:
        """`scan` as a `Stream` (I/O statistics, cancellation)."""
        o, keep = _scan_options(columns, filter, **options)
        out = _ffi.ArrowArrayStream()
        _check(LIB.lance_dataset_scan_v2(self._h, ctypes.byref(o), ctypes.byref(out)))
        return Stream(out)

    def explain_scan(self, columns=None, filter=None, **options) -> str:
        """The scan plan `scan(columns, filter, **options)` would run, as text."""
        o, keep = _scan_options(columns, filter, **options)
        p = ctypes.c_void_p()
        _check(LIB.lance_dataset_explain_scan_v2(self._h, ctypes.byref(o), ctypes.byref(p)))
        return _take_string(p)

    def scan_split(self, split: Split, columns=None, filter=None, **options) -> pa.RecordBatchReader:
        """Scan one scan split (lance_split_scan_v2) as a `pyarrow.RecordBatchReader`."""
        return self.scan_split_stream(split, columns, filter, **options).reader()

    def scan_split_stream(self, split: Split, columns=None, filter=None, **options) -> Stream:
        """`scan_split` as a `Stream` (I/O statistics, cancellation)."""
        o, keep = _scan_options(columns, filter, **options)
        out = _ffi.ArrowArrayStream()
        _check(LIB.lance_split_scan_v2(self._h, split._h, ctypes.byref(o), ctypes.byref(out)))
        return Stream(out)

    def take(self, row_ids: Sequence[int], columns: Optional[Sequence[str]] = None) -> pa.Table:
        """Rows by `_rowid`, in request order (lance_dataset_take_rows)."""
        ids = (ctypes.c_uint64 * len(row_ids))(*row_ids)
        cols, n = _cstrings(columns)
        out = _ffi.ArrowArrayStream()
        _check(LIB.lance_dataset_take_rows(self._h, ids, len(row_ids), cols, n, ctypes.byref(out)))
        return _import_reader(out).read_all()

    def take_blobs(self, column: str, row_ids: Sequence[int]) -> "Blobs":
        """The blobs of a blob column for `row_ids` (lance_dataset_take_blobs): descriptors
        only; read byte ranges with `Blobs.read`."""
        ids = (ctypes.c_uint64 * len(row_ids))(*row_ids)
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_take_blobs(self._h, column.encode(), ids, len(row_ids), ctypes.byref(h)))
        return Blobs(h)

    # planning
    def plan_scan(self, target_rows: int = 0, *, slices: bool = True) -> list[Split]:
        """Scan splits covering the pinned version, about `target_rows` rows each (0 = one per
        fragment): fragments are grouped, and a fragment of more than `target_rows` rows is cut
        into row slices (`Split.row_slice`; lance_dataset_plan_scan_slices). `slices=False`
        keeps whole fragments (lance_dataset_plan_scan), as a staged delete needs. Splits pickle;
        scan them on any worker with `scan_split`."""
        h = ctypes.c_void_p()
        plan = LIB.lance_dataset_plan_scan_slices if slices else LIB.lance_dataset_plan_scan
        _check(plan(self._h, target_rows, ctypes.byref(h)))
        return _plan(h).splits

    def plan_changes(self, since_version: int = 0, *, since_timestamp_ms: Optional[int] = None,
                     types: Sequence[str] = ("insert", "update", "delete"), target_rows: int = 0) -> list[Split]:
        """Splits of the rows changed after `since_version` (or after the last version committed
        before `since_timestamp_ms`) up to this handle's version (lance_dataset_plan_changes):
        `types` among 'insert', 'update', 'delete'. Read each with `scan_split` on this version
        (any worker): the columns asked for, then `_rowid`, `_row_created_at_version`,
        `_row_last_updated_at_version` and `_change_type`. Needs a table with stable row ids."""
        bits = {"insert": 1, "update": 2, "delete": 4}
        if isinstance(types, str) or not types or any(t not in bits for t in types):
            raise _error(1, f"types must be a non-empty sequence of 'insert', 'update', 'delete', not {types!r}")
        p = _ffi.ChangesParams()
        _check(LIB.lance_changes_params_init_v2(ctypes.byref(p), ctypes.sizeof(p)))
        p.since_version = since_version
        p.since_timestamp_ms = since_timestamp_ms or 0
        p.change_types = sum({bits[t] for t in types})
        p.target_rows = target_rows
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_plan_changes(self._h, ctypes.byref(p), ctypes.byref(h)))
        return _plan(h).splits

    def changes(self, since_version: int = 0, columns=None, **kw) -> pa.Table:
        """Every row changed after `since_version` up to this version, read here: the splits of
        `plan_changes` (same keywords) scanned one after another."""
        parts = [self.scan_split(s, columns).read_all() for s in self.plan_changes(since_version, **kw)]
        if not parts:
            raise _error(1, f"no changes after version {since_version}: this handle is at that version")
        return pa.concat_tables(parts)

    def plan_vector_search(self, column: str, metric: Optional[str] = None, use_index: bool = True,
                           flat_target_rows: int = 0) -> SplitPlan:
        """Vector-search splits for `column`: one per index segment plus flat splits for unindexed
        rows (`use_index=False`: all flat, exact). Search each with `search_split` and merge with
        `merge_top_k`."""
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_plan_vector_search(self._h, column.encode(), _metric(metric),
                                                    use_index, flat_target_rows, ctypes.byref(h)))
        return _plan(h)

    def plan_fts(self, column: str, flat_target_rows: int = 0) -> SplitPlan:
        """Full-text splits for `column`: one per inverted-index segment plus flat splits for
        unindexed rows. Search each with `fts_search_split` and merge with `merge_fts`."""
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_plan_fts(self._h, column.encode(), flat_target_rows, ctypes.byref(h)))
        return _plan(h)

    # vector search
    def search_split(self, split: Split, column: str, vector, k: int = 10, **query) -> Stream:
        """One vector-search split (lance_split_search_v2). Query options: metric, nprobes,
        refine_factor, ef, prefilter, columns, with_row_id, defer_refine, element_type,
        distance_range=(lower, upper) (lower <= _distance < upper; None = unbounded).
        A list of vectors is a batch search: k per query, output with `query_index`."""
        q, keep = _vector_query(column, vector, k, **query)
        out = _ffi.ArrowArrayStream()
        _check(LIB.lance_split_search_v2(self._h, split._h, ctypes.byref(q), ctypes.byref(out)))
        return Stream(out)

    def vector_search(self, column: str, vector, k: int = 10, *, metric: Optional[str] = None,
                      use_index: bool = True, **query) -> pa.Table:
        """The snapshot's vector top k in this process: every split of the vector plan searched
        (`search_split`, query options as there: nprobes, refine_factor, ef, prefilter, columns)
        and merged with the library's merge (`merge_top_k`). The result has the projected
        columns, `_distance` (ascending, ties by `_rowid`) and `_rowid`."""
        plan = self.plan_vector_search(column, metric, use_index)
        query = dict(query, with_row_id=True, metric=metric)
        return merge_top_k([self.search_split(s, column, vector, k, **query) for s in plan], k).read_all()

    def explain_search(self, split: Split, column: str, vector, k: int = 10, **query) -> str:
        """The plan `search_split` would run for this split and query, as text."""
        q, keep = _vector_query(column, vector, k, **query)
        p = ctypes.c_void_p()
        _check(LIB.lance_split_explain_search_v2(self._h, split._h, ctypes.byref(q), ctypes.byref(p)))
        return _take_string(p)

    def refine(self, candidates, column: str, vector, k: int = 10, **query) -> Stream:
        """Exact re-rank of merged approximate candidates (lance_dataset_refine_v2); takes
        ownership of `candidates`."""
        q, keep = _vector_query(column, vector, k, **query)
        (c,) = _streams_in([candidates])
        out = _ffi.ArrowArrayStream()
        _check(LIB.lance_dataset_refine_v2(self._h, ctypes.byref(q), ctypes.byref(c), ctypes.byref(out)))
        return Stream(out)

    # full-text search
    def fts_stats(self, column: str, text: str, **query) -> bytes:
        """Corpus statistics of one query, once per query (lance_dataset_fts_stats). Query
        options: match ('or', 'and', 'phrase'), slop, prefilter (k, columns do not matter)."""
        return self.fts_stats_with_io(column, text, **query)[0]

    def fts_stats_with_io(self, column: str, text: str, **query) -> tuple[bytes, IoStats]:
        """`fts_stats` and the I/O made to compute them."""
        q, keep = _text_query(column, text, **query)
        out, n, io = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t(), _ffi.IoStats.new()
        _check(LIB.lance_dataset_fts_stats(self._h, ctypes.byref(q), ctypes.byref(out), ctypes.byref(n), ctypes.byref(io)))
        return _take_bytes(out, n), IoStats._from(io)

    def fts_search_split(self, split: Split, column: str, text: str, stats: bytes | None, k: int = 10,
                         **query) -> Stream:
        """One full-text split with the coordinator's statistics (lance_split_fts_search).
        `stats` None: the split must be the whole corpus (every segment split combined, on a
        snapshot whose index covers every fragment); the search computes the statistics."""
        q, keep = _text_query(column, text, k, **query)
        data, n = _stats_arg(stats)
        out = _ffi.ArrowArrayStream()
        _check(LIB.lance_split_fts_search(self._h, split._h, ctypes.byref(q), data, n, ctypes.byref(out)))
        return Stream(out)

    def full_text_search(self, column: str, text: str, k: int = 10, **query) -> pa.Table:
        """The snapshot's full-text top k in this process, as pylance's `full_text_query` answers:
        the plan's index segments searched as one split and its unindexed fragments as another,
        with the statistics computed once and the two merged; on a fully indexed snapshot the one
        split of every segment is the whole corpus and is searched without a statistics pass.
        Query options as `fts_search_split` (match, slop, prefilter, columns); the result has the
        projected columns, `_score` (descending, ties by `_rowid`) and `_rowid`."""
        query = dict(query, with_row_id=True)  # the merge orders ties by `_rowid`
        plan = list(self.plan_fts(column))
        segments = [s for s in plan if s.kind == SPLIT_FTS_SEGMENT]
        flats = [s for s in plan if s.kind == SPLIT_FTS_FLAT]
        groups = [Split.combine(g) for g in (segments, flats) if g]
        if segments and not flats:
            try:
                return self.fts_search_split(groups[0], column, text, None, k, **query).read_all()
            except InvalidArgumentError:
                pass  # an index segment the plan left out: not the whole corpus; statistics below
        stats = self.fts_stats(column, text, **query)
        return merge_fts([self.fts_search_split(g, column, text, stats, k, **query) for g in groups], k).read_all()

    def explain_fts(self, split: Split, column: str, text: str, stats: bytes | None, k: int = 10, **query) -> str:
        """The plan `fts_search_split` would run for this split and query, as text."""
        q, keep = _text_query(column, text, k, **query)
        data, n = _stats_arg(stats)
        p = ctypes.c_void_p()
        _check(LIB.lance_split_explain_fts(self._h, split._h, ctypes.byref(q), data, n, ctypes.byref(p)))
        return _take_string(p)

    # indexes and prewarm
    def indexes(self) -> list[IndexInfo]:
        """The indexes of the pinned version: name, type, columns and segments (fragments covered,
        and for IVF indexes the partition count)."""
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_indexes(self._h, ctypes.byref(h)))
        try:
            out = []
            for i in range(LIB.lance_index_list_count(h)):
                segs = []
                for j in range(LIB.lance_index_list_segment_count(h, i)):
                    s = _ffi.IndexSegmentInfo.new()
                    _check(LIB.lance_index_list_segment_v2(h, i, j, ctypes.byref(s)))
                    segs.append(IndexSegment(bytes(s.uuid), [s.fragment_ids[k] for k in range(s.num_fragment_ids)],
                                             s.indexed_rows, s.num_partitions or None))
                metric = LIB.lance_index_list_metric(h, i)
                out.append(IndexInfo(LIB.lance_index_list_name(h, i).decode(), LIB.lance_index_list_column(h, i).decode(),
                                     LIB.lance_index_list_type(h, i).decode(), metric.decode() if metric else None, segs))
            return out
        finally:
            LIB.lance_index_list_free(h)

    def prewarm_index(self, name: str, segments: Optional[Sequence[bytes]] = None) -> IoStats:
        """Load an index (all segments, or the given 16-byte segment UUIDs) into the process's
        cache without running a query; returns the I/O it caused."""
        io = _ffi.IoStats.new()
        if segments is None:
            _check(LIB.lance_dataset_prewarm_index_with_stats_v2(self._h, name.encode(), ctypes.byref(io)))
        else:
            raw = b"".join(segments)
            _check(LIB.lance_dataset_prewarm_index_segments_v2(self._h, name.encode(), raw, len(raw), ctypes.byref(io)))
        return IoStats._from(io)

    # writes
    def delete(self, predicate: str, **params) -> tuple["Dataset", "WriteResult"]:
        """Delete the rows matching the Lance SQL `predicate` as one new version planned at this
        handle's version (lance_dataset_delete); this handle keeps its version. Returns the new
        version pinned and its `WriteResult` (`rows_deleted`). Params: commit_retries,
        retry_timeout_ms."""
        p, keep = _write_params(None, **params)
        out, r = ctypes.c_void_p(), _ffi.WriteResult.new()
        _check(LIB.lance_dataset_delete(self._h, predicate.encode(), ctypes.byref(p), ctypes.byref(out), ctypes.byref(r)))
        return Dataset(out.value), WriteResult._from(r)

    def update(self, values: Mapping[str, str], where: Optional[str] = None, **params) -> tuple["Dataset", "WriteResult"]:
        """`UPDATE t SET column = expression [, ...] WHERE where` (lance_dataset_update):
        `values` maps columns to Lance SQL expressions over the row (e.g. {"price": "price * 2"});
        `where` None updates every row. One new version planned at this handle's version;
        returns it pinned and its `WriteResult` (`rows_updated`)."""
        if not isinstance(values, Mapping) or not values:
            raise _error(1, "values must be a non-empty mapping of column -> SQL expression")
        cols, n = _cstrings(list(values.keys()))
        exprs, _ = _cstrings([str(v) for v in values.values()])
        p, keep = _write_params(None, **params)
        out, r = ctypes.c_void_p(), _ffi.WriteResult.new()
        _check(LIB.lance_dataset_update(self._h, cols, exprs, n, where.encode() if where is not None else None,
                                        ctypes.byref(p), ctypes.byref(out), ctypes.byref(r)))
        return Dataset(out.value), WriteResult._from(r)

    def merge_insert(self, data, on: Union[str, Sequence[str]], when_matched: str = "do_nothing",
                     when_not_matched: str = "insert", when_not_matched_by_source: str = "keep", *,
                     when_matched_condition: Optional[str] = None, by_source_condition: Optional[str] = None,
                     **params) -> tuple["Dataset", "WriteResult"]:
        """MERGE INTO this table from `data` (a pyarrow Table, RecordBatchReader, ...) by the key
        column(s) `on` (lance_dataset_merge_insert). `when_matched`: 'do_nothing', 'update_all'
        (upsert), 'update_if' (with `when_matched_condition`), 'delete', 'fail';
        `when_not_matched`: 'insert', 'do_nothing'; `when_not_matched_by_source`: 'keep',
        'delete', 'delete_if' (with `by_source_condition`). One new version planned at this
        handle's version; returns it pinned and its `WriteResult` (rows inserted, updated,
        deleted)."""
        m, keep_m = _merge_spec(on, when_matched, when_not_matched, when_not_matched_by_source,
                                when_matched_condition, by_source_condition)
        p, keep = _write_params(None, **params)
        c = _stream_of(data)
        out, r = ctypes.c_void_p(), _ffi.WriteResult.new()
        _check(LIB.lance_dataset_merge_insert(self._h, ctypes.byref(c), ctypes.byref(m), ctypes.byref(p),
                                              ctypes.byref(out), ctypes.byref(r)))
        return Dataset(out.value), WriteResult._from(r)

    def stage_merge_insert(self, data, on: Union[str, Sequence[str]], when_matched: str = "do_nothing",
                           when_not_matched: str = "insert", when_not_matched_by_source: str = "keep", *,
                           when_matched_condition: Optional[str] = None,
                           by_source_condition: Optional[str] = None) -> "StagedWrite":
        """`merge_insert` without the commit (lance_dataset_stage_merge_insert): the rows it
        writes go to new files, and the returned `StagedWrite` names them. Commit it alone with
        `commit(uri, [staged], ...)` (statement id, commit message and retries apply there), or
        discard it with `abort_staged`. `result` has the rows inserted, updated and deleted."""
        m, keep_m = _merge_spec(on, when_matched, when_not_matched, when_not_matched_by_source,
                                when_matched_condition, by_source_condition)
        c = _stream_of(data)
        out, n, r = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t(), _ffi.WriteResult.new()
        _check(LIB.lance_dataset_stage_merge_insert(self._h, ctypes.byref(c), ctypes.byref(m), ctypes.byref(out),
                                                    ctypes.byref(n), ctypes.byref(r)))
        return StagedWrite(_take_bytes(out, n), WriteResult._from(r))

    def stage_delete(self, predicate: str, split: Optional["Split"] = None) -> "StagedWrite":
        """One worker's share of a delete without the commit (lance_dataset_stage_delete): the
        rows of `split`'s fragments (a scan split of this handle's version; None = every
        fragment) matching `predicate` are marked deleted in new deletion files. Give every
        worker its own split and one predicate; the coordinator commits all shares as one
        delete with `commit(uri, shares)`. `result.rows_deleted` counts the share's rows."""
        out, n, r = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t(), _ffi.WriteResult.new()
        _check(LIB.lance_dataset_stage_delete(self._h, split._h if split is not None else None, predicate.encode(),
                                              ctypes.byref(out), ctypes.byref(n), ctypes.byref(r)))
        return StagedWrite(_take_bytes(out, n), WriteResult._from(r))

    def stage_row_deletes(self, row_addresses: Sequence[int]) -> "StagedWrite":
        """One worker's share of a row-level change without the commit
        (lance_dataset_stage_row_deletes): the rows at `row_addresses` (`_rowaddr` values read
        from this handle's version) are deleted when the coordinator commits. Nothing is written
        now. The rows written instead (new values, inserts) are a `stage_write(uri, rows,
        "append", at=this handle)`; `commit(uri, row_deletes + appends)` lands them all as ONE
        version, or fails with LANCE_ERR_CONFLICT when a concurrent commit changed one of the
        same rows."""
        try:
            addrs = [int(a) for a in row_addresses]
        except (TypeError, ValueError):
            raise _error(1, "row_addresses must be integers (_rowaddr values)") from None
        if any(a < 0 or a >= 2 ** 64 for a in addrs):
            raise _error(1, "a row address must be an unsigned 64-bit integer")
        arr = (ctypes.c_uint64 * len(addrs))(*addrs)
        out, n, r = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t(), _ffi.WriteResult.new()
        _check(LIB.lance_dataset_stage_row_deletes(self._h, arr, len(addrs), ctypes.byref(out), ctypes.byref(n),
                                                   ctypes.byref(r)))
        return StagedWrite(_take_bytes(out, n), WriteResult._from(r))

    # index builds
    def create_vector_index(self, column: str, index_type: str = "IVF_PQ", *, name: Optional[str] = None,
                            replace: bool = False, metric: Optional[str] = None, num_partitions: int = 0,
                            num_sub_vectors: int = 0, num_bits: int = 0, sample_rate: int = 0,
                            max_iterations: int = 0, hnsw_m: int = 0, hnsw_ef_construction: int = 0) -> "Dataset":
        """Build a vector index on `column` (lance_dataset_create_vector_index): `index_type`
        'IVF_PQ', 'IVF_FLAT', 'IVF_SQ', 'IVF_HNSW_FLAT', 'IVF_HNSW_PQ' or 'IVF_HNSW_SQ'; `metric`
        'l2' (default), 'cosine', 'dot', 'hamming'; 0 = Lance's default for the numbers. One new
        version planned at this handle's version; returns it pinned."""
        p = _vector_index_params(index_type, metric, num_partitions, num_sub_vectors, num_bits, sample_rate,
                                 max_iterations, hnsw_m, hnsw_ef_construction)
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_create_vector_index(self._h, column.encode(), name.encode() if name else None,
                                                     replace, ctypes.byref(p), ctypes.byref(out)))
        return Dataset(out.value)

    def create_scalar_index(self, column: str, index_type: str = "BTREE", *, name: Optional[str] = None,
                            replace: bool = False) -> "Dataset":
        """Build a scalar index on `column` (lance_dataset_create_scalar_index): 'BTREE',
        'BITMAP' or 'LABEL_LIST'. One new version; returns it pinned."""
        p = _scalar_index_params(index_type)
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_create_scalar_index(self._h, column.encode(), name.encode() if name else None,
                                                     replace, ctypes.byref(p), ctypes.byref(out)))
        return Dataset(out.value)

    def create_inverted_index(self, column: str, *, name: Optional[str] = None, replace: bool = False,
                              base_tokenizer: str = "simple", language: str = "English", with_position: bool = False,
                              max_token_length: Optional[int] = 40, lower_case: bool = True, stem: bool = True,
                              remove_stop_words: bool = True, ascii_folding: bool = True) -> "Dataset":
        """Build an INVERTED (full-text) index on the string column `column`
        (lance_dataset_create_inverted_index); the defaults are Lance's (`max_token_length`
        None = unlimited). One new version; returns it pinned."""
        p = _inverted_index_params(base_tokenizer, language, with_position, max_token_length, lower_case, stem,
                                   remove_stop_words, ascii_folding)
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_create_inverted_index(self._h, column.encode(), name.encode() if name else None,
                                                       replace, ctypes.byref(p), ctypes.byref(out)))
        return Dataset(out.value)

    # distributed index builds
    def train_vector_index(self, column: str, index_type: str = "IVF_PQ", *, metric: Optional[str] = None,
                           num_partitions: int = 0, num_sub_vectors: int = 0, num_bits: int = 0, sample_rate: int = 0,
                           max_iterations: int = 0, hnsw_m: int = 0, hnsw_ef_construction: int = 0) -> bytes:
        """Train the global part of a vector index on this handle's version, on the coordinator
        (lance_dataset_train_vector_index): IVF centroids and, for PQ types, the PQ codebook.
        Returns the model bytes for `plan_vector_index_build`; keep them to index appended
        fragments later. Settings as for `create_vector_index`."""
        p = _vector_index_params(index_type, metric, num_partitions, num_sub_vectors, num_bits, sample_rate,
                                 max_iterations, hnsw_m, hnsw_ef_construction)
        out, n = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t()
        _check(LIB.lance_dataset_train_vector_index(self._h, column.encode(), ctypes.byref(p), ctypes.byref(out),
                                                    ctypes.byref(n), None))
        return _take_bytes(out, n)

    def plan_vector_index_build(self, column: str, model: bytes, *, name: Optional[str] = None, replace: bool = False,
                                num_splits: int = 0, unindexed_only: bool = False) -> list:
        """Plan a distributed vector index build at this handle's version with `model` (from
        `train_vector_index`; lance_dataset_plan_vector_index_build): a list of tasks as bytes,
        one per build split (`num_splits` 0 = one per fragment). Each worker runs
        `execute_index_build_task`; the coordinator commits the segments once with
        `commit_index_build`. `unindexed_only`: only the fragments the index does not cover yet."""
        model = bytes(model)
        p = _plan_params(num_splits, unindexed_only)
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_plan_vector_index_build(self._h, column.encode(), name.encode() if name else None,
                                                         replace, model, len(model), ctypes.byref(p), ctypes.byref(h)))
        return _bytes_list(h)

    def plan_inverted_index_build(self, column: str, *, name: Optional[str] = None, replace: bool = False,
                                  num_splits: int = 0, unindexed_only: bool = False, base_tokenizer: str = "simple",
                                  language: str = "English", with_position: bool = False,
                                  max_token_length: Optional[int] = 40, lower_case: bool = True, stem: bool = True,
                                  remove_stop_words: bool = True, ascii_folding: bool = True) -> list:
        """Plan a distributed INVERTED index build (lance_dataset_plan_inverted_index_build): as
        `plan_vector_index_build`, with the settings of `create_inverted_index`."""
        q = _inverted_index_params(base_tokenizer, language, with_position, max_token_length, lower_case, stem,
                                   remove_stop_words, ascii_folding)
        p = _plan_params(num_splits, unindexed_only)
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_plan_inverted_index_build(self._h, column.encode(), name.encode() if name else None,
                                                           replace, ctypes.byref(q), ctypes.byref(p), ctypes.byref(h)))
        return _bytes_list(h)

    def plan_scalar_index_build(self, column: str, index_type: str = "BTREE", *, name: Optional[str] = None,
                                replace: bool = False, num_splits: int = 0, unindexed_only: bool = False) -> list:
        """Plan a distributed scalar index build (lance_dataset_plan_scalar_index_build): 'BTREE',
        'BITMAP' or 'LABEL_LIST', as `plan_vector_index_build`."""
        q = _scalar_index_params(index_type)
        p = _plan_params(num_splits, unindexed_only)
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_plan_scalar_index_build(self._h, column.encode(), name.encode() if name else None,
                                                         replace, ctypes.byref(q), ctypes.byref(p), ctypes.byref(h)))
        return _bytes_list(h)

    def execute_index_build_task(self, task: bytes) -> bytes:
        """Build the index segment of one task on a worker (lance_index_build_task_execute): its
        files are written, nothing is committed; returns the segment as bytes."""
        return self.execute_index_build_task_with_io(task)[0]

    def execute_index_build_task_with_io(self, task: bytes) -> tuple[bytes, "IoStats"]:
        """`execute_index_build_task`, with the reads the build made (object stores; local
        tables report 0 requests)."""
        task = bytes(task)
        out, n, io = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t(), _ffi.IoStats.new()
        _check(LIB.lance_index_build_task_execute(self._h, task, len(task), ctypes.byref(out), ctypes.byref(n),
                                                  ctypes.byref(io)))
        return _take_bytes(out, n), IoStats._from(io)

    def commit_index_build(self, segments: Sequence[bytes], merge: bool = False) -> "Dataset":
        """Commit the segments of one build plan as ONE index in ONE new version
        (lance_dataset_commit_index_build), merged into one segment first with `merge`. Segments
        of failed tasks may be left out (their fragments stay unindexed). Returns the version."""
        segments = [bytes(b) for b in segments]
        ptrs, lens, bufs = _byte_arrays(segments)
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_commit_index_build(self._h, ptrs, lens, len(segments), bool(merge),
                                                    ctypes.byref(out)))
        return Dataset(out.value)

    def optimize_indexes(self, name: Optional[str] = None, merge: int = 0) -> "Dataset":
        """Index the fragments appended since the index(es) were built
        (lance_dataset_optimize_indexes): a new segment (`merge` 0), or the newest `merge`
        segments merged with them into one. `name` None = every index. Returns the version."""
        if not isinstance(merge, int) or not 0 <= merge < 2 ** 32:
            raise _error(1, f"merge must be a non-negative integer, not {merge!r}")
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_optimize_indexes(self._h, name.encode() if name else None, merge, ctypes.byref(out)))
        return Dataset(out.value)

    def drop_index(self, name: str) -> "Dataset":
        """Drop the index `name` (lance_dataset_drop_index) as one new version; returns it."""
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_drop_index(self._h, name.encode(), ctypes.byref(out)))
        return Dataset(out.value)

    # schema changes
    def add_columns(self, columns: Mapping[str, str]) -> "Dataset":
        """Add columns whose values are Lance SQL expressions over each row, e.g.
        {"total": "price * qty"} (lance_dataset_add_columns), as one new version planned at this
        handle's version; returns it pinned."""
        if not isinstance(columns, Mapping) or not columns:
            raise _error(1, "columns must be a non-empty mapping of name -> SQL expression")
        names, n = _cstrings(list(columns.keys()))
        exprs, _ = _cstrings([str(v) for v in columns.values()])
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_add_columns(self._h, names, exprs, n, ctypes.byref(out)))
        return Dataset(out.value)

    def add_null_columns(self, schema: "pa.Schema") -> "Dataset":
        """Add the (nullable) fields of the pyarrow `schema` as columns that are null in every
        existing row (lance_dataset_add_null_columns; metadata only). Returns the new version."""
        if not isinstance(schema, pa.Schema):
            raise _error(1, f"schema must be a pyarrow Schema, not {type(schema).__name__}")
        c = _ffi.ArrowSchema()
        schema._export_to_c(ctypes.addressof(c))
        try:
            out = ctypes.c_void_p()
            _check(LIB.lance_dataset_add_null_columns(self._h, ctypes.byref(c), ctypes.byref(out)))
        finally:
            pa.Schema._import_from_c(ctypes.addressof(c))  # pyarrow takes it back and releases it
        return Dataset(out.value)

    def drop_columns(self, names: Union[str, Sequence[str]]) -> "Dataset":
        """Drop columns (lance_dataset_drop_columns; metadata only: compact and cleanup reclaim
        the space), as one new version; returns it pinned."""
        arr, n = _cstrings([names] if isinstance(names, str) else list(names))
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_drop_columns(self._h, arr, n, ctypes.byref(out)))
        return Dataset(out.value)

    # maintenance
    def compact(self, target_rows_per_fragment: int = 0, max_rows_per_group: int = 0,
                deletion_threshold: float = 0.0, keep_deletions: bool = False) -> tuple["Dataset", "CompactResult"]:
        """Rewrite small fragments (and fragments with many deleted rows) into larger ones as one
        new version planned at this handle's version (lance_dataset_compact); 0 = Lance's
        default. Nothing to do commits nothing (the result's version is this handle's)."""
        p = _compact_params(target_rows_per_fragment, max_rows_per_group, deletion_threshold, keep_deletions)
        out, r = ctypes.c_void_p(), _ffi.CompactResult.new()
        _check(LIB.lance_dataset_compact(self._h, ctypes.byref(p), ctypes.byref(out), ctypes.byref(r)))
        return Dataset(out.value), CompactResult._from(r)

    def plan_compaction(self, target_rows_per_fragment: int = 0, max_rows_per_group: int = 0,
                        deletion_threshold: float = 0.0, keep_deletions: bool = False) -> list:
        """Plan a distributed compaction at this handle's version (lance_dataset_plan_compaction):
        a list of tasks as bytes (empty when there is nothing to do). Ship each to a worker, which
        runs `execute_compaction_task`; commit the results once with `commit_compaction`."""
        p = _compact_params(target_rows_per_fragment, max_rows_per_group, deletion_threshold, keep_deletions)
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_plan_compaction(self._h, ctypes.byref(p), ctypes.byref(h)))
        return _bytes_list(h)

    def execute_compaction_task(self, task: bytes) -> bytes:
        """Execute one compaction task on a worker (lance_compaction_task_execute): its fragments
        are rewritten into new files, nothing is committed; returns the result as bytes."""
        task = bytes(task)
        out, n = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t()
        _check(LIB.lance_compaction_task_execute(self._h, task, len(task), ctypes.byref(out), ctypes.byref(n)))
        return _take_bytes(out, n)

    def commit_compaction(self, results: Sequence[bytes], target_rows_per_fragment: int = 0,
                          max_rows_per_group: int = 0, deletion_threshold: float = 0.0,
                          keep_deletions: bool = False) -> tuple["Dataset", "CompactResult"]:
        """Commit the results of one compaction plan's tasks as ONE new version
        (lance_dataset_commit_compaction; indexes remapped). Results of failed tasks may be left
        out. Pass the options the plan was made with."""
        p = _compact_params(target_rows_per_fragment, max_rows_per_group, deletion_threshold, keep_deletions)
        results = [bytes(b) for b in results]
        ptrs, lens, bufs = _byte_arrays(results)
        out, r = ctypes.c_void_p(), _ffi.CompactResult.new()
        _check(LIB.lance_dataset_commit_compaction(self._h, ptrs, lens, len(results), ctypes.byref(p),
                                                   ctypes.byref(out), ctypes.byref(r)))
        return Dataset(out.value), CompactResult._from(r)

    def cleanup(self, older_than_ms: int, delete_unverified: bool = False) -> "CleanupResult":
        """Remove the table's versions committed more than `older_than_ms` ago and the files only
        they use (lance_dataset_cleanup); the latest and tagged versions stay. A reader pinned to
        a removed version fails on its next read."""
        if not isinstance(older_than_ms, int) or older_than_ms < 0:
            raise _error(1, f"older_than_ms must be a non-negative integer, not {older_than_ms!r}")
        versions, nbytes = ctypes.c_uint64(), ctypes.c_uint64()
        _check(LIB.lance_dataset_cleanup(self._h, older_than_ms, delete_unverified, ctypes.byref(versions),
                                         ctypes.byref(nbytes)))
        return CleanupResult(versions.value, nbytes.value)

    def create_tag(self, name: str, version: int = 0) -> None:
        """Tag `version` of the table (0 = this handle's) as `name` (lance_dataset_create_tag):
        kept from cleanup, opened with `open_tag`; pylance sees it."""
        _check(LIB.lance_dataset_create_tag(self._h, name.encode(), version))

    def delete_tag(self, name: str) -> None:
        """Delete tag `name` (lance_dataset_delete_tag)."""
        _check(LIB.lance_dataset_delete_tag(self._h, name.encode()))

    def tags(self) -> dict:
        """The table's tags: name -> version (lance_dataset_tags)."""
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_tags(self._h, ctypes.byref(h)))
        try:
            return {LIB.lance_tag_list_name(h, i).decode(): LIB.lance_tag_list_version(h, i)
                    for i in range(LIB.lance_tag_list_count(h))}
        finally:
            LIB.lance_tag_list_free(h)

    @property
    def branch(self) -> str:
        """The branch this handle is on ('main' for the default branch; lance_dataset_branch)."""
        return LIB.lance_dataset_branch(self._h).decode()

    def create_branch(self, name: str, version: int = 0) -> "Dataset":
        """Create branch `name` from `version` of this handle's branch (0 = this handle's
        version) (lance_dataset_create_branch); returns the branch at its first version."""
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_create_branch(self._h, name.encode(), version, ctypes.byref(out)))
        return Dataset(out.value)

    def delete_branch(self, name: str) -> None:
        """Delete branch `name` of the table (lance_dataset_delete_branch)."""
        _check(LIB.lance_dataset_delete_branch(self._h, name.encode()))

    def branches(self) -> dict:
        """The table's branches: name -> (parent branch, parent version) (lance_dataset_branches)."""
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_branches(self._h, ctypes.byref(h)))
        try:
            return {LIB.lance_branch_list_name(h, i).decode(): (LIB.lance_branch_list_parent(h, i).decode(),
                                                               LIB.lance_branch_list_parent_version(h, i))
                    for i in range(LIB.lance_branch_list_count(h))}
        finally:
            LIB.lance_branch_list_free(h)

    def shallow_clone(self, target_uri: str, storage_options: Optional[Mapping[str, str]] = None) -> "Dataset":
        """Clone this version into a new table at `target_uri` that references this table's
        files (lance_dataset_shallow_clone); returns the clone."""
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_shallow_clone(self._h, target_uri.encode(), _kv(storage_options), ctypes.byref(out)))
        return Dataset(out.value)

    def config(self) -> dict:
        """The table's config at this handle's version, as pylance's `config()` shows it
        (lance_dataset_config)."""
        h = ctypes.c_void_p()
        _check(LIB.lance_dataset_config(self._h, ctypes.byref(h)))
        try:
            items = [LIB.lance_string_list_get(h, i).decode() for i in range(LIB.lance_string_list_count(h))]
            return dict(zip(items[0::2], items[1::2]))
        finally:
            LIB.lance_string_list_free(h)

    def update_config(self, set: Optional[Mapping[str, str]] = None, remove: Sequence[str] = (),
                      **params) -> tuple["Dataset", "WriteResult"]:
        """Set and remove keys of the table's config as one new version planned at this handle's
        version (lance_dataset_update_config). Params as for `write_table`, among them the
        preconditions `expected_version` and `required_config` (move a fencing token with a
        compare-and-set: require the old value, set the new one)."""
        if isinstance(remove, str) or not all(isinstance(k, str) for k in remove):
            raise _error(1, "remove must be a sequence of config keys")
        keys, n = _cstrings(list(remove))
        kv = _kv(set)
        p, keep = _write_params(None, **params)
        out, r = ctypes.c_void_p(), _ffi.WriteResult.new()
        _check(LIB.lance_dataset_update_config(self._h, ctypes.cast(kv, _ffi.cstrp) if kv is not None else None,
                                               keys, n, ctypes.byref(p), ctypes.byref(out), ctypes.byref(r)))
        return Dataset(out.value), WriteResult._from(r)

    def restore(self) -> "Dataset":
        """Make this handle's version the table's latest again, as a new version
        (lance_dataset_restore); returns it pinned."""
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_restore(self._h, ctypes.byref(out)))
        return Dataset(out.value)

    def prewarm_index_quietly(self, name: str) -> None:
        """lance_dataset_prewarm_index (without the I/O figures)."""
        _check(LIB.lance_dataset_prewarm_index(self._h, name.encode()))

    def close(self) -> None:
        """Frees the handle (streams it opened keep working). Idempotent; also done by `with` and on
        garbage collection."""
        if getattr(self, "_h", None):
            LIB.lance_dataset_free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        return f"lance_host.Dataset({self.uri!r}, version={self.version})"


def open(uri: str, version: Optional[int] = None, storage_options: Optional[Mapping[str, str]] = None,
         branch: Optional[str] = None) -> Dataset:
    """Open `uri` pinned at `version` (latest when None) (lance_dataset_open); with `branch`,
    at `version` of that branch ('main' = the default one; lance_dataset_open_branch)."""
    if branch is not None:
        return Dataset(LIB.lance_dataset_open_branch(uri.encode(), _kv(storage_options), branch.encode(), version or 0))
    return Dataset(LIB.lance_dataset_open(uri.encode(), _kv(storage_options), version or 0))


def open_at_timestamp(uri: str, timestamp_ms: Optional[int] = None, storage_options: Optional[Mapping[str, str]] = None,
                      *, timestamp_us: Optional[int] = None) -> Dataset:
    """The latest version committed at or before `timestamp_ms` (its .000; lance_dataset_open_at_timestamp)
    or, with `timestamp_us`, at or before that microsecond (lance_dataset_open_at_timestamp_us).
    A `datetime` is taken at its microsecond."""
    if (timestamp_ms is None) == (timestamp_us is None):
        raise _error(1, "give one of timestamp_ms and timestamp_us")
    if timestamp_ms is not None and hasattr(timestamp_ms, "timestamp"):  # a datetime
        import datetime as _dt
        t = timestamp_ms if timestamp_ms.tzinfo else timestamp_ms.replace(tzinfo=_dt.timezone.utc)
        timestamp_ms, timestamp_us = None, (t - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)) // _dt.timedelta(microseconds=1)
    for name, v in [("timestamp_ms", timestamp_ms), ("timestamp_us", timestamp_us)]:
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            raise _error(1, f"{name} must be an integer, not {v!r}")
    if timestamp_us is not None:
        return Dataset(LIB.lance_dataset_open_at_timestamp_us(uri.encode(), _kv(storage_options), timestamp_us))
    return Dataset(LIB.lance_dataset_open_at_timestamp(uri.encode(), _kv(storage_options), timestamp_ms))


def open_snapshot(token: bytes, storage_options: Optional[Mapping[str, str]] = None) -> Dataset:
    """Open a shipped snapshot token without reading the manifest (lance_snapshot_open)."""
    return Dataset(LIB.lance_snapshot_open(token, len(token), _kv(storage_options)))


# ---- catalogs -------------------------------------------------------------------------------

@dataclass(frozen=True)
class TableInfo:
    location: str
    latest_version: int
    storage_options: dict


class Catalog:
    """A directory or REST namespace (lance_catalog_open); properties as in the README."""

    def __init__(self, properties: Mapping[str, str]):
        self._h = _ptr(LIB.lance_catalog_open(_kv(properties)))

    def _ns(self, namespace):
        arr, n = _cstrings(list(namespace or []))
        return arr, n

    def list_namespaces(self, namespace: Sequence[str] = (), recursive: bool = False) -> list[list[str]]:
        """Child namespaces of `namespace` (the root by default), each as its path of names;
        `recursive` lists all descendants."""
        arr, n = self._ns(namespace)
        h = ctypes.c_void_p()
        _check(LIB.lance_catalog_list_namespaces(self._h, arr, n, recursive, ctypes.byref(h)))
        try:
            return [[LIB.lance_namespace_list_part(h, i, j).decode() for j in range(LIB.lance_namespace_list_depth(h, i))]
                    for i in range(LIB.lance_namespace_list_count(h))]
        finally:
            LIB.lance_namespace_list_free(h)

    def list_tables(self, namespace: Sequence[str] = ()) -> list[str]:
        """Names of the tables in `namespace` (the root by default)."""
        arr, n = self._ns(namespace)
        h = ctypes.c_void_p()
        _check(LIB.lance_catalog_list_tables(self._h, arr, n, ctypes.byref(h)))
        try:
            return [LIB.lance_string_list_get(h, i).decode() for i in range(LIB.lance_string_list_count(h))]
        finally:
            LIB.lance_string_list_free(h)

    def describe_table(self, table: str, namespace: Sequence[str] = ()) -> TableInfo:
        """Where a table lives (location), its latest version and the storage options the catalog
        gives for it."""
        arr, n = self._ns(namespace)
        h = ctypes.c_void_p()
        _check(LIB.lance_catalog_describe_table(self._h, arr, n, table.encode(), ctypes.byref(h)))
        try:
            kv = LIB.lance_table_info_storage_options(h)
            opts, i = {}, 0
            while kv and kv[i] is not None:
                opts[kv[i].decode()] = kv[i + 1].decode()
                i += 2
            return TableInfo(LIB.lance_table_info_location(h).decode(), LIB.lance_table_info_latest_version(h), opts)
        finally:
            LIB.lance_table_info_free(h)

    def open_table(self, table: str, namespace: Sequence[str] = (), version: Optional[int] = None, *,
                   branch: Optional[str] = None, tag: Optional[str] = None) -> Dataset:
        """Opens a table pinned at `version` (None = its latest), of `branch` when given
        (lance_catalog_open_table_branch), or at the version `tag` names
        (lance_catalog_open_table_tag)."""
        arr, n = self._ns(namespace)
        if tag is not None:
            if branch is not None or version is not None:
                raise _error(1, "a tag names its version and branch: give tag alone")
            return Dataset(LIB.lance_catalog_open_table_tag(self._h, arr, n, table.encode(), tag.encode()))
        if branch is not None:
            return Dataset(LIB.lance_catalog_open_table_branch(self._h, arr, n, table.encode(), branch.encode(),
                                                               version or 0))
        return Dataset(LIB.lance_catalog_open_table(self._h, arr, n, table.encode(), version or 0))

    def create_namespace(self, namespace: Sequence[str], exist_ok: bool = False,
                         properties: Optional[Mapping[str, str]] = None) -> None:
        """Create `namespace` (a path of names; its parent must exist) with optional
        `properties` (lance_catalog_create_namespace). An existing one raises
        InvalidArgumentError unless `exist_ok`."""
        arr, n = self._ns(namespace)
        _check(LIB.lance_catalog_create_namespace(self._h, arr, n, exist_ok, _kv(properties)))

    def drop_namespace(self, namespace: Sequence[str], cascade: bool = False, missing_ok: bool = False) -> None:
        """Drop `namespace` (lance_catalog_drop_namespace): it must be empty unless `cascade`
        (then its tables, data included, and child namespaces go first)."""
        arr, n = self._ns(namespace)
        _check(LIB.lance_catalog_drop_namespace(self._h, arr, n, cascade, missing_ok))

    def create_table(self, table: str, data, namespace: Sequence[str] = (), **params) -> tuple[Dataset, "WriteResult"]:
        """CREATE TABLE `table` in `namespace` AS `data` (a pyarrow Table, RecordBatchReader,
        ...; lance_catalog_create_table): the catalog declares it and the rows are written as
        version 1. Params as for `write_table` (mode is always create). A failed write leaves
        nothing in the catalog. Returns the table pinned and what was written."""
        arr, n = self._ns(namespace)
        p, keep = _write_params(None, **params)
        c = _stream_of(data)
        out, r = ctypes.c_void_p(), _ffi.WriteResult.new()
        _check(LIB.lance_catalog_create_table(self._h, arr, n, table.encode(), ctypes.byref(c), ctypes.byref(p),
                                              ctypes.byref(out), ctypes.byref(r)))
        return Dataset(out.value), WriteResult._from(r)

    def drop_table(self, table: str, namespace: Sequence[str] = (), missing_ok: bool = False) -> None:
        """DROP TABLE (lance_catalog_drop_table): the table leaves the catalog and its data is
        deleted. A missing table raises NotFoundError unless `missing_ok`."""
        arr, n = self._ns(namespace)
        _check(LIB.lance_catalog_drop_table(self._h, arr, n, table.encode(), missing_ok))

    def close(self) -> None:
        """Frees the catalog (tables it opened stay usable). Idempotent; also done on garbage
        collection."""
        if getattr(self, "_h", None):
            LIB.lance_catalog_free(self._h)
            self._h = None

    def __del__(self):
        self.close()



# ---- writes -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class WriteResult:
    """What a write did (LanceWriteResult): the version committed (0 for a staged write), rows,
    fragments, files and bytes written, rows deleted, updated and inserted, and whether this
    call committed (False for a staged write and for a repeated commit of an already committed
    statement)."""
    version: int
    rows_written: int
    fragments_written: int
    files_written: int
    bytes_written: int
    rows_deleted: int
    rows_updated: int
    rows_inserted: int
    committed: bool

    @staticmethod
    def _from(r) -> "WriteResult":
        return WriteResult(r.version, r.rows_written, r.fragments_written, r.files_written, r.bytes_written,
                           r.rows_deleted, r.rows_updated, r.rows_inserted, bool(r.committed))


class StagedWrite:
    """One worker's uncommitted share of a write (lance_table_stage_write): the staged-write
    bytes, which name the table, the mode and the version the write was planned at, and carry
    the written files' names, never rows or credentials. It pickles (bytes and result);
    `bytes(s)` gives the bytes to ship any other way and `StagedWrite(b)` takes them back.
    `result` is what the worker wrote (None for one rebuilt from bare bytes)."""

    def __init__(self, data: bytes, result: Optional[WriteResult] = None):
        self._bytes = bytes(data)
        self.result = result

    def __bytes__(self) -> bytes:
        return self._bytes

    def __reduce__(self):
        return (StagedWrite, (self._bytes, self.result))

    def __repr__(self):
        return f"StagedWrite({len(self._bytes)} bytes)"


@dataclass(frozen=True)
class CompactResult:
    """What a compaction did (LanceCompactResult): the version (this handle's when there was
    nothing to do), fragments and files removed and added."""
    version: int
    fragments_removed: int
    fragments_added: int
    files_removed: int
    files_added: int

    @staticmethod
    def _from(r) -> "CompactResult":
        return CompactResult(r.version, r.fragments_removed, r.fragments_added, r.files_removed, r.files_added)


def _bytes_list(h) -> list:
    """The byte strings of a LanceBytesList, which this frees."""
    try:
        items = []
        for i in range(LIB.lance_bytes_list_count(h)):
            n = ctypes.c_size_t()
            ptr = _ptr(LIB.lance_bytes_list_get(h, i, ctypes.byref(n)))
            items.append(ctypes.string_at(ptr, n.value))
        return items
    finally:
        LIB.lance_bytes_list_free(h)


def _u32(field: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2 ** 32:
        raise _error(1, f"{field} must be a non-negative integer below 2**32, not {value!r}")
    return value


def _vector_index_params(index_type, metric, num_partitions, num_sub_vectors, num_bits, sample_rate, max_iterations,
                         hnsw_m, hnsw_ef_construction):
    p = _ffi.VectorIndexParams()
    _check(LIB.lance_vector_index_params_init_v2(ctypes.byref(p), ctypes.sizeof(p)))
    p.index_type = _choice("index_type", index_type.upper() if isinstance(index_type, str) else index_type,
                           VECTOR_INDEX_TYPES)
    p.metric = _metric(metric)
    for field, value in [("num_partitions", num_partitions), ("num_sub_vectors", num_sub_vectors),
                         ("num_bits", num_bits), ("sample_rate", sample_rate), ("max_iterations", max_iterations),
                         ("hnsw_m", hnsw_m), ("hnsw_ef_construction", hnsw_ef_construction)]:
        setattr(p, field, _u32(field, value))
    return p


def _scalar_index_params(index_type):
    p = _ffi.ScalarIndexParams()
    _check(LIB.lance_scalar_index_params_init_v2(ctypes.byref(p), ctypes.sizeof(p)))
    p.index_type = _choice("index_type", index_type.upper() if isinstance(index_type, str) else index_type,
                           SCALAR_INDEX_TYPES)
    return p


def _inverted_index_params(base_tokenizer, language, with_position, max_token_length, lower_case, stem,
                           remove_stop_words, ascii_folding):
    p = _ffi.InvertedIndexParams()
    _check(LIB.lance_inverted_index_params_init_v2(ctypes.byref(p), ctypes.sizeof(p)))
    p.base_tokenizer, p.language = base_tokenizer.encode(), language.encode()
    if max_token_length is not None and (not isinstance(max_token_length, int) or max_token_length < 1):
        raise _error(1, f"max_token_length must be a positive integer or None, not {max_token_length!r}")
    p.max_token_length = max_token_length or 0
    (p.with_position, p.lower_case, p.stem, p.remove_stop_words, p.ascii_folding) = (
        int(bool(with_position)), int(bool(lower_case)), int(bool(stem)), int(bool(remove_stop_words)),
        int(bool(ascii_folding)))
    return p


def _plan_params(num_splits, unindexed_only):
    p = _ffi.IndexBuildPlanParams()
    _check(LIB.lance_index_build_plan_params_init_v2(ctypes.byref(p), ctypes.sizeof(p)))
    p.num_splits = _u32("num_splits", num_splits)
    p.unindexed_only = int(bool(unindexed_only))
    return p


def _compact_params(target_rows_per_fragment: int, max_rows_per_group: int, deletion_threshold: float,
                    keep_deletions: bool):
    p = _ffi.CompactParams()
    _check(LIB.lance_compact_params_init_v2(ctypes.byref(p), ctypes.sizeof(p)))
    p.target_rows_per_fragment, p.max_rows_per_group = target_rows_per_fragment, max_rows_per_group
    p.deletion_threshold, p.keep_deletions = deletion_threshold, 1 if keep_deletions else 0
    return p


def _merge_spec(on, when_matched, when_not_matched, when_not_matched_by_source, when_matched_condition,
                by_source_condition):
    """A LanceMergeInsert and the buffers it points into (keep both alive for the call)."""
    keys = [on] if isinstance(on, str) else list(on)
    m = _ffi.MergeInsert()
    _check(LIB.lance_merge_insert_init_v2(ctypes.byref(m), ctypes.sizeof(m)))
    arr, n = _cstrings(keys)
    m.on, m.num_on = arr, n
    m.when_matched = _choice("when_matched", when_matched, WHEN_MATCHED)
    m.when_not_matched = _choice("when_not_matched", when_not_matched, WHEN_NOT_MATCHED)
    m.when_not_matched_by_source = _choice("when_not_matched_by_source", when_not_matched_by_source,
                                           WHEN_NOT_MATCHED_BY_SOURCE)
    if when_matched_condition is not None:
        m.when_matched_condition = when_matched_condition.encode()
    if by_source_condition is not None:
        m.by_source_condition = by_source_condition.encode()
    return m, arr


AGGREGATE_FUNCTIONS = {"count_all": 1, "count": 2, "sum": 3, "min": 4, "max": 5, "avg": 6, "mean": 6,
                       "count_distinct": 7}


class Expression(str):
    """A Lance SQL expression over the row, aggregated in place of a column:
    `ds.aggregate([(Expression("l_extendedprice * (1 - l_discount)"), "sum", "revenue")])`.
    Integer arithmetic inside it is refused (the engine would wrap an overflow): cast to
    DECIMAL(38, 0) or DOUBLE first. Since 0.15."""


def _aggregate_spec(aggregates, group_by, filter):
    """A LanceAggregateSpec and the buffers it points into (keep both alive for the call)."""
    if isinstance(aggregates, tuple) and aggregates and isinstance(aggregates[1] if len(aggregates) > 1 else None, str):
        aggregates = [aggregates]
    functions, columns, aliases, expressions = [], [], [], []
    for i, a in enumerate(aggregates):
        if not isinstance(a, (tuple, list)) or len(a) not in (2, 3):
            raise InvalidArgumentError(1, f"aggregate {i} is {a!r}: give (column, function) or (column, function, alias)")
        column, function = a[0], a[1]
        if column in ([], (), None, "*"):
            column = None
        if not isinstance(function, str) or function.lower() not in AGGREGATE_FUNCTIONS:
            raise InvalidArgumentError(1, f"aggregate {i}: unknown function {function!r}; one of "
                                       + ", ".join(sorted(AGGREGATE_FUNCTIONS)))
        code = AGGREGATE_FUNCTIONS[function.lower()]
        if code == 2 and column is None:
            code = 1
        functions.append(code)
        if isinstance(column, Expression):
            expressions.append(str(column).encode())
            columns.append(None)
        else:
            expressions.append(None)
            columns.append(None if column is None else str(column).encode())
        aliases.append(a[2].encode() if len(a) == 3 and a[2] is not None else None)
    keys = [group_by] if isinstance(group_by, str) else list(group_by or [])
    spec = _ffi.AggregateSpec()
    _check(LIB.lance_aggregate_init_v2(ctypes.byref(spec), ctypes.sizeof(spec)))
    n = len(functions)
    f_arr = (ctypes.c_int32 * n)(*functions) if n else None
    c_arr = (ctypes.c_char_p * n)(*columns) if n else None
    a_arr = (ctypes.c_char_p * n)(*aliases) if n else None
    e_arr = (ctypes.c_char_p * n)(*expressions) if n and any(expressions) else None
    g_arr, g_n = _cstrings(keys)
    spec.group_by, spec.num_group_by = g_arr, g_n
    spec.functions = ctypes.cast(f_arr, ctypes.POINTER(ctypes.c_int32)) if n else None
    spec.columns, spec.aliases, spec.num_aggregates = c_arr, a_arr, n
    spec.expressions = e_arr
    if filter is not None:
        spec.filter_sql = filter.encode()
    return spec, (f_arr, c_arr, a_arr, g_arr, e_arr)


def merge_aggregates(partials) -> pa.Table:
    """The results from the partial states of splits (lance_aggregate_merge): `partials` are
    the tables `Dataset.aggregate_split` returned (or `Stream`s / readers of them, e.g. after a
    trip through Arrow IPC)."""
    cs = _streams_in(partials)
    if not cs:
        raise InvalidArgumentError(1, "no partial states to merge")
    arr = (_ffi.ArrowArrayStream * len(cs))()
    for i, c in enumerate(cs):
        ctypes.memmove(ctypes.byref(arr[i]), ctypes.byref(c), ctypes.sizeof(c))
    out = _ffi.ArrowArrayStream()
    _check(LIB.lance_aggregate_merge(arr, len(cs), ctypes.byref(out)))
    return Stream(out).read_all()


@dataclass(frozen=True)
class CleanupResult:
    """What a cleanup removed: old versions and bytes."""
    versions_removed: int
    bytes_removed: int


def open_tag(uri: str, tag: str, storage_options: Optional[Mapping[str, str]] = None) -> "Dataset":
    """Open the table pinned at the version `tag` names (lance_dataset_open_tag)."""
    return Dataset(LIB.lance_dataset_open_tag(uri.encode(), _kv(storage_options), tag.encode()))


def _write_params(mode: Optional[str], max_rows_per_file: int = 0, max_rows_per_group: int = 0,
                  max_bytes_per_file: int = 0, storage_version: Optional[str] = None,
                  storage_options: Optional[Mapping[str, str]] = None, commit_message: Optional[str] = None,
                  transaction_properties: Optional[Mapping[str, str]] = None, statement_id: Optional[str] = None,
                  commit_retries: Optional[int] = None, retry_timeout_ms: int = 0, expected_version: int = 0,
                  required_config: Optional[Mapping[str, str]] = None, stable_row_ids: bool = False):
    p = _ffi.WriteParams()
    _check(LIB.lance_write_params_init_v2(ctypes.byref(p), ctypes.sizeof(p)))
    keep = []
    if mode is not None:
        p.mode = _choice("write mode", mode, WRITE_MODES)
    for name, value in [("max_rows_per_file", max_rows_per_file), ("max_rows_per_group", max_rows_per_group),
                        ("max_bytes_per_file", max_bytes_per_file), ("retry_timeout_ms", retry_timeout_ms),
                        ("expected_version", expected_version)]:
        if not isinstance(value, int) or value < 0:
            raise _error(1, f"{name} must be a non-negative integer, not {value!r}")
        setattr(p, name, value)
    if not isinstance(stable_row_ids, bool):
        raise _error(1, f"stable_row_ids must be True or False, not {stable_row_ids!r}")
    p.stable_row_ids = int(stable_row_ids)
    if commit_retries is not None:
        if not isinstance(commit_retries, int) or commit_retries < 0:
            raise _error(1, f"commit_retries must be a non-negative integer, not {commit_retries!r}")
        p.commit_retries = commit_retries if commit_retries > 0 else -1  # C: 0 = default, < 0 = none
    for name, value in [("storage_version", storage_version), ("commit_message", commit_message),
                        ("statement_id", statement_id)]:
        if value is not None:
            setattr(p, name, str(value).encode())
    for name, value in [("storage_options", storage_options), ("transaction_properties", transaction_properties),
                        ("required_config", required_config)]:
        kv = _kv(value)
        keep.append(kv)
        setattr(p, name, ctypes.cast(kv, _ffi.cstrp) if kv is not None else None)
    return p, keep


def _stream_of(data):
    """A C stream the library takes over, from a pyarrow Table, RecordBatch, RecordBatchReader
    or any object with `__arrow_c_stream__`."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        data = data.to_reader()
    elif not isinstance(data, pa.RecordBatchReader):
        if not hasattr(data, "__arrow_c_stream__"):
            raise _error(1, f"data must be a pyarrow Table, RecordBatch, RecordBatchReader or an Arrow C stream "
                            f"exporter, not {type(data).__name__}")
        data = pa.RecordBatchReader.from_stream(data)
    c = _ffi.ArrowArrayStream()
    data._export_to_c(ctypes.addressof(c))
    return c


def write_table(uri: str, data, mode: str = "create", *, at: Optional["Dataset"] = None,
                **params) -> tuple["Dataset", WriteResult]:
    """Write `data` (a pyarrow Table, RecordBatch, RecordBatchReader or Arrow C stream exporter)
    to the table at `uri` as ONE new version (lance_table_write): mode 'create', 'append' or
    'overwrite'. `at` pins the version an append or overwrite is planned at (else the latest).
    Params: max_rows_per_file, max_rows_per_group, max_bytes_per_file, storage_version,
    storage_options, commit_message, transaction_properties, statement_id, commit_retries,
    retry_timeout_ms. Returns the new version pinned and what was written; a failure commits
    nothing."""
    p, keep = _write_params(mode, **params)
    c = _stream_of(data)
    out, r = ctypes.c_void_p(), _ffi.WriteResult.new()
    _check(LIB.lance_table_write(uri.encode(), at._h if at is not None else None, ctypes.byref(c), ctypes.byref(p),
                                 ctypes.byref(out), ctypes.byref(r)))
    return Dataset(out.value), WriteResult._from(r)


def stage_write(uri: str, data, mode: str = "append", *, at: Optional["Dataset"] = None, **params) -> StagedWrite:
    """Write `data` as one worker's share of a write without committing it
    (lance_table_stage_write). Appends need `at`, the coordinator's pinned version (e.g.
    `open_snapshot(token)` on the worker); a create has none. Ship the returned `StagedWrite`
    (it pickles) to the coordinator, which calls `commit` once for all shares."""
    p, keep = _write_params(mode, **params)
    c = _stream_of(data)
    out, n, r = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t(), _ffi.WriteResult.new()
    _check(LIB.lance_table_stage_write(uri.encode(), at._h if at is not None else None, ctypes.byref(c),
                                       ctypes.byref(p), ctypes.byref(out), ctypes.byref(n), ctypes.byref(r)))
    return StagedWrite(_take_bytes(out, n), WriteResult._from(r))


def _staged_arrays(staged):
    return _byte_arrays([bytes(s) for s in staged])


def _byte_arrays(blobs):
    """C arrays of pointers and lengths over byte strings (and the buffers, to keep alive)."""
    bufs = [(ctypes.c_uint8 * len(b)).from_buffer_copy(b) for b in blobs]
    ptrs = (ctypes.POINTER(ctypes.c_uint8) * len(bufs))(*[ctypes.cast(b, ctypes.POINTER(ctypes.c_uint8)) for b in bufs])
    lens = (ctypes.c_size_t * len(bufs))(*[len(b) for b in blobs])
    return ptrs, lens, bufs


def commit(uri: str, staged: Sequence[StagedWrite], **params) -> tuple["Dataset", WriteResult]:
    """Commit the staged writes of one statement as ONE new version of the table at `uri`
    (lance_table_commit): all rows visible or none. One kind per commit: shares of a create,
    append or overwrite; shares of one delete (`Dataset.stage_delete`); or one merge-insert
    (`Dataset.stage_merge_insert`). With `statement_id`, a statement already
    committed returns that version with `committed=False` and writes nothing. A commit that
    lost to a concurrent writer raises ConflictError. Params as for `write_table` (the staged
    bytes give the mode)."""
    staged = list(staged)
    p, keep = _write_params(None, **params)
    ptrs, lens, bufs = _staged_arrays(staged)
    out, r = ctypes.c_void_p(), _ffi.WriteResult.new()
    _check(LIB.lance_table_commit(uri.encode(), ptrs, lens, len(staged), ctypes.byref(p), ctypes.byref(out),
                                  ctypes.byref(r)))
    return Dataset(out.value), WriteResult._from(r)


def commit_tables(tables: Sequence[tuple]) -> list[tuple["Dataset", WriteResult]]:
    """Commit the staged writes of several tables TOGETHER (lance_commit_tables): every table
    gets its new version, or none does. `tables` holds `(uri, staged)` or
    `(uri, staged, params)` per table (`params` a dict of `commit`'s params: statement_id,
    expected_version, required_config, ...). The tables must be managed by one namespace that
    commits several tables at once (`batch_commit_tables`), each opened through a `Catalog` of
    it in this process; otherwise NotSupportedError and nothing is committed. A table whose
    latest version moved raises ConflictError (nothing committed; commit again). Returns each
    table's new version pinned and what was committed, in order."""
    tables = list(tables)
    n = len(tables)
    uris, ptr_arrays, len_arrays, counts, param_ptrs, keep = [], [], [], [], [], []
    for i, t in enumerate(tables):
        if not isinstance(t, (tuple, list)) or len(t) not in (2, 3) or not isinstance(t[0], str):
            raise _error(1, f"tables[{i}] must be (uri, staged) or (uri, staged, params), not {t!r}")
        uri, staged = t[0], list(t[1])
        params = t[2] if len(t) > 2 and t[2] is not None else {}
        if not isinstance(params, Mapping):
            raise _error(1, f"tables[{i}]: params must be a dict, not {params!r}")
        p, kept = _write_params(None, **params)
        ptrs, lens, bufs = _staged_arrays(staged)
        keep += [p, kept, ptrs, lens, bufs]
        uris.append(uri.encode())
        ptr_arrays.append(ctypes.cast(ptrs, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8))))
        len_arrays.append(ctypes.cast(lens, ctypes.POINTER(ctypes.c_size_t)))
        counts.append(len(staged))
        param_ptrs.append(ctypes.pointer(p))
    c_uris = (ctypes.c_char_p * n)(*uris)
    c_ptrs = (ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)) * n)(*ptr_arrays)
    c_lens = (ctypes.POINTER(ctypes.c_size_t) * n)(*len_arrays)
    c_counts = (ctypes.c_size_t * n)(*counts)
    c_params = (ctypes.POINTER(_ffi.WriteParams) * n)(*param_ptrs)
    outs = (ctypes.c_void_p * n)()
    results = [_ffi.WriteResult.new() for _ in range(n)]
    c_results = (ctypes.POINTER(_ffi.WriteResult) * n)(*[ctypes.pointer(r) for r in results])
    _check(LIB.lance_commit_tables(n, c_uris, c_ptrs, c_lens, c_counts, c_params, outs, c_results))
    return [(Dataset(outs[i]), WriteResult._from(results[i])) for i in range(n)]


def abort_staged(staged: Sequence[StagedWrite], storage_options: Optional[Mapping[str, str]] = None) -> int:
    """Delete the files of staged writes that will not be committed (lance_staged_write_abort):
    data files, and deletion files of staged deletes and merge-inserts. A file the table's
    latest version uses is never deleted (an abort after a commit that landed deletes nothing
    it needs). Returns the number of files deleted (0 when repeated)."""
    staged = list(staged)
    ptrs, lens, bufs = _staged_arrays(staged)
    n = ctypes.c_uint64()
    _check(LIB.lance_staged_write_abort(ptrs, lens, len(staged), _kv(storage_options), ctypes.byref(n)))
    return n.value

def build_index(uri: str, column: str, index_type: str, run_tasks: Callable[[list], list], *,
                name: Optional[str] = None, replace: bool = False, num_splits: int = 0,
                unindexed_only: bool = False, merge: bool = False, model: Optional[bytes] = None,
                storage_options: Optional[Mapping[str, str]] = None, **params) -> tuple["Dataset", bytes]:
    """The coordinator of a distributed index build, for any task runner: opens the table,
    trains the model (vector types; or uses `model` from an earlier build), plans the tasks,
    hands them to `run_tasks(tasks) -> segments` (which runs `Dataset.execute_index_build_task`
    of each task anywhere: Spark executors, Ray tasks, processes) and commits the segments as
    one index in one version. `index_type`: a vector type ('IVF_PQ', ...), 'INVERTED', or a
    scalar type ('BTREE', 'BITMAP', 'LABEL_LIST'); `params` are the settings of the matching
    `create_*_index`. Returns the committed version and the model bytes (empty for non-vector
    types) to keep for `unindexed_only` builds after appends. With nothing to index (an
    `unindexed_only` build of a covered table) nothing is committed and the opened version is
    returned."""
    kind = index_type.upper() if isinstance(index_type, str) else index_type
    ds = open(uri, storage_options=storage_options)
    plan_args = dict(name=name, replace=replace, num_splits=num_splits, unindexed_only=unindexed_only)
    if kind in VECTOR_INDEX_TYPES:
        if model is None:
            model = ds.train_vector_index(column, kind, **params)
        tasks = ds.plan_vector_index_build(column, model, **plan_args)
    elif kind == "INVERTED":
        model = b""
        tasks = ds.plan_inverted_index_build(column, **plan_args, **params)
    elif kind in SCALAR_INDEX_TYPES:
        if params:
            raise _error(1, f"a {kind} index takes no settings, not {sorted(params)}")
        model = b""
        tasks = ds.plan_scalar_index_build(column, kind, **plan_args)
    else:
        valid = ", ".join(repr(k) for k in list(VECTOR_INDEX_TYPES) + ["INVERTED"] + list(SCALAR_INDEX_TYPES))
        raise _error(1, f"unknown index type {index_type!r}; valid: {valid}")
    if not tasks:
        return ds, bytes(model)
    segments = list(run_tasks(list(tasks)))
    if len(segments) != len(tasks):
        raise _error(1, f"run_tasks returned {len(segments)} segments for {len(tasks)} tasks")
    return ds.commit_index_build(segments, merge=merge), bytes(model)


# ---- session, call contexts, logging, metrics -------------------------------------------------

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


#: The loaded library's version ("major.minor.patch"), as `version()` returns it.
__version__ = version()

if build_profile() != "release":
    # once per process (a module is imported once): the speed a user sees is not the library's
    import warnings

    warnings.warn(
        f"lance_host: the loaded library ({LIB._name}) is a {build_profile()} build, many times slower "
        "than a release build (5-38x on scans and index builds); build one with "
        "`scripts/build-wheel.sh --release` (docs/building.md)", RuntimeWarning, stacklevel=2)


def __dir__():
    """The package's public names (`__all__`), not the modules and helpers it imports (PEP 562)."""
    return sorted(set(__all__) | {"spark", "ray"})
