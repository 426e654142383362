#!/usr/bin/env bash
# Set-up command 1 of 2: installs what is missing, builds into build/, then starts the workbench.
# With no display (or until the GUI is built) it runs the headless demo instead: the planner on two
# published layouts, then a tiny GPT trained with TP2·PP2·DP2 on this machine's CPUs through the local
# agent, streamed into the default history (tagged "demo"), and that history (the run compared with
# the demo run before it).
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
echo
tessera_log "headless demo: training tiny-gpt with TP2·PP2·DP2 (8 ranks on the CPU, 200 steps, ~40 s on 2 cores) through the local agent"
launch_log="$(mktemp)"
trap 'rm -f "$launch_log"' EXIT
"$cli" launch "$TESSERA_ROOT/resources/examples/tiny-3d.json" --follow --tag demo | tee "$launch_log"
run_id="$(sed -n 's/^run \([0-9a-f]\{32\}\) .* started: .*/\1/p' "$launch_log" | head -1)"
echo
tessera_log "headless demo: the run history (tessera-cli runs list --tag demo; the workbench's History tab with a display)"
demo_runs="$("$cli" runs list --tag demo)"
echo "$demo_runs"
# This run next to the demo run before it (the same spec and seed: the same losses), else its summary.
previous="$(awk 'NR > 2 && $1 != substr(id, 1, length($1)) { print $1; exit }' id="$run_id" <<<"$demo_runs")"
if [ -n "$run_id" ] && [ -n "$previous" ]; then
  echo
  "$cli" runs compare "$run_id" "$previous"
elif [ -n "$run_id" ]; then
  echo
  "$cli" runs show "$run_id" | sed '/^metric /,$d'  # its summary, without the list of series
fi
