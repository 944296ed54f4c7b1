"""Tables on Azure Blob Storage (`az://`, Azurite) and Google Cloud Storage (`gs://`,
fake-gcs-server), each emulator started on 127.0.0.1 for this module (issue 60): what the
library does on `s3://` works on each store, and pylance reads what lance-host wrote and vice
versa — scans and splits, one-call and staged writes, statement ids, index builds (one process
and distributed), the data cache with its credential check, I/O statistics, racing committers,
a directory catalog rooted on the store. Schemes the build cannot open are refused."""
import threading
import uuid

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import emulators as E
import lance_host as lh

STORES = ["az", "gs", "s3+ddb"]


@pytest.fixture(scope="module")
def azurite():
    emu = E.start_azurite()
    try:
        E.azure_create_container(emu.endpoint, "lakehouse")
        yield emu
    finally:
        emu.stop()


@pytest.fixture(scope="module")
def fake_gcs():
    emu = E.start_fake_gcs()
    try:
        E.gcs_create_bucket(emu.endpoint, "lakehouse")
        yield emu
    finally:
        emu.stop()


@pytest.fixture(scope="module")
def moto():
    emu = E.start_moto()
    try:
        E.s3_create_bucket(emu.endpoint, "lakehouse")
        E.dynamodb_create_commit_table(emu.endpoint, "lance-commits")
        yield emu
    finally:
        emu.stop()


class Store:
    def __init__(self, scheme, options, emulator):
        self.scheme, self.options, self.emulator = scheme, options, emulator

    def uri(self, name):
        uri = f"{self.scheme}://lakehouse/{name}-{uuid.uuid4().hex[:12]}.lance"
        return uri + "?ddbTableName=lance-commits" if self.scheme == "s3+ddb" else uri


@pytest.fixture(params=STORES)
def store(request):
    if request.param == "az":
        emu = request.getfixturevalue("azurite")
        return Store("az", E.azure_options(emu.endpoint), emu)
    if request.param == "gs":
        emu = request.getfixturevalue("fake_gcs")
        return Store("gs", E.gcs_options(emu.endpoint), emu)
    emu = request.getfixturevalue("moto")
    return Store("s3+ddb", E.s3_options(emu.endpoint), emu)


def rows(start, n):
    """Rows with the values real data reaches: NaN of both signs, infinities, NULLs, non-ASCII
    text with a NUL byte."""
    ids = list(range(start, start + n))
    floats = [float("nan") if i % 11 == 0 else -float("nan") if i % 13 == 0 else float("inf") if i % 17 == 0
              else i * 0.5 for i in ids]
    text = [None if i % 7 == 0 else f"Straße {i} 北京 \x00 {'alpha' if i % 2 else 'beta'}" for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array(floats, pa.float64()), "text": pa.array(text)})


def same_rows(a: pa.Table, b: pa.Table):
    a, b = a.sort_by("id"), b.sort_by("id")
    assert a.num_rows == b.num_rows
    for name in a.column_names:
        x, y = a.column(name).to_pylist(), b.column(name).to_pylist()
        if pa.types.is_floating(a.schema.field(name).type):
            x, y = [repr(v) for v in x], [repr(v) for v in y]  # NaN equals NaN, sign kept
        assert x == y, name


def pylance(uri, store, **kw):
    return lance.dataset(uri, storage_options=store.options, **kw)


def test_pylance_table_reads_through_lance_host(store):
    uri = store.uri("from-pylance")
    lance.write_dataset(rows(0, 300), uri, storage_options=store.options, max_rows_per_file=100)
    lance.write_dataset(rows(300, 50), uri, mode="append", storage_options=store.options)
    expected = pylance(uri, store).to_table()

    ds = lh.open(uri, storage_options=store.options)
    assert ds.version == 2
    first = ds.scan_stream()
    same_rows(first.read_all(), expected)
    stats = first.io_stats()  # a table nobody read: every byte from storage
    assert stats.read_requests > 0 and stats.read_bytes > 0 and stats.data_cache_hits == 0, stats
    splits = ds.plan_scan(target_rows=60)
    assert len(splits) >= 4
    same_rows(pa.concat_tables([ds.scan_split(lh.Split.from_bytes(bytes(s))).read_all() for s in splits]), expected)
    filtered = ds.scan(filter="id >= 100 AND id < 320").read_all()
    same_rows(filtered, pylance(uri, store).to_table(filter="id >= 100 AND id < 320"))
    assert ds.count_rows("text IS NULL") == pylance(uri, store).count_rows("text IS NULL")


