#!/usr/bin/env bash
# The main job on bundled defaults: set up, build, then the dry-run replay of the shipped Azure
# conversation trace (one hour of real traffic at 40x its rate, ~220 req/s) against a simulated
# H100 fleet perturbed the way a real one differs from the twin (--truth all): twinscale's sample
# policy (deploy/samples/llama-3.1-8b-h100.yaml: Llama-3.1-8B, p90 TTFT <= 500 ms) beside the KEDA
# queue-depth, HPA KV-cache and static baseline families and the zero-lag oracle. Prints the table
# and writes summary.json, timeline.csv and report.html to ${OUT:-/tmp/twinscale-demo}. Extra
# arguments go to `twinscale replay`.
set -euo pipefail
cd "$(dirname "$0")/.."
hack/setup.sh
hack/build.sh twinscale >/dev/null
OUT=${OUT:-/tmp/twinscale-demo}
mkdir -p "$OUT"
build/controller/twinscale replay \
  --trace tests/data/traces/AzureLLMInferenceTrace_conv.csv --rate-scale 40 \
  --policy deploy/samples/llama-3.1-8b-h100.yaml --policy keda-queue --policy hpa-kv \
  --policy static:20,21,22,23,24,25,26 --truth all --out "$OUT" "$@"
echo "report: $OUT/report.html"
