"""Tables for the Trino connector's tests, written by pylance, and pylance's own answers.

    python3 java/tests/trino_fixtures.py <dir>

Writes the directory warehouse <dir>/warehouse (tables `items`, `empty`, `sink`, `edits`, `docs`) and
<dir>/expected.json: what pylance reads from them. The tests compare Trino's answers through
lance-host with these; nothing in them is typed in by hand.
"""
import datetime as dt
import decimal
import json
import math
import shutil
import struct
import sys
import time
from pathlib import Path

import lance
import pyarrow as pa
from lance.query import FullTextOperator, MatchQuery, PhraseQuery


def big(i):
    """38 digits, 4 after the point, exactly (from text: Decimal arithmetic would round to 28 digits)."""
    return decimal.Decimal(f"{10**37 + i * 999_999_937}E-4")


def rows(start, n):
    ids = list(range(start, start + n))
    value = []
    for i in ids:
        if i % 17 == 3:
            value.append(None)
        elif i == 5:
            value.append(float("nan"))
        elif i == 6:
            value.append(struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000001))[0])  # a NaN, sign bit set
        elif i == 8:
            value.append(-0.0)
        else:
            value.append((i * 37 % 1000) / 4.0)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "qty": pa.array([i * 7919 % 1000 for i in ids], pa.int32()),
        "small": pa.array([(i % 600) - 300 for i in ids], pa.int16()),
        "tiny": pa.array([(i % 200) - 100 for i in ids], pa.int8()),
        "value": pa.array(value, pa.float64()),
        "price": pa.array([decimal.Decimal(i * 1237 % 100000) / 100 for i in ids], pa.decimal128(12, 2)),
        "big": pa.array([big(i) for i in ids], pa.decimal128(38, 4)),
        "name": pa.array([None if i % 23 == 5 else (f"名前-{i:06d}" if i % 2 else f"name-{i:06d}") for i in ids], pa.string()),
        "category": pa.array([f"c{i % 5}" for i in ids], pa.string()),
        "flag": pa.array([i % 3 == 0 for i in ids], pa.bool_()),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 365) for i in ids], pa.date32()),
        "ts": pa.array([1_700_000_000_000_000 + i * 1_000_003 for i in ids], pa.timestamp("us")),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array([float(i + k / 8) for i in ids for k in range(4)], pa.float32()), 4),
        "meta": pa.StructArray.from_arrays([pa.array([i * 3 for i in ids])], names=["k"]),
    })


def text(v):
    if v is None:
        return None
    if isinstance(v, float):
        return "bits:%016x" % struct.unpack("<Q", struct.pack("<d", v))[0]
    if isinstance(v, (dt.date, dt.datetime, decimal.Decimal)):
        return str(v)
    return v


def utc(t: dt.datetime, shift_s: float) -> str:
    aware = t if t.tzinfo else t.astimezone()  # a naive time is the local time
    return (aware.astimezone(dt.timezone.utc) + dt.timedelta(seconds=shift_s)).strftime("%Y-%m-%d %H:%M:%S.%f")


