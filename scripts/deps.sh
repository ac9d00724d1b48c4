#!/usr/bin/env bash
# Installs the Debian packages the build needs, only those that are missing. Sourced by the
# other scripts; quiet when everything is already there.
set -euo pipefail

pagedw2v_deps() {
  local pkgs=(cmake g++ make pkg-config libeigen3-dev libhdf5-dev libcxxopts-dev googletest
              libgtest-dev libtomlplusplus-dev zlib1g-dev libzstd-dev)
  local missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "installing: ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
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
