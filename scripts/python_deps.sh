#!/usr/bin/env bash
# The Python packages of the interop tests (numpy, h5py and gensim read our files; the tests run
# /usr/bin/python3), installed from Debian packages when missing. Sourced by scripts/test.sh;
# quiet when everything is already there. Where a package is not in the archive, the install
# fails and says so: with CI set, the interop tests would fail without it anyway.
pagedw2v_python_deps() {
  local pkgs=(python3 python3-numpy python3-h5py python3-gensim)
  if /usr/bin/python3 -c 'import numpy, h5py, gensim' >/dev/null 2>&1; then return 0; fi
  echo "installing: ${pkgs[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${pkgs[@]}" >/dev/null
}
