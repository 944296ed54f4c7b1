"""Drive the lance-host benchmark: lance-host (C ABI), native Lance and pylance on the same
table, each run in its own process, sides alternating, and write bench/REPORT.md.

    python3 bench/run.py --bin <lance-host-bench> [--rows N] [--runs 5] [--iters 3]
                         [--alt-bin <lance-host-bench built with mimalloc>] [--no-s3]

Per process: open, one warm-up, then the measured iterations (scans: --iters; searches: the
20 query vectors of the facts file); the process's value is the median of its iterations.
Reported: median over --runs processes per side, min-max, the median of per-run ratios
lance-host / pylance, recall@10 against the exact top-10 written with the table, peak RSS and
minor page faults per process, and on s3:// the requests the S3-compatible server logged per
iteration.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from report import publish

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

WORKS = [
    ("scan", "full scan, 5 columns without `vec`"),
    ("scan_vec", "full scan, all 6 columns incl. `vec`"),
    ("filter", "filtered scan `price < 10`, 2 columns"),
    ("scan_2t", "split-parallel scan (fragments), 2 threads"),
    ("take", "take 1,000 row ids (2 columns)"),
    ("search8", "vector search k=10 nprobes=8 refine 4, serial"),
    ("search32", "vector search k=10 nprobes=32 refine 4, serial"),
    ("search8_2t", "vector search k=10 nprobes=8 refine 4, 2 worker threads"),
    ("search8_seg", "vector search k=10 nprobes=8, per-segment re-rank (no deferred refine)"),
]
NATIVE_WORKS = {"scan", "scan_vec", "filter", "take", "search8", "search32"}


def run_side(cmd, env, moto_log=None):
    """Run one side's process; return its JSON result plus per-iteration request counts."""
    env = dict(os.environ, **env)
    handshake = moto_log is not None
    if handshake:
        env["BENCH_HANDSHAKE"] = "1"
    p = subprocess.Popen(
        cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, cwd=ROOT,
    )
    requests, begin = [], None
    result = None
    for line in p.stdout:
        line = line.strip()
        if line.startswith("MARK "):
            if line.startswith("MARK end"):
                time.sleep(0.15)  # let the server finish logging the last requests
                requests.append(count_requests(moto_log) - begin)
            else:
                begin = count_requests(moto_log)
            p.stdin.write("\n")
            p.stdin.flush()
        elif line.startswith("{"):
            result = json.loads(line)
    err = p.stderr.read()
    if p.wait() != 0 or result is None:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err[-4000:]}")
    if handshake:
        result["requests"] = requests
    return result


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def count_requests(log):
    """Request lines of the server's access log (werkzeug colours some of them)."""
    with open(log, errors="replace") as f:
        return sum(1 for l in f if re.search(r'"(GET|HEAD|PUT|POST|DELETE) ', ANSI.sub("", l)))


def side_cmd(side, args, work, uri, facts):
    if side == "pylance":
        return [sys.executable, str(HERE / "pylance_side.py"), work, uri, facts]
    return [args.bin, side, work, uri, facts]


def measure(args, works, uri, facts, sides_for, env=None, moto_log=None, runs=None):
    """Alternate the sides of every work `runs` times; return {work: {side: [results]}}."""
    out = {}
    for work in works:
        sides = sides_for(work)
        out[work] = {s: [] for s in sides}
        for r in range(runs or args.runs):
            order = sides[r % len(sides):] + sides[: r % len(sides)]
            for side in order:
                res = run_side(side_cmd(side, args, work, uri, facts), dict(env or {}, BENCH_ITERS=str(args.iters)), moto_log)
                out[work][side].append(res)
                print(f"  {work} run {r + 1} {side}: {statistics.median(res['ms']):.1f} ms"
                      f" rss {res['maxrss_kb'] // 1024} MiB", file=sys.stderr, flush=True)
    return out


def med(res):
    return statistics.median(res["ms"])


def summary(results):
    vals = [med(r) for r in results]
    return statistics.median(vals), min(vals), max(vals)


def fmt_ms(v):
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def ratio_cell(host, other):
    """Median of per-run ratios, with min-max; runs are paired in the order they alternated."""
    ratios = sorted(med(h) / med(o) for h, o in zip(host, other))
    m = statistics.median(ratios)
    return f"{m:.2f} ({ratios[0]:.2f}–{ratios[-1]:.2f})", m, ratios


