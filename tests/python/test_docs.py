"""The docs cannot rot: every public Python function, class and property has a docstring, every
place that names the library's version names the crate's, and the README's snippets run (the
snippet tests below extract them and run them against a table the test writes)."""

import inspect
import re
from pathlib import Path

import pytest

lh = pytest.importorskip("lance_host")
lance = pytest.importorskip("lance")

ROOT = Path(__file__).resolve().parents[2]


def crate_version():
    m = re.search(r'^\[package\][^\[]*?^version = "([^"]+)"', (ROOT / "Cargo.toml").read_text(), re.M | re.S)
    return m.group(1)


def package_modules() -> list:
    """The package's public Python modules (an installed package also holds the library's .so,
    which is no module of it)."""
    return sorted(p.stem for p in Path(lh.__file__).parent.glob("*.py") if not p.stem.startswith("_"))


def public_api(module):
    names = [n for n in vars(module) if not n.startswith("_")]
    for name in names:
        obj = getattr(module, name)
        if inspect.ismodule(obj) or getattr(obj, "__module__", module.__name__) != module.__name__:
            continue
        if inspect.isclass(obj) or inspect.isfunction(obj):
            yield f"{module.__name__}.{name}", obj
        if inspect.isclass(obj):
            for attr, value in vars(obj).items():
                if attr.startswith("_"):
                    continue
                if isinstance(value, property):
                    yield f"{module.__name__}.{name}.{attr}", value.fget
                elif isinstance(value, (staticmethod, classmethod)):
                    yield f"{module.__name__}.{name}.{attr}", value.__func__
                elif inspect.isfunction(value):
                    yield f"{module.__name__}.{name}.{attr}", value


def test_every_public_function_class_and_property_has_a_docstring():
    """Every module of the package (each area is one: errors, stream, split, ..., session) and
    the engine layers: each public name defined there, and each public method and property of
    its classes, has a docstring of its own (a dataclass's generated `Name(field, ...)` text does
    not count); every name the package exports is defined in one of the modules checked."""
    import dataclasses
    import importlib

    areas = package_modules()
    assert {"errors", "dataset", "write", "search", "session"} <= set(areas), areas
    modules = [lh]
    for name in areas:
        try:
            modules.append(importlib.import_module(f"lance_host.{name}"))
        except ImportError:  # pyspark / ray not installed: their modules cannot be imported
            assert name in ("spark", "spark_types", "ray"), name
    checked, missing = 0, []
    for module in modules:
        assert (module.__doc__ or "").strip(), f"module {module.__name__} has no docstring"
        for name, obj in public_api(module):
            checked += 1
            doc = (obj.__doc__ or "").strip()
            if not doc or (dataclasses.is_dataclass(obj) and doc.startswith(f"{obj.__name__}(")):
                missing.append(name)
    assert checked > 200, checked
    assert not missing, f"no docstring: {missing}"
    homes = {m.__name__ for m in modules}
    exported = [n for n in lh.__all__ if not n.startswith("__") and (inspect.isclass(getattr(lh, n))
                                                                  or inspect.isfunction(getattr(lh, n)))]
    assert all(getattr(lh, n).__module__ in homes for n in exported), \
        [n for n in exported if getattr(lh, n).__module__ not in homes]


def test_every_public_function_and_method_has_type_hints():
    """Issue 59: each parameter of every public function and method of the package's modules (the
    engine layers' too) is annotated, and so is what it returns (`__init__` apart); `*args` and
    `**options` are documented by the function they pass to."""
    import importlib

    checked, missing = 0, []
    for name in package_modules():
        try:
            module = importlib.import_module(f"lance_host.{name}")
        except ImportError:
            assert name in ("spark", "spark_types", "ray"), name
            continue
        for name, obj in public_api(module):
            if inspect.isclass(obj):
                obj = obj.__init__
                if not inspect.isfunction(obj) or obj.__module__ != module.__name__:
                    continue
            sig = inspect.signature(obj)
            checked += 1
            bare = [p.name for p in sig.parameters.values() if p.name not in ("self", "cls")
                    and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.annotation is inspect.Parameter.empty]
            if bare or (sig.return_annotation is inspect.Signature.empty and obj.__name__ != "__init__"):
                missing.append(f"{name}{sig}")
    assert checked > 200, checked
    assert not missing, "without type hints:\n" + "\n".join(missing)