def test_writes_and_staged_commits_are_read_by_pylance(store):
    uri = store.uri("from-lance-host")
    ds, r = lh.write_table(uri, rows(0, 100), storage_options=store.options)
    assert ds.version == 1 and r.committed
    ds, _ = lh.write_table(uri, rows(100, 20), mode="append", storage_options=store.options)
    assert pylance(uri, store).version == 2

    # two workers' shares of one statement, committed once; the retry commits nothing
    pinned = lh.open(uri, storage_options=store.options)
    shares = [lh.stage_write(uri, rows(120 + 30 * w, 30), at=pinned, storage_options=store.options) for w in range(2)]
    ds, r = lh.commit(uri, shares, storage_options=store.options, statement_id="stmt-objstore-1")
    assert ds.version == 3 and r.committed
    ds, r = lh.commit(uri, shares, storage_options=store.options, statement_id="stmt-objstore-1")
    assert ds.version == 3 and not r.committed
    assert [v["version"] for v in pylance(uri, store).versions()] == [1, 2, 3]
    same_rows(pylance(uri, store).to_table(), pa.concat_tables([rows(0, 100), rows(100, 20), rows(120, 60)]))

    # a delete and an update through lance-host, seen by pylance
    ds, _ = ds.delete("id < 10")
    ds, _ = ds.update({"x": "1.5"}, where="id = 50")
    got = pylance(uri, store).to_table()
    assert got.num_rows == 170 and pylance(uri, store).version == 5
    assert got.filter(pc.equal(got["id"], 50))["x"].to_pylist() == [1.5]
    if store.scheme == "s3+ddb":  # every version was claimed in DynamoDB, once
        name = uri.split("://lakehouse/")[1].split("?")[0]
        assert E.dynamodb_versions(store.emulator.endpoint, "lance-commits", name) == [1, 2, 3, 4, 5]


def test_index_builds_one_process_and_distributed(store):
    uri = store.uri("indexed")
    lance.write_dataset(rows(0, 400), uri, storage_options=store.options, max_rows_per_file=100)
    ds = lh.open(uri, storage_options=store.options)
    ds = ds.create_scalar_index("id", "BTREE")
    ds, _ = lh.build_index(uri, "text", "INVERTED", lambda tasks: [ds.execute_index_build_task(t) for t in tasks],
                           num_splits=2, storage_options=store.options)
    names = {i["name"]: i for i in pylance(uri, store).list_indices()}
    assert {i["fields"][0] for i in names.values()} == {"id", "text"}

    expected = pylance(uri, store).to_table(full_text_query="alpha", columns=["id"])["id"].to_pylist()
    got = ds.full_text_search("text", "alpha", k=1000)["id"].to_pylist()
    assert sorted(got) == sorted(expected) and len(got) == 171  # odd ids without NULL text

    plan = ds.explain_scan(filter="id = 123")
    assert "ScalarIndexQuery" in plan or "MaterializeIndex" in plan, plan
    assert ds.scan(filter="id = 123").read_all()["id"].to_pylist() == [123]


def test_data_cache_serves_repeats_and_checks_credentials(store):
    uri = store.uri("cached")
    lance.write_dataset(rows(0, 2000), uri, storage_options=store.options)
    first = lh.open(uri, storage_options=store.options).scan_stream(columns=["text"])
    first.read_all()
    s1 = first.io_stats()
    again = lh.open(uri, storage_options=store.options).scan_stream(columns=["text"])
    same = again.read_all()
    s2 = again.io_stats()
    assert s2.data_cache_hits > 0 and s2.data_cache_hit_bytes > 0, (s1, s2)
    assert same.num_rows == 2000

    if store.scheme == "az":
        # a wrong account key is refused by storage, never answered from the warm cache
        bad = E.azure_options(store.emulator.endpoint, key=E.AZURITE_KEY[:-8] + "AAAAAAA=")
        with pytest.raises(lh.PermissionDeniedError):
            lh.open(uri, storage_options=bad).scan(columns=["text"]).read_all()
    # fake-gcs-server checks no credentials: there the refusal cannot be shown (docs/object-storage.md)


def race(store, uri, shares, **params):
    outcomes, barrier = [None] * len(shares), threading.Barrier(len(shares))

    def commit(i):
        barrier.wait()
        try:
            ds, _ = lh.commit(uri, [shares[i]], storage_options=store.options, **params)
            outcomes[i] = ("landed", ds.version)
        except lh.LanceError as e:
            outcomes[i] = ("refused", type(e).__name__)

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(len(shares))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return outcomes