def verdict(ratios):
    """Whether a ratio's whole min-max range lies on one side of 1.0."""
    if ratios[-1] < 1.0:
        return "faster in every run"
    if ratios[0] > 1.0:
        return "slower in every run"
    return "within run-to-run noise"


def table_rows(title, res, works_desc, lines):
    lines.append(f"### {title}\n")
    lines.append("| work | lance-host ms (min–max) | pylance ms (min–max) | native Lance ms | lance-host / pylance (min–max) | reading | recall@10 host / pylance | peak RSS MiB host / pylance | calling-thread CPU ms host / pylance |")
    lines.append("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
    for work, desc in works_desc:
        if work not in res:
            continue
        r = res[work]
        h = summary(r["host"])
        p = summary(r["pylance"])
        n = f"{fmt_ms(summary(r['native'])[0])}" if r.get("native") else "—"
        cell, m, ratios = ratio_cell(r["host"], r["pylance"])
        rec = "—"
        if r["host"][0]["recall"] is not None:
            rec = f"{statistics.median(x['recall'] for x in r['host']):.3f} / {statistics.median(x['recall'] for x in r['pylance']):.3f}"
        rss = f"{statistics.median(x['maxrss_kb'] for x in r['host']) / 1024:.0f} / {statistics.median(x['maxrss_kb'] for x in r['pylance']) / 1024:.0f}"
        tcpu = " / ".join(
            f"{statistics.median(statistics.median(x['thread_cpu_ms']) for x in r[side]):.1f}"
            for side in ("host", "pylance")
        )
        lines.append(
            f"| {desc} | {fmt_ms(h[0])} ({fmt_ms(h[1])}–{fmt_ms(h[2])}) | {fmt_ms(p[0])} ({fmt_ms(p[1])}–{fmt_ms(p[2])}) | {n} | {cell} | {verdict(ratios)} | {rec} | {rss} | {tcpu} |"
        )
    lines.append("")


def start_moto(tmp):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    log = Path(tmp) / "moto.log"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/integration/moto_server.py"), str(port)],
        stdout=subprocess.DEVNULL, stderr=open(log, "w"),
    )
    ep = f"http://127.0.0.1:{port}"
    import urllib.request

    for _ in range(100):
        try:
            urllib.request.urlopen(ep, timeout=1)
            break
        except Exception:
            time.sleep(0.2)
    return proc, ep, log


