"""Errors the way a data team meets them: each code raises one `LanceError` subclass that is also
the built-in Python code catches, errors pickle with code and message and so cross process
boundaries intact (multiprocessing spawn and fork pools, concurrent.futures), a fork after use
reports the library's fork message instead of hanging, and bad user input (a metric, a level,
an element type) is an InvalidArgumentError naming the valid choices."""

import multiprocessing
import pickle
import re
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pyarrow as pa
import pytest

lance = pytest.importorskip("lance")
lh = pytest.importorskip("lance_host")

DIM = 4


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("errors") / "t.lance")
    rng = np.random.default_rng(3)
    vec = rng.normal(size=(400, DIM)).astype(np.float32)
    lance.write_dataset(pa.table({
        "id": pa.array(range(400), pa.int64()),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), DIM),
    }), uri, max_rows_per_file=100)
    return uri


BUILTIN = {1: ValueError, 2: LookupError, 3: OSError, 4: NotImplementedError, 5: RuntimeError, 6: RuntimeError,
           7: RuntimeError, 8: PermissionError, 9: PermissionError, 10: OSError, 11: TimeoutError, 12: OSError,
           13: RuntimeError, 14: RuntimeError}


def test_each_code_is_one_subclass_that_is_its_builtin_and_pickles():
    for code, builtin in BUILTIN.items():
        e = lh.errors._error(code, f"message {code}")
        assert type(e) is lh.error_class(code) and isinstance(e, lh.LanceError) and isinstance(e, builtin), (code, type(e))
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and back.code == code and back.message == f"message {code}"
        assert back.name == lh.error_code_name(code) and str(back) == str(e)
    assert isinstance(lh.errors._error(2, "x"), FileNotFoundError)
    assert lh.errors._error(12, "x").errno == 125 and lh.errors._error(11, "x").errno == 110


def test_stream_errnos_are_the_headers():
    """The errno -> code table the package reads failed streams with is the header's list, and
    an OSError-type error carries the errno its stream reports."""
    from pathlib import Path

    header = (Path(__file__).resolve().parents[2] / "include" / "lance_host.h").read_text()
    start = header.index("the errno says the class")
    text = re.sub(r"\s*\n//\s*", " ", header[start:start + 700])  # one line, no comment markers
    listed = {int(n) for n in re.findall(r"\bE[A-Z]+ \((\d+)\)", text)}
    assert listed == set(lh.errors._ERRNO_CODES), (listed, sorted(lh.errors._ERRNO_CODES))
    for errno, code in lh.errors._ERRNO_CODES.items():
        e = lh.errors._error(code, "x")
        if isinstance(e, OSError) and code != 3:
            assert e.errno == errno, (code, e.errno)


def open_missing(path):
    import lance_host
    return lance_host.open(path)


def scan_unknown_column(uri):
    import lance_host
    return lance_host.open(uri).scan(columns=["prise"]).read_all()


# A fork pool is tested below: once this process has used the library (as it has when the whole
# suite runs in one process), a forked child gets the fork message, whatever it calls.
@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_worker_errors_reach_the_parent_through_multiprocessing(table, tmp_path, method):
    with multiprocessing.get_context(method).Pool(2) as pool:
        with pytest.raises(lh.NotFoundError) as e:
            pool.apply_async(open_missing, (str(tmp_path / "missing.lance"),)).get(timeout=120)
        assert e.value.code == 2 and "missing.lance" in e.value.message
        with pytest.raises(lh.InvalidArgumentError, match="prise"):
            pool.map_async(scan_unknown_column, [table, table]).get(timeout=120)


def test_worker_errors_reach_the_parent_through_a_process_pool_executor(table):
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        with pytest.raises(lh.InvalidArgumentError, match="unknown column 'prise'") as e:
            pool.submit(scan_unknown_column, table).result(timeout=120)
        assert isinstance(e.value, ValueError) and e.value.code == 1


def scan_in_forked_child(uri):
    import lance_host
    return lance_host.open(uri).count_rows()


def test_a_fork_after_use_reports_the_fork_message_instead_of_hanging(table):
    lh.open(table).count_rows()  # the library is in use in this process before the fork
    with multiprocessing.get_context("fork").Pool(1) as pool:
        with pytest.raises(lh.LanceError) as e:
            pool.apply_async(scan_in_forked_child, (table,)).get(timeout=120)
    assert "fork" in e.value.message, e.value.message
    assert e.value.code == 7 and isinstance(e.value, lh.FailedPreconditionError)


