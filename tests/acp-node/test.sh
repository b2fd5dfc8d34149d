#!/usr/bin/env bash
# `conclave acp` under the official ACP client (@agentclientprotocol/sdk) on the real binary.
# Assumes `npm ci` was run here and the binary is built; CONCLAVE_BIN overrides
# <repo>/target/debug/conclave, MCP_ECHO_BIN <repo>/target/debug/examples/mcp_echo.
set -euo pipefail
cd "$(dirname "$0")"
# The MCP server of mcp.test.js (examples/mcp_echo.rs); `cargo test` builds it too.
[ -n "${MCP_ECHO_BIN:-}" ] || [ -x ../../target/debug/examples/mcp_echo ] \
  || (cd ../.. && cargo build --quiet --example mcp_echo)
node --test --test-reporter=spec --test-concurrency=1 --test-timeout=120000
