"""Splits: one unit of distributed work on a pinned snapshot, which travels as bytes; and the
plans that hold them."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from ._ffi import LIB
from .errors import _check, _error, _last_error, _ptr
from ._marshal import _kv, _take_bytes, Handle

if TYPE_CHECKING:  # annotations only: these modules build on this one
    from .dataset import Dataset


SPLIT_SCAN, SPLIT_INDEX_SEGMENT, SPLIT_FLAT, SPLIT_FTS_SEGMENT, SPLIT_FTS_FLAT = 1, 2, 3, 4, 5



class Split:
    """One unit of distributed work on a pinned snapshot. Picklable: it travels as the library's
    versioned, checksummed bytes (`bytes(split)`, `Split.from_bytes`)."""

    def __init__(self, handle: Handle):
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
        from .dataset import Dataset  # the dataset layer builds on splits

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
