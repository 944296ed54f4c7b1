"""Full-text search statements of the ADBC driver (`lance_host.fts.*`, issue 63): on a table
pylance wrote with a two-segment INVERTED index, an unindexed tail and deletions, `ExecuteQuery`
returns pylance's single-process top k (row ids and BM25 scores) for match, all-terms and phrase
queries with and without a filter; `ExecutePartitions` returns one partition per index segment
and flat piece carrying the snapshot's statistics, read in spawned processes and merged by
score to the same rows; bad options are ADBC errors."""

import multiprocessing

import pyarrow as pa
import pytest

dbapi = pytest.importorskip("adbc_driver_manager.dbapi")
lance = pytest.importorskip("lance")

from test_adbc import connect, _read_partition  # noqa: E402
from test_fts import ALL, ANY, PHRASE, VOCAB, assert_same_top_k, pylance_query, write_table  # noqa: E402

MATCH = {ANY: "any", ALL: "all", PHRASE: "phrase"}
CASES = [(VOCAB[0], ANY, 0, None), (f"{VOCAB[1]} {VOCAB[40]} {VOCAB[200]}", ANY, 0, "category = 'c1'"),
         (f"{VOCAB[7]} {VOCAB[8]}", ALL, 0, None), ("quick brown fox", PHRASE, 1, "id > 100"),
         ("absentterm", ANY, 0, None)]


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    root = tmp_path_factory.mktemp("adbc_fts")
    ds = write_table(str(root / "docs.lance"))
    return root, ds


def options(text, kind, slop, flt, k=12):
    o = {"lance_host.table": "docs", "lance_host.columns": "id", "lance_host.fts.column": "text",
         "lance_host.fts.query": text, "lance_host.fts.match": MATCH[kind], "lance_host.fts.k": str(k),
         "lance_host.fts.slop": str(slop), "lance_host.filter": flt or ""}
    return o


def want(ds, text, kind, slop, flt, k=12):
    kw = dict(full_text_query=pylance_query(text, kind, slop), limit=k, with_row_id=True, columns=["id"])
    if flt:
        kw.update(filter=flt, prefilter=True)
    return ds.to_table(**kw)


def test_queries_and_partitions_equal_pylance(docs):
    root, ds = docs
    with connect(root) as conn, conn.cursor() as cur:
        stmt = cur.adbc_statement
        for text, kind, slop, flt in CASES:
            expected = want(ds, text, kind, slop, flt)
            stmt.set_options(**options(text, kind, slop, flt))
            reader, _ = stmt.execute_query()
            got = pa.RecordBatchReader._import_from_c(reader.address).read_all()
            assert got.schema.names == ["id", "_score", "_rowid"]
            want_rows = (expected["_rowid"].to_pylist(), expected["_score"].to_pylist(), expected["id"].to_pylist())
            # the same rows and scores; rows tied in score may come in another order (ours: by _rowid)
            assert_same_top_k((got["_rowid"].to_pylist(), got["_score"].to_pylist(), got["id"].to_pylist()),
                              want_rows, text)
            parts, handle, _ = stmt.execute_partitions()
            schema = pa.Schema._import_from_c(handle.address)
            assert schema.names == ["id", "_score", "_rowid"]
            assert len(parts) == 2 + 2  # two index segments, a flat piece per unindexed fragment
            ctx = multiprocessing.get_context("spawn")
            with ctx.Pool(2) as pool:
                pieces = [pa.ipc.open_stream(b).read_all() for b in pool.map(_read_partition, [(root, p) for p in parts])]
            merged = pa.concat_tables(pieces).sort_by([("_score", "descending"), ("_rowid", "ascending")]).slice(0, 12)
            assert merged.equals(got), text


def test_bad_full_text_options_are_adbc_errors(docs):
    root, _ = docs
    with connect(root) as conn, conn.cursor() as cur:
        stmt = cur.adbc_statement
        for bad, message in [({"lance_host.fts.k": "0"}, "1 to"), ({"lance_host.fts.match": "fuzzy"}, "phrase"),
                             ({"lance_host.fts.slop": "x"}, "whole number")]:
            with pytest.raises(dbapi.ProgrammingError, match=message):
                stmt.set_options(**bad)
        stmt.set_options(**{"lance_host.table": "docs", "lance_host.fts.query": "fox"})
        with pytest.raises(dbapi.ProgrammingError, match="both"):
            stmt.execute_query()
        stmt.set_options(**{"lance_host.fts.column": "category"})  # no INVERTED index
        with pytest.raises(dbapi.Error, match="INVERTED"):
            stmt.execute_query()
        stmt.set_options(**{"lance_host.fts.column": "text", "lance_host.fts.slop": "2"})  # slop without phrase
        with pytest.raises(dbapi.ProgrammingError, match="phrase"):
            stmt.execute_query()
        stmt.set_options(**{"lance_host.fts.slop": "0", "lance_host.vector.column": "vec",
                            "lance_host.vector.query": ",".join(["0.5"] * 8)})
        with pytest.raises(dbapi.NotSupportedError, match="hybrid"):
            stmt.execute_query()
