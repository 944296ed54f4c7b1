"""Aggregates computed inside the splits: the specification `Dataset.aggregate` takes, and the
merge of per-split partial states."""

from __future__ import annotations

import ctypes
from typing import Optional, Sequence, Union

import pyarrow as pa

from . import _ffi
from ._ffi import LIB
from .errors import _check, InvalidArgumentError
from ._marshal import _cstrings
from .stream import IoStats, Stream
from .split import Split
from .search import _streams_in


AGGREGATE_FUNCTIONS = {"count_all": 1, "count": 2, "sum": 3, "min": 4, "max": 5, "avg": 6, "mean": 6,
                       "count_distinct": 7, "approx_count_distinct": 8}


class Expression(str):
    """A Lance SQL expression over the row, aggregated in place of a column:
    `ds.aggregate([(Expression("l_extendedprice * (1 - l_discount)"), "sum", "revenue")])`.
    Integer arithmetic inside it is refused (the engine would wrap an overflow): cast to
    DECIMAL(38, 0) or DOUBLE first. Since 0.15."""


def _group_keys(group_by):
    """The group keys' names and expressions (None for a column): `group_by` is a column, an
    `Expression`, or a list of them and of `(name, Expression)` pairs."""
    pair = lambda g: isinstance(g, tuple) and len(g) == 2 and isinstance(g[0], str) and isinstance(g[1], Expression)  # noqa: E731
    if isinstance(group_by, str) or pair(group_by):
        group_by = [group_by]
    names, exprs = [], []
    for i, g in enumerate(group_by or []):
        if pair(g):
            names.append(g[0])
            exprs.append(str(g[1]).encode())
        elif isinstance(g, Expression):
            names.append(str(g))
            exprs.append(str(g).encode())
        elif isinstance(g, str):
            names.append(g)
            exprs.append(None)
        else:
            raise InvalidArgumentError(1, f"group key {i} is {g!r}: give a column, an Expression or (name, Expression)")
    return names, exprs


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
    names, key_exprs = _group_keys(group_by)
    spec = _ffi.AggregateSpec()
    _check(LIB.lance_aggregate_init_v2(ctypes.byref(spec), ctypes.sizeof(spec)))
    n = len(functions)
    f_arr = (ctypes.c_int32 * n)(*functions) if n else None
    c_arr = (ctypes.c_char_p * n)(*columns) if n else None
    a_arr = (ctypes.c_char_p * n)(*aliases) if n else None
    e_arr = (ctypes.c_char_p * n)(*expressions) if n and any(expressions) else None
    g_arr, g_n = _cstrings(names)
    spec.group_by, spec.num_group_by = g_arr, g_n
    ge_arr = (ctypes.c_char_p * g_n)(*key_exprs) if any(key_exprs) else None
    spec.group_by_expressions = ge_arr
    spec.functions = ctypes.cast(f_arr, ctypes.POINTER(ctypes.c_int32)) if n else None
    spec.columns, spec.aliases, spec.num_aggregates = c_arr, a_arr, n
    spec.expressions = e_arr
    if filter is not None:
        spec.filter_sql = filter.encode()
    return spec, (f_arr, c_arr, a_arr, g_arr, e_arr, ge_arr)


