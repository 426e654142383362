#!/usr/bin/env bash
# Renders the user guide's planning pictures (docs/images/*: designer, grid, memory, timeline,
# search) with the workbench's own headless mode, so that a change of the planner's figures or of a
# view is followed by one command. The run pictures (dashboard, history, comparison, launch) need a
# run history and are made as the user guide's "Screenshots and scripting" section says.
# Usage: scripts/render-doc-pictures.sh [BUILD_DIR [OUT_DIR]]   (defaults: build, docs/images)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-docs/images}
app="$build/app/tessera"
[[ -x "$app" ]] || { echo "render-doc-pictures: $app not found; build first (./test.sh or cmake --build $build)" >&2; exit 2; }
mkdir -p "$out"
export QT_QPA_PLATFORM=offscreen
llama=resources/examples/llama3-70b-64xh100.json
gpt3=resources/examples/gpt3-175b-table1.json
render() {  # NAME SPEC ARGS...
  local name=$1 spec=$2
  shift 2
  "$app" --spec "$spec" "$@" --screenshot "$out/$name.png" --size "${size:-1600x1000}"
  echo "$out/$name.png"
}
render llama3-70b-designer "$llama" --view designer
render llama3-70b-invalid-tp "$llama" --set parallel.tp=3 --view designer
render llama3-70b-grid "$llama" --view grid
render llama3-70b-grid-rank45 "$llama" --view grid --select-rank 45
render llama3-70b-memory "$llama" --view memory
render llama3-70b-memory-mbs4-oom "$llama" --set training.micro_batch_size=4 --view memory
render llama3-70b-timeline "$llama" --view timeline
render llama3-70b-timeline-vs-gpipe "$llama" --view timeline --compare gpipe --time-range 0:4
size=1200x760 render llama3-70b-search "$llama" --view search
render gpt3-175b-designer "$gpt3" --view designer
render gpt3-175b-grid "$gpt3" --view grid --select-rank 100
render gpt3-175b-memory "$gpt3" --view memory
render gpt3-175b-timeline "$gpt3" --view timeline
render gpt3-175b-timeline-step-end "$gpt3" --view timeline --time-range 27.6:29.0
render gpt3-175b-timeline-vs-zbh1-dark "$gpt3" --view timeline --compare zb-h1 --palette dark --time-range 0:6
llama405=resources/examples/llama3-405b-8192xh100.json
render llama3-405b-memory "$llama405" --view memory
size=1200x760 render llama3-405b-search "$llama405" --view search
