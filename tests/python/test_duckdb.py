"""DuckDB runs SQL over lance-host: the C extension (duckdb/lance_duckdb.c, built by CMake) is
loaded into the duckdb Python package, and its answers are checked against pylance reading the
same table (another reader) and against the library's own counters (projection pushdown)."""

import ctypes
import os

import pytest

duckdb = pytest.importorskip("duckdb")
lance = pytest.importorskip("lance")
pa = pytest.importorskip("pyarrow")


def facts():
    path = os.path.join(os.environ["LANCE_HOST_WAREHOUSE"], "FIXTURE")
    return dict(line.strip().split("=", 1) for line in open(path) if "=" in line)


@pytest.fixture(scope="module")
def uri():
    return facts()["vectors.uri"]


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    c.execute(f"LOAD '{os.environ['LANCE_HOST_DUCKDB_EXTENSION']}'")
    yield c
    c.close()


@pytest.fixture(scope="module")
def metrics():
    """The library instance the extension loaded (same file, so the same instance)."""
    lib = ctypes.CDLL(os.environ["LANCE_HOST_LIB"])
    lib.lance_metric_count.restype = ctypes.c_size_t
    lib.lance_metric.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_uint64)]

    def read(name):
        for i in range(lib.lance_metric_count()):
            n, v = ctypes.c_char_p(), ctypes.c_uint64()
            assert lib.lance_metric(i, ctypes.byref(n), ctypes.byref(v)) == 0
            if n.value.decode() == name:
                return v.value
        raise KeyError(name)

    return read


def test_scan_equals_pylance(con, uri):
    ds = lance.dataset(uri)
    ids = ds.to_table(columns=["id"]).column("id").to_pylist()
    assert con.execute(f"SELECT count(*), sum(id), min(id), max(id) FROM lance_scan('{uri}')").fetchone() == (
        len(ids), sum(ids), min(ids), max(ids))
    # DuckDB's own SQL on top: group by a string column.
    expected = {}
    for row in ds.to_table(columns=["category"]).column("category").to_pylist():
        expected[row] = expected.get(row, 0) + 1
    got = dict(con.execute(f"SELECT category, count(*) FROM lance_scan('{uri}') GROUP BY 1").fetchall())
    assert got == expected
    # Vectors arrive as FLOAT[dim], equal to pylance's.
    dim = int(facts()["vectors.dim"])
    row = con.execute(f"SELECT embedding FROM lance_scan('{uri}') WHERE id = 777").fetchone()[0]
    want = ds.to_table(columns=["embedding"], filter="id = 777").column("embedding").to_pylist()[0]
    assert len(row) == dim and row == pytest.approx(want)


def test_filter_and_projection_pushdown(con, uri, metrics):
    ds = lance.dataset(uri)
    flt = "id % 7 = 0 AND category = 'common'"
    want = sorted(ds.to_table(columns=["id"], filter=flt).column("id").to_pylist())
    got = [r[0] for r in con.execute(f"SELECT id FROM lance_scan('{uri}', filter := $$ {flt} $$) ORDER BY id").fetchall()]
    assert got == want and len(got) > 0
    # The pushed filter reduces what the library returns (not DuckDB filtering afterwards).
    before = metrics("stream.rows")
    con.execute(f"SELECT count(*) FROM lance_scan('{uri}', filter := 'id < 10')").fetchall()
    assert metrics("stream.rows") - before == len(ds.to_table(columns=["id"], filter="id < 10"))
    # Projection: a query on `id` makes the library return far fewer bytes than one on vectors.
    before = metrics("stream.bytes")
    con.execute(f"SELECT sum(id) FROM lance_scan('{uri}')").fetchall()
    id_bytes = metrics("stream.bytes") - before
    before = metrics("stream.bytes")
    con.execute(f"SELECT count(embedding) FROM lance_scan('{uri}')").fetchall()
    emb_bytes = metrics("stream.bytes") - before
    rows = ds.count_rows()
    assert id_bytes <= rows * 8 * 2
    assert emb_bytes >= rows * 4 * int(facts()["vectors.dim"])


def test_parallel_scan_over_splits(con, uri, metrics):
    """lance_scan reads one lance-host scan split per fragment, spread over DuckDB's threads;
    the answer does not depend on the thread count."""
    ds = lance.dataset(uri)
    ids = ds.to_table(columns=["id"]).column("id").to_pylist()
    fragments = len(ds.get_fragments())
    assert fragments >= 2
    for threads in (1, 4):
        con.execute(f"SET threads = {threads}")
        before = metrics("ops.scan")
        got = con.execute(f"SELECT count(*), sum(id), count(DISTINCT id) FROM lance_scan('{uri}')").fetchone()
        assert got == (len(ids), sum(ids), len(set(ids)))
        assert metrics("ops.scan") - before == fragments, "one split scan per fragment"


def test_version_parameter(con, uri):
    first = lance.dataset(uri).versions()[0]["version"]
    want = lance.dataset(uri, version=first).count_rows()
    assert con.execute(f"SELECT count(*) FROM lance_scan('{uri}', version := {first})").fetchone()[0] == want


