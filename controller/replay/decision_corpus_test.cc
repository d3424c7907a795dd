// The decision corpus: its JSON lines round-trip, bad lines are refused with the field named, an
// entry is built from a decision as Recommend recorded it, DecideEntry follows Recommend's branches
// (checked with a forecaster whose answers are worked by hand), and the committed corpus
// (tests/data/decisions/corpus.jsonl) is what docs/architecture.md "Performance targets" asks for:
// at least 50 snapshots, from varied load, scale events included, small enough to commit.
#include "controller/replay/decision_corpus.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "controller/replay/corpus_agreement.h"

namespace twinscale::replay {
namespace {

CorpusEntry Sample() {
  CorpusEntry e;
  e.source = {"AzureLLMInferenceTrace_conv.csv", 20, "all", 615, "llama-3-1-8b", "scale-up"};
  e.profile = "llama-3.1-8b-h100-sxm-tp1";
  e.router = "random";
  e.speed = 0.76;
  e.current = 6;
  e.min_replicas = 1;
  e.max_replicas = 48;
  e.not_counted = 1;
  e.safety_margin = 0.8;
  e.scale_in_allowed = false;
  e.decided = 8;
  e.recommended = 9;
  policy::ForecastQuestion& q = e.question;
  q.ready = {{0, 41, 0.12}, {3, 97, 0.5}};
  q.pending_ready_in = {absl::Seconds(22.5)};
  q.new_replica_warmup = absl::Seconds(45);
  q.arrival_rate = 110.25;
  q.arrival_rate_cv = 0.25;
  q.rate_interval = absl::Seconds(15);
  q.arrival_rate_baseline = 95.5;
  q.rate_persistence = {0.5, 0.25, 0};
  q.prompt_tokens_mean = 1150;
  q.output_tokens_mean = 210;
  q.prompt_shape.upper_bounds = {100, 1000};
  q.prompt_shape.weights = {1, 5, 2};
  q.horizon = absl::Seconds(105);
  q.judge_from = absl::Seconds(45);
  q.ttft_threshold = absl::Milliseconds(500);
  q.ttft_per_prompt_token = absl::Microseconds(100);
  q.percentile = 93;
  q.seed = 7;
  return e;
}

TEST(DecisionCorpusTest, RoundTrip) {
  const CorpusEntry e = Sample();
  const std::string line = CorpusEntryToJson(e);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  absl::StatusOr<CorpusEntry> back = ParseCorpusLine(line);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(CorpusEntryToJson(*back), line);
  EXPECT_EQ(back->source.kind, "scale-up");
  EXPECT_EQ(back->question.ready.size(), 2u);
  EXPECT_EQ(back->question.ready[1].waiting, 3);
  EXPECT_EQ(back->question.pending_ready_in[0], absl::Seconds(22.5));
  EXPECT_EQ(back->question.ttft_per_prompt_token, absl::Microseconds(100));
  EXPECT_EQ(back->question.prompt_shape.weights.size(), 3u);
  EXPECT_TRUE(back->question.output_shape.empty());
  EXPECT_EQ(back->question.seed, 7u);
  EXPECT_EQ(back->question.arrival_rate_cv, 0.25);
  EXPECT_EQ(back->question.rate_interval, absl::Seconds(15));
  EXPECT_EQ(back->question.arrival_rate_baseline, 95.5);
  EXPECT_EQ(back->question.rate_persistence, (std::vector<double>{0.5, 0.25, 0}));
  EXPECT_FALSE(back->scale_in_allowed);
  EXPECT_FALSE(back->prefill_speed.has_value());  // one factor: `speed` stands for both
}

TEST(DecisionCorpusTest, ThePrefillFactorAndTheRandomShareAreCarried) {
  CorpusEntry e = Sample();
  e.prefill_speed = 0.93;
  e.router_random_share = 0.4;
  const std::string line = CorpusEntryToJson(e);
  EXPECT_NE(line.find("\"speed\":0.76,\"prefill_speed\":0.93,\"router_random_share\":0.4,"),
            std::string::npos)
      << line;
  absl::StatusOr<CorpusEntry> back = ParseCorpusLine(line);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->prefill_speed.has_value());
  EXPECT_EQ(*back->prefill_speed, 0.93);
  EXPECT_EQ(back->speed, 0.76);
  EXPECT_EQ(back->router_random_share, 0.4);
  absl::StatusOr<CorpusEntry> bad = ParseCorpusLine(
      absl::StrReplaceAll(line, {{"\"prefill_speed\":0.93", "\"prefill_speed\":0"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("prefill_speed"), std::string::npos) << bad.status();
}

TEST(DecisionCorpusTest, LegacyArrivalCvBecomesTheRateCvOfItsDispersion) {
  // A line recorded before the modulated-rate twin: "arrival_cv": 3 at 110.25 req/s means counts
  // per 15 s with dispersion 3^2 = 9, so the rate's CV is sqrt((9 - 1) / (110.25 x 15)) =
  // sqrt(8 / 1653.75) = 0.0695521.
  std::string line = CorpusEntryToJson(Sample());
  const std::string modern = "\"arrival_rate_cv\":0.25,\"rate_interval_s\":15.0";
  const size_t at = line.find(modern);
  ASSERT_NE(at, std::string::npos) << line;
  line.replace(at, modern.size(), "\"arrival_cv\":3.0");
  absl::StatusOr<CorpusEntry> e = ParseCorpusLine(line);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_NEAR(e->question.arrival_rate_cv, 0.0695521, 1e-6);
  EXPECT_EQ(e->question.rate_interval, absl::Seconds(15));
  // A Poisson-like legacy CV (at most 1) is no rate variation at all.
  const std::string legacy = "\"arrival_cv\":3.0";
  line.replace(line.find(legacy), legacy.size(), "\"arrival_cv\":0.8");
  e = ParseCorpusLine(line);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->question.arrival_rate_cv, 0);
}

TEST(DecisionCorpusTest, BadLinesNameTheField) {
  const std::string good = CorpusEntryToJson(Sample());
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
  };
  struct Case {
    const char* name;
    std::string line;
    const char* want;  // in the message
  };
  const std::vector<Case> cases = {
      {"not JSON at all", "{\"source\": ", "not valid JSON"},
      {"an array, not an object", "[1, 2]", "not an object"},
      {"a misspelt key is refused, not ignored", replace("\"speed\"", "\"sped\""), "sped"},
      {"a missing field", replace("\"router\":\"random\",", ""), "router is missing"},
      {"a count of the wrong type", replace("\"current\":6", "\"current\":\"6\""),
       "current is not an integer"},
      {"KV use is a fraction", replace("\"kv_usage\":0.12", "\"kv_usage\":12"),
       "question.ready[0].kv_usage"},
      {"a percentile above 100", replace("\"percentile\":93.0", "\"percentile\":193.0"),
       "question.percentile"},
      {"min above max", replace("\"min_replicas\":1", "\"min_replicas\":60"),
       "min_replicas is above max_replicas"},
      {"a shape whose weights don't match its buckets",
       replace("\"weights\":[1.0,5.0,2.0]", "\"weights\":[1.0,5.0]"),
       "question.prompt_shape.weights"},
      {"a negative seed", replace("\"seed\":7", "\"seed\":-7"), "question.seed"},
      {"legacy and modern burstiness together",
       replace("\"arrival_rate_cv\":0.25", "\"arrival_cv\":2.0,\"arrival_rate_cv\":0.25"),
       "question.arrival_cv"},
      {"a source without its kind", replace(",\"kind\":\"scale-up\"", ""), "source.kind"},
      {"a persistence weight above 1",
       replace("\"rate_persistence\":[0.5,0.25,0.0]", "\"rate_persistence\":[1.5,0.25,0.0]"),
       "question.rate_persistence"},
      {"a rate path without its baseline", replace("\"arrival_rate_baseline\":95.5,", ""),
       "question.arrival_rate_baseline is missing"},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    absl::StatusOr<CorpusEntry> e = ParseCorpusLine(tc.line);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find(tc.want), std::string::npos) << e.status().message();
  }
}

TEST(DecisionCorpusTest, ParseCorpusSkipsBlankLinesAndNumbersErrors) {
  const std::string good = CorpusEntryToJson(Sample());
  absl::StatusOr<std::vector<CorpusEntry>> two = ParseCorpus(good + "\n\n  \n" + good + "\n");
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->size(), 2u);
  absl::StatusOr<std::vector<CorpusEntry>> bad = ParseCorpus(good + "\n\n{}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 3"), std::string::npos) << bad.status().message();
}

