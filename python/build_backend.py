"""PEP 517 backend of the `lance_host` package: setuptools, run in a private copy of this
directory with the shared library put into the package.

- The library is `$LANCE_HOST_LIB` when set (an already built liblance_host.so, e.g. the one
  `scripts/build-lib.sh` installs), else it is built here with `cargo build --release --lib
  --features mimalloc` (the release library CMake builds: every store and tokenizer, mimalloc
  as its allocator) from the repository this directory belongs to (a cold release build of the Lance stack takes
  ~30 minutes on 2 cores).
- The bundled copy carries no debug info (`objcopy --strip-debug`, when binutils is there).
  With `$LANCE_HOST_DEBUG_DIR` set, the debug info and the symbol table are kept there as
  `liblance_host.so.debug` and the bundled library names it (`.gnu_debuglink`, found by gdb
  and perf), and the bundled copy keeps only what linking needs (`--strip-unneeded`).
- Every hook that writes (metadata, wheel, sdist) works in a temporary copy of the source
  tree, so two builds of the same checkout can run at once and the checkout stays clean.
- A wheel bundling a library that is not a release build carries its profile as a local version
  label (`0.14.0+debug`), and `import lance_host` warns once when it loads such a library.
"""

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403  (the hooks this module does not wrap)

HERE = Path(__file__).resolve().parent
LIB_NAME = "liblance_host.so"


def _built_library():
    src = os.environ.get("LANCE_HOST_LIB")
    if src:
        if not Path(src).is_file():
            raise RuntimeError(f"LANCE_HOST_LIB={src!r} is not a file (expected a built liblance_host.so)")
        return Path(src)
    repo = HERE.parent
    target = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "lance-host" / "target"))
    subprocess.run(["cargo", "build", "--release", "--lib", "--features", "mimalloc",
                    "--manifest-path", str(repo / "Cargo.toml")],
                   check=True, env={**os.environ, "CARGO_TARGET_DIR": str(target)})
    return target / "release" / LIB_NAME


def _bundle_library(dest: Path):
    src = _built_library()
    objcopy = shutil.which("objcopy")
    if objcopy is None:
        shutil.copyfile(src, dest)
        return
    debug_dir = os.environ.get("LANCE_HOST_DEBUG_DIR")
    if debug_dir:
        Path(debug_dir).mkdir(parents=True, exist_ok=True)
        debug = Path(debug_dir).resolve() / (LIB_NAME + ".debug")
        subprocess.run([objcopy, "--only-keep-debug", str(src), str(debug)], check=True)
        # the debuglink names the file; gdb looks for it next to the library and in its
        # debug directories
        # the symbol table goes with the debug info
        subprocess.run([objcopy, "--strip-unneeded", f"--add-gnu-debuglink={debug}", str(src), str(dest)],
                       check=True)
    else:
        subprocess.run([objcopy, "--strip-debug", str(src), str(dest)], check=True)


def _profile_of(lib: Path):
    """The build profile a library reports (`lance_host_build_profile`: "release", "debug"), or
    None for a library that does not say."""
    import ctypes
    handle = ctypes.CDLL(str(lib))
    fn = getattr(handle, "lance_host_build_profile", None)
    if fn is None:
        return None
    fn.restype = ctypes.c_char_p
    return fn().decode()


def _label_version(copy: Path):
    """A wheel of a library that is not a release build says so in its version: a local version
    label (`0.14.0+debug`), which pip shows and which the file name carries. A library this
    backend builds itself is a release build."""
    src = os.environ.get("LANCE_HOST_LIB")
    if not src or not Path(src).is_file():
        return
    profile = _profile_of(Path(src))
    if profile in (None, "release"):
        return
    if not re.fullmatch(r"[a-z0-9]+", profile):
        raise RuntimeError(f"{src}: build profile {profile!r} is not a version label")
    pyproject = copy / "pyproject.toml"
    text = pyproject.read_text()
    labelled, n = re.subn(r'^version = "([^"+]+)"$', lambda m: f'version = "{m.group(1)}+{profile}"', text, flags=re.M)
    if n != 1:
        raise RuntimeError("pyproject.toml: no version line to label")
    pyproject.write_text(labelled)


def _private_copy(tmp: str) -> Path:
    copy = Path(tmp) / "src"
    shutil.copytree(HERE, copy, ignore=shutil.ignore_patterns(
        "build", "dist", "*.egg-info", "__pycache__", LIB_NAME))
    _label_version(copy)
    return copy


def _in_private_copy(hook, *args, bundle=False):
    """Runs `hook(*args)` in a temporary copy of this directory (paths among `args` must be
    absolute)."""
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="lance_host-build-") as tmp:
        copy = _private_copy(tmp)
        if bundle:
            _bundle_library(copy / "lance_host" / LIB_NAME)
        os.chdir(copy)
        try:
            return hook(*args)
        finally:
            os.chdir(cwd)


def _abs(path):
    return None if path is None else os.path.abspath(path)


# setuptools' requirement hooks run `setup.py egg_info`, which writes lance_host.egg-info/
def get_requires_for_build_wheel(config_settings=None):
    return _in_private_copy(_setuptools.get_requires_for_build_wheel, config_settings)


def get_requires_for_build_sdist(config_settings=None):
    return _in_private_copy(_setuptools.get_requires_for_build_sdist, config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _in_private_copy(_setuptools.prepare_metadata_for_build_wheel, _abs(metadata_directory),
                            config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _in_private_copy(_setuptools.build_wheel, _abs(wheel_directory), config_settings,
                            _abs(metadata_directory), bundle=True)


def build_sdist(sdist_directory, config_settings=None):
    return _in_private_copy(_setuptools.build_sdist, _abs(sdist_directory), config_settings)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # an editable install points at this directory, so the library goes here
    _bundle_library(HERE / "lance_host" / LIB_NAME)
    return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
