#!/usr/bin/env bash
# DuckDB's C API headers (duckdb.h, duckdb_extension.h) for the lance-host DuckDB extension.
# DuckDB publishes them in its source tree; the libduckdb-sys crate on crates.io carries that
# tree for DuckDB 2.0.0, so they come from there (pinned by checksum), never from this repo.
#   scripts/fetch-duckdb-headers.sh <dest dir>
set -euo pipefail
dest="$1"
crate_version=1.20000.1   # libduckdb-sys release bundling DuckDB v2.0.0
sha256=0140448c472968ee5cf5ba697435deebe558b366ef1e5c080d24d9696b600725
if [ -f "$dest/duckdb_extension.h" ] && [ -f "$dest/duckdb.h" ]; then exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
crate="$tmp/libduckdb-sys.crate"
cached=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/libduckdb-sys-$crate_version.crate 2>/dev/null | head -1 || true)
if [ -n "$cached" ]; then
  cp "$cached" "$crate"
else
  echo "==> downloading DuckDB's C API headers (libduckdb-sys $crate_version from crates.io)"
  curl -sSfL -o "$crate" "https://static.crates.io/crates/libduckdb-sys/$crate_version/download"
fi
echo "$sha256  $crate" | sha256sum -c --quiet
tar -xzf "$crate" -C "$tmp" "libduckdb-sys-$crate_version/duckdb.tar.gz"
tar -xzf "$tmp/libduckdb-sys-$crate_version/duckdb.tar.gz" -C "$tmp" \
  duckdb/src/include/duckdb.h duckdb/src/include/duckdb_extension.h
mkdir -p "$dest"
cp "$tmp/duckdb/src/include/duckdb.h" "$tmp/duckdb/src/include/duckdb_extension.h" "$dest/"
