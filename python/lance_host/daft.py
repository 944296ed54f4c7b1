"""Daft over lance-host: `read_lance_host` returns a Daft DataFrame whose source has one task per
lance-host split, and `write_lance_host` writes a DataFrame through a sink that stages each
partition on the worker that holds it and commits all of them once.

Pushdown: Daft hands the source the columns it needs, its filter and a limit. Columns and the
limit go into each task's scan; the parts of the filter that mean the same in Lance SQL (see
`to_lance_sql`) become the scan's filter. Daft applies its whole filter again to what the
source returns, so what does not translate is still applied, and what does only saves reading
rows. Tasks carry split bytes and the split's own snapshot token (the manifest cut down to the
split's fragments, a few hundred bytes whatever the table's size): a worker opens the pinned
version without reading the manifest, with its own storage options."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, AsyncIterator, Iterator, Mapping, Optional, Sequence

import pyarrow as pa

from ._sqltext import comparable_kind, literal, quote_name
from .split import Split
from .tables import abort_staged, commit, open_snapshot, stage_write
from .tables import open as _open_uri
from .write import StagedWrite, conform_types

if TYPE_CHECKING:  # daft is imported when a frame is read or written
    import daft
    from daft.io.pushdowns import Pushdowns


def _translator(schema: pa.Schema):
    from daft.expressions.visitor import PredicateVisitor

    class _ToSql(PredicateVisitor):
        """Daft predicate → Lance SQL text, or None where the meaning could differ. Operands
        come back as ('col', name, kind) and ('lit', value) tuples."""

        def visit_col(self, name):
            if schema.get_field_index(name) < 0:
                return None
            # kind None: a column whose comparisons stay with Daft (its NULL tests do not)
            return ("col", name, comparable_kind(schema.field(name).type), schema.field(name).type)

        def visit_lit(self, value):
            return ("lit", value)

        def visit_alias(self, expr, alias):
            return None

        def visit_cast(self, expr, dtype):
            return None

        def visit_try_cast(self, expr, dtype):
            return None

        def visit_function(self, name, args):
            return None

        def visit_coalesce(self, args):
            return None

        def _sql(self, expr) -> Optional[str]:
            out = self.visit(expr)
            return out if isinstance(out, str) else None

        def _compare(self, left, right, op, flipped) -> Optional[str]:
            a, b = self.visit(left), self.visit(right)
            if isinstance(a, tuple) and a[0] == "lit" and isinstance(b, tuple) and b[0] == "col":
                a, b, op = b, a, flipped
            if not (isinstance(a, tuple) and a[0] == "col" and a[2] and isinstance(b, tuple) and b[0] == "lit"):
                return None
            lit = literal(b[1], a[2], a[3])
            return None if lit is None else f"{quote_name(a[1])} {op} {lit}"

        def visit_and(self, left, right):
            a, b = self._sql(left), self._sql(right)
            return None if a is None or b is None else f"({a}) AND ({b})"

        def visit_or(self, left, right):
            a, b = self._sql(left), self._sql(right)
            return None if a is None or b is None else f"({a}) OR ({b})"

        def visit_not(self, expr):
            a = self._sql(expr)
            return None if a is None else f"NOT ({a})"

        def visit_equal(self, left, right):
            return self._compare(left, right, "=", "=")

        def visit_not_equal(self, left, right):
            return self._compare(left, right, "!=", "!=")

        def visit_less_than(self, left, right):
            return self._compare(left, right, "<", ">")

        def visit_less_than_or_equal(self, left, right):
            return self._compare(left, right, "<=", ">=")

        def visit_greater_than(self, left, right):
            return self._compare(left, right, ">", "<")

        def visit_greater_than_or_equal(self, left, right):
            return self._compare(left, right, ">=", "<=")

        def visit_between(self, expr, lower, upper):
            lo, hi = self._compare(expr, lower, ">=", "<="), self._compare(expr, upper, "<=", ">=")
            return None if lo is None or hi is None else f"{lo} AND {hi}"

        def visit_is_in(self, expr, items):
            col = self.visit(expr)
            if not (isinstance(col, tuple) and col[0] == "col" and col[2]):
                return None
            lits = []
            for item in items:
                v = self.visit(item)
                lit = literal(v[1], col[2], col[3]) if isinstance(v, tuple) and v[0] == "lit" and v[1] is not None else None
                if lit is None:
                    return None
                lits.append(lit)
            return f"{quote_name(col[1])} IN ({', '.join(lits)})" if lits else None

        def _null_test(self, expr, negate: bool) -> Optional[str]:
            out = self.visit(expr)
            if not (isinstance(out, tuple) and out[0] == "col"):
                return None
            return f"{quote_name(out[1])} IS {'NOT ' if negate else ''}NULL"

        def visit_is_null(self, expr):
            return self._null_test(expr, False)

        def visit_not_null(self, expr):
            return self._null_test(expr, True)

    return _ToSql()


def _conjuncts(expr) -> list:
    """The conditions of a predicate's top-level AND."""
    from daft.expressions.visitor import PredicateVisitor

    def whole(self, *args):
        return [expr]

    methods = {name: whole for name in PredicateVisitor.__abstractmethods__}
    methods["visit_and"] = lambda self, left, right: _conjuncts(left) + _conjuncts(right)
    try:
        return type("_Conjuncts", (PredicateVisitor,), methods)().visit(expr)
    except Exception:  # an expression the visitor does not know stays whole
        return [expr]