def test_vector_search(con, uri):
    ds = lance.dataset(uri)
    q = ds.to_table(columns=["embedding"], filter="id = 777").column("embedding").to_pylist()[0]
    rows = con.execute(
        f"SELECT id, _distance FROM lance_vector_search('{uri}', 'embedding', {q}, 10, nprobes := 64)").fetchall()
    assert len(rows) == 10
    assert rows[0][0] == 777 and rows[0][1] == pytest.approx(0.0, abs=1e-4)
    dists = [r[1] for r in rows]
    assert dists == sorted(dists)
    exact = ds.to_table(nearest={"column": "embedding", "q": q, "k": 10, "use_index": False}, columns=["id"])
    overlap = len({r[0] for r in rows} & set(exact.column("id").to_pylist()))
    assert overlap >= 8, f"recall {overlap}/10 against pylance's exact search"
    # refine := n re-ranks n * k candidates per index segment: the exact top 10.
    refined = con.execute(
        f"SELECT id FROM lance_vector_search('{uri}', 'embedding', {q}, 10, nprobes := 64, refine := 10)").fetchall()
    assert [r[0] for r in refined] == exact.column("id").to_pylist()
    # A distance range: every row is in range; the index segments apply it as Lance does (to
    # the index's approximate distances, then to exact ones), so a row can be missed near a bound.
    ds_ = lance.dataset(uri)
    d = exact.column("_distance").to_pylist()
    ranged = con.execute(
        f"SELECT id, _distance FROM lance_vector_search('{uri}', 'embedding', {q}, 5, nprobes := 64, refine := 10, "
        f"distance_lower := {d[2]}, distance_upper := {d[9]})").fetchall()
    in_range = ds_.to_table(nearest={"column": "embedding", "q": q, "k": 7, "use_index": False,
                                     "distance_range": (d[2], d[9])}, columns=["id"])
    assert ranged and all(d[2] <= dist < d[9] for _, dist in ranged), ranged
    assert {r[0] for r in ranged} <= set(in_range.column("id").to_pylist())
    with pytest.raises(duckdb.Error, match="inverted"):
        con.execute(f"SELECT id FROM lance_vector_search('{uri}', 'embedding', {q}, 5, "
                    f"distance_lower := 2.0, distance_upper := 1.0)").fetchall()
    with pytest.raises(duckdb.Error, match="refine"):
        con.execute(f"SELECT id FROM lance_vector_search('{uri}', 'embedding', {q}, 10, refine := -1)").fetchall()
    # Prefilter: every result satisfies it; DuckDB SQL composes on top.
    rare = con.execute(
        f"SELECT id, category FROM lance_vector_search('{uri}', 'embedding', {q}, 5, "
        f"filter := $$category = 'rare'$$)").fetchall()
    assert len(rare) == 5 and all(c == "rare" for _, c in rare)
    n = con.execute(f"SELECT count(*) FROM lance_vector_search('{uri}', 'embedding', {q}, 7) WHERE _distance >= 0").fetchone()[0]
    assert n == 7


def test_fts_equals_pylance(con, metrics):
    docs = facts()["docs.uri"]
    ds = lance.dataset(docs)
    from lance.query import FullTextOperator, MatchQuery, PhraseQuery
    cases = [
        ("t001 t004", "OR", MatchQuery("t001 t004", "text")),
        ("t002 t003", "AND", MatchQuery("t002 t003", "text", operator=FullTextOperator.AND)),
        ("quick brown fox", "PHRASE", PhraseQuery("quick brown fox", "text")),
    ]
    for text, op, query in cases:
        before = metrics("ops.search")
        rows = con.execute(
            f"SELECT id, _score FROM lance_fts('{docs}', 'text', '{text}', 10, operator := '{op}')").fetchall()
        # Two index segments and an unindexed tail: one search of the segments, one of the tail.
        assert metrics("ops.search") - before == 2, text
        want = ds.to_table(full_text_query=query, limit=10, columns=["id"])
        assert len(rows) == want.num_rows > 0, text
        for (rid, score), w in zip(rows, want["_score"].to_pylist()):
            assert score == pytest.approx(w, rel=1e-5), text
        scores = [s for _, s in rows]
        assert scores == sorted(scores, reverse=True)
    # Prefilter and SQL on top.
    rows = con.execute(f"SELECT id FROM lance_fts('{docs}', 'text', 't000', 5, filter := 'id % 2 = 0')").fetchall()
    assert len(rows) == 5 and all(r[0] % 2 == 0 for r in rows)
    with pytest.raises(duckdb.Error, match="operator"):
        con.execute(f"SELECT id FROM lance_fts('{docs}', 'text', 'x', 5, operator := 'XOR')").fetchall()
    with pytest.raises(duckdb.Error, match="not a text column"):
        con.execute(f"SELECT id FROM lance_fts('{docs}', 'id', 'x', 5)").fetchall()


def test_fts_of_a_fully_indexed_table_is_one_search_without_statistics(con, metrics, tmp_path):
    import numpy as np
    import pyarrow as pa
    from lance.query import MatchQuery, PhraseQuery
    words = [f"w{i}" for i in range(60)]
    rng = np.random.default_rng(7)

    def docs(start, end):
        return pa.table({"id": pa.array(range(start, end), pa.int64()),
                         "text": pa.array([" ".join(rng.choice(words, size=int(rng.integers(3, 12)), p=None))
                                           for _ in range(start, end)])})
    uri = str(tmp_path / "indexed.lance")
    ds = lance.write_dataset(docs(0, 600), uri, max_rows_per_file=200)
    ds.create_scalar_index("text", "INVERTED", with_position=True)
    ds = lance.write_dataset(docs(600, 900), uri, mode="append", max_rows_per_file=200)
    ds.optimize.optimize_indices(num_indices_to_merge=0)  # a second segment: fully indexed
    ds = lance.dataset(uri)
    assert len(ds.describe_indices()[0].segments) == 2

    def check(where):
        pyds = lance.dataset(uri)
        for text, query in [("w1 w7", MatchQuery("w1 w7", "text")), ("w3", MatchQuery("w3", "text")),
                            ("w2 w5", PhraseQuery("w2 w5", "text"))]:
            op = "PHRASE" if isinstance(query, PhraseQuery) else "OR"
            before = metrics("ops.search")
            rows = con.execute(f"SELECT id, _score FROM lance_fts('{uri}', 'text', '{text}', 10, "
                               f"operator := '{op}')").fetchall()
            searches = metrics("ops.search") - before
            want = pyds.to_table(full_text_query=query, limit=10, columns=["id"])
            assert len(rows) == want.num_rows > 0, (where, text)
            for (_, score), w in zip(rows, want["_score"].to_pylist()):
                assert score == pytest.approx(w, rel=1e-5), (where, text)
            last = want["_score"].to_pylist()[-1]
            assert ({i for i, sc in rows if sc > last * (1 + 1e-5)} ==
                    {i for i, sc in zip(want["id"].to_pylist(), want["_score"].to_pylist()) if sc > last * (1 + 1e-5)})
            yield searches

    # Every segment in one split is the whole corpus: one search, no statistics pass.
    assert list(check("fully indexed")) == [1, 1, 1]
    # With deleted rows (which the segments' statistics still count, as in Lance's own search).
    lance.dataset(uri).delete("id % 5 = 2")
    assert list(check("fully indexed, rows deleted")) == [1, 1, 1]
    # An unindexed tail: the statistics are computed, and the segments and the tail searched.
    lance.write_dataset(docs(900, 1000), uri, mode="append")
    assert list(check("unindexed tail")) == [2, 2, 2]


