"""Write throughput: lance-host (the `lance_host` package over the C ABI, release library) against
pylance 14.0.2 doing the same writes, side by side in one run, each run in fresh processes,
sides alternating (A B, B A, ...). Writes bench/WRITE.md.

    LANCE_HOST_LIB=<release liblance_host.so> python3 bench/write.py [--rows 3000000] [--runs 3]

Rows: id (int64), cat (string), price (double), emb (128 x float32) — 0.53 KB a row, so 3M rows
are 1.6 GB. The data is generated in each process before the clock starts (seeded: both sides
write the same bytes).

  create        one process writes every row as a new table (lance_host.write_table /
                lance.write_dataset)
  distributed   2 worker processes each write half of the rows into an existing table without
                committing (lance_host.stage_write / lance.fragment.write_fragments with
                return_transaction=True), then one commit of both (lance_host.commit /
                LanceDataset.commit of one Append); timed from the moment both workers hold
                their data to the commit's return
  delete        delete 1 % of the rows of the 3M-row table (a new predicate each run; each side
                on its own copy of the table, the copy not timed)
  merge_insert  then upsert 100,000 rows (half update existing ids, half are new) by id

On s3:// (a local moto server, a fresh one per run, --s3-rows rows, default 300,000) the create
and distributed writes are also run and the server's log gives the requests of each side
(PUT, POST, GET, HEAD, DELETE), reported per written GB.
"""

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from report import publish

ROOT = Path(__file__).resolve().parent
DIM = 128
MERGE_ROWS = 100_000


def rows(start, n, seed):
    import numpy as np
    import pyarrow as pa
    rng = np.random.default_rng(seed)
    ids = np.arange(start, start + n, dtype=np.int64)
    cats = np.array(["alpha", "beta", "gamma", "delta", "epsilon"], dtype=object)
    emb = rng.random(n * DIM, dtype=np.float32)
    return pa.table({
        "id": pa.array(ids),
        "cat": pa.array(cats[ids % 5]),
        "price": pa.array(rng.random(n) * 100),
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(emb), DIM),
    })


def reader(table, batch=65_536):
    import pyarrow as pa
    return pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=batch))


def peak_rss_mib():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---- the sides, each in its own process -------------------------------------------------------

def load(who):
    """The side's library, imported (and loaded) before any clock starts."""
    if who == "lance-host":
        import lance_host
        return lance_host
    import lance
    return lance


def side_create(who, uri, n, opts):
    lib = load(who)
    data = rows(0, n, 7)
    t = time.perf_counter()
    if who == "lance-host":
        lib.write_table(uri, reader(data), storage_options=opts)
    else:
        lib.write_dataset(reader(data), uri, storage_options=opts)
    return {"ms": (time.perf_counter() - t) * 1e3, "rss": peak_rss_mib()}


def side_worker(who, uri, start, n, token_or_version, opts, ready, go, out):
    """One worker of the distributed write: generate its share, say so, wait, write uncommitted."""
    load(who)
    data = rows(start, n, 100 + start)
    Path(ready).touch()
    while not Path(go).exists():
        time.sleep(0.005)
    if who == "lance-host":
        import lance_host as lh
        at = lh.open_snapshot(bytes.fromhex(token_or_version), storage_options=opts)
        staged = lh.stage_write(uri, reader(data), at=at, storage_options=opts)
        Path(out).write_bytes(bytes(staged))
    else:
        import pickle
        from lance.fragment import write_fragments
        txn = write_fragments(reader(data), uri, mode="append", return_transaction=True, storage_options=opts)
        Path(out).write_bytes(pickle.dumps(txn))


