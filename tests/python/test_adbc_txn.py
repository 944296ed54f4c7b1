"""Transactions of the ADBC driver over several tables (issue 63): with autocommit off, ingests
into two tables of a namespace that commits several tables at once (this repo's REST server with
`--batch-commits`) commit together — both tables get their new version or neither does — and
pylance reads both through the namespace; a rollback leaves both as they were and deletes the
staged files. Where the namespace cannot commit tables together (a directory catalog), the
commit is refused whole: nothing committed, the staged files deleted. A commit whose answer is
lost (the server's `--lose-answer-marker` fault) keeps the transaction open with its writes, and
committing again lands them once."""

from pathlib import Path

import pytest

dbapi = pytest.importorskip("adbc_driver_manager.dbapi")
lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")
ln = pytest.importorskip("lance.namespace")

from test_adbc import driver_path  # noqa: E402
import test_multi_table  # noqa: E402
from test_multi_table import make_tables, pylance_ids, pylance_tags, rows  # noqa: E402

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


@pytest.fixture()
def lossy_server(tmp_path):
    """The REST server with batch commits and the lost-answer fault: while `marker` exists, the
    next version committed through the namespace lands, removes the file and answers an error."""
    marker = tmp_path / "lose-next-answer"
    s = test_multi_table.Server(tmp_path / "warehouse", "--batch-commits", "--lose-answer-marker", str(marker))
    s.marker = marker
    try:
        yield s
    finally:
        s.stop()


def test_a_lost_answer_of_one_table_is_resolved_by_the_library(lossy_server):
    """One table: the library's commit finds that its shares landed (the namespace registered
    the version) and answers with that version: no error, the rows once, nothing deleted."""
    server = lossy_server
    cat = lh.Catalog({"type": "rest", "uri": server.uri})
    make_tables(cat, ["a"])
    with dbapi.connect(driver=driver_path(), db_kwargs={"type": "rest", "uri": server.uri}, autocommit=False) as conn, \
            conn.cursor() as cur:
        cur.adbc_ingest("a", rows(100, 130, "x"), mode="append")
        server.marker.touch()
        conn.commit()
        assert not server.marker.exists()  # the fault fired
        assert pylance_ids(server, "a") == (2, list(range(130)))
        cur.adbc_ingest("a", rows(700, 705, "y"), mode="append")
        conn.commit()
        assert pylance_ids(server, "a") == (3, list(range(130)) + list(range(700, 705)))


def test_a_lost_answer_of_two_tables_keeps_the_transaction_open_until_it_lands_once(lossy_server):
    """Before: the driver took the lost answer for a refusal: it answered that nothing was
    committed (a client then ingests the rows again) and ended the transaction."""
    server = lossy_server
    names = ["a", "b"]
    cat = lh.Catalog({"type": "rest", "uri": server.uri})
    make_tables(cat, names)
    with dbapi.connect(driver=driver_path(), db_kwargs={"type": "rest", "uri": server.uri}, autocommit=False) as conn, \
            conn.cursor() as cur:
        for i, name in enumerate(names):
            cur.adbc_ingest(name, rows(100 + 50 * i, 130 + 50 * i, "x"), mode="append")
        server.marker.touch()
        with pytest.raises(dbapi.Error, match="outcome is unknown") as lost:
            conn.commit()
        assert "nothing was committed" not in str(lost.value)
        assert not server.marker.exists()  # the fault fired: the commit landed, its answer did not
        expected = {name: (2, list(range(100)) + list(range(100 + 50 * i, 130 + 50 * i)))
                    for i, name in enumerate(names)}
        # the versions that landed are whole: pylance reads every row of them (their files are there)
        assert {name: pylance_ids(server, name) for name in names} == expected
        # nothing new is taken, and no rollback can take back writes that may have landed
        with pytest.raises(dbapi.Error, match="lost its answer"):
            cur.adbc_ingest("a", rows(900, 910, "z"), mode="append")
        with pytest.raises(dbapi.Error, match="lost its answer"):
            conn.rollback()
        # committing again finds the statements that landed and commits nothing twice
        conn.commit()
        assert {name: pylance_ids(server, name) for name in names} == expected
        # the transaction is over: the next ones commit and roll back as usual
        cur.adbc_ingest("a", rows(700, 705, "y"), mode="append")
        conn.commit()
        assert pylance_ids(server, "a") == (3, expected["a"][1] + list(range(700, 705)))
        cur.adbc_ingest("a", rows(800, 805, "y"), mode="append")
        conn.rollback()
        assert pylance_ids(server, "a")[0] == 3


def test_closing_a_connection_after_a_lost_answer_keeps_what_landed(lossy_server):
    """A table the transaction created and an existing one, committed together; the answer is
    lost and the connection closed: both stay as committed (nothing deleted, nothing dropped).
    Before: closing the connection dropped the created table with its committed rows."""
    server = lossy_server
    cat = lh.Catalog({"type": "rest", "uri": server.uri})
    make_tables(cat, ["a"])
    with dbapi.connect(driver=driver_path(), db_kwargs={"type": "rest", "uri": server.uri}, autocommit=False) as conn, \
            conn.cursor() as cur:
        cur.adbc_ingest("a", rows(100, 120, "x"), mode="append")
        cur.adbc_ingest("fresh", rows(0, 40, "new"), mode="create")
        server.marker.touch()
        with pytest.raises(dbapi.Error, match="outcome is unknown"):
            conn.commit()
    assert pylance_ids(server, "a") == (2, list(range(120)))
    assert pylance_ids(server, "fresh")[1] == list(range(40))
    assert pylance_tags(server, "fresh") == ["new"] * 40
