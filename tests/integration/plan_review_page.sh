#!/usr/bin/env bash
# The page generator plan_browser_test.sh drives, through the real binary: writes a small review
# (a synthetic baseline, two profiles, four scenarios, one named "</script><b>x</b> & 'burst'")
# into DIR and runs `twinscale plan --review ... --out DIR`, which writes DIR/report.html.
#
# Usage: TWINSCALE_BINARY=... plan_review_page.sh DIR [--chartjs=PATH]
set -euo pipefail
BIN=${TWINSCALE_BINARY:?set TWINSCALE_BINARY to the twinscale binary}
DIR=${1:?usage: TWINSCALE_BINARY=... plan_review_page.sh DIR [--chartjs=PATH]}
shift
mkdir -p "$DIR"
cat >"$DIR/review.yaml" <<'YAML'
kind: CapacityReview
baseline:
  synthetic: {rate: 40, duration: 4m, prompt: {mean: 800, stddev: 300}, output: {mean: 150, stddev: 80}}
slo: {ttft: 500ms, percentile: 90}
profiles:
  - {profile: llama-3.1-8b-h100-sxm-tp1, gpuHourPrice: 2.5}
  - {profile: llama-3.1-8b-h200-tp1, gpuHourPrice: 3.5}
scenarios:
  - {name: launch, rate: 2}
  - {name: longer-prompts, promptLength: 2}
  - {name: "</script><b>x</b> & 'burst'", burst: {peakToMean: 3, window: 1m, at: 1m}}
  - {name: documents, longContext: {share: 0.02, promptTokens: 16000}}
seeds: 2
YAML
# --chartjs= (none): a script that defines no Chart (the binary's empty flag means the default
# path, and it refuses an empty file).
args=()
for a in "$@"; do
  if [[ $a == --chartjs= ]]; then
    echo "// not Chart.js" >"$DIR/not-chart.js"
    args+=("--chartjs=$DIR/not-chart.js")
  else
    args+=("$a")
  fi
done
exec "$BIN" plan --review "$DIR/review.yaml" --out "$DIR" --threads 2 "${args[@]}" >"$DIR/plan.txt"
