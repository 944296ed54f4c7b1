"""Full-text search across splits against pylance: pylance writes a table whose INVERTED index has
two segments, an unindexed tail and deletions; lance-host plans it (segment + flat splits),
computes the corpus statistics once, searches every split with them and merges by `_score`.
The merged top-k must equal pylance's single-process full-text search (row ids and scores),
for match (OR / AND) and phrase queries, with and without a prefilter, locally and on s3://
(moto)."""

import ctypes
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
from lance.query import FullTextOperator, MatchQuery, PhraseQuery

from test_ctypes_stream import ArrowArrayStream, LANCE_OK

LANCE_ERR_INVALID_ARGUMENT = 1
LANCE_ERR_CORRUPT = 10
LANCE_SPLIT_FTS_SEGMENT = 4
LANCE_SPLIT_FTS_FLAT = 5
ANY, ALL, PHRASE = 0, 1, 2
DIM = 8


class TextQuery(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("column", ctypes.c_char_p),
        ("text", ctypes.c_char_p),
        ("match_kind", ctypes.c_int32),
        ("slop", ctypes.c_uint32),
        ("k", ctypes.c_uint64),
        ("prefilter_sql", ctypes.c_char_p),
        ("columns", ctypes.POINTER(ctypes.c_char_p)),
        ("num_columns", ctypes.c_size_t),
        ("with_row_id", ctypes.c_bool),
    ]


@pytest.fixture(scope="module")
def lib():
    lib = ctypes.CDLL(os.environ["LANCE_HOST_LIB"])
    P = ctypes.c_void_p
    S = ctypes.POINTER(ArrowArrayStream)
    sigs = {
        "lance_dataset_open": (P, [ctypes.c_char_p, P, ctypes.c_uint64]),
        "lance_dataset_free": (None, [P]),
        "lance_text_query_init": (ctypes.c_int32, [ctypes.POINTER(TextQuery), ctypes.c_size_t]),
        "lance_dataset_plan_fts": (ctypes.c_int32, [P, ctypes.c_char_p, ctypes.c_uint64, ctypes.POINTER(P)]),
        "lance_dataset_fts_stats": (
            ctypes.c_int32,
            [P, ctypes.POINTER(TextQuery), ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)),
             ctypes.POINTER(ctypes.c_size_t), P]),
        "lance_split_fts_search": (
            ctypes.c_int32, [P, P, ctypes.POINTER(TextQuery), ctypes.c_char_p, ctypes.c_size_t, S]),
        "lance_split_explain_fts": (
            ctypes.c_int32,
            [P, P, ctypes.POINTER(TextQuery), ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p)]),
        "lance_fts_merge": (ctypes.c_int32, [S, ctypes.c_size_t, ctypes.c_uint64, ctypes.c_uint64, S]),
        "lance_split_plan_count": (ctypes.c_size_t, [P]),
        "lance_split_plan_get": (P, [P, ctypes.c_size_t]),
        "lance_split_plan_free": (None, [P]),
        "lance_split_kind": (ctypes.c_int32, [P]),
        "lance_split_free": (None, [P]),
        "lance_split_serialize": (
            ctypes.c_int32, [P, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)), ctypes.POINTER(ctypes.c_size_t)]),
        "lance_split_deserialize": (P, [ctypes.c_char_p, ctypes.c_size_t]),
        "lance_split_open_dataset": (P, [P, P]),
        "lance_bytes_free": (None, [ctypes.POINTER(ctypes.c_uint8), ctypes.c_size_t]),
        "lance_last_error_message": (ctypes.c_char_p, []),
        "lance_last_error_code": (ctypes.c_int32, []),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


# ---- the corpus: a seeded Zipf vocabulary plus a few planted phrases ----------------------------

VOCAB = [f"w{i:03d}" for i in range(400)]
PHRASES = [["quick", "brown", "fox"], ["lazy", "dog"], ["lance", "table", "format"]]


