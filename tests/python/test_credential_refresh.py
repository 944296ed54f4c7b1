"""Vended credentials that expire (issue 60): a REST namespace hands out short-lived storage keys
with `expires_at_millis`, and the library refreshes them through the namespace before they
expire — for a scan, for a staged write on a worker that opened a shipped snapshot token, for
the commit — while keys that expired or were revoked are refused by storage and never answered
from the data cache.

The set-up is real on both sides: moto's S3 server accepts only live IAM access keys
(`moto_server.py --iam-keys`); an issuer here creates a new IAM key for every vend and deletes
it when its lifetime ends, so storage itself refuses an expired key; this repo's REST server
(`--vend-url`) merges what the issuer hands out into every DescribeTable answer. pylance, with
a long-lived key, writes the table and checks what lance-host wrote."""

import ctypes
import os
import time

import pyarrow as pa
import pytest

import emulators as E
from credential_issuer import Issuer, iam_world

lance = pytest.importorskip("lance")
boto3 = pytest.importorskip("boto3")
lh = pytest.importorskip("lance_host")

from test_multi_table import Server  # noqa: E402  (the REST server binary, started per module)

# long enough that a refresh (a describe, three IAM calls) lands well within the half-life the
# library refreshes at, also on a loaded machine
LIFETIME_S = 4.0
BUCKET = "credwarehouse"
ROWS, PER_FILE = 6000, 500


def table(start, n, tag):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "tag": [f"{tag}{i % 7}" for i in range(n)]})


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    moto = E.start_moto(iam_keys=True)
    issuer = server = None
    try:
        ep = moto.endpoint
        E.s3_create_bucket(ep, BUCKET)
        admin_iam, admin_key = iam_world(ep)  # from here on moto accepts live IAM keys only

        base = {"aws_endpoint": ep, "allow_http": "true", "aws_region": "us-east-1",
                "aws_virtual_hosted_style_request": "false"}
        admin = dict(base, aws_access_key_id=admin_key["AccessKeyId"], aws_secret_access_key=admin_key["SecretAccessKey"])
        root = f"s3://{BUCKET}/warehouse"
        lance.write_dataset(table(0, ROWS, "base"), f"{root}/t.lance", storage_options=admin, max_rows_per_file=PER_FILE)
        lance.write_dataset(table(0, 1000, "other"), f"{root}/other.lance", storage_options=admin)
        issuer = Issuer(admin_iam, LIFETIME_S)
        flags = [a for k, v in admin.items() for a in ("--storage", f"{k}={v}")]
        server = Server(root, *flags, "--vend-url", issuer.url)
        props = {"type": "rest", "uri": server.uri, **{f"storage.{k}": v for k, v in base.items()}}
        yield {"admin": admin, "base": base, "props": props, "issuer": issuer, "root": root}
    finally:
        if server is not None:
            server.stop()
        if issuer is not None:
            issuer.stop()
        moto.stop()


def test_a_scan_outlives_three_lifetimes(world):
    issuer = world["issuer"]
    cat = lh.Catalog(world["props"])
    ds = cat.open_table("t")
    first_key = issuer.issued[-1]
    vends_before = issuer.n
    started = time.time()
    reader = ds.scan(columns=["id", "tag"], batch_size=100, fragment_readahead=1, batch_readahead=1)
    got = []
    for batch in reader:
        got.append(batch)
        time.sleep(3.3 * LIFETIME_S / 60)  # 60 batches: 3.3 lifetimes
    assert time.time() - started > 3 * LIFETIME_S
    assert first_key in issuer.deleted, "the key the scan started with expired during it"
    assert issuer.n - vends_before >= 3, "refreshed through the namespace, once per half-life or so"
    out = pa.Table.from_batches(got).sort_by("id")
    expected = lance.dataset(f"{world['root']}/t.lance", storage_options=world["admin"]).to_table(columns=["id", "tag"])
    assert out.equals(expected.sort_by("id"))
    # the snapshot pinned three lifetimes ago still reads new data from storage
    assert ds.scan(columns=["id"], filter="id >= 5990 AND id < 6000").read_all().num_rows == 10


def test_options_that_are_not_refreshed_expire_and_the_cache_never_outlives_them(world):
    """The same vended options opened by URI with one option changed (so no catalog stands behind
    them): they work until they expire, and then storage refuses them — also for data the data
    cache holds from before."""
    cat = lh.Catalog(world["props"])
    info = cat.describe_table("t")
    opts = dict(info.storage_options, client_max_retries="0")
    ds = lh.open(info.location, storage_options=opts)
    warm = ds.scan_stream(columns=["tag"])
    assert warm.read_all().num_rows == ROWS
    again = ds.scan_stream(columns=["tag"])
    again.read_all()
    assert again.io_stats().data_cache_hits > 0, "the cache holds the column"
    deadline = time.time() + 10 * LIFETIME_S
    while info.storage_options["aws_access_key_id"] not in world["issuer"].deleted:
        assert time.time() < deadline
        time.sleep(0.1)
    with pytest.raises(lh.PermissionDeniedError):
        ds.scan(columns=["tag"]).read_all()


