#!/usr/bin/env bash
# Installs the Debian packages twinscale builds and tests with (needs root; apt-get).
# Idempotent: packages already present are skipped quickly.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build ccache pkg-config
  libabsl-dev libyaml-cpp-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev libcpprest-dev
  libjs-chart.js chromium  # report.html's charts (inlined), and its browser test
  prometheus               # the real Prometheus of the integration and end-to-end tests
  etcd-server xz-utils     # the real control plane of tests/k8s (../shared/k8s: kube-apiserver v1.26)
  openssl curl             # certificates for the TLS tests; the controller bench reads /metrics
  # Helm is not packaged for Debian: the chart tests render charts/twinscale with Go's
  # text/template and sprig (hack/helm-render, built offline from these packages).
  golang-go golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev
  python3-minimal          # hack/burst-analysis and its test
  clang-format             # hack/lint.sh's format check (bookworm's clang-format 14)
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "hack/setup.sh: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