def documents(start, end):
    rng = np.random.default_rng(1234 + start)
    ranks = np.arange(1, len(VOCAB) + 1)
    p = 1.0 / ranks**1.1
    p /= p.sum()
    docs = []
    for i in range(start, end):
        words = list(rng.choice(VOCAB, size=int(rng.integers(3, 40)), p=p))
        if i % 7 == 0:
            ph = PHRASES[i % len(PHRASES)]
            at = int(rng.integers(0, len(words) + 1))
            words[at:at] = ph
        if i % 11 == 0:  # the phrase words apart, for slop
            words += ["quick", VOCAB[i % 50], "brown", "fox"]
        docs.append(" ".join(words))
    return docs


def batch(start, end):
    ids = np.arange(start, end)
    rng = np.random.default_rng(99 + start)
    vec = rng.normal(size=(end - start, DIM)).astype(np.float32)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "category": pa.array([f"c{i % 4}" for i in ids]),
        "text": pa.array(documents(start, end)),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), DIM),
    })


def write_table(uri, storage_options=None):
    kw = dict(max_rows_per_file=400, storage_options=storage_options)
    ds = lance.write_dataset(batch(0, 1600), uri, **kw)
    ds.create_scalar_index("text", "INVERTED", with_position=True, name="text_idx")
    ds = lance.write_dataset(batch(1600, 2400), uri, mode="append", **kw)
    ds.optimize.optimize_indices(num_indices_to_merge=0)  # a second segment
    ds = lance.write_dataset(batch(2400, 2900), uri, mode="append", **kw)  # unindexed tail
    ds.delete("id % 13 = 5")
    ds = lance.dataset(uri, storage_options=storage_options)
    return ds


def queries():
    common = [VOCAB[i] for i in (0, 1, 2, 5)]
    mid = [VOCAB[i] for i in (20, 37, 64)]
    rare = [VOCAB[i] for i in (250, 311, 399)]
    qs = [(w, ANY, 0) for w in common + mid + rare]
    qs += [
        (f"{VOCAB[0]} {VOCAB[3]}", ANY, 0),
        (f"{VOCAB[1]} {VOCAB[40]} {VOCAB[200]}", ANY, 0),
        (f"{VOCAB[7]} {VOCAB[8]}", ALL, 0),
        (f"{VOCAB[0]} {VOCAB[1]} {VOCAB[2]}", ALL, 0),
        (f"{VOCAB[300]} {VOCAB[2]}", ANY, 0),
        ("quick brown fox", ANY, 0),
        ("quick brown fox", ALL, 0),
        ("lazy dog", ANY, 0),
        ("absentterm", ANY, 0),
        ("absentterm anotherabsent", ANY, 0),
        (f"absentterm {VOCAB[4]}", ANY, 0),
        (f"absentterm {VOCAB[4]}", ALL, 0),
        ("quick brown fox", PHRASE, 0),
        ("lazy dog", PHRASE, 0),
        ("lance table format", PHRASE, 0),
        ("table format", PHRASE, 0),
        ("quick brown", PHRASE, 0),
        ("quick brown", PHRASE, 1),
        ("quick fox", PHRASE, 1),
        ("brown quick", PHRASE, 0),
        (f"{VOCAB[0]} {VOCAB[1]}", PHRASE, 0),
        ("absentterm dog", PHRASE, 0),
    ]
    return qs


def pylance_query(text, kind, slop):
    if kind == PHRASE:
        return PhraseQuery(text, "text", slop=slop)
    op = FullTextOperator.AND if kind == ALL else FullTextOperator.OR
    return MatchQuery(text, "text", operator=op)


def expected(ds, text, kind, slop, k, prefilter):
    kw = dict(full_text_query=pylance_query(text, kind, slop), limit=k, with_row_id=True, columns=["id"])
    if prefilter:
        kw.update(filter=prefilter, prefilter=True)
    t = ds.to_table(**kw)
    return t["_rowid"].to_pylist(), t["_score"].to_pylist(), t["id"].to_pylist()


def make_query(text, kind, slop, k, prefilter, columns=("id",)):
    q = TextQuery()
    return fill_query(q, text, kind, slop, k, prefilter, columns)


