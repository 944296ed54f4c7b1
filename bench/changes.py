"""Change data between two versions (issue 49): lance-host's change splits against pylance's
`delta` on the same table and versions. Writes bench/CHANGES.md and bench/CHANGES.json.

    LANCE_HOST_LIB=<release liblance_host.so> python3 bench/changes.py [--rows 3000000] [--runs 5]

The table (stable row ids, 1M rows per file) is written by pylance; then 1% of its rows change
in three versions: an append (1% new rows), an update (1% of the rows), a delete (1%). The
changes between the first and the last version are read by:
- lance-host: `plan_changes` (planning timed on its own), then every change split read in one
  process: inserted and updated rows with all columns, deleted rows with their values as they
  were at the begin version;
- pylance: `delta(begin, end)`: `get_inserted_rows()`, `get_updated_rows()` read whole, and
  `get_deleted_row_ids()` — row ids only; "pylance + values" also takes the deleted rows'
  values from the begin version (`take` by row id), the work lance-host does.
Each measured run is a fresh process (libraries loaded before the clock; open, plan and read timed, the checks after it), sides alternate, one untimed warm-up
run per side first; medians with min-max. Every side's rows are checked against the others
(ids per change type).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SIDES = ["lance-host", "pylance", "pylance + values"]


def generate(uri, n):
    import lance
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(49)
    chunk = 1_000_000

    def part(start, end):
        ids = np.arange(start, end)
        return pa.table({"id": pa.array(ids, pa.int64()),
                         "qty": pa.array(rng.integers(0, 1000, end - start), pa.int64()),
                         "price": pa.array(rng.random(end - start) * 100, pa.float64()),
                         "name": pa.array([f"item-{i % 9973}" for i in ids])})

    def batches():
        for s in range(0, n, chunk):
            yield from part(s, min(n, s + chunk)).to_batches()

    schema = part(0, 1).schema
    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), uri,
                        max_rows_per_file=chunk, enable_stable_row_ids=True)
    one = n // 100
    lance.write_dataset(part(n, n + one), uri, mode="append")
    lance.dataset(uri).update({"qty": "qty + 1"}, where=f"id >= {n // 3} AND id < {n // 3 + one}")
    lance.dataset(uri).delete(f"id >= {2 * n // 3} AND id < {2 * n // 3 + one}")
    return 1, lance.dataset(uri).version


def run_side(side, uri, begin, end):
    """One measured run in this process (the imports before the clock: loading the libraries is
    the process's, not the operation's); prints JSON."""
    import lance
    import lance_host as lh
    import pyarrow as pa
    import pyarrow.compute as pc
    t0 = time.perf_counter()
    out = {}
    if side == "lance-host":
        ds = lh.open(uri, version=end)
        t1 = time.perf_counter()
        splits = ds.plan_changes(begin)
        out["plan_s"] = time.perf_counter() - t1
        parts = [ds.scan_split(s).read_all() for s in splits]
        out["total_s"] = time.perf_counter() - t0
        t = pa.concat_tables(parts)
        ids, sums = {}, {}
        for kind in ("insert", "update", "delete"):
            sel = t.filter(pc.equal(t["_change_type"], kind))
            ids[kind] = sel.num_rows
            sums[kind] = pc.sum(sel["id"]).as_py() or 0
        out["splits"] = len(splits)
    else:
        ds = lance.dataset(uri, version=end)
        d = ds.delta(begin_version=begin, end_version=end)
        ins = d.get_inserted_rows().read_all()
        upd = d.get_updated_rows().read_all()
        dele = d.get_deleted_row_ids().read_all()
        taken = None
        if side == "pylance + values":
            taken = lance.dataset(uri, version=begin)._take_rows(dele["_rowid"].to_pylist())
        out["total_s"] = time.perf_counter() - t0
        ids = {"insert": ins.num_rows, "update": upd.num_rows, "delete": dele.num_rows}
        sums = {"insert": pc.sum(ins["id"]).as_py() or 0, "update": pc.sum(upd["id"]).as_py() or 0,
                "delete": None if taken is None else pc.sum(taken["id"]).as_py() or 0}
    out["rows"] = ids
    out["id_sums"] = sums
    print(json.dumps(out))


def measure(side, uri, begin, end):
    env = dict(os.environ)
    r = subprocess.run([sys.executable, __file__, "--side", side, "--uri", uri, "--begin", str(begin),
                        "--end", str(end)], capture_output=True, text=True, env=env, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--side")
    ap.add_argument("--uri")
    ap.add_argument("--begin", type=int)
    ap.add_argument("--end", type=int)
    a = ap.parse_args()
    if a.side:
        return run_side(a.side, a.uri, a.begin, a.end)
    import lance_host as lh
    tmp = tempfile.mkdtemp(prefix="lh-changes-")
    uri = os.path.join(tmp, "t.lance")
    t0 = time.perf_counter()
    begin, end = generate(uri, a.rows)
    print(f"generated {a.rows} rows and 3 changed versions in {time.perf_counter() - t0:.0f} s", flush=True)
    for side in SIDES:  # warm-up (page cache), not timed
        measure(side, uri, begin, end)
    results = {s: [] for s in SIDES}
    for i in range(a.runs):
        for side in (SIDES if i % 2 == 0 else list(reversed(SIDES))):
            results[side].append(measure(side, uri, begin, end))
    # every side found the same rows
    ref = results["lance-host"][0]
    for side in SIDES:
        for r in results[side]:
            assert r["rows"] == ref["rows"], (side, r["rows"], ref["rows"])
            for kind in ("insert", "update"):
                assert r["id_sums"][kind] == ref["id_sums"][kind], (side, kind)
            if r["id_sums"]["delete"] is not None:
                assert r["id_sums"]["delete"] == ref["id_sums"]["delete"], side

    def stat(values):
        return {"median": statistics.median(values), "min": min(values), "max": max(values)}

    report = {"rows": a.rows, "runs": a.runs, "begin": begin, "end": end, "changed": ref["rows"],
              "library": lh.build_profile(),
              "sides": {s: {"total_s": stat([r["total_s"] for r in results[s]])} for s in SIDES}}
    report["sides"]["lance-host"]["plan_s"] = stat([r["plan_s"] for r in results["lance-host"]])
    report["sides"]["lance-host"]["splits"] = ref["splits"]
    (ROOT / "CHANGES.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = ["# Change data between two versions: lance-host change splits vs pylance `delta`", "",
             f"Table: {a.rows:,} rows (stable row ids, 1M rows per file), written by pylance; then an append "
             f"of 1%, an update of 1% and a delete of 1% of the rows (versions {begin} → {end}). "
             f"Changes read: {ref['rows']['insert']:,} inserted, {ref['rows']['update']:,} updated, "
             f"{ref['rows']['delete']:,} deleted rows. Release library ({report['library']}), "
             f"{a.runs} runs per side, each a fresh process (libraries loaded, then open, plan and read timed), sides alternating after "
             "one warm-up run each. Seconds, median (min-max). Every run's rows were checked against "
             "the others (count and sum of ids per change type).", "",
             "| side | total | of which planning |", "|---|---|---|"]
    for s in SIDES:
        t = report["sides"][s]["total_s"]
        plan = report["sides"][s].get("plan_s")
        p = f"{plan['median']:.3f} ({plan['min']:.3f}-{plan['max']:.3f})" if plan else "—"
        lines.append(f"| {s} | {t['median']:.3f} ({t['min']:.3f}-{t['max']:.3f}) | {p} |")
    lines += ["", "Different work: pylance's `get_deleted_row_ids` returns the deleted rows' ids only; lance-host "
              "returns their values as they were at the begin version (\"pylance + values\" adds a take of those "
              "rows by id, the same work). lance-host reads all columns of every change split in one process "
              f"({ref['splits']} splits); a distributed reader spreads them over workers.", ""]
    (ROOT / "CHANGES.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
