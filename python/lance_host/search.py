"""Vector and full-text search: the methods of `Dataset` that plan, run and explain searches
per split, and the merges of split results into one answer."""

from __future__ import annotations

import ctypes
from typing import Optional, Sequence, Union

import pyarrow as pa

from . import _ffi
from ._ffi import LIB
from .errors import _check, InvalidArgumentError
from ._marshal import _metric, _take_bytes, _take_string, VectorLike
from .stream import IoStats, Stream
from .split import _plan, Split, SPLIT_FTS_FLAT, SPLIT_FTS_SEGMENT, SplitPlan
from .query import _stats_arg, _text_query, _vector_query


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


def merge_top_k(streams: Sequence[Union[Stream, pa.RecordBatchReader, pa.Table]], k: int, offset: int = 0) -> Stream:
    """Global top-k by `_distance` (ties by `_rowid`) of vector split results (lance_topk_merge).
    Takes ownership of the inputs (`Stream`s or pyarrow readers/tables)."""
    return _merge(LIB.lance_topk_merge, streams, k, offset)


def merge_fts(streams: Sequence[Union[Stream, pa.RecordBatchReader, pa.Table]], k: int, offset: int = 0) -> Stream:
    """Global top-k by `_score` (ties by `_rowid`) of full-text split results (lance_fts_merge)."""
    return _merge(LIB.lance_fts_merge, streams, k, offset)


def rrf_merge(vector: Union[Stream, pa.RecordBatchReader, pa.Table], text: Union[Stream, pa.RecordBatchReader, pa.Table], k: int, rrf_k: float = 60.0) -> Stream:
    """Reciprocal-rank fusion of a merged vector result and a merged full-text result
    (lance_rrf_merge): `_rowid`, `_relevance_score`, `_distance`, `_score`."""
    v, t = _streams_in([vector, text])
    out = _ffi.ArrowArrayStream()
    _check(LIB.lance_rrf_merge(ctypes.byref(v), ctypes.byref(t), k, rrf_k, ctypes.byref(out)))
    return Stream(out)


class DatasetSearch:
    """The search methods of `Dataset` (vector, full-text, re-rank)."""

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
    def search_split(self, split: Split, column: str, vector: VectorLike, k: int = 10, **query) -> Stream:
        """One vector-search split (lance_split_search_v2). Query options: metric, nprobes,
        refine_factor, ef, prefilter, columns, with_row_id, defer_refine, element_type,
        distance_range=(lower, upper) (lower <= _distance < upper; None = unbounded).
        A list of vectors is a batch search: k per query, output with `query_index`."""
        q, keep = _vector_query(column, vector, k, **query)
        out = _ffi.ArrowArrayStream()
        _check(LIB.lance_split_search_v2(self._h, split._h, ctypes.byref(q), ctypes.byref(out)))
        return Stream(out)

    def vector_search(self, column: str, vector: VectorLike, k: int = 10, *, metric: Optional[str] = None,
                      use_index: bool = True, **query) -> pa.Table:
        """The snapshot's vector top k in this process: every split of the vector plan searched
        (`search_split`, query options as there: nprobes, refine_factor, ef, prefilter, columns)
        and merged with the library's merge (`merge_top_k`). The result has the projected
        columns, `_distance` (ascending, ties by `_rowid`) and `_rowid`."""
        plan = self.plan_vector_search(column, metric, use_index)
        query = dict(query, with_row_id=True, metric=metric)
        return merge_top_k([self.search_split(s, column, vector, k, **query) for s in plan], k).read_all()

    def explain_search(self, split: Split, column: str, vector: VectorLike, k: int = 10, **query) -> str:
        """The plan `search_split` would run for this split and query, as text."""
        q, keep = _vector_query(column, vector, k, **query)
        p = ctypes.c_void_p()
        _check(LIB.lance_split_explain_search_v2(self._h, split._h, ctypes.byref(q), ctypes.byref(p)))
        return _take_string(p)

    def refine(self, candidates: Union[Stream, pa.RecordBatchReader, pa.Table], column: str, vector: VectorLike, k: int = 10, **query) -> Stream:
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
