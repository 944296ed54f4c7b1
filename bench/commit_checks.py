"""What the commit's checks of staged writes cost (issue 45): lance-host's `commit` of shares
staged on workers (it reads each data file's footer and the versions committed since the plan,
and with a statement id its statement record) against pylance 14.0.2 committing the same number
of fragments of the same rows with `LanceDataset.commit(LanceOperation.Append)`, which checks
nothing. Local and s3:// (a local moto server, fresh per run; its log gives each commit's
requests). Sides rotate run by run; each run stages on a fresh table, and only the commit call
is timed and counted. Writes bench/COMMIT_CHECKS.md.

    LANCE_HOST_LIB=<liblance_host.so> python3 bench/commit_checks.py [--shares 8] [--runs 5] \
        [--old-lib <a 0.10.5 liblance_host.so> --old-python <its python/ dir> --old-label 0.10.5]

Every measurement runs in a process of its own (the library a side uses is its process's:
`--old-lib` adds the side "lance-host <old-label>", the same commit through an older build that
checks nothing).

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


def child(side, uri, shares, n, opts, log):
    """One measurement in this process: stage (not measured), then the commit; prints ms and the
    commit's requests (s3://: from the server's log)."""
    import json
    commit = prepare(side, uri, shares, n, opts)
    mark = len(requests_in(log)) if log else 0
    ms = measure(commit)
    done = requests_in(log, mark) if log else []
    verbs = Counter(v for line in done for v in ("PUT", "POST", "GET", "HEAD", "DELETE") if f'"{v} ' in line)
    print("RESULT " + json.dumps({"ms": ms, "requests": len(done), "verbs": verbs}))


def measure(commit):
    t = time.perf_counter()
    version = commit()
    ms = (time.perf_counter() - t) * 1e3
    assert version == 2, version
    return ms


def main():
    import json
    import os
    import subprocess
    ap = argparse.ArgumentParser()
    ap.add_argument("--shares", type=int, default=8)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--label", default="", help="the library's build, for the report")
    ap.add_argument("--old-lib", default="", help="an older liblance_host.so to measure as one more side")
    ap.add_argument("--old-label", default="0.10.5")
    ap.add_argument("--old-python", default="", help="that release's python/ directory (its lance_host package)")
    ap.add_argument("--child", nargs=4, metavar=("SIDE", "URI", "OPTS", "LOG"))
    a = ap.parse_args()
    if a.child:
        side, uri, opts, log = a.child
        return child(side, uri, a.shares, a.rows, json.loads(opts) or None, log or None)
    sides = list(SIDES) + ([f"lance-host {a.old_label}"] if a.old_lib else [])
    local = {s: [] for s in sides}
    s3_ms = {s: [] for s in sides}
    s3_requests = {s: [] for s in sides}
    s3_kinds = {s: Counter() for s in sides}

    def run_child(side, uri, opts, log):
        env = dict(os.environ)
        if side not in SIDES:
            env["LANCE_HOST_LIB"] = a.old_lib
            env["PYTHONPATH"] = a.old_python
        out = subprocess.run([sys.executable, __file__, "--shares", str(a.shares), "--rows", str(a.rows),
                              "--child", side, uri, json.dumps(opts or {}), log or ""],
                             capture_output=True, text=True, env=env, timeout=600)
        line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
        if out.returncode != 0 or not line:
            raise SystemExit(f"{side} failed:\n{out.stderr[-3000:]}")
        return json.loads(line[0][7:])

    for run in range(a.runs):
        for side in rotated(sides, run):
            work = Path(tempfile.mkdtemp(prefix="bench_commit_"))
            local[side].append(run_child(side, str(work / "t.lance"), None, None)["ms"])
            shutil.rmtree(work, ignore_errors=True)
        for side in rotated(sides, run):
            srv, log, opts = moto()
            try:
                r = run_child(side, f"s3://bench/commit-{run}-{sides.index(side)}", opts, str(log))
                s3_ms[side].append(r["ms"])
                s3_requests[side].append(r["requests"])
                s3_kinds[side].update(r["verbs"])
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
        "The sides do different work by design: this is the price of the checks."
        + (f" `lance-host {a.old_label}` is the same commit through that release's library (built in release "
           "mode like this one), which checked nothing either." if a.old_lib else "")
        + " Each measurement runs in a fresh process (staging untimed, then the commit).",
        "",
        "| side | local ms | s3:// ms | s3:// requests per commit | requests by verb (all runs) | s3 time vs pylance |",
        "|---|---|---|---|---|---|",
    ]
    pm = statistics.median(s3_ms[base])
    for side in sides:
        verbs = ", ".join(f"{k} {v}" for k, v in sorted(s3_kinds[side].items()))
        ratio = statistics.median(s3_ms[side]) / pm if pm else float("nan")
        lines.append(f"| {side} | {spread(local[side], 1)} | {spread(s3_ms[side], 1)} | "
                     f"{spread(s3_requests[side])} | {verbs} | {ratio:.2f}x |")
    publish(ROOT / "COMMIT_CHECKS.md", lines)


if __name__ == "__main__":
    main()