TEST(DecisionCorpusTest, EntryFromDecision) {
  policy::Decision d;
  d.current = 6;
  d.replicas = 8;
  d.recommendation = 9;
  d.question.candidate_replicas = 6;  // Recommend stores max(1, replicas - not counted)
  d.question.new_replica_warmup = absl::Seconds(45);
  d.reasons = {{"PendingNotCounted", ""}, {"ForecastMissesSlo", ""}};
  CorpusEntry e = EntryFromDecision(d);
  EXPECT_EQ(e.not_counted, 2);
  EXPECT_EQ(e.decided, 8);
  EXPECT_EQ(e.recommended, 9);
  EXPECT_EQ(e.question.judge_from, absl::Seconds(45));
  EXPECT_TRUE(e.scale_in_allowed);
  d.reasons = {{"ScaleInBlockedByLimits", ""}};
  EXPECT_FALSE(EntryFromDecision(d).scale_in_allowed);
  d.reasons = {{"ScaleInFrozen", ""}};
  EXPECT_FALSE(EntryFromDecision(d).scale_in_allowed);
}

// Each replica serving holds `per_replica` req/s at the full threshold and `per_replica x margin`
// at a tighter one; the attainment is the share of the load it can hold. Lets DecideEntry's
// answers be worked by hand.
class CapacityForecaster : public policy::Forecaster {
 public:
  explicit CapacityForecaster(double per_replica) : per_replica_(per_replica) {}
  policy::Forecast Evaluate(const policy::ForecastQuestion& q) const override {
    const double margin = q.slack_margin;
    const double capacity = q.candidate_replicas * per_replica_ * margin;
    policy::Forecast f;
    f.attainment = std::min(1.0, capacity / q.arrival_rate);
    f.meets_slo = 100 * f.attainment >= q.percentile;
    return f;
  }