def test_hybrid_search_is_rrf_of_pylance_results(con):
    docs = facts()["docs.uri"]
    ds = lance.dataset(docs)
    from lance.query import MatchQuery
    q = [0.5] * 8
    k = 10
    rows = con.execute(
        f"SELECT id, _relevance_score, _distance, _score FROM "
        f"lance_hybrid_search('{docs}', 'emb', {q}, 'text', 't005 quick', {k})").fetchall()
    vec = ds.to_table(nearest={"column": "emb", "q": q, "k": k, "use_index": False}, columns=["id"], with_row_id=True)
    txt = ds.to_table(full_text_query=MatchQuery("t005 quick", "text"), limit=k, columns=["id"], with_row_id=True)
    # Reciprocal rank fusion of pylance's two lists (ties ranked by row id), computed here.
    def ranked(t, key, desc):
        pairs = list(zip(t[key].to_pylist(), t["_rowid"].to_pylist(), t["id"].to_pylist()))
        pairs.sort(key=lambda p: ((-p[0] if desc else p[0]), p[1]))
        return pairs
    fused = {}
    for pairs in (ranked(vec, "_distance", False), ranked(txt, "_score", True)):
        for rank, (_, rowid, id_) in enumerate(pairs, start=1):
            r, i = fused.get(rowid, (0.0, id_))
            fused[rowid] = (r + 1.0 / (60 + rank), i)
    want = sorted(fused.items(), key=lambda kv: (-kv[1][0], kv[0]))[:k]
    assert [r[0] for r in rows] == [w[1][1] for w in want]
    for r, w in zip(rows, want):
        assert r[1] == pytest.approx(w[1][0], rel=1e-5)
    vec_ids, txt_ids = set(vec["id"].to_pylist()), set(txt["id"].to_pylist())
    for id_, _, dist, score in rows:
        assert (dist is None) == (id_ not in vec_ids) and (score is None) == (id_ not in txt_ids), id_


def test_errors_are_sql_errors(con, uri):
    with pytest.raises(duckdb.Error, match="cannot open"):
        con.execute("SELECT * FROM lance_scan('/no/such/table.lance')").fetchall()
    with pytest.raises(duckdb.Error, match="no_such_column"):
        con.execute(f"SELECT id FROM lance_scan('{uri}', filter := 'no_such_column = 1')").fetchall()
    with pytest.raises(duckdb.Error, match="embedding_f16"):
        con.execute(f"SELECT embedding_f16 FROM lance_scan('{uri}')").fetchall()
    with pytest.raises(duckdb.Error, match="dimension"):
        con.execute(f"SELECT id FROM lance_vector_search('{uri}', 'embedding', [1.0, 2.0], 3)").fetchall()
    with pytest.raises(duckdb.Error, match="k must be"):
        con.execute(f"SELECT id FROM lance_vector_search('{uri}', 'embedding', [1.0], 0)").fetchall()
    # The connection still works after the errors.
    assert con.execute(f"SELECT count(*) FROM lance_scan('{uri}')").fetchone()[0] == lance.dataset(uri).count_rows()


