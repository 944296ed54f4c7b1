"""Shipping a pinned snapshot to workers at scale (issue 62): full against split-scoped snapshot
tokens at 10^3-10^5 fragments, and the commit time of staged writes against their number of
shares. Writes bench/SCOPED_TOKENS.md and bench/SCOPED_TOKENS.json.

    LANCE_HOST_LIB=<release liblance_host.so> python3 bench/scoped_tokens.py \\
        [--fragments 1000,10000,100000] [--shares 10,100,1000,10000] [--runs 5] [--work DIR]

Tables: one small data file written by pylance (10 rows), referenced by N fragments committed
with pylance's `LanceOperation.Append` (the manifest of an N-fragment table; every fragment reads
the same 10 rows, which keeps the build of a 10^5-fragment table to seconds). Per size:
- planner (this process): `plan_scan` (one split per fragment), `export_snapshot` once, and
  `export_split_snapshot` for every split;
- worker, a fresh process per side and run, sides rotating: the time to open the shipped bytes
  (full token, or the split's scoped token) and then to scan its split; pylance's worker opens
  the table by URI at the pinned version (it reads the manifest from storage: different work,
  listed as what a pylance user does) and reads the fragment with `get_fragment(id).to_table()`.
Staged commits: a one-row table pinned, N shares of one row each staged on it
(`stage_write`), then one `commit` of the N shares — timed; pylance's side commits N fragments
written by `write_fragments` with one `LanceOperation.Append`.
Local disk, page cache warm; medians with min-max.
"""

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SIDES = ["full token", "split-scoped token", "pylance (open by URI)"]


def build_table(uri, fragments):
    import lance
    import pyarrow as pa
    if Path(uri).exists():
        ds = lance.dataset(uri)
        if len(ds.get_fragments()) == fragments:
            return ds.version
        import shutil
        shutil.rmtree(uri)
    ds = lance.write_dataset(pa.table({"id": pa.array(range(10), pa.int64()),
                                       "name": pa.array([f"row-{i}" for i in range(10)])}), uri)
    meta = ds.get_fragments()[0].metadata
    more = [dataclasses.replace(meta, id=0) for _ in range(fragments - 1)]
    return lance.LanceDataset.commit(uri, lance.LanceOperation.Append(more), read_version=ds.version).version


def child(side, uri, version, token_path, split_path):
    t0 = time.perf_counter()
    if side == "pylance (open by URI)":
        import lance
        frag_id = int(Path(split_path).read_text())
        start = time.perf_counter()
        ds = lance.dataset(uri, version=version)
        opened = time.perf_counter()
        rows = ds.get_fragment(frag_id).to_table().num_rows
    else:
        import lance_host as lh
        token, split = Path(token_path).read_bytes(), lh.Split.from_bytes(Path(split_path).read_bytes())
        start = time.perf_counter()
        ds = lh.open_snapshot(token)
        opened = time.perf_counter()
        rows = ds.scan_split(split, ["id", "name"]).read_all().num_rows
    done = time.perf_counter()
    print("RESULT " + json.dumps({"open_ms": (opened - start) * 1e3, "open_scan_ms": (done - start) * 1e3,
                                  "rows": rows, "import_ms": (start - t0) * 1e3}))


def run_child(side, uri, version, token_path, split_path):
    out = subprocess.run([sys.executable, __file__, "--child", side, uri, str(version), token_path, split_path],
                         capture_output=True, text=True, check=True)
    line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[7:])


def med(xs):
    return statistics.median(xs), min(xs), max(xs)


def fmt(t, digits=1):
    m, lo, hi = t
    return f"{m:.{digits}f} ({lo:.{digits}f}–{hi:.{digits}f})"


def tokens(work, n, runs):
    import lance_host as lh
    uri = str(work / f"frags{n}.lance")
    version = build_table(uri, n)
    planner = lh.open(uri, version=version)
    t = time.perf_counter()
    splits = planner.plan_scan(0)
    plan_ms = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    full = planner.export_snapshot()
    full_ms = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    scoped = [planner.export_split_snapshot(s) for s in splits]
    scoped_ms = (time.perf_counter() - t) * 1e3
    k = len(splits) // 2
    files = {}
    for name, data in [("full", full), ("scoped", scoped[k]), ("split", bytes(splits[k]))]:
        files[name] = str(work / f"frags{n}.{name}")
        Path(files[name]).write_bytes(data)
    frag_file = str(work / f"frags{n}.fragment")
    Path(frag_file).write_text(str(splits[k].fragment_ids[0]))
    per_side = {s: [] for s in SIDES}
    for r in range(runs):
        for i in range(len(SIDES)):
            side = SIDES[(r + i) % len(SIDES)]
            token = files["full"] if side == "full token" else files["scoped"]
            split = frag_file if side.startswith("pylance") else files["split"]
            res = run_child(side, uri, version, token, split)
            assert res["rows"] == 10, res
            per_side[side].append(res)
    sizes = sorted(len(b) for b in scoped)
    return {
        "fragments": n, "splits": len(splits), "plan_ms": plan_ms,
        "full_token_bytes": len(full), "full_export_ms": full_ms,
        "scoped_token_bytes_median": statistics.median(sizes), "scoped_token_bytes_max": sizes[-1],
        "scoped_export_all_ms": scoped_ms, "scoped_export_per_split_us": scoped_ms * 1e3 / len(splits),
        "workers": {s: {"open_ms": med([x["open_ms"] for x in v]), "open_scan_ms": med([x["open_scan_ms"] for x in v])}
                    for s, v in per_side.items()},
    }