def test_every_version_string_is_the_crate_version():
    v = crate_version()
    major, minor, patch = (int(x) for x in v.split("."))
    assert lh.version() == v and lh.version_number() == major * 10000 + minor * 100 + patch
    header = (ROOT / "include" / "lance_host.h").read_text()
    assert f'#define LANCE_HOST_VERSION "{v}"' in header
    assert f"#define LANCE_HOST_VERSION_MINOR {minor}" in header
    pyproject = (ROOT / "python" / "pyproject.toml").read_text()
    assert re.search(rf'^version = "{re.escape(v)}"$', pyproject, re.M), "python/pyproject.toml"
    # the Maven artifacts (java/) are versioned like the library, and so is what the README adds
    poms = [p for p in (ROOT / "java").rglob("pom.xml") if "target" not in p.relative_to(ROOT).parts]
    assert len(poms) >= 3, poms
    for pom in poms:
        found = re.findall(r"<artifactId>lance-host(?:-spark)?-parent</artifactId>\s*<version>([^<]+)</version>", pom.read_text())
        assert found == [v], f"{pom.relative_to(ROOT)}: {found}"
    deps = re.findall(r"<groupId>org\.lancehost</groupId>\s*<artifactId>[^<]+</artifactId>\s*<version>([^<]+)</version>",
                      (ROOT / "README.md").read_text())
    assert deps and set(deps) == {v}, deps
    # every find_package(LanceHost X.Y) asks for this release's major.minor
    places = [p for p in ROOT.rglob("*") if p.suffix in (".txt", ".md", ".cmake", ".in")
              and "build" not in p.relative_to(ROOT).parts and ".git" not in p.parts and p.is_file()]
    asked = {str(p.relative_to(ROOT)): re.findall(r"find_package\(LanceHost ([0-9.]+)", p.read_text(errors="replace"))
             for p in places}
    asked = {k: vs for k, vs in asked.items() if vs}
    assert {"README.md", "c_tests/CMakeLists.txt", "examples/CMakeLists.txt", "duckdb/CMakeLists.txt"} <= set(asked)
    stale = {k: vs for k, vs in asked.items() if any(x != f"{major}.{minor}" for x in vs)}
    assert not stale, f"find_package asks for another version than {major}.{minor}: {stale}"
    # the C++ header and the sources do not quote a version as an example ("e.g. 0.2.0")
    for path in [ROOT / "include" / "lance_host.hpp", ROOT / "include" / "lance_host.h"]:
        quoted = set(re.findall(r'"(\d+\.\d+\.\d+)"', path.read_text())) - {v}
        assert not quoted, f"{path.name} names other versions: {quoted}"


# ---- the README's snippets ---------------------------------------------------------------------

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa

from jvm_jars import api_classpath, spark_bundle

README_WAREHOUSE = "/data/warehouse"
README_EXTENSION = "/path/to/build/duckdb/lance_host.duckdb_extension"
README_ADBC_DRIVER = "/path/to/build/prefix/lib/liblance_host_adbc.so"
DIM = 16
QUERY = [0.5] * DIM
PHRASE = "quick brown fox"


def snippets(language):
    """The README's fenced blocks of `language`, in order."""
    text = (ROOT / "README.md").read_text()
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.M | re.S)


def test_every_readme_block_is_run_by_this_file():
    text = (ROOT / "README.md").read_text()
    languages = [lang for lang, _ in re.findall(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S)]
    # sh: the two commands (CI runs them); cmake: the find_package lines (the C tests' own
    # CMakeLists.txt does the same); properties: the Trino catalog file, which
    # java/trino's TrinoConnectorTest reads from the README and runs. Every other block is run below.
    assert set(languages) <= {"sh", "cmake", "c", "cpp", "python", "sql", "java", "xml", "properties"}, languages
    assert len(snippets("properties")) == 1
    assert len(snippets("xml")) == 1
    assert len(snippets("c")) == 1 and len(snippets("cpp")) == 1 and len(snippets("sql")) == 1
    assert len(snippets("java")) == 2
    assert len(snippets("python")) == 5


