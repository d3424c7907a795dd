#!/usr/bin/env bash
# The main job on bundled defaults: set up, build, then the dry-run replay of one day of real
# traffic against a simulated H100 fleet perturbed the way a real one differs from the twin
# (--truth all): twinscale's sample policy (deploy/samples/llama-3.1-8b-h100.yaml: Llama-3.1-8B,
# p90 TTFT <= 500 ms) beside the KEDA queue-depth, HPA KV-cache and static baseline families and
# the oracles. Prints the table and writes summary.json, timeline.csv and report.html to
# ${OUT:-/tmp/twinscale-demo}. Extra arguments go to `twinscale replay`.
#
# The day: ServeGen's m-large language model (tests/data/traces/servegen_*), its 11th day
# (240h-264h): an evening peak at midnight, a deep night (55-80 req/s from 02:00 to 08:00), a
# morning ramp to about 200 by 11:00, a daytime plateau and an evening decline, 3.8x from night to
# peak. Arrivals are Poisson following that curve, token lengths drawn from the Azure conversation
# trace. --time-scale 0.125 plays the day in 3 hours (ramps 8x steeper than recorded, still longer
# than a warm-up); the pre-roll plays the curve's hours before the day, so every policy meets
# midnight with the fleet the evening left. --peak-rate 350 puts the peak where the oracle for the
# target needs about 30 replicas. The static sweep brackets the best fixed fleet (static-23 on
# seed 1). About two and a half minutes on 2 cores after the build.
set -euo pipefail
cd "$(dirname "$0")/.."
hack/setup.sh
hack/build.sh twinscale >/dev/null
OUT=${OUT:-/tmp/twinscale-demo}
mkdir -p "$OUT"
build/controller/twinscale replay \
  --rate-curve tests/data/traces/servegen_language_m-large_aggregate_rate.csv \
  --lengths-from tests/data/traces/AzureLLMInferenceTrace_conv.csv \
  --curve-start 240h --curve-span 24h --time-scale 0.125 --peak-rate 350 \
  --policy deploy/samples/llama-3.1-8b-h100.yaml --policy keda-queue --policy hpa-kv \
  --policy static:22,23,24,25,26 --truth all --out "$OUT" "$@"
echo "report: $OUT/report.html"
