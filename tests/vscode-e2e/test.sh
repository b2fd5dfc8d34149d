#!/usr/bin/env bash
# The VS Code extension in a real VS Code (code-server + Debian's Chromium): see e2e.test.mjs.
# Needs ./install.sh, the built .vsix (editors/vscode/test.sh) and the server binary.
#   CONCLAVE_BIN   the server (default <repo>/target/debug/conclave, or $CARGO_TARGET_DIR's)
#   E2E_ARTIFACTS  where the screenshots go (default tests/vscode-e2e/artifacts, git-ignored)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export CONCLAVE_BIN=${CONCLAVE_BIN:-${CARGO_TARGET_DIR:-$repo/target}/debug/conclave}
if [ ! -x "$here/node_modules/.bin/code-server" ]; then
  echo "code-server is not installed: run tests/vscode-e2e/install.sh" >&2
  exit 2
fi
cd "$here"
exec node --test --test-reporter=spec --test-timeout=600000 e2e.test.mjs
