"""Runtime filters (issue 60): what a back end learns after the plan — a join's build-side key
set given as an Arrow array (`keys=`), and a SQL filter of its own ANDed onto the front end's
Substrait filter — on whole scans and on split scans, with pylance's answer to the same
predicate written out as the judge."""

import pyarrow as pa
import pyarrow.compute as pc
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")

# an exception in a finalizer (the exported keys' release) fails the test instead of a warning
pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("rf") / "t.lance")
    n = 6000
    lance.write_dataset(pa.table({
        "id": pa.array(range(n), pa.int64()),
        "name": pa.array([None if i % 13 == 0 else f"n{i % 200}" for i in range(n)]),
        "price": pa.array([(i % 101) * 0.5 for i in range(n)], pa.float64()),
    }), uri, max_rows_per_file=1500)
    return uri


def pylance_ids(uri, sql):
    return sorted(lance.dataset(uri).to_table(columns=["id"], filter=sql)["id"].to_pylist())


def ids(reader):
    return sorted(reader.read_all()["id"].to_pylist())


def test_key_set_equals_pylance_in_list(table):
    keys = [5, 17, 17, 999, 4242, 5999, 123456, -1]
    ds = lh.open(table)
    want = pylance_ids(table, "id IN (5, 17, 999, 4242, 5999, 123456, -1)")
    assert ids(ds.scan(["id"], keys=("id", pa.array(keys, pa.int64())))) == want
    # another integer type casts exactly; a Python list is typed by pyarrow
    assert ids(ds.scan(["id"], keys=("id", pa.array(keys, pa.int32())))) == want
    assert ids(ds.scan(["id"], keys=("id", keys))) == want
    # ANDed with the SQL filter
    assert ids(ds.scan(["id"], filter="id > 100", keys=("id", keys))) == [i for i in want if i > 100]


def test_string_keys_with_nulls_and_an_empty_set(table):
    ds = lh.open(table)
    got = ids(ds.scan(["id"], keys=("name", pa.array(["n7", None, "n199", "absent"]))))
    assert got == pylance_ids(table, "name IN ('n7', 'n199', 'absent')")
    assert ids(ds.scan(["id"], keys=("name", pa.array([], pa.string())))) == []
    assert ids(ds.scan(["id"], keys=("name", pa.array([None], pa.string())))) == []


def test_substrait_and_sql_filters_are_anded(table):
    ds = lh.open(table)
    schema = lance.dataset(table).schema
    substrait = (pc.field("price") >= 20.0).to_substrait(schema)
    got = ids(ds.scan(["id"], filter="id % 3 = 0", substrait=bytes(substrait)))
    assert got == pylance_ids(table, "price >= 20.0 AND id % 3 = 0")
    got = ids(ds.scan(["id"], filter="id % 3 = 0", substrait=bytes(substrait), keys=("id", list(range(0, 6000, 7)))))
    assert got == pylance_ids(table, "price >= 20.0 AND id % 3 = 0 AND id % 7 = 0")


def test_each_split_takes_the_runtime_filter_of_its_worker(table):
    ds = lh.open(table)
    keys = pa.array(range(3, 6000, 11), pa.int64())
    splits = ds.plan_scan(target_rows=1000)
    assert len(splits) > 4
    got = []
    for s in splits:
        worker = lh.open_snapshot(ds.export_snapshot())  # as on a back end
        got += worker.scan_split(lh.Split.from_bytes(bytes(s)), ["id"], filter="price < 40", keys=("id", keys)).read_all()["id"].to_pylist()
    assert sorted(got) == pylance_ids(table, "price < 40 AND id % 11 = 3")


def test_a_scalar_index_answers_the_key_set(tmp_path):
    uri = str(tmp_path / "indexed.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(20000), pa.int64()),
                                  "v": pa.array(range(20000), pa.int64())}), uri)
    lance.dataset(uri).create_scalar_index("id", "BTREE")
    ds = lh.open(uri)
    keys = pa.array([3, 70, 19999, 50000], pa.int64())
    assert ids(ds.scan(["id"], keys=("id", keys))) == [3, 70, 19999]
    plan = ds.explain_scan(["id"], keys=("id", keys))
    assert "ScalarIndexQuery" in plan, plan


def test_keys_on_a_vector_column_are_not_supported(tmp_path):
    uri = str(tmp_path / "vec.lance")
    lance.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64()),
                                  "vec": pa.FixedSizeListArray.from_arrays(pa.array([0.0, 1.0, 2.0, 3.0], pa.float32()), 2)}), uri)
    with pytest.raises(lh.NotSupportedError, match="key filter on column 'vec'"):
        lh.open(uri).scan(["id"], keys=("vec", ["x"]))


def test_bad_key_filters_are_invalid_arguments(table):
    ds = lh.open(table)
    with pytest.raises(lh.InvalidArgumentError, match="'nope' is not a top-level column"):
        ds.scan(["id"], keys=("nope", [1]))
    with pytest.raises(lh.InvalidArgumentError, match="do not fit column 'id'"):
        ds.scan(["id"], keys=("id", ["a", "b"]))
    with pytest.raises(lh.InvalidArgumentError, match="keys must be"):
        ds.scan(["id"], keys=[1, 2])
    with pytest.raises(lh.InvalidArgumentError, match="keys: the values must be"):
        ds.scan(["id"], keys=("id", [1, "a"]))
    with pytest.raises(lh.InvalidArgumentError, match="at most 4000000"):
        ds.scan(["id"], keys=("id", pa.array(range(4_000_001), pa.int64())))
    # the handle still answers afterwards
    assert ids(ds.scan(["id"], keys=("id", [1]))) == [1]
