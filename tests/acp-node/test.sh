#!/usr/bin/env bash
# `conclave acp` under the official ACP client (@agentclientprotocol/sdk) on the real binary.
# Assumes `npm ci` was run here and the binary is built; CONCLAVE_BIN overrides
# <repo>/target/debug/conclave.
set -euo pipefail
cd "$(dirname "$0")"
node --test --test-reporter=spec --test-concurrency=1
