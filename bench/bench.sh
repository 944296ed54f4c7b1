#!/usr/bin/env bash
# Build the benchmark (release profile, twice: glibc malloc and mimalloc), install pylance and
# the S3-compatible test server, and run bench/run.py, which writes bench/REPORT.md, then
# bench/prewarm.py, which writes bench/PREWARM.md, bench/engine.py, which writes
# bench/ENGINE.md, bench/datacache.py, which writes bench/DATACACHE.md (same table, on the
# S3-compatible server), bench/fts.py, which writes bench/FTS.md (its own text corpus),
# bench/batch.py (bench/BATCH.md: batch vector search), bench/recall.py (bench/RECALL.md: per-split
# search + merge vs one global search), bench/split_cost.py (bench/SPLIT_COST.md: a plan's splits
# searched one by one or combined, against pylance), bench/paths.py (bench/PATHS.md: a row per path,
# lance-host against pylance, in one run), bench/scan_bounds.py (bench/SCAN_BOUNDS.md: a full scan of
# wide rows under the memory settings), bench/scan_s3.py (bench/SCAN_S3.md: a full scan on s3:// with
# the data cache off), bench/engines.py (bench/ENGINES_SPARK_RAY.md) and
# bench/write.py (bench/WRITE.md: writes against pylance) and bench/index_build.py
# (bench/INDEX_BUILD.md: index builds against pylance, one process and 2 workers).
#   bench/bench.sh [run.py options, e.g. --rows 3000000 --runs 5]
# A cold release build of the Lance stack takes ~30 minutes on 2 cores; it lives in
# $CARGO_TARGET_DIR (default ~/.cache/lance-host/target) beside the dev build.
set -euo pipefail
cd "$(dirname "$0")/.."
LANCE_HOST_NEED_PYTHON=1 scripts/ensure-deps.sh
if ! python3 -c "import lance, numpy, boto3" 2>/dev/null || \
   [ "$(python3 -c 'import lance; print(lance.__version__)')" != "14.0.2" ]; then
  echo "==> installing pylance 14.0.2"
  python3 -m pip install -q "pylance==14.0.2" numpy boto3 ||
    python3 -m pip install -q --break-system-packages "pylance==14.0.2" numpy boto3
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lance-host/target}"
bin_dir="$CARGO_TARGET_DIR/bench-bins"
mkdir -p "$bin_dir"
echo "==> building lance-host-bench (release, mimalloc)"
cargo build --release -q -p lance-host-bench --features mimalloc
cp "$CARGO_TARGET_DIR/release/lance-host-bench" "$bin_dir/lance-host-bench-mimalloc"
echo "==> building lance-host-bench (release, glibc malloc)"
cargo build --release -q -p lance-host-bench
cp "$CARGO_TARGET_DIR/release/lance-host-bench" "$bin_dir/lance-host-bench-glibc"
# The release library ships with mimalloc (CMake's LANCE_HOST_MIMALLOC); the glibc build is
# measured beside it for the allocator table.
python3 bench/run.py --bin "$bin_dir/lance-host-bench-mimalloc" \
  --alt-bin "$bin_dir/lance-host-bench-glibc" "$@"
rows=3000000
args=("$@")
for i in "${!args[@]}"; do
  if [ "${args[$i]}" = "--rows" ]; then rows="${args[$((i + 1))]}"; fi
done
python3 bench/prewarm.py --bin "$bin_dir/lance-host-bench-mimalloc" --rows "$rows"
python3 bench/engine.py --bin "$bin_dir/lance-host-bench-mimalloc" --rows "$rows"
python3 bench/datacache.py --bin "$bin_dir/lance-host-bench-mimalloc" --rows "$rows"
python3 bench/fts.py --bin "$bin_dir/lance-host-bench-mimalloc"
table="${LANCE_HOST_BENCH_DIR:-$HOME/.cache/lance-host/bench}/rows$rows/bench.lance"
python3 bench/batch.py --bin "$bin_dir/lance-host-bench-mimalloc" --table "$table"
cargo build --release -q -p lance-host --features mimalloc
LANCE_HOST_LIB="$CARGO_TARGET_DIR/release/liblance_host.so" python3 bench/recall.py
LANCE_HOST_LIB="$CARGO_TARGET_DIR/release/liblance_host.so" python3 bench/split_cost.py
LANCE_HOST_LIB="$CARGO_TARGET_DIR/release/liblance_host.so" python3 bench/paths.py --bin "$bin_dir/lance-host-bench-mimalloc"
LANCE_HOST_LIB="$CARGO_TARGET_DIR/release/liblance_host.so" python3 bench/scan_bounds.py --bin "$bin_dir/lance-host-bench-mimalloc"
LANCE_HOST_LIB="$CARGO_TARGET_DIR/release/liblance_host.so" python3 bench/scan_s3.py
python3 bench/engines.py --table "$table"
LANCE_HOST_LIB="$CARGO_TARGET_DIR/release/liblance_host.so" python3 bench/blobs_s3.py
LANCE_HOST_LIB="$CARGO_TARGET_DIR/release/liblance_host.so" python3 bench/write.py --rows "$rows"
LANCE_HOST_LIB="$CARGO_TARGET_DIR/release/liblance_host.so" python3 bench/index_build.py --rows "$rows"