def to_lance_sql(predicate: "daft.Expression", schema: pa.Schema) -> Optional[str]:
    """Lance SQL for the parts of a Daft predicate that keep Daft's meaning: of its top-level
    AND, every condition that translates whole (comparisons of integer, string and boolean
    columns with literals, `between`, `is_in` of literals, `is_null`/`not_null`, `&`, `|`, `~`
    of those). None when no part translates."""
    parts = []
    for c in _conjuncts(predicate):
        try:
            sql = _translator(schema).visit(c)
        except Exception:  # an expression the visitor does not know stays with Daft
            sql = None
        if isinstance(sql, str):
            parts.append(sql)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else " AND ".join(f"({p})" for p in parts)


def _task_class():
    from daft.io.source import DataSourceTask
    from daft.recordbatch import RecordBatch
    from daft.schema import Schema

    class LanceHostTask(DataSourceTask):
        """One split of the pinned snapshot: opened on the worker from the split's own snapshot
        token, scanned with the pushed columns, filter and limit."""

        def __init__(self, token: bytes, split: bytes, arrow_schema: pa.Schema, columns, sql, limit,
                     storage_options, batch_size):
            self._token, self._split, self._arrow_schema = token, split, arrow_schema
            self._columns, self._sql, self._limit, self._storage_options = columns, sql, limit, storage_options
            self._batch_size = batch_size

        @property
        def schema(self) -> Schema:
            return Schema.from_pyarrow_schema(self._arrow_schema)

        def _open(self):
            ds = open_snapshot(self._token, storage_options=self._storage_options)
            options: dict[str, Any] = {"batch_size": self._batch_size}
            if self._limit is not None:
                options["limit"] = self._limit
            return ds.scan_split_stream(Split.from_bytes(self._split), columns=self._columns, filter=self._sql,
                                        **options)

        async def read(self) -> AsyncIterator[RecordBatch]:
            # the library's calls block: they run on a worker thread, so that Daft's event loop
            # keeps the other tasks' reads going meanwhile
            import asyncio

            stream = await asyncio.to_thread(self._open)
            with stream:
                batches = iter(stream)
                while True:
                    batch = await asyncio.to_thread(next, batches, None)
                    if batch is None:
                        return
                    yield RecordBatch.from_arrow_record_batches([batch], self._arrow_schema)

    return LanceHostTask


def read_lance_host(source: str, *, catalog: Optional[Mapping[str, str]] = None, namespace: Sequence[str] = (),
                    version: Optional[int] = None, storage_options: Optional[Mapping[str, str]] = None,
                    split_rows: int = 0, batch_size: int = 65_536) -> "daft.DataFrame":
    """A Daft DataFrame over a Lance table read through lance-host, one task per split
    (`split_rows` rows each, 0 = one fragment each): `source` is a table URI, or a table name of
    `namespace` in the catalog of properties `catalog`. The version is pinned now (`version` or
    the latest). Tasks hand Daft batches of `batch_size` rows (Daft's per-batch cost makes the
    library's default of a few thousand rows 1.5x slower; bench/ADBC_POLARS.md)."""
    from daft.io.source import DataSource
    from daft.schema import Schema

    from .catalog import _check_source_options

    _check_source_options("read_lance_host", catalog, namespace, storage_options)
    if catalog is not None:
        from .catalog import Catalog

        cat = Catalog(dict(catalog))
        ds = cat.open_table(source, list(namespace), version)
        options = cat.describe_table(source, list(namespace)).storage_options or None
    else:
        options = dict(storage_options or {}) or None
        ds = _open_uri(source, version, options)
    arrow_schema = ds.schema
    # each task carries its split and that split's own snapshot token (the pinned manifest cut
    # down to the split's fragments): its bytes and its open do not grow with the table
    splits = [(bytes(s), ds.export_split_snapshot(s)) for s in ds.plan_scan(split_rows)]
    task_class = _task_class()

    class LanceHostSource(DataSource):
        @property
        def name(self) -> str:
            return f"lance_host({ds.uri}@{ds.version})"

        @property
        def schema(self) -> Schema:
            return Schema.from_pyarrow_schema(arrow_schema)

        async def get_tasks(self, pushdowns: "Pushdowns"):
            wanted = set(pushdowns.columns if pushdowns.columns is not None else arrow_schema.names)
            wanted |= pushdowns.filter_required_column_names()
            columns = [name for name in arrow_schema.names if name in wanted]  # in the table's order
            sql = to_lance_sql(pushdowns.filters, arrow_schema) if pushdowns.filters is not None else None
            # a limit is exact per task only without a filter Daft applies afterwards
            limit = pushdowns.limit if pushdowns.filters is None else None
            schema = pa.schema([arrow_schema.field(c) for c in columns])
            for split, token in splits:
                yield task_class(token, split, schema, columns, sql, limit, options, batch_size)

    return LanceHostSource().read()