def main(root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    wh = root / "warehouse"
    wh.mkdir(parents=True)
    uri = str(wh / "items.lance")
    lance.write_dataset(rows(0, 3000), uri, max_rows_per_file=1000)
    time.sleep(0.01)
    lance.write_dataset(rows(3000, 1000), uri, mode="append")
    time.sleep(0.01)
    lance.dataset(uri).delete("id % 10 = 7")
    ds = lance.dataset(uri)
    all_rows = ds.to_table().to_pylist()
    versions = ds.versions()

    def ids(pred):
        return sorted(r["id"] for r in all_rows if pred(r))

    groups = {}
    for r in all_rows:
        g = groups.setdefault(r["category"], {"count": 0, "sum_qty": 0, "sum_price": decimal.Decimal("0.00")})
        g["count"] += 1
        g["sum_qty"] += r["qty"]
        g["sum_price"] += r["price"]
    for g in groups.values():
        g["sum_price"] = str(g["sum_price"])
    agg2 = {}
    for r in all_rows:
        g = agg2.setdefault(r["category"], {"min_name": None, "max_price": None, "count_name": 0, "sum_small": 0,
                                             "min_day": None, "max_flag": None})
        if r["name"] is not None:
            g["count_name"] += 1
            g["min_name"] = r["name"] if g["min_name"] is None else min(g["min_name"], r["name"])
        g["max_price"] = r["price"] if g["max_price"] is None else max(g["max_price"], r["price"])
        g["sum_small"] += r["small"]
        g["min_day"] = r["day"] if g["min_day"] is None else min(g["min_day"], r["day"])
        g["max_flag"] = r["flag"] if g["max_flag"] is None else max(g["max_flag"], r["flag"])
    for g in agg2.values():
        g["max_price"], g["min_day"] = str(g["max_price"]), str(g["min_day"])
    c2 = [r for r in all_rows if r["category"] == "c2"]
    # the exact nearest rows (no index) to a query vector, as pylance finds them
    query = [100.3, 100.4, 100.2, 100.6]
    nn = ds.to_table(nearest={"column": "vec", "q": query, "k": 7, "use_index": False}, columns=["id"])
    # ... and among the rows of category c2 only (a prefilter)
    nn_c2 = ds.to_table(nearest={"column": "vec", "q": query, "k": 7, "use_index": False}, columns=["id"],
                        filter="category = 'c2'", prefilter=True)
    v2_time = versions[1]["timestamp"]
    expected = {
        "count": ds.count_rows(),
        "count_v1": lance.dataset(uri, version=1).count_rows(),
        "count_v2": lance.dataset(uri, version=2).count_rows(),
        "version": ds.version,
        # 5 ms after and before the commit of version 2 (versions are >= 10 ms apart; pylance's
        # time may be a microsecond off), in UTC
        "v2_after_utc": utc(v2_time, 0.005),
        "v2_before_utc": utc(v2_time, -0.005),
        "nn_query": query,
        "nn_ids": nn["id"].to_pylist(),
        "nn_distances": [float(x) for x in nn["_distance"].to_pylist()],
        "nn_c2_ids": nn_c2["id"].to_pylist(),
        "nn_c2_distances": [float(x) for x in nn_c2["_distance"].to_pylist()],
        "groups": groups,
        "groups2": agg2,
        "c2": {"count": len(c2), "sum_qty": sum(r["qty"] for r in c2), "min_day": str(min(r["day"] for r in c2)),
               "max_day": str(max(r["day"] for r in c2))},
        "ids_qty_lt_100_c1": ids(lambda r: r["qty"] < 100 and r["category"] == "c1"),
        "ids_name_eq": ids(lambda r: r["name"] == "名前-000043"),
        "ids_day_and_flag": ids(lambda r: r["day"] == dt.date(2024, 1, 5) and r["flag"]),
        "ids_price_range": ids(lambda r: decimal.Decimal("500.00") < r["price"] <= decimal.Decimal("600.00")),
        "ids_small_in": ids(lambda r: r["small"] in (-300, 0, 17) and r["tiny"] < 0),
        "ids_big_gt": ids(lambda r: r["big"] > big(3000)),
        "big_3000": str(big(3000)),
        "ids_name_null": ids(lambda r: r["name"] is None),
        "ids_qty_0": ids(lambda r: r["qty"] == 0),
        # top n in Trino's order (NULLS FIRST / LAST as asked; strings by code point)
        "top_qty_desc_id_6": [r["id"] for r in sorted(all_rows, key=lambda r: (-r["qty"], r["id"]))[:6]],
        "top_name_nulls_first_id_9": [r["id"] for r in sorted(
            all_rows, key=lambda r: (r["name"] is not None, r["name"] or "", r["id"]))[:9]],
        "top_name_desc_nulls_last_id_5": [r["id"] for r in sorted(
            (r for r in all_rows if r["name"] is not None), key=lambda r: (tuple(-ord(ch) for ch in r["name"]), r["id"]))[:5]],
        "count_value_gt_120": sum(1 for r in all_rows
                                  if r["value"] is not None and not math.isnan(r["value"]) and r["value"] > 120),
        "first": [{k: text(v) for k, v in r.items() if k != "meta"} for r in sorted(all_rows, key=lambda r: r["id"])[:12]],
        "vec_41": [float(x) for x in next(r["vec"] for r in all_rows if r["id"] == 41)],
        "max_big": str(max(r["big"] for r in all_rows)),
    }
    lance.write_dataset(pa.table({"id": pa.array([], pa.int64())}), str(wh / "empty.lance"))
    # sink: what INSERT writes into (the mapped columns of items, no rows yet)
    sink_cols = ["id", "qty", "small", "tiny", "value", "price", "big", "name", "category", "flag", "day", "ts", "vec"]
    lance.write_dataset(rows(0, 0).select(sink_cols), str(wh / "sink.lance"))
    # edits: what DELETE and UPDATE change
    edits = rows(0, 1000).select(sink_cols)
    lance.write_dataset(edits, str(wh / "edits.lance"), max_rows_per_file=400)
    er = edits.to_pylist()
    expected["edits"] = {
        "count": len(er),
        "deleted_c1_qty_lt_500": sum(1 for r in er if r["category"] == "c1" and r["qty"] < 500),
        "updated_id_lt_50": sum(1 for r in er if r["id"] < 50 and not (r["category"] == "c1" and r["qty"] < 500)),
    }
    # docs: a text column with an INVERTED index, and rows appended after it (not indexed)
    words = ["alpha", "beta", "gamma", "delta", "river", "stone", "cloud", "ember"]

    def docs(start, n):
        ids_ = list(range(start, start + n))
        text_ = [" ".join(words[(i * k + 3) % 8] for k in range(1, 5)) + (" zebra" if i % 97 == 0 else "")
                 for i in ids_]
        return pa.table({"id": pa.array(ids_, pa.int64()), "doc": pa.array(text_, pa.string())})

    duri = str(wh / "docs.lance")
    lance.write_dataset(docs(0, 3000), duri, max_rows_per_file=1000)
    lance.dataset(duri).create_scalar_index("doc", "INVERTED", with_position=True)
    lance.write_dataset(docs(3000, 500), duri, mode="append")
    dds = lance.dataset(duri)
    zebra = dds.to_table(full_text_query="zebra", columns=["id"], limit=1000)
    expected["docs"] = {
        "zebra_ids": sorted(zebra["id"].to_pylist()),
        "zebra_scores": sorted(float(x) for x in zebra["_score"].to_pylist()),
        "zebra_count_by_scan": sum(1 for d in dds.to_table(columns=["doc"])["doc"].to_pylist() if "zebra" in d.split()),
    }
    # the same word among the rows with id >= 1500 only (a prefilter; indexed and appended rows)
    zebra_late = dds.to_table(full_text_query="zebra", columns=["id"], limit=1000, filter="id >= 1500", prefilter=True)
    expected["docs"]["zebra_late_ids"] = sorted(zebra_late["id"].to_pylist())
    # how terms match: both words anywhere, the two as a phrase, the phrase with one word between
    for key, query in [("stone_ember_all", MatchQuery("stone ember", "doc", operator=FullTextOperator.AND)),
                       ("stone_ember_phrase", PhraseQuery("stone ember", "doc")),
                       ("stone_ember_slop1", PhraseQuery("stone ember", "doc", slop=1))]:
        expected["docs"][key] = sorted(dds.to_table(full_text_query=query, columns=["id"], limit=5000)["id"].to_pylist())
    lt500 = [r for r in all_rows if r["id"] < 500]
    expected["insert_lt_500"] = {"count": len(lt500), "sum_id": sum(r["id"] for r in lt500),
                                 "sum_price": str(sum((r["price"] for r in lt500), decimal.Decimal("0.00"))),
                                 "names_null": sum(1 for r in lt500 if r["name"] is None)}
    (root / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