def test_data_cache_settings_and_figures(con, uri):
    """lance_host_data_cache() reads the data cache's figures; configuring it after first use is
    refused with lance-host's reason; a fresh process configures it before first use."""
    def figures():
        row = con.execute("SELECT * FROM lance_host_data_cache()").fetchone()
        return dict(zip([d[0] for d in con.description], row))

    # the figures are the process's: other tests in it may have read object stores through the
    # cache, so the claim is about this scan's difference
    before = figures()
    con.execute(f"SELECT id FROM lance_scan('{uri}')").fetchall()
    fig = figures()
    assert fig["memory_capacity"] == 256 << 20 and fig["disk_enabled"] == 0
    assert (fig["hits"], fig["misses"]) == (before["hits"], before["misses"]), "a local table went through the data cache"
    with pytest.raises(duckdb.Error, match="already running"):
        con.execute("SELECT * FROM lance_host_data_cache(memory_bytes := 1048576)").fetchall()

    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        script = (
            "import duckdb, os, sys\n"
            "c = duckdb.connect(config={'allow_unsigned_extensions': 'true'})\n"
            "c.execute(f\"LOAD '{os.environ['LANCE_HOST_DUCKDB_EXTENSION']}'\")\n"
            "try:\n"
            "    c.execute(\"SELECT * FROM lance_host_data_cache(block_bytes := 1000)\").fetchall()\n"
            "    sys.exit('a bad block size was accepted')\n"
            "except duckdb.Error as e:\n"
            "    assert 'data_cache_block_bytes' in str(e), e\n"
            "r = c.execute(\"SELECT memory_capacity, disk_capacity, disk_enabled FROM lance_host_data_cache("
            "memory_bytes := 67108864, disk_dir := '\" + sys.argv[1] + \"', disk_bytes := 33554432)\").fetchone()\n"
            "print(r)\n"
        )
        out = subprocess.run([sys.executable, "-c", script, d], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == str((64 << 20, 32 << 20, 1)), out.stdout


def test_vector_search_batch_equals_single_searches(con, uri):
    """lance_vector_search_batch: per query_index, the same rows and distances as one
    lance_vector_search per vector (same splits, same parameters), and with refine the exact
    top k of pylance's brute-force search per query."""
    ds = lance.dataset(uri)
    ids = [777, 15, 1234, 1901, 404, 999]  # none deleted (id % 7 == 3)
    vecs = [ds.to_table(columns=["embedding"], filter=f"id = {i}").column("embedding").to_pylist()[0] for i in ids]
    batch = con.execute(
        f"SELECT query_index, id, _distance FROM lance_vector_search_batch('{uri}', 'embedding', {vecs}, 7, "
        f"nprobes := 4, refine := 10)").fetchall()
    assert [r[0] for r in batch] == sorted(r[0] for r in batch)
    for qi, v in enumerate(vecs):
        mine = [(r[1], r[2]) for r in batch if r[0] == qi]
        single = con.execute(
            f"SELECT id, _distance FROM lance_vector_search('{uri}', 'embedding', {v}, 7, nprobes := 4, refine := 10)"
        ).fetchall()
        assert [m[0] for m in mine] == [s[0] for s in single], qi
        assert [m[1] for m in mine] == pytest.approx([s[1] for s in single], rel=1e-5, abs=1e-5)
        exact = ds.to_table(nearest={"column": "embedding", "q": v, "k": 7, "use_index": False}, columns=["id"])
        assert [m[0] for m in mine] == exact.column("id").to_pylist(), qi
    # A batch of one: query_index 0 on every row; a prefilter applies to every query.
    one = con.execute(f"SELECT DISTINCT query_index FROM lance_vector_search_batch('{uri}', 'embedding', "
                      f"{vecs[:1]}, 3)").fetchall()
    assert one == [(0,)]
    rare = con.execute(f"SELECT query_index, category FROM lance_vector_search_batch('{uri}', 'embedding', "
                       f"{vecs[:3]}, 4, filter := $$category = 'rare'$$)").fetchall()
    assert len(rare) == 12 and all(c == "rare" for _, c in rare)
    with pytest.raises(duckdb.Error, match="no query vector"):
        con.execute(f"SELECT * FROM lance_vector_search_batch('{uri}', 'embedding', []::DOUBLE[][], 3)").fetchall()
    with pytest.raises(duckdb.Error, match="query vector 1 has 2 values"):
        con.execute(f"SELECT * FROM lance_vector_search_batch('{uri}', 'embedding', [{vecs[0]}, [1.0, 2.0]], 3)").fetchall()


def test_blob_read_scalar_function(con, tmp_path_factory):
    """lance_blob_read over the testkit's blobs table: the bytes equal the testkit's formula
    for ranges of inline, packed and dedicated blobs; NULL for a null blob; errors for a range
    past the end and for a column that is not a blob column. Scanning the table itself works
    for the other columns, and names the blob column if a query asks for it."""
    f = facts()
    uri = f["blobs.uri"]
    import lance_host as lh
    t = lh.open(uri).scan(columns=["id"], with_row_id=True).read_all()
    pairs = list(zip(t["_rowid"].to_pylist(), t["id"].to_pylist()))
    assert len(pairs) == int(f["blobs.rows"])

    def blob_len(i):
        return None if i % 10 == 7 else 0 if i % 10 == 3 else 300_000 if i % 10 in (1, 6) else (i * 997) % 20_000

    def expected(i, off, n):
        return bytes((i * 31 + j * 7) % 251 for j in range(off, off + n))

    checked = 0
    for rowid, i in pairs:
        n = blob_len(i)
        if n is None:
            got = con.execute(f"SELECT lance_blob_read('{uri}', 'payload', {rowid}, 0, 0)").fetchone()[0]
            assert got is None
            continue
        off, ln = n // 3, min(n - n // 3, 5000)
        got = con.execute(f"SELECT lance_blob_read('{uri}', 'payload', {rowid}, {off}, {ln})").fetchone()[0]
        assert bytes(got) == expected(i, off, ln), i
        checked += 1
    # Many rows in one chunk: one handle, one take for the run.
    values = ", ".join(f"({r}, {i})" for r, i in pairs if blob_len(i))
    got = con.execute(f"SELECT i, lance_blob_read('{uri}', 'payload', r::UBIGINT, 0, 16) FROM (VALUES {values}) t(r, i)").fetchall()
    assert all(bytes(b) == expected(i, 0, 16) for i, b in got if blob_len(i) >= 16)
    assert checked > 20
    # A query of many chunks opens the table once per DuckDB thread, not once per chunk (the
    # library's own count of opens; DuckDB and this process share the library).
    asks = [(r, i) for r, i in pairs if (blob_len(i) or 0) >= 16]
    con.execute("CREATE OR REPLACE TEMP TABLE blob_asks AS SELECT * FROM (VALUES "
                + ", ".join(f"({r}, {i})" for r, i in asks) + ") t(r, i)")
    copies = 5 * 2048 // len(asks) + 1
    for threads in (1, 2):
        con.execute(f"SET threads = {threads}")
        before = lh.metrics()["ops.open"]
        got = con.execute(f"SELECT a.i, lance_blob_read('{uri}', 'payload', a.r::UBIGINT, 3, 13) "
                          f"FROM range({copies}) g, blob_asks a").fetchall()
        opens = lh.metrics()["ops.open"] - before
        assert len(got) == copies * len(asks) > 5 * 2048
        assert all(bytes(b) == expected(i, 3, 13) for i, b in got)
        assert 1 <= opens <= threads, f"{opens} opens for {len(got)} rows on {threads} threads"
    con.execute("RESET threads")
    # More tables in one query than a thread keeps open (8): the oldest is closed and opened
    # again when asked for, the bytes stay right. The same table under 9 names (symlinks).
    links = tmp_path_factory.mktemp("blob_links")
    names = []
    for j in range(9):
        os.symlink(uri, links / f"t{j}.lance")
        names.append(str(links / f"t{j}.lance"))
    order = list(range(9)) + [0]  # 9 tables, then the first again: closed by then
    rows = ", ".join(f"({n}, '{names[t]}', {r}, {i})" for n, t in enumerate(order) for r, i in asks[:3])
    con.execute("SET threads = 1")
    before = lh.metrics()["ops.open"]
    got = con.execute(f"SELECT i, lance_blob_read(u, 'payload', r::UBIGINT, 5, 11) FROM (VALUES {rows}) t(n, u, r, i) "
                      "ORDER BY n").fetchall()
    opens = lh.metrics()["ops.open"] - before
    con.execute("RESET threads")
    assert len(got) == 3 * len(order) and all(bytes(b) == expected(i, 5, 11) for i, b in got)
    assert opens == len(order), f"{opens} opens for {len(order)} runs of 9 tables"
    big = next(r for r, i in pairs if blob_len(i) == 300_000)
    with pytest.raises(duckdb.Error, match="past the end"):
        con.execute(f"SELECT lance_blob_read('{uri}', 'payload', {big}, 299990, 20)").fetchall()
    with pytest.raises(duckdb.Error, match="not a blob column"):
        con.execute(f"SELECT lance_blob_read('{uri}', 'id', {big}, 0, 1)").fetchall()
    with pytest.raises(duckdb.Error, match="must not be negative"):
        con.execute(f"SELECT lance_blob_read('{uri}', 'payload', {big}, -1, 1)").fetchall()
    with pytest.raises(duckdb.Error, match="cannot open"):
        con.execute(f"SELECT lance_blob_read('{uri}.missing', 'payload', {big}, 0, 1)").fetchall()
    with pytest.raises(duckdb.Error, match="does not exist"):
        con.execute(f"SELECT lance_blob_read('{uri}', 'payload', 99999999, 0, 1)").fetchall()
    # A NULL argument gives NULL, as SQL functions do.
    assert con.execute(f"SELECT lance_blob_read('{uri}', 'payload', NULL, 0, 1)").fetchone()[0] is None
    assert con.execute(f"SELECT count(*), sum(id) FROM lance_scan('{uri}')").fetchone() == (
        len(pairs), sum(i for _, i in pairs))
    with pytest.raises(duckdb.Error, match="payload"):
        con.execute(f"SELECT payload FROM lance_scan('{uri}')").fetchall()


def test_lance_write_and_delete_from_sql_are_read_by_pylance(con, uri, tmp_path):
    con.execute("CREATE OR REPLACE TABLE src AS SELECT range AS id, 'n' || range AS name, "
                "range / 4 AS score, range % 3 = 0 AS flag FROM range(2000)")
    out = str(tmp_path / "from_duckdb.lance")
    assert con.execute(f"SELECT version, rows_written FROM lance_write('{out}', 'SELECT * FROM src WHERE id < 1500', "
                       "commit_message := 'ctas from duckdb', max_rows_per_file := 500)").fetchone() == (1, 1500)
    py = lance.dataset(out)
    assert py.read_transaction(1).transaction_properties["__lance_commit_message"] == "ctas from duckdb"
    assert len(py.get_fragments()) == 3
    assert con.execute(f"SELECT version, rows_written FROM lance_write('{out}', 'SELECT * FROM src WHERE id >= 1500', "
                       "mode := 'append')").fetchone() == (2, 500)
    want = con.execute("SELECT id, name, flag FROM src ORDER BY id").fetchall()
    got = lance.dataset(out).to_table(columns=["id", "name", "flag"]).sort_by("id").to_pylist()
    assert [(r["id"], r["name"], r["flag"]) for r in got] == want
    # DELETE from SQL equals pylance's own delete of the same predicate
    twin = str(tmp_path / "twin.lance")
    lance.write_dataset(lance.dataset(out).to_table(), twin)
    version, deleted = con.execute(f"SELECT * FROM lance_delete('{out}', 'id % 7 = 0 OR flag')").fetchone()
    n = lance.dataset(twin).count_rows()
    lance.dataset(twin).delete("id % 7 = 0 OR flag")
    assert (version, deleted) == (3, n - lance.dataset(twin).count_rows())
    assert lance.dataset(out).to_table().sort_by("id").equals(lance.dataset(twin).to_table().sort_by("id"))
    # CREATE TABLE AS SELECT from a lance_scan, and an overwrite
    copy = str(tmp_path / "copy.lance")
    con.execute(f"SELECT * FROM lance_write('{copy}', 'SELECT id, category FROM lance_scan(''{uri}'') WHERE id < 100')")
    assert lance.dataset(copy).count_rows() == lance.dataset(uri).count_rows(filter="id < 100")
    assert con.execute(f"SELECT version, rows_written FROM lance_write('{copy}', 'SELECT 1::BIGINT AS id, ''x'' AS category', "
                       "mode := 'overwrite')").fetchone() == (2, 1)
    assert lance.dataset(copy).to_table().to_pylist() == [{"id": 1, "category": "x"}]
    # bad input: a clear SQL error, nothing written
    for sql, needle in [(f"lance_write('{out}', 'SELECT nope FROM src', mode := 'append')", "nope"),
                        (f"lance_write('{out}', 'SELECT * FROM src', mode := 'sideways')", "mode must be"),
                        (f"lance_write('{out}', 'SELECT * FROM src')", "exists"),
                        (f"lance_write('{out}', 'SELECT 1 AS other', mode := 'append')", "schema"),
                        (f"lance_write('{out}', 'SELECT * FROM src', mode := 'append', max_rows_per_file := 0)",
                         "max_rows_per_file"),
                        (f"lance_delete('{out}', 'id = = 1')", "lance_delete"),
                        (f"lance_delete('{tmp_path}/missing.lance', 'true')", "lance_delete")]:
        with pytest.raises(duckdb.Error, match=needle):
            con.execute(f"SELECT * FROM {sql}").fetchall()
    assert lance.dataset(out).version == 3


def test_create_and_drop_indexes_from_sql(con, tmp_path):
    import numpy as np
    import pyarrow as pa
    uri = str(tmp_path / "indexed.lance")
    rng = np.random.default_rng(1)
    lance.write_dataset(pa.table({
        "id": pa.array(range(2000), pa.int64()),
        "category": pa.array([["red", "green", "blue"][i % 3] for i in range(2000)]),
        "text": pa.array([f"word{i % 17} other{i % 5}" for i in range(2000)]),
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(2000 * 8, dtype=np.float32)), 8),
    }), uri)
    assert con.execute(f"SELECT version FROM lance_create_index('{uri}', 'emb', 'IVF_PQ', name := 'emb_idx', "
                       "num_partitions := 4, num_sub_vectors := 2, metric := 'cosine')").fetchone() == (2,)
    con.execute(f"SELECT * FROM lance_create_index('{uri}', 'id', 'BTREE')").fetchall()
    con.execute(f"SELECT * FROM lance_create_index('{uri}', 'category', 'bitmap')").fetchall()
    assert con.execute(f"SELECT version FROM lance_create_index('{uri}', 'text', 'INVERTED', "
                       "with_position := true)").fetchone() == (5,)
    indices = {i["name"]: i["type"] for i in lance.dataset(uri).list_indices()}
    assert set(indices) == {"emb_idx", "id_idx", "category_idx", "text_idx"} and indices["emb_idx"] == "IVF_PQ", indices
    # used by the reads: full-text search over the index equals pylance's
    got = con.execute(f"SELECT id FROM lance_fts('{uri}', 'text', 'word3', 500) ORDER BY id").fetchall()
    want = sorted(lance.dataset(uri).to_table(full_text_query="word3", columns=["id"])["id"].to_pylist())
    assert [r[0] for r in got] == want
    assert con.execute(f"SELECT version FROM lance_drop_index('{uri}', 'emb_idx')").fetchone() == (6,)
    assert "emb_idx" not in {i["name"] for i in lance.dataset(uri).list_indices()}
    for sql, needle in [(f"lance_create_index('{uri}', 'emb', 'IVF_MAGIC')", "index_type must be"),
                        (f"lance_create_index('{uri}', 'id', 'BTREE')", "already exists"),
                        (f"lance_create_index('{uri}', 'nope', 'BTREE')", "nope"),
                        (f"lance_create_index('{uri}', 'emb', 'IVF_PQ', metric := 'manhattan')", "metric must be"),
                        (f"lance_drop_index('{uri}', 'emb_idx')", "no index named")]:
        with pytest.raises(duckdb.Error, match=needle):
            con.execute(f"SELECT * FROM {sql}").fetchall()
    assert lance.dataset(uri).version == 6