def fill_query(q, text, kind, slop, k, prefilter, columns):
    assert LIB_INIT(q)
    q.column = b"text"
    q.text = text.encode()
    q.match_kind = kind
    q.slop = slop
    q.k = k
    q.prefilter_sql = prefilter.encode() if prefilter else None
    cols = (ctypes.c_char_p * len(columns))(*[c.encode() for c in columns])
    _keep.append(cols)
    q.columns = cols
    q.num_columns = len(columns)
    q.with_row_id = True
    return q


_keep = []
LIB_INIT = None


def stats_bytes(lib, h, q):
    out = ctypes.POINTER(ctypes.c_uint8)()
    n = ctypes.c_size_t()
    rc = lib.lance_dataset_fts_stats(h, ctypes.byref(q), ctypes.byref(out), ctypes.byref(n), None)
    assert rc == LANCE_OK, lib.lance_last_error_message()
    data = ctypes.string_at(out, n.value)
    lib.lance_bytes_free(out, n.value)
    return data


def plan(lib, h):
    p = ctypes.c_void_p()
    rc = lib.lance_dataset_plan_fts(h, b"text", 0, ctypes.byref(p))
    assert rc == LANCE_OK, lib.lance_last_error_message()
    splits = [lib.lance_split_plan_get(p, i) for i in range(lib.lance_split_plan_count(p))]
    lib.lance_split_plan_free(p)
    return splits


def distributed(lib, h, splits, q, stats, k):
    streams = (ArrowArrayStream * len(splits))()
    for i, s in enumerate(splits):
        rc = lib.lance_split_fts_search(h, s, ctypes.byref(q), stats, len(stats), ctypes.byref(streams[i]))
        assert rc == LANCE_OK, lib.lance_last_error_message()
    out = ArrowArrayStream()
    assert lib.lance_fts_merge(streams, len(splits), k, 0, ctypes.byref(out)) == LANCE_OK, \
        lib.lance_last_error_message()
    t = pa.RecordBatchReader._import_from_c(ctypes.addressof(out)).read_all()
    return t["_rowid"].to_pylist(), t["_score"].to_pylist(), t["id"].to_pylist()


def assert_same_top_k(got, want, what):
    g_ids, g_scores, g_cols = got
    w_ids, w_scores, w_cols = want
    assert len(g_ids) == len(w_ids), f"{what}: {len(g_ids)} rows, pylance {len(w_ids)}"
    for i, (a, b) in enumerate(zip(g_scores, w_scores)):
        assert abs(a - b) <= 1e-5 * max(abs(b), 1e-6), f"{what}: score {i}: {a} vs pylance {b}"
    if not w_ids:
        return
    # Same rows; only rows tied with the k-th score may differ (either side may cut a tie).
    last = w_scores[-1]
    tol = 1e-5 * max(abs(last), 1e-6)
    above = lambda ids, scores: {r for r, s in zip(ids, scores) if s > last + tol}
    assert above(g_ids, g_scores) == above(w_ids, w_scores), f"{what}: different rows"
    by_id = dict(zip(w_ids, w_scores))
    for r, s in zip(g_ids, g_scores):
        if r in by_id:
            assert abs(by_id[r] - s) <= 1e-5 * max(abs(s), 1e-6), f"{what}: row {r} scored {s} vs {by_id[r]}"
    assert dict(zip(g_ids, g_cols)).items() <= {**dict(zip(w_ids, w_cols)), **dict(zip(g_ids, g_cols))}.items()


@pytest.fixture(scope="module")
def local_table(lib, tmp_path_factory):
    global LIB_INIT
    LIB_INIT = lambda q: lib.lance_text_query_init(ctypes.byref(q), ctypes.sizeof(q)) == LANCE_OK
    uri = str(tmp_path_factory.mktemp("fts") / "docs.lance")
    ds = write_table(uri)
    return uri, ds


