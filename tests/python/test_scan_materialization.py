"""How a filtered scan of a local table reads its columns (issue 62): Lance reads columns wider
than 10 bytes after the filter, by row address — cheap when the filter keeps a few rows, up to 3x
slower when it keeps many (bench/SCAN_FILTERED.md). lance-host tries the filter on the scan's first
rows and from 5 % kept reads every column with the filter's. Lance's own plan text tells which
reading a scan chose; the rows are pylance's either way, on whole scans, fragment splits and row
slices of a table with deletions."""

import decimal

import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")

N = 30_000


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("mat") / "t.lance")
    lance.write_dataset(pa.table({
        "k": pa.array(range(N), pa.int64()),
        "d": pa.array([decimal.Decimal(i) / 100 for i in range(N)], pa.decimal128(15, 2)),
        "s": pa.array([None if i % 17 == 0 else f"row {i}" for i in range(N)]),
    }), uri, max_rows_per_file=10_000)
    lance.dataset(uri).delete("k % 7 = 3")
    return uri


def late(plan):
    """Whether Lance's plan takes the projected columns after the filter (a second read fed by
    the filter's row ids)."""
    return "source=stream" in plan


def rows(batches):
    t = pa.Table.from_batches(list(batches)) if not isinstance(batches, pa.Table) else batches
    return t.sort_by("k").to_pylist()


@pytest.mark.parametrize("flt, keeps_many", [("k < 10", False), ("k % 10 = 1", True), ("k >= 100", True),
                                             ("s IS NULL AND k < 40", False)])
def test_the_reading_follows_the_share_kept_and_rows_equal_pylance(table, flt, keeps_many):
    ds = lh.open(table)
    assert late(ds.explain_scan(columns=["k", "d", "s"], filter=flt)) is not keeps_many
    want = rows(lance.dataset(table).to_table(columns=["k", "d", "s"], filter=flt))
    assert rows(ds.scan(columns=["k", "d", "s"], filter=flt)) == want
    for plan in (ds.plan_scan(0), ds.plan_scan(4_000, slices=True)):
        got = [b for s in plan for b in ds.scan_split(s, columns=["k", "d", "s"], filter=flt)]
        assert rows(got) == want
    # a scan of some fragments samples its first fragment
    assert late(ds.explain_scan(columns=["k", "d", "s"], filter=flt, fragment_ids=[1, 2])) is not keeps_many


def test_scans_the_estimate_does_not_apply_to_keep_lances_reading(table):
    ds = lh.open(table)
    # a row limit, and a filter on row ids, keep Lance's default reading
    assert late(ds.explain_scan(columns=["k", "d", "s"], filter="k >= 100", limit=50))
    assert len(rows(ds.scan(columns=["k", "d", "s"], filter="k >= 100", limit=50))) == 50
    # a runtime key set (millions of values would be hashed again for an estimate), even with a
    # filter keeping most rows
    keys = ("k", pa.array(range(0, N, 2), pa.int64()))
    assert late(ds.explain_scan(columns=["k", "d", "s"], filter="k >= 100", keys=keys))
    want = rows(lance.dataset(table).to_table(columns=["k", "d", "s"], filter="k >= 100 AND k % 2 = 0"))
    assert rows(ds.scan(columns=["k", "d", "s"], filter="k >= 100", keys=keys)) == want
    # no filter: one read
    assert not late(ds.explain_scan(columns=["k", "d", "s"]))
