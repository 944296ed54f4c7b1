#!/usr/bin/env bash
# Run every test of lance-host: Rust (one integration binary + unit tests), C (ctest, through
# find_package(LanceHost) from an install prefix, incl. valgrind), Java (Maven) and Python
# (ctypes+pyarrow).
set -euo pipefail
cd "$(dirname "$0")"
LANCE_HOST_NEED_PYTHON=1 scripts/ensure-deps.sh
scripts/ensure-emulators.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lance-host/target}"
mkdir -p "$CARGO_TARGET_DIR"
scripts/claim-target-dir.sh

echo "==> Rust tests"
cargo test --workspace

echo "==> one feature set for the library, demo and test builds"
python3 scripts/feature-sets.py

scripts/build-lib.sh

echo "==> C tests (ctest)"
cargo build -q -p rust-neighbor -p lance-host-rest-server
cmake -S c_tests -B build/c_tests -DCMAKE_PREFIX_PATH="$PWD/build/prefix" \
  -DLANCE_HOST_TESTKIT="$CARGO_TARGET_DIR/debug/lance-host-testkit" \
  -DLANCE_HOST_NEIGHBOR_LIB="$CARGO_TARGET_DIR/debug/librust_neighbor.a" >/dev/null
cmake --build build/c_tests -j 2 >/dev/null
(cd build/c_tests && ctest --parallel 2 --output-on-failure)

echo "==> DuckDB extension"
scripts/fetch-duckdb-headers.sh build/duckdb-include
cmake -S duckdb -B build/duckdb -DCMAKE_PREFIX_PATH="$PWD/build/prefix" \
  -DDUCKDB_INCLUDE_DIR="$PWD/build/duckdb-include" >/dev/null
cmake --build build/duckdb >/dev/null

scripts/install-python-package.sh

echo "==> Java API and Spark connectors (Maven: mvn install in java/: tests, then the artifacts into ~/.m2)"
PYSPARK_HOME="$(python3 -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
(cd java && mvn -B -ntp install -Dspark.home="$PYSPARK_HOME" \
  -Dlancehost.restserver="$CARGO_TARGET_DIR/debug/lance-host-rest-server") > build/java-maven.log 2>&1 \
  || { tail -300 build/java-maven.log; exit 1; }
grep -a -E "Tests run:|Reactor Summary|SUCCESS|FAILURE" build/java-maven.log | grep -v " -- in " || true

echo "==> Trino connector (Java 25: mvn install in java/trino, Trino's distributed query runner)"
JAVA25_HOME="$(scripts/find-java25.sh)"
(cd java/trino && JAVA_HOME="$JAVA25_HOME" mvn -B -ntp install) > build/java-trino.log 2>&1 \
  || { tail -300 build/java-trino.log; exit 1; }
grep -a -E "Tests run:|BUILD" build/java-trino.log | grep -v " -- in " || true

echo "==> Python tests"
LANCE_HOST_LIB="$PWD/build/prefix/lib/liblance_host.so" \
LANCE_HOST_TESTKIT="$CARGO_TARGET_DIR/debug/lance-host-testkit" \
LANCE_HOST_WAREHOUSE="$PWD/build/c_tests/warehouse" \
LANCE_HOST_DUCKDB_EXTENSION="$PWD/build/duckdb/lance_host.duckdb_extension" \
LANCE_HOST_JAVA_BUILD="$PWD/java" \
LANCE_HOST_REST_SERVER="$CARGO_TARGET_DIR/debug/lance-host-rest-server" \
  python3 -m pytest -q tests/python

# The Spark checks of issue 46 again on the newest pyspark tried (the tests above run the pinned
# one): pushdown's reuse probe, queries of one DataFrame, vectors, row slices, option typos.
NEWEST_PYSPARK=4.3.0
newest="$HOME/.cache/lance-host/pyspark-$NEWEST_PYSPARK"
echo "==> Spark checks on pyspark $NEWEST_PYSPARK"
if [ ! -f "$newest/pyspark/__init__.py" ]; then
  python3 -m pip install -q --disable-pip-version-check --target "$newest.tmp" --no-deps "pyspark==$NEWEST_PYSPARK"
  rm -rf "$newest" && mv "$newest.tmp" "$newest"
fi
PYTHONPATH="$newest" LANCE_HOST_LIB="$PWD/build/prefix/lib/liblance_host.so" \
  python3 -m pytest -q tests/python/test_spark.py \
  -k "filtered_query or probe or translation or vectors_round or one_fragment or unknown_options"
