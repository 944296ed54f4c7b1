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
import numpy as np
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


MIRRORS = {"ScanOptions": "LanceScanOptions", "WriteParams": "LanceWriteParams", "WriteResult": "LanceWriteResult",
           "AggregateSpec": "LanceAggregateSpec", "VectorQuery": "LanceVectorQuery",
           "FragmentStats": "LanceFragmentStats", "ColumnStats": "LanceColumnStats"}


def test_struct_mirrors_match_the_header():
    """Every `#[repr(C)]` struct the driver declares is the header's struct, field by field in
    order (a prefix of it: sized structs only grow at the end, and the driver passes its size)."""
    header = (REPO / "include/lance_host.h").read_text()
    api = (REPO / "adbc/src/api.rs").read_text()
    for ours, theirs in MIRRORS.items():
        end = header.index("} " + theirs + ";")
        body = header[header.rindex("typedef struct {", 0, end) + len("typedef struct {"):end]
        c_fields = [re.search(r"(\w+)(\[\d+\])?;$", line.strip()).group(1)
                    for line in body.splitlines() if line.strip() and not line.strip().startswith("//")]
        rust = re.search(r"pub struct " + ours + r" \{\n(.*?)\n\}", api, re.S)
        assert rust, ours
        r_fields = re.findall(r"^\s*pub (\w+):", rust.group(1), re.M)
        assert len(r_fields) >= 3 and c_fields[:len(r_fields)] == r_fields, (ours, r_fields, c_fields)


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
        # a well-formed descriptor whose split reads another table than the one it names: the
        # credentials the catalog gives for the named table are not used for the other one
        lance.write_dataset(edge_rows(0, 10)[0], str(warehouse / "other.lance"))
        foreign = bytes(lh.open(str(warehouse / "other.lance")).plan_scan(0)[0])
        with pytest.raises(dbapi.ProgrammingError, match="but its table is at"):
            cur.adbc_read_partition(forged_partition("events", foreign))


def forged_partition(table, split, token=None):
    """A partition descriptor in the driver's documented layout (adbc/src/partition.rs): format
    1 without a token, format 2 with one."""
    def run(b):
        return struct.pack("<I", len(b)) + b
    magic = b"LHADBC\x01" if token is None else b"LHADBC\x02"
    body = magic + struct.pack("<I", 0) + run(table.encode()) + b"\x00\x00\x00" + run(split)
    if token is not None:
        body += b"\x01" + run(token)
    h = 0xcbf29ce484222325
    for c in body:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return body + struct.pack("<Q", h)


