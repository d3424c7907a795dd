// Status rules worked by hand: transition times move only on a flip; writes only on meaningful
// change (table); the JSON matches the CRD's field names and formats and reads back.
#include "controller/reconcile/autoscaler_status.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"

namespace twinscale::reconcile {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1795251600);  // 2026-11-21T09:00:00Z

TEST(AutoscalerStatusTest, TransitionTimeMovesOnlyWhenTheStatusFlips) {
  AutoscalerStatus s;
  SetCondition(s, kMetricsFresh, "True", "ScrapesFresh", "10 of 10 pods", kT0, 1);
  SetCondition(s, kMetricsFresh, "True", "ScrapesFresh", "9 of 10 pods", kT0 + absl::Seconds(15),
               1);
  ASSERT_EQ(s.conditions.size(), 1u);
  EXPECT_EQ(s.conditions[0].last_transition_time, kT0);  // same status: time kept
  EXPECT_EQ(s.conditions[0].message, "9 of 10 pods");
  SetCondition(s, kMetricsFresh, "False", "ScrapesStale", "no pod answered",
               kT0 + absl::Seconds(30), 2);
  EXPECT_EQ(s.conditions[0].last_transition_time, kT0 + absl::Seconds(30));
  EXPECT_EQ(s.conditions[0].observed_generation, 2);
  SetCondition(s, kSpecValid, "True", "Valid", "", kT0 + absl::Seconds(45), 2);
  EXPECT_EQ(s.conditions.size(), 2u);
  EXPECT_EQ(s.FindCondition(kSpecValid)->last_transition_time, kT0 + absl::Seconds(45));
}

AutoscalerStatus Base() {
  AutoscalerStatus s;
  s.observed_generation = 3;
  SetCondition(s, kScalingActive, "True", "Direct", "", kT0, 3);
  s.current_replicas = 10;
  s.desired_replicas = 10;
  s.admission = policy::AdmissionAdvice{};
  s.observed = AutoscalerStatus::Observed{2.0, 0.40, 100.0, absl::Milliseconds(300)};
  s.measured_warmup = absl::Seconds(70);
  s.calibration = AutoscalerStatus::Calibration{0.8, 0.8, 12};
  s.last_decision = AutoscalerStatus::LastDecision{kT0, 10, {{"ForecastMeetsSlo", "p90 310 ms"}}};
  s.arrival_history = AutoscalerStatus::ArrivalHistory{absl::Minutes(5), kT0 - absl::Hours(1), kT0,
                                                       "AQwA"};  // the buckets are opaque here
  return s;
}

