"""The pages a write leaves, and what they cost every later scan.

    LANCE_HOST_LIB=<release liblance_host.so> python3 bench/write_pages.py --baseline-lib <0.10.3 release .so> [--runs 3]

The same 3,000,000 rows (id, cat, price, 128-d float32 `vec`; 1.6 GB, generated with a fixed
seed in every writing process before its clock starts) are written by lance-host and by the
baseline library from batches of two sizes: 65,536 rows (bench/write.py's; 32 MiB of vectors a
batch) and 1,000,000 rows (a table built in one piece). Each write is a fresh process; its time
is the write's, its memory the process's high-water mark. Then every table is scanned in full
(all columns) by lance-host (the current library, its defaults) and by pylance 14.0.2 (its
defaults): a fresh process per scan side, one warm-up scan and 3 measured, the median of the 3
and the process's VmHWM. The vector pages are listed with pylance's file reader. The order of
the writers and of the scans rotates from run to run. Writes bench/WRITE_PAGES.md and .json.
"""

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from report import hwm_mib, publish, spread

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("LANCE_HOST_BENCH_DIR", Path.home() / ".cache" / "lance-host" / "bench")) / "write_pages"
MIB = 1 << 20
ROWS = 3_000_000
BATCHES = [65_536, 1_000_000]
WRITERS = [("host", "lance-host (this tree)"), ("baseline", "lance-host 0.10.3 (no slicing)")]
READERS = [("host", "lance-host"), ("pylance", "pylance 14.0.2")]


def rows_table():
    import numpy as np
    import pyarrow as pa
    rng = np.random.default_rng(42)
    ids = np.arange(ROWS)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "cat": pa.array(ids % 100, pa.int32()),
        "price": pa.array(rng.random(ROWS) * 100),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(ROWS * 128, dtype=np.float32)), 128),
    })


def write_worker(uri, batch):
    import pyarrow as pa
    import lance_host as lh
    t = rows_table()
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=batch))
    start = time.perf_counter()
    _, r = lh.write_table(uri, reader)
    ms = (time.perf_counter() - start) * 1e3
    assert r.rows_written == ROWS
    print(json.dumps({"ms": ms, "hwm_mib": hwm_mib()}))


def scan_worker(uri, reader):
    if reader == "pylance":
        import lance
        ds = lance.dataset(uri)

        def scan():
            return sum(b.num_rows for b in ds.to_batches())
    else:
        import lance_host as lh
        ds = lh.open(uri)

        def scan():
            return sum(b.num_rows for b in ds.scan())
    assert scan() == ROWS
    times = []
    for _ in range(3):
        start = time.perf_counter()
        assert scan() == ROWS
        times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"ms": statistics.median(times), "hwm_mib": hwm_mib()}))


def vec_pages(uri):
    from lance.file import LanceFileReader
    sizes = []
    for f in sorted(glob.glob(f"{uri}/data/*.lance")):
        col = LanceFileReader(f).metadata().columns[3]
        sizes.extend(sum(b.size for b in p.buffers) / MIB for p in col.pages)
    return sizes