def batch(start, end):
    rng = np.random.default_rng(start)
    ids = np.arange(start, end)
    words = ["alpha", "beta", "gamma", "delta", "lazy", "dog", "jumps", "over"]
    text = []
    for i in ids:
        body = " ".join(words[(i * k + 3) % 8] for k in range(1, 6))
        text.append(f"{body} {PHRASE} end" if i % 25 == 0 else f"{body} fox quick brown end")
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "category": pa.array(["rare" if i % 97 == 0 else "abc"[i % 3] for i in ids]),
        "embedding": pa.FixedSizeListArray.from_arrays(pa.array(rng.random((end - start) * DIM, dtype=np.float32)), DIM),
        "text": pa.array(text),
    })


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    lance = pytest.importorskip("lance")
    root = tmp_path_factory.mktemp("warehouse")
    uri = str(root / "vectors.lance")
    ds = lance.write_dataset(batch(0, 2000), uri, max_rows_per_file=500)
    ds.create_index("embedding", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=4)
    ds.create_scalar_index("text", "INVERTED", with_position=True)
    ds = lance.write_dataset(batch(2000, 2300), uri, mode="append")  # an unindexed tail
    return root, ds


def expected(ds):
    exact = ds.to_table(nearest={"column": "embedding", "q": np.array(QUERY, dtype=np.float32), "k": 10,
                                 "use_index": False}, columns=["id"])["id"].to_pylist()
    table = ds.to_table(columns=["id", "category", "text"])
    ids, cats, texts = table["id"].to_pylist(), table["category"].to_pylist(), table["text"].to_pylist()
    return {
        "rows": ds.count_rows(),
        "id > 10": ds.count_rows("id > 10"),
        "rare": ds.count_rows("category = 'rare'"),
        "exact": exact,
        "phrase": sorted(i for i, t in zip(ids, texts) if PHRASE in t),
        "counts < 900": {c: sum(1 for i, x in zip(ids, cats) if i < 900 and x == c) for c in set(cats)},
        "id % 7": ds.count_rows("id % 7 = 0"),
        "counts % 7": {c: sum(1 for i, x in zip(ids, cats) if i % 7 == 0 and x == c) for c in set(cats)},
    }


def localize(code, root):
    assert README_WAREHOUSE in code
    return code.replace(README_WAREHOUSE, str(root))


def printed(out, label):
    return [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith(label + ": ")]


def prefix():
    lib = Path(os.environ.get("LANCE_HOST_LIB") or ROOT / "build" / "prefix" / "lib" / "liblance_host.so")
    include = lib.parent.parent / "include"
    if not (include / "lance_host.h").exists():
        pytest.skip(f"no installed headers next to {lib} (scripts/build-lib.sh installs them)")
    return lib.parent.parent


