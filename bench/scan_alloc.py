"""What a full scan's peak RSS is made of: the data the scan holds against the freed memory the
allocator keeps, and what returning that memory costs.

    python3 bench/scan_alloc.py --bin mimalloc=<release lance-host-bench, --features mimalloc>
        [--bin glibc=<release lance-host-bench without features>]
        [--bin v2=<... built with the mimalloc crate's `v2` feature>]
        [--bin jemalloc=<... a build with tikv-jemallocator as its global allocator>]
        [--runs 5]

Every process is the bench's C ABI program (`lance-host-bench host scan_vec`: the library linked
into a Rust program that scans all 6 columns through the C functions and imports the Arrow C
stream, as an engine does): one warm-up scan, then 3 measured; its time is the median of the 3,
its memory the process's high-water mark (VmHWM). Two tables with the same 3,000,000 rows:
bench/REPORT.md's (written from batches of 50,000 rows: `vec` pages of 24.4 MiB) and one written
from batches of 16,384 rows (`vec` pages of 8 MiB, the size lance-host's own writes leave since
0.10.4); the second is written on first use. Rows rotate from run to run. With a glibc binary and
heaptrack installed, the scan's live heap (the most it held allocated at once) is measured once
per table at the defaults. Writes bench/SCAN_ALLOC.md and bench/SCAN_ALLOC.json.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from report import publish, rotated, spread

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("LANCE_HOST_BENCH_DIR", Path.home() / ".cache" / "lance-host" / "bench"))
MIB = 1 << 20
TABLES = [
    ("pages24", "`vec` pages of 24.4 MiB (written from 50,000-row batches)", CACHE / "rows3000000", None),
    ("pages8", "`vec` pages of 8 MiB (written from 16,384-row batches)", CACHE / "rows3000000_p8", 16384),
]
IO16 = {"BENCH_IO_BUFFER": str(16 * MIB)}
IOP64 = {"LANCE_MAX_IOP_SIZE": str(64 * MIB)}
# key, label, binary, environment
ROWS = [
    ("defaults", "mimalloc (as shipped), defaults", "mimalloc", {}),
    ("io16", "mimalloc, `io_buffer_bytes` 16 MiB", "mimalloc", IO16),
    ("iop64", "mimalloc, `LANCE_MAX_IOP_SIZE` 64 MiB", "mimalloc", IOP64),
    ("io16_iop64", "mimalloc, `io_buffer_bytes` 16 MiB, `LANCE_MAX_IOP_SIZE` 64 MiB", "mimalloc", dict(IO16, **IOP64)),
    ("purge100", "mimalloc, purge delay 100 ms (default 1,000)", "mimalloc", {"MIMALLOC_PURGE_DELAY": "100"}),
    ("purge0", "mimalloc, purge delay 0 (freed memory returned at once)", "mimalloc", {"MIMALLOC_PURGE_DELAY": "0"}),
    ("glibc", "glibc malloc, defaults", "glibc", {}),
    ("glibc_io16", "glibc malloc, `io_buffer_bytes` 16 MiB", "glibc", IO16),
    ("v2", "mimalloc 2 (the crate's `v2` feature), defaults", "v2", {}),
    ("jemalloc", "jemalloc 5.3, defaults", "jemalloc", {}),
    ("jemalloc_os0", "jemalloc 5.3, `oversize_threshold:0`", "jemalloc", {"_RJEM_MALLOC_CONF": "oversize_threshold:0"}),
    ("jemalloc_os0_a2", "jemalloc 5.3, `oversize_threshold:0,narenas:2`", "jemalloc",
     {"_RJEM_MALLOC_CONF": "oversize_threshold:0,narenas:2"}),
]
# The allocators' cost elsewhere: 20 serial vector searches on the first table, each binary's defaults.
SEARCH_ROWS = [r for r in ROWS if not r[3]]


def run(binary, work, table, env):
    out = subprocess.run(
        [binary, "host", work, str(table / "bench.lance"), str(table / "facts.json")],
        env=dict(os.environ, BENCH_ITERS="3", **env), capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()[-1]
    d = json.loads(out)
    return {"ms": statistics.median(d["ms"]), "rss": d["maxrss_kb"] / 1024, "file": d["rss_file_kb"] / 1024}


def live_heap_mib(binary, table, env):
    """The most the scan held allocated at once (heaptrack on the glibc build), in MiB."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "trace"
        subprocess.run(["heaptrack", "-o", str(out), binary, "host", "scan_vec", str(table / "bench.lance"),
                        str(table / "facts.json")], env=dict(os.environ, BENCH_ITERS="1", **env),
                       capture_output=True, check=True)
        trace = next(Path(tmp).glob("trace*"))
        text = subprocess.run(["heaptrack_print", "-f", str(trace), "--print-peaks", "0", "--print-allocators", "0",
                               "--print-temporary", "0", "--print-leaks", "0"], capture_output=True, text=True).stdout
    m = re.search(r"peak heap memory consumption: ([\d.]+)([KMG])", text)
    return float(m.group(1)) * {"K": 1 / 1024, "M": 1, "G": 1024}[m.group(2)]


