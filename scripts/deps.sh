#!/usr/bin/env bash
# Checks what the build needs -- commands, and the CMake packages the build finds, asked of CMake
# itself -- and installs only what is missing, with apt-get (as root, or through sudo without a
# password). When nothing is missing it needs neither root nor a network, so CMake from pip, conda
# or Kitware and libraries outside /usr are fine. An optional dependency that cannot be installed
# is skipped with one line saying what the build loses, except in CI (CI set, as .ci/run sets it):
# there every optional part is needed, so that no test of one skips. Sourced by the other
# scripts.
#
#   pagedw2v_deps [--no-tests]    # --no-tests: GoogleTest is not needed (demo builds)
set -euo pipefail

# One line per dependency: need|kind|name|Debian package|what is lost without it (optional only)
#   need: required, tests (needed to build the tests) or optional
#   kind: command (on PATH), cmake (find_package arguments; FOUND is asked of CMake), pkgconfig
#         (a module pkg-config knows) or python (a module python3 imports)
pagedw2v_dep_table() {
  cat <<'EOF'
required|command|cmake|cmake|
required|command|c++|g++|
required|command|make|make|
required|cmake|Eigen3 3.3 NO_MODULE|libeigen3-dev|
required|cmake|HDF5 COMPONENTS C|libhdf5-dev|
required|cmake|cxxopts|libcxxopts-dev|
required|command|pkg-config|pkg-config|
required|cmake|ZLIB|zlib1g-dev|
required|pkgconfig|libzstd|libzstd-dev|
required|cmake|nlohmann_json 3|nlohmann-json3-dev|
tests|cmake|GTest|libgtest-dev|
optional|command|zstd|zstd|the .zst case of the ingest tests (it skips); .zst corpora still train
optional|cmake|tomlplusplus|libtomlplusplus-dev|TOML config files (train --config FILE.toml); flags still work
optional|cmake|MPI COMPONENTS C|libopenmpi-dev|training over ranks (mpirun -np N pagedw2v train; the package brings openmpi-bin); one process still trains
optional|command|mpirun|openmpi-bin|the tests of runs over ranks (they skip); a build with MPI still trains over ranks where mpirun is installed
EOF
}

# The CMake version the build needs (CMakeLists.txt's cmake_minimum_required).
PAGEDW2V_CMAKE_MIN=3.25

pagedw2v_version_ok() {  # have >= need, both dotted
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

# Prints the rows of pagedw2v_dep_table (filtered by need) whose check fails.
pagedw2v_missing() {
  local tests=$1 probe_dir rows=() row need kind name
  while IFS= read -r row; do
    need=${row%%|*}
    [ "$need" = tests ] && [ "$tests" = no ] && continue
    rows+=("$row")
  done < <(pagedw2v_dep_table)

  local cmake_ok=no
  if command -v cmake >/dev/null 2>&1; then
    local v
    v=$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')
    pagedw2v_version_ok "${v:-0}" "$PAGEDW2V_CMAKE_MIN" && cmake_ok=yes
  fi

  # One CMake run answers every find_package, as the build will ask them.
  local found=""
  if [ "$cmake_ok" = yes ] && command -v c++ >/dev/null 2>&1; then
    probe_dir=$(mktemp -d)
    {
      echo "cmake_minimum_required(VERSION $PAGEDW2V_CMAKE_MIN)"
      echo "project(pagedw2v_deps_probe LANGUAGES C CXX)"
      for row in "${rows[@]}"; do
        IFS='|' read -r need kind name _ <<<"$row"
        [ "$kind" = cmake ] || continue
        local pkg=${name%% *} args=${name#* }
        [ "$args" = "$name" ] && args=""
        echo "find_package($pkg $args QUIET)"
        echo "message(STATUS \"probe|$pkg|\${${pkg}_FOUND}\")"
      done
    } >"$probe_dir/CMakeLists.txt"
    found=$(cmake -S "$probe_dir" -B "$probe_dir/build" 2>/dev/null | sed -n 's/^-- probe|//p' || true)
    rm -rf "$probe_dir"
  fi

  for row in "${rows[@]}"; do
    IFS='|' read -r need kind name _ <<<"$row"
    case $kind in
      command)
        if [ "$name" = cmake ]; then
          [ "$cmake_ok" = yes ] || echo "$row"
        elif [ "$name" = make ]; then
          command -v make >/dev/null 2>&1 || command -v ninja >/dev/null 2>&1 || echo "$row"
        else
          command -v "$name" >/dev/null 2>&1 || echo "$row"
        fi
        ;;
      cmake)
        local pkg=${name%% *}
        grep -Eq "^$pkg\|(1|TRUE|ON|YES)$" <<<"$found" || echo "$row"
        ;;
      pkgconfig)
        pkg-config --exists "$name" 2>/dev/null || echo "$row"
        ;;
      python)
        python3 -c "import $name" >/dev/null 2>&1 || echo "$row"
        ;;
    esac
  done
}