def test_bad_choices_name_the_valid_ones(table):
    ds = lh.open(table)
    split = ds.plan_vector_search("vec", use_index=False)[0]
    with pytest.raises(lh.InvalidArgumentError, match="unknown metric 'manhattan'; valid: 'l2', 'cosine'"):
        ds.search_split(split, "vec", [0.0] * DIM, 5, metric="manhattan")
    with pytest.raises(lh.InvalidArgumentError, match="unknown metric"):
        ds.plan_vector_search("vec", metric="manhattan")
    with pytest.raises(lh.InvalidArgumentError, match="element_type"):
        ds.search_split(split, "vec", [0.0] * DIM, 5, element_type="float128")
    with pytest.raises(lh.InvalidArgumentError, match="log level 'loud'; valid: 'off'"):
        lh.set_log_callback(lambda *a: None, level="loud")
    with pytest.raises(lh.InvalidArgumentError, match="metric must be a string, not int"):
        ds.plan_vector_search("vec", metric=2)
    with pytest.raises(lh.InvalidArgumentError, match="unknown match 'near'; valid: 'or'"):
        ds.fts_stats("vec", "x", match="near")
    with pytest.raises(lh.InvalidArgumentError, match="unknown columns 'prise', 'qty'; the table's columns: id, vec"):
        lh._marshal._check_columns(ds.schema, ["id", "prise", "qty"])
    with pytest.raises(lh.InvalidArgumentError, match="a list of column names, not the string 'id'"):
        lh._marshal._check_columns(ds.schema, "id")


def test_a_cancelled_stream_raises_the_same_type_sync_and_async(table):
    import asyncio

    ds = lh.open(table)
    s = ds.scan_stream(columns=["id"], batch_size=10)
    next(s)
    s.cancel()
    with pytest.raises(lh.CancelledError) as sync_err:
        for _ in s:
            pass
    assert sync_err.value.errno == 125 and isinstance(sync_err.value, OSError)

    async def drain():
        s = ds.scan_stream(columns=["id"], batch_size=10)
        s.cancel()
        async for _ in s.batches_async():
            pass

    with pytest.raises(lh.CancelledError):
        asyncio.run(drain())


ENV_CHILD = """
import json, sys, lance_host as lh
try:
    print(json.dumps({"rows": lh.open(sys.argv[1]).count_rows()}))
except lh.LanceError as e:
    print(json.dumps({"code": e.code, "message": e.message}))
"""


@pytest.mark.parametrize("name,value", [("LANCE_MAX_IOP_SIZE", "16MiB"), ("LANCE_MAX_IOP_SIZE", "0"),
                                        ("LANCE_IO_THREADS", "many"), ("LANCE_CPU_THREADS", "0")])
def test_a_lance_setting_lance_would_panic_on_is_an_invalid_argument_naming_it(table, name, value):
    """Lance reads these from the environment and panics on a value it cannot use (a panic in a
    read, reported as LANCE_ERR_PANIC or LANCE_ERR_INTERNAL with a backtrace); the session checks
    them when it starts. A fresh process: the session starts once per process."""
    import json
    import os
    import subprocess
    import sys
    run = lambda env: subprocess.run([sys.executable, "-c", ENV_CHILD, table], env=env, capture_output=True,
                                     text=True, timeout=120, check=True)
    bad = run(dict(os.environ, **{name: value}))
    out = json.loads(bad.stdout)
    assert out.get("code") == 1, out
    assert name in out["message"] and f'"{value}"' in out["message"], out["message"]
    assert "panicked" not in bad.stderr and "backtrace" not in bad.stderr, bad.stderr
    good = json.loads(run(dict(os.environ, **{name: "4"})).stdout)
    assert good == {"rows": lance.dataset(table).count_rows()}


@pytest.mark.parametrize("key,value", [("lance-encoding:dict-size-ratio", "2"),
                                       ("lance-encoding:dict-max-size", "lots")])
def test_field_metadata_lance_would_panic_on_is_refused_before_anything_is_written(tmp_path, key, value):
    field = pa.field("s", pa.string(), metadata={key: value})
    data = pa.table({"s": [f"v{i % 3}" for i in range(3000)]}, schema=pa.schema([field]))
    uri = str(tmp_path / "t.lance")
    with pytest.raises(lh.InvalidArgumentError, match=f"column 's': its field metadata {key} is \"{value}\"") as e:
        lh.write_table(uri, data)
    assert "nothing was written" in e.value.message
    assert not (tmp_path / "t.lance").exists() or not list((tmp_path / "t.lance").rglob("*.lance"))
    # An append to an existing table: refused, the table as it was (read by pylance).
    good = pa.table({"s": ["a", "b"]})
    lh.write_table(uri, good)
    before = lance.dataset(uri)
    with pytest.raises(lh.InvalidArgumentError, match=key):
        lh.write_table(uri, data, mode="append")
    with pytest.raises(lh.InvalidArgumentError, match=key):
        lh.open(uri).merge_insert(data, on=["s"])
    with pytest.raises(lh.InvalidArgumentError, match=key):
        lh.open(uri).add_null_columns(pa.schema([pa.field("t", pa.string(), metadata={key: value})]))
    after = lance.dataset(uri)
    assert after.version == before.version and after.to_table().equals(before.to_table())
    assert sorted(p.name for p in (tmp_path / "t.lance" / "data").iterdir()) == \
        sorted(f.data_files()[0].path.split("/")[-1] for f in before.get_fragments())
    # A usable value in the same key writes.
    ok = pa.schema([pa.field("s", pa.string(), metadata={key: "0.5" if "ratio" in key else "65536"})])
    lh.write_table(uri, data.cast(ok), mode="append")
    assert lance.dataset(uri).count_rows() == 3002


