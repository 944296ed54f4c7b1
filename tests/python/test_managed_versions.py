"""Namespace-managed versions: a REST namespace whose DescribeTable says `managed_versioning`
(pylance 14.0.2's own REST adapter over a directory namespace with version tracking) is the
source of a table's versions. lance-host, having opened the table through its catalog, commits
every change — one-call writes, staged shares committed by URI, deletes, updates, merges, config
updates, index builds, branches' commits aside — through the namespace's version API
(`create_table_version`, seen by a recording proxy in front of the adapter), and pylance, as
the other writer through the same namespace, interleaves with it: both see one version
sequence, which the namespace lists."""

import http.client
import http.server
import threading

import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")
ln = pytest.importorskip("lance.namespace")


class Recorder(http.server.ThreadingHTTPServer):
    """A proxy to the namespace that records the paths it forwards."""

    daemon_threads = True

    def __init__(self, target_port):
        self.target_port = target_port
        self.paths = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Forward)


class _Forward(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _forward(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.paths.append(self.path)
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


@pytest.fixture()
def namespace(tmp_path):
    adapter = ln.RestAdapter("dir", {"root": str(tmp_path / "root"), "table_version_tracking_enabled": "true"},
                             port=0)
    adapter.start()
    proxy = Recorder(adapter.port)
    t = threading.Thread(target=proxy.serve_forever, daemon=True)
    t.start()
    try:
        yield adapter, proxy
    finally:
        proxy.shutdown()
        adapter.stop()


def rows(start, end, tag):
    return pa.table({"id": pa.array(range(start, end), pa.int64()), "tag": [f"{tag}{i}" for i in range(start, end)]})


def creates(proxy):
    return [p for p in proxy.paths if p.split("?")[0].endswith("/version/create")]


def listed_versions(ns):
    from lance_namespace import ListTableVersionsRequest
    return sorted(v.version for v in ns.list_table_versions(ListTableVersionsRequest(id=["t"])).versions)


def test_lance_host_and_pylance_interleave_commits_on_a_managed_table(namespace):
    adapter, proxy = namespace
    ns = ln.RestNamespace(uri=f"http://127.0.0.1:{adapter.port}")
    lance.write_dataset(rows(0, 100, "py"), namespace_client=ns, table_id=["t"], mode="create")
    cat = lh.Catalog({"type": "rest", "uri": f"http://127.0.0.1:{proxy.server_address[1]}"})
    v1 = cat.open_table("t")
    assert v1.version == 1
    # a one-call append through the catalog's handle: version 2, registered with the namespace
    before = len(creates(proxy))
    v2, r = lh.write_table(v1.uri, rows(100, 110, "lh"), "append", at=v1)
    assert r.version == 2 and len(creates(proxy)) == before + 1
    # pylance commits through the namespace too, and the catalog's latest is its version
    lance.write_dataset(rows(110, 120, "py"), namespace_client=ns, table_id=["t"], mode="append")
    v3 = cat.open_table("t")
    assert v3.version == 3
    # shares staged on a worker (from the snapshot token), committed by URI in this process
    worker = lh.open_snapshot(v3.export_snapshot())
    shares = [lh.stage_write(v3.uri, rows(200 + 10 * i, 210 + 10 * i, "w"), "append", at=worker) for i in range(2)]
    before = len(creates(proxy))
    v4, r = lh.commit(v3.uri, shares, expected_version=3)
    assert r.version == 4 and len(creates(proxy)) == before + 1
    # row changes and a config update on the handle
    v5, _ = v4.delete("id < 10")
    v6, _ = v5.update({"tag": "'u'"}, where="id < 20")
    v7, _ = v6.update_config({"owner": "etl"})
    assert v7.version == 7
    assert len(creates(proxy)) >= before + 4
    # one version sequence: the namespace lists it, pylance reads the latest through it
    assert listed_versions(ns) == list(range(1, 8))
    latest = lance.dataset(namespace_client=ns, table_id=["t"])
    assert latest.version == 7 and latest.config() == {"owner": "etl"}
    got = sorted(latest.to_table()["id"].to_pylist())
    assert got == list(range(10, 120)) + list(range(200, 220))
    assert lh.open(v1.uri).version == 7
    # a stale precondition through the namespace: refused, nothing registered
    before = len(creates(proxy))
    with pytest.raises(lh.ConflictError):
        lh.write_table(v1.uri, rows(900, 901, "x"), "append", at=v7, expected_version=6)
    assert len(creates(proxy)) == before and listed_versions(ns) == list(range(1, 8))


def test_create_table_through_a_managed_catalog_registers_its_first_version(namespace):
    adapter, proxy = namespace
    ns = ln.RestNamespace(uri=f"http://127.0.0.1:{adapter.port}")
    cat = lh.Catalog({"type": "rest", "uri": f"http://127.0.0.1:{proxy.server_address[1]}"})
    ds, r = cat.create_table("t", rows(0, 50, "c"))
    assert r.version == 1
    assert len(creates(proxy)) == 1, proxy.paths
    assert listed_versions(ns) == [1]
    lance.write_dataset(rows(50, 60, "py"), namespace_client=ns, table_id=["t"], mode="append")
    assert cat.open_table("t").version == 2
    assert sorted(lance.dataset(namespace_client=ns, table_id=["t"]).to_table()["id"].to_pylist()) == list(range(60))
