#!/usr/bin/env bash
# Run the lance-host demo: writes a small local warehouse (several tables, fragments and
# versions) with the project's own code, then walks it from C through the library.
#   ./demo.sh [warehouse-dir]      (default: build/demo-warehouse)
set -euo pipefail
cd "$(dirname "$0")"
scripts/ensure-deps.sh
scripts/build-lib.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lance-host/target}"
warehouse="${1:-$PWD/build/demo-warehouse}"
echo "==> writing the demo warehouse to $warehouse"
"$CARGO_TARGET_DIR/debug/lance-host-testkit" warehouse "$warehouse" >/dev/null
cmake -S examples -B build/examples -DCMAKE_PREFIX_PATH="$PWD/build/prefix" >/dev/null
cmake --build build/examples >/dev/null
echo "==> running the demo"
echo
build/examples/lance_host_demo "$(cd "$warehouse" && pwd)"