def test_a_one_fragment_table_is_scanned_by_every_core(con, metrics, tmp_path):
    """A table of fewer fragments than cores is cut into row slices, one per core (0.10.5: one
    split, one thread); the answer equals pylance's with deletions inside the slices."""
    import math

    import numpy as np
    import pyarrow as pa

    uri = str(tmp_path / "one.lance")
    ids = np.arange(30_000)
    lance.write_dataset(pa.table({"id": pa.array(ids, pa.int64())}), uri)
    lance.dataset(uri).delete("id % 13 = 4")
    ds = lance.dataset(uri)
    assert len(ds.get_fragments()) == 1
    cores = os.cpu_count() or 1
    rows = ds.count_rows()
    want_splits = 1 if cores < 2 else len(__import__("lance_host").open(uri).plan_scan(math.ceil(rows / cores)))
    assert cores < 2 or want_splits == cores
    con.execute(f"SET threads = {max(cores, 1)}")
    before = metrics("ops.scan")
    got = con.execute(f"SELECT count(*), sum(id), count(DISTINCT id) FROM lance_scan('{uri}')").fetchone()
    kept = ds.to_table(columns=["id"])["id"].to_pylist()
    assert got == (len(kept), sum(kept), len(kept))
    assert metrics("ops.scan") - before == want_splits


