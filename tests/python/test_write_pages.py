"""The pages a write leaves: whatever the size of the host's batches, lance_host's writes leave
pages that a reader fetches in one request (Lance's default, 16 MiB), and the narrow columns
are not cut into a page per slice. pylance's own file reader lists the pages and reads the rows
back. Before slicing (0.10.3), one batch of 200,000 rows of 128-d float32 vectors became one
97.7 MiB page, as pylance's `write_dataset` makes it."""

import glob

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")
from lance.file import LanceFileReader  # noqa: E402

MIB = 1 << 20
READ_REQUEST = 16 * MIB  # Lance's largest single read request unless LANCE_MAX_IOP_SIZE is set


def rows(start, n, dim=128):
    rng = np.random.default_rng(start)
    ids = np.arange(start, start + n)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"row {i}" for i in ids], pa.string()),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * dim, dtype=np.float32)), dim),
    })


def one_batch(t):
    """`t` as a stream of a single batch (what a host with large batches sends)."""
    b = t.combine_chunks().to_batches()
    assert len(b) == 1
    return pa.RecordBatchReader.from_batches(t.schema, b)


def pages(uri):
    """{column name: [page bytes, ...]} over the table's data files, from pylance's reader."""
    out = {}
    for f in sorted(glob.glob(f"{uri}/data/*.lance")):
        md = LanceFileReader(f).metadata()
        for name, col in zip(["id", "name", "vec"], md.columns):
            out.setdefault(name, []).extend(sum(b.size for b in p.buffers) for p in col.pages)
    return out


def assert_small_pages(uri, n_rows):
    p = pages(uri)
    assert max(p["vec"]) <= READ_REQUEST, [round(s / MIB, 1) for s in p["vec"]]
    # The vectors (n_rows * 512 bytes) fill pages of about 8 MiB, not a page per slice.
    assert len(p["vec"]) <= n_rows * 512 // (6 * MIB) + 2, len(p["vec"])
    # The narrow columns gather many slices into a page, as Lance does for small batches.
    assert len(p["id"]) <= 2 * len(glob.glob(f"{uri}/data/*.lance")), len(p["id"])


def test_one_large_batch_is_written_as_pages_a_reader_fetches_in_one_request(tmp_path):
    n = 200_000  # vec: 97.7 MiB in one batch
    want = rows(0, n)
    uri = str(tmp_path / "big.lance")
    _, r = lh.write_table(uri, one_batch(want))
    assert r.rows_written == n
    assert_small_pages(uri, n)
    got = lance.dataset(uri).to_table()
    assert got.equals(want.combine_chunks())


def test_a_staged_append_is_cut_and_a_merge_insert_leaves_small_pages(tmp_path):
    uri = str(tmp_path / "t.lance")
    lh.write_table(uri, rows(0, 1_000))
    # A staged append from one 60,000-row batch (29 MiB of vectors), committed by a coordinator.
    staged = lh.stage_write(uri, one_batch(rows(1_000, 60_000)), mode="append", at=lh.open(uri))
    ds, r = lh.commit(uri, [staged])
    assert r.rows_written == 60_000
    # A merge-insert whose source is one batch: 30,000 new rows and 1,000 updates.
    source = rows(60_000, 31_000)
    source = source.set_column(0, "id", pa.array(np.concatenate([np.arange(0, 1_000), np.arange(61_000, 91_000)]), pa.int64()))
    ds = lh.open(uri)
    ds, r = ds.merge_insert(one_batch(source), on="id", when_matched="update_all")
    assert (r.rows_updated, r.rows_inserted) == (1_000, 30_000)
    p = pages(uri)
    assert max(p["vec"]) <= READ_REQUEST, [round(s / MIB, 1) for s in p["vec"]]
    py = lance.dataset(uri)
    assert py.count_rows() == 91_000
    got = py.to_table().sort_by("id")
    want = pa.concat_tables([rows(1_000, 60_000), source]).sort_by("id")
    assert got.equals(want.combine_chunks())


def test_a_merge_insert_from_one_large_batch_leaves_small_pages(tmp_path):
    # The source goes to Lance whole (no slices): Lance's join re-batches the rows it writes.
    uri = str(tmp_path / "m.lance")
    lh.write_table(uri, rows(0, 1_000))
    n = 200_000  # vec: 97.7 MiB in one batch; ids 0..999 update (new values), the rest insert
    source = rows(1_000_000, n)
    source = source.set_column(0, "id", pa.array(np.arange(n), pa.int64()))
    ds, r = lh.open(uri).merge_insert(one_batch(source), on="id", when_matched="update_all")
    assert (r.rows_updated, r.rows_inserted) == (1_000, n - 1_000)
    p = pages(uri)
    assert max(p["vec"]) <= READ_REQUEST, [round(s / MIB, 1) for s in p["vec"]]
    got = lance.dataset(uri).to_table().sort_by("id")
    assert got.equals(source.combine_chunks())
