#!/usr/bin/env bash
# plan's report.html in a real browser: PAGE_GENERATOR (tests/integration/plan_review_page.sh,
# which runs `twinscale plan` on a small review) writes the page for two profiles and four
# scenarios, one named "</script><b>x</b> & 'burst'", then headless Chromium loads it from disk. The page checks itself once its charts are drawn (every canvas painted, no script error or
# console.error) and writes the verdict into #render-status, which --dump-dom shows: it must say
# "rendered N charts", N the page's canvases (2 + the scenarios), with data-ok="true". The scenario
# name must stay text. A page written without Chart.js must fail its own check (so a pass means
# something). A screenshot is kept for people to look at.
#
# Usage: plan_browser_test.sh PAGE_GENERATOR OUT_DIR (run from the repo root); PAGE_GENERATOR DIR
# [--chartjs=PATH] writes DIR/report.html, Chart.js from $TWINSCALE_CHARTJS or Debian's path.
# Exit 0 pass, 1 fail, 77 skip (no Chromium: hack/setup.sh installs it and libjs-chart.js).
set -uo pipefail
GEN=${1:?usage: plan_browser_test.sh PAGE_GENERATOR OUT_DIR}
OUT=${2:?usage: plan_browser_test.sh PAGE_GENERATOR OUT_DIR}
fail() { echo "plan_browser_test: FAIL: $*" >&2; exit 1; }

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[[ -n $CHROMIUM ]] || { echo "plan_browser_test: SKIP: chromium not installed" >&2; exit 77; }

rm -rf "$OUT"
mkdir -p "$OUT/page" "$OUT/no-chartjs" || fail "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
PAGE="$OUT/page/report.html"
"$GEN" "$OUT/page" 2>"$OUT/generator.stderr" || { cat "$OUT/generator.stderr" >&2; fail "$GEN failed"; }
[[ -s $PAGE ]] || fail "no $PAGE"

# Self-contained: nothing fetched from anywhere.
if grep -qiE "(src|href)[[:space:]]*=[[:space:]]*[\"']?[[:space:]]*(https?:)?//" "$PAGE"; then
  fail "report.html refers to an external resource"
fi
charts=$(grep -o '<canvas ' "$PAGE" | wc -l)
((charts >= 3)) || fail "$charts canvases in $PAGE; want the replicas, the cost and a headroom chart per scenario"

# Chromium with a throwaway profile, no network and software rendering. The virtual time budget
# lets the page's timer (the render check) run before the DOM is dumped or the screenshot taken.
PROFILE=$(mktemp -d)
trap 'rm -rf "$PROFILE"' EXIT
FLAGS=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync --disable-extensions
  "--user-data-dir=$PROFILE" --virtual-time-budget=5000 --enable-logging=stderr --v=0
  "--window-size=1400,3600")
# status HTML_FILE DOM_OUT LOG: the page's #render-status element once its scripts have run, up to
# the end of its text's first line (an error's stack trace follows on the next lines).
status() {
  "$CHROMIUM" "${FLAGS[@]}" --dump-dom "file://$1" >"$2" 2>"$3" \
    || { tail -20 "$3" >&2; fail "chromium --dump-dom failed on $1"; }
  grep -o '<span id="render-status"[^>]*>[^<]*' "$2"
}

got=$(status "$PAGE" "$OUT/dom.html" "$OUT/chromium_dom.log")
echo "render status: $got"
[[ $got == "<span id=\"render-status\" data-ok=\"true\">rendered $charts charts" ]] \
  || fail "page did not render its $charts charts: ${got:-no #render-status}"
# Console errors and uncaught exceptions Chromium logged (the page also catches its own).
if grep -E "CONSOLE.*(Uncaught|Error)|:ERROR:CONSOLE" "$OUT/chromium_dom.log"; then
  fail "console errors (see $OUT/chromium_dom.log)"
fi
# The hostile scenario name is text in the document, never an element.
grep -qF '<b>x</b>' "$OUT/dom.html" && fail "a scenario name became markup (see $OUT/dom.html)"
grep -qF '&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;' "$OUT/dom.html" \
  || fail "the scenario name is not on the page as text (see $OUT/dom.html)"

# Without Chart.js the page's own check must fail, and say why.
"$GEN" "$OUT/no-chartjs" --chartjs= 2>>"$OUT/generator.stderr" || fail "$GEN --chartjs= failed"
bad=$(status "$OUT/no-chartjs/report.html" "$OUT/no-chartjs/dom.html" "$OUT/no-chartjs/chromium.log")
echo "without Chart.js: $bad"
[[ $bad == *'data-ok="false"'*'Chart.js is missing from the page'* ]] \
  || fail "a page without Chart.js did not report it: ${bad:-no #render-status}"

SHOT="$OUT/plan_screenshot.png"
"$CHROMIUM" "${FLAGS[@]}" --hide-scrollbars --screenshot="$SHOT" "file://$PAGE" \
  >/dev/null 2>"$OUT/chromium_shot.log" || { tail -20 "$OUT/chromium_shot.log" >&2; fail "screenshot failed"; }
[[ -s $SHOT ]] || fail "no screenshot at $SHOT"
echo "plan_browser_test: ok ($charts charts); screenshot $SHOT"
