// The replay report: see report.h. The only file I/O of replay is at the bottom of this file.
#include "controller/replay/report.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace twinscale::replay {
namespace {

std::string SloText(const sim::TtftSlo& slo) {
  std::string s = absl::StrFormat("TTFT p%g <= %g ms", slo.percentile, slo.threshold.millis());
  if (slo.per_prompt_token > sim::SimDuration::Zero()) {
    absl::StrAppendFormat(&s, " + %g ms per prompt token", slo.per_prompt_token.millis());
  }
  return s;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

// One part of the twin's error (twin_error.h, "The error by what the arrivals did").
nlohmann::ordered_json PartJson(const TwinErrorPart& p) {
  return {{"decisions", p.decisions},
          {"attainment_bias_points", RoundForPeople(p.attainment_bias_points, 2)},
          {"attainment_mae_points", RoundForPeople(p.attainment_mae_points, 2)}};
}

}  // namespace

double RoundForPeople(double v, int digits) {
  if (!std::isfinite(v)) return v;
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

absl::Status WriteReportFile(const std::string& path, const std::string& text) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (file == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("cannot create ", path));
  if (std::fwrite(text.data(), 1, text.size(), file.get()) != text.size()) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", path));
  }
  FILE* f = file.release();
  if (std::fclose(f) != 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::vector<FamilyBest> CheapestPerFamily(const std::vector<ReplaySummary>& summaries,
                                          const AttainmentTarget& target) {
  std::vector<FamilyBest> out;
  for (const ReplaySummary& s : summaries) {
    if (s.admission_enforced) continue;  // admission's effect is reported beside, not compared
    FamilyBest* best = nullptr;
    for (FamilyBest& f : out) {
      if (f.family == s.family) best = &f;
    }
    if (best == nullptr) {
      out.emplace_back();
      best = &out.back();
      best->family = s.family;
    }
    ++best->members;
    if (!MeetsTarget(s, target)) continue;
    if (!best->any_meets || s.gpu_hours < best->gpu_hours) {
      best->any_meets = true;
      best->policy = s.policy;
      best->gpu_hours = s.gpu_hours;
    }
  }
  return out;
}

std::string PreRollText(absl::Duration pre_roll, bool from_history) {
  if (pre_roll <= absl::ZeroDuration()) return "no pre-roll (every policy starts cold)";
  if (from_history) {
    return absl::StrCat("pre-roll ", absl::FormatDuration(pre_roll),
                        " (the traffic just before the trace played first, not counted)");
  }
  return absl::StrCat("pre-roll ", absl::FormatDuration(pre_roll), " (the trace's first ",
                      absl::FormatDuration(pre_roll), " played before it, not counted)");
}

std::string LastMinuteText(const std::vector<ReplaySummary>& summaries) {
  // Every policy replays the same trace: its last minute weighs the same in each.
  if (summaries.empty() || !(summaries.front().last_minute_weight < 0.995)) return "";
  const double weight = summaries.front().last_minute_weight;
  return absl::StrFormat(" (the last minute, %.0f s of the trace, weighs %.2f of one)", weight * 60,
                         weight);
}

std::string FormatTable(const ReportHeader& h, const std::vector<ReplaySummary>& summaries,
                        const OracleResult* oracle) {
  std::string out;
  absl::StrAppendFormat(&out, "twinscale replay: %s, %d requests over %.0f s\n", h.trace,
                        h.requests, h.span_seconds);
  absl::StrAppendFormat(&out, "deployment %s, truth %s, seed %d, SLO %s, %s\n", h.deployment,
                        h.truth, h.seed, SloText(h.slo),
                        PreRollText(h.pre_roll, h.pre_roll_from_history));
  absl::StrAppendFormat(&out,
                        "target: >= %.0f%% of requests within the SLO and >= %.0f%% of minutes "
                        "with traffic meeting it",
                        h.target.requests * 100, h.target.minutes * 100);
  absl::StrAppend(&out, LastMinuteText(summaries), "\n\n");
  size_t w = 6;
  for (const ReplaySummary& s : summaries) w = std::max(w, s.policy.size());
  const int width = static_cast<int>(w);
  absl::StrAppendFormat(&out, "%-*s %9s %9s %8s %9s %9s %9s %8s %16s %6s %5s %7s %s\n", width,
                        "policy", "GPU-h", "served", "rejected", "TTFT p50", "p90", "p99", "attain",
                        "minutes met", "scales", "max", "wall s", "target");
  for (const ReplaySummary& s : summaries) {
    const std::string minutes = absl::StrFormat("%d/%d %.1f%%", s.minutes_meeting_slo,
                                                s.minutes_with_traffic, s.minute_share * 100);
    absl::StrAppendFormat(
        &out, "%-*s %9.3f %9d %8d %9.1f %9.1f %9.1f %7.2f%% %16s %6d %5d %7.2f %s\n", width,
        s.policy, s.gpu_hours, s.served, s.rejected, s.ttft_p50_ms, s.ttft_p90_ms, s.ttft_p99_ms,
        s.attainment * 100, minutes, s.scale_events, s.max_replicas, s.wall_seconds,
        MeetsTarget(s, h.target) ? "met" : "missed");
  }
  bool any_twin = false;
  for (const ReplaySummary& s : summaries) {
    if (!s.twin_error) continue;
    if (!any_twin) out += "\n";
    any_twin = true;
    const TwinError& e = *s.twin_error;
    absl::StrAppendFormat(&out,
                          "%-*s twin error: attainment bias %+.1f pts, MAE %.1f pts over %d "
                          "decisions (sampling alone: %.1f); p90 TTFT bias %+.0f ms, MAE %.0f ms\n",
                          width, s.policy, e.attainment_bias_points, e.attainment_mae_points,
                          e.decisions, e.attainment_mae_floor_points, e.ttft_p90_bias_ms,
                          e.ttft_p90_mae_ms);
    absl::StrAppendFormat(
        &out,
        "%-*s   arrivals as forecast: bias %+.1f, MAE %.1f over %d; above it: %+.1f, %.1f over "
        "%d; below it: %+.1f, %.1f over %d\n",
        width, "", e.rate_as_forecast.attainment_bias_points,
        e.rate_as_forecast.attainment_mae_points, e.rate_as_forecast.decisions,
        e.rate_above_forecast.attainment_bias_points, e.rate_above_forecast.attainment_mae_points,
        e.rate_above_forecast.decisions, e.rate_below_forecast.attainment_bias_points,
        e.rate_below_forecast.attainment_mae_points, e.rate_below_forecast.decisions);
  }
  if (any_twin) {
    out +=
        "  (the twin's forecast for the fleet each decision left, minus what the truth served "
        "over the same span, settled decisions only)\n";
  }
  out += "\ncheapest member of each family meeting the target:\n";
  for (const FamilyBest& f : CheapestPerFamily(summaries, h.target)) {
    if (f.any_meets) {
      absl::StrAppendFormat(&out, "  %-*s %-*s %9.3f GPU-h\n", width, f.family, width, f.policy,
                            f.gpu_hours);
    } else {
      absl::StrAppendFormat(&out, "  %-*s none of %d meets it\n", width, f.family, f.members);
    }
  }
  bool any_admission = false;
  for (const ReplaySummary& s : summaries) any_admission = any_admission || s.admission_enforced;
  if (any_admission) {
    out +=
        "  (\"+admission\" rows: the same policy with its advisory admission limits enforced at "
        "the "
        "gateway, rejected requests counted as misses; not in the comparison)\n";
  }
  if (oracle != nullptr) {
    absl::StrAppendFormat(&out,
                          "zero-lag oracle (lower bound): %.3f GPU-h, at most %d replicas, %d of "
                          "%d minutes unmeetable by any fleet\n",
                          oracle->gpu_hours, oracle->max_replicas, oracle->unmeetable_minutes,
                          oracle->minutes.size());
    if (oracle->for_share) {
      const ShareOracle& f = *oracle->for_share;
      if (f.reached) {
        absl::StrAppendFormat(&out,
                              "zero-lag oracle for the target (every minute at p90, %.0f%% of "
                              "requests): %.3f GPU-h, at most %d replicas, %.2f%% of requests\n",
                              f.share * 100, f.gpu_hours, f.max_replicas, f.attainment * 100);
        if (f.late) {
          const LateFollower& l = *f.late;
          if (l.reached) {
            absl::StrAppendFormat(
                &out,
                "  the same fleet %d min late (a perfect forecast, replicas Ready "
                "after the warm-up): +%d replica%s to meet the target, %.3f GPU-h, "
                "%.2f%% of requests\n",
                l.lag_minutes, l.margin, l.margin == 1 ? "" : "s", l.gpu_hours, l.attainment * 100);
          } else {
            absl::StrAppendFormat(&out,
                                  "  the same fleet %d min late: even +%d replicas miss the target "
                                  "(%.2f%% of requests, %.1f%% of minutes)\n",
                                  l.lag_minutes, l.margin, l.attainment * 100,
                                  l.minute_share * 100);
          }
        }
      } else {
        absl::StrAppendFormat(&out,
                              "zero-lag oracle for the target: out of reach, %d replicas every "
                              "minute bring %.2f%% of requests within the SLO (%.0f%% asked)\n",
                              f.max_replicas, f.attainment * 100, f.share * 100);
      }
    }
  }
  return out;
}

std::string SummaryJson(const ReportHeader& h, const std::vector<ReplaySummary>& summaries,
                        const OracleResult* oracle) {
  using nlohmann::ordered_json;
  ordered_json j;
  ordered_json& c = j["config"];
  c["trace"] = h.trace;
  c["requests"] = h.requests;
  c["span_seconds"] = RoundForPeople(h.span_seconds, 3);
  c["deployment"] = h.deployment;
  c["truth"] = h.truth;
  c["seed"] = h.seed;
  c["pre_roll_seconds"] = RoundForPeople(absl::ToDoubleSeconds(h.pre_roll), 3);
  c["slo"] = {{"ttft_ms", RoundForPeople(h.slo.threshold.millis(), 3)},
              {"per_prompt_token_ms", RoundForPeople(h.slo.per_prompt_token.millis(), 6)},
              {"percentile", h.slo.percentile}};
  c["target"] = {{"requests", h.target.requests}, {"minutes", h.target.minutes}};
  ordered_json policies = ordered_json::array();
  for (const ReplaySummary& s : summaries) {
    ordered_json p;
    p["policy"] = s.policy;
    p["family"] = s.family;
    p["gpu_hours"] = RoundForPeople(s.gpu_hours, 3);
    p["requests"] = s.requests;
    p["served"] = s.served;
    p["rejected"] = s.rejected;
    p["aborted"] = s.aborted;
    p["unfinished"] = s.unfinished;
    p["ttft_ms"] = {{"p50", RoundForPeople(s.ttft_p50_ms, 1)},
                    {"p90", RoundForPeople(s.ttft_p90_ms, 1)},
                    {"p99", RoundForPeople(s.ttft_p99_ms, 1)}};
    p["slo_attainment"] = RoundForPeople(s.attainment, 4);
    p["minutes_with_traffic"] = s.minutes_with_traffic;
    p["minutes_meeting_slo"] = s.minutes_meeting_slo;
    p["minute_share"] = RoundForPeople(s.minute_share, 4);
    p["minutes_weighted"] = RoundForPeople(s.minutes_weighted, 3);
    p["minutes_met_weighted"] = RoundForPeople(s.minutes_met_weighted, 3);
    p["meets_target"] = MeetsTarget(s, h.target);
    p["scale_events"] = s.scale_events;
    p["max_replicas"] = s.max_replicas;
    p["decisions"] = s.decisions;
    p["simulated_seconds"] = RoundForPeople(s.simulated_seconds, 3);
    p["pre_roll_seconds"] = RoundForPeople(s.pre_roll_seconds, 3);
    p["admission_enforced"] = s.admission_enforced;
    p["wall_seconds"] = RoundForPeople(s.wall_seconds, 3);
    if (s.twin_error) {  // twin_error.h: predicted minus observed, settled decisions
      const TwinError& e = *s.twin_error;
      p["twin_error"] = {
          {"decisions", e.decisions},
          {"attainment_bias_points", RoundForPeople(e.attainment_bias_points, 2)},
          {"attainment_mae_points", RoundForPeople(e.attainment_mae_points, 2)},
          {"attainment_mae_floor_points", RoundForPeople(e.attainment_mae_floor_points, 2)},
          {"ttft_decisions", e.ttft_decisions},
          {"ttft_p90_bias_ms", RoundForPeople(e.ttft_p90_bias_ms, 1)},
          {"ttft_p90_mae_ms", RoundForPeople(e.ttft_p90_mae_ms, 1)},
          {"by_arrivals",
           {{"as_forecast", PartJson(e.rate_as_forecast)},
            {"above_forecast", PartJson(e.rate_above_forecast)},
            {"below_forecast", PartJson(e.rate_below_forecast)}}}};
    } else {
      p["twin_error"] = nullptr;
    }
    policies.push_back(std::move(p));
  }
  j["policies"] = std::move(policies);
  ordered_json best = ordered_json::array();
  for (const FamilyBest& f : CheapestPerFamily(summaries, h.target)) {
    ordered_json b;
    b["family"] = f.family;
    b["members"] = f.members;
    b["policy"] = f.any_meets ? ordered_json(f.policy) : ordered_json(nullptr);
    b["gpu_hours"] =
        f.any_meets ? ordered_json(RoundForPeople(f.gpu_hours, 3)) : ordered_json(nullptr);
    best.push_back(std::move(b));
  }
  j["cheapest_meeting_target"] = std::move(best);
  if (oracle != nullptr) {
    j["oracle"] = {{"gpu_hours", RoundForPeople(oracle->gpu_hours, 3)},
                   {"max_replicas", oracle->max_replicas},
                   {"minutes", oracle->minutes.size()},
                   {"unmeetable_minutes", oracle->unmeetable_minutes}};
    // Each minute's smallest fleet, in order: how fast the need moves against the warm-up.
    ordered_json by_minute = ordered_json::array();
    for (const OracleMinute& m : oracle->minutes) by_minute.push_back(m.replicas);
    j["oracle"]["replicas_by_minute"] = std::move(by_minute);
    if (oracle->for_share) {
      const ShareOracle& f = *oracle->for_share;
      nlohmann::json share_by_minute = nlohmann::json::array();
      for (const OracleMinute& m : oracle->minutes) share_by_minute.push_back(m.share_replicas);
      j["oracle"]["for_target"] = {
          {"request_share", f.share},
          {"reached", f.reached},
          {"attainment", RoundForPeople(f.attainment, 4)},
          {"gpu_hours", f.reached ? nlohmann::json(RoundForPeople(f.gpu_hours, 3)) : nullptr},
          {"max_replicas", f.max_replicas},
          {"replicas_by_minute", std::move(share_by_minute)}};
      if (f.late) {
        const LateFollower& l = *f.late;
        j["oracle"]["for_target"]["late"] = {{"lag_minutes", l.lag_minutes},
                                             {"reached", l.reached},
                                             {"margin", l.margin},
                                             {"gpu_hours", RoundForPeople(l.gpu_hours, 3)},
                                             {"attainment", RoundForPeople(l.attainment, 4)},
                                             {"minute_share", RoundForPeople(l.minute_share, 4)}};
      }
    }
  } else {
    j["oracle"] = nullptr;
  }
  return j.dump(2) + "\n";
}

std::string TimelineCsv(const std::vector<ReplayResult>& results) {
  std::string out =
      "policy,time_s,arrivals,arrival_rps,prompt_tokens_per_s,output_tokens_per_s,desired,ready,"
      "warming,waiting,running,kv_mean,first_tokens,ttft_p90_ms,rejected,reason\n";
  for (const ReplayResult& r : results) {
    const std::string policy = CsvField(r.summary.policy);
    for (const TimelineRow& row : r.timeline) {
      absl::StrAppendFormat(&out, "%s,%.3f,%d,%.3f,%.1f,%.1f,%d,%d,%d,%d,%d,%.4f,%d,", policy,
                            absl::ToDoubleSeconds(row.time), row.arrivals, row.arrival_rps,
                            row.prompt_tokens_per_s, row.output_tokens_per_s, row.desired,
                            row.ready, row.warming, row.waiting, row.running, row.kv_mean,
                            row.first_tokens);
      if (row.ttft_p90_ms.has_value()) absl::StrAppendFormat(&out, "%.1f", *row.ttft_p90_ms);
      absl::StrAppendFormat(&out, ",%d,%s\n", row.rejected, CsvField(row.reason));
    }
  }
  return out;
}

absl::Status WriteSummaryJson(const std::string& dir, const ReportHeader& header,
                              const std::vector<ReplaySummary>& summaries,
                              const OracleResult* oracle) {
  return WriteReportFile(absl::StrCat(dir, "/summary.json"),
                         SummaryJson(header, summaries, oracle));
}

absl::Status WriteTimelineCsv(const std::string& dir, const std::vector<ReplayResult>& results) {
  return WriteReportFile(absl::StrCat(dir, "/timeline.csv"), TimelineCsv(results));
}

}  // namespace twinscale::replay