TEST(AutoscalerStatusTest, MeaningfulChangeTable) {
  struct Case {
    const char* what;
    std::function<void(AutoscalerStatus&)> change;
    bool meaningful;
  };
  const Case cases[] = {
      {"nothing", [](AutoscalerStatus&) {}, false},
      {"only the decision's time",
       [](AutoscalerStatus& s) { s.last_decision->time += absl::Seconds(15); }, false},
      {"a reason's numbers only",
       [](AutoscalerStatus& s) { s.last_decision->reasons[0].message = "p90 320 ms"; }, false},
      {"queue 2.0 -> 2.1 (5%)",
       [](AutoscalerStatus& s) { s.observed->queue_depth_per_replica = 2.1; }, false},
      {"queue 2.0 -> 2.4 (20%)",
       [](AutoscalerStatus& s) { s.observed->queue_depth_per_replica = 2.4; }, true},
      {"queue 2.0 -> 0", [](AutoscalerStatus& s) { s.observed->queue_depth_per_replica = 0.0; },
       true},
      {"TTFT 300 -> 320 ms",
       [](AutoscalerStatus& s) { s.observed->ttft_p90 = absl::Milliseconds(320); }, false},
      {"TTFT 300 -> 400 ms",
       [](AutoscalerStatus& s) { s.observed->ttft_p90 = absl::Milliseconds(400); }, true},
      {"calibration 0.800 -> 0.805",
       [](AutoscalerStatus& s) { s.calibration->decode_speed = 0.805; }, false},
      {"calibration 0.80 -> 0.82", [](AutoscalerStatus& s) { s.calibration->decode_speed = 0.82; },
       true},
      {"warm-up +0.5 s", [](AutoscalerStatus& s) { *s.measured_warmup += absl::Milliseconds(500); },
       false},
      {"warm-up +2 s", [](AutoscalerStatus& s) { *s.measured_warmup += absl::Seconds(2); }, true},
      {"desired 10 -> 11", [](AutoscalerStatus& s) { s.desired_replicas = 11; }, true},
      {"current 10 -> 11", [](AutoscalerStatus& s) { s.current_replicas = 11; }, true},
      {"generation", [](AutoscalerStatus& s) { s.observed_generation = 4; }, true},
      {"a reason code",
       [](AutoscalerStatus& s) { s.last_decision->reasons[0].code = "ScaleInSafe"; }, true},
      {"a condition's status", [](AutoscalerStatus& s) { s.conditions[0].status = "False"; }, true},
      {"a new condition",
       [](AutoscalerStatus& s) {
         SetCondition(s, kSloAtRisk, "False", "ForecastMeetsSlo", "", kT0, 3);
       },
       true},
      {"admission on", [](AutoscalerStatus& s) { s.admission->active = true; }, true},
      {"a bucket of the arrival history closed",
       [](AutoscalerStatus& s) {
         s.arrival_history->end += absl::Minutes(5);
         s.arrival_history->data = "AQ0A";
       },
       true},
      {"the arrival history's oldest bucket dropped",
       [](AutoscalerStatus& s) { s.arrival_history->start += absl::Minutes(5); }, true},
      {"no arrival history any more", [](AutoscalerStatus& s) { s.arrival_history.reset(); }, true},
  };
  for (const Case& c : cases) {
    AutoscalerStatus next = Base();
    c.change(next);
    EXPECT_EQ(MeaningfulChange(Base(), next), c.meaningful) << c.what;
  }
}

TEST(AutoscalerStatusTest, JsonUsesTheCrdNamesAndFormats) {
  const nlohmann::json j = StatusToJson(Base());
  EXPECT_EQ(j["observedGeneration"], 3);
  EXPECT_EQ(j["conditions"][0]["type"], "ScalingActive");
  EXPECT_EQ(j["conditions"][0]["lastTransitionTime"], "2026-11-21T09:00:00Z");
  EXPECT_EQ(j["currentReplicas"], 10);
  EXPECT_EQ(j["desiredReplicas"], 10);
  EXPECT_EQ(j["admission"], nlohmann::json({{"active", false}}));
  EXPECT_EQ(j["observed"]["ttftP90"], "300ms");
  EXPECT_DOUBLE_EQ(j["observed"]["kvCacheUtilization"].get<double>(), 0.4);
  EXPECT_EQ(j["measuredWarmup"], "1m10s");
  EXPECT_DOUBLE_EQ(j["calibration"]["decodeSpeed"].get<double>(), 0.8);
  EXPECT_EQ(j["lastDecision"]["reasons"][0]["code"], "ForecastMeetsSlo");
  EXPECT_EQ(j["arrivalHistory"], nlohmann::json({{"bucket", "5m"},
                                                 {"start", "2026-11-21T08:00:00Z"},
                                                 {"end", "2026-11-21T09:00:00Z"},
                                                 {"data", "AQwA"}}));
  EXPECT_EQ(FormatSpecDuration(absl::ZeroDuration()), "0s");  // the CRD pattern rejects "0"
  EXPECT_EQ(FormatSpecDuration(absl::Nanoseconds(1234567891)), "1.234s");
}

