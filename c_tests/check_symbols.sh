#!/bin/sh
# The installed shared library exports exactly the functions its header declares, and has the
# SONAME of its compatibility line.
#   check_symbols.sh <liblance_host.so> <lance_host.h>
set -eu
lib="$1"
header="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u > "$tmp/exported"
grep -v '^[[:space:]]*//' "$header" | grep -oE '\<lance_[a-z0-9_]+\(' | tr -d '(' | sort -u > "$tmp/declared"
if ! diff -u "$tmp/declared" "$tmp/exported"; then
  echo "exported symbols differ from the header's functions (- declared only, + exported only)" >&2
  exit 1
fi
echo "$(wc -l < "$tmp/exported") exported symbols, all declared in the header"
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
case "$soname" in
  liblance_host.so.*) echo "SONAME $soname" ;;
  *) echo "no versioned SONAME (got '$soname')" >&2; exit 1 ;;
esac