def test_every_encoding_setting_in_field_metadata_writes_or_is_refused_never_a_panic(tmp_path):
    """Lance's per-column `lance-encoding:*` field metadata, each key with usable and unusable
    values on seven column types: every write either commits rows pylance reads back as written
    or fails with a user-facing code and leaves no table — never LANCE_ERR_PANIC or INTERNAL,
    and never a column that reads back as something else (Lance 14.0.2 writes a list column
    flagged packed as nulls, pylance's writes too: refused)."""
    import itertools
    keys = ["lance-encoding:dict-size-ratio", "lance-encoding:dict-max-size", "lance-encoding:dict-divisor",
            "lance-encoding:compression", "lance-encoding:compression-level", "lance-encoding:rle-threshold",
            "lance-encoding:minichunk-size", "lance-encoding:dict-values-compression",
            "lance-encoding:dict-values-compression-level", "lance-encoding:structural-encoding",
            "lance-encoding:bss", "lance-encoding:packed", "packed"]
    values = ["", "x", "-1", "0", "0.5", "1e309", "99999999999999999999", "zstd", "true", "miniblock", "fullzip"]
    n = 2000
    columns = {
        "s": pa.array([f"v{i % 3}" for i in range(n)]),
        "i": pa.array(range(n), pa.int32()),
        "f": pa.array([i * 0.5 for i in range(n)], pa.float64()),
        "st": pa.StructArray.from_arrays([pa.array(range(n), pa.int32()), pa.array([float(i) for i in range(n)])],
                                         names=["a", "b"]),
        "l": pa.array([[i, i] for i in range(n)], pa.list_(pa.int64())),
        "b": pa.array([bytes([i % 251]) * 10 for i in range(n)], pa.large_binary()),
        "m": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
    }
    outcomes = {"written": 0, "refused": 0}
    refused = set()
    for j, (key, value, (name, arr)) in enumerate(itertools.product(keys, values, columns.items())):
        data = pa.table({name: arr}, schema=pa.schema([pa.field(name, arr.type, metadata={key: value})]))
        uri = str(tmp_path / f"t{j}.lance")
        try:
            lh.write_table(uri, data)
        except lh.LanceError as e:
            assert e.code in (1, 4), (key, value, name, e.name, e.message)  # INVALID_ARGUMENT, NOT_SUPPORTED
            with pytest.raises(Exception):
                lance.dataset(uri)
            outcomes["refused"] += 1
            refused.add((key, value, name))
            continue
        assert lance.dataset(uri).to_table().column(name).equals(data.column(name)), (key, value, name)
        outcomes["written"] += 1
    # Both paths ran: the unusable dictionary settings are refused, most settings write.
    assert outcomes["refused"] >= 2 * len(columns) and outcomes["written"] > outcomes["refused"], outcomes
    assert {("packed", "true", "l"), ("lance-encoding:packed", "true", "l"), ("packed", "true", "m")} <= refused
    assert ("packed", "true", "st") not in refused  # a struct is packed as asked, and reads back


def test_engine_errors_are_the_callers_and_readable(tmp_path):
    """A phrase query on an INVERTED index built without positions is InvalidArgumentError
    without a source path (0.10.5: LANCE_ERR_IO ending in a path of Lance's source); an update
    of an unknown column names the table's columns instead of Lance's debug schema."""
    import lance
    import pyarrow as pa

    uri = str(tmp_path / "phrase.lance")
    lance.write_dataset(pa.table({"id": list(range(50)), "t": [f"hello world {i}" for i in range(50)]}), uri)
    lance.dataset(uri).create_scalar_index("t", "INVERTED", with_position=False)
    ds = lh.open(uri)
    with pytest.raises(lh.InvalidArgumentError, match="required for phrase queries") as e:
        ds.full_text_search("t", "hello world", k=3, match="phrase")
    assert ".rs:" not in str(e.value) and "registry" not in str(e.value)
    with pytest.raises(lh.InvalidArgumentError, match=r"does not exist in dataset schema: \[id, t\]$"):
        ds.update({"nope": "1"})