@pytest.mark.parametrize("precondition", [True, False])
def test_racing_committers_never_land_on_one_version(store, precondition):
    """Three committers of appends planned at the same version, at once. With expected_version
    exactly one lands and the others are refused; without, each lands on a version of its own
    (the store's atomic create of the manifest makes the losers rebase) and no row is lost.
    On s3+ddb:// the manifest is claimed in DynamoDB, where commit checks are refused."""
    uri = store.uri("race")
    lh.write_table(uri, rows(0, 10), storage_options=store.options)
    pinned = lh.open(uri, storage_options=store.options)
    shares = [lh.stage_write(uri, rows(10 + 5 * w, 5), at=pinned, storage_options=store.options) for w in range(3)]
    outcomes = race(store, uri, shares, **({"expected_version": 1} if precondition else {}))
    landed = sorted(o[1] for o in outcomes if o[0] == "landed")
    if precondition and store.scheme == "s3+ddb":
        # commit checks need the store's own atomic create; through DynamoDB they are refused
        assert outcomes == [("refused", "NotSupportedError")] * 3, outcomes
        assert pylance(uri, store).count_rows() == 10
    elif precondition:
        assert landed == [2], outcomes
        assert {o[1] for o in outcomes if o[0] == "refused"} <= {"ConflictError", "FailedPreconditionError"}, outcomes
        assert pylance(uri, store).count_rows() == 15
    else:
        assert landed == [2, 3, 4], outcomes
        same_rows(pylance(uri, store).to_table(), rows(0, 25))
    assert [v["version"] for v in pylance(uri, store).versions()] == [1] + landed


def test_directory_catalog_rooted_on_the_store(azurite):
    """On az:// only: on the GCS emulator the tables go through Lance's OpenDAL GCS client,
    which in Lance 14.0.2 stores a table's objects under its path twice, so the table a
    directory catalog creates is not found at the location it reports (docs/object-storage.md)."""
    store = Store("az", E.azure_options(azurite.endpoint), azurite)
    root = f"az://lakehouse/warehouse-{uuid.uuid4().hex[:12]}"
    props = {"type": "dir", "root": root, **{f"storage.{k}": v for k, v in store.options.items()}}
    cat = lh.Catalog(props)
    ds, _ = cat.create_table("events", rows(0, 25))
    assert cat.list_tables() == ["events"]
    info = cat.describe_table("events")
    assert info.location.startswith(f"{store.scheme}://lakehouse/")
    same_rows(lance.dataset(info.location, storage_options=store.options).to_table(), rows(0, 25))
    same_rows(cat.open_table("events").scan().read_all(), rows(0, 25))
    cat.close()


@pytest.mark.parametrize("uri", ["hdfs://namenode:8020/warehouse/t.lance", "s3a://bucket/t.lance", "abfs://c/t.lance"])
def test_schemes_this_build_cannot_open_are_refused(uri):
    for call in (lambda: lh.open(uri), lambda: lh.write_table(uri, rows(0, 3)),
                 lambda: lh.Catalog({"type": "dir", "root": uri.rsplit("/", 1)[0]})):
        with pytest.raises(lh.NotSupportedError) as e:
            call()
        scheme = uri.split("://")[0]
        assert f"'{scheme}://'" in str(e.value) and "s3://" in str(e.value)
        # the message names exactly the stores this build carries (lance_host.build_features())
        features = lh.build_features()
        for listed, feature in [("gs://", "store-gcs"), ("az://", "store-azure"), ("abfss://", "store-azure"),
                                ("oss://", "store-oss"), ("cos://", "store-cos"), ("tos://", "store-tos"),
                                ("hf://", "store-hf"), ("s3+ddb://", "commit-dynamodb")]:
            assert (listed in str(e.value)) == (feature in features), (listed, str(e.value))


def test_the_test_build_carries_every_store_and_tokenizer():
    """The test command builds the library's default features: every store and tokenizer Lance
    has (the store and CJK tests above and in test_cjk_fts.py rely on it), no name twice."""
    features = lh.build_features()
    assert len(features) == len(set(features)) and all(features)
    assert {"store-azure", "store-gcs", "store-oss", "store-cos", "store-tos", "store-hf", "commit-dynamodb",
            "tokenizer-jieba", "tokenizer-lindera"} <= set(features), features


@pytest.mark.parametrize("scheme,prefix,keys", [
    ("oss", "oss", {"oss_access_key_id": "a", "oss_secret_access_key": "b"}),
    ("cos", "cos", {"cos_secret_id": "a", "cos_secret_key": "b"}),
    ("tos", "tos", {"tos_access_key_id": "a", "tos_secret_access_key": "b", "tos_region": "cn-beijing"}),
])
def test_oss_cos_tos_take_their_endpoint_options(scheme, prefix, keys):
    """Alibaba OSS, Tencent COS and Volcengine TOS are compiled in and read their storage
    options (pylance's names): without `<store>_endpoint` the open is refused naming the option;
    with one, requests go to the bucket at that endpoint (virtual-hosted style, so no emulator
    on 127.0.0.1 can serve them: a closed port shows where they went)."""
    uri = f"{scheme}://lakehouse/t.lance"
    with pytest.raises(lh.InvalidArgumentError) as e:
        lh.open(uri, storage_options=keys)
    assert f"'{prefix}_endpoint'" in str(e.value)
    port = E.free_port()
    with pytest.raises(lh.LanceIOError) as e:
        lh.open(uri, storage_options={f"{prefix}_endpoint": f"http://127.0.0.1:{port}", **keys})
    assert f"lakehouse.127.0.0.1:{port}" in str(e.value)
