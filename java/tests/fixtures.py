"""Tables for the Java tests, written by pylance, and pylance's own answers about them.

    python3 java/tests/fixtures.py <dir>

Writes <dir>/tables/<name> (Lance tables) and <dir>/expected.json: what pylance reads from those
tables (counts, filtered rows, aggregates, nearest neighbours, old versions). The Java tests
compare lance-host's answers with these; nothing in them is typed in by hand.
"""
import datetime as dt
import json
import shutil
import sys
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DIM = 16


def batch(start: int, n: int, rng) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    value = rng.normal(100.0, 25.0, n)
    value_mask = ids % 17 == 3
    names = [None if i % 23 == 5 else f"name-{i:06d}" for i in ids]
    vec = rng.standard_normal((n, DIM)).astype(np.float32)
    return pa.table({
        "id": ids,
        "value": pa.array(value, mask=value_mask),
        "qty": pa.array((ids * 7919 % 1000).astype(np.int32)),
        "name": pa.array(names, pa.string()),
        "category": pa.array([f"c{i % 5}" for i in ids]),
        "flag": pa.array(ids % 3 == 0),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=int(i % 365)) for i in ids], pa.date32()),
        "ts": pa.array((1_700_000_000_000_000 + ids * 1_000_003).astype("datetime64[us]"), pa.timestamp("us")),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), DIM),
        "meta": pa.StructArray.from_arrays([pa.array(ids * 3), pa.array([f"m{i % 7}" for i in ids])], names=["k", "tag"]),
    })


WORDS = ["alpha", "beta", "gamma", "delta", "river", "stone", "cloud", "ember"]


def with_docs(t: pa.Table) -> pa.Table:
    """A text column: four common words per row, and the rare word "zebra" in every 97th row."""
    ids = t["id"].to_pylist()
    docs = [" ".join(WORDS[(i * k + 3) % 8] for k in range(1, 5)) + (" zebra" if i % 97 == 0 else "") for i in ids]
    return t.append_column("doc", pa.array(docs))


def rows(table: pa.Table, columns):
    out = []
    for r in table.select(columns).to_pylist():
        out.append({k: (v.isoformat() if isinstance(v, (dt.date, dt.datetime)) else v) for k, v in r.items()})
    return out


