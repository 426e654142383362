#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU (e.g. the lent H200, CUDA 13, PyTorch 2.11, no
# internet), build the kernels and the runtime (tessera-train, the NCCL communicator) against the
# machine's PyTorch and nvcc, run every CUDA kernel against its CPU reference and the NCCL checks,
# train GPT ~1.3B and ~350M in bf16 on synthetic tokens, then time each fused op (forward + backward)
# next to the ATen composition it replaces at GPT-1.3B sizes (fused_ops_bench: ratio, and the two
# results' agreement), and print a table: tokens/s, model
# TFLOP/s, MFU (against the GPU's dense bf16 peak), peak memory allocated (and reserved) — tessera-train
# (bf16, fp32 masters, the fused kernels) next to the same model in PyTorch eager and torch.compile on
# the same GPU, with the ratios, and tessera-train's peak against the planner's prediction (tessera
# profile, printed by tessera-train at start). Expected within the check's budget (570 s, the build
# included; not yet measured on an H200): a row starts only if it still fits, GPT-1.3B's eager and
# tessera-train rows (the targets) first, then GPT-350M's, then the fused-op timings, then torch.compile's (per block).
# A build that fails still leaves the PyTorch rows measured. The tables reach $OUT as they are written
# (a check killed by the device machine's limit still returns what it measured).
# `--dry-run` runs the same build steps here, on a machine without a GPU, against the CPU machine's
# LibTorch (the checks and the training rows then report "not run").
# `--prebuild` (here, before the GPU session) builds the same four binaries into build-gpu-prebuilt/ against
# this machine's LibTorch (the same CUDA-enabled torch wheel as the GPU machine's; ZeroMQ left out, the
# GPU machine has none) and copies them with a manifest (a hash of their sources, the torch and nvcc
# versions) into .gpu-prebuilt/ (ignored by git; carry it with .gpu-deps). On the GPU machine they are
# used instead of a build when the manifest matches the sources and the torch there and every library
# they need resolves against that torch; otherwise it builds as before. That saves the build's minutes
# of the budget for the rows.
# `--cpu-smoke` skips the build and the kernel and NCCL checks and runs the measuring half on the CPU
# with a tiny GPT and an already built tessera-train ($TESSERA_TRAIN): the reference script, the spec,
# the metrics and the table, so that the GPU's minutes are not spent on a mistake in this script. It
# fails unless every row was measured (CTest runs it: test_gpu_check_script).
#
# Header-only build dependencies missing on the GPU machine (nlohmann-json, CLI11, Gloo's headers)
# travel as .deb files in .gpu-deps/ (fill it with scripts/fetch-gpu-deps.sh; ignored by git; pass
# `carry: [".gpu-deps"]`). ZeroMQ is optional there: without it tessera-train does not report to an
# agent.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
# Every log, spec and metrics file goes to a fresh work folder; what comes back from a device machine
# ($OUT: it returns 8 files at most) is the tables and one archive of the rest, copied on exit, also
# when the check stops early.
out="${TESSERA_GPU_CHECK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/tessera-gpu-check.XXXXXX")}"
mkdir -p "$out"
results="${OUT:-}"
# publish: the tables so far into $OUT, after every check and row (the EXIT trap does not run on SIGKILL).
publish() {
  [ -n "$results" ] || return 0
  mkdir -p "$results"
  [ "$results" -ef "$out" ] && return 0
  for f in table.txt kernel_check.txt nccl_check.txt fused_ops_bench.txt; do
    if [ -f "$out/$f" ]; then cp "$out/$f" "$results/"; fi
  done
}
collect() {
  publish
  [ -n "$results" ] || return 0
  [ "$results" -ef "$out" ] && return 0
  if tar -czf "$results/logs.tar.gz" -C "$out" . 2>/dev/null && [ -z "${TESSERA_GPU_CHECK_DIR:-}" ]; then
    rm -rf "$out"  # a folder of our own, all of it in the archive
  fi
}
trap collect EXIT
echo "logs in $out${results:+; tables and logs.tar.gz to $results}"
# In the working tree (ignored by git) so that a second call on a still-warm device machine, which
# keeps ignored build outputs, rebuilds only what changed.
build="${TESSERA_GPU_BUILD_DIR:-$root/build-gpu}"
prefix="${TMPDIR:-/tmp}/tessera-gpu-deps"
python="${TESSERA_PYTHON:-python3}"
mode=gpu
case "${1:-}" in
  "") ;;
  --dry-run) mode=dry-run ;;
  --cpu-smoke) mode=cpu-smoke ;;
  --prebuild) mode=prebuild ;;
  *) echo "usage: $0 [--dry-run | --cpu-smoke | --prebuild]" >&2; exit 2 ;;
