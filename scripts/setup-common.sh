# Shared by run.sh and test.sh: install what is missing (Debian packages, the pinned torch wheel),
# then configure and build into build/. Sourced, not run.

TESSERA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
TESSERA_BUILD_DIR="${TESSERA_BUILD_DIR:-$TESSERA_ROOT/build}"
# The runtime's LibTorch comes from this wheel (see docs/architecture.md); the GPU machine has 2.11 too.
TESSERA_TORCH_VERSION="2.11.0"

# Debian packages the build and the tests need, with a file that proves each is present.
TESSERA_DEB_PACKAGES=(
  "cmake:/usr/bin/cmake"
  "g++:/usr/bin/g++"
  "ninja-build:/usr/bin/ninja"
  "ccache:/usr/bin/ccache"
  "pkg-config:/usr/bin/pkg-config"
  "qt6-base-dev:/usr/lib/x86_64-linux-gnu/cmake/Qt6Widgets/Qt6WidgetsConfig.cmake"
  "libqcustomplot-dev:/usr/lib/x86_64-linux-gnu/cmake/QCustomPlotQt6/QCustomPlotQt6Config.cmake"
  "libzmq3-dev:/usr/include/zmq.h"
  "cppzmq-dev:/usr/include/zmq.hpp"
  "libsqlite3-dev:/usr/include/sqlite3.h"
  "nlohmann-json3-dev:/usr/include/nlohmann/json.hpp"
  "libcli11-dev:/usr/include/CLI/CLI.hpp"
  "libgloo-dev:/usr/include/gloo/algorithm.h"
  "python3-venv:/usr/lib/python3/dist-packages/venv"
  "xvfb:/usr/bin/xvfb-run"
  "xauth:/usr/bin/xauth"
)

tessera_log() { printf '\033[1m[tessera]\033[0m %s\n' "$*"; }

tessera_install_debian_packages() {
  local missing=()
  for entry in "${TESSERA_DEB_PACKAGES[@]}"; do
    local pkg="${entry%%:*}" probe="${entry#*:}"
    # python3-venv is only needed when the runtime's torch wheel is installed.
    if [ "$pkg" = "python3-venv" ] && python3 -c 'import venv, ensurepip' 2>/dev/null; then continue; fi
    [ -e "$probe" ] || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    tessera_log "missing Debian packages; run this, then start again:"
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}"
    exit 1
  fi
  tessera_log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# The pinned torch wheel into .venv/, only when the build includes the runtime (runtime/ exists).
tessera_install_torch() {
  [ -f "$TESSERA_ROOT/runtime/CMakeLists.txt" ] || return 0
  [ "${TESSERA_BUILD_RUNTIME:-ON}" = "ON" ] || return 0
  local venv="$TESSERA_ROOT/.venv"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TESSERA_TORCH_VERSION')" 2>/dev/null; then
    return 0
  fi
  tessera_log "installing torch==$TESSERA_TORCH_VERSION into .venv/ (its LibTorch is the runtime's)"
  # The wheel and its CUDA libraries take 4.7 GiB in .venv/ (measured: du -sh .venv); pip downloads
  # and unpacks them in $TMPDIR first. Say so before, not after, a full disk.
  local free_kb tmp_dir="${TMPDIR:-/tmp}" created=0
  free_kb=$(df -Pk "$TESSERA_ROOT" | awk 'NR == 2 { print $4 }')
  if [ -n "$free_kb" ] && [ "$free_kb" -lt $((5 * 1024 * 1024)) ]; then
    tessera_log "warning: $((free_kb / 1024)) MiB free under $TESSERA_ROOT; torch with its CUDA libraries needs about 4.7 GiB there"
  fi
  free_kb=$(df -Pk "$tmp_dir" | awk 'NR == 2 { print $4 }')
  if [ -n "$free_kb" ] && [ "$free_kb" -lt $((3 * 1024 * 1024)) ]; then
    tessera_log "warning: $((free_kb / 1024)) MiB free in $tmp_dir, where pip unpacks about 3 GiB of wheels (set TMPDIR elsewhere)"
  fi
  [ -e "$venv" ] || created=1
  # No pip cache: a second copy of 3 GB of wheels in ~/.cache helps nobody on a fresh machine.
  if ! { python3 -m venv "$venv" &&
         "$venv/bin/python" -m pip install -q --no-cache-dir --upgrade pip &&
         "$venv/bin/python" -m pip install -q --no-cache-dir "torch==$TESSERA_TORCH_VERSION" numpy pyzmq; }; then
    tessera_log "installing torch failed; free space now:"
    df -h "$TESSERA_ROOT" "$tmp_dir" | sed 's/^/  /'
    # A half-made environment of this call's would be taken for a broken torch next time: removed (one
    # that was here before, an older torch say, is left as it was found).
    [ "$created" -eq 1 ] && rm -rf "$venv"
    exit 1
  fi
}

tessera_build() {
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  local extra=()
  if [ -x "$TESSERA_ROOT/.venv/bin/python" ] && [ -f "$TESSERA_ROOT/runtime/CMakeLists.txt" ]; then
    extra+=("-DCMAKE_PREFIX_PATH=$("$TESSERA_ROOT/.venv/bin/python" -c 'import torch; print(torch.utils.cmake_prefix_path)')")
  fi
  if [ ! -f "$TESSERA_BUILD_DIR/CMakeCache.txt" ]; then
    tessera_log "configuring into $TESSERA_BUILD_DIR"
    # Line tables only (-g1): backtraces still name file and line, and LibTorch's templates compile
    # ~20 % faster than with full -g (docs/architecture.md, Build).
    cmake -S "$TESSERA_ROOT" -B "$TESSERA_BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "${extra[@]}" "$@"
  fi
  tessera_log "building"
  # ccache hashes the paths under the checkout relative to it and leaves the build directory out of
  # the hash, so that another clone on this machine (CI's fresh one) reuses this one's objects.
  CCACHE_BASEDIR="${CCACHE_BASEDIR:-$TESSERA_ROOT}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}" \
    cmake --build "$TESSERA_BUILD_DIR" --parallel "$(nproc)"
}
