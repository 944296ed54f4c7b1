"""Spark's pushed filters (`pyspark.sql.datasource` filter objects) in Lance SQL, exactly where
the translation keeps Spark's meaning, for the Spark data sources of `lance_host.spark`. The JVM
connector's translation (`java/spark/.../Filters.java`) writes the same SQL for the same filter:
both are checked against one table of cases, `tests/filters/spark_filters.json`."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: pyspark is imported where a filter is translated
    from pyspark.sql.datasource import Filter


def _ident(attr) -> str | None:
    if len(attr) != 1:
        return None  # nested fields stay in Spark
    name = attr[0]
    return "`" + name.replace("`", "``") + "`"


def _literal(v) -> str | None:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return None
        # The shortest text that reads back as the same double, in plain notation with a decimal
        # point (as the JVM connector writes it): 1e-05 is 0.00001, -0.0 is 0.0.
        text = format(Decimal(repr(v + 0.0)), "f")  # + 0.0: -0.0 is 0.0, as Spark compares
        return text if "." in text else text + ".0"
    if isinstance(v, str):
        # Lance refuses a filter with a NUL character: such a literal stays in Spark
        return None if "\0" in v else "'" + v.replace("'", "''") + "'"
    if isinstance(v, datetime.date) and not isinstance(v, datetime.datetime):
        return f"DATE '{v.isoformat()}'"  # years 1 to 9999, four digits
    return None  # timestamps, decimals, binary: kept in Spark


def to_lance_sql(f: Filter) -> str | None:
    """Lance SQL for one pushed Spark filter, or None when it does not translate exactly."""
    from pyspark.sql import datasource as d

    name = type(f).__name__
    if name in ("IsNull", "IsNotNull"):
        col = _ident(f.attribute)
        return None if col is None else f"{col} IS {'NOT ' if name == 'IsNotNull' else ''}NULL"
    if name == "Not":
        inner = to_lance_sql(f.child)
        return None if inner is None else f"NOT ({inner})"
    if name == "In":
        col = _ident(f.attribute)
        lits = [_literal(v) for v in f.value]
        if col is None or not lits or any(x is None for x in lits):
            return None
        return f"{col} IN ({', '.join(lits)})"
    ops = {"EqualTo": "=", "GreaterThan": ">", "GreaterThanOrEqual": ">=", "LessThan": "<",
           "LessThanOrEqual": "<="}
    if name in ops or name == "EqualNullSafe":
        col, lit = _ident(f.attribute), _literal(f.value)
        if col is None or lit is None:
            return None
        if name == "EqualNullSafe":  # the value is never NULL here (_literal refuses None)
            return f"({col} IS NOT NULL AND {col} = {lit})"
        if isinstance(f.value, float) and name != "EqualTo":
            # Spark pushes a float literal for a float column. Spark has every NaN equal and
            # above every number; Lance orders floats totally, a NaN with its sign bit set (what
            # x86 gives for 0/0) below -inf: with isnan, any NaN is above the literal.
            if name.startswith("Greater"):
                return f"({col} {ops[name]} {lit} OR isnan({col}))"
            return f"({col} {ops[name]} {lit} AND NOT isnan({col}))"
        return f"{col} {ops[name]} {lit}"
    del d
    return None


def push_filters(filters: list, pushed: list) -> list:
    """pushFilters for a reader: the Lance SQL of every filter that translates exactly is
    appended to `pushed`; the others are returned, for Spark to apply."""
    remaining = []
    for f in filters:
        sql = to_lance_sql(f)
        if sql is None:
            remaining.append(f)
        else:
            pushed.append(sql)
    return remaining


def _and(parts) -> str | None:
    parts = [p for p in parts if p]
    return " AND ".join(f"({p})" for p in parts) if parts else None