 private:
  double per_replica_;
};

TEST(DecisionCorpusTest, DecideEntryFollowsRecommendsBranches) {
  // 10 req/s per replica (8 at the 0.8 margin); unless the load is beyond 48 replicas the ceiling
  // holds everything, so the targets stay at 90%: a fleet meets when capacity >= 90% of the load.
  struct Case {
    const char* name;
    double rate;
    int32_t current;
    bool scale_in_allowed;
    int32_t want;
  };
  const std::vector<Case> cases = {
      {"scale up: 95 req/s needs ceil(0.9 x 95 / 10) = 9", 95, 4, true, 9},
      {"steady: 6 hold 60 req/s, 5 at the margin hold 40 < 54", 60, 6, true, 6},
      {"scale in: 30 req/s at the margin needs ceil(27 / 8) = 4", 30, 10, true, 4},
      {"scale in not allowed when recorded: stays", 30, 10, false, 10},
      // 48 replicas hold 48% of 1000 req/s: the target is capped a point below that, at 47%,
      // which 47 replicas reach (SearchUp: 11, 12, 14, 18, 26, 42, 48, then 45, 46, 47).
      {"even max replicas can't: aim just below what they reach", 1000, 10, true, 47},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.name);
    CorpusEntry e = Sample();
    e.not_counted = 0;
    e.question.ttft_per_prompt_token = absl::ZeroDuration();
    e.question.percentile = 90;
    e.question.arrival_rate = tc.rate;
    e.current = tc.current;
    e.scale_in_allowed = tc.scale_in_allowed;
    const EntryDecision d = DecideEntry(e, CapacityForecaster(10));
    EXPECT_EQ(d.replicas, tc.want);
  }
}

std::string ReadCorpusFile(const std::string& path = "tests/data/decisions/corpus.jsonl") {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(DecisionCorpusTest, CommittedCorpusIsWhatTheTargetAsksFor) {
  const std::string path = "tests/data/decisions/corpus.jsonl";
  ASSERT_TRUE(std::filesystem::exists(path)) << "run from the repository root";
  EXPECT_LT(std::filesystem::file_size(path), 1u << 20);  // commit-sized
  absl::StatusOr<std::vector<CorpusEntry>> corpus = ParseCorpus(ReadCorpusFile());
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  EXPECT_GE(corpus->size(), 60u);
  std::set<std::string> traces, kinds;
  int32_t largest = 0;
  for (const CorpusEntry& e : *corpus) {
    traces.insert(e.source.trace);
    kinds.insert(e.source.kind);
    largest = std::max<int32_t>(largest, static_cast<int32_t>(e.question.ready.size()));
    EXPECT_LE(e.min_replicas, e.max_replicas);
    EXPECT_GT(e.question.horizon, absl::ZeroDuration());
  }
  EXPECT_EQ(traces.size(), 3u);  // Azure conversation and code, Mooncake
  EXPECT_TRUE(kinds.count("scale-up")) << "no scale-up moment";
  EXPECT_TRUE(kinds.count("scale-in")) << "no scale-in moment";
  EXPECT_TRUE(kinds.count("even"));
  EXPECT_GE(largest, 16) << "no large fleet";
}

// The re-recording with rate paths (tests/data/decisions/README.md): the same replays and picks
// as corpus.jsonl, on the current twin; most decisions there carry the rate's path.
TEST(DecisionCorpusTest, TheReRecordingCarriesTheRatesPath) {
  const std::string path = "tests/data/decisions/corpus_rate_paths.jsonl";
  ASSERT_TRUE(std::filesystem::exists(path)) << "run from the repository root";
  EXPECT_LT(std::filesystem::file_size(path), 1u << 20);
  absl::StatusOr<std::vector<CorpusEntry>> corpus = ParseCorpus(ReadCorpusFile(path));
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  EXPECT_GE(corpus->size(), 60u);
  std::set<std::string> traces;
  size_t with_path = 0;
  for (const CorpusEntry& e : *corpus) {
    traces.insert(e.source.trace);
    if (!e.question.rate_persistence.empty() && e.question.arrival_rate_baseline > 0) ++with_path;
  }
  EXPECT_EQ(traces.size(), 3u);
  EXPECT_GE(with_path * 2, corpus->size()) << "most decisions should carry the rate's path";
}

}  // namespace
}  // namespace twinscale::replay