def test_scan_partitions_carry_their_split_scoped_snapshot(warehouse):
    """A scan partition carries its split's own snapshot token: reading it needs no manifest
    from storage — it still reads the pinned version after that version's manifest is gone —
    and a token of another table beside the split is refused."""
    uri = str(warehouse / "events.lance")
    want = lance.dataset(uri).to_table(columns=["id", "f"], filter="id > 600").sort_by("id")
    with connect(warehouse) as conn, conn.cursor() as cur:
        parts, _ = cur.adbc_execute_partitions("SELECT id, f FROM events WHERE id > 600")
    assert all(p.startswith(b"LHADBC\x02") for p in parts)
    versions = Path(uri) / "_versions"
    pinned = set(os.listdir(versions))
    lance.write_dataset(edge_rows(1000, 1010)[0], uri, mode="append")  # the table moves on
    for name in pinned:
        os.remove(versions / name)  # and the pinned version's manifest goes
    with pytest.raises(Exception):
        lance.dataset(uri, version=1)
    with connect(warehouse) as conn, conn.cursor() as cur:
        got = []
        for p in parts:
            cur.adbc_read_partition(p)
            got.append(cur.fetch_arrow_table())
        same_bits(pa.concat_tables(got).sort_by("id"), want)
        lance.write_dataset(edge_rows(0, 10)[0], str(warehouse / "other.lance"))
        other = lh.open(str(warehouse / "other.lance"))
        foreign_token = other.export_split_snapshot(other.plan_scan(0)[0])
        split = bytes(lh.open(uri).plan_scan(0)[0])
        with pytest.raises(dbapi.ProgrammingError, match="split belongs to table"):
            cur.adbc_read_partition(forged_partition("events", split, foreign_token))
            cur.fetch_arrow_table()


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
        # two tables of a directory catalog in one transaction: refused whole, nothing committed
        # (a namespace that commits tables together commits them: test_adbc_txn.py)
        cur.adbc_ingest("t", a, mode="append")
        cur.adbc_ingest("fresh", b, mode="append")
        with pytest.raises(dbapi.NotSupportedError, match="nothing was committed"):
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
            stmt.set_options(**{"adbc.ingest.target_table": "t", "lance_host.statement_id": "job-6"})
            for s in shares:
                stmt.set_options(**{"lance_host.ingest.add_share": s})
            return stmt.execute_update()

    # a commit that fails keeps its shares on the statement: the retry commits them
    with connect(root) as conn, conn.cursor() as cur:
        stmt = cur.adbc_statement
        stmt.set_options(**{"adbc.ingest.target_table": "t", "lance_host.statement_id": "job-6",
                            "lance_host.commit_message": "retried"})
        for s in shares:
            stmt.set_options(**{"lance_host.ingest.add_share": s})
        os.rename(root / "t.lance", root / "moved.lance")  # the table is gone for a moment
        with pytest.raises(dbapi.Error):
            stmt.execute_update()
        os.rename(root / "moved.lance", root / "t.lance")
        assert stmt.execute_update() == 190
    assert lance.dataset(str(root / "t.lance")).version == 2

    assert commit() == 190  # the same statement again (a lost answer): nothing more is written
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
        with pytest.raises(dbapi.ProgrammingError, match="not a Substrait plan"):
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


# ---- Substrait plans ---------------------------------------------------------------------------

from substrait.proto import (  # noqa: E402
    AggregateFunction, AggregateRel, Expression, FetchRel, FilterRel, FunctionArgument, ProjectRel, Rel, SortRel, Type)
from substrait_plans import pyarrow_filter, sx_call, sx_field, sx_measure, sx_plan, sx_read  # noqa: E402


def test_substrait_filter_and_aggregate_equal_pyarrow(warehouse):
    py_table = lance.dataset(str(warehouse / "events.lance")).to_table()
    schema = py_table.schema
    cond = (pc.field("id") > 100) & (pc.field("f") < 2.0)  # f holds NaN of both signs: IEEE, as pyarrow
    filter_expr, functions = pyarrow_filter(cond, schema)
    functions.update({100: "count", 101: "sum", 102: "min", 103: "max", 104: "avg", 105: "multiply"})
    i = {n: k for k, n in enumerate(schema.names)}
    # SELECT s, count(*), sum(d), min(id), max(t), avg(f), count(DISTINCT id), sum(f * 2.0) ... GROUP BY (id % 3 via s?)
    project = ProjectRel(input=Rel(filter=FilterRel(input=sx_read("events", schema), condition=filter_expr)),
                         expressions=[sx_call(105, sx_field(i["f"]), Expression(literal=Expression.Literal(fp64=2.0)))])
    measure = lambda anchor, *args, distinct=False: AggregateRel.Measure(measure=AggregateFunction(  # noqa: E731
        function_reference=anchor, arguments=[FunctionArgument(value=a) for a in args],
        invocation=AggregateFunction.AGGREGATION_INVOCATION_DISTINCT if distinct else
        AggregateFunction.AGGREGATION_INVOCATION_ALL))
    agg = AggregateRel(input=Rel(project=project), grouping_expressions=[sx_field(i["s\u00f8"])],
                       groupings=[AggregateRel.Grouping(expression_references=[0])],
                       measures=[measure(100), measure(101, sx_field(i["id"])), measure(102, sx_field(i["id"])),
                                 measure(103, sx_field(i["t"])), measure(104, sx_field(i["f"])),
                                 measure(100, sx_field(i["id"]), distinct=True),
                                 measure(101, sx_field(len(schema)))])
    names = ["s", "n", "sum_id", "min_id", "max_t", "avg_f", "ids", "sum_f2"]
    plan = sx_plan(Rel(aggregate=agg), names, functions)
    with connect(warehouse) as conn, conn.cursor() as cur:
        cur.execute(plan.SerializeToString())
        got = cur.fetch_arrow_table()
    assert got.column_names == names
    rows_ = py_table.filter(cond)
    rows_ = rows_.append_column("f2", pc.multiply(rows_["f"], 2.0))
    want = rows_.group_by("s\u00f8").aggregate([([], "count_all"), ("id", "sum"), ("id", "min"), ("t", "max"),
                                                 ("f", "mean"), ("id", "count_distinct"), ("f2", "sum")])
    want = {r["s\u00f8"]: r for r in want.to_pylist()}
    assert got.num_rows == len(want) > 1
    for r in got.to_pylist():
        w = want[r["s"]]
        assert (r["n"], r["sum_id"], r["min_id"], r["max_t"], r["ids"]) == \
            (w["count_all"], w["id_sum"], w["id_min"], w["t_max"], w["id_count_distinct"])
        for a, b in [(r["avg_f"], w["f_mean"]), (r["sum_f2"], w["f2_sum"])]:
            assert a == pytest.approx(b, rel=1e-12) or (a != a and b != b)


