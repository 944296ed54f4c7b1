"""The cost of a commit on a namespace-managed table (issue 49) against the same commit on a
plain table. Writes bench/MANAGED_COMMIT.md and bench/MANAGED_COMMIT.json.

    LANCE_HOST_LIB=<release liblance_host.so> python3 bench/managed_commit.py [--commits 30] [--rows 1000]

Both tables live on local disk. The managed one is served by pylance's REST adapter over a
directory namespace with version tracking (the namespace registers every version); lance-host
opens it through its REST catalog. The timed commits go straight to the namespace; the
namespace requests of a commit are counted on 5 more commits through a recording proxy. Each side appends `--rows` rows `--commits` times with `lance_table_write` on the
handle of the previous version, alternating sides commit by commit; pylance appends to a
second managed table through the same namespace (directly, not through the proxy) as the
reference. Reported per commit:
time (median, min-max) and namespace requests (what the managed side adds: the plain side
sends none).
"""

import argparse
import http.client
import http.server
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent


class Recorder(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, target_port):
        self.target_port = target_port
        self.paths = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), Forward)


class Forward(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _forward(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.paths.append(self.path.split("?")[0])
        c = http.client.HTTPConnection("127.0.0.1", self.server.target_port, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        c.request(self.command, self.path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        c.close()

    do_GET = do_POST = do_PUT = do_DELETE = _forward

    def log_message(self, *args):
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=30)
    ap.add_argument("--rows", type=int, default=1000)
    a = ap.parse_args()
    import lance
    import lance.namespace as ln
    import lance_host as lh
    import pyarrow as pa

    tmp = tempfile.mkdtemp(prefix="lh-managed-")
    adapter = ln.RestAdapter("dir", {"root": os.path.join(tmp, "ns"), "table_version_tracking_enabled": "true"},
                             port=0)
    adapter.start()
    proxy = Recorder(adapter.port)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        def rows(start):
            return pa.table({"id": pa.array(range(start, start + a.rows), pa.int64()),
                             "v": pa.array([float(i) for i in range(a.rows)])})

        ns = ln.RestNamespace(uri=f"http://127.0.0.1:{adapter.port}")
        lance.write_dataset(rows(0), namespace_client=ns, table_id=["t"], mode="create")
        plain_uri = os.path.join(tmp, "plain.lance")
        lance.write_dataset(rows(0), plain_uri)
        # timed: straight to the namespace (a Python proxy's hop would add TCP delayed-ACK stalls);
        # counted: a few more commits through the recording proxy
        cat = lh.Catalog({"type": "rest", "uri": f"http://127.0.0.1:{adapter.port}"})
        counting = lh.Catalog({"type": "rest", "uri": f"http://127.0.0.1:{proxy.server_address[1]}"})
        lance.write_dataset(rows(0), namespace_client=ns, table_id=["p"], mode="create")
        handles = {"managed": cat.open_table("t"), "plain": lh.open(plain_uri)}
        times = {"managed": [], "plain": [], "pylance managed": []}
        requests = []
        for i in range(a.commits):
            order = ["managed", "plain", "pylance managed"]
            if i % 2:
                order.reverse()
            for side in order:
                data = rows((i + 1) * a.rows)
                if side == "pylance managed":
                    t0 = time.perf_counter()
                    lance.write_dataset(data, namespace_client=ns, table_id=["p"], mode="append")
                    times[side].append(time.perf_counter() - t0)
                    continue
                at = handles[side]
                t0 = time.perf_counter()
                handles[side], r = lh.write_table(at.uri, data, "append", at=at)
                times[side].append(time.perf_counter() - t0)
        assert handles["managed"].version == handles["plain"].version == a.commits + 1
        for table in ("t", "p"):
            latest = lance.dataset(namespace_client=ns, table_id=[table])
            assert latest.version == a.commits + 1 and latest.count_rows() == (a.commits + 1) * a.rows
        # the namespace requests of a managed commit, counted by the proxy
        lance.write_dataset(rows(0), namespace_client=ns, table_id=["c"], mode="create")
        at = counting.open_table("c")
        for i in range(5):
            before = len(proxy.paths)
            at, _ = lh.write_table(at.uri, rows((i + 1) * a.rows), "append", at=at)
            requests.append(proxy.paths[before:])
        kinds = {}
        for per_commit in requests:
            for p in per_commit:
                k = p.rsplit("/", 2)[-2] + "/" + p.rsplit("/", 1)[-1] if "/version/" in p else p.rsplit("/", 1)[-1]
                kinds[k] = kinds.get(k, 0) + 1 / len(requests)
        stat = lambda v: {"median": statistics.median(v), "min": min(v), "max": max(v)}
        report = {"commits": a.commits, "rows_per_commit": a.rows, "library": lh.build_profile(),
                  "seconds_per_commit": {s: stat(times[s]) for s in times},
                  "namespace_requests_per_commit": stat([len(r) for r in requests]),
                  "namespace_requests_by_kind": dict(sorted(kinds.items()))}
        (ROOT / "MANAGED_COMMIT.json").write_text(json.dumps(report, indent=2) + "\n")
        ms = lambda d: f"{1000 * d['median']:.1f} ({1000 * d['min']:.1f}-{1000 * d['max']:.1f})"
        lines = ["# A commit on a namespace-managed table against a plain one", "",
                 f"{a.commits} appends of {a.rows:,} rows per side with `lance_table_write` on the previous "
                 f"version's handle, sides alternating; {report['library']} library; local disk; the managed "
                 "table served by pylance's REST adapter (directory namespace with version tracking) on 127.0.0.1; "
                 "the requests counted on 5 more commits through a recording proxy.", "",
                 "| side | ms per commit, median (min-max) | namespace requests per commit |", "|---|---|---|",
                 f"| plain table | {ms(report['seconds_per_commit']['plain'])} | 0 |",
                 f"| managed table | {ms(report['seconds_per_commit']['managed'])} | "
                 f"{report['namespace_requests_per_commit']['median']:.0f} "
                 f"({report['namespace_requests_per_commit']['min']}-{report['namespace_requests_per_commit']['max']}) |",
                 f"| pylance, managed table (`write_dataset(namespace_client=...)`) | "
                 f"{ms(report['seconds_per_commit']['pylance managed'])} | not counted |",
                 "", "Namespace requests of a managed commit, per commit: "
                 + ", ".join(f"`{k}` {v:g}" for k, v in report["namespace_requests_by_kind"].items()) + ".",
                 "Both lance-host sides write the same data files and manifest; the managed side also sends the "
                 "namespace the requests listed (registering the new version is `version/create`), and its extra "
                 "time is that request: pylance's directory namespace serves it by committing to its own manifest "
                 "table. pylance's own commit through the "
                 "namespace (which also opens the table through it each time) is the comparison a user has.", ""]
        (ROOT / "MANAGED_COMMIT.md").write_text("\n".join(lines))
        print("\n".join(lines))
    finally:
        proxy.shutdown()
        adapter.stop()


if __name__ == "__main__":
    main()
