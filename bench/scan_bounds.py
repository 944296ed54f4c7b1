"""Full scan of wide rows: time and peak memory under the scan's memory settings.

    LANCE_HOST_LIB=<release liblance_host.so> python3 bench/scan_bounds.py [--runs 5]
        [--baseline-lib <an earlier release liblance_host.so>] [--bin <release lance-host-bench>]

The table is bench/REPORT.md's main table (3,000,000 rows, 30 fragments, all 6 columns incl.
the 128-d float32 `vec`; its `vec` pages are 24.4 MiB, written by pylance's defaults). Every
side scans all columns in a fresh Python process (pyarrow and the side's library loaded): one
warm-up scan, then 3 measured scans; a process's time is the median of its 3, its memory the
process's high-water mark (VmHWM) after all 4. With --bin, the same scan also runs in the
bench's Rust program through the C ABI (`lance-host-bench host scan_vec`: what an engine's
process holds, without Python and pyarrow). Sides rotate from run to run. Reported: the
median over --runs processes (min-max) and the median of per-run ratios to the library's
defaults. Writes bench/SCAN_BOUNDS.md and bench/SCAN_BOUNDS.json.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from report import hwm_mib, publish, spread

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("LANCE_HOST_BENCH_DIR", Path.home() / ".cache" / "lance-host" / "bench"))
MAIN = CACHE / "rows3000000" / "bench.lance"
MIB = 1 << 20
BOUNDED = {"io_buffer_bytes": 16 * MIB, "fragment_readahead": 1, "batch_readahead": 1}
# key, label, library ("host", "baseline" or "pylance"), scan keyword arguments, environment
SIDES = [
    ("defaults", "lance-host, defaults", "host", {}, {}),
    ("iop64", "lance-host, defaults, `LANCE_MAX_IOP_SIZE` 64 MiB", "host", {}, {"LANCE_MAX_IOP_SIZE": str(64 * MIB)}),
    ("bounded", "lance-host, bounded (16 MiB, 1 fragment, 1 batch)", "host", BOUNDED, {}),
    ("bounded_iop64", "lance-host, bounded, `LANCE_MAX_IOP_SIZE` 64 MiB", "host", BOUNDED,
     {"LANCE_MAX_IOP_SIZE": str(64 * MIB)}),
    ("bounded_iop64_b4096", "lance-host, bounded, `LANCE_MAX_IOP_SIZE` 64 MiB, batches of 4,096 rows", "host",
     dict(BOUNDED, batch_size=4096), {"LANCE_MAX_IOP_SIZE": str(64 * MIB)}),
    ("bounded_iop64_b2048", "lance-host, bounded, `LANCE_MAX_IOP_SIZE` 64 MiB, batches of 2,048 rows", "host",
     dict(BOUNDED, batch_size=2048), {"LANCE_MAX_IOP_SIZE": str(64 * MIB)}),
    ("c_defaults", "C ABI host program, defaults", "bin", {}, {}),
    ("c_bounded_iop64", "C ABI host program, bounded, `LANCE_MAX_IOP_SIZE` 64 MiB", "bin", {},
     {"LANCE_MAX_IOP_SIZE": str(64 * MIB), "BENCH_IO_BUFFER": str(16 * MIB), "BENCH_FRAGMENT_READAHEAD": "1",
      "BENCH_BATCH_READAHEAD": "1"}),
    ("baseline", "lance-host 0.10.0, defaults", "baseline", {}, {}),
    ("baseline_iop64", "lance-host 0.10.0, defaults, `LANCE_MAX_IOP_SIZE` 64 MiB", "baseline", {},
     {"LANCE_MAX_IOP_SIZE": str(64 * MIB)}),
    ("pylance", "pylance 14.0.2, defaults", "pylance", {}, {}),
]


def worker(side):
    _, _, lib, kwargs, _ = next(s for s in SIDES if s[0] == side)
    if lib == "pylance":
        import lance
        ds = lance.dataset(str(MAIN))

        def scan():
            return sum(b.num_rows for b in ds.to_batches())
    else:
        import lance_host as lh
        ds = lh.open(str(MAIN))

        def scan():
            return sum(b.num_rows for b in ds.scan(**kwargs))
    rows = scan()
    times = []
    for _ in range(3):
        t = time.perf_counter()
        assert scan() == rows
        times.append((time.perf_counter() - t) * 1e3)
    print(json.dumps({"ms": statistics.median(times), "rows": rows, "hwm_mib": hwm_mib()}))


def time_memory_cells(runs, base):
    """A side's time, its per-run ratio to `base`'s, its peak RSS and that ratio: medians over the
    runs (min–max). `runs` and `base` are the sides' results in run order."""
    t_ratio = [r["ms"] / b["ms"] for r, b in zip(runs, base)]
    m_ratio = [r["hwm_mib"] / b["hwm_mib"] for r, b in zip(runs, base)]
    return [spread([r["ms"] for r in runs]), spread(t_ratio, 2), spread([r["hwm_mib"] for r in runs]), spread(m_ratio, 2)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--baseline-lib")
    ap.add_argument("--bin")
    ap.add_argument("--worker")
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker)
    lib = os.environ.get("LANCE_HOST_LIB")
    if not lib:
        sys.exit("set LANCE_HOST_LIB to the release liblance_host.so")
    if not MAIN.exists():
        sys.exit(f"{MAIN} is missing: run bench/bench.sh (or bench/run.py) first")
    sides = [s for s in SIDES if (s[2] != "baseline" or args.baseline_lib) and (s[2] != "bin" or args.bin)]
    results = {s[0]: [] for s in sides}
    for run in range(args.runs):
        order = sides[run % len(sides):] + sides[:run % len(sides)]
        for key, _, kind, _, extra in order:
            env = dict(os.environ, **extra)
            if kind == "baseline":
                env["LANCE_HOST_LIB"] = args.baseline_lib
            if kind == "bin":
                env["BENCH_ITERS"] = "3"
                out = subprocess.run([args.bin, "host", "scan_vec", str(MAIN), str(MAIN.parent / "facts.json")],
                                     env=env, capture_output=True, text=True, check=True)
                b = json.loads(next(l for l in out.stdout.splitlines() if l.startswith("{")))
                r = {"ms": statistics.median(b["ms"]), "rows": b["rows"], "hwm_mib": b["maxrss_kb"] / 1024}
            else:
                out = subprocess.run([sys.executable, __file__, "--worker", key], env=env, capture_output=True,
                                     text=True, check=True)
                r = json.loads(out.stdout.strip().splitlines()[-1])
            results[key].append(r)
            print(f"run {run + 1} {key}: {r['ms']:.0f} ms, {r['hwm_mib']:.0f} MiB", flush=True)
    rows = {r["rows"] for v in results.values() for r in v}
    assert len(rows) == 1, f"sides returned different row counts: {rows}"
    (HERE / "SCAN_BOUNDS.json").write_text(json.dumps(results, indent=1))
    base = results["defaults"]
    lines = [
        "# Full scan of wide rows: time and peak memory under the scan's memory settings",
        "",
        f"Generated by `bench/scan_bounds.py --runs {args.runs}` on {time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} cores, release library (mimalloc) through the `lance_host` package. "
        "Table: bench/REPORT.md's main table, 3,000,000 rows in 30 fragments, all 6 columns incl. the "
        "128-d float32 `vec` (1.6 GiB; `vec` pages of 24.4 MiB as pylance writes them). Each side is a fresh "
        "Python process with pyarrow and its library loaded (about 88 MiB before the first scan): one "
        "warm-up scan, then 3 measured; a process's time is the median of its 3 scans, its memory the "
        "process's high-water mark (VmHWM). Sides rotate from run to run. Cells: median over the runs "
        "(min–max); ratio: median of per-run ratios to 'lance-host, defaults' (min–max).",
        "",
        "| side | ms per scan | × defaults' time | peak RSS MiB | × defaults' peak |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for key, label, _, _, _ in sides:
        lines.append("| " + " | ".join([label] + time_memory_cells(results[key], base)) + " |")
    lines += [
        "",
        "- 'bounded' = the scan's `io_buffer_bytes` 16 MiB, `fragment_readahead` 1, `batch_readahead` 1 "
        "(the same as session defaults: `scan_io_buffer_bytes`, `scan_fragment_readahead`, "
        "`scan_batch_readahead`).",
        "- `LANCE_MAX_IOP_SIZE` is Lance's own setting (process environment, read once): the largest "
        "single read request. A page larger than it is read in pieces and copied into one buffer; the "
        "library reads local pages up to that size whole (since 0.10.1; 0.10.0 kept "
        "Lance's 8 MiB file-level pieces, so raising it changed nothing there).",
        "- 'C ABI host program': `lance-host-bench host scan_vec` (bench/src/main.rs), the library linked "
        "into a Rust program that scans through the C functions and imports the Arrow C stream, as an "
        "engine does (the same program peaks at 89–91 MiB after opening the table and a 1,000-row take, "
        "bench/REPORT.md).",
        "- pylance reads with its own defaults (2 GiB I/O buffer, read-ahead by CPU count); its process "
        "holds more because it queues more, not because the table differs.",
        "- Read a difference only where its ratio's min–max lies on one side of 1.0 (rows of libraries "
        "that do the same work differ by the run-to-run spread).",
    ]
    publish(HERE / "SCAN_BOUNDS.md", lines)


if __name__ == "__main__":
    main()