esac
[ -x "$root/.venv/bin/python" ] && [ "$mode" != gpu ] && python="$root/.venv/bin/python"
# A build folder of its own (a configuration without ZeroMQ), and no budget that a cold build on two
# cores would outrun.
peak_tflops="${TESSERA_PEAK_TFLOPS:-989}"  # H200 dense bf16 (resources/presets/gpus/h200.json)
check_start=$(date +%s)
budget_s="${TESSERA_GPU_CHECK_BUDGET_S:-570}"  # the whole check, build included
if [ "$mode" = prebuild ]; then
  build="${TESSERA_GPU_BUILD_DIR:-$root/build-gpu-prebuilt}"
  budget_s="${TESSERA_GPU_CHECK_BUDGET_S:-7200}"
fi

step() { printf '\n== %s\n' "$*"; }
# Every command that may hang runs under `timeout`, with a KILL 10 s after its TERM for one that ignores
# it (stuck in a driver call); timed_out STATUS: whether that status is such an end (124, or 137).
bounded() { timeout -k 10 "$@"; }
timed_out() { [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; }
seconds_left() { echo $(( budget_s - ($(date +%s) - check_start) )); }  # of the check's budget
not_built=250 over_budget=251  # the status of a check whose build failed, of one the budget left out (not timeout's)
status_of() {
  case "$1" in
    0) echo passed ;; 77) echo "not run (no GPU)" ;; "$not_built") echo "not built" ;;
    "$over_budget") echo "skipped (time budget)" ;; *) echo "FAILED ($1)" ;;
  esac
}
# The CUDA toolkit where the machine keeps it, after whatever PATH gives (CMake finds nvcc on PATH).
if ! command -v nvcc >/dev/null; then
  for cuda_bin in /usr/local/cuda/bin /usr/local/cuda-*/bin /opt/cuda/bin; do
    if [ -x "$cuda_bin/nvcc" ]; then PATH="$PATH:$cuda_bin"; break; fi
  done
fi

# What one row runs: the device, the rows' models ("name layers hidden heads micro-batch sequence
# vocabulary"), the steps (the first `warmup` not counted), the PyTorch variants. The spec is planned
# for the H200 in both modes and tessera-train runs the fused kernels in both (their CPU references in
# the smoke run), so the smoke run takes the GPU rows' path but for the device.
if [ "$mode" = cpu-smoke ]; then
  device=cpu; steps=6; warmup=2; impls=(eager)
  models=("tiny 2 64 4 2 64 512")
else
  device=cuda; steps=30; warmup=5; impls=(eager compile)
  models=("gpt-1.3b 24 2048 16 8 2048 50304" "gpt-350m 24 1024 16 8 2048 50304")
fi
cluster_gpu=h200
failed_rows=0

step "machine"
bounded 20 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi (no GPU here)"
{ command -v nvcc >/dev/null && nvcc --version | tail -1; } || echo "no nvcc on PATH"
for tool in cmake ninja g++ pkg-config; do
  if command -v "$tool" >/dev/null; then echo "$tool $("$tool" --version 2>&1 | head -1)"; else echo "no $tool on PATH"; fi
done
bounded 60 "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())' ||
  echo "importing torch FAILED or hung: the build below needs torch.utils.cmake_prefix_path"

