#!/usr/bin/env bash
# Builds the natives the lance-host jar carries and puts them where the jar's resources are
# gathered: <out>/org/lancehost/native/<os>-<arch>/ with liblance_host.so.0, liblance_host_jni.so
# and natives.properties (name=sha256 and size of each, which the loader checks). Run by Maven
# (java/api/pom.xml, phase generate-resources); by hand: java/native/build-natives.sh <out>.
#
# The library comes from LANCE_HOST_PREFIX (an install prefix, e.g. a release build's), else from
# build/prefix, which scripts/build-lib.sh fills (debug profile) when it is missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: build-natives.sh <resources output dir>}"
prefix="${LANCE_HOST_PREFIX:-$root/build/prefix}"
if [ ! -f "$prefix/lib/liblance_host.so" ]; then
  if [ -n "${LANCE_HOST_PREFIX:-}" ]; then
    echo "build-natives.sh: no lib/liblance_host.so under LANCE_HOST_PREFIX=$prefix" >&2
    exit 1
  fi
  "$root/scripts/build-lib.sh"
fi
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x86_64 ;;
  Linux-aarch64) platform=linux-aarch64 ;;
  *) echo "build-natives.sh: $(uname -s)-$(uname -m) is not a platform the jar carries natives for" >&2; exit 1 ;;
esac
build="$root/build/java-native"
# LanceHost_DIR named each time: a cached one from an earlier prefix would link the wrong library
cmake -S "$root/java/native" -B "$build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DLanceHost_DIR="$prefix/lib/cmake/LanceHost" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" >/dev/null

dir="$out/org/lancehost/native/$platform"
mkdir -p "$dir"
lib="$(readlink -f "$prefix/lib/liblance_host.so")"
# Debug sections are left out of the jar (a host that needs them loads its own library through
# -Dlancehost.jni.library); copies are redone only when the source is newer.
if [ ! -f "$dir/liblance_host.so.0" ] || [ "$lib" -nt "$dir/liblance_host.so.0" ]; then
  strip --strip-debug -o "$dir/liblance_host.so.0.tmp" "$lib"
  mv "$dir/liblance_host.so.0.tmp" "$dir/liblance_host.so.0"
fi
cp -p "$build/liblance_host_jni.so" "$dir/liblance_host_jni.so"
{
  echo "# natives of lance-host $(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1) for $platform: name=sha256 size"
  for f in liblance_host.so.0 liblance_host_jni.so; do
    echo "$f=$(sha256sum "$dir/$f" | cut -d' ' -f1) $(stat -c %s "$dir/$f")"
  done
} > "$dir/natives.properties"
