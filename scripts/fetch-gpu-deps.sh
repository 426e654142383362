#!/usr/bin/env bash
# Downloads the header-only Debian packages that a GPU-machine build of the kernels and the runtime
# needs (nlohmann-json, CLI11 for tessera-train's command line, Gloo's headers for c10d) into
# .gpu-deps/, so that tests/gpu/check.sh can unpack them there (the GPU machine reaches no registry).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$root/.gpu-deps"
cd "$root/.gpu-deps"
apt-get download nlohmann-json3-dev libcli11-dev libgloo-dev
ls -l "$root/.gpu-deps"
