#!/usr/bin/env bash
# Sets up, builds everything and runs every test (ctest). LABEL=unit (or slow, ...) narrows it;
# EXCLUDE_LABEL=slow skips the slow ones. Prints ctest's summary line; exits non-zero on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
hack/setup.sh
hack/build.sh
args=(--test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 600)
[[ -n ${LABEL:-} ]] && args+=(-L "$LABEL")
[[ -n ${EXCLUDE_LABEL:-} ]] && args+=(-LE "$EXCLUDE_LABEL")
ctest "${args[@]}"
