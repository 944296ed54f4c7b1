"""Daft over lance-host (`lance_host.daft`) on Daft's local (native) runner, whose tasks run
concurrently: reads equal the same queries on the rows pylance reads, the filter parts that keep
Daft's meaning reach each split's scan as Lance SQL, and a sink that stages every partition and
commits once writes what pylance then reads — exactly once with a statement id."""

import struct

import daft
import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_host as lh
import lance_host.daft as lhd
from lance_host.dataset import Dataset

NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000001))[0]


def rows(start, end):
    ids = list(range(start, end))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "cat": pa.array([None if i % 11 == 0 else ["a", "b", "c'q", "\u00e9t\u00e9", "x\x00y"][i % 5] for i in ids]),
        "f": pa.array([[float("nan"), NEG_NAN, -0.0, 0.0, float("inf"), -1.5, 2.5][i % 7] for i in ids]),
        "flag": pa.array([None if i % 13 == 0 else i % 2 == 0 for i in ids]),
    })


SCHEMA = rows(0, 20).schema


def bits(table: pa.Table) -> dict:
    """Columns as comparable values: floats by their bits (the sign of a NaN included)."""
    out = {}
    for name in table.column_names:
        col = table[name].combine_chunks()
        if pa.types.is_floating(col.type):
            out[name] = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64).view(np.uint64).tolist()
        else:
            out[name] = col.to_pylist()
    return out


def sorted_arrow(df, key="id"):
    return df.to_arrow().sort_by(key)


@pytest.fixture()
def table(tmp_path):
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(rows(0, 2000), uri, max_rows_per_file=500)
    return uri


@pytest.mark.parametrize("make, sql", [
    (lambda: daft.col("id") > 5, "`id` > 5"),
    (lambda: daft.lit(5) < daft.col("id"), "`id` > 5"),
    (lambda: daft.col("cat") == "c'q", "`cat` = 'c''q'"),
    (lambda: daft.col("cat") == "x\x00y", None),
    (lambda: daft.col("flag") == True, "`flag` = true"),  # noqa: E712
    (lambda: daft.col("f") > 0, None),
    (lambda: daft.col("f").is_null(), "`f` IS NULL"),
    (lambda: daft.col("id").between(3, 9), "`id` >= 3 AND `id` <= 9"),
    (lambda: daft.col("cat").is_in(["a", "b"]), "`cat` IN ('a', 'b')"),
    (lambda: ~(daft.col("id") <= 3), "NOT (`id` <= 3)"),
    (lambda: (daft.col("id") > 1) | (daft.col("f") > 0), None),
    (lambda: (daft.col("id") > 1) & (daft.col("f") > 0) & (daft.col("cat") == "b"), "(`id` > 1) AND (`cat` = 'b')"),
    (lambda: daft.col("id") + 1 > 5, None),
    (lambda: daft.col("id") > 1.5, None),
    # a literal outside the column's type: Lance refuses the comparison, Daft answers it
    (lambda: daft.col("flag").is_null() & (daft.col("id") > 2**63), "`flag` IS NULL"),
])
def test_translation_keeps_daft_meaning(make, sql):
    assert lhd.to_lance_sql(make(), SCHEMA) == sql


QUERIES = [
    lambda df: df.where(daft.col("id") > 1500),
    lambda df: df.where((daft.col("cat") == "\u00e9t\u00e9") & (daft.col("f") > 0)).select("id", "f"),
    lambda df: df.where(daft.col("f") >= 0.0).select("id", "f"),
    lambda df: df.where(daft.col("cat").is_in(["a", "x\x00y"]) | daft.col("cat").is_null()).select("id", "cat"),
    lambda df: df.where(~daft.col("flag") & daft.col("id").between(100, 400)).select("id", "flag"),
    lambda df: df.select("cat", "id"),
]


@pytest.mark.parametrize("i", range(len(QUERIES)))
def test_reads_equal_daft_on_pylance_rows(table, i):
    got = sorted_arrow(QUERIES[i](lhd.read_lance_host(table)))
    want = sorted_arrow(QUERIES[i](daft.from_arrow(lance.dataset(table).to_table())))
    assert got.num_rows == want.num_rows > 0
    assert bits(got) == bits(want)


def test_aggregates_and_limits(table):
    df = lhd.read_lance_host(table)
    assert df.count_rows() == 2000
    assert len(df.limit(7).to_pydict()["id"]) == 7
    got = df.where(daft.col("id") < 1000).groupby("cat").agg(daft.col("id").sum()).to_arrow()
    want = daft.from_arrow(lance.dataset(table).to_table()).where(daft.col("id") < 1000) \
        .groupby("cat").agg(daft.col("id").sum()).to_arrow()
    assert sorted(zip(*bits(got).values()), key=str) == sorted(zip(*bits(want).values()), key=str)