def test_a_staged_write_on_a_worker_outlives_three_lifetimes(world):
    issuer = world["issuer"]
    coordinator = lh.Catalog(world["props"])
    planned = coordinator.open_table("t")
    token = planned.export_snapshot()

    # the worker: its own catalog, the shipped token, the options its catalog describes
    worker = lh.Catalog(world["props"])
    info = worker.describe_table("t")
    for secret in (info.storage_options["aws_access_key_id"], info.storage_options["aws_secret_access_key"]):
        assert secret.encode() not in token, "a token carries no secret"
    at = lh.open_snapshot(token, storage_options=info.storage_options)
    first_key = info.storage_options["aws_access_key_id"]
    n_batches = 24

    def slow():
        for i in range(n_batches):
            time.sleep(3.3 * LIFETIME_S / n_batches)  # 3.3 lifetimes in all
            yield table(100_000 + i * 100, 100, "new").to_batches()[0]

    started = time.time()
    schema = table(0, 1, "x").schema
    share = lh.stage_write(info.location, pa.RecordBatchReader.from_batches(schema, slow()), at=at,
                           storage_options=info.storage_options, max_rows_per_file=200)
    assert time.time() - started > 3 * LIFETIME_S
    assert first_key in issuer.deleted
    for secret in (info.storage_options["aws_access_key_id"], info.storage_options["aws_secret_access_key"]):
        assert secret.encode() not in bytes(share), "staged-write bytes carry no secret"

    fresh = coordinator.describe_table("t")
    ds, result = lh.commit(fresh.location, [share], storage_options=fresh.storage_options)
    assert result.rows_written == n_batches * 100 and ds.version == planned.version + 1
    check = lance.dataset(f"{world['root']}/t.lance", storage_options=world["admin"])
    assert check.version == ds.version and check.count_rows() == ROWS + n_batches * 100
    new = check.to_table(filter="id >= 100000").sort_by("id")
    assert new["id"].to_pylist() == list(range(100_000, 100_000 + n_batches * 100))


def test_a_host_callback_refreshes_the_options_it_registered(world):
    """A host with its own secret store (no namespace): `register_credentials` for the table and
    its first options; a slow scan of a table opened by URI with those options outlives three
    lifetimes, asking the callback for each new set."""
    issuer, location = world["issuer"], f"{world['root']}/t.lance"
    asked = []

    def fetch(uri):
        asked.append(uri)
        return dict(world["base"], **issuer.vend())

    first = dict(world["base"], **issuer.vend())
    lh.register_credentials(location, first, fetch)
    ds = lh.open(location, storage_options=first)
    got = []
    started = time.time()
    for batch in ds.scan(columns=["id"], batch_size=100, fragment_readahead=1, batch_readahead=1):
        got.append(batch)
        time.sleep(3.3 * LIFETIME_S / 60)
    assert time.time() - started > 3 * LIFETIME_S
    assert first["aws_access_key_id"] in issuer.deleted
    assert len(asked) >= 3 and set(asked) == {location}, asked
    assert sorted(pa.Table.from_batches(got)["id"].to_pylist())[:3] == [0, 1, 2]
    assert sum(b.num_rows for b in got) >= ROWS
    assert ds.scan(columns=["id"], filter="id >= 5990 AND id < 6000").read_all().num_rows == 10

    # options that never expire need no refresh: refused, as is a missing callback's table
    with pytest.raises(lh.InvalidArgumentError, match="expires_at_millis"):
        lh.register_credentials(location, world["base"], fetch)
    with pytest.raises(lh.InvalidArgumentError):
        lh.register_credentials("", first, fetch)

    # a callback that refuses: the operation needing new options is PERMISSION_DENIED
    def deny(uri):
        raise lh.PermissionDeniedError(9, "the secret store refused")

    refused = dict(world["base"], **issuer.vend())
    lh.register_credentials(location, refused, deny)
    denied = lh.open(location, storage_options=refused)
    time.sleep(LIFETIME_S)
    with pytest.raises(lh.PermissionDeniedError, match="secret store refused|permission denied"):
        denied.scan(columns=["id"]).read_all()


def test_revoked_credentials_are_permission_denied(world):
    """Revoked at the issuer: the keys in use are refused by storage at once (a read that
    reaches it), and within one lifetime no read is answered any more, the data cache's
    included: the refresh is refused by the namespace."""
    cat = lh.Catalog(world["props"])
    ds = cat.open_table("t")
    assert ds.scan(columns=["id", "tag"]).read_all().num_rows >= ROWS  # warm: the cache holds it
    other = cat.open_table("other")  # opened, not read
    world["issuer"].revoke()
    try:
        with pytest.raises(lh.PermissionDeniedError):
            other.scan(columns=["id"]).read_all()
        time.sleep(LIFETIME_S)
        with pytest.raises(lh.PermissionDeniedError):
            ds.scan(columns=["id", "tag"]).read_all()
        with pytest.raises(lh.PermissionDeniedError):
            cat.open_table("t")
    finally:
        world["issuer"].revoke(False)
    assert cat.open_table("t").count_rows() >= ROWS


