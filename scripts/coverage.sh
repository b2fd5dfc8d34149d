#!/usr/bin/env bash
# Line coverage of the Rust test suite (cargo-tarpaulin, LLVM engine), with the figure
# for the recovery and team code that BENCHMARKS.md reports. Not part of CI: the
# instrumented build takes about ten minutes on two cores.
#
#   cargo install cargo-tarpaulin --locked   # once
#   scripts/coverage.sh                      # report in target/coverage/
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo tarpaulin --version >/dev/null 2>&1; then
    echo "cargo-tarpaulin is not installed: cargo install cargo-tarpaulin --locked" >&2
    exit 1
fi

log=target/coverage/tarpaulin.log
mkdir -p target/coverage
# Its own target directory (target/tarpaulin), so the usual builds stay as they are.
cargo tarpaulin --engine llvm --skip-clean --out Json --out Lcov \
    --output-dir target/coverage --timeout 600 2>&1 | tee "$log"

# "|| src/team/plan.rs: 238/263" lines: sum them per area.
for area in recovery team 'recovery|team'; do
    grep -E "^\|\| src/($area)/" "$log" | awk -F': ' -v area="$area" '
        { split($2, n, "/"); covered += n[1]; total += n[2] }
        END { if (total) printf "src/{%s}: %d of %d lines, %.1f%%\n", area, covered, total, 100 * covered / total }'
done