def check_all_queries(lib, uri, ds, prefilters, k=10, storage=None):
    h = lib.lance_dataset_open(uri.encode(), storage, 0)
    assert h, lib.lance_last_error_message()
    splits = plan(lib, h)
    kinds = [lib.lance_split_kind(s) for s in splits]
    assert kinds.count(LANCE_SPLIT_FTS_SEGMENT) >= 2, kinds
    assert kinds.count(LANCE_SPLIT_FTS_FLAT) >= 1, kinds
    checked = 0
    nonempty = 0
    for prefilter in prefilters:
        for text, kind, slop in queries():
            q = make_query(text, kind, slop, k, prefilter)
            stats = stats_bytes(lib, h, q)
            got = distributed(lib, h, splits, q, stats, k)
            want = expected(ds, text, kind, slop, k, prefilter)
            assert_same_top_k(got, want, f"{text!r} kind={kind} slop={slop} prefilter={prefilter}")
            checked += 1
            nonempty += bool(want[0])
    for s in splits:
        lib.lance_split_free(s)
    lib.lance_dataset_free(h)
    return checked, nonempty


def test_distributed_fts_equals_pylance(lib, local_table):
    import lance_host as lh  # the same library file: the same process-wide session
    uri, ds = local_table
    before = lh.session_stats()
    checked, nonempty = check_all_queries(lib, uri, ds, [None, "category = 'c1'", "id > 700"])
    assert checked >= 90 and nonempty >= 60, (checked, nonempty)
    # Every query runs a statistics pass and flat splits over the unindexed tail; the tail's
    # fragments are tokenized once (a few misses), every other pass reads them from the cache.
    after = lh.session_stats()
    misses = after["text_tail_misses"] - before["text_tail_misses"]
    hits = after["text_tail_hits"] - before["text_tail_hits"]
    assert 1 <= misses <= 4 and hits >= 2 * checked - misses, (misses, hits, checked)


def fully_indexed_version(uri, latest, storage_options=None):
    """(version, plan): the latest version of `uri` whose full-text plan is segment splits only,
    at least two (before write_table appended the tail)."""
    import lance_host as lh
    for v in range(latest, 0, -1):
        try:
            plan = list(lh.open(uri, version=v, storage_options=storage_options).plan_fts("text"))
        except lh.InvalidArgumentError:  # a version before the index
            continue
        if len(plan) >= 2 and all(s.kind == lh.SPLIT_FTS_SEGMENT for s in plan):
            return v, plan
    pytest.fail("no fully indexed version")


def test_a_whole_corpus_split_is_searched_without_statistics(lib, local_table):
    # One process, one split of every segment of a fully indexed version (before the tail was
    # appended): no statistics pass (stats None), and pylance's answer at that version.
    import lance_host as lh
    uri, ds = local_table
    v, plan = fully_indexed_version(uri, ds.version)
    h, pyds = lh.open(uri, version=v), lance.dataset(uri, version=v)
    whole = lh.Split.combine(plan)
    match = {ANY: "or", ALL: "and", PHRASE: "phrase"}
    nonempty = 0
    for prefilter in (None, "category = 'c1'"):
        for text, kind, slop in queries():
            got = h.fts_search_split(whole, "text", text, None, k=10, match=match[kind], slop=slop,
                                     prefilter=prefilter, columns=["id"]).read_all()
            want = expected(pyds, text, kind, slop, 10, prefilter)
            assert_same_top_k((got["_rowid"].to_pylist(), got["_score"].to_pylist(), got["id"].to_pylist()), want,
                              f"version {v}: {text!r} kind={kind} slop={slop} prefilter={prefilter}")
            nonempty += bool(want[0])
    assert nonempty >= 40, nonempty
    assert "whole corpus" in h.explain_fts(whole, "text", "lazy dog", None)
    # Less than the whole corpus needs the statistics: one segment; the latest version's
    # segments (an unindexed tail is left out); a flat split. Statistics that are not bytes.
    with pytest.raises(lh.InvalidArgumentError, match="segments of index"):
        h.fts_search_split(plan[0], "text", "lazy dog", None)
    latest = lh.open(uri)
    lplan = list(latest.plan_fts("text"))
    segs = lh.Split.combine([s for s in lplan if s.kind == lh.SPLIT_FTS_SEGMENT])
    with pytest.raises(lh.InvalidArgumentError, match="not covered by index"):
        latest.fts_search_split(segs, "text", "lazy dog", None)
    flat = [s for s in lplan if s.kind == lh.SPLIT_FTS_FLAT][0]
    with pytest.raises(lh.InvalidArgumentError, match="flat split"):
        latest.fts_search_split(flat, "text", "lazy dog", None)
    with pytest.raises(TypeError, match="stats"):
        h.fts_search_split(whole, "text", "lazy dog", "not bytes")


