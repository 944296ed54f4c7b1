#!/usr/bin/env bash
# Install the object-store emulators the storage tests start on 127.0.0.1 (tests/python/
# emulators.py), once per machine, into ~/.cache/lance-host/emulators:
# - Azurite 3.37.0 (Azure Blob Storage), from the npm registry;
# - fake-gcs-server v1.56.1 (Google Cloud Storage), built from the Go module proxy.
# Prints nothing when both are in place.
set -euo pipefail
AZURITE_VERSION=3.37.0
FAKE_GCS_VERSION=v1.56.1
dir="$HOME/.cache/lance-host/emulators"
mkdir -p "$dir"

install_apt() {
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

azurite="$dir/azurite/node_modules/.bin/azurite-blob"
if [ ! -x "$azurite" ] || [ "$(cat "$dir/azurite/VERSION" 2>/dev/null)" != "$AZURITE_VERSION" ]; then
  echo "==> installing Azurite $AZURITE_VERSION (npm)"
  command -v npm >/dev/null || install_apt nodejs npm
  rm -rf "$dir/azurite.tmp" && mkdir -p "$dir/azurite.tmp"
  # a package.json of its own, so npm installs here and not into a project found above
  echo '{"name": "lance-host-test-emulators", "private": true}' > "$dir/azurite.tmp/package.json"
  (cd "$dir/azurite.tmp" && npm install --silent --no-audit --no-fund --no-save "azurite@$AZURITE_VERSION" >/dev/null)
  echo "$AZURITE_VERSION" > "$dir/azurite.tmp/VERSION"
  rm -rf "$dir/azurite" && mv "$dir/azurite.tmp" "$dir/azurite"
fi

gcs="$dir/bin/fake-gcs-server"
if [ ! -x "$gcs" ] || [ "$(cat "$dir/bin/fake-gcs-server.version" 2>/dev/null)" != "$FAKE_GCS_VERSION" ]; then
  echo "==> building fake-gcs-server $FAKE_GCS_VERSION (Go)"
  command -v go >/dev/null || install_apt golang-go
  mkdir -p "$dir/bin"
  GOBIN="$dir/bin" GOFLAGS=-mod=mod go install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION"
  echo "$FAKE_GCS_VERSION" > "$dir/bin/fake-gcs-server.version"
fi
