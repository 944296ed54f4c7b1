#!/usr/bin/env bash
# Print the home of a Java 25 (or newer) JDK for the Trino connector (Trino 483 needs Java 25):
# $LANCE_HOST_JAVA25_HOME when set, else the newest JDK under /usr/lib/jvm whose javac is 25+.
set -euo pipefail
if [ -n "${LANCE_HOST_JAVA25_HOME:-}" ]; then
  echo "$LANCE_HOST_JAVA25_HOME"
  exit 0
fi
best="" best_major=0
for home in /usr/lib/jvm/*/; do
  home="${home%/}"
  [ -x "$home/bin/javac" ] || continue
  major="$("$home/bin/javac" -version 2>&1 | sed -E 's/^javac ([0-9]+).*/\1/')"
  case "$major" in ''|*[!0-9]*) continue ;; esac
  if [ "$major" -ge 25 ] && [ "$major" -gt "$best_major" ]; then
    best="$home" best_major="$major"
  fi
done
if [ -z "$best" ]; then
  echo "find-java25.sh: no Java 25+ JDK under /usr/lib/jvm (the Trino connector needs one);" \
    "install one or set LANCE_HOST_JAVA25_HOME" >&2
  exit 1
fi
echo "$best"