def test_substrait_grouping_by_an_expression_equals_pyarrow(warehouse):
    py_table = lance.dataset(str(warehouse / "events.lance")).to_table()
    schema = py_table.schema
    key, functions = pyarrow_filter(pc.field("id") > 500, schema)  # a boolean key: id > 500
    functions.update({100: "count", 101: "sum"})
    i = {n: k for k, n in enumerate(schema.names)}
    agg = AggregateRel(input=sx_read("events", schema), grouping_expressions=[key],
                       groupings=[AggregateRel.Grouping(expression_references=[0])],
                       measures=[AggregateRel.Measure(measure=AggregateFunction(function_reference=100)),
                                 AggregateRel.Measure(measure=AggregateFunction(
                                     function_reference=101, arguments=[FunctionArgument(value=sx_field(i["id"]))]))])
    with connect(warehouse) as conn, conn.cursor() as cur:
        cur.execute(sx_plan(Rel(aggregate=agg), ["big", "n", "sum_id"], functions).SerializeToString())
        got = {r["big"]: (r["n"], r["sum_id"]) for r in cur.fetch_arrow_table().to_pylist()}
    keyed = py_table.append_column("big", pc.greater(py_table["id"], 500))
    want = {r["big"]: (r["count_all"], r["id_sum"])
            for r in keyed.group_by("big").aggregate([([], "count_all"), ("id", "sum")]).to_pylist()}
    assert got == want and len(want) == 2


def test_substrait_scan_plans_and_partitions(warehouse):
    py_table = lance.dataset(str(warehouse / "events.lance")).to_table()
    schema = py_table.schema
    cond = pc.field("s\u00f8").is_valid() & (pc.field("id") >= 500)
    filter_expr, functions = pyarrow_filter(cond, schema)
    read = sx_read("events", schema, filter_expr=filter_expr, project=[0, 3])  # id, d
    want = py_table.filter(cond).select(["id", "d"])
    with connect(warehouse) as conn, conn.cursor() as cur:
        cur.execute(sx_plan(read, ["key", "amount"], functions).SerializeToString())
        got = cur.fetch_arrow_table()
        assert got.column_names == ["key", "amount"]
        assert got.rename_columns(["id", "d"]).sort_by("id").equals(want.sort_by("id"))
        fetch = Rel(fetch=FetchRel(input=read, count_expr=Expression(literal=Expression.Literal(i64=7))))
        cur.execute(sx_plan(fetch, [], functions).SerializeToString())
        limited = cur.fetch_arrow_table()
        assert limited.num_rows == 7 and set(limited["id"].to_pylist()) <= set(want["id"].to_pylist())
        parts, part_schema = cur.adbc_execute_partitions(sx_plan(read, [], functions).SerializeToString())
        merged = []
        for p in parts:
            cur.adbc_read_partition(p)
            merged.append(cur.fetch_arrow_table())
        assert pa.concat_tables(merged).sort_by("id").equals(want.sort_by("id"))


