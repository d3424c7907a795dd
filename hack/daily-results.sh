#!/usr/bin/env bash
# The daily-traffic figures of docs/results.md: twinscale's sample policy against the static
# family and the perfect forecast acting late, on ServeGen request-rate days (m-large and m-mid;
# one day with a deep night and one shallow day each) compressed 8x, peak 350 req/s, Azure
# conversation lengths, truth `all`, over seeds. One line per (day, seed); the runs' outputs stay
# in ${OUT:-/tmp/twinscale-daily}. About 100 s per line on one core; JOBS=2 runs two at once.
#   hack/daily-results.sh [SEEDS...]      (default seeds: 1 2 3)
#   SUMMARY_ONLY=1 hack/daily-results.sh  the table from the runs already in $OUT
set -euo pipefail
cd "$(dirname "$0")/.."
hack/build.sh twinscale >/dev/null
OUT=${OUT:-/tmp/twinscale-daily}
JOBS=${JOBS:-2}
seeds=("$@")
((${#seeds[@]})) || seeds=(1 2 3)
mkdir -p "$OUT"
# name curve start static-sweep
days=(
  "m-large-deep servegen_language_m-large 240h 20,21,22,23,24,25,26"
  "m-large-shallow servegen_language_m-large 48h 26,27,28,29,30,31,32,33"
  "m-mid-deep servegen_language_m-mid 96h 22,23,24,25,26,27,28,29,30"
  "m-mid-shallow servegen_language_m-mid 24h 26,27,28,29,30,31,32,33"
)
run() {
  local name=$1 curve=$2 start=$3 statics=$4 seed=$5
  build/controller/twinscale replay \
    --rate-curve "tests/data/traces/${curve}_aggregate_rate.csv" \
    --lengths-from tests/data/traces/AzureLLMInferenceTrace_conv.csv \
    --curve-start "$start" --curve-span 24h --time-scale 0.125 --peak-rate 350 \
    --policy deploy/samples/llama-3.1-8b-h100.yaml --policy "static:$statics" \
    --truth all --seed "$seed" --progress never --out "$OUT/$name-$seed" >"$OUT/$name-$seed.txt" 2>&1
}
for d in "${days[@]}"; do
  [[ -n ${SUMMARY_ONLY:-} ]] && break
  for s in "${seeds[@]}"; do
    while (($(jobs -r | wc -l) >= JOBS)); do sleep 1; done
    # shellcheck disable=SC2086
    run $d "$s" &
  done
done
wait
printf '%-16s %4s %9s %8s %8s %-7s %-10s %9s %9s %9s %8s %-13s %s\n' day seed twinscale attain minutes \
  target best-static GPU-h late-fcst vs-static vs-late "twin bias/MAE" "as forecast"
for d in "${days[@]}"; do
  name=${d%% *}
  for s in "${seeds[@]}"; do
    python3 - "$OUT/$name-$s/summary.json" "$name" "$s" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ts = next(p for p in s["policies"] if p["family"].startswith("twinscale"))
statics = [p for p in s["policies"] if p["family"] == "static" and p["meets_target"]]
best = min(statics, key=lambda p: p["gpu_hours"]) if statics else None
late = s["oracle"]["for_target"]["late"]
late_gpu = late["gpu_hours"] if isinstance(late, dict) and late.get("gpu_hours") else None
te = ts.get("twin_error") or {}
own = (te.get("by_arrivals") or {}).get("as_forecast") or {}
print("%-16s %4s %9.3f %7.2f%% %4d/%-3d %-7s %-10s %9s %9s %9s %8s %+.1f/%.1f      %+.1f/%.1f" % (
    sys.argv[2], sys.argv[3], ts["gpu_hours"], 100 * ts["slo_attainment"],
    ts["minutes_meeting_slo"], ts["minutes_with_traffic"],
    "met" if ts["meets_target"] else "MISSED",
    best["policy"] if best else "none", "%.3f" % best["gpu_hours"] if best else "-",
    "%.3f" % late_gpu if late_gpu else "-",
    "%+.1f%%" % (100 * (ts["gpu_hours"] / best["gpu_hours"] - 1)) if best else "-",
    "%.2fx" % (ts["gpu_hours"] / late_gpu) if late_gpu else "-",
    te.get("attainment_bias_points", float("nan")), te.get("attainment_mae_points", float("nan")),
    own.get("attainment_bias_points", float("nan")), own.get("attainment_mae_points", float("nan"))))
PY
  done
done
