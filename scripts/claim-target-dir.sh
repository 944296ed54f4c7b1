#!/usr/bin/env bash
# The cargo target directory is shared between checkouts (see the README). Cargo decides
# freshness by file times and names workspace artifacts independently of the checkout's path,
# so a checkout whose files are older than another checkout's last build would reuse that
# build, test binaries included (with the other checkout's paths compiled in). When the last
# build came from another checkout, mark this checkout's sources as changed so cargo rebuilds
# the workspace crates (the dependency stack stays cached).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:?CARGO_TARGET_DIR must be set}"
stamp="$target/.lance-host-checkout"
mkdir -p "$target"
if [ "$(cat "$stamp" 2>/dev/null)" != "$PWD" ]; then
  if [ -d .git ]; then
    git ls-files -z -- '*.rs' '*.toml' '*.map' | xargs -0 touch
  else
    find . -path ./build -prune -o \( -name '*.rs' -o -name '*.toml' -o -name '*.map' \) -print0 | xargs -0 touch
  fi
  echo "$PWD" > "$stamp"
fi