def test_pushdown_reaches_each_split(table, monkeypatch):
    calls = []
    original = Dataset.scan_split_stream

    def recording(self, split, columns=None, filter=None, **options):
        try:  # the task's dataset comes from its split's own token: it refuses whole-table calls
            self.count_rows()
            scoped = False
        except lh.InvalidArgumentError as e:
            scoped = "split-scoped" in e.message
        calls.append({"columns": columns, "filter": filter, "options": options, "scoped": scoped})
        return original(self, split, columns=columns, filter=filter, **options)

    monkeypatch.setattr(Dataset, "scan_split_stream", recording)
    query = lambda df: df.where((daft.col("id") >= 1900) & (daft.col("f") > 0)).select("id")  # noqa: E731
    got = query(lhd.read_lance_host(table)).to_pydict()["id"]
    want = query(daft.from_arrow(lance.dataset(table).to_table())).to_pydict()["id"]
    assert sorted(got) == sorted(want) and len(got) > 0
    assert len(calls) == 4  # one task per split (fragment)
    assert {c["filter"] for c in calls} == {"`id` >= 1900"}
    assert all(set(c["columns"]) == {"id", "f"} for c in calls)
    assert all(c["scoped"] for c in calls)


def test_sink_stages_partitions_and_commits_once(tmp_path, table):
    parts = [rows(2000 + 100 * k, 2100 + 100 * k) for k in range(3)]
    before = len(lance.dataset(table).get_fragments())
    out = lhd.write_lance_host(daft.from_arrow(parts), table, mode="append", statement_id="load-1").to_pydict()
    assert out == {"version": [2], "rows_written": [300], "committed": [True]}
    py = lance.dataset(table)
    assert py.version == 2 and py.count_rows() == 2300
    assert len(py.get_fragments()) > before
    assert bits(py.to_table(filter="id >= 2000").sort_by("id")) == bits(pa.concat_tables(parts))
    data_files = sorted(p.name for p in (tmp_path / "t.lance" / "data").iterdir())
    # the same statement again: nothing more is committed, its staged files are deleted
    again = lhd.write_lance_host(daft.from_arrow(parts), table, mode="append", statement_id="load-1").to_pydict()
    assert again == {"version": [2], "rows_written": [300], "committed": [False]}
    assert lance.dataset(table).version == 2
    assert sorted(p.name for p in (tmp_path / "t.lance" / "data").iterdir()) == data_files
    # a partition of another schema fails the write; the table is as it was
    with pytest.raises(Exception, match="schema"):
        lhd.write_lance_host(daft.from_arrow(pa.table({"other": [1, 2]})), table, mode="append")
    assert lance.dataset(table).version == 2
    # create and overwrite
    new = str(tmp_path / "new.lance")
    lhd.write_lance_host(daft.from_arrow(parts), new, mode="create")
    lhd.write_lance_host(daft.from_arrow(parts[:1]), new, mode="overwrite")
    py = lance.dataset(new)
    assert py.version == 2 and bits(py.to_table().sort_by("id")) == bits(parts[0].cast(py.schema))
    with pytest.raises(lh.LanceError):
        lhd.write_lance_host(daft.from_arrow(parts), str(tmp_path / "missing.lance"), mode="append")
    # file-layout parameters go to the shares (here: files of at most 40 rows), commit ones to the
    # commit; an unknown one is refused, nothing committed
    lhd.write_lance_host(daft.from_arrow(parts), new, mode="append", max_rows_per_file=40, commit_message="small")
    py = lance.dataset(new)
    assert py.version == 3 and py.count_rows() == 400
    assert max(f.count_rows() for f in py.get_fragments()[1:]) <= 40
    assert py.read_transaction(3).transaction_properties["__lance_commit_message"] == "small"
    with pytest.raises(Exception, match="max_rows_per_fil"):
        lhd.write_lance_host(daft.from_arrow(parts), new, mode="append", max_rows_per_fil=40)
    assert lance.dataset(new).version == 3
    with pytest.raises(lh.InvalidArgumentError, match="namespace="):
        lhd.read_lance_host(table, namespace=["ns"])


RAY_SCRIPT = r"""
import os, sys
import daft, ray, pyarrow as pa
import lance_host.daft as lhd
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
         runtime_env={"env_vars": {k: os.environ[k] for k in ("LANCE_HOST_LIB", "PYTHONPATH") if k in os.environ}})
daft.set_runner_ray()
uri = sys.argv[1]
ids = lhd.read_lance_host(uri).where((daft.col("id") > 500) & (daft.col("cat") != "a")).select("id").to_pydict()["id"]
print("ids:", ",".join(map(str, sorted(ids))))
parts = [pa.table({"id": pa.array(range(5000 + 100 * k, 5100 + 100 * k), pa.int64())}) for k in range(3)]
out = lhd.write_lance_host(daft.from_arrow(parts), sys.argv[2], mode="create").to_pydict()
print("written:", out["version"][0], out["rows_written"][0])
ray.shutdown()
"""


def test_on_the_ray_runner(table, tmp_path):
    """Daft's distributed runner: tasks and sink writes run in Ray worker processes."""
    import os
    import subprocess
    import sys

    script = tmp_path / "daft_ray.py"
    script.write_text(RAY_SCRIPT)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    out = subprocess.run([sys.executable, str(script), table, str(tmp_path / "ray.lance")], capture_output=True,
                         text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-4000:]
    got = [line.split(": ", 1)[1] for line in out.stdout.splitlines() if line.startswith("ids: ")]
    want = lance.dataset(table).to_table(filter="id > 500 AND (cat != 'a' )", columns=["id"])["id"].to_pylist()
    assert got == [",".join(map(str, sorted(want)))]
    assert [line for line in out.stdout.splitlines() if line.startswith("written: ")] == ["written: 1 300"]
    assert sorted(lance.dataset(str(tmp_path / "ray.lance")).to_table()["id"].to_pylist()) == list(range(5000, 5300))
