#!/usr/bin/env bash
# The independent client-stack test: vscode-jsonrpc drives the real `conclave serve --stdio`.
# Assumes `npm ci` was run here and the binary is built; CONCLAVE_BIN overrides
# <repo>/target/debug/conclave.
set -euo pipefail
cd "$(dirname "$0")"
node --test --test-reporter=spec
