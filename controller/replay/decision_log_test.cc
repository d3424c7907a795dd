// decisions.jsonl: each decision is one line of JSON with its reasons and numbers, times from the
// trace's first arrival, and null where the calibration record says nothing.
#include "controller/replay/decision_log.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace twinscale::replay {
namespace {

policy::Decision MakeDecision(absl::Time at, int32_t current, int32_t replicas) {
  policy::Decision d;
  d.at = at;
  d.current = current;
  d.recommendation = replicas;
  d.replicas = replicas;
  d.previous_recommendation = current;
  d.question.arrival_rate = 123.456;
  d.question.ready.resize(static_cast<size_t>(current));
  d.question.pending_ready_in = {absl::Seconds(20)};
  d.forecasts = 3;
  d.question.percentile = 92.456;
  d.aim_lowered_by = 2.544;
  d.forecast_margin = 1.23456;
  d.ledger.requests = 4000;
  d.ledger.met = 3850;
  d.ledger.minutes = 6;
  d.ledger.minutes_met = 5;
  d.scale_in_evidence = {{3, 0.97, 0.01, 1000}, {3, 0.96, 0.01, 1000}};
  d.forecast_at_current.attainment = 0.94321;
  d.forecast_at_current.attainment_se = 0.0061;
  d.forecast_at_current.meets_slo = false;
  d.forecast_at_current.verdict_clear = true;
  d.forecast_at_current.ttft_p90_ms = 402.46;
  d.forecast_at_decision.attainment = 0.96;
  d.reasons.push_back({"ForecastMissesSlo", "at 4 replicas, \"quoted\", 94.3%"});
  return d;
}

TEST(DecisionLogTest, OneJsonLinePerDecisionWithItsReasonsAndNumbers) {
  const absl::Time origin = absl::FromUnixSeconds(1000);
  const std::vector<policy::Decision> decisions = {
      MakeDecision(origin + absl::Seconds(15), 4, 5),
      MakeDecision(origin + absl::Milliseconds(30500), 5, 5)};
  const std::string text =
      DecisionLogJsonl("twinscale:x", decisions, {0.81234, 0.8}, {std::nan(""), -12.34}, origin);
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(text.back(), '\n');
  const nlohmann::json a = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(a["policy"], "twinscale:x");
  EXPECT_DOUBLE_EQ(a["time_s"].get<double>(), 15.0);
  EXPECT_EQ(a["current"], 4);
  EXPECT_EQ(a["replicas"], 5);
  EXPECT_EQ(a["ready"], 4);
  EXPECT_EQ(a["pending"], 1);
  EXPECT_DOUBLE_EQ(a["arrival_rate"].get<double>(), 123.46);  // rounded to 0.01
  EXPECT_DOUBLE_EQ(a["aim"].get<double>(), 92.46);
  EXPECT_DOUBLE_EQ(a["aim_lowered_by"].get<double>(), 2.54);
  EXPECT_DOUBLE_EQ(a["forecast_margin"].get<double>(), 1.235);
  EXPECT_DOUBLE_EQ(a["budget"]["requests"].get<double>(), 4000);
  EXPECT_DOUBLE_EQ(a["budget"]["requests_in_time_percent"].get<double>(), 96.25);
  EXPECT_EQ(a["budget"]["minutes"], 6);
  EXPECT_EQ(a["budget"]["minutes_met"], 5);
  EXPECT_EQ(a["scale_in_evidence"], 2);
  EXPECT_DOUBLE_EQ(a["forecast_at_current"]["attainment"].get<double>(), 0.9432);
  EXPECT_DOUBLE_EQ(a["forecast_at_current"]["attainment_se"].get<double>(), 0.0061);
  EXPECT_EQ(a["forecast_at_current"]["meets_slo"], false);
  EXPECT_DOUBLE_EQ(a["forecast_at_current"]["ttft_p90_ms"].get<double>(), 402.5);
  EXPECT_DOUBLE_EQ(a["speed"].get<double>(), 0.8123);
  EXPECT_TRUE(a["prediction_error_ms"].is_null());  // NaN: no forecast to compare yet
  ASSERT_EQ(a["reasons"].size(), 1u);
  EXPECT_EQ(a["reasons"][0]["code"], "ForecastMissesSlo");
  EXPECT_EQ(a["reasons"][0]["message"], "at 4 replicas, \"quoted\", 94.3%");
  const nlohmann::json b = nlohmann::json::parse(lines[1]);
  EXPECT_DOUBLE_EQ(b["time_s"].get<double>(), 30.5);
  EXPECT_DOUBLE_EQ(b["prediction_error_ms"].get<double>(), -12.3);
}

TEST(DecisionLogTest, MissingCalibrationEntriesAreNullAndNoDecisionsWriteNothing) {
  const absl::Time origin = absl::UnixEpoch();
  const std::string text =
      DecisionLogJsonl("p", {MakeDecision(origin + absl::Seconds(15), 2, 2)}, {}, {}, origin);
  const nlohmann::json a = nlohmann::json::parse(text);
  EXPECT_TRUE(a["speed"].is_null());
  EXPECT_TRUE(a["prediction_error_ms"].is_null());
  EXPECT_EQ(DecisionLogJsonl("p", {}, {}, {}, origin), "");
}

}  // namespace
}  // namespace twinscale::replay
