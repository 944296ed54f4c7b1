#!/usr/bin/env bash
# Install the `lance_host` Python package (python/) with pip, bundling the library that
# scripts/build-lib.sh installed (LANCE_HOST_LIB, default build/prefix/lib/liblance_host.so) so
# the tests use the build they test. Without LANCE_HOST_LIB set by the caller, a plain
# `pip install ./python` builds a release library with cargo instead.
set -euo pipefail
cd "$(dirname "$0")/.."
lib="${LANCE_HOST_LIB:-$PWD/build/prefix/lib/liblance_host.so}"
echo "==> installing the lance_host Python package (bundling $lib)"
args=(-q install --force-reinstall --no-deps ./python)
LANCE_HOST_LIB="$lib" python3 -m pip "${args[@]}" ||
  LANCE_HOST_LIB="$lib" python3 -m pip "${args[@]}" --break-system-packages