def side_distributed(who, uri, n, opts):
    """The coordinator: pin the version, start 2 workers, commit their shares as one version."""
    work = Path(tempfile.mkdtemp(prefix="bench_write_"))
    if who == "lance-host":
        import lance_host as lh
        pinned = lh.open(uri, storage_options=opts)
        plan = pinned.export_snapshot().hex()
    else:
        import lance
        pinned = lance.dataset(uri, storage_options=opts)
        plan = str(pinned.version)
    half = n // 2
    procs = []
    for w in range(2):
        args = [sys.executable, __file__, "--worker", who, uri, str(10_000_000 + w * half), str(half), plan,
                json.dumps(opts or {}), str(work / f"ready{w}"), str(work / "go"), str(work / f"out{w}")]
        procs.append(subprocess.Popen(args))
    while not all((work / f"ready{w}").exists() for w in range(2)):
        if any(p.poll() not in (None, 0) for p in procs):
            raise SystemExit("a worker failed")
        time.sleep(0.005)
    t = time.perf_counter()
    (work / "go").touch()
    for p in procs:
        if p.wait() != 0:
            raise SystemExit("a worker failed")
    if who == "lance-host":
        import lance_host as lh
        shares = [lh.StagedWrite((work / f"out{w}").read_bytes()) for w in range(2)]
        _, r = lh.commit(uri, shares, storage_options=opts)
        version = r.version
    else:
        import pickle
        import lance
        txns = [pickle.loads((work / f"out{w}").read_bytes()) for w in range(2)]
        frags = [f for txn in txns for f in txn.operation.fragments]
        ds = lance.LanceDataset.commit(uri, lance.LanceOperation.Append(frags), read_version=pinned.version,
                                       storage_options=opts)
        version = ds.version
    ms = (time.perf_counter() - t) * 1e3
    shutil.rmtree(work, ignore_errors=True)
    return {"ms": ms, "version": version}


def side_delete(who, uri, k):
    """Delete on a table opened before the clock starts (both sides), timed to the new version."""
    lib = load(who)
    pred = f"id % 100 = {k}"
    if who == "lance-host":
        ds = lib.open(uri)
        t = time.perf_counter()
        _, r = ds.delete(pred)
        ms = (time.perf_counter() - t) * 1e3
        n = r.rows_deleted
    else:
        ds = lib.dataset(uri)
        before = ds.count_rows()
        t = time.perf_counter()
        ds.delete(pred)
        ms = (time.perf_counter() - t) * 1e3
        n = before - lib.dataset(uri).count_rows()
    return {"ms": ms, "deleted": n}


def side_merge(who, uri, start):
    # half of the ids exist (start .. start + 50k), half are new (above every id written)
    import pyarrow as pa
    half = MERGE_ROWS // 2
    old = rows(start, half, 900 + start)
    new = rows(50_000_000 + start, half, 901 + start)
    source = pa.concat_tables([old, new])
    lib = load(who)
    if who == "lance-host":
        ds = lib.open(uri)
        t = time.perf_counter()
        _, r = ds.merge_insert(source, "id", when_matched="update_all")
        ms = (time.perf_counter() - t) * 1e3
        counts = (r.rows_updated, r.rows_inserted)
    else:
        ds = lib.dataset(uri)
        t = time.perf_counter()
        st = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(source)
        ms = (time.perf_counter() - t) * 1e3
        counts = (st["num_updated_rows"], st["num_inserted_rows"])
    return {"ms": ms, "counts": counts}


# ---- the driver -------------------------------------------------------------------------------

