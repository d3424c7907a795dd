// The replay report: the policies side by side, the cheapest member of each family that meets the
// attainment target, and the zero-lag oracle's lower bound; as a table for the terminal, as
// summary.json (numbers rounded for people: GPU-hours to 3 decimals, milliseconds to 0.1,
// shares to 4 decimals) and as one timeline.csv with a `policy` column.
//
// FormatTable, SummaryJson and TimelineCsv are pure; WriteSummaryJson and WriteTimelineCsv are
// replay's only file I/O. Thread-safe (no shared state).
#ifndef TWINSCALE_CONTROLLER_REPLAY_REPORT_H_
#define TWINSCALE_CONTROLLER_REPLAY_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "controller/replay/oracle.h"
#include "controller/replay/replay_driver.h"
#include "simulator/model/run_stats.h"

namespace twinscale::replay {

// What the report is about (printed above the table and stored in summary.json).
struct ReportHeader {
  std::string trace;  // Trace::source, or a description
  int64_t requests = 0;
  double span_seconds = 0;  // first to last arrival
  std::string deployment;   // DeploymentSpec::name
  std::string truth;        // Describe(truth)
  uint64_t seed = 1;
  sim::TtftSlo slo;
  AttainmentTarget target;
  // Played before the trace, not counted (ReplayConfig::pre_roll); zero: every policy starts cold.
  absl::Duration pre_roll = absl::ZeroDuration();
  // The pre-roll played what came before the trace (ReplayConfig::history), not its own start.
  bool pre_roll_from_history = false;
};

// One family's verdict: its cheapest member meeting the target, if any.
struct FamilyBest {
  std::string family;
  int members = 0;
  bool any_meets = false;
  std::string policy;  // the cheapest member meeting the target (empty if none)
  double gpu_hours = 0;
};

// Families in order of first appearance in `summaries`; the cheapest by GPU-hours, ties to the
// first listed.
std::vector<FamilyBest> CheapestPerFamily(const std::vector<ReplaySummary>& summaries,
                                          const AttainmentTarget& target);

// How the run started, for the report's headers: "pre-roll 10m (the trace's first 10m played
// before it, not counted)", or that there was none.
std::string PreRollText(absl::Duration pre_roll, bool from_history = false);

// How the trace's last, partial minute counts in the share of minutes (ReplaySummary::
// last_minute_weight), for the target's line: " (the last minute, 22 s of the trace, weighs 0.37
// of one)"; empty where it is (within half a percent) a whole minute or there is no policy.
std::string LastMinuteText(const std::vector<ReplaySummary>& summaries);

// The side-by-side table, then a line of the twin's error per policy that has one (twin_error.h).
// `oracle` may be null (not computed).
std::string FormatTable(const ReportHeader& header, const std::vector<ReplaySummary>& summaries,
                        const OracleResult* oracle);

// summary.json's text: {"config": {...}, "policies": [...], "cheapest_meeting_target": [...],
// "oracle": {...} or null}, keys in that order. Each policy's "twin_error" is its
// ReplaySummary::twin_error (twin_error.h: decisions, attainment_bias_points,
// attainment_mae_points, ttft_decisions, ttft_p90_bias_ms, ttft_p90_mae_ms) or null.
std::string SummaryJson(const ReportHeader& header, const std::vector<ReplaySummary>& summaries,
                        const OracleResult* oracle);

// timeline.csv's text: a header line, then every policy's rows in the order given.
std::string TimelineCsv(const std::vector<ReplayResult>& results);

// Write `dir`/summary.json and `dir`/timeline.csv (the directory must exist). File system errors
// come back as the status errno maps to (NotFound, PermissionDenied, ...), naming the path.
absl::Status WriteSummaryJson(const std::string& dir, const ReportHeader& header,
                              const std::vector<ReplaySummary>& summaries,
                              const OracleResult* oracle);
absl::Status WriteTimelineCsv(const std::string& dir, const std::vector<ReplayResult>& results);
// `v` rounded to `digits` decimals, for the report's files: JSON then prints the shortest text of
// the rounded double ("0.9909"). Not finite: unchanged.
double RoundForPeople(double v, int digits);
// Writes `text` to `path` (replaced); errors as above.
absl::Status WriteReportFile(const std::string& path, const std::string& text);

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_REPORT_H_