def test_the_c_entry_points_refuse_bad_arguments():
    """NULL callback, NULL sink, NULL key: LANCE_ERR_INVALID_ARGUMENT, nothing registered."""
    from lance_host import _ffi
    far = {"expires_at_millis": "99999999999999"}
    kv = (ctypes.c_char_p * 3)(b"expires_at_millis", far["expires_at_millis"].encode(), None)
    freed = []
    free = _ffi.FREE_USER_DATA(lambda _u: freed.append(1))
    assert _ffi.LIB.lance_credentials_register(b"/tmp/t.lance", kv, _ffi.CREDENTIALS_CALLBACK(), None, free) == 1
    assert "callback is NULL" in _ffi.LIB.lance_last_error_message().decode()
    assert not freed, "a refused registration keeps nothing and frees nothing"
    assert _ffi.LIB.lance_credentials_register(None, kv, _ffi.CREDENTIALS_CALLBACK(lambda *a: 0), None, free) == 1
    assert _ffi.LIB.lance_storage_options_sink_set(None, b"k", b"v") == 1
    assert "sink is NULL" in _ffi.LIB.lance_last_error_message().decode()


def test_spark_tasks_describe_a_catalog_table_through_their_own_catalog(world):
    """The Python Spark source reading a catalog table (option `table` with `catalog.<key>`):
    the driver describes it when the DataFrame is made; its tasks (Python worker processes, where
    nothing refreshes the driver's key) run after that key expired and was deleted at moto, and
    read through a describe of their own — the vended options never travel with a task. Shipping
    the driver's key they failed with PERMISSION_DENIED."""
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from lance_host.spark import register

    spark = (SparkSession.builder.master("local[2]").appName("lance-host-cred-test")
             .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1").getOrCreate())
    try:
        register(spark)
        opts = {f"catalog.{k}": v for k, v in world["props"].items()}
        df = spark.read.format("lance_host").option("table", "t").options(**opts).load()
        described = world["issuer"].issued[-1]  # the key the driver's describe was given
        time.sleep(LIFETIME_S + 1.5)
        assert described in world["issuer"].deleted, "the driver's key expired before the tasks ran"
        rows = df.select("id").collect()
        want = lance.dataset(f"{world['root']}/t.lance", storage_options=world["admin"]).to_table(columns=["id"])
        assert sorted(r.id for r in rows) == sorted(want["id"].to_pylist())
        assert df.rdd.getNumPartitions() >= 2, "the rows came from tasks"
    finally:
        spark.stop()


def test_ray_read_tasks_describe_a_catalog_table_through_their_own_catalog(world):
    """`read_lance_host(table, catalog=props)`: the driver describes the table to plan; the read
    tasks (Ray worker processes, where nothing refreshes the driver's key) run after that key
    expired and was deleted at moto, and read through a describe of their own — the vended
    options never travel with a task."""
    ray = pytest.importorskip("ray")
    import lance_host.ray as lhr

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        ds = lhr.read_lance_host("t", catalog=world["props"], columns=["id"], override_num_blocks=4)
        described = world["issuer"].issued[-1]  # the key the driver's describe was given
        time.sleep(LIFETIME_S + 1.5)
        assert described in world["issuer"].deleted, "the driver's key expired before the tasks ran"
        got = sorted(r["id"] for r in ds.take_all())
        want = lance.dataset(f"{world['root']}/t.lance", storage_options=world["admin"]).to_table(columns=["id"])
        assert got == sorted(want["id"].to_pylist())
        with pytest.raises(lh.InvalidArgumentError, match="catalog must be"):
            lhr.read_lance_host("t", catalog="type=rest")
        # the distributed aggregate and vector search take the catalog too: what their tasks
        # carry is the catalog table (properties and name), never the options it vended, and the
        # answers are pylance's
        carried, pinned = lhr._open_for_tasks("t", None, None, world["props"], "aggregate")
        assert carried == lhr._CatalogTable(world["props"], [], "t", {})
        assert pinned.count_rows() >= ROWS
        py = lance.dataset(f"{world['root']}/t.lance", storage_options=world["admin"])
        agg, pids = lhr.aggregate("t", [(None, "count_all", "n"), ("id", "sum", "total")], catalog=world["props"],
                                  return_pids=True)
        assert agg.to_pylist() == [{"n": py.count_rows(), "total": sum(py.to_table(columns=["id"])["id"].to_pylist())}]
        assert os.getpid() not in pids
        with pytest.raises(lh.InvalidArgumentError, match="catalog must be"):
            lhr.aggregate("t", [(None, "count_all")], catalog={})
        with pytest.raises(lh.InvalidArgumentError, match="catalog must be"):
            lhr.vector_search("t", "vec", [0.0], catalog="x")
    finally:
        ray.shutdown()
