#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for SECONDS (default 60),
# seeded with the real inputs in tests/data. Exits non-zero if any fuzzer finds a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_FUZZER=${SECONDS_PER_FUZZER:-60}
hack/setup.sh
if ! command -v clang++ >/dev/null || ! dpkg-query -W libclang-rt-14-dev >/dev/null 2>&1; then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang libclang-rt-14-dev >/dev/null
fi
BUILD_DIR=${BUILD_DIR:-build-fuzz}
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTWINSCALE_BUILD_FUZZ=ON >/dev/null
fi
ninja -C "$BUILD_DIR" trace_reader_fuzz prometheus_text_fuzz profile_yaml_fuzz vllm_observation_fuzz \
  spec_loader_fuzz prometheus_response_fuzz label_selector_fuzz api_router_fuzz
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{traces,prom,yaml,vllm,spec,promapi,selector,apirequest}
# Seeds: the first lines of each real trace, the real vLLM metrics text, the shipped profiles.
for f in tests/data/traces/*.csv tests/data/traces/*.jsonl; do head -c 4000 "$f" >"$work/traces/$(basename "$f")"; done
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
run() {
  local bin=$1 corpus=$2
  echo "== $bin for ${SECONDS_PER_FUZZER}s"
  "$BUILD_DIR/tests/fuzz/$bin" -max_total_time="$SECONDS_PER_FUZZER" -rss_limit_mb=2048 \
    -artifact_prefix="$work/" "$corpus" 2>&1 | tail -n 3
}
run trace_reader_fuzz "$work/traces"
run prometheus_text_fuzz "$work/prom"
run vllm_observation_fuzz "$work/vllm"
run profile_yaml_fuzz "$work/yaml"
run spec_loader_fuzz "$work/spec"
run prometheus_response_fuzz "$work/promapi"
run label_selector_fuzz "$work/selector"
run api_router_fuzz "$work/apirequest"
if ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* >/dev/null 2>&1; then
  echo "fuzz: a fuzzer found a failing input" >&2
  exit 1
fi
echo "fuzz: no crashes"
