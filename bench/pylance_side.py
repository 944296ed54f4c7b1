"""The pylance side of the lance-host benchmark: the same work as `lance-host-bench host`, in
its own process, with the same output (one JSON line) and the same MARK handshake.

    python3 bench/pylance_side.py <work> <uri> <facts.json>
"""

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import lance
import numpy as np

K = 10


def storage_options(uri):
    ep = os.environ.get("BENCH_S3_ENDPOINT")
    if ep and uri.startswith("s3://"):
        return {
            "aws_endpoint": ep,
            "aws_region": "us-east-1",
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
            "allow_http": "true",
            "aws_virtual_hosted_style_request": "false",
        }
    return None


def mark(label):
    if os.environ.get("BENCH_HANDSHAKE") == "1":
        print(f"MARK {label}", flush=True)
        sys.stdin.readline()


def rusage():
    hwm, minflt = -1, -1
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    with open("/proc/self/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
        minflt = int(rest[7])
    return hwm, minflt


def main():
    work, uri, facts_path = sys.argv[1:4]
    with open(facts_path) as f:
        facts = json.load(f)
    queries = [np.array(q, dtype=np.float32) for q in facts["queries"]]
    truth = facts["truth"]
    refine = facts["refine_factor"]
    iters = max(1, int(os.environ.get("BENCH_ITERS", "1")))
    ds = lance.dataset(uri, storage_options=storage_options(uri))
    scan_cols = ["id", "cat", "price", "ts", "payload"]

    def scan(cols, flt=None):
        return sum(b.num_rows for b in ds.to_batches(columns=cols, filter=flt))

    def scan_2t(cols):
        frags = ds.get_fragments()

        def part(t):
            return sum(
                b.num_rows for fr in frags[t::2] for b in fr.to_batches(columns=cols)
            )

        with ThreadPoolExecutor(2) as ex:
            return sum(ex.map(part, range(2)))

    def search(q, nprobes):
        t = ds.to_table(
            columns=["id"],
            nearest={"column": "vec", "q": q, "k": K, "nprobes": nprobes, "refine_factor": refine},
        )
        return t["id"].to_pylist()

    ids = facts["take_ids"]

    def once(i):
        q = queries[i % len(queries)]
        if work == "scan":
            return scan(scan_cols), None
        if work == "scan_vec":
            return scan(scan_cols + ["vec"]), None
        if work == "filter":
            return scan(["id", "price"], "price < 10"), None
        if work == "scan_2t":
            return scan_2t(scan_cols), None
        if work == "take":
            return ds._take_rows(ids, columns=["id", "price"]).num_rows, None
        if work in ("search8", "search8_2t", "search8_seg"):
            r = search(q, 8)
            return len(r), r
        if work == "search32":
            r = search(q, 32)
            return len(r), r
        raise SystemExit(f"work {work} is not defined for pylance")

    cold = os.environ.get("BENCH_COLD") == "1"
    if cold:
        mark("begin cold")
    t = time.perf_counter()
    once(len(queries) - 1)
    cold_ms = (time.perf_counter() - t) * 1e3
    if cold:
        mark("end cold")
    is_search = work.startswith("search")
    passes = max(1, int(os.environ.get("BENCH_PASSES", "1")))
    n = len(queries) * passes if is_search else iters
    ms, cpu, recalls, rows = [], [], [], 0
    for i in range(n):
        mark(f"begin {i}")
        c = time.thread_time()
        t = time.perf_counter()
        rows, found = once(i)
        ms.append((time.perf_counter() - t) * 1e3)
        cpu.append((time.thread_time() - c) * 1e3)
        mark(f"end {i}")
        if is_search:
            t = truth[i % len(truth)]
            recalls.append(len(set(found) & set(t)) / len(t))
    hwm, minflt = rusage()
    print(
        json.dumps(
            {
                "side": "pylance",
                "work": work,
                "ms": ms,
                "thread_cpu_ms": cpu,
                "rows": rows,
                "recall": (sum(recalls) / len(recalls)) if recalls else None,
                "maxrss_kb": hwm,
                "minflt": minflt,
                "cold_ms": cold_ms,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
