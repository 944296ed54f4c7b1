#!/usr/bin/env bash
# Build the `lance_host` wheel into dist/: the package with the library bundled without its
# debug info, which is kept beside the wheel as dist/liblance_host.so.debug (the bundled library
# names it through .gnu_debuglink).
#   scripts/build-wheel.sh            bundle LANCE_HOST_LIB, default the tested build that
#                                     scripts/build-lib.sh installed into build/prefix
#   scripts/build-wheel.sh --release  build the release library first (cargo release profile;
#                                     ~30 min cold on 2 cores) and bundle that
# Prints the wheel's path and size. Install it with `pip install dist/lance_host-*.whl`.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lance-host/target}"
if [ "${1:-}" = "--release" ]; then
  cargo build --release --lib --features mimalloc  # the release library CMake builds
  lib="$CARGO_TARGET_DIR/release/liblance_host.so"
elif [ -n "${1:-}" ]; then
  echo "usage: $0 [--release]" >&2; exit 2
else
  lib="${LANCE_HOST_LIB:-$PWD/build/prefix/lib/liblance_host.so}"
fi
[ -f "$lib" ] || { echo "no library at $lib (run scripts/build-lib.sh, or pass --release)" >&2; exit 1; }
rm -rf dist && mkdir -p dist
echo "==> building the lance_host wheel (bundling $lib without its debug info)"
LANCE_HOST_LIB="$lib" LANCE_HOST_DEBUG_DIR="$PWD/dist" \
  python3 -m pip -q wheel --no-deps --wheel-dir dist ./python
wheel=$(ls dist/lance_host-*.whl)
echo "$wheel: $(du -m "$wheel" | cut -f1) MB (the library was $(du -mL "$lib" | cut -f1) MB; its debug info: dist/liblance_host.so.debug)"
