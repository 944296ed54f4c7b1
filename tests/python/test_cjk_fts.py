"""Chinese full-text search with the jieba tokenizer (issue 60): a corpus the test writes, indexed
by pylance 14.0.2 and by lance-host (one process and distributed), searched through lance-host —
whole-table and per split with shipped corpus statistics — with exactly pylance's answers. The
jieba dictionary is the one the `jieba` PyPI package ships (no download): the test lays it out
under LANCE_LANGUAGE_MODEL_HOME as `jieba/default/dict.txt`, where Lance looks for it."""
import os
import random
import shutil
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_host as lh

# multi-character words jieba's dictionary knows, and filler words
WORDS = ["北京", "上海", "大学", "学生", "人工智能", "天安门广场", "图书馆", "计算机", "数据库", "研究",
         "城市", "经济", "发展", "历史", "文化", "科学", "技术", "医院", "医生", "音乐"]
FILLER = ["的", "在", "是", "了", "和", "我们", "他们", "非常", "今天", "一个"]
QUERIES = ["北京", "大学", "人工智能", "天安门广场", "北京 大学", "数据库 技术", "医生", "北京大学的学生"]


@pytest.fixture(scope="module")
def model_home(tmp_path_factory):
    """LANCE_LANGUAGE_MODEL_HOME with jieba's default dictionary, for this module only."""
    import jieba
    home = tmp_path_factory.mktemp("language_models")
    target = home / "jieba" / "default"
    target.mkdir(parents=True)
    shutil.copy(Path(jieba.__file__).parent / "dict.txt", target / "dict.txt")
    before = os.environ.get("LANCE_LANGUAGE_MODEL_HOME")
    os.environ["LANCE_LANGUAGE_MODEL_HOME"] = str(home)
    yield home
    if before is None:
        del os.environ["LANCE_LANGUAGE_MODEL_HOME"]
    else:
        os.environ["LANCE_LANGUAGE_MODEL_HOME"] = before


def corpus(n: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    docs = []
    for _ in range(n):
        parts = [rng.choice(WORDS if rng.random() < 0.4 else FILLER) for _ in range(rng.randint(4, 14))]
        docs.append("".join(parts) + "。")
    return pa.table({"id": pa.array(range(n), pa.int64()), "text": docs})


def pylance_answer(ds, query, k=20):
    t = ds.to_table(full_text_query=query, columns=["id"], limit=k, with_row_id=False)
    return [(i, round(s, 4)) for i, s in zip(t["id"].to_pylist(), t["_score"].to_pylist())]


def host_answer(t: pa.Table):
    return [(i, round(s, 4)) for i, s in zip(t["id"].to_pylist(), t["_score"].to_pylist())]


def same_ranking(got, expected, everything):
    """The same scores in order, and the same rows above the k-th score; rows tied with the k-th
    score may differ (which of them make the cut is not ordered by pylance), but each is a
    row pylance scores the same in its full answer `everything`."""
    assert [s for _, s in got] == [s for _, s in expected]
    if not got:
        return
    cut = got[-1][1]
    assert sorted(r for r in got if r[1] > cut) == sorted(r for r in expected if r[1] > cut)
    tied = {i for i, s in everything if s == cut}
    assert {i for i, s in got if s == cut} <= tied


def test_jieba_index_built_by_pylance_searched_through_lance_host(model_home, tmp_path):
    uri = str(tmp_path / "zh.lance")
    lance.write_dataset(corpus(600, 1), uri, max_rows_per_file=200)
    lance.dataset(uri).create_scalar_index("text", "INVERTED", base_tokenizer="jieba/default")
    lance.write_dataset(corpus(80, 2).set_column(0, "id", pa.array(range(600, 680), pa.int64())), uri, mode="append")
    py = lance.dataset(uri)
    ds = lh.open(uri)
    nonempty = 0
    for q in QUERIES:
        expected, everything = pylance_answer(py, q), pylance_answer(py, q, k=1000)
        got = host_answer(ds.full_text_search("text", q, k=20, columns=["id"]))
        same_ranking(got, expected, everything)
        nonempty += bool(expected)

        # per split (index segment + the unindexed tail), corpus statistics computed once and shipped
        stats = ds.fts_stats("text", q)
        streams = [ds.fts_search_split(lh.Split.from_bytes(bytes(s)), "text", q, stats, k=20, columns=["id"])
                   for s in ds.plan_fts("text")]
        same_ranking(host_answer(lh.merge_fts(streams, 20).read_all()), expected, everything)
    assert nonempty == len(QUERIES)
    # the tokenizer really segments: a word inside a longer run of characters is found
    assert any("北京大学" in py.take([i])["text"][0].as_py()
               for i, _ in pylance_answer(py, "大学", k=200))


@pytest.mark.parametrize("distributed", [False, True])
def test_jieba_index_built_by_lance_host_equals_pylance_own(model_home, tmp_path, distributed):
    ours, theirs = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    for uri in (ours, theirs):
        lance.write_dataset(corpus(500, 3), uri, max_rows_per_file=125)
    lance.dataset(theirs).create_scalar_index("text", "INVERTED", base_tokenizer="jieba/default")
    if distributed:
        ds = lh.open(ours)
        ds, _ = lh.build_index(ours, "text", "INVERTED", lambda tasks: [ds.execute_index_build_task(t) for t in tasks],
                               num_splits=3, base_tokenizer="jieba/default")
    else:
        lh.open(ours).create_inverted_index("text", base_tokenizer="jieba/default")
    details = [i for i in lance.dataset(ours).describe_indices() if i.field_names == ["text"]]
    assert len(details) == 1
    for q in QUERIES:
        expected, everything = pylance_answer(lance.dataset(theirs), q), pylance_answer(lance.dataset(theirs), q, k=1000)
        assert sorted(everything) == sorted(pylance_answer(lance.dataset(ours), q, k=1000))
        same_ranking(host_answer(lh.open(ours).full_text_search("text", q, k=20, columns=["id"])), expected, everything)


def test_missing_language_model_is_an_error_naming_the_tokenizer(tmp_path, monkeypatch):
    monkeypatch.setenv("LANCE_LANGUAGE_MODEL_HOME", str(tmp_path / "empty"))
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(corpus(20, 4), uri)
    for tokenizer in ("jieba/default", "lindera/ipadic"):
        with pytest.raises(lh.InvalidArgumentError) as e:
            lh.open(uri).create_inverted_index("text", base_tokenizer=tokenizer)
        assert str(tmp_path / "empty" / tokenizer) in str(e.value), str(e.value)
    assert lance.dataset(uri).version == 1  # nothing committed