def test_full_text_search_in_one_call_equals_pylance(lib, local_table):
    # Dataset.full_text_search: with the tail, the statistics once and 2 searches (segments,
    # tail) merged; at the fully indexed version, 1 search. pylance's answer either way.
    import lance_host as lh
    uri, ds = local_table
    v, _ = fully_indexed_version(uri, ds.version)
    match = {ANY: "or", ALL: "and", PHRASE: "phrase"}
    for version, searches in ((None, 2), (v, 1)):
        h = lh.open(uri, version=version)
        pyds = lance.dataset(uri, version=version) if version else ds
        if version == v:  # the whole corpus in one split: no statistics pass
            h.fts_stats = lambda *a, **kw: pytest.fail("a statistics pass on a fully indexed snapshot")
        for text, kind, slop in queries()[::3]:
            for prefilter in (None, "category = 'c1'"):
                before = lh.metrics()["ops.search"]
                got = h.full_text_search("text", text, k=10, match=match[kind], slop=slop, prefilter=prefilter,
                                         columns=["id"])
                assert lh.metrics()["ops.search"] - before == searches, (version, text)
                assert got.column_names == ["id", "_score", "_rowid"]
                assert_same_top_k((got["_rowid"].to_pylist(), got["_score"].to_pylist(), got["id"].to_pylist()),
                                  expected(pyds, text, kind, slop, 10, prefilter),
                                  f"version {version}: {text!r} kind={kind} prefilter={prefilter}")
        if version == v:
            del h.fts_stats
        with pytest.raises(lh.InvalidArgumentError, match="nope"):
            h.full_text_search("text", "lazy dog", prefilter="nope > 1")
        with pytest.raises(lh.InvalidArgumentError):
            h.full_text_search("id", "lazy dog")


def test_full_text_search_falls_back_to_statistics_when_refused(lib, local_table):
    # When the library refuses the search without statistics (here: the split handed to it is
    # one segment of several, which it refuses for real), full_text_search computes the
    # statistics and searches with them: still pylance's answer.
    import lance_host as lh
    uri, ds = local_table
    v, plan = fully_indexed_version(uri, ds.version)
    h, pyds = lh.open(uri, version=v), lance.dataset(uri, version=v)
    real_search, real_stats = h.fts_search_split, h.fts_stats
    refused, stats_calls = [], []

    def search(split, column, text, stats, k=10, **query):
        if stats is None:
            try:
                return real_search(plan[0], column, text, None, k, **query)
            except lh.InvalidArgumentError as e:
                refused.append(e)
                raise
        return real_search(split, column, text, stats, k, **query)

    def stats(*a, **kw):
        stats_calls.append(a)
        return real_stats(*a, **kw)

    h.fts_search_split, h.fts_stats = search, stats
    match = {ANY: "or", ALL: "and", PHRASE: "phrase"}
    for text, kind, slop in queries()[::5]:
        got = h.full_text_search("text", text, k=10, match=match[kind], slop=slop, columns=["id"])
        assert_same_top_k((got["_rowid"].to_pylist(), got["_score"].to_pylist(), got["id"].to_pylist()),
                          expected(pyds, text, kind, slop, 10, None), f"fallback: {text!r} kind={kind}")
    n = len(queries()[::5])
    assert len(refused) == n and len(stats_calls) == n, (len(refused), len(stats_calls), n)


