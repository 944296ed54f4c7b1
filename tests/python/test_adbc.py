"""The ADBC driver (liblance_host_adbc.so) through Python's ADBC driver manager, as an ADBC
client uses it: GetObjects against the catalog, DB-API queries against pylance, partitions read
in spawned processes, bulk ingest and transactions read back by pylance, staged shares of
several workers committed once, and every bad input an ADBC error, never a crash."""

import decimal
import multiprocessing
import os
import re
import struct
from pathlib import Path

import adbc_driver_manager
import adbc_driver_manager.dbapi as dbapi
import lance
import lance.namespace as ns_mod
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_host as lh

REPO = Path(__file__).resolve().parents[2]


def driver_path():
    given = os.environ.get("LANCE_HOST_ADBC_DRIVER")
    if given:
        return given
    lib = os.environ.get("LANCE_HOST_LIB", str(REPO / "build/prefix/lib/liblance_host.so"))
    return str(Path(lib).parent / "liblance_host_adbc.so")


def connect(root, autocommit=True, **extra):
    return dbapi.connect(driver=driver_path(), db_kwargs={"root": str(root), **extra}, autocommit=autocommit)


NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000001))[0]


def edge_rows(start, end):
    """Rows with the edges hosts send: NaN of both signs, ±inf, -0.0, NUL bytes, non-ASCII,
    38-digit decimals, microsecond timestamps, NULLs."""
    n = end - start
    ids = list(range(start, end))
    floats = [[float("nan"), NEG_NAN, float("inf"), float("-inf"), -0.0, 1.5][i % 6] for i in ids]
    texts = [None if i % 7 == 3 else f"z\u00e9\u4e2d{i}\x00end" for i in ids]
    big = decimal.Decimal("9" * 38)
    decs = [big if i % 5 == 0 else decimal.Decimal(i) for i in ids]
    times = pa.array([1_700_000_000_000_001 + i for i in ids], pa.timestamp("us"))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "f": pa.array(floats, pa.float64()),
        "s\u00f8": pa.array(texts, pa.string()),
        "d": pa.array(decs, pa.decimal128(38, 0)),
        "t": times,
    }), n


def same_bits(a, b):
    """Tables equal with floats compared by their bits (NaN sign included)."""
    assert a.schema == b.schema
    for name in a.column_names:
        x, y = a[name].combine_chunks(), b[name].combine_chunks()
        if pa.types.is_floating(x.type):
            assert x.cast(pa.float64()).to_numpy(zero_copy_only=False).tobytes() == \
                y.cast(pa.float64()).to_numpy(zero_copy_only=False).tobytes(), name
        else:
            assert x.equals(y), name


@pytest.fixture()
def warehouse(tmp_path):
    root = tmp_path / "wh"
    root.mkdir()
    table, _ = edge_rows(0, 1000)
    lance.write_dataset(table, str(root / "events.lance"), max_rows_per_file=250)
    return root


def test_declarations_match_the_header():
    """Every function the driver loads has the header's number of arguments."""
    header = (REPO / "include/lance_host.h").read_text()
    api = (REPO / "adbc/src/api.rs").read_text()
    block = api[api.index("library_api! {"):]
    block = block[:block.index("\n}\n")]
    declared = re.findall(r"fn (lance_\w+)\(([^)]*)\)", block)
    assert len(declared) > 30
    for name, args in declared:
        m = re.search(r"\b" + name + r"\(([^)]*)\);", header)
        assert m, f"{name} is not in lance_host.h"
        in_header = 0 if m.group(1).strip() in ("", "void") else m.group(1).count(",") + 1
        in_driver = 0 if not args.strip() else args.count(",") + 1
        assert in_driver == in_header, f"{name}: driver declares {in_driver} arguments, the header {in_header}"