TEST(AutoscalerStatusTest, TheGatewaysRandomShareIsKeptWhereItWasFitted) {
  // A twin behind a balancing router that calibration found routing 35% at random: written as
  // routerRandomShare and read back; 0 (the default) is left out; outside [0, 1] is refused.
  AutoscalerStatus s = Base();
  s.calibration->router_random_share = 0.35;
  const nlohmann::json j = StatusToJson(s);
  EXPECT_DOUBLE_EQ(j["calibration"]["routerRandomShare"].get<double>(), 0.35);
  auto back = StatusFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_DOUBLE_EQ(back->calibration->router_random_share, 0.35);
  EXPECT_FALSE(StatusToJson(Base())["calibration"].contains("routerRandomShare"));
  EXPECT_TRUE(MeaningfulChange(Base(), s));
  nlohmann::json wrong = j;
  wrong["calibration"]["routerRandomShare"] = 1.5;
  const absl::Status bad = StatusFromJson(wrong).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("routerRandomShare"), std::string::npos) << bad;
}

TEST(AutoscalerStatusTest, TheServersFrontEndTimeIsKeptWhereItWasFitted) {
  // A fleet whose API server holds each request 30 ms beyond the profile's model: written as
  // extraFrontEndSeconds and read back, negative values too (a profile that puts more there than
  // the fleet shows); 0 (the default) is left out; beyond 10 s either way is refused.
  for (const double seconds : {0.030, -0.004}) {
    AutoscalerStatus s = Base();
    s.calibration->extra_front_end_seconds = seconds;
    const nlohmann::json j = StatusToJson(s);
    EXPECT_DOUBLE_EQ(j["calibration"]["extraFrontEndSeconds"].get<double>(), seconds);
    auto back = StatusFromJson(j);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_DOUBLE_EQ(back->calibration->extra_front_end_seconds, seconds);
    EXPECT_TRUE(MeaningfulChange(Base(), s));
  }
  EXPECT_FALSE(StatusToJson(Base())["calibration"].contains("extraFrontEndSeconds"));
  AutoscalerStatus s = Base();
  s.calibration->extra_front_end_seconds = 0.0304;
  AutoscalerStatus close = s;
  close.calibration->extra_front_end_seconds =
      0.0306;  // a fifth of a millisecond: not worth a write
  EXPECT_FALSE(MeaningfulChange(s, close));
  nlohmann::json wrong = StatusToJson(s);
  wrong["calibration"]["extraFrontEndSeconds"] = 12.5;
  const absl::Status bad = StatusFromJson(wrong).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("extraFrontEndSeconds"), std::string::npos) << bad;
}

TEST(AutoscalerStatusTest, ReadsBackWhatANewLeaderNeeds) {
  auto back = StatusFromJson(StatusToJson(Base()));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->calibration.has_value());
  EXPECT_DOUBLE_EQ(back->calibration->decode_speed, 0.8);
  EXPECT_EQ(back->calibration->updates, 12);
  EXPECT_EQ(*back->measured_warmup, absl::Seconds(70));
  EXPECT_EQ(back->conditions[0].last_transition_time, kT0);
  EXPECT_EQ(back->last_decision->replicas, 10);
  ASSERT_TRUE(back->arrival_history.has_value());
  EXPECT_EQ(back->arrival_history->bucket, absl::Minutes(5));
  EXPECT_EQ(back->arrival_history->start, kT0 - absl::Hours(1));
  EXPECT_EQ(back->arrival_history->end, kT0);
  EXPECT_EQ(back->arrival_history->data, "AQwA");
  // A status written by nobody yet, and one with a wrong type named.
  EXPECT_TRUE(StatusFromJson(nlohmann::json()).ok());
  const absl::Status bad = StatusFromJson({{"calibration", {{"decodeSpeed", "fast"}}}}).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("calibration.decodeSpeed"), std::string::npos) << bad;
  const absl::Status no_time =
      StatusFromJson({{"arrivalHistory", {{"bucket", "5m"}, {"start", 7}, {"data", ""}}}}).status();
  EXPECT_EQ(no_time.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_time.message().find("arrivalHistory.start"), std::string::npos) << no_time;
}