def run(args, env):
    out = subprocess.run([sys.executable, __file__] + args, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def ratio(new, old):
    return spread([a / b for a, b in zip(new, old)], 2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline-lib")
    ap.add_argument("--write", nargs=2)
    ap.add_argument("--scan", nargs=2)
    args = ap.parse_args()
    if args.write:
        return write_worker(args.write[0], int(args.write[1]))
    if args.scan:
        return scan_worker(*args.scan)
    lib = os.environ.get("LANCE_HOST_LIB")
    if not lib or not args.baseline_lib:
        sys.exit("set LANCE_HOST_LIB to the release liblance_host.so and --baseline-lib to a 0.10.3 one")
    libs = {"host": lib, "baseline": args.baseline_lib}
    tables = [(w, b) for w, _ in WRITERS for b in BATCHES]
    writes = {t: [] for t in tables}
    scans = {(t, r): [] for t in tables for r, _ in READERS}
    pages = {}
    for n in range(args.runs):
        order = tables[n % len(tables):] + tables[:n % len(tables)]
        for w, b in order:
            uri = str(CACHE / f"{w}_{b}.lance")
            shutil.rmtree(uri, ignore_errors=True)
            writes[(w, b)].append(run(["--write", uri, str(b)], dict(os.environ, LANCE_HOST_LIB=libs[w])))
            pages[(w, b)] = vec_pages(uri)
            print(f"run {n + 1} write {w} {b}: {writes[(w, b)][-1]['ms']:.0f} ms", flush=True)
        sides = [(t, r) for t in order for r, _ in READERS]
        sides = sides[n % len(sides):] + sides[:n % len(sides)]
        for (w, b), r in sides:
            uri = str(CACHE / f"{w}_{b}.lance")
            res = run(["--scan", uri, r], dict(os.environ, LANCE_HOST_LIB=lib))
            scans[((w, b), r)].append(res)
            print(f"run {n + 1} scan {w} {b} by {r}: {res['ms']:.0f} ms, {res['hwm_mib']:.0f} MiB", flush=True)
    (HERE / "WRITE_PAGES.json").write_text(json.dumps({
        "writes": {f"{w}_{b}": v for (w, b), v in writes.items()},
        "scans": {f"{w}_{b}_{r}": v for ((w, b), r), v in scans.items()},
        "vec_pages_mib": {f"{w}_{b}": v for (w, b), v in pages.items()},
    }, indent=1))
    lines = [
        "# The pages a write leaves, and what they cost every later scan",
        "",
        f"Generated by `bench/write_pages.py --runs {args.runs}` on {time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} cores, release libraries (mimalloc) through the `lance_host` package, pylance 14.0.2. "
        "The same 3,000,000 rows (id, cat, price, 128-d float32 `vec`; 1.6 GB) written by lance-host with and "
        "without slicing large batches (0.10.3), from batches of 65,536 rows (bench/write.py's) and of "
        "1,000,000 rows; then each table scanned in full by lance-host (this tree, defaults) and pylance "
        "(defaults). Fresh process per write and per scan side; a scan process's time is the median of 3 "
        "scans after a warm-up, its memory the process's high-water mark (VmHWM). Order rotates from run "
        "to run. Cells: median over the runs (min–max); ratios: median of per-run ratios, sliced / 0.10.3.",
        "",
        "| writer | batch rows | `vec` pages (MiB: median, max) | write ms | write peak RSS MiB "
        "| scan ms, lance-host | scan peak RSS MiB, lance-host | scan ms, pylance | scan peak RSS MiB, pylance |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for w, label in WRITERS:
        for b in BATCHES:
            t = (w, b)
            p = pages[t]
            cells = [label, f"{b:,}", f"{len(p)} pages: {statistics.median(p):.1f}, {max(p):.1f}",
                     spread([x["ms"] for x in writes[t]]), spread([x["hwm_mib"] for x in writes[t]])]
            for r, _ in READERS:
                cells += [spread([x["ms"] for x in scans[(t, r)]]), spread([x["hwm_mib"] for x in scans[(t, r)]])]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Sliced / 0.10.3, per run (median, min–max):", "",
              "| batch rows | write time | scan time, lance-host | scan peak, lance-host | scan time, pylance | scan peak, pylance |",
              "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for b in BATCHES:
        new, old = ("host", b), ("baseline", b)
        cells = [f"{b:,}", ratio([x["ms"] for x in writes[new]], [x["ms"] for x in writes[old]])]
        for r, _ in READERS:
            cells += [ratio([x["ms"] for x in scans[(new, r)]], [x["ms"] for x in scans[(old, r)]]),
                      ratio([x["hwm_mib"] for x in scans[(new, r)]], [x["hwm_mib"] for x in scans[(old, r)]])]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "- Lance 14.0.2 cuts a column's page when what it has gathered passes 8 MiB but never inside a batch "
        "it is given, so 0.10.3's pages are as large as the host's batches (a 1,000,000-row batch: 488 MiB of "
        "vectors, above Lance's 32 MiB page limit, which its 2.1 writer does not apply). lance-host now hands "
        "Lance a batch whose widest column holds more than 16 MiB as row slices of about 8 MiB of that column "
        "(`src/write/pages.rs`): a wide column's slice is a view of the host's buffers, which Lance writes as a "
        "page of its own; the narrow columns' slices are copied so that Lance gathers them into pages of its "
        "usual size.",
        "- Run it with the machine's free page reporting off if it is a virtual machine with a balloon "
        "device (`/sys/module/page_reporting/parameters/page_reporting_order` above the largest order): "
        "with it on, memory freed in 2 MiB blocks goes back to the host and the page cache's refill "
        "shows up as slow write calls, 2× on the sliced side in the runs of 2026-12-03.",
        "- Both readers read a page whole; a page above Lance's largest read request (16 MiB unless "
        "`LANCE_MAX_IOP_SIZE` is set) is read in pieces and copied into one buffer.",
    ]
    publish(HERE / "WRITE_PAGES.md", lines)


if __name__ == "__main__":
    main()