def test_get_objects_equals_the_catalog(tmp_path):
    root = tmp_path / "wh"
    cat = lh.Catalog({"root": str(root)})
    cat.create_namespace(["sales"])
    cat.create_namespace(["sales", "eu"])
    cat.create_table("orders", edge_rows(0, 10)[0], ["sales", "eu"])
    cat.create_table("top", pa.table({"x": pa.array([1], pa.int32())}))
    with connect(root) as conn:
        objects = conn.adbc_get_objects(depth="all").read_all().to_pylist()
        assert [c["catalog_name"] for c in objects] == ["lance"]
        schemas = {s["db_schema_name"]: s["db_schema_tables"] for s in objects[0]["catalog_db_schemas"]}
        assert sorted(schemas) == ["", "sales", "sales.eu"]
        assert [t["table_name"] for t in schemas[""]] == cat.list_tables([]) == ["top"]
        assert schemas["sales"] == []
        orders = schemas["sales.eu"][0]
        assert orders["table_name"] == "orders" and orders["table_type"] == "TABLE"
        expected = cat.open_table("orders", ["sales", "eu"]).schema
        assert [(c["column_name"], c["ordinal_position"]) for c in orders["table_columns"]] == \
            [(f.name, i + 1) for i, f in enumerate(expected)]
        # filters: LIKE patterns on schema, table and column; depths
        only = conn.adbc_get_objects(depth="columns", db_schema_filter="sales%", column_name_filter="s%") \
            .read_all().to_pylist()[0]["catalog_db_schemas"]
        assert [s["db_schema_name"] for s in only] == ["sales", "sales.eu"]
        assert [c["column_name"] for c in only[1]["db_schema_tables"][0]["table_columns"]] == ["s\u00f8"]
        assert [c["ordinal_position"] for c in only[1]["db_schema_tables"][0]["table_columns"]] == [3]
        tables = conn.adbc_get_objects(depth="tables", table_name_filter="t_p").read_all().to_pylist()
        assert [[t["table_name"] for t in s["db_schema_tables"]] for s in tables[0]["catalog_db_schemas"]] == [["top"], [], []]
        assert tables[0]["catalog_db_schemas"][0]["db_schema_tables"][0]["table_columns"] is None
        assert conn.adbc_get_objects(depth="catalogs", catalog_filter="other").read_all().num_rows == 0
        assert conn.adbc_get_table_types() == ["TABLE"]
        assert conn.adbc_get_table_schema("orders", db_schema_filter="sales.eu") == expected
        info = conn.adbc_get_info()
        assert info["vendor_name"] == "lance-host" and info["vendor_version"] == lh.version()


def test_queries_equal_pylance(warehouse):
    py = lance.dataset(str(warehouse / "events.lance"))
    with connect(warehouse) as conn, conn.cursor() as cur:
        cur.execute("SELECT * FROM events")
        same_bits(cur.fetch_arrow_table().sort_by("id"), py.to_table().sort_by("id"))
        cur.execute('select id, "s\u00f8" from events where id >= 100 AND id < 400 and f > 0 LIMIT 1000')
        got = cur.fetch_arrow_table().sort_by("id")
        same_bits(got, py.to_table(columns=["id", "s\u00f8"], filter="id >= 100 AND id < 400 and f > 0").sort_by("id"))
        assert got.num_rows > 0
        cur.execute("SELECT id FROM events LIMIT 7")
        assert cur.fetch_arrow_table().num_rows == 7
        # a table named by statement options, at an older version
        lance.write_dataset(edge_rows(1000, 1010)[0], str(warehouse / "events.lance"), mode="append")
        stmt = cur.adbc_statement
        stmt.set_options(**{"lance_host.table": "events", "lance_host.version": "1", "lance_host.columns": "id,d",
                            "lance_host.filter": "id % 2 = 0"})
        reader, _ = stmt.execute_query()
        got = pa.RecordBatchReader._import_from_c(reader.address).read_all().sort_by("id")
        same_bits(got, lance.dataset(str(warehouse / "events.lance"), version=1)
                  .to_table(columns=["id", "d"], filter="id % 2 = 0").sort_by("id"))
        # the same statement runs SQL next: the version option stays and applies to it ...
        cur.execute("SELECT id FROM events WHERE id >= 990")
        assert sorted(cur.fetch_arrow_table()["id"].to_pylist()) == list(range(990, 1000))
        # ... until set back to the latest
        stmt.set_options(**{"lance_host.version": "0"})
        cur.execute("SELECT id FROM events WHERE id >= 990")
        assert sorted(cur.fetch_arrow_table()["id"].to_pylist()) == list(range(990, 1010))