def test_lance_aggregate_equals_duckdbs_aggregate_over_the_same_rows(con, metrics, tmp_path):
    """lance_aggregate runs the aggregate inside lance-host (partial states per split, merged)
    and hands DuckDB the result rows; equal to DuckDB's own GROUP BY over lance_scan of the
    table pylance wrote (with deletions), and to pyarrow's."""
    import numpy as np
    import pyarrow as pa

    t = str(tmp_path / "agg.lance")
    ids = np.arange(20_000)
    lance.write_dataset(pa.table({"id": pa.array(ids, pa.int64()),
                                  "g": pa.array([None if i % 37 == 0 else f"g{i % 6}" for i in ids]),
                                  "n": pa.array((ids * 7) % 1000, pa.int32()),
                                  "x": pa.array(np.where(ids % 19 == 0, np.nan, (ids % 500) / 3.0)),
                                  "dec": pa.array(ids * 37 % 100_000 - 50_000, pa.int64()).cast(pa.decimal128(19, 0))
                                  .cast(pa.decimal128(15, 2)),
                                  "big": pa.array(ids, pa.int64()).cast(pa.decimal128(30, 3)),
                                  "d": pa.array(ids % 3000, pa.int32()).cast(pa.date32()),
                                  "ts": pa.array(ids * 1_000_003, pa.int64()).cast(pa.timestamp("us"))}),
                        t, max_rows_per_file=5_000)
    lance.dataset(t).delete("id % 13 = 1")
    before = metrics("ops.aggregate")
    ours = con.execute(
        f"SELECT * FROM lance_aggregate('{t}', group_by := ['g'], "
        "aggregates := ['count(*)', 'sum(n)', 'min(n)', 'max(id)', 'avg(n)', 'count(g)', 'sum(x)'], "
        "filter := 'n > 10') ORDER BY g NULLS FIRST").fetchall()
    assert metrics("ops.aggregate") > before, "the aggregate ran in lance-host"
    duck = con.execute(
        f"SELECT g, count(*), sum(n), min(n), max(id), avg(n), count(g), sum(x) FROM lance_scan('{t}') "
        "WHERE n > 10 GROUP BY g ORDER BY g NULLS FIRST").fetchall()
    assert len(ours) == len(duck) == 7
    for a, b in zip(ours, duck):
        assert a[:5] == b[:5] and a[6] == b[6], (a, b)
        assert a[5] == pytest.approx(b[5], rel=1e-12)
        assert (np.isnan(a[7]) and np.isnan(b[7])) or a[7] == pytest.approx(b[7], rel=1e-12), (a, b)
    # decimals, dates and timestamps: lance_scan hands them to DuckDB as DECIMAL, DATE, TIMESTAMP
    # (equal to pylance's values), and lance_aggregate's results of those types equal DuckDB's
    scanned = con.execute(f"SELECT id, dec, big, d, ts FROM lance_scan('{t}') ORDER BY id").fetchall()
    py = lance.dataset(t).to_table(columns=["id", "dec", "big", "d", "ts"]).sort_by("id").to_pylist()
    assert scanned == [tuple(r.values()) for r in py]
    ours = con.execute(
        f"SELECT * FROM lance_aggregate('{t}', group_by := ['g'], aggregates := ['sum(dec)', 'avg(dec)', "
        "'min(d)', 'max(ts)', 'sum(big)']) ORDER BY g NULLS FIRST").fetchall()
    duck = con.execute(
        f"SELECT g, sum(dec), avg(dec), min(d), max(ts), sum(big) FROM lance_scan('{t}') GROUP BY g ORDER BY g NULLS FIRST").fetchall()
    assert len(ours) == len(duck) == 7
    for a, b in zip(ours, duck):
        assert a[0] == b[0] and a[1] == b[1] and a[3:] == b[3:], (a, b)
        assert abs(float(a[2]) - b[2]) <= 0.0051, (a, b)   # lance: rounded to the column scale; DuckDB: a double
    # expressions as arguments (issue 62): a text that names no column is a Lance SQL expression
    ours = con.execute(
        f"SELECT * FROM lance_aggregate('{t}', group_by := ['g'], aggregates := ['sum(dec * (1 - dec))', "
        "'sum(CAST(n AS DOUBLE) * 0.5)', 'max(dec * 2)']) ORDER BY g NULLS FIRST").fetchall()
    duck = con.execute(
        f"SELECT g, sum(dec * (1 - dec)), sum(CAST(n AS DOUBLE) * 0.5), max(dec * 2) FROM lance_scan('{t}') "
        "GROUP BY g ORDER BY g NULLS FIRST").fetchall()
    assert len(ours) == len(duck) == 7
    for a, b in zip(ours, duck):
        assert a[0] == b[0] and a[1] == b[1] and a[3] == b[3], (a, b)   # decimals: exact
        assert a[2] == pytest.approx(b[2], rel=1e-12), (a, b)
    # count(DISTINCT col): exact across the splits, equal to DuckDB's
    ours = con.execute(
        f"SELECT * FROM lance_aggregate('{t}', group_by := ['g'], aggregates := ['count(DISTINCT n)', "
        "'count( distinct dec )']) ORDER BY g NULLS FIRST").fetchall()
    duck = con.execute(
        f"SELECT g, count(DISTINCT n), count(DISTINCT dec) FROM lance_scan('{t}') GROUP BY g ORDER BY g NULLS FIRST").fetchall()
    assert ours == duck
    # approx_count_distinct(col): the HyperLogLog estimate, within 3 standard errors of the exact
    ours = con.execute(f"SELECT * FROM lance_aggregate('{t}', group_by := ['g'], "
                       "aggregates := ['approx_count_distinct(n)']) ORDER BY g NULLS FIRST").fetchall()
    assert [r[0] for r in ours] == [r[0] for r in duck]
    for (g, approx), (_, exact, _) in zip(ours, duck):
        assert abs(approx - exact) <= max(2, 0.048 * exact), (g, approx, exact)
    # a group key that names no column is an expression too, its result column named by its text
    cur = con.execute(f"SELECT * FROM lance_aggregate('{t}', group_by := ['date_part(''year'', d)', 'g'], "
                      "aggregates := ['count(*)', 'sum(dec)']) ORDER BY 1, 2 NULLS FIRST")
    assert [c[0] for c in cur.description][:2] == ["date_part('year', d)", "g"]
    ours = cur.fetchall()
    duck = con.execute(f"SELECT date_part('year', d), g, count(*), sum(dec) FROM lance_scan('{t}') "
                       "GROUP BY ALL ORDER BY 1, 2 NULLS FIRST").fetchall()
    assert ours == duck and len(duck) > 7
    with pytest.raises(duckdb.Error, match=r"DECIMAL\(38, 0\)"):
        con.execute(f"SELECT * FROM lance_aggregate('{t}', aggregates := ['sum(n * 2)'])").fetchall()
    cols = [d[0] for d in con.execute(f"SELECT * FROM lance_aggregate('{t}', aggregates := ['count(*)'])").description]
    assert cols == ["count(*)"]
    assert con.execute(f"SELECT * FROM lance_aggregate('{t}', aggregates := ['count(*)'])").fetchall() == [
        (lance.dataset(t).count_rows(),)]
    # errors are SQL errors naming the problem
    for call, needle in [(f"lance_aggregate('{t}', aggregates := ['median(n)'])", "median(n)"),
                         (f"lance_aggregate('{t}', aggregates := ['sum(nope)'])", "nope"),
                         (f"lance_aggregate('{t}', aggregates := ['sum(g)'])", "SUM of a Utf8"),
                         (f"lance_aggregate('{t}')", "aggregates :="),
                         (f"lance_aggregate('{t}', aggregates := ['count(*)'], filter := 'id = $1')", "placeholder")]:
        with pytest.raises(duckdb.Error, match=needle.replace("(", r"\(").replace(")", r"\)").replace("$", r"\$")):
            con.execute(f"SELECT * FROM {call}").fetchall()


