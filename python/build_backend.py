"""PEP 517 backend of the `lance_host` package: setuptools, after putting the shared library
into the package. The library is `$LANCE_HOST_LIB` when set (an already built
liblance_host.so, e.g. the one `scripts/build-lib.sh` installs), else it is built here with
`cargo build --release --lib` from the repository this directory belongs to (a cold release
build of the Lance stack takes ~30 minutes on 2 cores)."""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403  (the hooks this module does not wrap)

HERE = Path(__file__).resolve().parent
BUNDLED = HERE / "lance_host" / "liblance_host.so"


def _bundle_library():
    src = os.environ.get("LANCE_HOST_LIB")
    if not src:
        repo = HERE.parent
        target = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "lance-host" / "target"))
        subprocess.run(["cargo", "build", "--release", "--lib", "--manifest-path", str(repo / "Cargo.toml")],
                       check=True, env={**os.environ, "CARGO_TARGET_DIR": str(target)})
        src = target / "release" / "liblance_host.so"
    shutil.copyfile(src, BUNDLED)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _bundle_library()
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _bundle_library()
    return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
