"""Packaging of `lance_host` (python/): the wheel a user installs carries the library without its
debug info (kept beside the wheel and named by .gnu_debuglink), is one py3 wheel per platform,
declares the `spark` and `ray` extras with their version ranges, and two builds of the same
checkout can run at once without touching the checkout. The builds here bundle a small shared
library compiled by the test, so they take seconds; the installed package is checked too."""

import os
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHON_DIR = ROOT / "python"


def sections(path):
    out = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True, text=True, check=True).stdout
    return {part for line in out.splitlines() for part in line.split() if part.startswith(".")}


def tree(path):
    return {str(p.relative_to(path)) for p in path.rglob("*") if "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def small_library(tmp_path_factory):
    if shutil.which("cc") is None or shutil.which("objcopy") is None or shutil.which("readelf") is None:
        pytest.skip("needs cc and binutils (installed by scripts/ensure-deps.sh)")
    d = tmp_path_factory.mktemp("lib")
    (d / "x.c").write_text("int lance_host_test_symbol(int x) { return x + 1; }\n")
    lib = d / "liblance_host.so"
    subprocess.run(["cc", "-g", "-shared", "-fPIC", "-o", str(lib), str(d / "x.c")], check=True)
    assert ".debug_info" in sections(lib)
    return lib


def build_wheel(lib, out):
    env = {**os.environ, "LANCE_HOST_LIB": str(lib), "LANCE_HOST_DEBUG_DIR": str(out / "debug")}
    return subprocess.run([sys.executable, "-m", "pip", "-q", "wheel", "--no-deps", "--wheel-dir", str(out / "wheel"),
                           str(PYTHON_DIR)], env=env, capture_output=True, text=True)


def test_two_builds_at_once_leave_the_checkout_alone_and_give_a_small_wheel(small_library, tmp_path):
    before = tree(PYTHON_DIR)
    outs = [tmp_path / "a", tmp_path / "b"]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda o: build_wheel(small_library, o), outs))
    for r in results:
        assert r.returncode == 0, r.stderr
    assert tree(PYTHON_DIR) == before, f"the build wrote into python/: {sorted(tree(PYTHON_DIR) ^ before)}"
    for out in outs:
        (wheel,) = (out / "wheel").glob("*.whl")
        assert wheel.name.startswith("lance_host-") and wheel.name.endswith("-py3-none-linux_x86_64.whl"), wheel.name
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
            assert "lance_host/liblance_host.so" in names and "lance_host/__init__.py" in names
            bundled = out / "bundled.so"
            bundled.write_bytes(z.read("lance_host/liblance_host.so"))
            meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        got = sections(bundled)
        assert ".debug_info" not in got and ".gnu_debuglink" in got, sorted(got)
        debug = out / "debug" / "liblance_host.so.debug"
        assert ".debug_info" in sections(debug)
        # the stripped copy still exports the library's symbol
        dyn = subprocess.run(["nm", "-D", "--defined-only", str(bundled)], capture_output=True, text=True, check=True)
        assert "lance_host_test_symbol" in dyn.stdout
        extras = {line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Provides-Extra:")}
        assert extras == {"spark", "ray", "polars", "daft"}, meta
        requires = [line for line in meta.splitlines() if line.startswith("Requires-Dist:")]
        # Bounded to the versions tried: the pinned pyspark 4.1.1 up to the newest tried, 4.3.x;
        # Ray from the pinned 2.52 to 2.60.
        assert any("pyspark" in r and "<4.4" in r and ">=4.1.1" in r and 'extra == "spark"' in r for r in requires), requires
        assert any("ray[data]" in r and "<2.61" in r and ">=2.52" in r and 'extra == "ray"' in r for r in requires), requires
        for extra in ("spark", "ray"):
            assert any("pandas" in r and "<3" in r and f'extra == "{extra}"' in r for r in requires), requires


def test_a_missing_library_is_a_clear_build_error(tmp_path):
    r = build_wheel(tmp_path / "nope.so", tmp_path)
    assert r.returncode != 0
    assert "LANCE_HOST_LIB" in r.stderr and "is not a file" in r.stderr, r.stderr[-2000:]


def test_the_installed_package_carries_no_debug_info():
    lh = pytest.importorskip("lance_host")
    if shutil.which("readelf") is None:
        pytest.skip("needs binutils")
    lib = Path(lh._ffi.library_path())
    if lib.is_relative_to(ROOT):
        pytest.skip("lance_host is used from the source tree, not installed from a wheel")
    assert ".debug_info" not in sections(lib)


@pytest.mark.parametrize("profile", ["debug", "release"])
def test_a_wheel_of_a_debug_library_says_so_in_its_version(tmp_path, profile):
    """Issue 62: the wheel a user built from the test command's library was the debug build with
    nothing saying so. A library reporting another profile than release gets a local version
    label (`0.14.0+debug`, in the file name and the metadata); a release library none."""
    if shutil.which("cc") is None or shutil.which("objcopy") is None:
        pytest.skip("needs cc and binutils (installed by scripts/ensure-deps.sh)")
    (tmp_path / "p.c").write_text(f'const char *lance_host_build_profile(void) {{ return "{profile}"; }}\n')
    lib = tmp_path / "liblance_host.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "p.c")], check=True)
    r = build_wheel(lib, tmp_path)
    assert r.returncode == 0, r.stderr
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    version = next(line.split('"')[1] for line in (PYTHON_DIR / "pyproject.toml").read_text().splitlines()
                   if line.startswith("version = "))
    want = f"{version}+{profile}" if profile != "release" else version
    assert wheel.name.startswith(f"lance_host-{want}-py3-none-"), wheel.name
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    assert f"\nVersion: {want}\n" in meta, meta[:300]