def measure(rows, work, table, bins, runs):
    res = {key: [] for key, *_ in rows}
    for r in range(runs):
        for key, _label, b, env in rotated(rows, r):
            res[key].append(run(bins[b], work, table, env))
    return res


def table_lines(rows, res, base, unit="ms per scan"):
    lines = [f"| setting | {unit} | × defaults' time | peak RSS MiB | of it file-backed |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for key, label, *_ in rows:
        ratios = [a["ms"] / b["ms"] for a, b in zip(res[key], res[base])]
        lines.append(f"| {label} | {spread([x['ms'] for x in res[key]])} | {spread(ratios, 2)} | "
                     f"{spread([x['rss'] for x in res[key]])} | {statistics.median(x['file'] for x in res[key]):.0f} |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append", default=[], help="label=path (mimalloc, glibc, v2, jemalloc)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--report", default=str(HERE / "SCAN_ALLOC.md"))
    args = ap.parse_args()
    bins = dict(b.split("=", 1) for b in args.bin)
    if "mimalloc" not in bins:
        ap.error("--bin mimalloc=<path> is required")
    rows = [r for r in ROWS if r[2] in bins]
    for _key, _label, table, chunk in TABLES:
        if not (table / "facts.json").exists():
            table.mkdir(parents=True, exist_ok=True)
            env = dict(os.environ, **({"BENCH_WRITE_CHUNK": str(chunk)} if chunk else {}))
            subprocess.run([bins["mimalloc"], "write", str(table / "bench.lance"), str(table / "facts.json"),
                            "3000000"], env=env, check=True, capture_output=True)
    data = {"runs": args.runs, "tables": {}}
    md = ["# What a full scan's peak RSS is made of", ""]
    md.append(f"Generated by `bench/scan_alloc.py --runs {args.runs}`, 2 cores, release builds of the bench's C ABI "
              "program (`lance-host-bench host scan_vec`: all 6 columns of 3,000,000 rows, 1.6 GiB, through the C "
              "functions and the Arrow C stream). Each process: one warm-up scan, then 3 measured; its time is the "
              "median of the 3, its memory the process's high-water mark (VmHWM). Rows rotate from run to run. "
              "Cells: median over the runs (min–max); ratio: median of the per-run ratios to the first row.")
    md.append("")
    for tkey, tlabel, table, _ in TABLES:
        res = measure(rows, "scan_vec", table, bins, args.runs)
        entry = {"scan": res}
        md += [f"## Full scan, {tlabel}", ""] + table_lines(rows, res, "defaults") + [""]
        if "glibc" in bins and shutil.which("heaptrack"):
            entry["live_heap_mib"] = {k: live_heap_mib(bins["glibc"], table, env)
                                      for k, env in [("defaults", {}), ("io16", IO16)]}
            md.append("Live heap (heaptrack on the glibc build, one process, warm-up and one measured scan): "
                      f"{entry['live_heap_mib']['defaults']:.0f} MiB at the defaults, "
                      f"{entry['live_heap_mib']['io16']:.0f} MiB with `io_buffer_bytes` 16 MiB.")
            md.append("")
        data["tables"][tkey] = entry
    search_rows = [r for r in SEARCH_ROWS if r[2] in bins]
    res = measure(search_rows, "search8", TABLES[0][2], bins, args.runs)
    data["search8"] = res
    md += ["## The allocators on vector search (20 serial queries, k 10, nprobes 8, refine 4; first table)", ""]
    md += table_lines(search_rows, res, "defaults", "ms per query") + [""]
    Path(args.report).with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n")
    publish(Path(args.report), md)


if __name__ == "__main__":
    main()