def test_larger_k_and_flat_rows_are_scored_with_the_whole_corpus(lib, local_table):
    uri, ds = local_table
    # With k larger than any match list every matching row appears: unindexed rows included.
    h = lib.lance_dataset_open(uri.encode(), None, 0)
    splits = plan(lib, h)
    q = make_query(VOCAB[0], ANY, 0, 5000, None)
    got = distributed(lib, h, splits, q, stats_bytes(lib, h, q), 5000)
    want = expected(ds, VOCAB[0], ANY, 0, 5000, None)
    assert_same_top_k(got, want, "all matches")
    assert any(i >= 2400 for i in got[2]), "the unindexed tail contributes matches"
    assert not any(i % 13 == 5 for i in got[2]), "deleted rows are not returned"
    for s in splits:
        lib.lance_split_free(s)
    lib.lance_dataset_free(h)


def test_splits_and_statistics_travel_as_bytes(lib, local_table):
    """A worker gets only the split bytes and the statistics bytes, opens the split's snapshot
    itself and scores its split; the coordinator merges."""
    uri, ds = local_table
    h = lib.lance_dataset_open(uri.encode(), None, 0)
    splits = plan(lib, h)
    q = make_query("quick brown fox", ANY, 0, 10, None)
    stats = stats_bytes(lib, h, q)
    shipped = []
    for s in splits:
        out = ctypes.POINTER(ctypes.c_uint8)()
        n = ctypes.c_size_t()
        assert lib.lance_split_serialize(s, ctypes.byref(out), ctypes.byref(n)) == LANCE_OK
        shipped.append(ctypes.string_at(out, n.value))
        lib.lance_bytes_free(out, n.value)
        lib.lance_split_free(s)
    lib.lance_dataset_free(h)
    streams = (ArrowArrayStream * len(shipped))()
    for i, b in enumerate(shipped):
        s = lib.lance_split_deserialize(b, len(b))
        w = lib.lance_split_open_dataset(s, None)
        assert w, lib.lance_last_error_message()
        rc = lib.lance_split_fts_search(w, s, ctypes.byref(q), stats, len(stats), ctypes.byref(streams[i]))
        assert rc == LANCE_OK, lib.lance_last_error_message()
        lib.lance_dataset_free(w)
        lib.lance_split_free(s)
    out = ArrowArrayStream()
    assert lib.lance_fts_merge(streams, len(shipped), 10, 0, ctypes.byref(out)) == LANCE_OK
    t = pa.RecordBatchReader._import_from_c(ctypes.addressof(out)).read_all()
    got = t["_rowid"].to_pylist(), t["_score"].to_pylist(), t["id"].to_pylist()
    assert_same_top_k(got, expected(ds, "quick brown fox", ANY, 0, 10, None), "shipped")


