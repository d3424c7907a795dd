#!/usr/bin/env bash
# Builds and runs the benchmarks, which print the figures the targets in DESIGN.md section 8 are
# checked against (simulated requests and sequence-steps per wall second; memory per request).
set -euo pipefail
cd "$(dirname "$0")/.."
hack/setup.sh
hack/build.sh sim_bench
exec build/tests/bench/sim_bench "$@"
