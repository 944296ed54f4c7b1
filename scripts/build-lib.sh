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
echo "==> building lance-host-testkit"
cargo build -q -p lance-host-testkit
