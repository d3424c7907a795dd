#!/usr/bin/env bash
# Keeps deploy/ and the Helm chart one source:
#  1. copies the CRD (deploy/crds/, the file the binary embeds) into the chart
#     (charts/twinscale/files/crds/, which templates/crds/ installs);
#  2. renders the chart with its default values and the image twinscale:dev (release "twinscale",
#     namespace "twinscale-system") and writes each template's output to deploy/<path under
#     templates/>: deploy/crds/ and deploy/controller/ are that render, byte for byte. The chart has
#     no default image (none is published); twinscale:dev is what `docker build -t twinscale:dev .`
#     makes from the Dockerfile, a local name to push or load (kind load docker-image) as it is, or
#     to replace (kubectl set image) with the name the cluster pulls.
# deploy/controller/namespace.yaml (Helm makes the namespace with --create-namespace), the samples
# and the examples are written by hand.
#   hack/generate-deploy.sh           regenerate
#   hack/generate-deploy.sh --check   change nothing; exit 1 and show the difference if stale
# HELM_RENDER=path uses an already built renderer (else it is built into ${BUILD_DIR:-build}).
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[[ ${1:-} == --check ]] && check=1
render=${HELM_RENDER:-}
if [[ -z $render ]]; then
  render=${BUILD_DIR:-build}/hack/helm-render/helm-render
  hack/helm-render/build.sh "$render"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

chart_crd=charts/twinscale/files/crds/twinscale.io_inferenceautoscalers.yaml
if ((check)); then
  cmp -s deploy/crds/twinscale.io_inferenceautoscalers.yaml "$chart_crd" || {
    echo "generate-deploy: $chart_crd differs from deploy/crds/ (run hack/generate-deploy.sh)" >&2
    exit 1
  }
else
  cp deploy/crds/twinscale.io_inferenceautoscalers.yaml "$chart_crd"
fi

"$render" --name twinscale --namespace twinscale-system \
  --set image.repository=twinscale --set image.tag=dev --output-dir "$out" charts/twinscale
stale=0
while IFS= read -r f; do
  rel=${f#"$out"/}
  if ((check)); then
    diff -u "deploy/$rel" "$f" >&2 || stale=1
  else
    mkdir -p "deploy/$(dirname "$rel")"
    cp "$f" "deploy/$rel"
  fi
done < <(find "$out" -type f | sort)
# Files in deploy/crds and deploy/controller that the chart no longer renders.
for f in deploy/crds/*.yaml deploy/controller/*.yaml; do
  [[ $f == deploy/controller/namespace.yaml || -f "$out/${f#deploy/}" ]] && continue
  if ((check)); then
    echo "generate-deploy: $f is not rendered by the chart" >&2
    stale=1
  else
    rm "$f"
    echo "generate-deploy: removed $f (the chart no longer renders it)" >&2
  fi
done
if ((check && stale)); then
  echo "generate-deploy: deploy/ is stale (run hack/generate-deploy.sh)" >&2
  exit 1
fi
((check)) || echo "generate-deploy: deploy/ is the chart's render (default values, image twinscale:dev)"
