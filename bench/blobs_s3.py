"""Blob range reads on s3:// (a local moto server): lance-host (the `lance_host` package over the
library) against pylance's take_blobs + read_range, the same ranges of the same blobs, each side
in its own fresh process, alternating. Requests are counted from the server's log.

    LANCE_HOST_LIB=<release liblance_host.so> python3 bench/blobs_s3.py [--runs 3]   # bench/BLOBS_S3.md

Table (pylance-written, format 2.2): 30 rows of a Blob v2 column — inline (< 4 KiB), packed
(< 64 KiB) and dedicated values up to 1.5 MiB — in 2 fragments. Work: one take of every row's
blob, then for each non-empty blob the ranges at its start, middle, end, across 4 KiB / 64 KiB /
1 MiB boundaries and the whole value.
"""

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

from report import publish

ROOT = Path(__file__).resolve().parent
ROWS = 30


def payload(i):
    if i % 10 == 7:
        return None
    n = {3: 0, 1: 1_500_000, 6: 70_000}.get(i % 10, (i * 997) % 9000)
    return np.random.default_rng(i).integers(0, 256, n, dtype=np.uint8).tobytes()


def ranges(size):
    r = [(0, min(size, 100)), (size // 2, min(size - size // 2, 777)), (max(size - 50, 0), min(size, 50))]
    r += [(b - 300, 600) for b in (4096, 65_536, 1 << 20) if size > b + 300]
    r.append((0, size))
    return r


def side(who, uri, opts, log):
    """Run in a fresh process: the take, then every range; prints requests and times."""
    def lines():
        text = re.sub(r"\x1b\[[0-9;]*m", "", open(log).read())
        return [x for x in text.splitlines() if '"GET ' in x or '"HEAD ' in x]

    if who == "lance-host":
        import lance_host as lh

        ds = lh.open(uri, storage_options=opts)
        ids = ds.scan(columns=["id"], with_row_id=True).read_all()["_rowid"].to_pylist()
        mark = len(lines())
        blobs = ds.take_blobs("blob", ids)
        sizes = [blobs.info(i).size for i in range(len(ids))]

        def read(i, off, n):
            return blobs.read(i, off, n)
    else:
        import lance

        ds = lance.dataset(uri, storage_options=opts)
        ids = ds.to_table(columns=["id"], with_row_id=True)["_rowid"].to_pylist()
        mark = len(lines())
        blobs = ds.take_blobs("blob", ids=ids)
        sizes = [b.size() if b is not None else 0 for b in blobs]

        def read(i, off, n):
            return blobs[i].read_range(off, n)
    take_requests = len(lines()) - mark
    per_read, ms = [], []
    for i, size in enumerate(sizes):
        for off, n in (ranges(size) if size else []):
            mark = len(lines())
            t = time.perf_counter()
            data = read(i, off, n)
            ms.append((time.perf_counter() - t) * 1e3)
            assert len(data) == n
            per_read.append(len(lines()) - mark)
    print(json.dumps({"take_requests": take_requests, "per_read": per_read, "ms": ms}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--side", nargs=4)
    a = ap.parse_args()
    if a.side:
        who, uri, opts, log = a.side
        return side(who, uri, json.loads(opts), log)

    import lance
    import pyarrow as pa
    from lance.blob import Blob, blob_array, blob_field

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"blobs_s3_moto_{port}.log"
    srv = subprocess.Popen([sys.executable, str(ROOT.parent / "tests" / "integration" / "moto_server.py"), str(port)],
                           stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    ep = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                urllib.request.urlopen(urllib.request.Request(f"{ep}/blobs", method="PUT")).read()
                break
            except Exception:
                time.sleep(0.2)
        opts = {"aws_access_key_id": "a", "aws_secret_access_key": "b", "aws_region": "us-east-1",
                "aws_endpoint": ep, "allow_http": "true", "aws_virtual_hosted_style_request": "false"}
        vals = [payload(i) for i in range(ROWS)]
        schema = pa.schema([pa.field("id", pa.int64()),
                            blob_field("blob", inline_size_threshold=4096, dedicated_size_threshold=65_536)])
        t = pa.table({"id": pa.array(range(ROWS), pa.int64()),
                      "blob": blob_array([None if v is None else Blob.from_bytes(v) for v in vals])}, schema=schema)
        uri = "s3://blobs/t.lance"
        lance.write_dataset(t, uri, data_storage_version="2.2", max_rows_per_file=15, storage_options=opts)
        results = {"lance-host": [], "pylance": []}
        for r in range(a.runs):
            for who in (["lance-host", "pylance"] if r % 2 == 0 else ["pylance", "lance-host"]):
                p = subprocess.run([sys.executable, __file__, "--side", who, uri, json.dumps(opts), str(log)],
                                   capture_output=True, text=True, check=True)
                results[who].append(json.loads(p.stdout.strip().splitlines()[-1]))
    finally:
        srv.terminate()
        srv.wait(timeout=30)

    def fig(who):
        runs = results[who]
        reads = runs[0]["per_read"]
        med_ms = [statistics.median(x["ms"]) for x in runs]
        return (runs[0]["take_requests"], len(reads), sum(reads), max(reads),
                statistics.median(med_ms), min(med_ms), max(med_ms),
                all(x["per_read"] == reads for x in runs))

    lines = ["# Blob range reads on s3://", "",
             f"Generated by `bench/blobs_s3.py` on {time.strftime('%Y-%m-%d')}, 2 cores, a local moto server; "
             f"{a.runs} fresh processes per side, alternating. lance-host: the `lance_host` package "
             f"({'release library' if os.environ.get('LANCE_HOST_LIB') else 'bundled library'}): "
             "`Dataset.take_blobs` + `Blobs.read`; pylance 14.0.2: `take_blobs` + `BlobFile.read_range`. The same "
             "table, rows and ranges; requests (GET and HEAD) from the server's log.", "",
             "| side | requests for the take | range reads | requests for all reads | most requests in one read | "
             "ms per read, median (min-max of the runs' medians) | same counts every run |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for who in ("lance-host", "pylance"):
        tk, n, total, most, med, lo, hi, same = fig(who)
        lines.append(f"| {who} | {tk} | {n} | {total} | {most} | {med:.2f} ({lo:.2f}-{hi:.2f}) | {'yes' if same else 'no'} |")
    publish(ROOT / "BLOBS_S3.md", lines)


if __name__ == "__main__":
    main()
