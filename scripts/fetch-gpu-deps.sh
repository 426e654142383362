#!/usr/bin/env bash
# Downloads the header-only Debian packages that a GPU-machine build needs into .gpu-deps/, so that
# tests/gpu/check.sh can unpack them there (the GPU machine reaches no package registry).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$root/.gpu-deps"
cd "$root/.gpu-deps"
apt-get download nlohmann-json3-dev
ls -l "$root/.gpu-deps"
