"""Polars over lance-host (`lance_host.polars`): lazy queries equal the same queries on the rows
pylance reads, the predicate parts that keep Polars' meaning reach lance-host's scan as Lance
SQL (and the rest stays with Polars), and frames written through lance-host are read back by
pylance."""

import math
import struct

import lance
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import lance_host as lh
import lance_host.polars as lhp
from lance_host.dataset import Dataset

NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000001))[0]


def rows(start, end):
    ids = list(range(start, end))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "small": pa.array([i % 120 - 60 for i in ids], pa.int8()),
        "cat": pa.array([None if i % 11 == 0 else ["a", "b", "c'q", "\u00e9t\u00e9", "x\x00y"][i % 5] for i in ids]),
        "f": pa.array([[float("nan"), NEG_NAN, -0.0, 0.0, float("inf"), -1.5, 2.5][i % 7] for i in ids]),
        "flag": pa.array([None if i % 13 == 0 else i % 2 == 0 for i in ids]),
        "d": pa.array([i * 100 for i in ids], pa.decimal128(20, 2)),
    })


@pytest.fixture()
def table(tmp_path):
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(rows(0, 2000), uri, max_rows_per_file=500)
    return uri


@pytest.fixture()
def spy(monkeypatch):
    """Every scan call: its columns, filter and options, and the rows it returned."""
    calls = []
    original = Dataset.scan

    def recording(self, columns=None, filter=None, **options):
        reader = original(self, columns=columns, filter=filter, **options)
        table = reader.read_all()
        calls.append({"columns": columns, "filter": filter, "options": options, "rows": table.num_rows})
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())

    monkeypatch.setattr(Dataset, "scan", recording)
    return calls


SCHEMA = rows(0, 20).schema


@pytest.mark.parametrize("expr, sql", [
    (pl.col("id") > 5, "`id` > 5"),
    (pl.lit(5) < pl.col("id"), "`id` > 5"),
    (pl.col("small") != pl.lit(7, dtype=pl.Int8), "`small` != 7"),
    (pl.col("cat") == "c'q", "`cat` = 'c''q'"),
    (pl.col("cat") == "x\x00y", None),  # Lance refuses NUL in a filter: Polars applies it
    (pl.col("flag") == True, "`flag` = true"),  # noqa: E712
    (pl.col("f") > 0, None),  # floats: NaN and -0.0 order differently, kept in Polars
    (pl.col("d") > 5, None),
    (pl.col("id").is_between(3, 9), "`id` >= 3 AND `id` <= 9"),
    (pl.col("id").is_between(3, 9, closed="left"), "`id` >= 3 AND `id` < 9"),
    (pl.col("cat").is_in(["a", "b"]), "`cat` IN ('a', 'b')"),
    (pl.col("f").is_null(), "`f` IS NULL"),
    (~(pl.col("id") <= 3), "NOT (`id` <= 3)"),
    ((pl.col("id") > 1) | (pl.col("cat") == "a"), "(`id` > 1) OR (`cat` = 'a')"),
    ((pl.col("id") > 1) | (pl.col("f") > 0), None),  # one side stays in Polars: all of the OR does
    ((pl.col("id") > 1) & (pl.col("f") > 0) & (pl.col("cat") == "b"), "(`id` > 1) AND (`cat` = 'b')"),
    (pl.col("id") + 1 > 5, None),
    (pl.col("id") > 1.5, None),
    # an int8 column against literals outside int8: Lance refuses those comparisons, Polars
    # answers them, so they stay with Polars
    (pl.col("small") > 300, None),
    (pl.col("small").is_in([1, 300]), None),
    (pl.col("small").is_between(-200, 5), None),
    (pl.col("small") >= -128, "`small` >= -128"),
])
def test_translation_keeps_polars_meaning(expr, sql):
    assert lhp.to_lance_sql(expr, SCHEMA) == sql


QUERIES = [
    lambda lf: lf.filter(pl.col("id") > 1500),
    lambda lf: lf.filter((pl.col("cat") == "\u00e9t\u00e9") & (pl.col("f") > 0)).select("id", "f"),
    lambda lf: lf.filter(pl.col("f") >= 0.0).select("id", "f"),
    lambda lf: lf.filter(pl.col("f").is_nan()).select("id"),
    lambda lf: lf.filter(pl.col("cat").is_in(["a", "x\x00y"]) | pl.col("cat").is_null()).select("id", "cat"),
    lambda lf: lf.filter(~pl.col("flag") & pl.col("small").is_between(-10, 10)).select("id", "small", "flag"),
    lambda lf: lf.filter(pl.col("d") > 150000).select("id", "d"),
    lambda lf: lf.group_by("cat").agg(pl.len(), pl.col("id").sum(), pl.col("d").sum()),
    lambda lf: lf.select(pl.len()),
    lambda lf: lf.select("cat", "id"),
    lambda lf: lf.filter((pl.col("small") > 300) | (pl.col("small") < -100) | (pl.col("id") < 3)).select("id"),
]


