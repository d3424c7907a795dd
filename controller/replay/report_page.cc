// The frame of replay's and plan's report.html: see report_page.h. The shared stylesheet and the
// script around a page's drawing code are the raw strings below.
#include "controller/replay/report_page.h"

#include <cctype>

#include "absl/strings/str_cat.h"

namespace twinscale::replay {
namespace {

using nlohmann::ordered_json;

bool StartsWithNoCase(std::string_view s, size_t pos, std::string_view prefix) {
  if (s.size() - pos < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[pos + i])) != prefix[i]) return false;
  }
  return true;
}

// The rules every page uses; a page's own rules follow, then kFooterStyle.
constexpr char kSharedStyle[] = R"css(
:root { --fg:#1d2430; --muted:#5b6577; --line:#d9dee7; --bg:#f6f7f9; --card:#fff; --accent:#2b6cb0; }
* { box-sizing:border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
       color:var(--fg); background:var(--bg); }
header { background:#1f2a3c; color:#fff; padding:18px 28px 14px; }
header h1 { margin:0 0 4px; font-size:22px; font-weight:600; }
header .sub { color:#c7d0de; margin:0 0 10px; }
header dl { display:flex; flex-wrap:wrap; gap:6px 28px; margin:0; }
header dl div { display:flex; gap:6px; }
header dt { color:#9fb0c8; } header dd { margin:0; font-weight:500; }
main { max-width:1500px; margin:0 auto; padding:8px 28px 28px; }
section { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:14px 20px 18px;
          margin:18px 0; }
h2 { font-size:18px; margin:0 0 4px; } h3 { font-size:15px; margin:18px 0 6px; }
p.note, .caption { color:var(--muted); margin:2px 0 10px; font-size:13px; }
.caption { min-height:2.9em; margin:0 0 4px; }
.grid { display:grid; grid-template-columns:repeat(auto-fit,minmax(560px,1fr)); gap:16px 24px; }
.chart { position:relative; height:300px; }
.chart.tall { height:500px; }
figure { margin:0; } figcaption { font-weight:600; margin:0 0 2px; }
.scroll { overflow-x:auto; }
table { border-collapse:collapse; font-variant-numeric:tabular-nums; }
table.summary { width:100%; font-size:13px; }
table.summary th, table.summary td { padding:4px 8px; border-bottom:1px solid var(--line); text-align:right;
                                     white-space:nowrap; }
table.summary th:first-child, table.summary td:first-child { text-align:left; }
table.summary thead th { background:#eef1f5; font-weight:600; }
table.summary tbody tr:hover { background:#f3f7fc; }
table.kv th { text-align:left; padding:3px 18px 3px 0; font-weight:600; vertical-align:top; white-space:nowrap; }
table.kv td { padding:3px 14px 3px 0; }
.badge { display:inline-block; padding:0 7px; border-radius:9px; font-size:12px; font-weight:600; }
.badge.met, .badge.on { background:#dcf3e3; color:#17663a; }
.badge.missed { background:#fbe3e3; color:#a12626; }
.badge.off { background:#eceef2; color:#6b7485; }
.swatch { display:inline-block; width:11px; height:11px; border-radius:2px; margin-right:7px; vertical-align:-1px; }
)css";

constexpr char kFooterStyle[] =
    R"css(footer { color:var(--muted); font-size:12px; max-width:1500px; margin:0 auto; padding:0 28px 24px; }
code { font-size:12px; background:#eef1f5; padding:0 4px; border-radius:3px; }
)css";

// Before the page's drawing code: the error capture, the render check and the call to build().
constexpr char kScriptStart[] = R"js(
(function () {
  'use strict';
  const errors = [];
  window.addEventListener('error', (e) => errors.push(String(e.message || e)));
  window.addEventListener('unhandledrejection', (e) => errors.push('unhandled rejection: ' + String(e.reason)));
  const consoleError = console.error;
  console.error = function (...args) { errors.push(args.map(String).join(' ')); consoleError.apply(console, args); };
  const statusEl = document.getElementById('render-status');
  function setStatus(text, ok) { statusEl.textContent = text; statusEl.dataset.ok = ok ? 'true' : 'false'; }
  const charts = [];

  function checkRendered() {
    if (errors.length) { setStatus('error: ' + errors[0], false); return; }
    let blank = 0;
    for (const c of charts) {
      const cv = c.canvas;
      const px = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
      let painted = false;
      for (let i = 3; i < px.length; i += 4) { if (px[i] !== 0) { painted = true; break; } }
      if (!painted) blank++;
    }
    if (blank) setStatus('blank charts: ' + blank + ' of ' + charts.length, false);
    else setStatus('rendered ' + charts.length + ' charts', true);
  }

  try {
    if (typeof Chart === 'undefined') throw new Error('Chart.js is missing from the page');
    const data = JSON.parse(document.getElementById('report-data').textContent);
    build(data);
  } catch (e) {
    errors.push(String(e && e.stack || e));
  }
  setTimeout(checkRendered, 50);

  function build(data) {
    Chart.defaults.font.family = 'system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif';
    Chart.defaults.font.size = 12;
    Chart.defaults.color = '#3a4454';
    Chart.defaults.animation = false;
    Chart.defaults.maintainAspectRatio = false;
    Chart.defaults.elements.point.radius = 0;
    Chart.defaults.elements.line.borderWidth = 1.6;
)js";

constexpr char kScriptEnd[] = R"js(  }
})();
)js";

}  // namespace

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string ScriptJson(const ordered_json& j) {
  const std::string text = j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

std::string InlineScript(std::string_view js) {
  std::string out;
  out.reserve(js.size() + 16);
  for (size_t i = 0; i < js.size(); ++i) {
    out += js[i];
    if (js[i] == '<' &&
        (StartsWithNoCase(js, i + 1, "/script") || StartsWithNoCase(js, i + 1, "!--"))) {
      out += '\\';
    }
  }
  return out;
}

std::string ChartPageHtml(const ChartPage& page) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  absl::StrAppend(&out, "<title>", page.title, "</title>\n<style>", kSharedStyle,
                  absl::string_view(page.style.data(), page.style.size()), kFooterStyle,
                  "</style>\n</head>\n<body>\n", page.body);
  absl::StrAppend(&out, "<footer>", page.footer,
                  " Render check: <span id=\"render-status\" data-ok=\"false\">not run</span>"
                  "</footer>\n");
  absl::StrAppend(&out, "<script type=\"application/json\" id=\"report-data\">",
                  ScriptJson(page.data), "</script>\n");
  absl::StrAppend(&out, "<script>\n", InlineScript(page.chartjs), "\n</script>\n");
  absl::StrAppend(&out, "<script>", kScriptStart,
                  absl::string_view(page.build.data(), page.build.size()), kScriptEnd,
                  "</script>\n</body>\n</html>\n");
  return out;
}

}  // namespace twinscale::replay
