#!/usr/bin/env bash
# Builds hack/helm-render offline from Debian's Go packages (golang-go,
# golang-github-masterminds-sprig-dev, golang-k8s-sigs-yaml-dev: hack/setup.sh installs them).
#   hack/helm-render/build.sh OUT_BINARY [GOCACHE_DIR]
# GOPATH mode (GO111MODULE=off) against /usr/share/gocode, where Debian installs Go libraries: no
# module proxy, no network. The Go build cache (default: beside OUT_BINARY) makes a rebuild take
# well under a second; the first build compiles sprig and its dependencies (a few seconds).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "${1:?usage: build.sh OUT_BINARY [GOCACHE_DIR]}")
cache=$(realpath -m "${2:-$(dirname "$out")/gocache}")  # Go wants an absolute GOCACHE
mkdir -p "$(dirname "$out")" "$cache"
command -v go >/dev/null || { echo "build.sh: no 'go' (install golang-go: hack/setup.sh)" >&2; exit 1; }
cd "$here"
# Test processes run in parallel and each builds first: one build at a time (the others then
# find the binary up to date and leave it alone, so none is rewritten while another runs it).
exec 9>"$out.lock"
flock 9
GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= GOCACHE="$cache" GOPROXY=off \
  go build -o "$out" .
