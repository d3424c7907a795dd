#!/usr/bin/env bash
# The main job on bundled defaults: set up, build, then simulate the shipped Azure conversation
# trace (one hour, rate x10) on a fleet of llama-3.1-8b on H100s and print the summary.
# Extra arguments go to `twinscale simulate` (e.g. --output json, --replicas 4).
set -euo pipefail
cd "$(dirname "$0")/.."
hack/setup.sh
hack/build.sh twinscale
exec build/controller/twinscale simulate \
  --trace tests/data/traces/AzureLLMInferenceTrace_conv.csv --rate-scale 10 \
  --replicas 3 --router least-requests --slo-ttft-ms 500 "$@"