def commits(work, n, runs):
    import lance
    import lance_host as lh
    import pyarrow as pa
    out = {"shares": n, "lance-host commit_ms": [], "pylance commit_ms": [], "stage_ms_per_share": []}
    one = pa.table({"id": pa.array([0], pa.int64()), "name": pa.array(["x"])})
    for r in range(runs):
        for side in (["lance-host", "pylance"] if r % 2 == 0 else ["pylance", "lance-host"]):
            uri = str(work / f"commit{n}-{r}-{side}.lance")
            lance.write_dataset(one, uri, mode="overwrite")
            if side == "lance-host":
                at = lh.open(uri)
                t = time.perf_counter()
                shares = [lh.stage_write(uri, one, "append", at=at) for _ in range(n)]
                out["stage_ms_per_share"].append((time.perf_counter() - t) * 1e3 / n)
                t = time.perf_counter()
                ds, _ = lh.commit(uri, shares)
                out["lance-host commit_ms"].append((time.perf_counter() - t) * 1e3)
                assert ds.count_rows() == n + 1
            else:
                from lance.fragment import write_fragments
                base = lance.dataset(uri)
                frags = [f for _ in range(n) for f in write_fragments(one, uri, schema=one.schema)]
                t = time.perf_counter()
                ds = lance.LanceDataset.commit(uri, lance.LanceOperation.Append(frags), read_version=base.version)
                out["pylance commit_ms"].append((time.perf_counter() - t) * 1e3)
                assert ds.count_rows() == n + 1
            assert lance.dataset(uri).count_rows() == n + 1
            import shutil
            shutil.rmtree(uri)
    for k in ["lance-host commit_ms", "pylance commit_ms", "stage_ms_per_share"]:
        out[k] = med(out[k])
    return out


def report(results, args):
    import lance
    import lance_host as lh
    load = os.getloadavg()
    lines = [
        "# Shipping snapshots to workers at scale: full and split-scoped tokens; staged commits",
        "",
        f"Generated by `bench/scoped_tokens.py` on {time.strftime('%Y-%m-%d')}, 2 cores (load average "
        f"{load[0]:.1f} at the end), library profile `{lh.build_profile()}`, pylance {lance.__version__}; "
        f"{args.runs} runs; cells are medians (min–max). How the tables are made and what each side does: "
        "the docstring of the script. Local disk, page cache warm.",
        "",
        "## Tokens: bytes shipped per worker and a worker's open",
        "",
        "| fragments | full token bytes | scoped token bytes (median, max) | export: full once ms | export: every scoped token ms (per split µs) | plan ms |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    planner_note = ("The planner columns (export and plan times) are one measurement each, in the planner "
                    "process after the table was opened: no spread is claimed for them; they show how the "
                    "cost grows with the fragments.")
    for t in results["tokens"]:
        lines.append(f"| {t['fragments']:,} | {t['full_token_bytes']:,} | {t['scoped_token_bytes_median']:,.0f}, "
                     f"{t['scoped_token_bytes_max']:,} | {t['full_export_ms']:.1f} | {t['scoped_export_all_ms']:.0f} "
                     f"({t['scoped_export_per_split_us']:.0f}) | {t['plan_ms']:.0f} |")
    lines += ["", planner_note]
    lines += ["", "Worker, fresh process per run: open the shipped bytes (pylance: the table by URI), then read "
              "the split's 10 rows. ms, median (min–max).", "",
              "| fragments | " + " | ".join(f"{s}: open | {s}: open + scan" for s in SIDES) + " |",
              "| ---: |" + " ---: | ---: |" * len(SIDES)]
    for t in results["tokens"]:
        cells = []
        for s in SIDES:
            w = t["workers"][s]
            cells += [fmt(w["open_ms"]), fmt(w["open_scan_ms"])]
        lines.append(f"| {t['fragments']:,} | " + " | ".join(cells) + " |")
    lines += ["", "## Committing staged shares", "",
              "One commit of N one-row shares staged on the pinned version (lance-host: `commit` with its checks "
              "of every share; pylance: `LanceDataset.commit` of N fragments with `LanceOperation.Append`, no share "
              "checks). ms, median (min–max).", "",
              "| shares | lance-host commit ms | pylance commit ms | lance-host / pylance | staging, ms per share |",
              "| ---: | ---: | ---: | ---: | ---: |"]
    for c in results["commits"]:
        lines.append(f"| {c['shares']:,} | {fmt(c['lance-host commit_ms'])} | {fmt(c['pylance commit_ms'])} | "
                     f"{c['lance-host commit_ms'][0] / c['pylance commit_ms'][0]:.2f} | {fmt(c['stage_ms_per_share'], 2)} |")
    (ROOT / "SCOPED_TOKENS.md").write_text("\n".join(lines) + "\n")
    (ROOT / "SCOPED_TOKENS.json").write_text(json.dumps(results, indent=1) + "\n")
    print("\n".join(lines))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
    ap = argparse.ArgumentParser()
    ap.add_argument("--fragments", default="1000,10000,100000")
    ap.add_argument("--shares", default="10,100,1000,10000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="scoped-tokens-"))
    work.mkdir(parents=True, exist_ok=True)
    results = {"tokens": [tokens(work, int(n), args.runs) for n in args.fragments.split(",")],
               "commits": [commits(work, int(n), max(1, args.runs // 2) if int(n) >= 10000 else args.runs)
                           for n in args.shares.split(",")]}
    report(results, args)


if __name__ == "__main__":
    main()