def run_side(*args):
    p = subprocess.run([sys.executable, __file__, "--side", *map(str, args)], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"side {args} failed:\n{p.stdout}\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def order(r):
    return ["lance-host", "pylance"] if r % 2 == 0 else ["pylance", "lance-host"]


def moto():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = Path(tempfile.gettempdir()) / f"bench_write_moto_{port}.log"
    srv = subprocess.Popen([sys.executable, str(ROOT.parent / "tests" / "integration" / "moto_server.py"), str(port)],
                           stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    ep = f"http://127.0.0.1:{port}"
    for _ in range(150):
        try:
            urllib.request.urlopen(urllib.request.Request(f"{ep}/bench", method="PUT")).read()
            break
        except Exception:
            time.sleep(0.2)
    opts = {"aws_access_key_id": "a", "aws_secret_access_key": "b", "aws_region": "us-east-1",
            "aws_endpoint": ep, "allow_http": "true", "aws_virtual_hosted_style_request": "false"}
    return srv, log, opts


def requests_in(log, mark=0):
    text = re.sub(r"\x1b\[[0-9;]*m", "", open(log).read())
    lines = [x for x in text.splitlines() if re.search(r'"(PUT|POST|GET|HEAD|DELETE) ', x)]
    return lines[mark:]


def med(xs):
    return statistics.median(xs), min(xs), max(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--s3-rows", type=int, default=300_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--side", nargs="+")
    ap.add_argument("--worker", nargs=9)
    a = ap.parse_args()
    if a.worker:
        who, uri, start, n, plan, opts, ready, go, out = a.worker
        return side_worker(who, uri, int(start), int(n), plan, json.loads(opts) or None, ready, go, out)
    if a.side:
        kind, who, *rest = a.side
        if kind == "create":
            res = side_create(who, rest[0], int(rest[1]), json.loads(rest[2]) or None)
        elif kind == "distributed":
            res = side_distributed(who, rest[0], int(rest[1]), json.loads(rest[2]) or None)
        elif kind == "delete":
            res = side_delete(who, rest[0], int(rest[1]))
        else:
            res = side_merge(who, rest[0], int(rest[1]))
        print(json.dumps(res))
        return

    import lance
    import lance_host
    assert lance.__version__ == "14.0.2", lance.__version__
    lib = os.environ.get("LANCE_HOST_LIB", "")
    work = Path(tempfile.mkdtemp(prefix="bench_write_"))
    gb = a.rows * (8 + 5 + 8 + DIM * 4) / 1e9
    results = {k: {"lance-host": [], "pylance": []} for k in ["create", "distributed", "delete", "merge_insert"]}
    try:
        for r in range(a.runs):
            for who in order(r):
                uri = str(work / f"create_{who}_{r}.lance")
                results["create"][who].append(run_side("create", who, uri, a.rows, "{}"))
                shutil.rmtree(uri, ignore_errors=True)
                uri = str(work / f"dist_{who}_{r}.lance")
                lance.write_dataset(rows(0, 1000, 1), uri)
                results["distributed"][who].append(run_side("distributed", who, uri, a.rows, "{}"))
                assert lance.dataset(uri).count_rows() == 1000 + 2 * (a.rows // 2)
                shutil.rmtree(uri, ignore_errors=True)
        # deletes and merges: each run and side on its own copy of one 3M-row table, so both sides
        # do exactly the same work (the copy is not timed)
        base = str(work / "base.lance")
        lance.write_dataset(reader(rows(0, a.rows, 7)), base)
        for r in range(a.runs):
            for who in order(r):
                copy = str(work / f"copy_{who}_{r}.lance")
                shutil.copytree(base, copy)
                results["delete"][who].append(run_side("delete", who, copy, r))
                results["merge_insert"][who].append(run_side("merge", who, copy, 1000 + 7919 * r))
                shutil.rmtree(copy, ignore_errors=True)
        # s3: fresh moto per run and side; requests from its log
        s3 = {"create": {"lance-host": [], "pylance": []}, "distributed": {"lance-host": [], "pylance": []}}
        s3_gb = a.s3_rows * (8 + 5 + 8 + DIM * 4) / 1e9
        for r in range(a.runs):
            for who in order(r):
                for kind in ["create", "distributed"]:
                    srv, log, opts = moto()
                    try:
                        uri = f"s3://bench/{kind}_{who}_{r}.lance"
                        if kind == "distributed":
                            lance.write_dataset(rows(0, 1000, 1), uri, storage_options=opts)
                        mark = len(requests_in(log))
                        res = run_side(kind, who, uri, a.s3_rows, json.dumps(opts))
                        reqs = requests_in(log, mark)
                        res["requests"] = len(reqs)
                        res["by_method"] = {m: sum(1 for x in reqs if f'"{m} ' in x)
                                            for m in ["PUT", "POST", "GET", "HEAD", "DELETE"]}
                        s3[kind][who].append(res)
                    finally:
                        srv.terminate()
                        srv.wait(timeout=30)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def row(name, res, size_gb=None):
        host = [x["ms"] for x in res["lance-host"]]
        py = [x["ms"] for x in res["pylance"]]
        ratios = [h / p for h, p in zip(host, py)]
        (hm, hlo, hhi), (pm, plo, phi), (rm, rlo, rhi) = med(host), med(py), med(ratios)
        rate = f" | {size_gb / (hm / 1e3):.2f} / {size_gb / (pm / 1e3):.2f}" if size_gb else " | –"
        return (f"| {name} | {hm:,.0f} ({hlo:,.0f}–{hhi:,.0f}) | {pm:,.0f} ({plo:,.0f}–{phi:,.0f}) | "
                f"{rm:.2f} ({rlo:.2f}–{rhi:.2f}){rate} |")

    lines = [
        "# Writes: lance-host against pylance",
        "",
        f"Generated by `bench/write.py` on {time.strftime('%Y-%m-%d')}, 2 cores, release library "
        f"(`{Path(lib).name or 'the installed package'}`), pylance {lance.__version__}, "
        f"lance_host {lance_host.version()}. {a.runs} runs, sides alternating, each in fresh processes; "
        "medians with min–max; ratios are medians of the per-run ratios (below 1: lance-host is faster). "
        "Both sides write the same rows with Lance's default file sizes and storage format.",
        "",
        f"## Local disk, {a.rows:,} rows ({gb:.2f} GB: id, cat, price, 128-d float32 embedding)",
        "",
        "| work | lance-host ms (min–max) | pylance ms (min–max) | lance-host / pylance (min–max) | GB/s lance-host / pylance |",
        "|---|---|---|---|---|",
        row("create (one process)", results["create"], gb),
        row("distributed: 2 worker processes stage + one commit", results["distributed"], gb),
        row("delete 1 % of the rows", results["delete"]),
        row(f"merge_insert {MERGE_ROWS:,} rows (half updates) by id", results["merge_insert"]),
        "",
        f"Peak RSS of the create process (MiB, median): lance-host "
        f"{statistics.median(x['rss'] for x in results['create']['lance-host']):,.0f}, pylance "
        f"{statistics.median(x['rss'] for x in results['create']['pylance']):,.0f} (the generated rows "
        f"themselves take {gb * 1e9 / 2**20:,.0f} MiB).",
        "",
        f"Rows deleted per run (lance-host / pylance): "
        f"{[x['deleted'] for x in results['delete']['lance-host']]} / {[x['deleted'] for x in results['delete']['pylance']]}; "
        f"merge counts (updated, inserted): {results['merge_insert']['lance-host'][0]['counts']} / "
        f"{results['merge_insert']['pylance'][0]['counts']}.",
        "",
        f"## s3:// (local moto server), {a.s3_rows:,} rows ({s3_gb:.2f} GB)",
        "",
        "| work | lance-host ms (min–max) | pylance ms (min–max) | lance-host / pylance (min–max) | GB/s lance-host / pylance |",
        "|---|---|---|---|---|",
        row("create (one process)", s3["create"], s3_gb),
        row("distributed: 2 workers + one commit", s3["distributed"], s3_gb),
        "",
        "| work | requests lance-host | requests pylance | per written GB lance-host / pylance | lance-host by method | pylance by method |",
        "|---|---|---|---|---|---|",
    ]
    for kind in ["create", "distributed"]:
        h = statistics.median(x["requests"] for x in s3[kind]["lance-host"])
        p = statistics.median(x["requests"] for x in s3[kind]["pylance"])
        lines.append(f"| {kind} | {h:.0f} | {p:.0f} | {h / s3_gb:,.0f} / {p / s3_gb:,.0f} | "
                     f"{s3[kind]['lance-host'][0]['by_method']} | {s3[kind]['pylance'][0]['by_method']} |")
    lines += [
        "",
        "Where the two sides do different work: the distributed lance-host coordinator ships staged-write "
        "bytes and commits with its exactly-once check only when a statement id is given (none here); "
        "pylance's workers return pickled Transactions. Both commit one Append of both workers' "
        "fragments at the pinned version. Each side's library is imported and loaded before its clock "
        "starts; deletes and merges run on a table opened before the clock (pylance's delete does not "
        "report a count: it is counted after the clock stops; lance-host returns it).",
    ]
    publish(ROOT / "WRITE.md", lines)


if __name__ == "__main__":
    main()
