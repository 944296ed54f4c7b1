"""The cost of a multi-table commit (issue 49): the staged shares of three tables committed
together with `lance_commit_tables` (one `batch_commit_tables` request) against the same
shares committed as three separate `lance_table_commit` calls (three versions registered one
by one — what a user has without multi-table commits, and not atomic). Writes
bench/MULTI_COMMIT.md and bench/MULTI_COMMIT.json.

    LANCE_HOST_LIB=<release liblance_host.so> LANCE_HOST_REST_SERVER=<release lance-host-rest-server> \\
        python3 bench/multi_commit.py [--rounds 30] [--rows 1000]

The namespace is this repository's REST server with `--batch-commits` on local disk (the
directory namespace with version tracking, plus the batch commit). Each side has its own three
tables; per round each side stages one share of `--rows` rows per table (not timed) and then
commits them (timed), sides alternating round by round. The namespace requests of each side
are counted on 5 more rounds through a recording proxy. pylance 14.0.2 has no multi-table
commit (its directory namespace answers `batch_commit_tables` "not implemented").
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from managed_commit import Recorder  # noqa: E402  (the same recording proxy)

TABLES = ("a", "b", "c")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--rows", type=int, default=1000)
    a = ap.parse_args()
    import lance
    import lance.namespace as ln
    import lance_host as lh
    import pyarrow as pa

    server_bin = os.environ.get("LANCE_HOST_REST_SERVER")
    if not server_bin:
        sys.exit("set LANCE_HOST_REST_SERVER to the lance-host-rest-server binary (release)")
    tmp = tempfile.mkdtemp(prefix="lh-multi-")
    server = subprocess.Popen([server_bin, os.path.join(tmp, "warehouse"), "--batch-commits"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline().split()[1])
    proxy = Recorder(port)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        def rows(start):
            return pa.table({"id": pa.array(range(start, start + a.rows), pa.int64()),
                             "v": pa.array([float(i) for i in range(a.rows)])})

        direct = lh.Catalog({"type": "rest", "uri": f"http://127.0.0.1:{port}"})
        counting = lh.Catalog({"type": "rest", "uri": f"http://127.0.0.1:{proxy.server_address[1]}"})
        sides = {"together": [f"m_{t}" for t in TABLES], "separate": [f"s_{t}" for t in TABLES]}
        for names in sides.values():
            for n in names:
                direct.create_table(n, rows(0))

        def round_of(cat, side, i):
            """Stage a share per table on its latest version, then commit them (timed)."""
            handles = [cat.open_table(n) for n in sides[side]]
            shares = [lh.stage_write(h.uri, rows((i + 1) * a.rows), "append", at=h) for h in handles]
            t0 = time.perf_counter()
            if side == "together":
                lh.commit_tables([(h.uri, [s]) for h, s in zip(handles, shares)])
            else:
                for h, s in zip(handles, shares):
                    lh.commit(h.uri, [s])
            return time.perf_counter() - t0

        times = {"together": [], "separate": []}
        for i in range(a.rounds):
            order = ["together", "separate"] if i % 2 == 0 else ["separate", "together"]
            for side in order:
                times[side].append(round_of(direct, side, i))
        ns = ln.RestNamespace(uri=f"http://127.0.0.1:{port}")
        for names in sides.values():
            for n in names:
                latest = lance.dataset(namespace_client=ns, table_id=[n])
                assert latest.version == a.rounds + 1 and latest.count_rows() == (a.rounds + 1) * a.rows
        # the namespace requests of each side's commit, counted by the proxy (staging and the
        # opens of the round are not counted: only the commit call)
        requests = {"together": [], "separate": []}
        kinds = {"together": {}, "separate": {}}
        for i in range(5):
            for side in ("together", "separate"):
                handles = [counting.open_table(n) for n in sides[side]]
                shares = [lh.stage_write(h.uri, rows(10**6 + i * a.rows), "append", at=h) for h in handles]
                before = len(proxy.paths)
                if side == "together":
                    lh.commit_tables([(h.uri, [s]) for h, s in zip(handles, shares)])
                else:
                    for h, s in zip(handles, shares):
                        lh.commit(h.uri, [s])
                sent = proxy.paths[before:]
                requests[side].append(len(sent))
                for p in sent:
                    k = "/".join(p.split("/")[-2:]) if "/version/" in p else p.rsplit("/", 1)[-1]
                    if "/table/" in p and "/version/" not in p and not p.endswith("batch-commit"):
                        k = "table/" + p.rsplit("/", 1)[-1]
                    kinds[side][k] = kinds[side].get(k, 0) + 1 / 5
        stat = lambda v: {"median": statistics.median(v), "min": min(v), "max": max(v)}
        report = {"rounds": a.rounds, "rows_per_share": a.rows, "tables": len(TABLES), "library": lh.build_profile(),
                  "seconds_per_commit": {s: stat(times[s]) for s in times},
                  "namespace_requests_per_commit": {s: stat(requests[s]) for s in requests},
                  "namespace_requests_by_kind": {s: dict(sorted(kinds[s].items())) for s in kinds}}
        (ROOT / "MULTI_COMMIT.json").write_text(json.dumps(report, indent=2) + "\n")
        ms = lambda d: f"{1000 * d['median']:.1f} ({1000 * d['min']:.1f}-{1000 * d['max']:.1f})"
        req = lambda d: f"{d['median']:.0f} ({d['min']}-{d['max']})"
        by_kind = lambda s: ", ".join(f"`{k}` {v:g}" for k, v in report["namespace_requests_by_kind"][s].items())
        lines = ["# Three tables committed together against three separate commits", "",
                 f"{a.rounds} rounds; per round each side commits one staged share of {a.rows:,} rows to each of "
                 f"its {len(TABLES)} tables (staging not timed), sides alternating; {report['library']} library; "
                 "local disk; this repository's REST server with `--batch-commits` on 127.0.0.1; the requests "
                 "counted on 5 more rounds through a recording proxy.", "",
                 "| side | ms per round, median (min-max) | namespace requests per round |", "|---|---|---|",
                 f"| together: `lance_commit_tables` (all three or none) | {ms(report['seconds_per_commit']['together'])} "
                 f"| {req(report['namespace_requests_per_commit']['together'])} |",
                 f"| separate: 3 × `lance_table_commit` (not atomic) | {ms(report['seconds_per_commit']['separate'])} "
                 f"| {req(report['namespace_requests_per_commit']['separate'])} |",
                 "", f"Requests of a round, together: {by_kind('together')}; separate: {by_kind('separate')}.",
                 "Both sides check the same shares and write the same manifests, and both read each table's "
                 "latest version through the namespace (`version/list`). The together side registers the three "
                 "versions in one `batch-commit` request and then opens each table's new version for the handle "
                 "it returns (`version/describe`); the separate side registers them with one `version/create` "
                 "per table and gets its handles from the commits. The together side also prepares each table in "
                 "a session of its own (a version the namespace has not registered must not be cached for later "
                 "reads), so it reads each table's latest manifest from storage where the separate side finds it "
                 "in the process's cache; these reads and the three opens are its extra time. What it buys: the "
                 "three versions land together or not at all, also when the coordinator is killed. pylance 14.0.2 "
                 "has no multi-table commit to compare with.", ""]
        (ROOT / "MULTI_COMMIT.md").write_text("\n".join(lines))
        print("\n".join(lines))
    finally:
        proxy.shutdown()
        server.stdin.close()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
