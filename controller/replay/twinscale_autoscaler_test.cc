// twinscale's policy in replay, end to end through vLLM-format scrapes: calibration converges on a
// truth that is slower than the profile (compute and bandwidth efficiency x0.8) and shrinks the
// prediction error; with an unperturbed truth it stays near 1.
#include "controller/replay/twinscale_autoscaler.h"

#include <gtest/gtest.h>

#include <cmath>

#include "controller/replay/replay_driver.h"
#include "simulator/profiles/profile_loader.h"
#include "simulator/workload/generators.h"

namespace twinscale::replay {
namespace {

std::shared_ptr<const sim::Trace> SteadyTrace(double rate, int minutes) {
  sim::SyntheticWorkloadSpec w;
  w.rate.rate = rate;
  w.prompt.mean = 1000;
  w.output.mean = 200;
  w.duration = sim::SimDuration::Seconds(60LL * minutes);
  w.seed = 5;
  auto src = sim::MakeSyntheticSource(w);
  auto t = std::make_shared<sim::Trace>();
  t->source = "steady";
  sim::RequestSpec r;
  while (src->Next(r)) t->requests.push_back(r);
  return t;
}

struct ReplayRun {
  std::vector<double> speed, error;
  ReplaySummary summary;
};

ReplayRun Replay(const char* truth_text, bool calibrate) {
  auto profiles = sim::ProfileRegistry::LoadEmbedded();
  EXPECT_TRUE(profiles.ok());
  const sim::DeploymentSpec d = *profiles->Resolve("llama-3.1-8b-h100-sxm-tp1", {});
  policy::PolicyConfig pc;
  pc.min_replicas = 1;
  pc.max_replicas = 16;
  pc.warmup_expected = absl::Seconds(45);
  twin::TwinOptions to;
  to.deployment = d;
  TwinscaleAutoscaler a("twinscale", pc, to);
  a.set_calibration(calibrate);
  ReplayConfig rc;
  rc.trace = SteadyTrace(25, 20);
  rc.deployment = d;
  rc.truth = *ParseTruth(truth_text);
  rc.initial_replicas = 3;
  auto r = RunReplay(rc, a);
  EXPECT_TRUE(r.ok()) << r.status();
  return {a.speed_history(), a.prediction_error_ms(), r->summary};
}

double MeanAbsLastHalf(const std::vector<double>& v) {
  double s = 0;
  int n = 0;
  for (size_t i = v.size() / 2; i < v.size(); ++i) {
    if (std::isnan(v[i])) continue;
    s += std::fabs(v[i]);
    ++n;
  }
  return n > 0 ? s / n : 0;
}

TEST(TwinscaleAutoscalerTest, CalibrationConvergesOnASlowerTruthAndShrinksTheError) {
  // The truth runs its GEMMs and memory traffic at 0.8 of the profile's efficiency; fixed
  // per-step costs are unchanged, so the step-time ratio lands a little above 0.8 (about 0.82
  // for a ~15 ms step with ~1.6 ms of fixed overhead).
  const ReplayRun calibrated = Replay("efficiency", true);
  const ReplayRun uncalibrated = Replay("efficiency", false);
  ASSERT_GT(calibrated.speed.size(), 40u);
  const double final_speed = calibrated.speed.back();
  EXPECT_GT(final_speed, 0.74);
  EXPECT_LT(final_speed, 0.90);
  EXPECT_DOUBLE_EQ(uncalibrated.speed.back(), 1.0);
  EXPECT_LT(MeanAbsLastHalf(calibrated.error), MeanAbsLastHalf(uncalibrated.error));
}

TEST(TwinscaleAutoscalerTest, CalibrationStaysNearOneWhenTheTruthIsTheProfile) {
  const ReplayRun r = Replay("none", true);
  ASSERT_GT(r.speed.size(), 40u);
  EXPECT_NEAR(r.speed.back(), 1.0, 0.1);
}

}  // namespace
}  // namespace twinscale::replay