def test_a_mistyped_keyword_names_the_public_function_and_the_closest_keyword(table, tmp_path):
    """Issue 59: a keyword no option matches is refused by the function the caller called (not a
    private helper), with the closest keyword it takes; the error is an InvalidArgumentError and
    the TypeError Python raises for an unexpected keyword, and it pickles as itself."""
    ds = lh.open(table)
    cases = [
        (lambda: ds.scan(colums=["id"]), "Dataset.scan()", "colums", "columns"),
        (lambda: ds.scan_split(ds.plan_scan()[0], ["id"], limt=3), "Dataset.scan_split()", "limt", "limit"),
        (lambda: ds.vector_search("vec", [0.0] * DIM, k=3, nprobe=4), "Dataset.vector_search()", "nprobe", "nprobes"),
        (lambda: ds.search_split(ds.plan_vector_search("vec").splits[0], "vec", [0.0] * DIM, 3, refin=2),
         "Dataset.search_split()", "refin", "refine"),
        (lambda: ds.delete("id < 0", comit_retries=1), "Dataset.delete()", "comit_retries", "commit_retries"),
        (lambda: lh.write_table(str(tmp_path / "w.lance"), pa.table({"id": [1]}), max_row_per_file=5),
         "lance_host.write_table()", "max_row_per_file", "max_rows_per_file"),
    ]
    for call, function, wrong, closest in cases:
        with pytest.raises(lh.InvalidArgumentError) as e:
            call()
        assert isinstance(e.value, TypeError) and e.value.code == 1, type(e.value).__mro__
        assert f"{function} got an unknown keyword {wrong!r}; did you mean {closest!r}?" in str(e.value), str(e.value)
        assert "_vector_query" not in str(e.value) and "_scan" not in str(e.value) and "_write" not in str(e.value)
        again = pickle.loads(pickle.dumps(e.value))
        assert type(again) is type(e.value) and str(again) == str(e.value)
    # nothing was written by the refused calls
    assert not (tmp_path / "w.lance").exists()
    assert ds.latest_version() == lance.dataset(table).version


def test_refine_and_filter_are_the_shared_names_of_refine_factor_and_prefilter(table):
    """The option names Ray, Spark and DuckDB use work in the package too: `refine` is
    `refine_factor`, `filter` is `prefilter`; both give pylance's answer, and one option under
    both names is refused."""
    ds = lh.open(table)
    q = [0.3, -0.2, 0.1, 0.5]
    got = ds.vector_search("vec", q, k=5, refine=3, filter="id >= 200", columns=["id"])
    old = ds.vector_search("vec", q, k=5, refine_factor=3, prefilter="id >= 200", columns=["id"])
    want = lance.dataset(table).to_table(columns=["id"], filter="id >= 200", prefilter=True,
                                         nearest={"column": "vec", "q": np.array(q, np.float32), "k": 5,
                                                  "refine_factor": 3})
    assert got["id"].to_pylist() == old["id"].to_pylist() == want["id"].to_pylist()
    assert all(i >= 200 for i in got["id"].to_pylist()) and got.num_rows == 5
    with pytest.raises(lh.InvalidArgumentError, match="'prefilter' twice, as 'filter' and 'prefilter'"):
        ds.vector_search("vec", q, k=5, filter="id > 1", prefilter="id > 2")


def test_a_row_change_refuses_write_parameters_it_would_not_use(table, tmp_path):
    """delete, update and merge_insert take the commit's parameters (statement id, retries,
    preconditions, message); file-layout parameters would be ignored by them, so they are refused
    naming the function, and nothing is committed."""
    import shutil

    uri = str(tmp_path / "t.lance")
    shutil.copytree(table, uri)
    ds = lh.open(uri)
    before = lance.dataset(uri).version
    for call in (lambda: ds.delete("id < 3", max_rows_per_file=10),
                 lambda: ds.update({"id": "id + 1"}, "id < 3", storage_version="2.1"),
                 lambda: ds.merge_insert(pa.table({"id": pa.array([1], pa.int64())}), "id", stable_row_ids=True)):
        with pytest.raises(lh.InvalidArgumentError, match="unknown keyword"):
            call()
    assert lance.dataset(uri).version == before
    # the parameters a row change uses still work: a statement id commits once
    ds2, first = ds.delete("id < 3", statement_id="del-1")
    _, again = ds.delete("id < 3", statement_id="del-1")
    assert first.committed and not again.committed and again.version == first.version
    assert lance.dataset(uri).count_rows() == 397