def _substrait_spec(plan):
    """A LanceAggregateSpec holding a serialized Substrait plan, and the buffer it points into."""
    if not isinstance(plan, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(1, f"a Substrait plan is bytes (Plan.SerializeToString()), not {type(plan).__name__}")
    data = bytes(plan)
    if not data:
        raise InvalidArgumentError(1, "the Substrait plan is empty")
    spec = _ffi.AggregateSpec()
    _check(LIB.lance_aggregate_init_v2(ctypes.byref(spec), ctypes.sizeof(spec)))
    buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    spec.substrait_plan = ctypes.cast(buf, ctypes.POINTER(ctypes.c_uint8))
    spec.substrait_plan_len = len(data)
    return spec, buf


def merge_aggregates(partials: Sequence[pa.Table]) -> pa.Table:
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


class DatasetAggregates:
    """The counting and aggregate methods of `Dataset`."""

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
    def aggregate(self, aggregates: Sequence[tuple], group_by: Union[str, Sequence[str], None] = None, filter: Optional[str] = None) -> pa.Table:
        """COUNT/SUM/MIN/MAX/AVG of the pinned version, grouped by `group_by` (a column or
        columns), over the rows matching the Lance SQL `filter` (lance_dataset_aggregate).
        `aggregates` is a list of `(column, function)` or `(column, function, alias)`, pyarrow
        style: functions `count`, `count_all` (column None or []: COUNT(*)), `sum`, `min`, `max`,
        `avg` (or `mean`), `count_distinct` (SQL's COUNT(DISTINCT): exact across splits; floats
        count every NaN once and -0.0 as 0.0), `approx_count_distinct` (a HyperLogLog estimate,
        standard error 1.6 %, whose split partials merge); in place of a column, an `Expression` (Lance SQL over the row, e.g.
        `Expression("price * (1 - discount)")`). A group key is a column, an `Expression`, or
        `(name, Expression)` (`("year", Expression("date_part('year', d)"))`). Result columns:
        the group keys, then one per aggregate named by
        its alias or `sum(col)`, `count(*)`, ... An integer SUM beyond int64 raises
        OutOfRangeError (never wrapped)."""
        return self.aggregate_with_io(aggregates, group_by, filter)[0]

    def aggregate_with_io(self, aggregates: Sequence[tuple], group_by: Union[str, Sequence[str], None] = None, filter: Optional[str] = None) -> tuple[pa.Table, IoStats]:
        """`aggregate` and the I/O it made."""
        spec, keep = _aggregate_spec(aggregates, group_by, filter)
        out, io = _ffi.ArrowArrayStream(), _ffi.IoStats.new()
        _check(LIB.lance_dataset_aggregate(self._h, ctypes.byref(spec), ctypes.byref(out), ctypes.byref(io)))
        return Stream(out).read_all(), IoStats._from(io)

    def aggregate_split(self, split: Split, aggregates: Sequence[tuple], group_by: Union[str, Sequence[str], None] = None,
                        filter: Optional[str] = None) -> tuple[pa.Table, IoStats]:
        """The partial states of one scan split (lance_dataset_aggregate_split) and the I/O made:
        a small table (group keys, then `agg<i>_<state>` columns) to merge with the other
        splits' partials by `merge_aggregates`. Works on a shipped split in another process."""
        spec, keep = _aggregate_spec(aggregates, group_by, filter)
        out, io = _ffi.ArrowArrayStream(), _ffi.IoStats.new()
        _check(LIB.lance_dataset_aggregate_split(self._h, split._h, ctypes.byref(spec), ctypes.byref(out),
                                                 ctypes.byref(io)))
        return Stream(out).read_all(), IoStats._from(io)

    def aggregate_substrait(self, plan: bytes) -> pa.Table:
        """`aggregate` of a serialized Substrait plan (`LanceAggregateSpec.substrait_plan`): an
        `AggregateRel` with one grouping set over `ProjectRel`s and `FilterRel`s over one
        `ReadRel` whose `base_schema` names this table's columns (its named table is not looked
        up). `RelRoot.names` name the result columns. A plan without an aggregate, or with a
        `FetchRel`, is refused; what the plan asks beyond the translation raises
        NotSupportedError naming it (docs/aggregates.md)."""
        spec, keep = _substrait_spec(plan)
        out, io = _ffi.ArrowArrayStream(), _ffi.IoStats.new()
        _check(LIB.lance_dataset_aggregate(self._h, ctypes.byref(spec), ctypes.byref(out), ctypes.byref(io)))
        return Stream(out).read_all()

    def aggregate_split_substrait(self, split: Split, plan: bytes) -> tuple[pa.Table, IoStats]:
        """`aggregate_split` of a serialized Substrait plan (as `aggregate_substrait`): the
        split's partial states, to merge with `merge_aggregates`."""
        spec, keep = _substrait_spec(plan)
        out, io = _ffi.ArrowArrayStream(), _ffi.IoStats.new()
        _check(LIB.lance_dataset_aggregate_split(self._h, split._h, ctypes.byref(spec), ctypes.byref(out),
                                                 ctypes.byref(io)))
        return Stream(out).read_all(), IoStats._from(io)
