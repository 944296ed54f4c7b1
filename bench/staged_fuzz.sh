#!/usr/bin/env bash
# The long run of the staged-bytes fuzzer (tests/integration/commit_checks.rs): staged bytes
# mutated, truncated, spliced, resealed and swapped between tables, each committed to a fresh
# copy of a table in child processes; every commit must be refused with a code and leave the
# table as it was, or commit exactly what the unmutated share commits. ./test.sh runs 3 children
# of 8 commits; this runs SEEDS children of ITERS commits from seed FIRST.
#   bench/staged_fuzz.sh [SEEDS=50] [ITERS=50] [FIRST=1]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lance-host/target}"
LANCE_HOST_STAGED_FUZZ_SEEDS="${1:-50}" LANCE_HOST_STAGED_FUZZ_ITERS="${2:-50}" LANCE_HOST_STAGED_FUZZ_SEED="${3:-1}" \
  cargo test --test integration -- --exact commit_checks::staged_bytes_fuzz_commits_refuse_cleanly_or_equal_the_unmutated_commit
