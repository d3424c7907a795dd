#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for SECONDS_PER_FUZZER
# seconds (default 60), seeded with the real inputs in tests/data (in a temporary directory).
# Every fuzzer runs, even after one has failed; then the script exits 1 if any found a failing
# input (a crash, a leak, a timeout, running out of memory). Reproducers are kept, never deleted:
# ${FUZZ_ARTIFACTS:-build-fuzz/artifacts}/<fuzzer>/ (crash-<sha1> and the like, with the run's
# output in last-run.log), and each failure prints the reproducer's path and the command that
# replays it (`<fuzzer binary> <file>`; hack/fuzz-run.sh does the running and the reporting).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_FUZZER=${SECONDS_PER_FUZZER:-60}
source hack/fuzz-run.sh
hack/setup.sh
if ! command -v clang++ >/dev/null || ! dpkg-query -W libclang-rt-14-dev >/dev/null 2>&1; then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang libclang-rt-14-dev >/dev/null
fi
BUILD_DIR=${BUILD_DIR:-build-fuzz}
FUZZ_ARTIFACTS=${FUZZ_ARTIFACTS:-$BUILD_DIR/artifacts}
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTWINSCALE_BUILD_FUZZ=ON >/dev/null
fi
ninja -C "$BUILD_DIR" trace_reader_fuzz rate_curve_reader_fuzz prometheus_text_fuzz profile_yaml_fuzz vllm_observation_fuzz \
  spec_loader_fuzz prometheus_response_fuzz prometheus_query_fuzz kubeconfig_fuzz kube_wire_fuzz label_selector_fuzz api_router_fuzz \
  scaler_target_fuzz external_metrics_request_fuzz engine_args_fuzz arrival_history_codec_fuzz \
  command_line_fuzz review_fuzz autoscaler_status_fuzz
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{traces,curves,prom,yaml,vllm,spec,promapi,promquery,kubeconfig,kubewire,selector,apirequest,scaler,extm,engine,arrivals,argv,review,status}
# Seeds: the first lines of each real trace, the real vLLM metrics text, the shipped profiles.
for f in tests/data/traces/*.csv tests/data/traces/*.jsonl; do head -c 4000 "$f" >"$work/traces/$(basename "$f")"; done
for f in tests/data/traces/servegen_*.csv; do head -c 4000 "$f" >"$work/curves/$(basename "$f")"; done
cp tests/data/fixtures/*.txt "$work/prom/"
cp tests/data/fixtures/*.txt "$work/vllm/"
# ...and each verbatim block of it alone (without the shell prompt and "..." elisions), so the
# extractor's fuzzer starts from text that parses.
awk -v dir="$work/vllm" '/^# ---- BEGIN VERBATIM/ {n++; inside=1; next}
  /^# ---- END VERBATIM/ {inside=0; next}
  inside && !/^\$ / && $0 != "..." {print > (dir "/block" n ".txt")}' \
  tests/data/fixtures/vllm_metrics_excerpts.txt
cp simulator/profiles/*/*.yaml "$work/yaml/"
# The InferenceAutoscaler samples (and the CRD: a file of another kind, to be skipped).
cp deploy/samples/*.yaml deploy/crds/*.yaml "$work/spec/"
# Answers of Prometheus' query API: a matrix, an error, an instant query's vector.
echo '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"le":"+Inf"},"values":[[1700000000,"1"],[1700000015.5,"NaN"]]}]}}' >"$work/promapi/matrix.json"
echo '{"status":"error","errorType":"bad_data","error":"parse error"}' >"$work/promapi/error.json"
echo '{"status":"success","data":{"resultType":"vector","result":[]}}' >"$work/promapi/vector.json"
# Instant-query answers as the PromQL source gets them: raw vLLM samples of pods a and b (two
# engines), one matched by instance only, a scalar, and an error.
cat >"$work/promquery/range_vector.json" <<'JSON'
{"status":"success","data":{"resultType":"matrix","result":[
{"metric":{"__name__":"vllm:num_requests_running","engine":"0","model_name":"m","pod":"a","job":"vllm","instance":"10.0.0.1:8000"},"values":[[1700000000,"3"],[1700000001,"4"]]},
{"metric":{"__name__":"vllm:num_requests_running","engine":"1","model_name":"m","pod":"a","job":"vllm","instance":"10.0.0.1:8000"},"values":[[1700000001,"2"]]},
{"metric":{"__name__":"vllm:time_to_first_token_seconds_bucket","engine":"0","le":"0.5","model_name":"m","pod":"a","job":"vllm","instance":"10.0.0.1:8000"},"values":[[1700000001,"5"]]},
{"metric":{"__name__":"vllm:time_to_first_token_seconds_bucket","engine":"0","le":"+Inf","model_name":"m","pod":"a","job":"vllm","instance":"10.0.0.1:8000"},"values":[[1700000001,"6"]]},
{"metric":{"__name__":"vllm:time_to_first_token_seconds_count","engine":"0","model_name":"m","pod":"a","job":"vllm","instance":"10.0.0.1:8000"},"values":[[1700000001,"6"]]},
{"metric":{"__name__":"vllm:cache_config_info","engine":"0","num_gpu_blocks":"7463","block_size":"16","pod":"b","job":"vllm","instance":"10.0.0.2:8000"},"values":[[1700000002,"1"]]},
{"metric":{"__name__":"vllm:num_requests_waiting","engine":"0","model_name":"m","job":"static","instance":"127.0.0.12:9400"},"values":[[1700000002,"1"]]}]}}
JSON
echo '{"status":"success","data":{"resultType":"scalar","result":[1700000000,"1"]}}' >"$work/promquery/scalar.json"
echo '{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"a"},"value":[1700000000,"1"]}]}}' >"$work/promquery/vector.json"
cp "$work/promapi/error.json" "$work/promquery/"
# Label and field selectors as clients send them.
printf '%s' 'a=b,c!=d,e in (x,y),!f,g' >"$work/selector/set"
printf '%s' 'app.kubernetes.io/name=twinscale,replicas>3' >"$work/selector/prefixed"
printf '%s' 'metadata.name=web,status.phase!=Running' >"$work/selector/fields"
# Requests to the fake API server: METHOD, path, query, content type, body, one per line.
printf 'POST\n/apis/twinscale.io/v1alpha1/namespaces/default/inferenceautoscalers\n\napplication/json\n%s' \
  '{"metadata":{"name":"x"},"spec":{"targetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"w"},"maxReplicas":4,"model":{"profile":"p"}}}' \
  >"$work/apirequest/create_ias"
printf 'PATCH\n/apis/apps/v1/namespaces/default/deployments/web/scale\n\napplication/merge-patch+json\n%s' \
  '{"spec":{"replicas":3}}' >"$work/apirequest/patch_scale"
printf 'GET\n/api/v1/namespaces/default/pods\nwatch=1&resourceVersion=1000&labelSelector=app%%3Dweb\n\n' \
  >"$work/apirequest/watch"
printf 'PATCH\n/api/v1/namespaces/default/pods/p\n\napplication/json-patch+json\n%s' \
  '[{"op":"test","path":"/metadata/name","value":"p"}]' >"$work/apirequest/json_patch"
# run FUZZER CORPUS: one fuzzer over its seeds, its findings kept in $FUZZ_ARTIFACTS/FUZZER/.
run() { fuzz_run "$1" "$BUILD_DIR/tests/fuzz/$1" "$2"; }
# A kubeconfig with each kind of entry, and what the API server sends: watch events and a Status.
cat >"$work/kubeconfig/config" <<'KUBECONFIG'
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: Q0E=, insecure-skip-tls-verify: false}
users:
- name: dev
  user: {token: abc, tokenFile: token, client-certificate: c.crt, client-key-data: S0VZ}
- name: eks
  user: {exec: {command: aws, args: [eks, get-token]}}
contexts:
- name: dev
  context: {cluster: dev, user: dev, namespace: ml}
KUBECONFIG
echo '{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"5"}}}' >"$work/kubewire/added.json"
echo '{"type":"ERROR","object":{"kind":"Status","reason":"Expired","code":410}}' >"$work/kubewire/expired.json"
printf '%s' '{"kind":"Status","reason":"Conflict","message":"modified","code":409}' >"$work/kubewire/status.json"
run trace_reader_fuzz "$work/traces"
run rate_curve_reader_fuzz "$work/curves"
run prometheus_text_fuzz "$work/prom"
run vllm_observation_fuzz "$work/vllm"
run profile_yaml_fuzz "$work/yaml"
run spec_loader_fuzz "$work/spec"
run prometheus_response_fuzz "$work/promapi"
run prometheus_query_fuzz "$work/promquery"
run kubeconfig_fuzz "$work/kubeconfig"
run kube_wire_fuzz "$work/kubewire"
run label_selector_fuzz "$work/selector"
run api_router_fuzz "$work/apirequest"
# KEDA trigger metadata: name, namespace, the ScaledObject's namespace, NUL-separated.
printf 'llama-3-1-8b\0llm\0llm' >"$work/scaler/full"
printf 'llama\0\0team-a' >"$work/scaler/default_namespace"
printf 'Llama_8B' >"$work/scaler/bad_name"
run scaler_target_fuzz "$work/scaler"
# External metrics API requests as the aggregator forwards them: "<path>?<query>".
printf '%s' '/apis/external.metrics.k8s.io/v1beta1/namespaces/llm/twinscale-desired-replicas?labelSelector=twinscale.io%2Fautoscaler%3Dllama' >"$work/extm/value"
printf '%s' '/apis/external.metrics.k8s.io/v1beta1/namespaces/llm/twinscale-desired-replicas?labelSelector=twinscale.io%2Fautoscaler+in+%28llama%29&limit=1' >"$work/extm/set"
printf '%s' '/apis/external.metrics.k8s.io/v1beta1' >"$work/extm/discovery"
run external_metrics_request_fuzz "$work/extm"
# vLLM command lines as pod specs hold them: words NUL-separated, then "--env" and NAME=VALUE.
printf 'vllm\0serve\0meta-llama/Llama-3.1-8B-Instruct\0--max-num-seqs\0128\0--max-model-len=8k\0--no-enable-prefix-caching' >"$work/engine/serve"
printf '/bin/sh\0-c\0exec vllm serve m --max_num_batched_tokens $(TOKENS) -tp 2 --gpu-memory-utilization 0.85\0--env\0TOKENS=16384' >"$work/engine/shell"
printf 'python3\0-m\0vllm.entrypoints.openai.api_server\0--block-size\0x' >"$work/engine/bad"
run engine_args_fuzz "$work/engine"
# status.arrivalHistory.data: a 5-minute bucket (first byte 0) and the data as written: three
# buckets fully observed; the same as raw varints (first byte 8: base64-encoded by the fuzzer).
printf '\000AQPgA9AB9APgpxID' >"$work/arrivals/three"
printf '\010\001\003\340\003\320\001\364\003\340\247\022\003' >"$work/arrivals/raw"
run arrival_history_codec_fuzz "$work/arrivals"
# Command lines as users type them (words separated by NUL bytes), against the fuzzer's flags.
printf -- '--f-int=3\000--f-rate\0002.5\000--no-f-bool\000--f-window=5m' >"$work/argv/spellings"
printf -- '--f-policy\000a.yaml\000--f-policy=static:2\000--f-list=a,b' >"$work/argv/repeated"
printf -- '--f-rate=nan\000--f-int=abc\000stray' >"$work/argv/mistakes"
run command_line_fuzz "$work/argv"
# Capacity reviews: the shipped sample, and a review with every other baseline kind and every
# scenario change.
cp deploy/samples/plan/capacity-review.yaml "$work/review/"
cat >"$work/review/every_key.yaml" <<'REVIEW'
kind: CapacityReview
baseline:
  synthetic: {rate: 40, duration: 10m, arrivalCv: 1.5,
              prompt: {mean: 1000, stddev: 300, distribution: gaussian, min: 1, max: 131072},
              output: {mean: 200, distribution: exponential}}
slo: {ttft: 500ms, percentile: 90, perPromptToken: 0.05ms, itl: 50ms, itlPercentile: 95}
profiles:
  - {profile: llama-3.1-8b-h100-sxm-tp1, gpuHourPrice: 2.5}
  - {profile: llama-3.1-8b-h100-sxm-tp1, gpu: a100-80g, tensorParallel: 2, gpuHourPrice: 1.6, name: a100}
scenarios:
  - {name: all, rate: 2, promptLength: 1.5, outputLength: 1.5, prefixCacheMiss: true,
     longContext: {share: 0.05, promptTokens: 32000},
     retrySpike: {share: 0.2, timeout: 30s, start: 0s, span: 0s},
     burst: {peakToMean: 3, window: 2m, at: 5m}}
plannedReplicas: 4
seeds: 3
seed: 7
maxReplicas: 256
router: least-requests
emitProfile: a100
REVIEW
printf '%s\n' 'kind: CapacityReview' 'baseline: {rateCurve: {path: c.csv, lengthsFrom: t.csv, start: 72h, span: 1h, timeScale: 1, peakRate: 0}}' 'profiles: [{profile: p, gpuHourPrice: 1}]' >"$work/review/rate_curve.yaml"
printf '%s\n' 'kind: CapacityReview' "baseline: {prometheus: {url: 'http://prom:9090', selector: '{job=\"vllm\"}', range: 1h, step: 15s, end: '2025-06-01T12:00:00Z'}}" 'profiles: [{profile: p, gpuHourPrice: 1}]' >"$work/review/prometheus.yaml"
run review_fuzz "$work/review"
# Statuses as the controller writes them: the calibration with every field, a warm-up, an arrival
# history, conditions and the last decision.
cat >"$work/status/full.json" <<'STATUS'
{"observedGeneration":3,"currentReplicas":5,"desiredReplicas":6,"measuredWarmup":"45s",
"conditions":[{"type":"MetricsFresh","status":"True","reason":"ScrapesFresh","message":"ok","lastTransitionTime":"2026-11-21T08:00:00Z","observedGeneration":3}],
"calibration":{"prefillSpeed":0.8,"decodeSpeed":0.9,"updates":40,"routerRandomShare":0.35,"extraFrontEndSeconds":0.03},
"arrivalHistory":{"bucket":"5m","start":"2026-11-21T08:00:00Z","end":"2026-11-21T09:00:00Z","data":"AQwA"},
"lastDecision":{"time":"2026-11-21T09:00:00Z","replicas":6,"reasons":[{"code":"Steady","message":"6 replicas meet the SLO"}]}}
STATUS
echo '{"calibration":{"prefillSpeed":1,"decodeSpeed":1,"updates":0}}' >"$work/status/calibration.json"
# ...and one written by hand with more digits than the controller writes (it rounds to 4).
echo '{"calibration":{"prefillSpeed":0.812345,"decodeSpeed":1,"updates":1,"routerRandomShare":0.123456,"extraFrontEndSeconds":-0.0123456}}' >"$work/status/digits.json"
run autoscaler_status_fuzz "$work/status"
fuzz_report
