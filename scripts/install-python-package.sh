#!/usr/bin/env bash
# Install the `lance_host` Python package the way a user does, from a wheel: build it with
# scripts/build-wheel.sh (bundling LANCE_HOST_LIB, default the tested build that
# scripts/build-lib.sh installed into build/prefix) and pip-install dist/'s wheel, so the tests
# use the build they test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-wheel.sh
wheel=$(ls dist/lance_host-*.whl)
echo "==> installing $wheel"
start=$(date +%s.%N)
args=(-q install --force-reinstall --no-deps "$wheel")
python3 -m pip "${args[@]}" || python3 -m pip "${args[@]}" --break-system-packages
echo "installed in $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s"
