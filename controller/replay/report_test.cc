// The report: the cheapest member per family meeting the target, the table's content, summary.json
// (rounded numbers, keys in order), timeline.csv (quoting), and the two file writers.
#include "controller/replay/report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace twinscale::replay {
namespace {

ReplaySummary Summary(std::string policy, double gpu_hours, double attainment,
                      double minute_share) {
  ReplaySummary s;
  s.policy = policy;
  s.family = PolicyFamily(policy);
  s.gpu_hours = gpu_hours;
  s.attainment = attainment;
  s.minute_share = minute_share;
  s.requests = 1000;
  s.served = 990;
  s.rejected = 10;
  s.minutes_with_traffic = 60;
  s.minutes_meeting_slo = static_cast<int64_t>(minute_share * 60 + 0.5);
  return s;
}

std::vector<ReplaySummary> Sample() {
  return {
      Summary("keda-queue-1", 12.0, 0.99, 0.99),    // meets, dearer
      Summary("keda-queue-5", 9.5, 0.96, 0.95),     // meets, cheapest keda (0.95 exactly)
      Summary("keda-queue-10", 7.0, 0.90, 0.97),    // requests miss
      Summary("hpa-kv-0.7", 8.0, 0.97, 0.94),       // minutes miss
      Summary("static-12", 14.123456, 0.999, 1.0),  // meets
      Summary("twinscale", 8.5, 0.97, 0.98),        // meets
  };
}

TEST(ReportTest, CheapestMemberPerFamilyMeetingBothTargets) {
  const std::vector<FamilyBest> best = CheapestPerFamily(Sample(), AttainmentTarget{});
  ASSERT_EQ(best.size(), 4u);
  EXPECT_EQ(best[0].family, "keda-queue");
  EXPECT_EQ(best[0].members, 3);
  EXPECT_TRUE(best[0].any_meets);
  EXPECT_EQ(best[0].policy, "keda-queue-5");
  EXPECT_EQ(best[0].gpu_hours, 9.5);
  EXPECT_EQ(best[1].family, "hpa-kv");
  EXPECT_FALSE(best[1].any_meets);
  EXPECT_EQ(best[2].policy, "static-12");
  EXPECT_EQ(best[3].policy, "twinscale");
}

TEST(ReportTest, TableShowsEveryPolicyTheFamiliesAndTheOracle) {
  ReportHeader h;
  h.trace = "conv.csv";
  h.requests = 1000;
  h.span_seconds = 3600;
  h.deployment = "llama-3.1-8b-h100-sxm-tp1";
  h.truth = "none";
  OracleResult oracle;
  oracle.gpu_hours = 6.25;
  oracle.max_replicas = 9;
  oracle.minutes.resize(60);
  const std::string table = FormatTable(h, Sample(), &oracle);
  for (const char* want :
       {"conv.csv, 1000 requests over 3600 s", "truth none", "TTFT p90 <= 500 ms",
        ">= 95% of requests", "keda-queue-10", "14.123", "missed", "hpa-kv", "none of 1 meets it",
        "keda-queue-5      9.500 GPU-h", "zero-lag oracle (lower bound): 6.250 GPU-h",
        "0 of 60 minutes unmeetable"}) {
    EXPECT_NE(table.find(want), std::string::npos) << want << "\n" << table;
  }
  EXPECT_EQ(FormatTable(h, Sample(), nullptr).find("oracle"), std::string::npos);
  EXPECT_EQ(table.find("oracle for the target"), std::string::npos);  // not asked

  // The share oracle, reached and out of reach.
  oracle.for_share = ShareOracle{0.95, true, 0.9503, 7.5, 11, std::nullopt};
  std::string with_share = FormatTable(h, Sample(), &oracle);
  EXPECT_NE(with_share.find("zero-lag oracle for the target (every minute at p90, 95% of "
                            "requests): 7.500 GPU-h, at most 11 replicas, 95.03% of requests"),
            std::string::npos)
      << with_share;
  // Followed late: met with a margin, or not with the largest tried.
  oracle.for_share->late = LateFollower{2, true, 1, 8.25, 0.9549, 1.0};
  with_share = FormatTable(h, Sample(), &oracle);
  EXPECT_NE(with_share.find("  the same fleet 2 min late (a perfect forecast, replicas Ready after "
                            "the warm-up): +1 replica to meet the target, 8.250 GPU-h, 95.49% of "
                            "requests"),
            std::string::npos)
      << with_share;
  oracle.for_share->late = LateFollower{2, false, 8, 12, 0.9412, 0.931};
  with_share = FormatTable(h, Sample(), &oracle);
  EXPECT_NE(with_share.find("  the same fleet 2 min late: even +8 replicas miss the target (94.12% "
                            "of requests, 93.1% of minutes)"),
            std::string::npos)
      << with_share;
  oracle.for_share = ShareOracle{0.95, false, 0.687, 0, 48, std::nullopt};
  with_share = FormatTable(h, Sample(), &oracle);
  EXPECT_NE(with_share.find("zero-lag oracle for the target: out of reach, 48 replicas every "
                            "minute bring 68.70% of requests within the SLO (95% asked)"),
            std::string::npos)
      << with_share;
}

TEST(ReportTest, SummaryJsonIsOrderedAndRounded) {
  ReportHeader h;
  h.seed = 42;
  std::vector<ReplaySummary> s = Sample();
  s[4].ttft_p90_ms = 239.94999;
  s[4].attainment = 0.99087;
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(SummaryJson(h, s, nullptr));
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  EXPECT_EQ(keys,
            (std::vector<std::string>{"config", "policies", "cheapest_meeting_target", "oracle"}));
  EXPECT_EQ(j["config"]["seed"], 42);
  EXPECT_EQ(j["config"]["slo"]["ttft_ms"], 500.0);
  ASSERT_EQ(j["policies"].size(), 6u);
  const auto& st = j["policies"][4];
  EXPECT_EQ(st["policy"], "static-12");
  EXPECT_EQ(st["gpu_hours"], 14.123);
  EXPECT_EQ(st["ttft_ms"]["p90"], 239.9);
  EXPECT_EQ(st["slo_attainment"], 0.9909);
  EXPECT_EQ(st["meets_target"], true);
  EXPECT_EQ(j["policies"][2]["meets_target"], false);
  EXPECT_EQ(j["cheapest_meeting_target"][1]["family"], "hpa-kv");
  EXPECT_TRUE(j["cheapest_meeting_target"][1]["policy"].is_null());
  EXPECT_TRUE(j["oracle"].is_null());
  // With an oracle: its totals and each minute's smallest fleet, in order.
  OracleResult oracle;
  oracle.gpu_hours = 0.15;
  oracle.max_replicas = 5;
  oracle.minutes = {{3, 100, 0.95, true}, {5, 180, 0.92, true}, {1, 0, 1, true}};
  const nlohmann::json o = nlohmann::json::parse(SummaryJson(h, s, &oracle))["oracle"];
  EXPECT_EQ(o["gpu_hours"], 0.15);
  EXPECT_EQ(o["minutes"], 3);
  EXPECT_EQ(o["replicas_by_minute"], nlohmann::json::array({3, 5, 1}));
  EXPECT_FALSE(o.contains("for_target"));
  // With the share oracle: its totals and each minute's fleet in its allocation.
  oracle.for_share = ShareOracle{0.95, true, 0.95012, 0.1666666, 6, std::nullopt};
  oracle.minutes[0].share_replicas = 4;
  oracle.minutes[1].share_replicas = 6;
  oracle.minutes[2].share_replicas = 1;
  nlohmann::json t = nlohmann::json::parse(SummaryJson(h, s, &oracle))["oracle"]["for_target"];
  EXPECT_EQ(t["request_share"], 0.95);
  EXPECT_EQ(t["reached"], true);
  EXPECT_EQ(t["attainment"], 0.9501);
  EXPECT_EQ(t["gpu_hours"], 0.167);
  EXPECT_EQ(t["max_replicas"], 6);
  EXPECT_EQ(t["replicas_by_minute"], nlohmann::json::array({4, 6, 1}));
  EXPECT_FALSE(t.contains("late"));
  oracle.for_share->late = LateFollower{2, true, 1, 0.2, 0.95491, 0.98};
  t = nlohmann::json::parse(SummaryJson(h, s, &oracle))["oracle"]["for_target"];
  EXPECT_EQ(t["late"], nlohmann::json({{"lag_minutes", 2},
                                       {"reached", true},
                                       {"margin", 1},
                                       {"gpu_hours", 0.2},
                                       {"attainment", 0.9549},
                                       {"minute_share", 0.98}}));
  oracle.for_share->reached = false;
  t = nlohmann::json::parse(SummaryJson(h, s, &oracle))["oracle"]["for_target"];
  EXPECT_TRUE(t["gpu_hours"].is_null());
  // Printed as people read them, not with 17 digits.
  EXPECT_NE(SummaryJson(h, s, nullptr).find("\"gpu_hours\": 14.123,"), std::string::npos);
}

TEST(ReportTest, TheTwinsErrorIsALineUnderTheTableAndAKeyPerPolicy) {
  ReportHeader h;
  std::vector<ReplaySummary> rows = Sample();
  TwinError e;
  e.decisions = 40;
  e.attainment_bias_points = 1.46;
  e.attainment_mae_points = 2.04;
  e.attainment_mae_floor_points = 1.26;
  e.ttft_decisions = 38;
  e.ttft_p90_bias_ms = -12.3;
  e.ttft_p90_mae_ms = 30.06;
  e.rate_as_forecast = {20, 0.24, 1.12};
  e.rate_above_forecast = {12, 4.71, 5.0};
  e.rate_below_forecast = {8, -1.06, 1.3};
  rows.back().twin_error = e;  // twinscale's row
  const std::string table = FormatTable(h, rows, nullptr);
  EXPECT_NE(table.find("twinscale     twin error: attainment bias +1.5 pts, MAE 2.0 pts over 40 "
                       "decisions (sampling alone: 1.3); p90 TTFT bias -12 ms, MAE 30 ms\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("                arrivals as forecast: bias +0.2, MAE 1.1 over 20; above "
                       "it: +4.7, 5.0 over 12; below it: -1.1, 1.3 over 8\n"),
            std::string::npos)
      << table;
  EXPECT_EQ(table.find("keda-queue-1  twin error"), std::string::npos);  // no twin, no line
  const nlohmann::json j = nlohmann::json::parse(SummaryJson(h, rows, nullptr));
  EXPECT_TRUE(j["policies"][0]["twin_error"].is_null());
  const nlohmann::json& t = j["policies"][5]["twin_error"];
  EXPECT_EQ(t["decisions"], 40);
  EXPECT_DOUBLE_EQ(t["attainment_bias_points"].get<double>(), 1.46);
  EXPECT_DOUBLE_EQ(t["attainment_mae_points"].get<double>(), 2.04);
  EXPECT_DOUBLE_EQ(t["attainment_mae_floor_points"].get<double>(), 1.26);
  EXPECT_EQ(t["ttft_decisions"], 38);
  EXPECT_DOUBLE_EQ(t["ttft_p90_bias_ms"].get<double>(), -12.3);
  EXPECT_DOUBLE_EQ(t["ttft_p90_mae_ms"].get<double>(), 30.1);
  const nlohmann::json& parts = t["by_arrivals"];
  EXPECT_EQ(parts["as_forecast"]["decisions"], 20);
  EXPECT_DOUBLE_EQ(parts["as_forecast"]["attainment_bias_points"].get<double>(), 0.24);
  EXPECT_DOUBLE_EQ(parts["above_forecast"]["attainment_mae_points"].get<double>(), 5.0);
  EXPECT_EQ(parts["below_forecast"]["decisions"], 8);
  EXPECT_DOUBLE_EQ(parts["below_forecast"]["attainment_bias_points"].get<double>(), -1.06);
}

TEST(ReportTest, TimelineCsvHasAPolicyColumnAndQuotesReasons) {
  ReplayResult r;
  r.summary.policy = "keda-queue-5";
  TimelineRow row;
  row.time = absl::Seconds(15);
  row.interval = absl::Seconds(15);
  row.arrivals = 30;
  row.arrival_rps = 2;
  row.desired = 4;
  row.ready = 1;
  row.warming = 3;
  row.kv_mean = 0.25;
  row.reason = "ScaleUpLimit: waiting 40, \"many\"";
  r.timeline.push_back(row);
  row.time = absl::Seconds(30);
  row.ttft_p90_ms = 123.45;
  row.reason = "";
  r.timeline.push_back(row);
  const std::string csv = TimelineCsv({r});
  std::istringstream lines(csv);
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_EQ(header.rfind("policy,time_s,arrivals,", 0), 0u);
  EXPECT_EQ(first,
            "keda-queue-5,15.000,30,2.000,0.0,0.0,4,1,3,0,0,0.2500,0,,0,"
            "\"ScaleUpLimit: waiting 40, \"\"many\"\"\"");
  EXPECT_EQ(second, "keda-queue-5,30.000,30,2.000,0.0,0.0,4,1,3,0,0,0.2500,0,123.5,0,");
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ReportTest, WritesBothFilesAndNamesThePathOnFailure) {
  const std::string dir = ::testing::TempDir();
  ReportHeader h;
  ASSERT_TRUE(WriteSummaryJson(dir, h, Sample(), nullptr).ok());
  EXPECT_EQ(ReadAll(dir + "/summary.json"), SummaryJson(h, Sample(), nullptr));
  ReplayResult r;
  r.summary.policy = "static-1";
  ASSERT_TRUE(WriteTimelineCsv(dir, {r}).ok());
  EXPECT_EQ(ReadAll(dir + "/timeline.csv"), TimelineCsv({r}));
  std::remove((dir + "/summary.json").c_str());
  std::remove((dir + "/timeline.csv").c_str());

  const absl::Status missing = WriteTimelineCsv(dir + "/no/such/dir", {r});
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(missing.message()).find("no/such/dir/timeline.csv"), std::string::npos);
}

}  // namespace
}  // namespace twinscale::replay
