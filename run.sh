#!/usr/bin/env bash
# Set-up command 1 of 2: installs what is missing, builds into build/, then starts the workbench.
# With no display (or until the GUI is built) it runs the headless planner demo instead.
set -euo pipefail
source "$(dirname "$0")/scripts/setup-common.sh"
tessera_install_debian_packages
tessera_install_torch
tessera_build
cli="$TESSERA_BUILD_DIR/app/tessera-cli"
gui="$TESSERA_BUILD_DIR/app/tessera"
if [ -x "$gui" ] && [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec "$gui" "$@"
fi
tessera_log "headless demo: planning Llama-3-70B on 64 H100s (TP8·PP4·DP2) and GPT-3 175B on the Narayanan et al. layout"
"$cli" plan "$TESSERA_ROOT/resources/examples/llama3-70b-64xh100.json"
echo
"$cli" plan "$TESSERA_ROOT/resources/examples/gpt3-175b-table1.json"