def test_substrait_plans_take_the_tables_column_types_not_the_declared_ones(warehouse):
    """A plan declaring the float column `f` (NaN of both signs) an integer: `f < 2.0` still
    leaves every NaN out, as pyarrow does; an integer column declared a double still has its
    arithmetic refused; a column the table lacks is refused."""
    py_table = lance.dataset(str(warehouse / "events.lance")).to_table()
    schema = py_table.schema
    i = {n: k for k, n in enumerate(schema.names)}
    as_int = {"f": Type(i64=Type.I64())}
    cond = sx_call(1, sx_field(i["f"]), Expression(literal=Expression.Literal(fp64=2.0)))
    scan = Rel(filter=FilterRel(input=sx_read("events", schema, types=as_int), condition=cond))
    count = Rel(aggregate=AggregateRel(input=scan, measures=[sx_measure(2)]))
    want = py_table.filter(pc.less(py_table["f"], 2.0))
    assert pc.sum(pc.is_nan(py_table["f"])).as_py() > 0
    with connect(warehouse) as conn, conn.cursor() as cur:
        cur.execute(sx_plan(scan, [], {1: "lt"}).SerializeToString())
        assert sorted(cur.fetch_arrow_table()["id"].to_pylist()) == sorted(want["id"].to_pylist())
        cur.execute(sx_plan(count, ["n"], {1: "lt", 2: "count"}).SerializeToString())
        assert cur.fetch_arrow_table().to_pylist() == [{"n": want.num_rows}]
        wraps = Rel(project=ProjectRel(input=sx_read("events", schema, types={"id": Type(fp64=Type.FP64())}),
                                       expressions=[sx_call(3, sx_field(i["id"]), sx_field(i["id"]))]))
        with pytest.raises(dbapi.NotSupportedError, match="integer arithmetic"):
            cur.execute(sx_plan(Rel(aggregate=AggregateRel(input=wraps, measures=[sx_measure(4, sx_field(len(schema)))])),
                                [], {3: "add", 4: "sum"}).SerializeToString())
            cur.fetchall()
        missing = schema.append(pa.field("nope", pa.int64()))
        with pytest.raises(dbapi.ProgrammingError, match="`nope`, which is not a column"):
            cur.execute(sx_plan(sx_read("events", missing), [], {}).SerializeToString())
            cur.fetchall()


def test_substrait_refusals_are_adbc_errors(warehouse):
    schema = lance.dataset(str(warehouse / "events.lance")).schema
    read = sx_read("events", schema)
    cases = [
        (Rel(sort=SortRel(input=read)), {}, "SortRel"),
        (Rel(project=ProjectRel(input=read, expressions=[sx_call(1, sx_field(0), sx_field(0))])), {1: "add"},
         "integer arithmetic"),
        (Rel(filter=FilterRel(input=read, condition=sx_call(1, sx_field(0)))), {1: "sqrt"}, "sqrt"),
        (Rel(filter=FilterRel(input=read, condition=sx_call(9, sx_field(0)))), {1: "gt"}, "not declared"),
    ]
    with connect(warehouse) as conn, conn.cursor() as cur:
        for rel, functions, message in cases:
            with pytest.raises(dbapi.Error, match=message):
                cur.execute(sx_plan(rel, [], functions).SerializeToString())
                cur.fetchall()
        with pytest.raises(dbapi.ProgrammingError, match="not a Substrait plan"):
            cur.execute(b"\xff\x00garbage")
        agg = AggregateRel(input=read, measures=[AggregateRel.Measure(measure=AggregateFunction(function_reference=1))])
        with pytest.raises(dbapi.NotSupportedError, match="aggregate plan"):
            cur.adbc_execute_partitions(sx_plan(Rel(aggregate=agg), [], {1: "count"}).SerializeToString())
        cur.execute(sx_plan(Rel(aggregate=agg), ["n"], {1: "count"}).SerializeToString())
        assert cur.fetch_arrow_table().to_pylist() == [{"n": 1000}]
        # a 38-digit decimal sum beyond decimal128(38) is refused, never wrapped
        d = schema.names.index("d")
        total = AggregateRel(input=read, measures=[AggregateRel.Measure(measure=AggregateFunction(
            function_reference=1, arguments=[FunctionArgument(value=sx_field(d))]))])
        with pytest.raises(dbapi.Error, match="LANCE_ERR_OUT_OF_RANGE"):
            cur.execute(sx_plan(Rel(aggregate=total), [], {1: "sum"}).SerializeToString())
            cur.fetchall()