prebuilt="$root/.gpu-prebuilt"
binaries=(kernel_check tessera-train nccl_check fused_ops_bench)
# What the prebuilt binaries were built from: every file of the build's sources (the tests are not
# built), so that binaries of other sources are never measured as these.
source_hash() {
  (cd "$root" && find CMakeLists.txt cmake backend kernels runtime resources/presets -type f -print0 | LC_ALL=C sort -z |
    xargs -0 sha256sum | sha256sum | cut -c1-16)
}
# LibTorch's library folders of this machine's torch (its lib/ and the nvidia wheels' beside it).
torch_library_path() {
  "$python" -c 'import glob, os, torch
lib = os.path.join(os.path.dirname(torch.__file__), "lib")
print(":".join([lib] + sorted(glob.glob(os.path.join(os.path.dirname(os.path.dirname(torch.__file__)), "nvidia", "*", "lib")))))'
}
# Uses .gpu-prebuilt/ when it was built from these sources against this torch and loads here: sets
# bin_* and LD_LIBRARY_PATH (their RUNPATH names the building machine's folders). False, saying why, otherwise.
use_prebuilt() {
  [ -f "$prebuilt/manifest.txt" ] || return 1
  step "prebuilt binaries (.gpu-prebuilt/, from tests/gpu/check.sh --prebuild)"
  cat "$prebuilt/manifest.txt"
  local want have torch_want torch_have libs b
  want=$(sed -n 's/^sources //p' "$prebuilt/manifest.txt")
  have=$(source_hash)
  if [ "$want" != "$have" ]; then echo "not used: built from other sources ($want; these are $have)"; return 1; fi
  torch_want=$(sed -n 's/^torch //p' "$prebuilt/manifest.txt")
  torch_have=$(bounded 60 "$python" -c 'import torch; print(torch.__version__)' 2>/dev/null || true)
  if [ "$torch_want" != "$torch_have" ]; then echo "not used: built against torch $torch_want, this machine has ${torch_have:-none}"; return 1; fi
  libs=$(torch_library_path) || { echo "not used: torch's library folders not found"; return 1; }
  libs="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  for b in "${binaries[@]}"; do
    if [ ! -x "$prebuilt/$b" ]; then echo "not used: no $b"; return 1; fi
    if LD_LIBRARY_PATH="$libs" ldd "$prebuilt/$b" | grep "not found"; then
      echo "not used: $b needs the libraries above"; return 1
    fi
  done
  if ! LD_LIBRARY_PATH="$libs" bounded 60 "$prebuilt/tessera-train" --help > /dev/null 2>&1; then
    echo "not used: tessera-train --help failed"; return 1
  fi
  export LD_LIBRARY_PATH="$libs"
  bin_kernel_check="$prebuilt/kernel_check" bin_nccl_check="$prebuilt/nccl_check" bin_fused="$prebuilt/fused_ops_bench"
  train="$prebuilt/tessera-train"
  echo "used: no build here"
}

