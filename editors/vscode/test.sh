#!/usr/bin/env bash
# Type-check, lint (ESLint, Prettier), bundle, run the node tests against the real server,
# package the .vsix.
# Assumes `npm ci` was run here. CONCLAVE_BIN overrides <repo>/target/debug/conclave.
set -euo pipefail
cd "$(dirname "$0")"

echo "== tsc --noEmit"
npx --no-install tsc --noEmit -p .

echo "== eslint (eslint.config.mjs; warnings fail too)"
npx --no-install eslint --max-warnings 0 .

echo "== prettier --check (.prettierrc; \`npm run format\` rewrites)"
npx --no-install prettier --check --log-level=warn .

echo "== esbuild bundle"
npx --no-install esbuild src/extension.ts --bundle --outfile=dist/extension.js --external:vscode \
  --format=cjs --platform=node --target=node20 --sourcemap --log-level=warning

echo "== node tests"
rm -rf out
npx --no-install esbuild test/*.ts src/lsp_ext.ts src/binary.ts src/takeover.ts src/model/*.ts --outdir=out --outbase=. \
  --format=cjs --platform=node --target=node20 --log-level=warning
node --test --test-reporter=spec out/test/*.test.js

echo "== vsce package"
npx --no-install vsce package --allow-missing-repository --skip-license --no-dependencies \
  --out dist/conclave.vsix
