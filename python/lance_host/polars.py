"""Polars over lance-host: `scan` returns a `LazyFrame` whose source reads the table's pinned
version through lance-host (an IO plugin, `polars.io.plugins.register_io_source`), and
`write_lance_host` writes a `DataFrame` as one commit.

Pushdown: Polars hands the source the columns it needs, its predicate and a row count. The
columns and the row count go into the scan; the parts of the predicate that mean the same in
Lance SQL (see `to_lance_sql`) go into the scan's filter, and the whole predicate is applied
again by Polars on what comes back — so a part that does not translate is still applied, and one
that does only saves reading rows. `LazyFrame.explain()` shows what Polars pushed
(`PYTHON[lance_host] SCAN ... SELECTION: ...`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterator, Mapping, Optional, Sequence

import pyarrow as pa

from ._sqltext import comparable_kind, literal, quote_name
from .tables import open as _open_uri
from .tables import write_table
from .write import WriteResult, conform_types

if TYPE_CHECKING:  # polars is imported when a frame is scanned or written
    import polars as pl

    from .dataset import Dataset

_COMPARE = {"Eq": "=", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_FLIP = {"Eq": "Eq", "NotEq": "NotEq", "Lt": "Gt", "LtEq": "GtEq", "Gt": "Lt", "GtEq": "LtEq"}
_INT_SCALARS = {"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"}


def _literal(node: dict, kind: str, column_type: Optional[pa.DataType] = None) -> Optional[str]:
    lit = node.get("Literal") if isinstance(node, dict) else None
    if not isinstance(lit, dict) or len(lit) != 1:
        return None
    (tag, value), = lit.items()
    if not isinstance(value, dict) or len(value) != 1:
        return None
    (vt, v), = value.items()
    if (tag, vt) in (("Dyn", "Int"), ("Dyn", "Str"), ("Scalar", "String"), ("Scalar", "Boolean")) or \
            (tag == "Scalar" and vt in _INT_SCALARS):
        return literal(v, kind, column_type)
    return None


def _list_literal(node: dict, kind: str, column_type: Optional[pa.DataType] = None) -> Optional[list]:
    """The values of an `is_in` list (Polars serializes it as Arrow IPC), as SQL literals."""
    try:
        raw = node["Literal"]["Scalar"]["List"]
        values = pa.ipc.open_stream(bytes(raw)).read_all().column(0).to_pylist()
    except (KeyError, TypeError, ValueError, pa.ArrowInvalid):
        return None
    out = []
    for v in values:
        if v is None or isinstance(v, float):
            return None
        if kind == "int" and literal(v, kind, column_type) is not None:
            out.append(str(v))
        elif kind == "str" and isinstance(v, str) and literal(v, kind) is not None:
            out.append(literal(v, kind))
        elif kind == "bool" and isinstance(v, bool):
            out.append("true" if v else "false")
        else:
            return None
    return out or None


def _column(node: dict, schema: pa.Schema) -> Optional[tuple[str, str]]:
    if not isinstance(node, dict) or set(node) != {"Column"} or not isinstance(node["Column"], str):
        return None
    name = node["Column"]
    if schema.get_field_index(name) < 0:
        return None
    kind = comparable_kind(schema.field(name).type)
    return (quote_name(name), kind, schema.field(name).type) if kind else None


def _translate(node, schema: pa.Schema) -> Optional[str]:
    if not isinstance(node, dict) or len(node) != 1:
        return None
    (tag, body), = node.items()
    if tag == "BinaryExpr":
        op, left, right = body.get("op"), body.get("left"), body.get("right")
        if op in ("And", "LogicalAnd", "Or", "LogicalOr"):
            a, b = _translate(left, schema), _translate(right, schema)
            if a is None or b is None:
                return None
            return f"({a}) {'AND' if 'And' in op else 'OR'} ({b})"
        if op in _COMPARE:
            col = _column(left, schema)
            other = right
            if col is None:
                col, other, op = _column(right, schema), left, _FLIP[op]
            if col is None:
                return None
            lit = _literal(other, col[1], col[2])
            return None if lit is None else f"{col[0]} {_COMPARE[op]} {lit}"
        return None
    if tag == "Function":
        inputs, function = body.get("input") or [], body.get("function")
        if not isinstance(function, dict) or set(function) != {"Boolean"}:
            return None
        fn = function["Boolean"]
        if fn == "Not" and len(inputs) == 1:
            inner = _translate(inputs[0], schema)
            return None if inner is None else f"NOT ({inner})"
        if fn in ("IsNull", "IsNotNull") and len(inputs) == 1:
            if not isinstance(inputs[0], dict) or set(inputs[0]) != {"Column"}:
                return None
            name = inputs[0]["Column"]
            if not isinstance(name, str) or schema.get_field_index(name) < 0:
                return None
            return f"{quote_name(name)} IS {'NOT ' if fn == 'IsNotNull' else ''}NULL"
        if isinstance(fn, dict) and set(fn) == {"IsBetween"} and len(inputs) == 3:
            col = _column(inputs[0], schema)
            if col is None:
                return None
            lo, hi = _literal(inputs[1], col[1], col[2]), _literal(inputs[2], col[1], col[2])
            closed = fn["IsBetween"].get("closed") if isinstance(fn["IsBetween"], dict) else None
            ops = {"Both": (">=", "<="), "Left": (">=", "<"), "Right": (">", "<="), "None": (">", "<")}.get(closed)
            if lo is None or hi is None or ops is None:
                return None
            return f"{col[0]} {ops[0]} {lo} AND {col[0]} {ops[1]} {hi}"
        if isinstance(fn, dict) and set(fn) == {"IsIn"} and len(inputs) == 2:
            col = _column(inputs[0], schema)
            if col is None or fn["IsIn"].get("nulls_equal") is not False:
                return None
            values = _list_literal(inputs[1], col[1], col[2])
            return None if values is None else f"{col[0]} IN ({', '.join(values)})"
    return None


def _conjuncts(node) -> list:
    if isinstance(node, dict) and set(node) == {"BinaryExpr"} and node["BinaryExpr"].get("op") in ("And", "LogicalAnd"):
        return _conjuncts(node["BinaryExpr"]["left"]) + _conjuncts(node["BinaryExpr"]["right"])
    return [node]


def to_lance_sql(predicate: "pl.Expr", schema: pa.Schema) -> Optional[str]:
    """Lance SQL for the parts of a Polars predicate that keep Polars' meaning: of its top-level
    AND, every condition that translates whole (comparisons of integer, string and boolean
    columns with literals, `is_between`, `is_in` of literals, `is_null`/`is_not_null`, `&`, `|`,
    `~` of those). None when no part translates. The rows the SQL drops are rows the predicate
    drops; the predicate is still applied to the rest."""
    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:  # an expression Polars cannot serialize stays with Polars
        return None
    parts = [p for p in (_translate(c, schema) for c in _conjuncts(tree)) if p is not None]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else " AND ".join(f"({p})" for p in parts)


def _dataset(source: str, catalog: Optional[Mapping[str, str]], namespace: Sequence[str], version: Optional[int],
             storage_options: Optional[Mapping[str, str]]) -> "Dataset":
    from .catalog import _check_source_options

    _check_source_options("scan", catalog, namespace, storage_options)
    if catalog is not None:
        from .catalog import Catalog

        return Catalog(dict(catalog)).open_table(source, list(namespace), version)
    return _open_uri(source, version, storage_options)


def scan(source: str, *, catalog: Optional[Mapping[str, str]] = None, namespace: Sequence[str] = (),
         version: Optional[int] = None, storage_options: Optional[Mapping[str, str]] = None,
         batch_size: Optional[int] = None) -> "pl.LazyFrame":
    """A LazyFrame over a Lance table read through lance-host: `source` is a table URI, or a
    table name of `namespace` in the catalog of properties `catalog` (as `Catalog` takes them).
    The version is pinned when `scan` is called (`version` or the latest): every collect of the
    frame reads that version in one scan (the library reads the fragments concurrently), with the
    columns, filter and row count Polars pushes (see the module's doc). Polars runs an IO plugin
    in its own process; to spread one table over machines, use the splits (`Dataset.plan_scan`)
    through Ray, Spark, Daft or ADBC partitions."""
    import polars as pl
    from polars.io.plugins import register_io_source

    ds = _dataset(source, catalog, namespace, version, storage_options)
    arrow_schema = ds.schema
    polars_schema = pl.from_arrow(arrow_schema.empty_table()).schema

    def read(with_columns: Optional[list], predicate: Optional["pl.Expr"], n_rows: Optional[int],
             hint: Optional[int]) -> Iterator["pl.DataFrame"]:
        wanted = list(with_columns) if with_columns is not None else list(arrow_schema.names)
        needed = list(wanted)
        sql = None
        if predicate is not None:
            for name in predicate.meta.root_names():
                if name not in needed:
                    needed.append(name)
            sql = to_lance_sql(predicate, arrow_schema)
        # batches of 65,536 rows unless asked otherwise: Polars' per-frame cost makes the
        # library's default of a few thousand rows slower (bench/ADBC_POLARS.md)
        options = {"batch_size": batch_size or hint or 65_536}
        if predicate is None and n_rows is not None:
            options["limit"] = n_rows
        # one scan of the pinned version: the library reads its fragments concurrently (a loop
        # over the splits would read them one after another in this one process)
        reader = ds.scan(columns=needed, filter=sql, **options)
        left = n_rows
        try:
            for batch in reader:
                if left is not None and left <= 0:
                    return
                df = pl.from_arrow(pa.Table.from_batches([batch], schema=reader.schema))
                if predicate is not None:
                    df = df.filter(predicate)
                df = df.select(wanted)
                if left is not None:
                    df = df.head(left)
                    left -= df.height
                if df.height:
                    yield df
        finally:
            reader.close()

    return register_io_source(
        read, schema=polars_schema, validate_schema=True, is_pure=True, explain_name="lance_host",
        explain_detail=f"{ds.uri} at version {ds.version}")


def write_lance_host(df: "pl.DataFrame", target: str, mode: str = "create", *,
                     catalog: Optional[Mapping[str, str]] = None, namespace: Sequence[str] = (),
                     storage_options: Optional[Mapping[str, str]] = None, **params) -> WriteResult:
    """Write a DataFrame (or a LazyFrame, collected) as ONE new version: `target` is a table URI,
    or a table name of `namespace` in the catalog of properties `catalog`; mode 'create',
    'append' or 'overwrite'. `params` are `write_table`'s (statement_id, commit_message, ...).
    A failure commits nothing."""
    import polars as pl

    from .catalog import _check_source_options

    _check_source_options("write_lance_host", catalog, namespace, storage_options)
    if isinstance(df, pl.LazyFrame):
        df = df.collect()
    data = df.to_arrow()
    if catalog is None:
        options = dict(storage_options or {}) or None
        if mode == "append":
            data = conform_types(data, _open_uri(target, None, options).schema)
        _, result = write_table(target, data, mode, storage_options=options, **params)
        return result
    from .catalog import Catalog

    cat = Catalog(dict(catalog))
    if mode == "create":
        _, result = cat.create_table(target, data, list(namespace), **params)
        return result
    info = cat.describe_table(target, list(namespace))
    if mode == "append":
        data = conform_types(data, cat.open_table(target, list(namespace)).schema)
    _, result = write_table(info.location, data, mode, storage_options=info.storage_options or None, **params)
    return result
