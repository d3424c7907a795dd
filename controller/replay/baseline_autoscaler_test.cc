// Baselines as replay autoscalers: how a ClusterView becomes the signals KEDA's query and the
// HPA's Pods metric would compute (hand-built views, hand-summed expectations), and one decision
// of each kind worked through the HPA arithmetic by hand.
#include "controller/replay/baseline_autoscaler.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace twinscale::replay {
namespace {

using Stage = PodView::Stage;

const absl::Time kNow = absl::UnixEpoch() + absl::Hours(1);

struct Engine {
  std::optional<double> waiting, kv;
};

PodView Pod(std::string name, Stage stage, std::vector<Engine> engines,
            absl::Duration scrape_age = absl::ZeroDuration(), bool scrape_ok = true) {
  PodView p;
  p.name = std::move(name);
  p.stage = stage;
  p.scrape_ok = scrape_ok && !engines.empty();
  p.scraped_at = p.scrape_ok ? kNow - scrape_age : absl::InfinitePast();
  for (const Engine& e : engines) {
    metrics::EngineObservation o;
    o.engine = std::to_string(p.observation.engines.size());
    o.waiting = e.waiting;
    o.running = 0.0;
    o.kv_cache_usage = e.kv;
    p.observation.engines.push_back(o);
  }
  return p;
}

ClusterView View(int32_t spec, std::vector<PodView> pods) {
  ClusterView v;
  v.now = kNow;
  v.spec_replicas = spec;
  v.pods = std::move(pods);
  return v;
}

TEST(BaselineAutoscalerTest, SignalsFollowTheRealQueries) {
  const struct Case {
    const char* name;
    ClusterView view;
    policy::BaselineKind kind;
    bool available;
    double waiting_sum, kv_mean;
    int32_t ready, pending;
  } cases[] = {
      {"KEDA sums every scraped pod's queue, terminating ones included",
       View(2, {Pod("a", Stage::kReady, {{3, 0.5}}), Pod("b", Stage::kReady, {{4, 0.7}}),
                Pod("c", Stage::kTerminating, {{2, 0.9}})}),
       policy::BaselineKind::kKedaQueue, true, 9, 0.6, 2, 0},
      {"the HPA's mean is over Ready pods only, engines averaged per pod",
       View(2, {Pod("a", Stage::kReady, {{1, 0.2}, {1, 0.4}}), Pod("b", Stage::kReady, {{0, 0.9}}),
                Pod("c", Stage::kTerminating, {{0, 0.0}})}),
       policy::BaselineKind::kHpaKv, true, 2, (0.3 + 0.9) / 2, 2, 0},
      {"a scrape older than the lookback delta is gone",
       View(2, {Pod("a", Stage::kReady, {{5, 0.5}}),
                Pod("b", Stage::kReady, {{7, 0.9}}, absl::Minutes(6))}),
       policy::BaselineKind::kKedaQueue, true, 5, 0.5, 1, 0},
      {"a scrape within the lookback delta still counts",
       View(1, {Pod("a", Stage::kReady, {{5, 0.5}}, absl::Minutes(4))}),
       policy::BaselineKind::kKedaQueue, true, 5, 0.5, 1, 0},
      {"starting pods: pending ones counted, none reports",
       View(3, {Pod("a", Stage::kReady, {{0, 0.1}}), Pod("b", Stage::kPending, {}),
                Pod("c", Stage::kLoading, {}), Pod("d", Stage::kWarmingUp, {})}),
       policy::BaselineKind::kHpaKv, true, 0, 0.1, 1, 1},
      {"no fresh scrape at all: the query returns nothing",
       View(2, {Pod("a", Stage::kReady, {{5, 0.5}}, absl::ZeroDuration(), false),
                Pod("b", Stage::kReady, {{5, 0.5}}, absl::Minutes(10))}),
       policy::BaselineKind::kKedaQueue, false, 0, 0, 0, 0},
      {"only a terminating pod reports KV: the HPA has no metric",
       View(1, {Pod("a", Stage::kWarmingUp, {}), Pod("b", Stage::kTerminating, {{1, 0.5}})}),
       policy::BaselineKind::kHpaKv, false, 1, 0, 0, 0},
      {"a page without the waiting gauge gives KEDA nothing",
       View(1, {Pod("a", Stage::kReady, {{std::nullopt, 0.5}})}), policy::BaselineKind::kKedaQueue,
       false, 0, 0.5, 1, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const policy::FleetSignals s = SignalsFromView(c.view, c.kind);
    EXPECT_EQ(s.now, kNow);
    EXPECT_EQ(s.current_replicas, c.view.spec_replicas);
    EXPECT_EQ(s.metrics_available, c.available);
    EXPECT_DOUBLE_EQ(s.waiting_sum, c.waiting_sum);
    EXPECT_DOUBLE_EQ(s.kv_usage_mean, c.kv_mean);
    EXPECT_EQ(s.ready_replicas, c.ready);
    EXPECT_EQ(s.pending_replicas, c.pending);
  }
}

policy::BaselineSpec Spec(const char* family) {
  absl::StatusOr<std::vector<policy::BaselineSpec>> specs =
      policy::ParseBaselineFamily(family, 1, 20);
  EXPECT_TRUE(specs.ok()) << specs.status();
  return specs->front();
}

TEST(BaselineAutoscalerTest, KedaQueueAsksForSumOverThreshold) {
  // 15 waiting over 2 replicas, threshold 5: ratio 1.5, desired ceil(15 / 5) = 3 (under the
  // no-behavior scale-up limit max(2 x 2, 4) = 4).
  BaselineAutoscaler keda(Spec("keda-queue:5"));
  EXPECT_EQ(keda.Name(), "keda-queue-5");
  EXPECT_EQ(keda.SyncPeriod(), absl::Seconds(15));
  const int32_t want = keda.Decide(
      View(2, {Pod("a", Stage::kReady, {{7, 0.5}}), Pod("b", Stage::kReady, {{8, 0.5}})}));
  EXPECT_EQ(want, 3);
  EXPECT_NE(keda.LastReason().find("waiting 15 over 2 replicas (target 5) -> 3"), std::string::npos)
      << keda.LastReason();
}

TEST(BaselineAutoscalerTest, HpaKvHoldsWithinToleranceAndWithoutMetrics) {
  // Mean KV (0.9 + 0.7) / 2 = 0.8 against a 0.8 target: ratio 1, hold at 2.
  BaselineAutoscaler hpa(Spec("hpa-kv:0.8"));
  EXPECT_EQ(hpa.Decide(View(
                2, {Pod("a", Stage::kReady, {{0, 0.9}}), Pod("b", Stage::kReady, {{0, 0.7}})})),
            2);
  // No pod reports: the HPA holds, never scales on a missing metric.
  EXPECT_EQ(hpa.Decide(View(2, {Pod("a", Stage::kReady, {}), Pod("b", Stage::kReady, {})})), 2);
  EXPECT_NE(hpa.LastReason().find("no fresh vllm:kv_cache_usage_perc"), std::string::npos)
      << hpa.LastReason();
}

TEST(BaselineAutoscalerTest, StaticIgnoresTheView) {
  BaselineAutoscaler fixed(Spec("static:6"));
  EXPECT_EQ(fixed.Name(), "static-6");
  EXPECT_EQ(fixed.Decide(View(2, {})), 6);
}

}  // namespace
}  // namespace twinscale::replay
