#!/usr/bin/env bash
# Set-up command 2 of 2: installs what is missing, builds into build/, runs every test through CTest.
set -euo pipefail
source "$(dirname "$0")/scripts/setup-common.sh"
tessera_install_debian_packages
tessera_install_torch
tessera_build
tessera_log "running the tests"
cd "$TESSERA_BUILD_DIR"
ctest --output-on-failure --parallel "$(nproc)" "$@"
