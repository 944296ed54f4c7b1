"""Lance SQL text for the predicate translations of the engine layers (`polars`, `daft`): which
column types compare the same in those engines and in Lance, and how names and literals are
written."""

from __future__ import annotations

from typing import Optional

import pyarrow as pa


def comparable_kind(t: pa.DataType) -> Optional[str]:
    """'int', 'str' or 'bool' for the column types whose comparisons with a literal mean the same
    in Polars, Daft and Lance SQL; None for the others. Floats are not among them (Lance puts a
    NaN above every number and one with its sign bit set below; Polars has every NaN above every
    number, Daft orders -0.0 below 0.0), nor decimals and times (literal types and time zones
    differ): conditions on them stay with the engine."""
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "str"
    if pa.types.is_boolean(t):
        return "bool"
    return None


def quote_name(name: str) -> str:
    """A column name as a Lance SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def _int_range(t: pa.DataType) -> tuple[int, int]:
    bits = t.bit_width
    if pa.types.is_signed_integer(t):
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def literal(value: object, kind: str, column_type: Optional[pa.DataType] = None) -> Optional[str]:
    """`value` as a Lance SQL literal for a column of `kind` (and `column_type`), or None when it
    is not one of that kind, an integer outside the column type's range (Lance refuses the
    comparison where the engine answers it), or a string holding NUL (Lance refuses those)."""
    if kind == "bool":
        return ("true" if value else "false") if isinstance(value, bool) else None
    if kind == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        if column_type is not None and pa.types.is_integer(column_type):
            lo, hi = _int_range(column_type)
            if not lo <= value <= hi:
                return None
        return str(value)
    if kind == "str" and isinstance(value, str):
        return None if "\0" in value else "'" + value.replace("'", "''") + "'"
    return None
