"""The docs cannot rot: every public Python function, class and property has a docstring, every
place that names the library's version names the crate's, and the README's snippets run (the
snippet tests below extract them and run them against a table the test writes)."""

import inspect
import re
from pathlib import Path

import pytest

lh = pytest.importorskip("lance_host")

ROOT = Path(__file__).resolve().parents[2]


def crate_version():
    m = re.search(r'^\[package\][^\[]*?^version = "([^"]+)"', (ROOT / "Cargo.toml").read_text(), re.M | re.S)
    return m.group(1)


def public_api(module):
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
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
    import importlib

    modules = [lh]
    for optional in ("lance_host.spark", "lance_host.ray"):
        try:
            modules.append(importlib.import_module(optional))
        except ImportError:  # pyspark / ray not installed: their modules cannot be imported
            pass
    checked, missing = 0, []
    for module in modules:
        assert (module.__doc__ or "").strip(), f"module {module.__name__} has no docstring"
        for name, obj in public_api(module):
            checked += 1
            if not (obj.__doc__ or "").strip():
                missing.append(name)
    assert checked > 100, checked
    assert not missing, f"no docstring: {missing}"


def test_every_version_string_is_the_crate_version():
    v = crate_version()
    major, minor, patch = (int(x) for x in v.split("."))
    assert lh.version() == v and lh.version_number() == major * 10000 + minor * 100 + patch
    header = (ROOT / "include" / "lance_host.h").read_text()
    assert f'#define LANCE_HOST_VERSION "{v}"' in header
    assert f"#define LANCE_HOST_VERSION_MINOR {minor}" in header
    pyproject = (ROOT / "python" / "pyproject.toml").read_text()
    assert re.search(rf'^version = "{re.escape(v)}"$', pyproject, re.M), "python/pyproject.toml"
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