# Builds the GPU configuration against the machine's PyTorch and nvcc (or uses the prebuilt binaries)
# and runs the kernel and NCCL checks; sets kernels and nccl (their exit status: 77 = not run, no GPU;
# $not_built) and train (empty when the build failed: the PyTorch rows are measured all the same).
build_and_check() {
  kernels=$not_built; nccl=$not_built; fused=$not_built; train=""
  if [ "$mode" = gpu ] && use_prebuilt; then
    run_checks
    return 0
  fi
  step "dependencies"
  mkdir -p "$prefix"
  if compgen -G "$root/.gpu-deps/*.deb" >/dev/null; then
    for deb in "$root"/.gpu-deps/*.deb; do dpkg -x "$deb" "$prefix"; done
    echo "unpacked $(ls "$root"/.gpu-deps/*.deb | wc -l) packages into $prefix"
  fi
  torch_prefix="$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')"

  step "configure and build (kernels for sm_80 and sm_90, tessera-train, nccl_check, fused_ops_bench)"
  start=$(date +%s)
  local generator="Unix Makefiles"
  command -v ninja >/dev/null && generator=Ninja
  [ -f "$build/CMakeCache.txt" ] && generator=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$build/CMakeCache.txt")
  local configure_flags=()
  # The prebuilt binaries run where no ZeroMQ is: tessera_wire is left out (find_package(PkgConfig) fails).
  [ "$mode" = prebuild ] && configure_flags+=(-DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON)
  if ! bounded 150 cmake -S "$root" -B "$build" -G "$generator" -DCMAKE_BUILD_TYPE=Release -DTESSERA_WITH_CUDA=ON \
    -DTESSERA_BUILD_CLI=OFF -DTESSERA_BUILD_GUI=OFF -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_RUNTIME=ON \
    -DCMAKE_PREFIX_PATH="$prefix/usr;$torch_prefix" "${configure_flags[@]}" > "$out/configure.log" 2>&1; then
    tail -30 "$out/configure.log"
    echo "configure FAILED: no tessera-train row or check; the PyTorch rows are measured all the same"
    return 0
  fi
  # Bounded, so that a build that cannot finish leaves the PyTorch rows their time (about 150 s).
  local left
  left=$(seconds_left)
  local build_limit=$(( left - 150 > 60 ? left - 150 : 60 ))
  if ! bounded "$build_limit" cmake --build "$build" --parallel "$(nproc)" \
    --target kernel_check tessera-train nccl_check fused_ops_bench > "$out/build.log" 2>&1; then
    tail -40 "$out/build.log"
    echo "build FAILED or cut at ${build_limit} s: no tessera-train row or check; the PyTorch rows are measured all the same"
    return 0
  fi
  echo "built in $(( $(date +%s) - start )) s"
  train="$build/runtime/tessera-train"
  bin_kernel_check="$build/kernels/kernel_check" bin_nccl_check="$build/runtime/nccl_check" bin_fused="$build/runtime/fused_ops_bench"
  if [ "$mode" = prebuild ]; then package_prebuilt; return 0; fi
  run_checks
}

# The built binaries into .gpu-prebuilt/ with their manifest (--prebuild).
package_prebuilt() {
  step "prebuilt binaries into $prebuilt"
  if ldd "$train" | grep -q libzmq; then
    echo "tessera-train links libzmq, which the GPU machine lacks: not packed" >&2
    train=""
    return 0
  fi
  rm -rf "$prebuilt"
  mkdir -p "$prebuilt"
  cp "$bin_kernel_check" "$train" "$bin_nccl_check" "$bin_fused" "$prebuilt/"
  {
    echo "sources $(source_hash)"
    echo "torch $("$python" -c 'import torch; print(torch.__version__)')"
    echo "nvcc $(nvcc --version | tail -1)"
    echo "built $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m), $(ldd --version | head -1)"
  } > "$prebuilt/manifest.txt"
  cat "$prebuilt/manifest.txt"
  du -sh "$prebuilt"
}

run_checks() {
  step "CUDA kernels against their CPU references"
  set +e
  bounded 90 "$bin_kernel_check" | tee "$out/kernel_check.txt"  # a hang ends as 124 (or 137), not the whole run
  kernels=${PIPESTATUS[0]}
  publish
  step "NCCL communicator"
  NCCL_DEBUG="${NCCL_DEBUG:-WARN}" bounded 90 "$bin_nccl_check" | tee "$out/nccl_check.txt"
  nccl=${PIPESTATUS[0]}
  publish
  set -e
  echo "kernels: $(status_of "$kernels"); NCCL: $(status_of "$nccl")"
}

# The fused ops against ATen at GPT-1.3B sizes, after the eager and tessera-train rows (they decide the
# targets) and before torch.compile's (the slowest to start, and the least needed), when the budget
# still has room; sets fused.
fused_ops_timings() {
  [ -n "$train" ] || return 0
  step "fused ops against ATen: bf16, 16384 tokens, hidden 2048, MLP 8192, 16 heads, vocabulary 50304, AdamW over 1.3B weights"
  local left
  left=$(seconds_left)
  if [ "$left" -lt 40 ]; then
    echo "skipped: ${left} s left of the ${budget_s} s budget" | tee "$out/fused_ops_bench.txt"
    fused=$over_budget
    publish
    return 0
  fi
  set +e
  bounded $(( left < 120 ? left : 120 )) "$bin_fused" --device cuda --dtype bf16 | tee "$out/fused_ops_bench.txt"
  fused=${PIPESTATUS[0]}
  set -e
  timed_out "$fused" && [ "$left" -lt 120 ] && fused=$over_budget  # cut by the budget, not hung
  publish
  echo "fused ops: $(status_of "$fused")"
}

if [ "$mode" = cpu-smoke ]; then
  train="${TESSERA_TRAIN:?--cpu-smoke measures an already built tessera-train: set TESSERA_TRAIN to it}"
  [ -x "$train" ] || { echo "TESSERA_TRAIN=$train is not an executable" >&2; exit 2; }
  kernels=77; nccl=77; fused=77
else
  build_and_check
fi
if [ "$mode" = prebuild ]; then
  [ -n "$train" ] || exit 1
  echo "carry .gpu-prebuilt with .gpu-deps: the GPU check uses these binaries while the sources stay as they are"
  exit 0
fi

step "GPT bf16 training on $device: tessera-train against PyTorch ${impls[*]} (synthetic tokens, $steps steps, $warmup warm-up)"
table="$out/table.txt"
printf '%-9s %-16s %12s %10s %7s %14s %10s %s\n' model implementation tokens/s TFLOP/s MFU "peak memory" "vs eager" \
  "(reserved; planner's prediction)" > "$table"
# One row of the PyTorch reference: pytorch_row MODEL-LINE IMPL (eager or compile).
declare -A eager_tps=()
pytorch_row() {
  local name layers hidden heads mbs seq vocab impl=$2 flag="" line rc tps problem=""
  read -r name layers hidden heads mbs seq vocab <<<"$1"
  [ "$impl" = compile ] && flag="--compile"
  if [ "$impl" = compile ]; then within_budget 100 150 "$name" "pytorch-$impl" || return 0
  else within_budget 60 150 "$name" "pytorch-$impl" || return 0; fi
  set +e
  line=$(bounded "$row_limit" "$python" "$root/tests/gpu/pytorch_gpt_reference.py" --device "$device" --layers "$layers" \
    --hidden "$hidden" --heads "$heads" --batch "$mbs" --seq "$seq" --vocab "$vocab" --steps "$steps" \
    --warmup "$warmup" --peak-tflops "$peak_tflops" $flag 2>"$out/$name-$impl.err" | tail -1)  # its JSON line, whatever else reaches stdout
  rc=$?
  set -e
  echo "$line" > "$out/$name-$impl.json"
  if [ "$rc" -eq 0 ] && ! tps=$("$python" -c 'import json,sys; print(json.loads(sys.argv[1])["tokens_per_s"])' "$line" 2>&1); then
    problem="its output is not the JSON line: $(tail -1 <<<"$tps")"
  fi
  if [ -n "$problem" ]; then
    row_not_measured "$name" "pytorch-$impl" 1 "$problem"
  elif [ "$rc" -eq 0 ]; then
    [ "$impl" = eager ] && eager_tps[$name]=$tps
    "$python" - "$line" "$name" "pytorch-$impl" "${eager_tps[$name]:-0}" >> "$table" <<'PY' || row_not_measured "$name" "pytorch-$impl" 1 "its JSON line lacks a field"
import json, sys
r = json.loads(sys.argv[1]); eager = float(sys.argv[4])
ratio = f"{r['tokens_per_s'] / eager:.2f}" if eager > 0 else "-"
print(f"{sys.argv[2]:<9} {sys.argv[3]:<16} {r['tokens_per_s']:12.0f} {r['model_tflops']:10.1f} {100 * r['mfu']:6.1f}% "
      f"{r['peak_allocated_bytes'] / 2**30:10.1f} GiB {ratio:>10} ({r['peak_reserved_bytes'] / 2**30:.1f} GiB)")
PY
  else
    row_not_measured "$name" "pytorch-$impl" "$rc" "$(tail -1 "$out/$name-$impl.err")"
  fi
}

# tessera-train on the same model: bf16 with fp32 masters, the fused kernels (the default on CUDA). Its
# MFU is taken against the same peak as the PyTorch rows ($peak_tflops), not the one tessera-train
# detected, so that TESSERA_PEAK_TFLOPS moves every row alike.
tessera_row() {
  local name layers hidden heads mbs seq vocab spec rc
  read -r name layers hidden heads mbs seq vocab <<<"$1"
  if [ -z "$train" ]; then
    printf '%-9s %-16s %s\n' "$name" tessera-train "not built (build.log, configure.log)" >> "$table"
    failed_rows=$((failed_rows + 1))
    return 0
  fi
  within_budget 75 240 "$name" tessera-train || return 0
  spec="$out/$name.json"
  "$python" - "$spec" "$layers" "$hidden" "$heads" "$mbs" "$seq" "$vocab" "$steps" "$cluster_gpu" <<'PY'
import json, sys
path, (layers, hidden, heads, mbs, seq, vocab, steps), gpu = sys.argv[1], map(int, sys.argv[2:9]), sys.argv[9]
json.dump({"name": path.rsplit("/", 1)[-1][:-5] + " bf16 (GPU check)", "model": {"arch": "gpt", "num_layers": layers, "hidden_size": hidden,
           "num_attention_heads": heads, "ffn_hidden_size": 4 * hidden, "seq_length": seq, "vocab_size": vocab},
           "parallel": {"tp": 1, "pp": 1, "dp": 1},
           "training": {"micro_batch_size": mbs, "global_batch_size": mbs, "precision": "bf16", "train_steps": steps,
                        "warmup_steps": min(10, steps)},
           "cluster": {"gpu": gpu, "nodes": 1, "gpus_per_node": 1}}, open(path, "w"))
PY
  set +e
  rm -rf "$out/$name-tessera"
  bounded "$row_limit" "$train" --spec "$spec" --device "$device" --kernels fused --data synthetic --no-checkpoint --out "$out/$name-tessera" \
    > "$out/$name-tessera.log" 2>&1
  rc=$?
  set -e
  if [ "$rc" -eq 0 ]; then
    "$python" - "$out/$name-tessera/metrics.jsonl" "$name" "${eager_tps[$name]:-0}" "$out/$name-tessera.log" "$warmup" "$peak_tflops" >> "$table" <<'PY' || row_not_measured "$name" tessera-train 1 "metrics.jsonl lacks a field"
import json, re, statistics, sys
steps = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "step"][int(sys.argv[5]):]
tps = statistics.median(r["tokens_per_s"] for r in steps); eager = float(sys.argv[3])
tf = statistics.median(r["model_tflops"] for r in steps); mfu = tf / float(sys.argv[6])
peak = max(r["peak_memory_bytes"] for r in steps); reserved = max(r["peak_reserved_bytes"] for r in steps)
ratio = f"{tps / eager:.2f}" if eager > 0 else "-"
predicted = re.search(r"predicts per-GPU peak memory: stage 0 ([0-9.]+) MiB", open(sys.argv[4]).read())
vs = f"; predicted {float(predicted.group(1)) / 1024:.1f} GiB, measured/predicted {peak / 2**20 / float(predicted.group(1)):.3f}" if predicted else ""
print(f"{sys.argv[2]:<9} {'tessera-train':<16} {tps:12.0f} {tf:10.1f} {100 * mfu:6.1f}% {peak / 2**30:10.1f} GiB {ratio:>10} "
      f"({reserved / 2**30:.1f} GiB{vs})")
PY
    # Fast is worth nothing if the numbers are wrong: every loss and gradient norm finite, the first loss
    # near ln V (a model that starts close to uniform; the initial logits' spread adds ~0.4 at 1.3B), and
    # none more than 1 above it (no divergence). Whether it falls is said, not required: a few dozen steps
    # at lr 3e-4 after a warm-up need not learn the synthetic progressions yet. A row that fails this keeps
    # its figures but counts as failed.
    local loss_line
    if ! loss_line=$("$python" - "$out/$name-tessera/metrics.jsonl" "$name" "$vocab" 2>>"$out/$name-loss-check.err" <<'PY'
import json, math, sys
steps = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "step" and r["rank"] == 0]
ln_v = math.log(int(sys.argv[3]))
first, last = steps[0], steps[-1]
line = (f"{sys.argv[2]} tessera-train loss: {first['loss']:.3f} at step {first['step']}, {last['loss']:.3f} at step "
        f"{last['step']} (ln V = {ln_v:.3f})")
bad = [r["step"] for r in steps if not (math.isfinite(r["loss"]) and math.isfinite(r["grad_norm"]))]
problem = (f"loss or gradient norm not finite from step {bad[0]}" if bad else
           "the first is not within 1.5 of ln V" if abs(first["loss"] - ln_v) > 1.5 else
           "it diverged (more than 1 above the first)" if max(r["loss"] for r in steps) > first["loss"] + 1 else "")
trend = "falling" if last["loss"] < first["loss"] else "not falling yet"
print(f"{line}: {'FAILED, ' + problem if problem else 'finite, ' + trend}")
sys.exit(1 if problem else 0)
PY
    ); then
      failed_rows=$((failed_rows + 1))
    fi
    loss_notes+=("${loss_line:-$name tessera-train loss: unreadable}")
  else
    row_not_measured "$name" tessera-train "$rc" \
      "$( (grep -m1 -- '--device' "$out/$name-tessera.log" || grep -m1 -i error "$out/$name-tessera.log" || tail -1 "$out/$name-tessera.log") | cut -c1-200)"
  fi
}

# within_budget EXPECTED LIMIT MODEL IMPL: a row starts only if the time it is expected to take (on one
# H200: estimates, not yet measured) still fits in the budget (the device machine's command limit is 10
# minutes), and then runs for at most LIMIT seconds or what is left of the budget ($row_limit);
# otherwise it is listed as skipped, not failed, and the rows run so far stand (row_not_measured).
within_budget() {
  local expected=$1 limit=$2 left
  left=$(seconds_left)
  if [ "$expected" -le "$left" ]; then
    row_limit=$(( limit < left ? limit : left ))
    row_cut=$(( row_limit < limit ))
    return 0
  fi
  printf '%-9s %-16s %s\n' "$3" "$4" "skipped: $(( budget_s - left )) s used of the ${budget_s} s budget, the row takes about ${expected} s" >> "$table"
  skipped_rows=$((skipped_rows + 1))
  return 1
}

# row_not_measured MODEL IMPL RC DETAIL: a row killed when the budget it was cut to ran out (timed_out)
# is listed as skipped, like one that did not start; any other end as failed.
row_not_measured() {
  if timed_out "$3" && [ "$row_cut" -eq 1 ]; then
    printf '%-9s %-16s %s\n' "$1" "$2" "skipped: the budget ran out after the row's ${row_limit} s" >> "$table"
    skipped_rows=$((skipped_rows + 1))
  else
    printf '%-9s %-16s %s\n' "$1" "$2" "$(status_of "$3"): $4" >> "$table"
    failed_rows=$((failed_rows + 1))
  fi
}

# Largest model first (GPT-1.3B decides the targets): PyTorch eager and tessera-train of each model,
# then the fused-op timings, then torch.compile of each, whose compilation is the slowest and least
# predictable part.
skipped_rows=0
loss_notes=()  # tessera-train's loss check of each row that ran
row_limit=0
row_cut=0
for m in "${models[@]}"; do
  pytorch_row "$m" eager; publish
  tessera_row "$m"; publish
done
[ "$mode" = cpu-smoke ] || fused_ops_timings
for impl in "${impls[@]}"; do
  [ "$impl" = eager ] && continue
  for m in "${models[@]}"; do pytorch_row "$m" "$impl"; publish; done
done
# What the rows are: the same model (the parameter counts each side gives) and which peak MFU is of.
{
  echo
  echo "PyTorch rows: bf16 autocast (AMP: fp32 weights, norms and residual stream in fp32), fused AdamW;"
  echo "tessera-train: bf16 weights and activations, fp32 master weights and gradient reduction, the fused kernels."
  echo "MFU: model FLOPs (attention counted in full) over the dense bf16 datasheet peak, ${peak_tflops} TFLOP/s."
  for m in "${models[@]}"; do
    read -r name _ <<<"$m"
    # "-" where a row did not run.
    theirs=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["params"])' "$out/$name-eager.json" 2>/dev/null || true)
    ours=$(sed -n 's/^rank 0 holds \([0-9]*\) parameters.*/\1/p' "$out/$name-tessera.log" 2>/dev/null | head -1 || true)
    echo "$name parameters: PyTorch ${theirs:--}, tessera-train ${ours:--}"
    # The kernel scaled_dot_product_attention picked for tessera-train ("math" keeps every score).
    attention=$(sed -n 's/^rank 0 holds .*; attention: \(.*\)$/\1/p' "$out/$name-tessera.log" 2>/dev/null | head -1 || true)
    echo "$name tessera-train attention: ${attention:--}"
    for note in "${loss_notes[@]}"; do [[ "$note" == "$name "* ]] && echo "$note"; done
    # The same split of PyTorch eager's step (CUDA events around the forward with the loss and the backward).
    "$python" - "$out/$name-eager.json" "$name" <<'PY' 2>/dev/null || echo "$name pytorch-eager step: -"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]} pytorch-eager step: {r['step_ms']:.1f} ms; medians: forward {r['forward_ms']:.1f} ms, backward "
      f"{r['backward_ms']:.1f} ms, the rest {r['rest_ms']:.1f} ms (clipping, AdamW)")
