#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU (e.g. the lent H200, CUDA 13, PyTorch 2.11, no
# internet), build the kernels against the machine's PyTorch and nvcc, run every CUDA kernel
# against its CPU reference, and print a table. `--dry-run` runs the same build steps here, on a
# machine without a GPU (the checks then report "not run").
#
# Header-only build dependencies missing on the GPU machine travel as .deb files in .gpu-deps/
# (fill it with scripts/fetch-gpu-deps.sh; ignored by git; pass `carry: [".gpu-deps"]`).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-${TMPDIR:-/tmp}/tessera-gpu-check}"
mkdir -p "$out"
build="${TESSERA_GPU_BUILD_DIR:-/tmp/tessera-gpu-build}"
prefix="${TMPDIR:-/tmp}/tessera-gpu-deps"
python="${TESSERA_PYTHON:-python3}"
[ -x "$root/.venv/bin/python" ] && [ "${1:-}" = "--dry-run" ] && python="$root/.venv/bin/python"

step() { printf '\n== %s\n' "$*"; }

step "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi (no GPU here)"
nvcc --version | tail -1
"$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())'

step "dependencies"
mkdir -p "$prefix"
if compgen -G "$root/.gpu-deps/*.deb" >/dev/null; then
  for deb in "$root"/.gpu-deps/*.deb; do dpkg -x "$deb" "$prefix"; done
  echo "unpacked $(ls "$root"/.gpu-deps/*.deb | wc -l) packages into $prefix"
fi
torch_prefix="$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')"

step "configure and build (kernels, sm_80 and sm_90)"
start=$(date +%s)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_WITH_CUDA=ON \
  -DTESSERA_BUILD_CLI=OFF -DTESSERA_BUILD_GUI=OFF -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_RUNTIME=OFF \
  -DCMAKE_PREFIX_PATH="$prefix/usr;$torch_prefix" > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build "$build" --parallel "$(nproc)" --target kernel_check > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
echo "built in $(( $(date +%s) - start )) s"

step "CUDA kernels against their CPU references"
set +e
"$build/kernels/kernel_check" | tee "$out/kernel_check.txt"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -eq 77 ]; then
  echo "(no GPU: the kernel checks were built but not run)"
  [ "${1:-}" = "--dry-run" ] && exit 0
  exit 1
fi
exit "$status"
