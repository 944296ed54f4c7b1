"""Encodings a writer may choose (issue 62, "tables that are cheap to read"): the lineitem-shaped
table of bench/tpch.py as pylance 14.0.2 writes it by default, against the same rows written with
one per-column setting Lance 14 offers (`lance-encoding:dict-size-ratio` = 1.0) on the two
1-character flag columns. Writes bench/ENCODINGS.md and bench/ENCODINGS.json.

    LANCE_HOST_LIB=<release liblance_host.so> python3 bench/encodings.py [--rows 6000000] [--runs 5]
        [--work DIR]

Why those columns: Lance 14 dictionary-encodes a string page when its dictionary plus 32-bit
indices would take at most 0.8 of the plain page (the indices are bit-packed afterwards, so the
estimate is 4 bytes a row); a 1-character string takes 5 bytes a row plain (4 of offset), so 4 >
0.8 * 5 and such columns stay plain whatever their cardinality. Longer low-cardinality strings
(l_shipmode, l_shipinstruct) and low-cardinality decimals (l_discount, l_tax) are dictionary-encoded
by default already; high-cardinality decimals have no narrower encoding in Lance 14 than 16 bytes
a value but general compression. Sides, each run a fresh process (one warm-up, then the timed
execution), variants alternating: a lance-host scan of the two flag columns, and Q1 as written
(lance-host's one call).
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
sys.path.insert(0, str(ROOT))
from aggregates import generate  # noqa: E402
from tpch import cpu_seconds, query_runner  # noqa: E402

FLAGS = ["l_returnflag", "l_linestatus"]
VARIANTS = {"pylance default": "lineitem.lance", "dict-size-ratio 1.0 on the flags": "lineitem_dict.lance"}
WORK = ["scan of the two flag columns", "Q1 (lance-host one call)"]


def rewrite(src, dst):
    """The rows of `src` written again by pylance with the flags' dictionary ratio at 1.0."""
    import lance
    import pyarrow as pa
    ds = lance.dataset(src)
    fields = [f.with_metadata({"lance-encoding:dict-size-ratio": "1.0"}) if f.name in FLAGS else f
              for f in ds.schema]
    schema = pa.schema(fields)
    reader = ds.scanner(batch_size=65_536).to_reader()
    batches = (pa.record_batch(b.columns, schema=schema) for b in reader)
    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches), dst, max_rows_per_file=1_000_000)


def column_bytes(uri):
    """Bytes of each column in the table's data files (pages and buffers, from the file metadata)."""
    import lance
    from lance.file import LanceFileReader
    ds = lance.dataset(uri)
    names = [f.name for f in ds.schema]
    total = {n: 0 for n in names}
    for frag in ds.get_fragments():
        for df in frag.data_files():
            meta = LanceFileReader(f"{uri}/data/{df.path}").metadata()
            for i, col in enumerate(meta.columns):
                total[names[i]] += sum(sum(b.size for b in p.buffers) for p in col.pages)
    return total


def child(work, uri):
    import lance_host as lh
    if work == WORK[0]:
        ds = lh.open(uri)

        def run():
            return sum(b.num_rows for b in ds.scan(columns=FLAGS))
    else:
        run = query_runner("lance-host (one call)", "Q1", uri, None, None)
    run()
    cpu, start = cpu_seconds(), time.perf_counter()
    out = run()
    print("RESULT " + json.dumps({"seconds": time.perf_counter() - start, "cpu": cpu_seconds() - cpu,
                                  # groups come in any order
                                  "answer": out if isinstance(out, int) else sorted(map(str, out)),
                                  "profile": lh.build_profile()}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=6_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--work", default=None, help="reuse a directory holding bench/tpch.py's generated table")
    ap.add_argument("--child", nargs=2)
    args = ap.parse_args()
    if args.child:
        return child(*args.child)
    from report import publish, rotated, spread
    work = Path(args.work or tempfile.mkdtemp(prefix="lh-enc-"))
    if not (work / VARIANTS["pylance default"]).exists():
        generate(str(work / VARIANTS["pylance default"]), str(work / "lineitem.parquet"), args.rows)
    if not (work / VARIANTS["dict-size-ratio 1.0 on the flags"]).exists():
        rewrite(str(work / VARIANTS["pylance default"]), str(work / VARIANTS["dict-size-ratio 1.0 on the flags"]))
    sizes = {v: column_bytes(str(work / p)) for v, p in VARIANTS.items()}
    load = os.getloadavg()
    results = {w: {v: [] for v in VARIANTS} for w in WORK}
    for w in WORK:
        answers = set()
        for run in range(args.runs):
            for v in rotated(list(VARIANTS), run):
                out = subprocess.run([sys.executable, __file__, "--child", w, str(work / VARIANTS[v])],
                                     capture_output=True, text=True, timeout=1800)
                line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
                if out.returncode != 0 or not line:
                    raise SystemExit(f"{w} {v} failed:\n{out.stderr[-3000:]}")
                r = json.loads(line[0][7:])
                answers.add(json.dumps(r.pop("answer")))
                results[w][v].append(r)
                print(w, v, f"{r['seconds']:.3f} s", flush=True)
        assert len(answers) == 1, f"{w}: the variants answered differently: {answers}"
    load_after = os.getloadavg()
    (ROOT / "ENCODINGS.json").write_text(json.dumps({"rows": args.rows, "sizes": sizes, "results": results,
                                                     "load": [load, load_after]}, indent=1))
    med = statistics.median
    default, dict_ = list(VARIANTS)
    lines = [
        "# Encodings a writer may choose: the flag columns",
        "",
        f"Generated by `bench/encodings.py --rows {args.rows} --runs {args.runs}` on {time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} cores, load average {load[0]:.2f} before and {load_after[0]:.2f} after, library built "
        f"`{results[WORK[0]][default][0]['profile']}`. The lineitem-shaped table of bench/TPCH.md ({args.rows:,} "
        "rows, 1,000,000 per file) written by pylance 14.0.2 with its defaults, and the same rows written again "
        "with `lance-encoding:dict-size-ratio` = 1.0 on `l_returnflag` and `l_linestatus`. Both answer alike "
        "(checked every run).",
        "",
        "| column | bytes, pylance default | bytes, ratio 1.0 on the flags |",
        "|---|---:|---:|",
    ]
    for col in sizes[default]:
        lines.append(f"| `{col}` | {sizes[default][col]:,} | {sizes[dict_][col]:,} |")
    lines.append(f"| **all** | {sum(sizes[default].values()):,} | {sum(sizes[dict_].values()):,} |")
    lines += ["", "| work | variant | time, s: median (min–max) | CPU-s (median) | × pylance default |", "|---|---|---|---|---|"]
    for w in WORK:
        base = [r["seconds"] for r in results[w][default]]
        for v in VARIANTS:
            secs = [r["seconds"] for r in results[w][v]]
            lines.append(f"| {w} | {v} | {spread(secs, 3)} | {med([r['cpu'] for r in results[w][v]]):.3f} | "
                         f"{med([s / b for s, b in zip(secs, base)]):.2f} |")
    publish(ROOT / "ENCODINGS.md", lines)


if __name__ == "__main__":
    main()
