#!/usr/bin/env bash
# The Python packages of the interop tests (numpy, h5py and gensim read our files; the tests run
# /usr/bin/python3), installed from Debian packages when missing. Sourced by scripts/test.sh;
# quiet when everything is already there. Where a package cannot be had (no root, no network, not
# in the archive) it says so in one line: the interop tests then skip, or fail with CI set.
pagedw2v_python_deps() {
  local pkgs=(python3 python3-numpy python3-h5py python3-gensim)
  if /usr/bin/python3 -c 'import numpy, h5py, gensim' >/dev/null 2>&1; then return 0; fi
  echo "installing: ${pkgs[*]}" >&2
  if ! { pagedw2v_apt update -qq >/dev/null 2>&1 &&
    pagedw2v_apt install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1; }; then
    echo "pagedw2v: could not install ${pkgs[*]}: the interop tests need numpy, h5py and gensim" >&2
    [ -z "${CI:-}" ] || return 1
  fi
  return 0
}
