"""Runtime key-set filters (issue 60): what a scan reads when a join's build side hands it 1 % of
the keys as an Arrow array (`keys=`, LanceScanOptions.key_filter_*), against the same scan
read whole and filtered afterwards (what a back end does without runtime filters), and against
pylance given the same predicate written out as SQL text (`id IN (...)`). Writes
bench/RUNTIME_FILTERS.md and bench/RUNTIME_FILTERS.json.

    LANCE_HOST_LIB=<liblance_host.so> python3 bench/runtime_filters.py [--rows 2000000] [--runs 3]

The table (id int64 in write order, price float64, payload ~60-byte strings; 500k rows per
file) is written by pylance, on the local disk and on a local moto S3 server. Key sets: 1 % of
the ids at random, and 1 % as one contiguous range (the shape a selective dimension filter
gives a fact table sorted by its key). Figures per side: rows returned (checked equal between
the sides), bytes and requests the operation read (lance-host: its own I/O statistics; on S3
also the server's request log, which is what pylance's side is measured by) and wall time
(median of `--runs`, min-max; a fresh process per operation, sides alternating, one warm-up
each). Bytes and
requests do not depend on the build profile; times do: the report names the library it ran.
"""

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))


def write_table(uri, n, storage=None):
    import lance
    import pyarrow as pa

    chunk = 250_000

    def batches():
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            ids = pa.array(range(s, e), pa.int64())
            yield pa.record_batch({"id": ids,
                                   "price": pa.array([(i % 1000) * 0.25 for i in range(s, e)], pa.float64()),
                                   "payload": pa.array([f"payload-{i:012d}-" + "x" * 40 for i in range(s, e)])})

    schema = next(batches()).schema
    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), uri, max_rows_per_file=500_000,
                        storage_options=storage)


def sides(uri, keys, storage):
    """name -> a function returning (rows, bytes, requests by the library's count or None)."""
    import lance
    import lance_host as lh
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pa.array(keys, pa.int64())
    cols = ["id", "price", "payload"]

    def with_keys():
        st = lh.open(uri, storage_options=storage).scan_stream(cols, keys=("id", arr))
        rows = sum(b.num_rows for b in st)
        io = st.io_stats()
        return rows, io.read_bytes + io.index_read_bytes, io.read_requests + io.index_read_requests

    def filtered_after():
        st = lh.open(uri, storage_options=storage).scan_stream(cols)
        rows = 0
        for b in st:
            rows += pc.sum(pc.is_in(b.column(0), value_set=arr)).as_py() or 0
        io = st.io_stats()
        return rows, io.read_bytes + io.index_read_bytes, io.read_requests + io.index_read_requests

    text = "id IN (" + ", ".join(map(str, keys)) + ")"

    def pylance_sql():
        t = lance.dataset(uri, storage_options=storage).to_table(columns=cols, filter=text)
        return t.num_rows, None, None

    return {"lance-host keys=": with_keys, "lance-host, filtered after": filtered_after,
            "pylance IN (...) text": pylance_sql}


def one(side, uri, keys_file, storage_json, log):
    """One operation in this (fresh) process: libraries loaded before the clock; prints JSON."""
    import write as bench_write

    keys = json.loads(Path(keys_file).read_text())
    storage = json.loads(storage_json) or None
    fn = sides(uri, keys, storage)[side]
    mark = len(bench_write.requests_in(log)) if log else 0
    t0 = time.perf_counter()
    rows, nbytes, reqs = fn()
    dt = time.perf_counter() - t0
    server = len(bench_write.requests_in(log, mark)) if log else None
    print(json.dumps([dt, rows, nbytes, reqs, server]))


