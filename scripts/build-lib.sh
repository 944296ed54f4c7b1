#!/usr/bin/env bash
# Build liblance_host through CMake (cargo dev profile), install it into build/prefix, and
# build the testkit. Prints nothing but progress; used by demo.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lance-host/target}"
mkdir -p "$CARGO_TARGET_DIR"
scripts/claim-target-dir.sh
echo "==> building liblance_host (cargo target dir: $CARGO_TARGET_DIR)"
cmake -S . -B build/lib -DCMAKE_BUILD_TYPE=Debug -DLANCE_HOST_CARGO_TARGET_DIR="$CARGO_TARGET_DIR" >/dev/null
cmake --build build/lib
rm -rf build/prefix  # no stale library names from an earlier version
cmake --install build/lib --prefix "$PWD/build/prefix" >/dev/null
echo "==> building lance-host-testkit and the ADBC driver (liblance_host_adbc.so)"
# One invocation: the two resolve the features of the crates they share together
# (scripts/feature-sets.py).
cargo build -q -p lance-host-testkit -p lance-host-adbc
# The driver sits beside the library it loads.
cp "$CARGO_TARGET_DIR/debug/liblance_host_adbc.so" build/prefix/lib/
