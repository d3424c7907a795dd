#!/usr/bin/env bash
# report.html in a real browser: a short `twinscale replay --out` through the real binary (an hour
# of Azure conversation at x10, twinscale's policy and four baselines, truth `all`: about 12 s),
# then headless Chromium loads the page from disk. The page checks itself once its charts are drawn
# (all 10 canvases have painted pixels, no script error or console.error) and writes the verdict into
# #render-status; --dump-dom shows it. A screenshot is kept for people to look at.
#
# Usage: report_browser_test.sh TWINSCALE_BINARY OUT_DIR (run from the repo root).
# Exit 0 pass, 1 fail, 77 skip (no Chromium: hack/setup.sh installs it).
set -uo pipefail
BIN=${1:?usage: report_browser_test.sh TWINSCALE_BINARY OUT_DIR}
OUT=${2:?usage: report_browser_test.sh TWINSCALE_BINARY OUT_DIR}
fail() { echo "report_browser_test: FAIL: $*" >&2; exit 1; }

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[[ -n $CHROMIUM ]] || { echo "report_browser_test: SKIP: chromium not installed" >&2; exit 77; }

rm -rf "$OUT"
mkdir -p "$OUT"
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
start=$(now)
"$BIN" replay --trace tests/data/traces/AzureLLMInferenceTrace_conv.csv --rate-scale 10 \
  --policy deploy/samples/llama-3.1-8b-h100.yaml --policy keda-queue:2,5 --policy hpa-kv:0.7 \
  --policy static:8 --truth all --progress never --out "$OUT/replay" \
  >"$OUT/replay.stdout" 2>"$OUT/replay.stderr" || { cat "$OUT/replay.stderr" >&2; fail "replay failed"; }
replayed=$(now)
PAGE="$OUT/replay/report.html"
[[ -s $PAGE ]] || { cat "$OUT/replay.stderr" >&2; fail "no $PAGE"; }
grep -q "warning" "$OUT/replay.stderr" && { cat "$OUT/replay.stderr" >&2; fail "replay warned"; }
# The oracle for the target is drawn as well (its line in the scatter plot's legend comes from it).
grep -q "Zero-lag oracle for the target (every minute" "$PAGE" || fail "no oracle for the target"

# Self-contained: nothing fetched from anywhere.
if grep -qiE "(src|href)[[:space:]]*=[[:space:]]*[\"']?[[:space:]]*(https?:)?//" "$PAGE"; then
  fail "report.html refers to an external resource"
fi

# A throwaway profile, no network, software rendering. The virtual time budget lets the page's
# timers (the render check) run before the DOM is dumped or the screenshot taken.
PROFILE=$(mktemp -d)
trap 'rm -rf "$PROFILE"' EXIT
chrome() {
  "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-extensions --user-data-dir="$PROFILE" --virtual-time-budget=5000 \
    --enable-logging=stderr --v=0 "$@"
}
URL="file://$(cd "$(dirname "$PAGE")" && pwd)/report.html"
chrome --window-size=1400,3000 --dump-dom "$URL" >"$OUT/dom.html" 2>"$OUT/chromium_dom.log" \
  || { tail -20 "$OUT/chromium_dom.log" >&2; fail "chromium --dump-dom failed"; }
status=$(grep -o '<span id="render-status"[^>]*>[^<]*</span>' "$OUT/dom.html")
echo "render status: $status"
[[ $status == *'data-ok="true"'*'>rendered 10 charts<'* ]] || fail "page did not render: ${status:-no #render-status}"
# Console errors and uncaught exceptions Chromium logged (the page also catches its own).
if grep -E "CONSOLE.*(Uncaught|Error)|:ERROR:CONSOLE" "$OUT/chromium_dom.log"; then
  fail "console errors (see $OUT/chromium_dom.log)"
fi

SHOT="$OUT/report_screenshot.png"
chrome --window-size=1400,3000 --hide-scrollbars --screenshot="$SHOT" "$URL" \
  >/dev/null 2>"$OUT/chromium_shot.log" || { tail -20 "$OUT/chromium_shot.log" >&2; fail "screenshot failed"; }
[[ -s $SHOT ]] || fail "no screenshot at $SHOT"
done_at=$(now)
echo "report_browser_test: ok (replay $(elapsed "$start" "$replayed") s, browser" \
  "$(elapsed "$replayed" "$done_at") s); screenshot $SHOT"