# ---- vector search -----------------------------------------------------------------------------

DIM = 16


def vector_rows(start, end):
    rng = np.random.default_rng(start)
    return pa.table({
        "id": pa.array(range(start, end), pa.int64()),
        "cat": pa.array(["abc"[i % 3] for i in range(start, end)]),
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(rng.random((end - start) * DIM, dtype=np.float32)), DIM),
    })


@pytest.fixture()
def vectors(tmp_path):
    root = tmp_path / "wh"
    uri = str(root / "vecs.lance")
    ds = lance.write_dataset(vector_rows(0, 2000), uri, max_rows_per_file=500)
    ds.create_index("emb", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=4)
    lance.write_dataset(vector_rows(2000, 2300), uri, mode="append")  # an unindexed tail
    return root, uri


def search_options(query, **extra):
    opts = {"lance_host.table": "vecs", "lance_host.vector.column": "emb",
            "lance_host.vector.query": ",".join(repr(float(x)) for x in query)}
    opts.update({f"lance_host.vector.{k}": str(v) for k, v in extra.items()})
    return opts


def test_vector_search_partitions_merge_to_pylance(vectors):
    root, uri = vectors
    query = np.random.default_rng(7).random(DIM, dtype=np.float32)
    want = lance.dataset(uri).to_table(nearest={"column": "emb", "q": query, "k": 10, "use_index": False},
                                       columns=["id", "cat"])
    with connect(root) as conn, conn.cursor() as cur:
        stmt = cur.adbc_statement
        stmt.set_options(**search_options(query, k=10, use_index="false"), **{"lance_host.columns": "id,cat",
                                                                               "lance_host.filter": "id >= 0"})
        reader, _ = stmt.execute_query()
        whole = pa.RecordBatchReader._import_from_c(reader.address).read_all()
        assert whole["id"].to_pylist() == want["id"].to_pylist()
        assert np.allclose(whole["_distance"].to_numpy(), want["_distance"].to_numpy(), rtol=1e-5)
        parts, handle, _ = stmt.execute_partitions()
        schema = pa.Schema._import_from_c(handle.address)
        assert len(parts) == 5  # exact: one flat piece per fragment
        pieces = []
        for p in parts:
            cur.adbc_read_partition(p)
            piece = cur.fetch_arrow_table()
            assert piece.schema.names == schema.names == ["id", "cat", "_distance", "_rowid"]
            pieces.append(piece)
        merged = pa.concat_tables(pieces).sort_by([("_distance", "ascending"), ("_rowid", "ascending")]).slice(0, 10)
        assert merged["id"].to_pylist() == want["id"].to_pylist()
        # partition_rows groups the flat pieces: fragments of 500, 500, 500, 500, 300 rows in pieces
        # of at least 1,000 rows: 1,000, 1,000, 300
        stmt.set_options(**{"lance_host.partition_rows": "1000"})
        assert len(stmt.execute_partitions()[0]) == 3
        stmt.set_options(**{"lance_host.partition_rows": "0"})
        # with the index: one partition per index segment plus the unindexed tail, merged to the
        # same top 10 as ExecuteQuery; refined distances are the exact ones
        stmt.set_options(**search_options(query, k=10, use_index="true", nprobes=4, refine=20))
        reader, _ = stmt.execute_query()
        ann = pa.RecordBatchReader._import_from_c(reader.address).read_all()
        parts = stmt.execute_partitions()[0]
        assert len(parts) == 2
        pieces = []
        for p in parts:
            cur.adbc_read_partition(p)
            pieces.append(cur.fetch_arrow_table())
        merged = pa.concat_tables(pieces).sort_by([("_distance", "ascending"), ("_rowid", "ascending")]).slice(0, 10)
        assert merged["id"].to_pylist() == ann["id"].to_pylist()
        table = lance.dataset(uri).to_table(columns=["id", "emb"]).sort_by("id")
        embs = np.stack(table["emb"].to_numpy(zero_copy_only=False))
        exact = ((embs[ann["id"].to_numpy()] - query) ** 2).sum(axis=1)
        assert np.allclose(ann["_distance"].to_numpy(), exact, rtol=1e-4)
        # the query as float32 bytes works the same
        stmt.set_options(**{"lance_host.vector.use_index": "false"})
        stmt.set_options(**{"lance_host.vector.query": query.astype("<f4").tobytes()})
        reader, _ = stmt.execute_query()
        assert pa.RecordBatchReader._import_from_c(reader.address).read_all()["id"].to_pylist() == want["id"].to_pylist()
        for bad, message in [({"lance_host.vector.query": "1,x"}, "numbers"), ({"lance_host.vector.k": "0"}, "at least 1"),
                             ({"lance_host.vector.metric": "manhattan"}, "l2, cosine"),
                             ({"lance_host.vector.query": b"\x00\x00\x80"}, "float32")]:
            with pytest.raises(dbapi.ProgrammingError, match=message):
                stmt.set_options(**bad)
        # refused values left the statement as it was: the same search runs
        reader, _ = stmt.execute_query()
        assert pa.RecordBatchReader._import_from_c(reader.address).read_all()["id"].to_pylist() == want["id"].to_pylist()
        stmt.set_options(**{"lance_host.vector.query": "1,2,3"})  # a wrong dimension: the library says so
        with pytest.raises(dbapi.Error, match="dimension"):
            stmt.execute_query()


