"""Results that stream: `IoStats`, and `Stream`, a library Arrow C stream read blocking,
polled or as a pyarrow reader."""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import AsyncIterator, Callable, Iterator, Optional

import pyarrow as pa

from . import _ffi
from ._ffi import LIB
from .errors import _check, _ERRNO_CODES, _error, _ERROR_CLASSES, error_code_name, LanceError


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

    def poll(self, wake: Optional[Callable[[], None]] = None) -> tuple[str, Optional[pa.RecordBatch]]:
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

    async def batches_async(self) -> AsyncIterator[pa.RecordBatch]:
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
