"""Scan splits below a fragment: a one-fragment pylance table planned with target_rows gets as
many splits as it asks for, each a row slice of the fragment; their rows, counts (with and
without a filter) and sums add up to pylance's answer for the table, with deletions inside the
slices; the split bytes carry the slice; slices cannot be combined or staged-deleted."""

import pickle

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")

ROWS = 20_000


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("slices") / "one.lance")
    ids = np.arange(ROWS)
    lance.write_dataset(pa.table({"id": pa.array(ids, pa.int64()),
                                  "val": pa.array((ids * 7) % 1000, pa.int64()),
                                  "cat": pa.array([f"c{i % 3}" for i in ids])}), uri)
    ds = lance.dataset(uri)
    assert len(ds.get_fragments()) == 1
    # Deletions scattered and one run crossing where slices are cut.
    ds.delete("id % 17 = 3 OR (id >= 4990 AND id < 5030)")
    return uri, lance.dataset(uri)


@pytest.mark.parametrize("target", [1_000, 3_333, 7_000, 19_000, 50_000])
def test_slices_add_up_to_the_table(table, target):
    uri, py = table
    ds = lh.open(uri)
    plan = ds.plan_scan(target)
    visible = py.count_rows()
    assert len(plan) == max(1, -(-visible // target)) if target < visible else len(plan) == 1
    slices = [s.row_slice for s in plan]
    if target < visible:
        assert all(sl is not None for sl in slices)
        assert slices[0][0] == 0 and all(a[0] + a[1] == b[0] for a, b in zip(slices, slices[1:]))
        assert slices[-1][0] + slices[-1][1] == ROWS
    else:
        assert slices == [None]
    assert sum(s.row_count for s in plan) == visible
    ids, total = [], 0
    for s in plan:
        s = pickle.loads(pickle.dumps(s))  # the bytes carry the slice
        t = ds.scan_split(s, columns=["id", "val"]).read_all()
        assert t.num_rows == s.row_count
        assert ds.count_split_rows(s)[0] == s.row_count
        ids.extend(t["id"].to_pylist())
        total += sum(t["val"].to_pylist())
    want = py.to_table(columns=["id", "val"])
    assert sorted(ids) == sorted(want["id"].to_pylist())
    assert total == sum(want["val"].to_pylist())
    flt = "cat = 'c1' AND val < 500"
    assert sum(ds.count_split_rows(s, flt)[0] for s in plan) == py.count_rows(flt)
    got = sorted(i for s in plan for i in ds.scan_split(s, columns=["id"], filter=flt).read_all()["id"].to_pylist())
    assert got == sorted(py.to_table(columns=["id"], filter=flt)["id"].to_pylist())


def test_slices_are_not_combined_or_staged_deleted(table):
    uri, _ = table
    ds = lh.open(uri)
    plan = list(ds.plan_scan(2_000))
    with pytest.raises(lh.InvalidArgumentError, match="not whole fragments"):
        lh.Split.combine(plan[:2])
    with pytest.raises(lh.InvalidArgumentError, match="staged delete takes whole fragments"):
        ds.stage_delete("id < 10", split=plan[0])
    whole = ds.plan_scan(2_000, slices=False)
    assert all(s.row_slice is None for s in whole) and len(whole) == 1
    assert ds.stage_delete("id < 10", split=whole[0]).result.rows_deleted == lance.dataset(uri).count_rows("id < 10")


def test_a_reader_raises_the_typed_error(tmp_path):
    """scan_split(...).read_all() through pyarrow raises the library's typed error (0.10.5: a
    plain OSError, the type lost inside pyarrow's reader), as iterating the Stream does."""
    import glob
    import os

    uri = str(tmp_path / "gone.lance")
    lance.write_dataset(pa.table({"id": list(range(1000))}), uri)
    ds = lh.open(uri)
    split = ds.plan_scan()[0]
    for f in glob.glob(uri + "/data/*"):
        os.remove(f)
    with pytest.raises(lh.NotFoundError, match="^LANCE_ERR_NOT_FOUND: reading table") as e:
        ds.scan_split(split).read_all()
    assert "LANCE_ERR_NOT_FOUND" not in str(e.value)[len("LANCE_ERR_NOT_FOUND"):]
