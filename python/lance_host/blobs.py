"""Blob columns: descriptors and byte ranges (`Dataset.take_blobs`)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Optional, Union

from . import _ffi
from ._ffi import LIB
from .errors import _check
from ._marshal import _take_bytes, Handle
from .stream import IoStats


BLOB_KINDS = {0: "null", 1: "inline", 2: "packed", 3: "dedicated", 4: "external", 5: "managed"}


@dataclass(frozen=True)
class BlobInfo:
    """One row's blob (LanceBlobInfo): its `_rowid`, its size in bytes, how it is stored
    (`kind`: null, inline, packed, dedicated, external or managed) and, for an external blob,
    the URI it points to."""

    row_id: int
    size: int
    kind: str
    uri: Optional[str]

    @property
    def is_null(self) -> bool:
        """True for a NULL blob (no bytes to read)."""
        return self.kind == "null"


class Blobs:
    """The blobs of some rows of one blob column (`Dataset.take_blobs`), in request order:
    `info(i)` describes blob i, `read(i, offset, length)` reads a byte range of it without
    reading the rest. Reads may run on several threads at once."""

    def __init__(self, handle: Handle):
        self._h = handle

    def __len__(self) -> int:
        return LIB.lance_blobs_count(self._h)

    def info(self, i: int) -> BlobInfo:
        """The descriptor of the `i`-th blob, in request order (lance_blobs_info)."""
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

    def readinto(self, i: int, offset: int, buffer: Union[bytearray, memoryview, Any]) -> int:
        """Fill a writable buffer (bytearray, memoryview, numpy array) with the bytes of
        blob i from `offset`; returns the number of bytes read (the buffer's length)."""
        view = memoryview(buffer).cast("B")
        n = view.nbytes
        c = (ctypes.c_char * n).from_buffer(view) if n else None
        _check(LIB.lance_blobs_read(self._h, i, offset, n, c, n))
        return n

    def io_stats(self) -> IoStats:
        """The I/O the descriptors and every read so far made (lance_blobs_io_stats)."""
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