def compile_and_run(compiler, flags, source_name, code, tmp_path):
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not installed")
    p = prefix()
    src = tmp_path / source_name
    src.write_text(code)
    exe = tmp_path / "snippet"
    subprocess.run([compiler, *flags, str(src), f"-I{p / 'include'}", f"-L{p / 'lib'}", "-llance_host",
                    f"-Wl,-rpath,{p / 'lib'}", "-o", str(exe)], check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def run_python(code, tmp_path, timeout=600):
    script = tmp_path / "snippet.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=timeout, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-4000:]
    return out.stdout


def test_the_c_snippet(warehouse, tmp_path):
    root, ds = warehouse
    out = compile_and_run("cc", ["-std=c11", "-Wall", "-Werror"], "snippet.c", localize(snippets("c")[0], root), tmp_path)
    assert printed(out, "rows with id > 10") == [str(expected(ds)["id > 10"])], out


def test_the_cpp_snippet(warehouse, tmp_path):
    root, ds = warehouse
    out = compile_and_run("c++", ["-std=c++17", "-Wall"], "snippet.cpp", localize(snippets("cpp")[0], root), tmp_path)
    want = expected(ds)
    assert printed(out, "rows") == [str(want["rows"])], out
    assert sum(int(n) for n in printed(out, "nearest rows")) == 10, out
    assert printed(out, "phrase matches") == [str(len(want["phrase"]))], out


def test_the_python_snippet(warehouse, tmp_path):
    root, ds = warehouse
    out = run_python(localize(snippets("python")[0], root), tmp_path)
    want = expected(ds)
    assert printed(out, "rare rows") == [str(want["rare"])], out
    assert printed(out, "exact top 10") == [str(want["exact"])], out
    assert printed(out, "phrase matches") == [str(len(want["phrase"]))], out


def test_the_write_snippet(warehouse, tmp_path):
    root, _ = warehouse
    out = run_python(localize(snippets("python")[1], root), tmp_path)
    people = lance.dataset(str(root / "people.lance"))  # pylance reads what the snippet wrote
    assert printed(out, "people rows") == [f"{people.count_rows()} at version {people.version}"], out
    assert people.count_rows() == 4 and people.version == 2
    assert people.read_transaction(2).transaction_properties["__lance_commit_message"] == "nightly load"


def test_the_adbc_snippet(warehouse, tmp_path):
    root, ds = warehouse
    lib = Path(os.environ.get("LANCE_HOST_LIB") or ROOT / "build" / "prefix" / "lib" / "liblance_host.so")
    code = [c for c in snippets("python") if README_ADBC_DRIVER in c]
    assert len(code) == 1
    out = run_python(localize(code[0], root).replace(README_ADBC_DRIVER, str(lib.parent / "liblance_host_adbc.so")),
                     tmp_path)
    want = expected(ds)
    assert printed(out, "adbc rare rows") == [str(want["rare"])], out
    assert printed(out, "adbc id % 7 rows") == [str(want["id % 7"])], out


def test_the_spark_snippet(warehouse, tmp_path):
    pytest.importorskip("pyspark")
    root, ds = warehouse
    out = run_python(localize(snippets("python")[2], root), tmp_path)
    want = expected(ds)
    assert json.loads(printed(out, "spark counts")[0]) == {k: v for k, v in want["counts < 900"].items() if v}, out
    assert printed(out, "spark exact top 10") == [str(want["exact"])], out


def test_the_ray_snippet(warehouse, tmp_path):
    pytest.importorskip("ray.data")
    root, ds = warehouse
    out = run_python(localize(snippets("python")[3], root), tmp_path)
    want = expected(ds)
    assert printed(out, "ray rows") == [str(want["id % 7"])], out
    assert printed(out, "ray exact top 10") == [str(want["exact"])], out


MAVEN_PROJECT = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>readme-user</artifactId>
  <version>1</version>
  <dependencies>
{dependency}
  </dependencies>
</project>
"""


def maven_classpath(dependency, tmp_path):
    """A new Maven project with nothing but the README's <dependency>: the class path Maven gives
    it, from the local repository `mvn install` in java/ filled (./test.sh runs it)."""
    api_classpath()  # skips when java/ was not built
    project = tmp_path / "maven-user"
    project.mkdir()
    (project / "pom.xml").write_text(MAVEN_PROJECT.format(dependency=dependency))
    out = subprocess.run(["mvn", "-B", "-q", "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath",
                          "-Dmdep.outputFile=cp.txt", "-Dmdep.includeScope=runtime"],
                         cwd=project, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    cp = [Path(p) for p in (project / "cp.txt").read_text().strip().split(":")]
    names = [p.name for p in cp]
    assert any(n.startswith("lance-host-") for n in names) and any(n.startswith("arrow-vector-") for n in names), names
    return cp


def run_java(code, tmp_path, spark):
    """Runs a README Java block as a single-file program against the artifacts Maven built: the
    Java API as a Maven user of the README's <dependency> gets it, or the Spark bundle with
    pyspark's jars."""
    import pyspark
    if spark:
        cp = [spark_bundle(), *sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))]
    else:
        cp = maven_classpath(snippets("xml")[0], tmp_path)
    name = re.search(r"public class (\w+)", code).group(1)
    src = tmp_path / f"{name}.java"
    src.write_text(code)
    opens = ["--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
             "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.util=ALL-UNNAMED",
             "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED"]
    out = subprocess.run(["java", *opens,
                          "-cp", ":".join(str(p) for p in cp), str(src)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-4000:]
    return out.stdout


def test_the_java_snippet(warehouse, tmp_path):
    root, ds = warehouse
    out = run_java(localize(snippets("java")[0], root), tmp_path, spark=False)
    want = expected(ds)
    assert printed(out, "java rows with id > 10") == [str(want["id > 10"])], out
    assert printed(out, "java exact top 10") == [str(want["exact"]).replace("'", "")], out


def test_the_spark_sql_snippet(warehouse, tmp_path):
    root, ds = warehouse
    out = run_java(localize(snippets("java")[1], root), tmp_path, spark=True)
    want = expected(ds)
    counts = {line.split()[0]: int(line.split()[1]) for line in printed(out, "spark sql count")}
    assert counts == {k: v for k, v in want["counts < 900"].items() if v}, out
    v1 = lance.dataset(str(root / "vectors.lance"), version=1).count_rows()
    assert printed(out, "spark sql rows at version 1") == [str(v1)], out


def test_the_duckdb_snippet(warehouse):
    duckdb = pytest.importorskip("duckdb")
    extension = os.environ.get("LANCE_HOST_DUCKDB_EXTENSION")
    if not extension:
        pytest.skip("LANCE_HOST_DUCKDB_EXTENSION is not set (./test.sh sets it)")
    root, ds = warehouse
    sql = localize(snippets("sql")[0], root).replace(README_EXTENSION, extension)
    statements = [s for s in (re.sub(r"--[^\n]*", "", part).strip() for part in sql.split(";")) if s]
    assert len(statements) == 3 and statements[0].startswith("LOAD")
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(statements[0])
    want = expected(ds)
    assert dict(con.execute(statements[1]).fetchall()) == {k: v for k, v in want["counts % 7"].items() if v}
    assert sorted(r[0] for r in con.execute(statements[2]).fetchall()) == want["phrase"]


# ---- docs/python.md's snippets ----------------------------------------------------------------

def python_md_snippets():
    text = (ROOT / "docs" / "python.md").read_text()
    return re.findall(r"^```python\n(.*?)^```$", text, re.M | re.S)


def test_docs_python_md_snippets_run(warehouse, tmp_path):
    """Every Python block of docs/python.md runs as written against the warehouse this file
    writes: reads and splits, the write API (one process, staged with a statement id and its
    retry, row-level changes, index builds, maintenance), and Spark with Ray."""
    root, ds = warehouse
    blocks = python_md_snippets()
    assert len(blocks) == 7, len(blocks)
    run_python(localize(blocks[0], root), tmp_path)
    writes = run_python(localize(blocks[1], root), tmp_path)
    notes = lance.dataset(str(root / "notes.lance"))
    assert printed(writes, "notes") == [str(notes.count_rows())]
    aggregates = run_python(localize(blocks[2], root), tmp_path)
    groups = notes.to_table(filter="id > 100").group_by("val").aggregate([([], "count_all")])
    assert printed(aggregates, "groups") == [f"{groups.num_rows} {groups.num_rows}"]
    assert printed(aggregates, "rows counted") == [str(notes.count_rows("id > 100"))]
    versions = run_python(localize(blocks[3], root), tmp_path)
    assert printed(versions, "branch rows") == ["110 {'dev': ('main', 4)}"], versions
    assert printed(versions, "changes") == ["['delete', 'insert'] 15"], versions
    assert lance.dataset(str(root / "versions.lance")).checkout_version(("dev", None)).count_rows() == 110
    engines = run_python(localize(blocks[4], root), tmp_path, timeout=900)
    assert "|category|count|" in engines.replace(" ", "")
    polars_out = run_python(localize(blocks[5], root), tmp_path)
    want = sorted((c, n) for c, n in expected(ds)["counts < 900"].items() if c != "rare")
    assert printed(polars_out, "polars groups") == [str(want)], polars_out
    assert printed(polars_out, "polars written") == ["10"], polars_out
    assert lance.dataset(str(root / "small.lance")).count_rows() == 10
    daft_out = run_python(localize(blocks[6], root), tmp_path)
    rare = ds.count_rows("category = 'rare' AND id < 900")
    assert printed(daft_out, "daft rare ids") == [str(rare)] and printed(daft_out, "daft written") == [str(rare)]
    assert lance.dataset(str(root / "rare.lance")).count_rows() == rare


def test_every_public_member_of_the_java_api_has_javadoc():
    """Issue 61: the Java API's public classes, constructors and methods each say what they do
    (an @Override inherits its interface's). A member added without javadoc fails here."""
    api = ROOT / "java" / "api" / "src" / "main" / "java" / "org" / "lancehost"
    missing, checked = [], 0
    for path in sorted(api.glob("*.java")):
        lines = path.read_text().split("\n")
        for i, line in enumerate(lines):
            member = re.match(r"\s*public\s", line) and "(" in line
            kind = re.match(r"\s*public\s+(static\s+)?(final\s+)?(abstract\s+)?(class|enum|record|interface)\s", line)
            if not (member or kind):
                continue
            checked += 1
            j = i - 1
            annotations = []
            while j >= 0 and lines[j].strip().startswith("@"):
                annotations.append(lines[j].strip())
                j -= 1
            if "@Override" in annotations:
                continue
            if j < 0 or not lines[j].strip().endswith("*/"):
                missing.append(f"{path.name}:{i + 1}: {line.strip()}")
    assert checked > 150, checked
    assert not missing, "public members without javadoc:\n" + "\n".join(missing)
