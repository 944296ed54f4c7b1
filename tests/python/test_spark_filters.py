"""One table of Spark filters and their Lance SQL for both Spark translations (issue 59):
`tests/filters/spark_filters.json`. Here pyspark's filter objects go through
`lance_host.spark_filters.to_lance_sql` and must give the table's SQL (or none); and every SQL of
the table, the JVM connector's too, must select through pylance exactly the rows Spark's
semantics keep, on rows with NULLs, NaNs of both signs, -0.0, infinities, the int32 extremes and
dates from year 1 to 9999.
The JVM's `FiltersTest` checks Filters.java against the same table."""

import datetime as dt
import json
import math
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
pytest.importorskip("pyspark")

from lance_host.spark_filters import to_lance_sql  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TABLE = json.loads((ROOT / "tests" / "filters" / "spark_filters.json").read_text())
NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]


def rows():
    out = []
    xs = [0.0, -0.0, 1.0, -1.0, 2.5, 2.0, 1e-06, 1e300, -1e300, math.inf, -math.inf, math.nan, NEG_NAN, None,
          0.09, 0.1, 3.0]
    cats = [None, "c0", "c1", "c2", "it's", "é中", "cx"]
    days = [None, dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(2024, 1, 5), dt.date(2000, 2, 29),
            dt.date(1601, 1, 1), dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(9999, 12, 30),
            dt.date(2000, 1, 1), dt.date(1999, 12, 31), dt.date(2024, 1, 6), dt.date(1, 1, 2)]
    for i in range(40):
        x = xs[i % len(xs)]
        out.append({
            "id": i - 3,
            "n": [-2147483648, 2147483647, 0, None][i % 4] if i % 5 == 0 else i - 20,
            "x": x,
            "f": None if x is None else float(np.float32(x if abs(x) < 1e38 or not math.isfinite(x) else 1e38)),
            "cat": cats[i % len(cats)],
            "b": [True, False, None][i % 3],
            "d": days[i % len(days)],
        })
    return out


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("spark_filters") / "t.lance")
    data = rows()
    schema = pa.schema([("id", pa.int64()), ("n", pa.int32()), ("x", pa.float64()), ("f", pa.float32()),
                        ("cat", pa.string()), ("b", pa.bool_()), ("d", pa.date32())])
    lance.write_dataset(pa.Table.from_pylist(data, schema=schema), uri)
    return lance.dataset(uri), data


def value(column, v):
    """A case's literal as pyspark pushes it for the column's type."""
    if TABLE["schema"].get(column) == "date":
        return dt.date.fromisoformat(v)
    if TABLE["schema"].get(column) in ("double", "float"):
        v = float(v)  # "NaN", "Infinity", "-Infinity" and numbers
        return float(np.float32(v)) if TABLE["schema"][column] == "float" else v
    return v


def spark_filter(f):
    from pyspark.sql import datasource as d

    op = f[0]
    if op == "not":
        return d.Not(spark_filter(f[1]))
    attr = tuple(f[1].split("."))
    if op in ("is_null", "is_not_null"):
        return (d.IsNull if op == "is_null" else d.IsNotNull)(attr)
    if op == "in":
        return d.In(attr, tuple(value(f[1], v) for v in f[2]))
    cls = {"=": d.EqualTo, "<=>": d.EqualNullSafe, ">": d.GreaterThan, ">=": d.GreaterThanOrEqual,
           "<": d.LessThan, "<=": d.LessThanOrEqual, "starts_with": d.StringStartsWith}[op]
    return cls(attr, value(f[1], f[2]))


def key(v):
    """Spark's order of doubles: -0.0 equals 0.0, every NaN equals every NaN and is above all."""
    if not isinstance(v, float):
        return (0, v)
    return (1, 0.0) if v != v else (0, v + 0.0)


def spark_keeps(f, row, literal_first=False):
    """Spark's three-valued result of the filter on the row (None: unknown)."""
    op = f[0]
    if op == "not":
        r = spark_keeps(f[1], row)
        return None if r is None else not r
    if op in ("and", "or"):
        a, b = spark_keeps(f[1], row), spark_keeps(f[2], row)
        if op == "and":
            return False if a is False or b is False else (None if a is None or b is None else True)
        return True if a is True or b is True else (None if a is None or b is None else False)
    v = row[f[1]]
    if op == "is_null":
        return v is None
    if op == "is_not_null":
        return v is not None
    if op == "<=>":
        return v is not None and key(v) == key(value(f[1], f[2]))
    if v is None:
        return None
    if op == "in":
        return any(key(v) == key(value(f[1], x)) for x in f[2])
    if op == "starts_with":
        return v.startswith(f[2])
    a, b = key(v), key(value(f[1], f[2]))
    if literal_first:
        a, b = b, a
    return {"=": a == b, "<>": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


CASES = TABLE["cases"]


@pytest.mark.parametrize("case", [c for c in CASES if c.get("python", True)], ids=lambda c: json.dumps(c["filter"]))
def test_python_translation_is_the_tables(case):
    assert to_lance_sql(spark_filter(case["filter"])) == case["sql"]


@pytest.mark.parametrize("case", [c for c in CASES if c["sql"] is not None], ids=lambda c: c["sql"][:80])
def test_each_sql_of_the_table_selects_what_spark_keeps(table, case):
    ds, data = table
    got = sorted(ds.to_table(columns=["id"], filter=case["sql"])["id"].to_pylist())
    want = sorted(r["id"] for r in data if spark_keeps(case["filter"], r, case.get("literal_first", False)) is True)
    assert got == want, case


def test_the_table_covers_every_filter_both_surfaces_translate():
    """Each operator of pyspark's filter API and of Spark's V2 predicates the connectors push has
    a case: a translation added on one side without a case here fails."""
    ops = {c["filter"][0] for c in CASES}
    assert {"=", "<=>", "<", "<=", ">", ">=", "in", "is_null", "is_not_null", "not", "starts_with"} <= ops
    assert {"and", "or", "<>"} <= ops  # the JVM's V2 predicates
    assert any(c.get("literal_first") for c in CASES)
    assert any(c["sql"] is None for c in CASES) and sum(c["sql"] is not None for c in CASES) >= 25