PY
    # Where tessera-train's step goes (rank 0's timeline records of the measured steps), so that one run
    # already says what to look at when MFU falls short: the forward, the backward or the rest.
    if [ -f "$out/$name-tessera/metrics.jsonl" ]; then
      "$python" - "$out/$name-tessera/metrics.jsonl" "$name" "$warmup" <<'PY' || echo "$name tessera-train step: -"
import collections, json, statistics, sys
records = [json.loads(line) for line in open(sys.argv[1])]
steps = [r for r in records if r["type"] == "step" and r["rank"] == 0][int(sys.argv[3]):]
ops = collections.defaultdict(lambda: collections.defaultdict(float))  # step -> op -> seconds
for r in records:
    if r["type"] == "timeline" and r["rank"] == 0:
        ops[r["step"]][r["op"]] += r["end_s"] - r["start_s"]
def median_ms(values): return 1e3 * statistics.median(values)
forward = median_ms([ops[s["step"]]["F"] for s in steps])
backward = median_ms([sum(t for op, t in ops[s["step"]].items() if op != "F") for s in steps])  # B, or Bi and W
rest = median_ms([s["step_time_s"] - sum(ops[s["step"]].values()) for s in steps])
print(f"{sys.argv[2]} tessera-train step: {median_ms([s['step_time_s'] for s in steps]):.1f} ms; medians over "
      f"{len(steps)} steps: forward {forward:.1f} ms, backward {backward:.1f} ms, the rest {rest:.1f} ms "
      f"(loss and gradient norm, optimizer, copies; with pp > 1 the bubble too), "
      f"communication {median_ms([s['comm_s'] for s in steps]):.1f} ms")
