#!/usr/bin/env bash
# The main job on bundled defaults: set up, build, then ask the twin a capacity question on the
# shipped Azure conversation trace (one hour of real traffic, rate x10, ~55 req/s): the smallest
# fleet of llama-3.1-8b on H100s whose p90 TTFT stays under 500 ms. Prints each candidate tried and
# the summary of the answer. Extra arguments go to `twinscale simulate` (e.g. --output json).
set -euo pipefail
cd "$(dirname "$0")/.."
hack/setup.sh
hack/build.sh twinscale >/dev/null
exec build/controller/twinscale simulate \
  --trace tests/data/traces/AzureLLMInferenceTrace_conv.csv --rate-scale 10 \
  --router least-requests --slo-ttft-ms 500 --find-replicas "$@"
