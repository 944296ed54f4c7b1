"""Transactions of the ADBC driver over several tables (issue 63): with autocommit off, ingests
into two tables of a namespace that commits several tables at once (this repo's REST server with
`--batch-commits`) commit together — both tables get their new version or neither does — and
pylance reads both through the namespace; a rollback leaves both as they were and deletes the
staged files. Where the namespace cannot commit tables together (a directory catalog), the
commit is refused whole: nothing committed, the staged files deleted."""

from pathlib import Path

import pytest

dbapi = pytest.importorskip("adbc_driver_manager.dbapi")
lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")
ln = pytest.importorskip("lance.namespace")

from test_adbc import driver_path  # noqa: E402
import test_multi_table  # noqa: E402
from test_multi_table import make_tables, pylance_ids, rows  # noqa: E402

server = test_multi_table.server  # the REST server with batch commits (a fixture)


def data_files(ds):
    return sorted(p.name for p in (Path(ds.uri.removeprefix("file://")) / "data").iterdir())


def test_two_tables_commit_together_through_the_namespace(server):
    cat = lh.Catalog({"type": "rest", "uri": server.uri})
    t = make_tables(cat, ["a", "b"])
    with dbapi.connect(driver=driver_path(), db_kwargs={"type": "rest", "uri": server.uri}, autocommit=False) as conn, \
            conn.cursor() as cur:
        cur.adbc_ingest("a", rows(100, 130, "x"), mode="append")
        cur.adbc_ingest("b", rows(500, 520, "x"), mode="append")
        cur.adbc_ingest("a", rows(130, 140, "y"), mode="append")
        assert pylance_ids(server, "a") == (1, list(range(100)))  # nothing visible before the commit
        conn.commit()
        assert pylance_ids(server, "a") == (2, list(range(140)))
        assert pylance_ids(server, "b") == (2, list(range(100)) + list(range(500, 520)))
        # a rollback of two tables leaves both as they were, without the staged files
        before = {k: data_files(v) for k, v in t.items()}
        cur.adbc_ingest("a", rows(900, 910, "z"), mode="append")
        cur.adbc_ingest("b", rows(900, 910, "z"), mode="append")
        conn.rollback()
        assert pylance_ids(server, "a")[0] == 2 and pylance_ids(server, "b")[0] == 2
        assert {k: data_files(v) for k, v in t.items()} == before


def test_tables_a_namespace_cannot_commit_together_are_refused_whole(tmp_path):
    root = tmp_path / "wh"
    for name in ("a", "b"):
        lance.write_dataset(rows(0, 50, "base"), str(root / f"{name}.lance"))
    before = {n: sorted(p.name for p in (root / f"{n}.lance" / "data").iterdir()) for n in ("a", "b")}
    with dbapi.connect(driver=driver_path(), db_kwargs={"root": str(root)}, autocommit=False) as conn, \
            conn.cursor() as cur:
        cur.adbc_ingest("a", rows(50, 60, "x"), mode="append")
        cur.adbc_ingest("b", rows(50, 60, "x"), mode="append")
        with pytest.raises(dbapi.NotSupportedError, match="nothing was committed"):
            conn.commit()
    for n in ("a", "b"):
        assert lance.dataset(str(root / f"{n}.lance")).version == 1
        assert sorted(p.name for p in (root / f"{n}.lance" / "data").iterdir()) == before[n]