def id_lt_5000_plan(schema: pa.Schema) -> bytes:
    """A serialized Substrait plan: category AS cat, COUNT(*) AS n, SUM(qty) AS sum_qty of the
    rows whose id is below 5000, over a ReadRel of `schema` (id, category, qty)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
    from substrait.proto import AggregateRel, Expression, FilterRel, Rel
    from substrait_plans import sx_call, sx_field, sx_measure, sx_plan, sx_read

    below = sx_call(1, sx_field(0), Expression(literal=Expression.Literal(i64=5000)))
    agg = AggregateRel(input=Rel(filter=FilterRel(input=sx_read("basic", schema), condition=below)),
                       grouping_expressions=[sx_field(1)], groupings=[AggregateRel.Grouping(expression_references=[0])],
                       measures=[sx_measure(2), sx_measure(3, sx_field(2))])
    return sx_plan(Rel(aggregate=agg), ["cat", "n", "sum_qty"], {1: "lt", 2: "count", 3: "sum"}).SerializeToString()


def main(root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    tables = root / "tables"
    tables.mkdir(parents=True)
    rng = np.random.default_rng(42)
    expected = {"dim": DIM}

    # basic: three appends (versions 1-3, several fragments each), then a delete (version 4).
    uri = str(tables / "basic.lance")
    lance.write_dataset(batch(0, 6000, rng), uri, max_rows_per_file=2000)
    lance.write_dataset(batch(6000, 3000, rng), uri, mode="append", max_rows_per_file=2000)
    lance.write_dataset(batch(9000, 3000, rng), uri, mode="append", max_rows_per_file=2000)
    ds = lance.dataset(uri)
    ds.delete("id % 10 = 7")
    ds = lance.dataset(uri)
    v1 = lance.dataset(uri, version=1)
    filt = "value > 120 AND category = 'c2'"
    t = ds.to_table(filter=filt, columns=["id", "value", "name"])
    agg = ds.to_table(columns=["category", "value", "qty"])
    groups = {}
    for r in agg.to_pylist():
        g = groups.setdefault(r["category"], {"count": 0, "sum_qty": 0, "min_value": None, "max_value": None,
                                              "sum_value": 0.0, "n_value": 0, "sum_qty_where_value": 0})
        g["count"] += 1
        g["sum_qty"] += r["qty"]
        g.setdefault("qtys", set()).add(r["qty"])
        if r["value"] is not None:
            g["n_value"] += 1
            g["sum_value"] += r["value"]
            g["sum_qty_where_value"] += r["qty"]
            g["min_value"] = r["value"] if g["min_value"] is None else min(g["min_value"], r["value"])
            g["max_value"] = r["value"] if g["max_value"] is None else max(g["max_value"], r["value"])
    for g in groups.values():
        g["distinct_qty"] = len(g.pop("qtys"))
    groups_5000 = {}
    for r in ds.to_table(columns=["category", "qty"], filter="id < 5000").to_pylist():
        g = groups_5000.setdefault(r["category"], {"count": 0, "sum_qty": 0})
        g["count"] += 1
        g["sum_qty"] += r["qty"]
    # the same aggregate as a Substrait plan: cat, count(*) AS n, sum(qty) AS sum_qty WHERE id < 5000
    substrait_plan = id_lt_5000_plan(pa.schema([ds.schema.field(n) for n in ("id", "category", "qty")]))
    query = rng.standard_normal(DIM).astype(np.float32)
    nn = ds.to_table(nearest={"column": "vec", "q": query, "k": 10, "use_index": False},
                     columns=["id"], with_row_id=True)
    days = ds.to_table(columns=["id", "day"]).to_pylist()
    count_day = sum(1 for r in days if r["day"] == dt.date(2024, 1, 5) and r["id"] < 3000)
    # top n as Spark orders: nulls first for ASC, last for DESC; ties by id
    tops = ds.to_table(columns=["id", "value", "name", "qty"]).to_pylist()

    def top(column, descending, n):
        present = sorted((r for r in tops if r[column] is not None), key=lambda r: r["id"])
        present.sort(key=lambda r: r[column], reverse=descending)
        missing = sorted((r for r in tops if r[column] is None), key=lambda r: r["id"])
        return [r["id"] for r in (present + missing if descending else missing + present)][:n]

    expected["basic"] = {
        "top_value_desc_12": top("value", True, 12),
        "top_name_asc_9": top("name", False, 9),
        "top_qty_desc_10": top("qty", True, 10),
        "count_day": count_day,
        "uri": uri,
        "version": ds.version,
        "versions": [v["version"] for v in ds.versions()],
        "count": ds.count_rows(),
        "count_v1": v1.count_rows(),
        "count_v2": lance.dataset(uri, version=2).count_rows(),
        "ids_v1": v1.to_table(columns=["id"])["id"].to_pylist(),
        "filter": filt,
        "count_filter": ds.count_rows(filt),
        "filtered": rows(t.sort_by("id"), ["id", "value", "name"]),
        "head": rows(ds.to_table(limit=50).sort_by("id"), ["id", "value", "qty", "name", "category", "flag", "day", "ts"]),
        "head_vec": [[float(x) for x in v] for v in ds.to_table(limit=5)["vec"].to_pylist()],
        "head_vec_ids": ds.to_table(limit=5)["id"].to_pylist(),
        "groups": groups,
        "groups_id_lt_5000": groups_5000,
        "substrait_plan_id_lt_5000": substrait_plan.hex(),
        "sum_qty": int(pc.sum(agg["qty"]).as_py()),
        "query": [float(x) for x in query],
        "nn_ids": nn["id"].to_pylist(),
        "nn_distances": [float(x) for x in nn["_distance"].to_pylist()],
        "version_times_ms": [int(v["timestamp"].timestamp() * 1000) for v in ds.versions()],
        # pylance gives the time through a float: a microsecond may be one off
        "version_times_us": [round(v["timestamp"].timestamp() * 1_000_000) for v in ds.versions()],
    }

    # indexed: the same kind of rows with an IVF_FLAT index on vec (exact within probed partitions).
    uri = str(tables / "indexed.lance")
    lance.write_dataset(with_docs(batch(0, 4000, rng)), uri, max_rows_per_file=1000)
    ds = lance.dataset(uri)
    ds.create_index("vec", index_type="IVF_FLAT", num_partitions=4)
    ds.create_scalar_index("doc", "INVERTED", with_position=True)
    lance.write_dataset(with_docs(batch(4000, 500, rng)), uri, mode="append")  # not indexed: flat splits
    ds = lance.dataset(uri)
    query = rng.standard_normal(DIM).astype(np.float32)
    nn = ds.to_table(nearest={"column": "vec", "q": query, "k": 10, "use_index": False}, columns=["id"])
    expected["indexed"] = {
        "uri": uri,
        "count": ds.count_rows(),
        "query": [float(x) for x in query],
        "nn_ids": nn["id"].to_pylist(),
        "nn_distances": [float(x) for x in nn["_distance"].to_pylist()],
        "index_names": [i["name"] for i in ds.list_indices() if i["fields"] == ["vec"]],
        "zebra_ids": sorted(r["id"] for r in ds.to_table(columns=["id", "doc"]).to_pylist() if "zebra" in r["doc"].split()),
        "zebra_pylance_ids": sorted(ds.to_table(full_text_query="zebra", columns=["id"], limit=1000)["id"].to_pylist()),
    }

    # fragments of basic as pylance reports them: (id, physical rows, deleted rows)
    ds = lance.dataset(str(tables / "basic.lance"))
    expected["basic"]["fragments"] = [[f.fragment_id, f.metadata.physical_rows, f.metadata.num_deletions]
                                      for f in ds.get_fragments()]

    # blobs: a blob-encoded column; pylance's bytes per row id, hashed
    import hashlib
    uri = str(tables / "blobs.lance")
    payloads = [bytes((i * 31 + j) % 251 for j in range(1000 + 997 * i)) for i in range(12)]
    field = pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    lance.write_dataset(pa.table({"id": pa.array(range(12), pa.int64()), "blob": pa.array(payloads, pa.large_binary())},
                                 schema=pa.schema([pa.field("id", pa.int64()), field])), uri)
    ds = lance.dataset(uri)
    row_ids = ds.to_table(columns=["id"], with_row_id=True)["_rowid"].to_pylist()
    files = ds.take_blobs("blob", ids=row_ids)
    expected["blobs"] = {"uri": uri, "row_ids": row_ids,
                         "sha256": [hashlib.sha256(f.readall()).hexdigest() for f in files],
                         "sizes": [len(p) for p in payloads]}

    expected["tables"] = sorted(p.name[: -len(".lance")] for p in tables.iterdir())

    # one_fragment: 300,000 rows in one fragment (Spark's default plan cuts it into row slices
    # when Spark has more cores than the table has fragments)
    one_dir = root / "single"
    one_dir.mkdir()
    n = 300_000
    one = pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array([i % 1000 for i in range(n)], pa.int64())})
    lance.write_dataset(one, str(one_dir / "one.lance"), max_rows_per_file=n)
    one_ds = lance.dataset(str(one_dir / "one.lance"))
    assert len(one_ds.get_fragments()) == 1
    expected["one_fragment"] = {"uri": str(one_dir / "one.lance"), "count": one_ds.count_rows(),
                                "sum_v": sum(one_ds.to_table(columns=["v"])["v"].to_pylist())}

    # nans: floats at the edges (NaN of either sign, +-inf, -0.0, NULL) as a Lance table and as
    # Parquet (pyarrow keeps every bit), for Spark on Parquet to judge the connector's answers
    import struct
    import pyarrow.parquet as pq
    neg_nan = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
    edges = [neg_nan, float("nan"), float("-inf"), float("inf"), None, -0.0, 0.0]
    values = [edges[i % 7] if i % 3 == 0 else (i - 300) * 0.5 for i in range(600)]
    nans = pa.table({"id": pa.array(range(600), pa.int64()), "d": pa.array(values, pa.float64())})
    nan_dir = root / "nan-tables"
    nan_dir.mkdir()
    lance.write_dataset(nans, str(nan_dir / "nans.lance"), max_rows_per_file=200)
    pq.write_table(nans, str(root / "nans.parquet"))
    expected["nans"] = {"root": str(nan_dir), "uri": str(nan_dir / "nans.lance"), "parquet": str(root / "nans.parquet")}

    # dates: dates at the edges of date parts (NULLs, the day before the epoch, leap days, year
    # and quarter boundaries, years 1601 to 2399) as a Lance table and as Parquet, for Spark on
    # Parquet to judge the date-part group keys the connector pushes
    base = [dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(1600 + 1, 1, 1), dt.date(2000, 2, 29),
            dt.date(1900, 2, 28), dt.date(2399, 12, 31), dt.date(2024, 3, 31), dt.date(2024, 4, 1),
            dt.date(1969, 7, 20), dt.date(1999, 12, 31)]
    day_values = [None if i % 7 == 3 else
                  (base[i % len(base)] if i % 2 == 0 else dt.date(1601, 1, 1) + dt.timedelta(days=(i * 7919) % 292000))
                  for i in range(1200)]
    dates = pa.table({"id": pa.array(range(1200), pa.int64()), "day": pa.array(day_values, pa.date32()),
                      "cat": pa.array([f"k{i % 3}" for i in range(1200)]),
                      "qty": pa.array([i % 11 for i in range(1200)], pa.int64())})
    date_dir = root / "date-tables"
    date_dir.mkdir()
    lance.write_dataset(dates, str(date_dir / "dates.lance"), max_rows_per_file=400)
    pq.write_table(dates, str(root / "dates.parquet"))
    expected["dates"] = {"uri": str(date_dir / "dates.lance"), "parquet": str(root / "dates.parquet"),
                         "nulls": sum(1 for d in day_values if d is None)}
    (root / "expected.json").write_text(json.dumps(expected))


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