_LAYOUT_PARAMS = ("max_rows_per_file", "max_rows_per_group", "max_bytes_per_file", "storage_version",
                  "stable_row_ids")


def _sink(uri: str, mode: str, storage_options, params: dict):
    from daft.io.sink import DataSink, WriteResult
    from daft.recordbatch import MicroPartition
    from daft.schema import Schema

    at = None
    if mode in ("append", "overwrite"):
        try:
            at = _open_uri(uri, None, storage_options)
        except Exception:
            if mode == "append":
                raise
    token = at.export_snapshot() if at is not None else None
    # the file layout applies where the shares are written, the rest where they are committed
    layout = {k: v for k, v in params.items() if k in _LAYOUT_PARAMS}
    params = {k: v for k, v in params.items() if k not in _LAYOUT_PARAMS}
    table_schema = at.schema if at is not None and mode == "append" else None
    result_schema = pa.schema([("version", pa.uint64()), ("rows_written", pa.uint64()), ("committed", pa.bool_())])

    class LanceHostSink(DataSink):
        def name(self) -> str:
            return f"lance_host({uri})"

        def schema(self) -> Schema:
            return Schema.from_pyarrow_schema(result_schema)

        def write(self, micropartitions: Iterator["MicroPartition"]) -> Iterator["WriteResult"]:
            pinned = open_snapshot(token, storage_options=storage_options) if token is not None else None
            for mp in micropartitions:
                data = mp.to_arrow()
                if data.num_rows == 0:
                    continue
                if table_schema is not None:
                    data = conform_types(data, table_schema)
                staged = stage_write(uri, data, mode, at=pinned, storage_options=storage_options, **layout)
                yield WriteResult(result=bytes(staged), bytes_written=staged.result.bytes_written,
                                  rows_written=staged.result.rows_written)

        def finalize(self, write_results: list) -> "MicroPartition":
            shares = [StagedWrite(r.result) for r in write_results]
            if not shares:
                empty = pa.table({"version": pa.array([0], pa.uint64()), "rows_written": pa.array([0], pa.uint64()),
                                  "committed": [False]}, schema=result_schema)
                return MicroPartition.from_arrow(empty)
            try:
                _, result = commit(uri, shares, storage_options=storage_options, **params)
            except Exception:
                abort_staged(shares, storage_options)
                raise
            if not result.committed:
                # the statement id had committed already: these shares are not used
                abort_staged(shares, storage_options)
            out = pa.table({"version": pa.array([result.version], pa.uint64()),
                            "rows_written": pa.array([result.rows_written], pa.uint64()),
                            "committed": [bool(result.committed)]}, schema=result_schema)
            return MicroPartition.from_arrow(out)

    return LanceHostSink()


def write_lance_host(df: "daft.DataFrame", uri: str, mode: str = "append", *,
                     storage_options: Optional[Mapping[str, str]] = None, **params) -> "daft.DataFrame":
    """Write a Daft DataFrame to the table at `uri` as ONE new version: every partition is
    staged as data files on the worker that holds it, and the driver commits all shares once
    (mode 'create', 'append' or 'overwrite'; `params`: the file layout's — max_rows_per_file,
    max_rows_per_group, max_bytes_per_file, storage_version, stable_row_ids — go to every share,
    the commit's — statement_id, commit_message, ... — to the commit; any other is refused). A failed commit deletes the staged files; readers see all rows or
    none. Returns Daft's one-row result: the version, the rows written, whether it committed
    (False when a statement id had already committed)."""
    options = dict(storage_options or {}) or None
    return df.write_sink(_sink(uri, mode, options, params))
