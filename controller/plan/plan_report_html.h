// The capacity review as one self-contained web page, report.html, written by `twinscale plan
// --out DIR` beside plan.json: replicas needed and cost per scenario and profile (bar charts with
// the seeds' spread), the headroom per resource at the planned fleet (horizontal bars per scenario,
// the binding resource marked, the risk word coloured), the warm reserve, and the tables of the
// terminal output. In the replay report's style (controller/replay/report_html.h): Chart.js and
// the data inlined (plan.json's document in a <script type="application/json"> element, every '<'
// written as \u003c), no network; once its charts are drawn the page checks that every canvas has
// painted pixels and writes "rendered N charts" (or the first script error) into #render-status,
// for the browser test (tests/integration/plan_browser_test.sh).
//
// PlanReportHtml is pure; WritePlanReportHtml does file I/O. Thread-safe.
#ifndef TWINSCALE_CONTROLLER_PLAN_PLAN_REPORT_HTML_H_
#define TWINSCALE_CONTROLLER_PLAN_PLAN_REPORT_HTML_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace twinscale::plan {

// The page for `plan` (plan.json's document, plan_output.h's PlanJson). `chartjs` is the Chart.js
// source to inline (an empty one yields a page whose status reports that Chart.js is missing).
// Deterministic: the same inputs give the same bytes.
std::string PlanReportHtml(const nlohmann::ordered_json& plan, std::string_view chartjs);

// Reads Chart.js from `chartjs_path` (replay::ReadChartJs: its errors as they are, nothing written)
// and writes `dir`/report.html (the directory must exist); file errors name the path.
absl::Status WritePlanReportHtml(const std::string& dir, const nlohmann::ordered_json& plan,
                                 const std::string& chartjs_path);

}  // namespace twinscale::plan

#endif  // TWINSCALE_CONTROLLER_PLAN_PLAN_REPORT_HTML_H_
