#!/usr/bin/env bash
# Configures and builds twinscale (Release by default; BUILD_TYPE=Debug for a debug build) into
# ${BUILD_DIR:-build}. Uses ccache when present. Extra arguments are ninja targets.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TYPE=${BUILD_TYPE:-Release}
JOBS=${JOBS:-$(nproc)}
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" ${CMAKE_ARGS:-} >/dev/null
fi
ninja -C "$BUILD_DIR" -j "$JOBS" "$@"