# Whether this is a CI run (CI set, not empty, not 0 or false; tests/test_util.hpp reads it alike).
pagedw2v_ci() {
  case ${CI:-} in "" | 0 | false) return 1 ;; *) return 0 ;; esac
}

# Runs apt-get as root or through passwordless sudo; fails when neither is possible.
pagedw2v_apt() {
  command -v apt-get >/dev/null 2>&1 || return 1
  if [ "$(id -u)" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo -n env DEBIAN_FRONTEND=noninteractive apt-get "$@"
  else
    return 1
  fi
}

pagedw2v_deps() {
  local tests=yes
  [ "${1:-}" = --no-tests ] && tests=no
  local missing
  missing=$(pagedw2v_missing "$tests")
  [ -n "$missing" ] || return 0

  local pkgs=() row need kind name pkg lost
  while IFS='|' read -r need kind name pkg lost; do pkgs+=("$pkg"); done <<<"$missing"
  echo "installing: ${pkgs[*]}" >&2
  local updated=no
  if pagedw2v_apt update -qq >/dev/null 2>&1; then updated=yes; fi
  if [ "$updated" = yes ]; then
    # One package at a time, so that one that cannot be had does not stop the others.
    for pkg in "${pkgs[@]}"; do
      pagedw2v_apt install -y -qq --no-install-recommends "$pkg" >/dev/null 2>&1 || true
    done
  fi

  missing=$(pagedw2v_missing "$tests")
  local failed=()
  while IFS='|' read -r need kind name pkg lost; do
    [ -n "$need" ] || continue
    if [ "$need" = optional ] && ! pagedw2v_ci; then
      echo "pagedw2v: ${name%% *} ($pkg) is missing and could not be installed: building without $lost" >&2
    else
      failed+=("${name%% *} (Debian: $pkg)")
    fi
  done <<<"$missing"
  if ((${#failed[@]})); then
    local why="apt-get could not install them"
    [ "$updated" = yes ] || why="apt-get is not usable here (needs root or passwordless sudo, and a network)"
    echo "pagedw2v: missing ${failed[*]}; $why. Install them, or point CMAKE_PREFIX_PATH at them (CMake >= $PAGEDW2V_CMAKE_MIN)." >&2
    return 1
  fi
}

# The CUDA toolkit is optional; use it when it is installed in the usual place.
pagedw2v_cuda_args() {
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    echo "-DPAGEDW2V_CUDA=AUTO"
  else
    echo "-DPAGEDW2V_CUDA=OFF"
  fi
}

# The demo's CUDA setting: the backend is compiled only where a GPU can run it (nvidia-smi finds
# one), as compiling its kernels takes longer than the rest of the build. PAGEDW2V_CUDA=AUTO|ON|OFF
# in the environment decides instead.
pagedw2v_demo_cuda_args() {
  if [ -n "${PAGEDW2V_CUDA:-}" ]; then
    echo "-DPAGEDW2V_CUDA=$PAGEDW2V_CUDA"
  elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    pagedw2v_cuda_args
  else
    echo "-DPAGEDW2V_CUDA=OFF"
  fi
}

# Prints one line naming the optional parts that build directory $1 has, and so tests ("MPI yes,
# toml++ yes, zstd yes"), with the tools their tests run (mpirun, zstd); in CI, fails when one is
# missing.
pagedw2v_optional_parts() {
  local parts="$1/optional-parts.txt" name state missing=() shown=()
  [ -f "$parts" ] || { echo "pagedw2v: $parts is missing (configure the tests)" >&2; return 1; }
  while read -r name state; do
    [ -n "$name" ] || continue
    if [ "$state" != ON ]; then
      missing+=("$name")
      shown+=("$name no")
      continue
    fi
    case $name in
      MPI) command -v mpirun >/dev/null 2>&1 || { missing+=("mpirun"); state="built, no mpirun"; } ;;
      zstd) command -v zstd >/dev/null 2>&1 || { missing+=("zstd tool"); state="built, no zstd tool"; } ;;
    esac
    [ "$state" = ON ] && shown+=("$name yes") || shown+=("$name $state")
  done <"$parts"
  local joined
  joined=$(printf '%s, ' "${shown[@]}")
  echo "optional parts tested: ${joined%, }"
  if ((${#missing[@]})) && pagedw2v_ci; then
    joined=$(printf '%s, ' "${missing[@]}")
    echo "pagedw2v: CI is set but ${joined%, } missing: their tests would skip" >&2
    return 1
  fi
}