@pytest.mark.parametrize("i", range(len(QUERIES)))
def test_queries_equal_polars_on_pylance_rows(table, i):
    got = QUERIES[i](lhp.scan(table)).collect()
    want = QUERIES[i](pl.from_arrow(lance.dataset(table).to_table()).lazy()).collect()
    assert got.height == want.height
    key = [c for c in want.columns if c in ("id", "cat")] or want.columns
    assert_frame_equal(got.sort(key, nulls_last=True), want.sort(key, nulls_last=True))


def test_pushdown_reaches_the_scan(table, spy):
    lf = lhp.scan(table).filter((pl.col("id") >= 1900) & (pl.col("f") > 0)).select("id", "cat")
    plan = lf.explain()
    assert "PYTHON[lance_host]" in plan and "SELECTION" in plan
    got = lf.collect()
    want = pl.from_arrow(lance.dataset(table).to_table()).filter((pl.col("id") >= 1900) & (pl.col("f") > 0))
    assert sorted(got["id"].to_list()) == sorted(want["id"].to_list())
    assert len(spy) == 1  # one scan of the pinned version
    assert {c["filter"] for c in spy} == {"`id` >= 1900"}
    assert sum(c["rows"] for c in spy) == 100  # only the pushed part's rows were read
    assert all(set(c["columns"]) == {"id", "cat", "f"} for c in spy)
    spy.clear()
    assert lhp.scan(table).head(7).collect().height == 7
    assert spy[0]["options"].get("limit") == 7 and len(spy) == 1


def test_version_pinned_at_scan_and_frame_reusable(table):
    lf = lhp.scan(table).filter(pl.col("id") < 10)
    lance.write_dataset(rows(0, 5), table, mode="append")
    assert lf.collect().height == 10 and lf.collect().height == 10  # twice, same version
    assert lhp.scan(table).filter(pl.col("id") < 10).collect().height == 15
    assert lhp.scan(table, version=1).select(pl.len()).collect().item() == 2000


def test_append_to_a_pylance_table(table):
    """Polars hands large strings; a table pylance wrote has strings: the append converts."""
    frame = lhp.scan(table).filter(pl.col("id") < 100).collect()
    lhp.write_lance_host(frame.with_columns(pl.col("id") + 10_000), table, mode="append")
    py = lance.dataset(table)
    assert py.version == 2 and py.schema == rows(0, 20).schema
    got = pl.from_arrow(py.to_table(filter="id >= 10000")).sort("id")
    assert_frame_equal(got, frame.with_columns(pl.col("id") + 10_000).sort("id"))


def test_writes_are_read_back_by_pylance(tmp_path):
    uri = str(tmp_path / "w.lance")
    first = pl.from_arrow(rows(0, 300))
    r = lhp.write_lance_host(first, uri)
    assert (r.version, r.rows_written) == (1, 300)
    lhp.write_lance_host(pl.from_arrow(rows(300, 350)).lazy(), uri, mode="append", commit_message="more")
    py = lance.dataset(uri)
    assert py.version == 2
    assert_frame_equal(pl.from_arrow(py.to_table()).sort("id"), pl.from_arrow(rows(0, 350)))
    # a frame of another schema commits nothing
    with pytest.raises(lh.InvalidArgumentError):
        lhp.write_lance_host(pl.DataFrame({"other": [1]}), uri, mode="append")
    assert lance.dataset(uri).version == 2
    # through a catalog, in a namespace
    root = tmp_path / "wh"
    cat = lh.Catalog({"root": str(root)})
    cat.create_namespace(["ns"])
    lhp.write_lance_host(first, "people", catalog={"root": str(root)}, namespace=["ns"])
    lhp.write_lance_host(first.head(10), "people", "overwrite", catalog={"root": str(root)}, namespace=["ns"])
    location = cat.describe_table("people", ["ns"]).location
    assert_frame_equal(pl.from_arrow(lance.dataset(location).to_table()).sort("id"), pl.from_arrow(rows(0, 10)))
    got = lhp.scan("people", catalog={"root": str(root)}, namespace=["ns"]).select(pl.col("id").sum()).collect()
    assert got.item() == sum(range(10))
    assert math.isnan(lhp.scan(uri).filter(pl.col("id") == 0).select("f").collect().item())


def test_options_that_would_be_ignored_are_refused(table, tmp_path):
    """namespace= without a catalog and storage_options= beside one would be ignored: refused,
    naming the function; nothing is written."""
    with pytest.raises(lh.InvalidArgumentError, match="scan: namespace="):
        lhp.scan(table, namespace=["ns"])
    with pytest.raises(lh.InvalidArgumentError, match="storage.<key>"):
        lhp.scan("t", catalog={"root": str(tmp_path)}, storage_options={"k": "v"})
    with pytest.raises(lh.InvalidArgumentError, match="write_lance_host: namespace="):
        lhp.write_lance_host(pl.from_arrow(rows(0, 3)), str(tmp_path / "x.lance"), namespace=["ns"])
    assert not (tmp_path / "x.lance").exists()
