"""Chinese and Japanese full-text search (issue 60). Chinese with the jieba tokenizer: a corpus the test writes, indexed
by pylance 14.0.2 and by lance-host (one process and distributed), searched through lance-host —
whole-table and per split with shipped corpus statistics — with exactly pylance's answers. The
jieba dictionary is the one the `jieba` PyPI package ships (no download): the test lays it out
under LANCE_LANGUAGE_MODEL_HOME as `jieba/default/dict.txt`, where Lance looks for it. Japanese
with lindera: the same checks on a lexicon the test writes and the testkit compiles."""
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


# ---- Japanese with lindera ------------------------------------------------------------------

# A small IPADIC-format lexicon (surface, POS, base form, reading), written by the test and
# compiled by the testkit with the Lindera version Lance's tokenizer is built with: no
# dictionary package of this machine holds that format (docs/indexes.md).
JA_LEXICON = [
    ("東京", "名詞", "トウキョウ"), ("京都", "名詞", "キョウト"), ("大学", "名詞", "ダイガク"),
    ("学生", "名詞", "ガクセイ"), ("図書館", "名詞", "トショカン"), ("日本", "名詞", "ニホン"),
    ("研究", "名詞", "ケンキュウ"), ("本", "名詞", "ホン"), ("電車", "名詞", "デンシャ"),
    ("音楽", "名詞", "オンガク"), ("先生", "名詞", "センセイ"), ("料理", "名詞", "リョウリ"),
    ("は", "助詞", "ハ"), ("の", "助詞", "ノ"), ("を", "助詞", "ヲ"), ("に", "助詞", "ニ"),
    ("で", "助詞", "デ"), ("です", "助動詞", "デス"), ("読む", "動詞", "ヨム"), ("行く", "動詞", "イク"),
]
JA_QUERIES = ["東京", "大学", "図書館", "京都 大学", "日本の研究", "学生", "音楽 先生"]


def write_mecab_source(src: Path) -> None:
    src.mkdir(parents=True)
    (src / "char.def").write_text(
        "DEFAULT 0 1 0\nSPACE 0 1 0\nKANJI 0 0 2\nHIRAGANA 1 1 0\nKATAKANA 1 1 0\nNUMERIC 1 1 0\n"
        "ALPHA 1 1 0\nSYMBOL 1 1 0\n"
        "0x0020 SPACE\n0x0030..0x0039 NUMERIC\n0x0041..0x005A ALPHA\n0x0061..0x007A ALPHA\n"
        "0x3000..0x303F SYMBOL\n0x3041..0x309F HIRAGANA\n0x30A1..0x30FF KATAKANA\n0x4E00..0x9FFF KANJI\n",
        encoding="utf-8")
    (src / "unk.def").write_text("".join(
        f"{c},0,0,{cost},名詞,一般,*,*,*,*,*\n" for c, cost in
        [("DEFAULT", 5000), ("SPACE", 5000), ("KANJI", 3000), ("HIRAGANA", 4000), ("KATAKANA", 3000),
         ("NUMERIC", 3000), ("ALPHA", 3000), ("SYMBOL", 5000)]), encoding="utf-8")
    (src / "matrix.def").write_text("1 1\n0 0 0\n", encoding="utf-8")
    (src / "lex.csv").write_text("".join(
        f"{w},0,0,{100 * len(w) if pos == '名詞' else 50},{pos},一般,*,*,*,*,{w},{r},{r}\n" for w, pos, r in JA_LEXICON),
        encoding="utf-8")


@pytest.fixture(scope="module")
def lindera_model(model_home, tmp_path_factory):
    """`lindera/mini` under LANCE_LANGUAGE_MODEL_HOME: the compiled lexicon and its config.yml."""
    import subprocess
    src = tmp_path_factory.mktemp("mecab") / "src"
    write_mecab_source(src)
    model = model_home / "lindera" / "mini"
    model.mkdir(parents=True)
    subprocess.run([os.environ["LANCE_HOST_TESTKIT"], "lindera-dict", str(src), str(model / "dict")], check=True)
    (model / "config.yml").write_text(f"segmenter:\n  mode: normal\n  dictionary: \"{model / 'dict'}\"\n",
                                      encoding="utf-8")
    return "lindera/mini"


def ja_corpus(n: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    nouns = [w for w, pos, _ in JA_LEXICON if pos == "名詞"]
    docs = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(2, 6)):
            # a compound (東京大学) now and then: words with no particle between them
            parts += [rng.choice(nouns), rng.choice(["の", "は", "を", "に", "で", ""])]
        docs.append("".join(parts) + rng.choice(["読む", "行く", "です"]) + "。")
    return pa.table({"id": pa.array(range(n), pa.int64()), "text": docs})


def test_lindera_index_built_by_pylance_searched_through_lance_host(lindera_model, tmp_path):
    uri = str(tmp_path / "ja.lance")
    lance.write_dataset(ja_corpus(500, 5), uri, max_rows_per_file=250)
    lance.dataset(uri).create_scalar_index("text", "INVERTED", base_tokenizer=lindera_model)
    py, ds = lance.dataset(uri), lh.open(uri)
    for q in JA_QUERIES:
        expected, everything = pylance_answer(py, q), pylance_answer(py, q, k=1000)
        assert expected, q
        same_ranking(host_answer(ds.full_text_search("text", q, k=20, columns=["id"])), expected, everything)
        stats = ds.fts_stats("text", q)
        streams = [ds.fts_search_split(lh.Split.from_bytes(bytes(s)), "text", q, stats, k=20, columns=["id"])
                   for s in ds.plan_fts("text")]
        same_ranking(host_answer(lh.merge_fts(streams, 20).read_all()), expected, everything)
    # segmentation, not substrings: 大学 is found inside 東京大学 and 京都大学
    texts = [py.take([i])["text"][0].as_py() for i, _ in pylance_answer(py, "大学", k=1000)]
    assert any("東京大学" in t or "京都大学" in t for t in texts)


def test_lindera_index_built_by_lance_host_equals_pylance_own(lindera_model, tmp_path):
    ours, theirs = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    for uri in (ours, theirs):
        lance.write_dataset(ja_corpus(400, 6), uri, max_rows_per_file=100)
    lance.dataset(theirs).create_scalar_index("text", "INVERTED", base_tokenizer=lindera_model)
    ds = lh.open(ours)
    lh.build_index(ours, "text", "INVERTED", lambda tasks: [ds.execute_index_build_task(t) for t in tasks],
                   num_splits=2, base_tokenizer=lindera_model)
    for q in JA_QUERIES:
        expected, everything = pylance_answer(lance.dataset(theirs), q), pylance_answer(lance.dataset(theirs), q, k=1000)
        assert sorted(everything) == sorted(pylance_answer(lance.dataset(ours), q, k=1000))
        same_ranking(host_answer(lh.open(ours).full_text_search("text", q, k=20, columns=["id"])), expected, everything)
