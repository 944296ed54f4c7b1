"""Index builds: in one call, or planned, run as tasks anywhere and committed once; and prewarm."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

from . import _ffi
from ._ffi import LIB
from .errors import _check, _choice, _error
from ._marshal import _byte_arrays, _bytes_list, _metric, SCALAR_INDEX_TYPES, _take_bytes, _u32, VECTOR_INDEX_TYPES
from .stream import IoStats

if TYPE_CHECKING:  # annotations only: these modules build on this one
    from .dataset import Dataset


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
    """One index of the pinned version (`Dataset.indexes`): its name, column, type, metric
    (vector indexes; None otherwise) and `IndexSegment`s."""

    name: str
    column: str
    index_type: str
    metric: Optional[str]
    segments: list


class DatasetIndexes:
    """The index methods of `Dataset`: listing, prewarm, builds and maintenance."""

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
        return type(self)(out.value)

    def create_scalar_index(self, column: str, index_type: str = "BTREE", *, name: Optional[str] = None,
                            replace: bool = False) -> "Dataset":
        """Build a scalar index on `column` (lance_dataset_create_scalar_index): 'BTREE',
        'BITMAP' or 'LABEL_LIST'. One new version; returns it pinned."""
        p = _scalar_index_params(index_type)
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_create_scalar_index(self._h, column.encode(), name.encode() if name else None,
                                                     replace, ctypes.byref(p), ctypes.byref(out)))
        return type(self)(out.value)

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
        return type(self)(out.value)

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
        return type(self)(out.value)

    def optimize_indexes(self, name: Optional[str] = None, merge: int = 0) -> "Dataset":
        """Index the fragments appended since the index(es) were built
        (lance_dataset_optimize_indexes): a new segment (`merge` 0), or the newest `merge`
        segments merged with them into one. `name` None = every index. Returns the version."""
        if not isinstance(merge, int) or not 0 <= merge < 2 ** 32:
            raise _error(1, f"merge must be a non-negative integer, not {merge!r}")
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_optimize_indexes(self._h, name.encode() if name else None, merge, ctypes.byref(out)))
        return type(self)(out.value)

    def drop_index(self, name: str) -> "Dataset":
        """Drop the index `name` (lance_dataset_drop_index) as one new version; returns it."""
        out = ctypes.c_void_p()
        _check(LIB.lance_dataset_drop_index(self._h, name.encode(), ctypes.byref(out)))
        return type(self)(out.value)

    def prewarm_index_quietly(self, name: str) -> None:
        """lance_dataset_prewarm_index (without the I/O figures)."""
        _check(LIB.lance_dataset_prewarm_index(self._h, name.encode()))