def test_bad_statistics_and_queries_are_clear_errors(lib, local_table, tmp_path):
    uri, ds = local_table
    h = lib.lance_dataset_open(uri.encode(), None, 0)
    splits = plan(lib, h)
    seg = next(s for s in splits if lib.lance_split_kind(s) == LANCE_SPLIT_FTS_SEGMENT)
    q = make_query("lazy dog", ANY, 0, 10, None)
    stats = stats_bytes(lib, h, q)

    def search(stats_bytes_, query=q, split=seg):
        st = ArrowArrayStream()
        rc = lib.lance_split_fts_search(h, split, ctypes.byref(query), stats_bytes_, len(stats_bytes_), ctypes.byref(st))
        msg = lib.lance_last_error_message().decode() if rc != LANCE_OK else ""
        if rc == LANCE_OK:
            pa.RecordBatchReader._import_from_c(ctypes.addressof(st)).read_all()
        return rc, msg

    damaged = bytearray(stats)
    damaged[len(damaged) // 2] ^= 0x40
    assert search(bytes(damaged))[0] == LANCE_ERR_CORRUPT
    assert search(stats[:-3])[0] == LANCE_ERR_CORRUPT
    # Statistics of the same table at an older version.
    old = lib.lance_dataset_open(uri.encode(), None, ds.version - 1)
    old_stats = stats_bytes(lib, old, q)
    lib.lance_dataset_free(old)
    rc, msg = search(old_stats)
    assert rc == LANCE_ERR_CORRUPT and "version" in msg, msg
    # Statistics of another query.
    other = make_query("quick", ANY, 0, 10, None)
    rc, msg = search(stats_bytes(lib, h, other))
    assert rc == LANCE_ERR_INVALID_ARGUMENT and "lazy dog" in msg, msg
    # Bad queries.
    for text, kind, slop, k, want in [
        ("", ANY, 0, 10, "empty"),
        ("   ", ANY, 0, 10, "empty"),
        ("dog", 9, 0, 10, "LanceTextMatch"),
        ("dog", ANY, 2, 10, "slop"),
        ("dog", ANY, 0, 0, "k must"),
        ("dog", ANY, 0, 1 << 40, "maximum"),
    ]:
        bad = make_query(text, kind, slop, k, None)
        out = ctypes.POINTER(ctypes.c_uint8)()
        n = ctypes.c_size_t()
        rc = lib.lance_dataset_fts_stats(h, ctypes.byref(bad), ctypes.byref(out), ctypes.byref(n), None)
        msg = lib.lance_last_error_message().decode()
        assert rc == LANCE_ERR_INVALID_ARGUMENT and want in msg, (text, kind, slop, k, msg)
    # A column without an INVERTED index, and a non-text column.
    p = ctypes.c_void_p()
    for col, want in [(b"category", "no INVERTED index"), (b"id", "not a text column"), (b"nope", "unknown column")]:
        rc = lib.lance_dataset_plan_fts(h, col, 0, ctypes.byref(p))
        msg = lib.lance_last_error_message().decode()
        assert rc == LANCE_ERR_INVALID_ARGUMENT and want in msg, msg
    # Explain names the index and segment.
    text = ctypes.c_char_p()
    assert lib.lance_split_explain_fts(h, seg, ctypes.byref(q), stats, len(stats), ctypes.byref(text)) == LANCE_OK
    assert b"text_idx" in text.value and b"MatchQuery" in text.value, text.value
    for s in splits:
        lib.lance_split_free(s)
    lib.lance_dataset_free(h)


# ---- s3:// through moto -------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def moto_endpoint():
    port = free_port()
    script = Path(__file__).resolve().parents[1] / "integration" / "moto_server.py"
    proc = subprocess.Popen([sys.executable, str(script), str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert proc.poll() is None and time.time() < deadline, "moto did not start"
            time.sleep(0.2)
    yield endpoint
    proc.terminate()
    proc.wait(timeout=30)


def test_distributed_fts_on_s3_equals_pylance(lib, local_table, moto_endpoint):
    import urllib.request
    req = urllib.request.Request(f"{moto_endpoint}/ftsbucket", method="PUT")
    urllib.request.urlopen(req).read()
    opts = {
        "aws_access_key_id": "test", "aws_secret_access_key": "test", "aws_region": "us-east-1",
        "aws_endpoint": moto_endpoint, "allow_http": "true", "aws_virtual_hosted_style_request": "false",
    }
    uri = "s3://ftsbucket/docs.lance"
    ds = write_table(uri, storage_options=opts)
    flat = []
    for key, value in opts.items():
        flat += [key.encode(), value.encode()]
    kv = (ctypes.c_char_p * (len(flat) + 1))(*flat, None)
    checked, nonempty = check_all_queries(lib, uri, ds, [None, "category = 'c2'"], storage=ctypes.cast(kv, ctypes.c_void_p))
    assert checked >= 60 and nonempty >= 40
    # The fully indexed version (before the tail): one split of every segment, no statistics.
    import lance_host as lh
    v, plan = fully_indexed_version(uri, ds.version, opts)
    h, pyds = lh.open(uri, version=v, storage_options=opts), lance.dataset(uri, version=v, storage_options=opts)
    whole = lh.Split.combine(plan)
    for text, kind, slop in queries()[::4]:
        got = h.fts_search_split(whole, "text", text, None, k=10, match={ANY: "or", ALL: "and", PHRASE: "phrase"}[kind],
                                 slop=slop, columns=["id"]).read_all()
        assert_same_top_k((got["_rowid"].to_pylist(), got["_score"].to_pylist(), got["id"].to_pylist()),
                          expected(pyds, text, kind, slop, 10, None), f"s3 version {v}: {text!r}")
