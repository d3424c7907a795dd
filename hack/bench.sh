#!/usr/bin/env bash
# Builds and runs the benchmarks, which print the figures the targets in docs/architecture.md
# "Performance targets" are checked against: first sim_bench (simulated requests and sequence-steps
# per wall second; memory per request and per replica), then decision_bench (decision latency, mean
# and p99, for the fixed input; the fast decision's agreement with a full-fleet, multi-seed what-if
# on tests/data/decisions/corpus.jsonl, which takes a few minutes), then keda_bench (KEDA-facing
# gRPC: GetMetrics per second and p50/p99 latency with streams open), then plan_bench (`twinscale
# plan` on the documented example review, on one and two threads). Extra arguments go to each
# (e.g. --benchmark_filter=Fixed).
set -euo pipefail
cd "$(dirname "$0")/.."
hack/setup.sh
hack/build.sh sim_bench decision_bench keda_bench plan_bench
build/tests/bench/sim_bench "$@"
build/tests/bench/decision_bench "$@"
build/tests/bench/keda_bench "$@"
exec build/tests/bench/plan_bench "$@"