def upload(ep, table_dir, bucket, prefix):
    import boto3
    from concurrent.futures import ThreadPoolExecutor

    s3 = boto3.client("s3", endpoint_url=ep, aws_access_key_id="testing",
                      aws_secret_access_key="testing", region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    files = [p for p in Path(table_dir).rglob("*") if p.is_file()]

    def put(p):
        s3.upload_file(str(p), bucket, f"{prefix}/{p.relative_to(table_dir)}")

    with ThreadPoolExecutor(8) as ex:
        list(ex.map(put, files))


def vec_page_bytes(table):
    """The sizes of the `vec` pages in the first data file, as text (pylance's file reader)."""
    try:
        import lance
        from lance.file import LanceFileReader

        ds = lance.dataset(str(table))
        path = ds.get_fragments()[0].data_files()[0].path
        meta = LanceFileReader(str(Path(table) / "data" / path)).metadata()
        col = ds.schema.get_field_index("vec")
        sizes = [sum(b.size for b in p.buffers) for p in meta.columns[col].pages]
        return f"{len(sizes)} pages of {max(sizes) / 2**20:.1f} MiB in a fragment of this table"
    except Exception as e:  # noqa: BLE001 - the narrative must not stop the report
        return f"page sizes unavailable: {e}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--alt-bin", help="lance-host-bench built without mimalloc (system allocator)")
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--data", default=str(Path.home() / ".cache/lance-host/bench"))
    ap.add_argument("--no-s3", action="store_true")
    ap.add_argument("--works", default=",".join(w for w, _ in WORKS))
    ap.add_argument("--report", default=str(HERE / "REPORT.md"))
    args = ap.parse_args()
    data = Path(args.data) / f"rows{args.rows}"
    data.mkdir(parents=True, exist_ok=True)
    table = data / "bench.lance"
    facts = data / "facts.json"
    if not facts.exists():
        print(f"==> writing {args.rows} rows to {table}", file=sys.stderr, flush=True)
        t = time.time()
        subprocess.run([args.bin, "write", str(table), str(facts), str(args.rows)], check=True)
        print(f"    written in {time.time() - t:.0f} s", file=sys.stderr)
    meta = json.loads(facts.read_text())
    size = sum(p.stat().st_size for p in table.rglob("*") if p.is_file())
    works = [w for w in args.works.split(",") if w]
    desc = [(w, d) for w, d in WORKS if w in works]
    lines = ["# lance-host benchmark report", ""]
    lines.append(
        f"Generated by `bench/bench.sh` (`bench/run.py`) on {time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} cores, release profile. Table: {meta['rows']:,} rows, "
        f"{size / 2**30:.2f} GiB on disk, Lance file format 2.1, {meta['fragments']} fragments; "
        f"columns id, cat, price, ts, payload, `vec` fixed_size_list<float32,128>; IVF_PQ "
        f"(256 partitions, 16 sub-vectors) in 2 segments over {meta['segment_rows'][0]:,} + "
        f"{meta['segment_rows'][1]:,} rows plus a {meta['tail_rows']:,}-row unindexed tail; "
        f"BTREE on id. lance-host is built as a release install ships it (mimalloc as its "
        f"allocator, see the allocator table). Every cell is the median over {args.runs} processes per side, sides "
        f"alternating (A B C, B C A, …); a process's value is the median of its iterations "
        f"({args.iters} per scan, the 20 query vectors per search) after one warm-up. Ratios "
        f"are medians of the per-run ratios, with their min–max; 'reading' says whether the "
        f"whole range lies on one side of 1.0 — anything else is reported as noise."
    )
    lines.append("")
    local = measure(args, works, str(table), str(facts),
                    lambda w: ["host", "pylance"] + (["native"] if w in NATIVE_WORKS else []))
    table_rows("Local table", local, desc, lines)

    if not args.no_s3:
        with tempfile.TemporaryDirectory() as tmp:
            proc, ep, log = start_moto(tmp)
            try:
                print("==> uploading the table to the local S3-compatible server", file=sys.stderr, flush=True)
                upload(ep, table, "bench", "bench.lance")
                s3_works = [w for w in ("search8", "filter") if w in works]
                s3 = measure(args, s3_works, "s3://bench/bench.lance", str(facts),
                             lambda w: ["host", "pylance"], env={"BENCH_S3_ENDPOINT": ep},
                             moto_log=log, runs=max(3, args.runs // 2 + 1))
            finally:
                proc.terminate()
        table_rows("`s3://` through a local S3-compatible server (moto)", s3, desc, lines)
        lines.append("| work on `s3://` | requests per iteration, lance-host | requests per iteration, pylance |")
        lines.append("| --- | ---: | ---: |")
        for w, d in desc:
            if w in s3:
                h = statistics.median(x for r in s3[w]["host"] for x in r["requests"])
                p = statistics.median(x for r in s3[w]["pylance"] for x in r["requests"])
                lines.append(f"| {d} | {h:.0f} | {p:.0f} |")
        lines.append("")

    # Memory / throughput curve of the full scan including `vec` (lance-host only).
    lines.append("### Full scan incl. `vec`: memory bound versus throughput (lance-host)\n")
    lines.append("| io_buffer_bytes | fragment_readahead | batch_readahead | median ms (min–max) | rows/s | peak RSS MiB (median) |")
    lines.append("| ---: | ---: | ---: | ---: | ---: | ---: |")
    floor, files = [], []
    curve = [(2048, 4, 0), (256, 4, 0), (128, 2, 0), (64, 2, 0), (32, 1, 0), (16, 1, 1), (8, 1, 1)]
    for io, fr, br in curve:
        env = {"BENCH_IO_BUFFER": str(io << 20), "BENCH_FRAGMENT_READAHEAD": str(fr), "BENCH_BATCH_READAHEAD": str(br)}
        res = [run_side([args.bin, "host", "scan_vec", str(table), str(facts)], dict(env, BENCH_ITERS=str(args.iters))) for _ in range(3)]
        m, lo, hi = summary(res)
        rss = statistics.median(r["maxrss_kb"] for r in res) / 1024
        lines.append(f"| {io} MiB | {fr} | {br or 'default'} | {fmt_ms(m)} ({fmt_ms(lo)}–{fmt_ms(hi)}) | {res[0]['rows'] / (m / 1e3) / 1e6:.2f} M | {rss:.0f} |")
        floor.append(rss)
        files += [r["rss_file_kb"] / 1024 for r in res if r.get("rss_file_kb", -1) >= 0]
    lines.append("")
    if "scan" in local:
        no_vec = statistics.median(x["maxrss_kb"] for x in local["scan"]["host"]) / 1024
        pages = vec_page_bytes(table)
        code = f"{statistics.median(files):.0f} MiB" if files else "an unmeasured part"
        lines.append(
            f"The process peaks at {min(floor):.0f} MiB at best on this scan, however small the I/O "
            f"buffer and read-ahead; the same process scanning the five columns without `vec` peaks "
            f"at {no_vec:.0f} MiB. Of the peak, {code} is file-backed (the binary's code pages). "
            f"What the scan holds was measured with a heap profiler on a glibc build (heaptrack, before the blocking-thread cap): about 135 MiB "
            f"at its peak, of which the page reads are most. Lance reads a page of `vec` whole "
            f"({pages}), in I/O requests of at most 16 MiB that it then copies back into one buffer, "
            f"and decodes each batch into a buffer of its own, so a page passes through three "
            f"allocations of its size or more; the rest of the peak is freed memory the allocator "
            f"keeps for reuse. Returning it at once (mimalloc's purge delay 0) brought the peak to "
            f"219 MiB and tripled the scan's time. Smaller pages would need to be chosen when the "
            f"table is written."
        )
        lines.append("")

    if args.alt_bin:
        lines.append("### Allocator: mimalloc (release default) versus glibc malloc (lance-host side)\n")
        lines.append("| work | glibc ms | mimalloc ms | mimalloc / glibc (min–max) | minor faults glibc / mimalloc | peak RSS MiB glibc / mimalloc |")
        lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
        for w in ("scan_vec", "filter", "search8", "search8_2t"):
            mi, gl = [], []
            for r in range(args.runs):
                pair = [(args.bin, mi), (args.alt_bin, gl)]
                for binary, acc in (pair if r % 2 == 0 else pair[::-1]):
                    acc.append(run_side([binary, "host", w, str(table), str(facts)], {"BENCH_ITERS": str(args.iters)}))
            cell, _, _ = ratio_cell(mi, gl)
            flt = f"{statistics.median(x['minflt'] for x in gl):,.0f} / {statistics.median(x['minflt'] for x in mi):,.0f}"
            rss = f"{statistics.median(x['maxrss_kb'] for x in gl) / 1024:.0f} / {statistics.median(x['maxrss_kb'] for x in mi) / 1024:.0f}"
            lines.append(f"| {dict(WORKS)[w]} | {fmt_ms(summary(gl)[0])} | {fmt_ms(summary(mi)[0])} | {cell} | {flt} | {rss} |")
        lines.append("")

    lines.append("## Where the sides do different work\n")
    lines += [
        "- Vector search: lance-host plans the pinned snapshot (one split per index segment, the "
        "unindexed fragments grouped into one flat split), starts every split's search, merges the "
        "segments' approximate top-40 (`defer_refine`), re-ranks them once with "
        "`lance_dataset_refine_v2` (exact distances from one batched take of their vectors), merges "
        "that with the exact flat result and takes the 10 winners' `id` by `_rowid` — all through "
        "the C ABI. pylance and native Lance run one global search with `refine_factor=4` "
        "projecting `id`: the same index partitions, the same 40 re-ranked candidates, the same "
        "flat pass over the tail. 'per-segment re-rank' is the default split search, where each "
        "segment re-ranks its own 40 candidates (twice the candidate reads).",
        "- Scans: lance-host exports an Arrow C stream that the bench imports batch by batch; "
        "pylance yields pyarrow batches; native Lance drains the Rust stream. Split-parallel: "
        "lance-host plans one scan split per fragment and two host threads scan alternate splits; "
        "pylance scans alternate fragments from two Python threads.",
        "- Take: the same 1,000 sorted row ids, columns `id` and `price`, on every side.",
        "- `s3://`: requests are what the S3-compatible server logged during each measured "
        "iteration (after one warm-up iteration in the same process, so index partitions already "
        "read stay cached on both sides). The server is moto (Python), slow per request, so "
        "latency there mostly follows the request count.",
        "- Calling-thread CPU is the CPU time of the thread that called the API during an "
        "iteration (lance-host: the host thread that receives the batches; pylance: the Python "
        "thread), i.e. how much of the work lands on the caller's thread.",
        "- Peak RSS is the process's high-water mark (VmHWM) after its iterations: the Rust "
        "bench binary versus a Python interpreter with pyarrow and pylance loaded.",
        "",
    ]

    raw = Path(args.report).with_suffix(".json")
    raw.write_text(json.dumps({"local": local}, indent=1))
    publish(Path(args.report), lines)


if __name__ == "__main__":
    main()
