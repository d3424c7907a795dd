#!/usr/bin/env bash
# The shipped hours' figures of docs/results.md: twinscale's sample policies on the Azure
# conversation trace x40 and code trace x20 (the shape-keeping scale), truth `all`, over seeds,
# with how many seeds meet the target and the spread of minutes and GPU-hours. An hour's result
# turns on a minute or two of a ramp or a burst, and any change to any decision moves those: judge
# a change on the pass rate and the minutes' mean over many seeds (30 by default), not on ten.
# The runs' outputs stay in ${OUT:-/tmp/twinscale-hours}. About 4 s per run on one core; JOBS=2
# runs two at once (30 seeds of both hours: about 4 minutes on 2 cores).
#   hack/hour-results.sh [FIRST_SEED LAST_SEED]   (default 1 30)
#   SUMMARY_ONLY=1 hack/hour-results.sh           the summary from the runs already in $OUT
set -euo pipefail
cd "$(dirname "$0")/.."
hack/build.sh twinscale >/dev/null
OUT=${OUT:-/tmp/twinscale-hours}
JOBS=${JOBS:-2}
first=${1:-1}
last=${2:-30}
mkdir -p "$OUT"
# name trace scale manifest
hours=(
  "conversation AzureLLMInferenceTrace_conv.csv 40 deploy/samples/llama-3.1-8b-h100.yaml"
  "code AzureLLMInferenceTrace_code.csv 20 deploy/samples/code-assistant-8k.yaml"
)
run() {
  local name=$1 trace=$2 scale=$3 manifest=$4 seed=$5
  rm -rf "$OUT/$name-$seed"
  build/controller/twinscale replay --trace "tests/data/traces/$trace" --rate-scale "$scale" \
    --policy "$manifest" --truth all --seed "$seed" --oracle=false --progress never \
    --out "$OUT/$name-$seed" >"$OUT/$name-$seed.txt" 2>&1
}
for h in "${hours[@]}"; do
  [[ -n ${SUMMARY_ONLY:-} ]] && break
  for ((s = first; s <= last; s++)); do
    while (($(jobs -r | wc -l) >= JOBS)); do sleep 1; done
    # shellcheck disable=SC2086
    run $h "$s" &
  done
done
wait
for h in "${hours[@]}"; do
  name=${h%% *}
  python3 - "$OUT" "$name" "$first" "$last" <<'PY'
import json, statistics, sys
out, name, first, last = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
met, minutes, gpu, bias, mae, own_bias, own_mae = [], [], [], [], [], [], []
for seed in range(first, last + 1):
    s = json.load(open(f"{out}/{name}-{seed}/summary.json"))
    ts = next(p for p in s["policies"] if p["family"].startswith("twinscale"))
    if ts["meets_target"]:
        met.append(seed)
    minutes.append(ts["minutes_meeting_slo"])
    need = ts["minutes_with_traffic"]
    gpu.append(ts["gpu_hours"])
    te = ts.get("twin_error") or {}
    own = (te.get("by_arrivals") or {}).get("as_forecast") or {}
    bias.append(te.get("attainment_bias_points", float("nan")))
    mae.append(te.get("attainment_mae_points", float("nan")))
    own_bias.append(own.get("attainment_bias_points", float("nan")))
    own_mae.append(own.get("attainment_mae_points", float("nan")))
n = last - first + 1
print("%-12s seeds %d-%d: target met on %d of %d; minutes %d-%d of %d (mean %.2f); "
      "GPU-h %.3f-%.3f (mean %.3f, sd %.3f)" % (
          name, first, last, len(met), n, min(minutes), max(minutes), need,
          statistics.mean(minutes), min(gpu), max(gpu), statistics.mean(gpu),
          statistics.stdev(gpu) if n > 1 else 0))
print("%-12s twin bias %+.1f to %+.1f, MAE %.1f to %.1f; where the arrivals came as forecast: "
      "bias %+.1f to %+.1f, MAE %.1f to %.1f" % (
          name, min(bias), max(bias), min(mae), max(mae), min(own_bias), max(own_bias),
          min(own_mae), max(own_mae)))
print("%-12s missed on seeds: %s" % (
    name, " ".join(str(s) for s in range(first, last + 1) if s not in met) or "none"))
PY
done