def test_branch_parameter_and_lance_changes_equal_pylance(con, tmp_path):
    import pyarrow as pa
    uri = str(tmp_path / "versions")
    rows = lambda a, b, tag: pa.table({"id": pa.array(range(a, b), pa.int64()), "tag": [f"{tag}{i}" for i in range(a, b)]})
    lance.write_dataset(rows(0, 200, "a"), uri, max_rows_per_file=70, enable_stable_row_ids=True)
    lance.write_dataset(rows(200, 230, "b"), uri, mode="append")
    lance.dataset(uri).update({"tag": "'u'"}, where="id < 9")
    lance.dataset(uri).delete("id >= 100 AND id < 104")
    end = lance.dataset(uri).version
    # lance_changes: what pylance's delta says changed after version 1, typed per row
    d = lance.dataset(uri).delta(begin_version=1, end_version=end)
    want = sorted([(i, "insert") for i in d.get_inserted_rows().read_all()["id"].to_pylist()]
                  + [(i, "update") for i in d.get_updated_rows().read_all()["id"].to_pylist()])
    got = con.execute(f"SELECT id, _change_type FROM lance_changes('{uri}', 1, 0) "
                      "WHERE _change_type <> 'delete' ORDER BY id").fetchall()
    assert got == want
    deleted = d.get_deleted_row_ids().read_all()["_rowid"].to_pylist()
    got = con.execute(f"SELECT _rowid, id FROM lance_changes('{uri}', 1, 0) WHERE _change_type = 'delete' "
                      "ORDER BY _rowid").fetchall()
    assert [r for r, _ in got] == sorted(deleted) and sorted(i for _, i in got) == list(range(100, 104))
    assert con.execute(f"SELECT count(*) FROM lance_changes('{uri}', 1, 2)").fetchone() == (30,)
    # a branch, written by pylance, read by name (and main is not it)
    b = lance.dataset(uri).create_branch("dev")
    b.insert(rows(1000, 1005, "dev"))
    assert con.execute(f"SELECT count(*), max(id) FROM lance_scan('{uri}', branch := 'dev')").fetchone() == (
        lance.dataset(uri).count_rows() + 5, 1004)
    assert con.execute(f"SELECT max(id) FROM lance_scan('{uri}')").fetchone() == (229,)
    assert con.execute(f"SELECT id FROM lance_changes('{uri}', {end}, 0, branch := 'dev') ORDER BY id").fetchall() == [
        (i,) for i in range(1000, 1005)]
    with pytest.raises(duckdb.Error, match="stable row ids"):
        plain = str(tmp_path / "plain")
        lance.write_dataset(rows(0, 3, "p"), plain)
        con.execute(f"SELECT * FROM lance_changes('{plain}', 0, 0)").fetchall()
    with pytest.raises(duckdb.Error):
        con.execute(f"SELECT * FROM lance_scan('{uri}', branch := 'nope')").fetchall()


