"""Blob columns read through lance_host against pylance on pylance-written tables: Blob v2
(inline, packed and dedicated values, nulls, empty values, two fragments, deletions) and a
legacy blob-encoded binary column (file format 2.1). Sizes and the bytes of ranges at the start,
middle, end and across 4 KiB / 64 KiB / 1 MiB boundaries equal pylance's `take_blobs` reads; a
scan of a table with a blob column returns its descriptors; bad input is a clear error."""

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")
from lance.blob import Blob, blob_array, blob_field  # noqa: E402

ROWS = 30


def payload(i):
    """Row i's value: None, empty, small, medium or 1.5 MiB; bytes from a per-row seed."""
    if i % 10 == 7:
        return None
    n = {3: 0, 1: 1_500_000, 6: 70_000}.get(i % 10, (i * 997) % 9000)
    return np.random.default_rng(i).integers(0, 256, n, dtype=np.uint8).tobytes()


def ranges(size):
    r = [(0, min(size, 100)), (size // 2, min(size - size // 2, 777)), (max(size - 50, 0), min(size, 50))]
    r += [(b - 300, 600) for b in (4096, 65_536, 1 << 20) if size > b + 300]
    r.append((0, size))
    return r


@pytest.fixture(scope="module")
def v2_table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("blobs") / "v2.lance")
    vals = [payload(i) for i in range(ROWS)]
    schema = pa.schema([pa.field("id", pa.int64()),
                        blob_field("blob", inline_size_threshold=4096, dedicated_size_threshold=65_536)])
    t = pa.table({"id": pa.array(range(ROWS), pa.int64()),
                  "blob": blob_array([None if v is None else Blob.from_bytes(v) for v in vals])}, schema=schema)
    lance.write_dataset(t, uri, data_storage_version="2.2", max_rows_per_file=15)
    ds = lance.dataset(uri)
    ds.delete("id % 11 = 4")
    return uri, lance.dataset(uri), vals


@pytest.fixture(scope="module")
def legacy_table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("blobs") / "legacy.lance")
    vals = [payload(i) for i in range(ROWS)]
    schema = pa.schema([pa.field("id", pa.int64()),
                        pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    t = pa.table({"id": pa.array(range(ROWS), pa.int64()), "b": pa.array(vals, pa.large_binary())}, schema=schema)
    lance.write_dataset(t, uri, data_storage_version="2.1", max_rows_per_file=15)
    return uri, lance.dataset(uri), vals


def compare(uri, pyds, vals, column):
    ds = lh.open(uri)
    t = ds.scan(columns=["id"], with_row_id=True).read_all()
    rowids, ids = t["_rowid"].to_pylist(), t["id"].to_pylist()
    assert ids == pyds.to_table(columns=["id"])["id"].to_pylist()
    order = list(range(len(rowids)))[::-1]  # request order is kept
    ask = [rowids[k] for k in order]
    mine = ds.take_blobs(column, ask)
    theirs = pyds.take_blobs(column, ids=ask)
    assert len(mine) == len(theirs) == len(ask)
    kinds, checked = set(), 0
    for i, k in enumerate(order):
        info, ref, want = mine.info(i), theirs[i], vals[ids[k]]
        assert info.row_id == rowids[k]
        if want is None:
            assert info.is_null
            with pytest.raises(lh.LanceError, match="is null"):
                mine.read(i, 0, 0)
            continue
        assert info.size == ref.size() == len(want), ids[k]
        kinds.add(info.kind)
        for off, n in ranges(len(want)):
            got = mine.read(i, off, n)
            assert got == ref.read_range(off, n) == want[off:off + n], (ids[k], off, n)
            checked += 1
        buf = bytearray(min(len(want), 333))
        assert mine.readinto(i, 0, buf) == len(buf) and bytes(buf) == want[:len(buf)]
        with pytest.raises(lh.LanceError, match=f"holds {len(want)} bytes") as e:
            mine.read(i, len(want), 1)
        assert e.value.name == "LANCE_ERR_INVALID_ARGUMENT"
    assert checked > 50
    return kinds


def test_blob_v2_reads_equal_pylance(v2_table):
    uri, pyds, vals = v2_table
    kinds = compare(uri, pyds, vals, "blob")
    assert {"inline", "packed", "dedicated"} <= kinds, kinds


def test_legacy_blob_column_reads_equal_pylance(legacy_table):
    uri, pyds, vals = legacy_table
    compare(uri, pyds, vals, "b")


def test_scan_of_a_blob_table_returns_descriptors(v2_table):
    uri, pyds, vals = v2_table
    ds = lh.open(uri)
    mine = ds.scan(columns=["id", "blob"]).read_all()
    theirs = pyds.to_table(columns=["id", "blob"])
    assert mine["id"].to_pylist() == theirs["id"].to_pylist()
    assert mine.schema.field("blob").type == theirs.schema.field("blob").type
    assert mine["blob"].to_pylist() == theirs["blob"].to_pylist()
    sizes = [d["size"] if d else None for d in mine["blob"].to_pylist()]
    assert sizes == [None if vals[i] is None else len(vals[i]) for i in mine["id"].to_pylist()]


def test_blob_bad_input(v2_table):
    uri, pyds, _ = v2_table
    ds = lh.open(uri)
    with pytest.raises(lh.LanceError, match="'id' is not a blob column"):
        ds.take_blobs("id", [0])
    with pytest.raises(lh.LanceError, match="unknown column 'nope'"):
        ds.take_blobs("nope", [0])
    with pytest.raises(lh.LanceError) as e:
        ds.take_blobs("blob", [4])  # id 4 is deleted
    assert e.value.name == "LANCE_ERR_NOT_FOUND"
    b = ds.take_blobs("blob", [0, 1])
    with pytest.raises(lh.LanceError, match="out of range"):
        b.info(2)
    with pytest.raises(lh.LanceError, match="past the end"):
        b.read(1, 2**63, 10)
    assert len(ds.take_blobs("blob", [])) == 0
