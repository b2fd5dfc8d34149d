#!/usr/bin/env bash
# Installs what the real-VS-Code end-to-end suite needs, offline but for Debian's and npm's
# registries, as root: Debian's Chromium and ripgrep, the headers code-server's native modules
# build against, then code-server (VS Code on Node 20) and playwright-core from npm.
# Idempotent. Takes about a minute plus the native builds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

deb_pkgs=(chromium ripgrep libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev python3 make g++)
missing=()
for p in "${deb_pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ -x "$here/node_modules/.bin/code-server" ] && [ -d "$here/node_modules/playwright-core" ] \
  && [ -f "$here/node_modules/.install-ok" ]; then
  echo "vscode-e2e: code-server and playwright-core already installed"
  exit 0
fi

# @vscode/ripgrep's postinstall downloads rg from GitHub, which cannot be reached here; it
# takes a pre-filled cache instead, so hand it Debian's rg under the name it looks for.
tmp=${TMPDIR:-/tmp}
cache="$tmp/vscode-ripgrep-cache-1.15.11"
tarball="$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
if [ ! -s "$tarball" ]; then
  mkdir -p "$cache"
  stage=$(mktemp -d)
  cp "$(command -v rg)" "$stage/rg"
  tar -czf "$tarball" -C "$stage" rg
  rm -rf "$stage"
fi

export npm_config_unsafe_perm=true # root: let code-server's postinstall scripts run
export npm_config_yes=true         # node-pty's build runs an npx step
cd "$here"
if [ -f package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
else
  npm install --no-audit --no-fund --loglevel=error
fi
touch node_modules/.install-ok
echo "vscode-e2e: installed code-server $(node_modules/.bin/code-server --version 2>/dev/null | tail -1)"