def test_get_statistics_row_counts_and_widths(warehouse):
    uri = str(warehouse / "events.lance")
    lance.dataset(uri).delete("id < 100")  # deleted rows do not count
    lh.Catalog({"root": str(warehouse)}).create_namespace(["ns"])
    lance.write_dataset(edge_rows(0, 10)[0], str(warehouse / "other.lance"))
    with connect(warehouse) as conn:
        exact = conn.adbc_get_statistics(approximate=False).read_all().to_pylist()
        assert [c["catalog_name"] for c in exact] == ["lance"]
        by_schema = {s["db_schema_name"]: s["db_schema_statistics"] for s in exact[0]["catalog_db_schemas"]}
        assert sorted(by_schema) == ["", "ns"] and by_schema["ns"] == []  # the namespace holds no table
        rows = {(s["table_name"], s["column_name"], s["statistic_key"]): (s["statistic_value"], s["statistic_is_approximate"])
                for s in by_schema[""]}
        assert rows == {("events", None, 6): (lance.dataset(uri).count_rows(), False),
                        ("other", None, 6): (10, False)}
        approx = conn.adbc_get_statistics(table_name_filter="ev%", approximate=True).read_all().to_pylist()
        stats = approx[0]["catalog_db_schemas"][0]["db_schema_statistics"]
        widths = {s["column_name"]: s["statistic_value"] for s in stats if s["statistic_key"] == 0}
        assert sorted(widths) == sorted(lance.dataset(uri).schema.names)
        assert all(w > 0 for w in widths.values())
        # encoded column bytes of the visible rows' files: no more than the data files hold
        on_disk = sum(p.stat().st_size for p in (warehouse / "events.lance" / "data").iterdir())
        assert sum(widths.values()) * lance.dataset(uri).count_rows() <= on_disk
        assert all(s["statistic_is_approximate"] for s in stats if s["statistic_key"] == 0)
        assert conn.adbc_get_statistics(catalog_filter="nope").read_all().num_rows == 0
        assert conn.adbc_get_statistic_names().read_all().num_rows == 0