PY
    fi
  done
} >> "$table"
publish
cat "$table"

if [ "$mode" = cpu-smoke ]; then
  echo "(CPU smoke run of the measuring steps: no GPU figure; $failed_rows rows failed, $skipped_rows skipped)"
  [ "$failed_rows" -eq 0 ] && [ "$skipped_rows" -eq 0 ] || exit 1
  # Both sides train the same model: the parameter counts under the table agree.
  if ! grep -Eq '^[^ ]+ parameters: PyTorch ([0-9]+), tessera-train \1$' "$table"; then
    echo "the parameter counts under the table are missing or differ" >&2
    exit 1
  fi
  if ! grep -Eq '^[^ ]+ tessera-train loss: [0-9.]+ at step 1, [0-9.]+ at step [0-9]+ \(ln V = [0-9.]+\): finite, (falling|not falling yet)$' "$table"; then
    echo "the loss check under the table is missing" >&2
    exit 1
  fi
  if ! grep -Eq '^[^ ]+ tessera-train step: [0-9.]+ ms; medians over [0-9]+ steps: forward [0-9.]+ ms, backward [0-9.]+ ms' "$table" ||
     ! grep -Eq '^[^ ]+ pytorch-eager step: [0-9.]+ ms; medians: forward [0-9.]+ ms, backward [0-9.]+ ms' "$table"; then
    echo "a step breakdown under the table is missing" >&2
    exit 1
  fi
  exit 0
fi
if [ "$kernels" -eq 77 ] || [ "$nccl" -eq 77 ]; then
  echo "(no GPU: the checks were built but not run; no GPU figure was measured)"
  [ "$mode" = dry-run ] && exit 0
  exit 1
fi
[ "$skipped_rows" -eq 0 ] && [ "$fused" -ne "$over_budget" ] ||
  echo "(rows or the fused-op timings skipped for the time budget: rerun them with a larger TESSERA_GPU_CHECK_BUDGET_S)"
echo "kernels: $(status_of "$kernels"); NCCL: $(status_of "$nccl"); fused ops: $(status_of "$fused"); $failed_rows rows failed, $skipped_rows skipped; $(( $(date +%s) - check_start )) s"
# Complete only when every check passed and every row was measured.
[ "$kernels" -eq 0 ] && [ "$nccl" -eq 0 ] && [ "$fused" -eq 0 ] && [ "$failed_rows" -eq 0 ] && [ "$skipped_rows" -eq 0 ]
