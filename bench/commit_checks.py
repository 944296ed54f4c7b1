"""What the commit's checks of staged writes cost (issue 45): lance-host's `commit` of shares
staged on workers (it reads each data file's footer and the versions committed since the plan,
and with a statement id its statement record) against pylance 14.0.2 committing the same number
of fragments of the same rows with `LanceDataset.commit(LanceOperation.Append)`, which checks
nothing. Local and s3:// (a local moto server, fresh per run; its log gives each commit's
requests). Sides rotate run by run; each run stages on a fresh table, and only the commit call
is timed and counted. Writes bench/COMMIT_CHECKS.md.

    LANCE_HOST_LIB=<liblance_host.so> python3 bench/commit_checks.py [--shares 8] [--runs 5]

Every side commits `--shares` fragments of `--rows` rows each (id int64, cat string, 16 x
float32), planned at version 1 of a table of one fragment. The sides' files differ (each side
writes its own); their rows and sizes are the same.
"""

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from report import publish, rotated, spread
from write import moto, requests_in

ROOT = Path(__file__).resolve().parent
DIM = 16
SIDES = ["lance-host", "lance-host + statement id", "pylance"]


def rows(start, n):
    import numpy as np
    import pyarrow as pa
    rng = np.random.default_rng(start)
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "id": pa.array(ids),
        "cat": pa.array(np.array(["a", "b", "c"], dtype=object)[ids % 3]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * DIM, dtype=np.float32)), DIM),
    })


def prepare(side, uri, shares, n, opts):
    """Create the table and stage the shares (not measured); returns the commit to measure."""
    import lance_host as lh
    lh.write_table(uri, rows(0, 1000), storage_options=opts)
    data = [rows(1_000_000 * (s + 1), n) for s in range(shares)]
    if side == "pylance":
        import lance
        from lance.fragment import write_fragments
        frags = [f for d in data for f in write_fragments(d, uri, storage_options=opts)]
        return lambda: lance.LanceDataset.commit(uri, lance.LanceOperation.Append(frags), read_version=1,
                                                 storage_options=opts).version
    at = lh.open(uri, storage_options=opts)
    staged = [lh.stage_write(uri, d, "append", at=at, storage_options=opts) for d in data]
    kw = {"statement_id": f"bench-{time.time_ns()}"} if side.endswith("statement id") else {}
    return lambda: lh.commit(uri, staged, storage_options=opts, **kw)[1].version


def measure(commit):
    t = time.perf_counter()
    version = commit()
    ms = (time.perf_counter() - t) * 1e3
    assert version == 2, version
    return ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shares", type=int, default=8)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--label", default="", help="the library's build, for the report")
    a = ap.parse_args()
    local = {s: [] for s in SIDES}
    s3_ms = {s: [] for s in SIDES}
    s3_requests = {s: [] for s in SIDES}
    s3_kinds = {s: Counter() for s in SIDES}
    for run in range(a.runs):
        for side in rotated(SIDES, run):
            work = Path(tempfile.mkdtemp(prefix="bench_commit_"))
            local[side].append(measure(prepare(side, str(work / "t.lance"), a.shares, a.rows, None)))
            shutil.rmtree(work, ignore_errors=True)
        for side in rotated(SIDES, run):
            srv, log, opts = moto()
            try:
                commit = prepare(side, f"s3://bench/commit-{run}-{SIDES.index(side)}", a.shares, a.rows, opts)
                mark = len(requests_in(log))
                s3_ms[side].append(measure(commit))
                done = requests_in(log, mark)
                s3_requests[side].append(len(done))
                for line in done:
                    for verb in ("PUT", "POST", "GET", "HEAD", "DELETE"):
                        if f'"{verb} ' in line:
                            s3_kinds[side][verb] += 1
            finally:
                srv.terminate()
                srv.wait()
        print(f"run {run + 1}/{a.runs} done", file=sys.stderr)

    base = "pylance"
    lines = [
        "# Commit checks: what a commit of staged writes costs",
        "",
        f"`bench/commit_checks.py --shares {a.shares} --rows {a.rows} --runs {a.runs}`{(' — ' + a.label) if a.label else ''}. "
        f"Each side commits {a.shares} fragments of {a.rows:,} rows planned at version 1 of a fresh table; "
        "only the commit call is measured. Medians with min–max over the runs; sides rotate run by run.",
        "",
        "lance-host checks every share before committing (one footer read per data file, the statement "
        "record with a statement id); pylance's `LanceDataset.commit(LanceOperation.Append)` checks nothing. "
        "The sides do different work by design: this is the price of the checks.",
        "",
        "| side | local ms | s3:// ms | s3:// requests per commit | requests by verb (all runs) | s3 time vs pylance |",
        "|---|---|---|---|---|---|",
    ]
    pm = statistics.median(s3_ms[base])
    for side in SIDES:
        verbs = ", ".join(f"{k} {v}" for k, v in sorted(s3_kinds[side].items()))
        ratio = statistics.median(s3_ms[side]) / pm if pm else float("nan")
        lines.append(f"| {side} | {spread(local[side], 1)} | {spread(s3_ms[side], 1)} | "
                     f"{spread(s3_requests[side])} | {verbs} | {ratio:.2f}x |")
    publish(ROOT / "COMMIT_CHECKS.md", lines)


if __name__ == "__main__":
    main()
