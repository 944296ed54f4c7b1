"""The options of a scan and of a search as the C structs take them, and `DynamicFilter`, a
runtime filter the host tightens while scans run."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Optional, Sequence, Union

import pyarrow as pa

from . import _ffi
from ._ffi import LIB
from .errors import _check, _choice, _error
from ._marshal import _cstrings, _ELEMENTS, _keyword_names, _keywords, _metric, TEXT_MATCH

if TYPE_CHECKING:  # annotations only: these modules build on this one
    from .dataset import Dataset


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


def _scan_struct(columns=None, filter=None, substrait=None, limit=None, offset=None, batch_size=None,
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

    def set_keys(self, column: str, values: Union[pa.Array, Sequence]) -> None:
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


def _vector_struct(column, vector, k=10, metric=None, nprobes=None, refine_factor=None, ef=None,
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


def _text_struct(column, text, k=10, match="or", slop=0, prefilter=None, columns=None, with_row_id=True):
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


# The option names every surface shares (docs/python.md): `refine` and `filter` are the names Ray,
# Spark and DuckDB use; Python's `refine_factor` and `prefilter` (those of the C structs) stay.
VECTOR_ALIASES = {"refine": "refine_factor", "filter": "prefilter"}
TEXT_ALIASES = {"filter": "prefilter"}
_SCAN_OPTIONS = _keyword_names(_scan_struct, "columns", "filter")
_VECTOR_OPTIONS = _keyword_names(_vector_struct, "column", "vector", "k")
_TEXT_OPTIONS = _keyword_names(_text_struct, "column", "text", "k")


def _scan_options(columns=None, filter=None, **options):
    """The LanceScanOptions of a scan; unknown option names are refused naming the caller."""
    return _scan_struct(columns, filter, **_keywords(options, _SCAN_OPTIONS, named=("columns", "filter")))


def _vector_query(column, vector, k=10, **query):
    """The LanceVectorQuery of a search (options checked, aliases renamed)."""
    return _vector_struct(column, vector, k, **_keywords(query, _VECTOR_OPTIONS, VECTOR_ALIASES, ("column", "vector", "k")))


def _text_query(column, text, k=10, **query):
    """The LanceTextQuery of a full-text search (options checked, aliases renamed)."""
    return _text_struct(column, text, k, **_keywords(query, _TEXT_OPTIONS, TEXT_ALIASES, ("column", "text", "k")))
