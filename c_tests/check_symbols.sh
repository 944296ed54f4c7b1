#!/bin/sh
# The installed shared library exports exactly the functions its headers declare — the current
# header plus the frozen headers of earlier ABI revisions whose entry points it still serves —
# and has the SONAME of its compatibility line.
#   check_symbols.sh <liblance_host.so> <lance_host.h> [<frozen lance_host_X.Y.h> ...]
set -eu
lib="$1"
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u > "$tmp/exported"
for header in "$@"; do
  grep -v '^[[:space:]]*//' "$header" | grep -oE '\<lance_[a-z0-9_]+\('
done | tr -d '(' | sort -u > "$tmp/declared"
if ! diff -u "$tmp/declared" "$tmp/exported"; then
  echo "exported symbols differ from the headers' functions (- declared only, + exported only)" >&2
  exit 1
fi
echo "$(wc -l < "$tmp/exported") exported symbols, all declared in: $*"
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
case "$soname" in
  liblance_host.so.*) echo "SONAME $soname" ;;
  *) echo "no versioned SONAME (got '$soname')" >&2; exit 1 ;;
esac
