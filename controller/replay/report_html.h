// The replay report as one self-contained web page, report.html, beside summary.json and
// timeline.csv: the cost/attainment scatter of every policy (GPU-hours against SLO attainment,
// with the attainment target and the zero-lag oracle's GPU-hours as reference lines), the summary
// table (the terminal table's content), plots over time for the policies the reader picks
// (traffic, replicas ready and warming with the scale events, p90 TTFT against the SLO, KV use,
// queue depth, rejections; for twinscale's policies, "what the twin said, what happened": the
// attainment the twin forecast at each decision beside what the truth served over the same span,
// twin_error.h), the resolved configuration and the truth perturbations.
//
// The page needs no network: Chart.js (Debian's libjs-chart.js, a single UMD file) and the data
// are inlined. The data is one JSON document (summary.json's content plus the timelines, the
// scale events and the oracle's fleet per minute) in a <script type="application/json"> element,
// with every '<' written as \u003c so no text in it (a policy name, a reason) can close the
// element. Once its charts are drawn, the page checks that every canvas has painted pixels and
// writes "rendered N charts" (or the first script error) into #render-status, for the browser test.
//
// ReportHtml is pure; ReadChartJs and WriteReportHtml do file I/O. Thread-safe (no shared state).
#ifndef TWINSCALE_CONTROLLER_REPLAY_REPORT_HTML_H_
#define TWINSCALE_CONTROLLER_REPLAY_REPORT_HTML_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/replay/oracle.h"
#include "controller/replay/replay_driver.h"
#include "controller/replay/report.h"

namespace twinscale::replay {

// Where Debian's libjs-chart.js puts the Chart.js 3 UMD build.
inline constexpr char kDefaultChartJsPath[] = "/usr/share/javascript/chart.js/chart.min.js";
// The environment variable `twinscale replay` reads when --chartjs is not given.
inline constexpr char kChartJsEnv[] = "TWINSCALE_CHARTJS";

// The page. `summaries` are the table's rows (as for SummaryJson); `results` give the timelines
// (matched to the summaries by policy name; a summary without a timeline gets no plots); `oracle`
// may be null; `chartjs` is the Chart.js source to inline (an empty one yields a page whose
// status reports that Chart.js is missing). Deterministic: the same inputs give the same bytes.
std::string ReportHtml(const ReportHeader& header, const std::vector<ReplaySummary>& summaries,
                       const OracleResult* oracle, const std::vector<ReplayResult>& results,
                       std::string_view chartjs);

// The text of the Chart.js file at `path`. NotFound naming `path` (and the Debian package, and
// --chartjs / TWINSCALE_CHARTJS) when it is missing; other file errors as errno maps them.
absl::StatusOr<std::string> ReadChartJs(const std::string& path);

// Reads Chart.js from `chartjs_path` and writes `dir`/report.html (the directory must exist).
// Errors from ReadChartJs as they are (nothing is written then); file system errors writing the
// page as the status errno maps to, naming the path.
absl::Status WriteReportHtml(const std::string& dir, const ReportHeader& header,
                             const std::vector<ReplaySummary>& summaries,
                             const OracleResult* oracle, const std::vector<ReplayResult>& results,
                             const std::string& chartjs_path = kDefaultChartJsPath);

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_REPORT_HTML_H_