// Whoever may write the status subresource may write any JSON there: every field of the wrong type
// is refused with its name (the reader once threw on these, out of the reconcile pass), and
// replicas beyond int32 are not narrowed.
TEST(AutoscalerStatusTest, EveryWrongTypeIsNamedNotThrown) {
  const nlohmann::json time = "2026-11-21T09:00:00Z";
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"calibration", {{"prefillSpeed", 1}, {"decodeSpeed", 1}, {"updates", "AQwA"}}}},
       "calibration.updates"},
      {{{"calibration", {{"prefillSpeed", 1}, {"decodeSpeed", 1}, {"updates", -1}}}},
       "calibration.updates"},
      {{{"conditions", {{{"type", "MetricsFresh"}, {"status", true}}}}}, "conditions[0].status"},
      {{{"conditions", {{{"type", "MetricsFresh"}, {"message", 5}}}}}, "conditions[0].message"},
      {{{"conditions", {{{"type", "MetricsFresh"}, {"observedGeneration", "1"}}}}},
       "conditions[0].observedGeneration"},
      {{{"conditions", {{{"type", "MetricsFresh"}, {"lastTransitionTime", 1}}}}},
       "conditions[0].lastTransitionTime"},
      {{{"lastDecision", {{"time", 1}}}}, "lastDecision.time"},
      {{{"lastDecision", {{"time", time}, {"replicas", "ten"}}}}, "lastDecision.replicas"},
      {{{"lastDecision", {{"time", time}, {"reasons", {{{"code", 7}}}}}}},
       "lastDecision.reasons.code"},
      {{{"currentReplicas", int64_t{1} << 40}}, "currentReplicas"},
      {{{"currentReplicas", "3"}}, "currentReplicas"},
      {{{"desiredReplicas", 2.5}}, "desiredReplicas"},
  };
  for (const auto& [status, field] : cases) {
    const absl::StatusOr<AutoscalerStatus> got = StatusFromJson(status);
    ASSERT_FALSE(got.ok()) << status;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(got.status().message().find(field), std::string::npos) << got.status();
  }
}

// One damaged field costs only itself: the calibration and the rest read back, and each field
// left out is named.
TEST(AutoscalerStatusTest, ADamagedFieldIsLeftOutAndTheRestReadsBack) {
  const nlohmann::json status = {
      {"observedGeneration", 4},
      {"currentReplicas", "three"},
      {"desiredReplicas", 5},
      {"calibration", {{"prefillSpeed", 0.75}, {"decodeSpeed", 0.8}, {"updates", 40}}},
      {"lastDecision", {{"time", 1}}}};
  ASSERT_FALSE(StatusFromJson(status).ok());
  std::vector<absl::Status> unreadable;
  const AutoscalerStatus s = ReadableStatus(status, unreadable);
  EXPECT_EQ(s.observed_generation, 4);
  EXPECT_FALSE(s.current_replicas.has_value());
  EXPECT_EQ(s.desired_replicas, 5);
  ASSERT_TRUE(s.calibration.has_value());
  EXPECT_DOUBLE_EQ(s.calibration->decode_speed, 0.8);
  EXPECT_EQ(s.calibration->updates, 40);
  EXPECT_FALSE(s.last_decision.has_value());
  ASSERT_EQ(unreadable.size(), 2u);
  std::string all;
  for (const absl::Status& e : unreadable) {
    EXPECT_EQ(e.code(), absl::StatusCode::kInvalidArgument) << e;
    all += std::string(e.message()) + "\n";
  }
  EXPECT_NE(all.find("status.currentReplicas"), std::string::npos) << all;
  EXPECT_NE(all.find("status.lastDecision.time"), std::string::npos) << all;

  // A status that is not an object at all is one error and nothing read; none is no error.
  unreadable.clear();
  EXPECT_FALSE(ReadableStatus(nlohmann::json::array({1, 2}), unreadable).calibration.has_value());
  EXPECT_EQ(unreadable.size(), 1u);
  unreadable.clear();
  ReadableStatus(nlohmann::json(), unreadable);
  EXPECT_TRUE(unreadable.empty());
}

}  // namespace
}  // namespace twinscale::reconcile