def measure(uri, keys, storage, runs, log=None):
    """Every operation in a fresh process (nothing cached from an earlier one), sides
    alternating, `runs` times each after one warm-up run per side (the page cache warm)."""
    import subprocess

    keys_file = Path(tempfile.mkdtemp(prefix="rf-keys-")) / "keys.json"
    keys_file.write_text(json.dumps(keys))
    names = list(sides(uri, keys, storage))

    def run(side):
        out = subprocess.run([sys.executable, __file__, "--one", side, uri, str(keys_file), json.dumps(storage or {}),
                              str(log or "")], capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    for name in names:
        run(name)
    samples = {name: [] for name in names}
    for _ in range(runs):
        for name in names:
            samples[name].append(run(name))
    rows = {name: {s[1] for s in v} for name, v in samples.items()}
    assert len({frozenset(r) for r in rows.values()}) == 1, f"the sides disagree: {rows}"
    out = {}
    for name, v in samples.items():
        times = [s[0] for s in v]
        out[name] = {"rows": v[0][1], "bytes": v[-1][2], "requests": v[-1][3], "server_requests": v[-1][4],
                     "median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        side, uri, keys_file, storage_json, log = sys.argv[2:7]
        return one(side, uri, keys_file, storage_json, log or None)
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-s3", action="store_true")
    args = ap.parse_args()
    import lance
    import lance_host as lh
    import write as bench_write

    rnd = random.Random(60)
    n = args.rows
    key_sets = {"1% random": sorted(rnd.sample(range(n), n // 100)),
                "1% contiguous": list(range(n // 2, n // 2 + n // 100))}
    results = {"library": lh.build_profile() if hasattr(lh, "build_profile") else os.environ.get("LANCE_HOST_LIB", "bundled"),
               "rows": n, "cases": []}
    tmp = Path(tempfile.mkdtemp(prefix="rf-bench-"))
    local = str(tmp / "t.lance")
    write_table(local, n)
    stores = [("local", local, None, None, False)]
    srv = None
    if not args.no_s3:
        srv, log, opts = bench_write.moto()
        s3 = "s3://bench/rf.lance"
        write_table(s3, n, opts)
        stores.append(("s3 (moto)", s3, opts, log, False))
    try:
        for store, uri, storage, log, _ in stores:
            for indexed in (False, True):
                if indexed:
                    lance.dataset(uri, storage_options=storage).create_scalar_index("id", "BTREE")
                for kname, keys in key_sets.items():
                    r = measure(uri, keys, storage, args.runs, log)
                    results["cases"].append({"store": store, "index": "BTREE on id" if indexed else "none",
                                             "keys": kname, "sides": r})
                    print(store, indexed, kname, json.dumps(r), flush=True)
    finally:
        if srv:
            srv.terminate()
    (ROOT / "RUNTIME_FILTERS.json").write_text(json.dumps(results, indent=1))
    lines = ["# Runtime key-set filters: what a scan reads", "",
             f"`bench/runtime_filters.py`, {n:,} rows (id, price, payload ~60 B), 500k rows per file, written by "
             f"pylance; key sets of {n // 100:,} ids; library: {results['library']}. Rows are equal on every side "
             "(checked). Bytes and requests: the library's I/O statistics of the operation (object-store reads only: "
             "0 on the local disk; pylance: not reported); S3 server requests: the moto server's log during the "
             "operation. Every operation runs in a fresh process (libraries loaded before the clock; nothing cached "
             f"from an earlier operation but the OS page cache); times: median (min-max) of {args.runs} runs, sides "
             "alternating, after one warm-up each; they depend on the build profile, bytes and requests do not.", "",
             "| store | index | keys | side | rows | bytes read | requests (library) | requests (S3 server) | time s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in results["cases"]:
        for side, v in c["sides"].items():
            b = "—" if v["bytes"] is None else f"{v['bytes'] / 1e6:.1f} MB"
            q = "—" if v["requests"] is None else str(v["requests"])
            sq = "—" if v["server_requests"] is None else str(v["server_requests"])
            lines.append(f"| {c['store']} | {c['index']} | {c['keys']} | {side} | {v['rows']:,} | {b} | {q} | {sq} | "
                         f"{v['median_s']:.3f} ({v['min_s']:.3f}-{v['max_s']:.3f}) |")
    (ROOT / "RUNTIME_FILTERS.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