def test_writes_run_once_per_execution_never_at_bind(con, tmp_path):
    """Issue 58 item 2: DuckDB's Python API binds a relation's table function when the relation
    is made and again for each fetch; a write happens only when the statement executes."""
    out = str(tmp_path / "relation.lance")
    rel = con.sql(f"SELECT * FROM lance_write('{out}', 'SELECT range AS id FROM range(10)')")
    with pytest.raises(Exception):
        lance.dataset(out)  # made, not executed: nothing written
    assert rel.fetchall()[0][:2] == (1, 10)
    assert lance.dataset(out).count_rows() == 10 and lance.dataset(out).version == 1
    app = con.sql(f"SELECT * FROM lance_write('{out}', 'SELECT range AS id FROM range(10)', mode := 'append')")
    assert lance.dataset(out).count_rows() == 10
    assert app.fetchall()[0][:2] == (2, 10)
    assert lance.dataset(out).count_rows() == 20
    # an index build and a delete made as relations do nothing until executed
    idx = con.sql(f"SELECT * FROM lance_create_index('{out}', 'id', 'BTREE')")
    dele = con.sql(f"SELECT * FROM lance_delete('{out}', 'id < 3')")
    assert lance.dataset(out).version == 2 and not lance.dataset(out).describe_indices()
    assert idx.fetchall() == [(3,)]
    assert [i.name for i in lance.dataset(out).describe_indices()] == ["id_idx"]
    assert dele.fetchall() == [(4, 6)]
    assert lance.dataset(out).count_rows() == 14 and lance.dataset(out).version == 4
    # a create that finds its table fails when executed, having written nothing
    again = con.sql(f"SELECT * FROM lance_write('{out}', 'SELECT range AS id FROM range(10)')")
    with pytest.raises(duckdb.Error, match="exists"):
        again.fetchall()
    assert lance.dataset(out).version == 4


def test_wide_results_are_whole(con, tmp_path):
    """Issue 58 item 7: more than 256 result columns (lance_aggregate takes up to 1,024
    aggregates, tables have hundreds of columns) come back whole, equal to DuckDB's own answer."""
    wide = str(tmp_path / "wide.lance")
    n = 300
    t = pa.table({f"c{i}": pa.array([i * 1000 + r for r in range(20)], pa.int64()) for i in range(n)})
    lance.write_dataset(t, wide)
    con.register("wide_src", t)
    got = con.execute(f"SELECT * FROM lance_scan('{wide}') ORDER BY c0").fetchall()
    want = con.execute("SELECT * FROM wide_src ORDER BY c0").fetchall()
    assert len(got[0]) == n and got == want
    aggs = ", ".join(f"'sum(c{i})'" for i in range(n))
    got = con.execute(f"SELECT * FROM lance_aggregate('{wide}', aggregates := [{aggs}])").fetchall()
    want = con.execute("SELECT " + ", ".join(f"sum(c{i})" for i in range(n)) + " FROM wide_src").fetchall()
    assert len(got[0]) == n and [int(v) for v in got[0]] == [int(v) for v in want[0]]
    con.unregister("wide_src")


def test_scan_key_set_equals_duckdb_in(con, tmp_path):
    """Issue 60, runtime filters: lance_scan(key_column :=, keys :=) reads only the rows whose
    column holds a key (every split gets the key set), equal to DuckDB's own IN over the whole
    table; ints, strings with a NULL key, ANDed with `filter`; a DuckDB relation fetched twice
    gives the same rows; a lone key_column, keys that do not fit and an unknown column are
    errors naming them."""
    uri = str(tmp_path / "keys.lance")
    n = 5000
    lance.write_dataset(pa.table({"id": pa.array(range(n), pa.int64()),
                                  "name": pa.array([None if i % 9 == 0 else f"n{i % 50}" for i in range(n)])}),
                        uri, max_rows_per_file=1200)
    whole = f"lance_scan('{uri}')"
    pairs = [("id", "[3, 17, 4999, 123456, -1]", "(3, 17, 4999, 123456, -1)", None),
             ("name", "['n1', NULL, 'n7', 'absent']", "('n1', 'n7', 'absent')", None),
             ("id", "[1, 2, 3, 1200, 1201, 2400]", "(1, 2, 3, 1200, 1201, 2400)", "id > 1")]
    for column, keys, in_list, filt in pairs:
        extra = f", filter := '{filt}'" if filt else ""
        got = con.execute(f"SELECT id FROM lance_scan('{uri}', key_column := '{column}', keys := {keys}{extra}) "
                          "ORDER BY id").fetchall()
        where = f"{column} IN {in_list}" + (f" AND {filt}" if filt else "")
        want = con.execute(f"SELECT id FROM {whole} WHERE {where} ORDER BY id").fetchall()
        assert got == want and got, (column, keys)
    assert con.execute(f"SELECT count(*) FROM lance_scan('{uri}', key_column := 'id', keys := [])").fetchall() == [(0,)]
    rel = con.sql(f"SELECT id FROM lance_scan('{uri}', key_column := 'id', keys := [5, 6]) ORDER BY id")
    assert rel.fetchall() == [(5,), (6,)] and rel.fetchall() == [(5,), (6,)]
    with pytest.raises(duckdb.BinderException, match="key_column and keys together"):
        con.execute(f"SELECT * FROM lance_scan('{uri}', key_column := 'id')")
    with pytest.raises(duckdb.Error, match="do not fit column 'id'"):
        con.execute(f"SELECT * FROM lance_scan('{uri}', key_column := 'id', keys := ['x'])").fetchall()
    with pytest.raises(duckdb.Error, match="'nope' is not a top-level column"):
        con.execute(f"SELECT * FROM lance_scan('{uri}', key_column := 'nope', keys := [1])").fetchall()
    # BLOB keys reach a table function as their escaped text: refused on a binary column
    blobs = str(tmp_path / "blob_keys.lance")
    lance.write_dataset(pa.table({"b": pa.array([b"\xaa", b"\\xAA", b"z"], pa.binary())}), blobs)
    with pytest.raises(duckdb.BinderException, match="binary column"):
        con.execute(f"SELECT * FROM lance_scan('{blobs}', key_column := 'b', keys := ['\\xAA'::BLOB])").fetchall()
