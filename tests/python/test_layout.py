"""The README's layout table says where everything is: every folder of src/ has its row, and
every module of a folder is named in it (issue 59: the table had missed 8 modules of src/ and
10 of src/write/ without anyone noticing). Run from any directory; needs nothing built."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def layout_rows() -> dict:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Layout"):]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `(src/[^`]*)` \| (.*) \|$", line)
        if m:
            rows[m.group(1)] = set(re.findall(r"`([A-Za-z_0-9]+)`", m.group(2)))
    return rows


def test_every_src_folder_has_a_row_naming_each_of_its_modules():
    rows = layout_rows()
    assert "src/" in rows, "the layout table has no src/ row"
    missing = []
    for folder in sorted({p.parent for p in (ROOT / "src").rglob("*.rs")}):
        key = folder.relative_to(ROOT).as_posix() + "/"
        if key not in rows:
            missing.append(f"no row for {key}")
            continue
        for module in sorted(p.stem for p in folder.glob("*.rs")):
            if module == "lib" or (module == "mod" and key == "src/ffi/"):
                continue  # the crate root; the ABI's shared argument helpers
            if module not in rows[key]:
                missing.append(f"{key}{module}.rs is not named in the row of {key}")
    assert not missing, "README.md's layout table is out of date:\n" + "\n".join(missing)


def test_the_table_names_no_module_that_is_gone():
    """A name the table describes — `name` (what it holds) — is a module or folder that exists."""
    text = (ROOT / "README.md").read_text()
    stale = []
    for key in layout_rows():
        folder = ROOT / key
        assert folder.is_dir(), f"the layout table has a row for {key}, which does not exist"
        line = next(l for l in text.splitlines() if l.startswith(f"| `{key}` |"))
        for name in re.findall(r"`([a-z_0-9]+)` \(", line):
            if not (folder / f"{name}.rs").exists() and not (folder / name).is_dir():
                stale.append(f"{key}{name}")
    assert not stale, f"the layout table describes modules that are gone: {stale}"


def module_imports() -> dict:
    """Top-level module of src/ -> the top-level modules its code names as `crate::<module>`
    (comments and unit-test modules left out)."""
    src = ROOT / "src"
    modules = {p.stem for p in src.glob("*.rs") if p.stem != "lib"} | {p.name for p in src.iterdir() if p.is_dir()}
    graph = {m: set() for m in modules}
    for f in src.rglob("*.rs"):
        first = f.relative_to(src).parts[0]
        module = first[:-3] if first.endswith(".rs") else first
        if module == "lib":
            continue
        text = f.read_text()
        cut = text.find("#[cfg(test)]\nmod tests")
        if cut >= 0:
            text = text[:cut]
        code = "\n".join(line.split("//")[0] for line in text.splitlines())
        for used in re.findall(r"crate::([a-z_0-9]+)", code):
            if used in modules and used != module:
                graph[module].add(used)
    return graph


def test_no_module_imports_in_a_circle():
    """Issue 59: the layers of src/ form no circle (a module that uses another is never used by
    it, directly or through others); `ffi` sits on top and may use anything."""
    graph = module_imports()
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    detail = {m: sorted(graph[m] & set(c)) for c in circles for m in c}
    assert not circles, f"modules of src/ that import each other in a circle: {circles}; edges: {detail}"
    assert "ffi" not in {d for m, deps in graph.items() if m != "ffi" for d in deps}, "only the C ABI may use ffi"


# The layers of src/, bottom up (docs/building.md, "Where a new piece goes"): a module may use
# modules of its own layer or below, never above. A new module gets its place here.
LAYERS = [
    ["error", "storage", "build_info", "bytes", "redact", "sql_text", "runtime", "cancel", "logging", "lance_env", "columns"],
    ["datacache", "session", "metrics"],
    ["snapshot"],
    ["index", "io_stats", "table_statistics", "decode"],
    ["split"],
    ["scan", "stream", "key_filter", "dynamic_filter", "changes", "search", "fts", "take", "blob", "count", "aggregate",
     "merge", "refine", "prewarm", "branch", "wake", "read_split"],
    ["write", "index_build"],
    ["catalog"],
    ["ffi"],
]


def test_every_module_has_a_layer_and_no_import_goes_up():
    graph = module_imports()
    layer = {m: i for i, ms in enumerate(LAYERS) for m in ms}
    unplaced = sorted(set(graph) - set(layer))
    assert not unplaced, f"modules without a layer in LAYERS (tests/python/test_layout.py): {unplaced}"
    gone = sorted(set(layer) - set(graph))
    assert not gone, f"LAYERS names modules that are gone: {gone}"
    upward = sorted(f"{m} -> {d}" for m, ds in graph.items() for d in ds if layer[d] > layer[m])
    assert not upward, f"imports that go up a layer: {upward}"


SIZE_LIMIT = 800
SOURCE_SUFFIXES = {".rs", ".py", ".java", ".c", ".cpp", ".h", ".hpp", ".sh"}


def documented_large_files() -> set:
    """The files docs/building.md's "Files stay small" section names, with the reason each is
    larger."""
    text = (ROOT / "docs" / "building.md").read_text()
    section = text[text.index("## Files stay small"):]
    section = section[:section.find("\n## ", 1)] if "\n## " in section[1:] else section
    return set(re.findall(r"^- `([^`]+)`:", section, re.M))


def is_test_file(path: str) -> bool:
    return path.startswith(("tests/", "c_tests/", "testkit/")) or "/src/test/" in path


def test_no_source_file_is_above_800_lines_unless_the_docs_say_why():
    import subprocess

    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    large = set()
    for path in tracked.splitlines():
        if Path(path).suffix not in SOURCE_SUFFIXES or is_test_file(path) or not (ROOT / path).is_file():
            continue
        with open(ROOT / path, "rb") as f:
            if sum(1 for _ in f) > SIZE_LIMIT:
                large.add(path)
    documented = documented_large_files()
    assert large - documented == set(), \
        f"above {SIZE_LIMIT} lines and not in docs/building.md's list: {sorted(large - documented)}"
    assert documented - large == set(), \
        f"docs/building.md lists files that are no longer above {SIZE_LIMIT} lines: {sorted(documented - large)}"