def _read_partition(args):
    root, partition = args
    with connect(root) as conn, conn.cursor() as cur:
        cur.adbc_read_partition(partition)
        table = cur.fetch_arrow_table()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def test_partitions_read_in_spawned_processes_equal_pylance(warehouse):
    py = lance.dataset(str(warehouse / "events.lance"))
    with connect(warehouse) as conn, conn.cursor() as cur:
        parts, schema = cur.adbc_execute_partitions("SELECT id, f, d FROM events WHERE id % 3 = 1")
        assert len(parts) == len(py.get_fragments()) == 4
        assert [(f.name, f.type) for f in schema] == [(py.schema.field(n).name, py.schema.field(n).type) for n in ["id", "f", "d"]]
        with pytest.raises(dbapi.NotSupportedError, match="LIMIT"):
            cur.adbc_execute_partitions("SELECT id FROM events LIMIT 5")
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pieces = pool.map(_read_partition, [(str(warehouse), p) for p in parts])
    merged = pa.concat_tables(pa.ipc.open_stream(b).read_all() for b in pieces).sort_by("id")
    same_bits(merged, py.to_table(columns=["id", "f", "d"], filter="id % 3 = 1").sort_by("id"))
    # damaged partition bytes are an ADBC error
    with connect(warehouse) as conn, conn.cursor() as cur:
        broken = bytearray(parts[0])
        broken[len(broken) // 2] ^= 0x55
        with pytest.raises(dbapi.DatabaseError, match="checksum|not a partition"):
            cur.adbc_read_partition(bytes(broken))
        with pytest.raises(dbapi.DatabaseError):
            cur.adbc_read_partition(b"")


def test_ingest_autocommit_one_version_each_and_pylance_reads(tmp_path):
    root = tmp_path / "wh"
    lh.Catalog({"root": str(root)}).create_namespace(["raw"])
    first, n1 = edge_rows(0, 300)
    second, n2 = edge_rows(300, 350)
    with connect(root) as conn, conn.cursor() as cur:
        assert cur.adbc_ingest("facts", first, mode="create", db_schema_name="raw") == n1
        with pytest.raises(dbapi.ProgrammingError, match="already exists"):
            cur.adbc_ingest("facts", first, mode="create", db_schema_name="raw")
        assert cur.adbc_ingest("facts", second, mode="append", db_schema_name="raw") == n2
        with pytest.raises(dbapi.ProgrammingError, match="does not exist"):
            cur.adbc_ingest("nothing", second, mode="append", db_schema_name="raw")
        # a batch of another schema is refused with the table untouched
        with pytest.raises(dbapi.DatabaseError):
            cur.adbc_ingest("facts", pa.table({"other": [1]}), mode="append", db_schema_name="raw")
    location = ns_mod.DirectoryNamespace(root=str(root)).describe_table(
        ns_mod.DescribeTableRequest(id=["raw", "facts"])).location
    py = lance.dataset(location)
    assert py.version == 2
    same_bits(py.to_table().sort_by("id"), pa.concat_tables([first, second]).sort_by("id"))
    with connect(root) as conn, conn.cursor() as cur:
        assert cur.adbc_ingest("facts", second, mode="replace", db_schema_name="raw") == n2
        assert cur.adbc_ingest("facts", first, mode="create_append", db_schema_name="raw") == n1
    py = lance.dataset(location)
    assert py.version == 4
    same_bits(py.to_table().sort_by("id"), pa.concat_tables([first, second]).sort_by("id"))


def test_manual_commit_several_ingests_one_version_and_rollback(tmp_path):
    root = tmp_path / "wh"
    base, _ = edge_rows(0, 100)
    lance.write_dataset(base, str(root / "t.lance"))
    a, _ = edge_rows(100, 150)
    b, _ = edge_rows(150, 230)
    with connect(root, autocommit=False) as conn, conn.cursor() as cur:
        cur.adbc_ingest("t", a, mode="append")
        cur.adbc_ingest("t", b, mode="append")
        assert lance.dataset(str(root / "t.lance")).version == 1  # nothing visible before the commit
        conn.commit()
        py = lance.dataset(str(root / "t.lance"))
        assert py.version == 2
        same_bits(py.to_table().sort_by("id"), pa.concat_tables([base, a, b]).sort_by("id"))
        # a rollback leaves the table as it was and deletes the staged files
        files_before = sorted(p.name for p in (root / "t.lance" / "data").iterdir())
        cur.adbc_ingest("t", a, mode="append")
        conn.rollback()
        assert lance.dataset(str(root / "t.lance")).version == 2
        assert sorted(p.name for p in (root / "t.lance" / "data").iterdir()) == files_before
        # a table created in a transaction that rolls back is gone again
        cur.adbc_ingest("fresh", a, mode="create")
        conn.rollback()
        assert lh.Catalog({"root": str(root)}).list_tables([]) == ["t"]
        # ... and one that commits holds the rows
        cur.adbc_ingest("fresh", a, mode="create")
        conn.commit()
        same_bits(lance.dataset(str(root / "fresh.lance")).to_table().sort_by("id"), a.sort_by("id"))
        # two tables in one transaction: refused whole, nothing committed
        cur.adbc_ingest("t", a, mode="append")
        cur.adbc_ingest("fresh", b, mode="append")
        with pytest.raises(dbapi.NotSupportedError, match="one table"):
            conn.commit()
        assert lance.dataset(str(root / "t.lance")).version == 2
        assert lance.dataset(str(root / "fresh.lance")).count_rows() == a.num_rows
    # closing a connection with staged rows discards them
    conn = connect(root, autocommit=False)
    cur = conn.cursor()
    cur.adbc_ingest("t", b, mode="append")
    cur.close()
    conn.close()
    assert lance.dataset(str(root / "t.lance")).version == 2


def _stage_share(args):
    root, rows = args
    table, _ = edge_rows(*rows)
    with connect(root) as conn, conn.cursor() as cur:
        stmt = cur.adbc_statement
        stmt.set_options(**{"adbc.ingest.target_table": "t", "adbc.ingest.mode": "adbc.ingest.mode.append",
                            "lance_host.ingest.stage": "true"})
        stmt.bind_stream(table.to_reader())
        assert stmt.execute_update() == table.num_rows
        return stmt.get_option_bytes("lance_host.ingest.share")


def test_staged_shares_of_workers_commit_once(tmp_path):
    root = tmp_path / "wh"
    base, _ = edge_rows(0, 10)
    lance.write_dataset(base, str(root / "t.lance"))
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        shares = pool.map(_stage_share, [(str(root), (10, 60)), (str(root), (60, 200))])
    assert lance.dataset(str(root / "t.lance")).version == 1

    def commit():
        with connect(root) as conn, conn.cursor() as cur:
            stmt = cur.adbc_statement
            stmt.set_options(**{"adbc.ingest.target_table": "t", "lance_host.statement_id": "job-7"})
            for s in shares:
                stmt.set_options(**{"lance_host.ingest.add_share": s})
            return stmt.execute_update()

    assert commit() == 190
    assert commit() == 190  # a retried commit of the same statement commits nothing more
    py = lance.dataset(str(root / "t.lance"))
    assert py.version == 2
    same_bits(py.to_table().sort_by("id"), edge_rows(0, 200)[0].sort_by("id"))


def test_bad_inputs_are_adbc_errors(tmp_path, warehouse):
    with pytest.raises(dbapi.DatabaseError):
        dbapi.connect(driver=driver_path(), db_kwargs={"root": str(warehouse), "no_such_property": "x"})
    with pytest.raises(dbapi.NotSupportedError):
        dbapi.connect(driver=driver_path(), db_kwargs={"adbc.unknown": "x"})
    with connect(warehouse) as conn, conn.cursor() as cur:
        for sql, error in [
            ("SELECT sum(id) FROM events", dbapi.NotSupportedError),
            ("SELECT id FROM events GROUP BY id", dbapi.NotSupportedError),
            ("SELECT id FROM events a JOIN events b", dbapi.NotSupportedError),
            ("SELECT id FROM events LIMIT -3", dbapi.ProgrammingError),
            ("SELECT id", dbapi.ProgrammingError),
        ]:
            with pytest.raises(error):
                cur.execute(sql)
        with pytest.raises(dbapi.ProgrammingError, match="nope"):
            cur.execute("SELECT nope FROM events")
            cur.fetchall()
        with pytest.raises(dbapi.DatabaseError, match="no_table"):
            cur.execute("SELECT * FROM no_table")
        with pytest.raises(dbapi.DatabaseError, match="no_such_col"):
            cur.execute("SELECT * FROM events WHERE no_such_col > 1")
            cur.fetchall()
        stmt = cur.adbc_statement
        with pytest.raises(dbapi.NotSupportedError, match="unknown statement option"):
            stmt.set_options(**{"lance_host.colums": "id"})
        with pytest.raises(dbapi.ProgrammingError, match="non-negative"):
            stmt.set_options(**{"lance_host.version": "-1"})
        with pytest.raises(dbapi.NotSupportedError, match="Substrait"):
            stmt.set_substrait_plan(b"\x00\x01")
        # the library's error code travels in the error
        try:
            cur.execute("SELECT * FROM events", parameters=None)
            cur.adbc_statement.set_options(**{"lance_host.table": "events", "lance_host.version": "99"})
            cur.adbc_statement.execute_query()
        except dbapi.DatabaseError as e:
            assert "LANCE_ERR_NOT_FOUND" in str(e)
            details = dict(e.details)
            assert details[b"lance_host.error_code"] == b"LANCE_ERR_NOT_FOUND"
            assert details[b"lance_host.error_number"] == b"2"
        else:
            raise AssertionError("a missing version was not refused")
        # the same cursor keeps working after errors
        cur.adbc_statement.set_options(**{"lance_host.version": "0"})
        cur.execute("SELECT id FROM events LIMIT 3")
        assert cur.fetch_arrow_table().num_rows == 3


def test_driver_manager_loads_by_entrypoint(warehouse):
    """The low-level driver manager finds the driver's own entry point too."""
    db = adbc_driver_manager.AdbcDatabase(driver=driver_path(), entrypoint="AdbcLanceHostInit", root=str(warehouse))
    conn = adbc_driver_manager.AdbcConnection(db)
    stmt = adbc_driver_manager.AdbcStatement(conn)
    stmt.set_sql_query("SELECT id FROM events WHERE id < 5")
    stream, _ = stmt.execute_query()
    got = pa.RecordBatchReader._import_from_c(stream.address).read_all()
    assert sorted(got["id"].to_pylist()) == [0, 1, 2, 3, 4]
    stmt.close()
    conn.close()
    db.close()
    assert pc.sum(got["id"]).as_py() == 10
