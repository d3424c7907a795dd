// The Calibrator against a twin whose inter-token latency is known in closed form. The engine's
// only cost is b2 = 20 ms per decoding sequence per step, which the speed factor divides; the
// window has no arrivals and one request decoding on each of four Ready replicas. Every step then
// holds one sequence, every gap between its tokens is one step, and the twin's mean inter-token
// latency at speed s is exactly 20 ms / s. So a fleet showing a mean of T is running at
// 20 ms / T of the profile's speed, and the fit (secant steps on log latency against log speed,
// here with slope exactly 1) lands on it in one step. The expected factors below follow from that,
// the bounds, the bracket around a later fit and the exponential smoothing, worked by hand.
#include "controller/twin/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "controller/twin/twin_forecaster.h"

namespace twinscale::twin {
namespace {

constexpr double kStepSeconds = 0.020;  // b2: one decoding sequence's share of a step

TwinForecaster Twin() {
  sim::DeploymentSpec d;
  d.latency_model = sim::LatencyModelKind::kLinear;
  d.linear = sim::LinearCoefficients{0, 0, kStepSeconds * 1e6, 0, 0, 0};
  d.engine.max_num_seqs = 64;
  d.engine.max_num_batched_tokens = 4096;
  d.engine.kv_capacity_tokens_override = 400000;
  return TwinForecaster(TwinOptions{d, {}, sim::RouterKind::kLeastRequests, 3, 1});
}

// The window as observed: four Ready replicas, one request decoding on each, nothing arriving.
policy::ForecastQuestion Observed() {
  policy::ForecastQuestion q;
  for (int i = 0; i < 4; ++i) q.ready.push_back({/*waiting=*/0, /*running=*/1, /*kv_usage=*/0.01});
  q.candidate_replicas = 4;
  q.arrival_rate = 0;
  q.prompt_tokens_mean = 512;
  q.output_tokens_mean = 256;
  q.seed = 5;
  return q;
}

// A snapshot whose window showed a mean inter-token latency of `itl_seconds` over `tokens` gaps.
state::FleetSnapshot Window(double itl_seconds, double tokens = 1000) {
  state::FleetSnapshot s;
  s.workload.itl_mean_seconds = state::Input<double>::Value(itl_seconds);
  s.workload.itl_tokens = tokens;
  return s;
}

TEST(CalibrationTest, TheTwinUnderTestIsExactlyTwentyMillisecondsOverTheSpeed) {
  const TwinForecaster twin = Twin();
  for (double speed : {0.5, 0.8, 1.0, 1.25, 1.5}) {
    SCOPED_TRACE(speed);
    EXPECT_NEAR(twin.MeanInterTokenLatencySeconds(Observed(), {speed, speed}), kStepSeconds / speed,
                2e-9);  // step times are whole nanoseconds
  }
}

TEST(CalibrationTest, TheFirstWindowSetsTheFactorItShows) {
  struct Case {
    std::string name;
    double itl_seconds;  // observed
    double want;         // 20 ms / itl, within [0.5, 1.5]
  };
  const std::vector<Case> cases = {
      {"as fast as the profile", 0.020, 1.0},
      {"slower: 25 ms is 0.8 of the speed", 0.025, 0.8},
      {"faster: 16 ms is 1.25", 0.016, 1.25},
      {"exactly the floor: 40 ms is 0.5", 0.040, 0.5},
      {"below the floor: 50 ms would be 0.4, held at 0.5", 0.050, 0.5},
      {"above the ceiling: 10 ms would be 2, held at 1.5", 0.010, 1.5},
  };
  const TwinForecaster twin = Twin();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Calibrator calibrator;
    const CalibrationState& s = calibrator.Update(Window(c.itl_seconds), Observed(), twin);
    EXPECT_EQ(s.updates, 1);
    // No smoothing on the first window: the factor is what it shows.
    EXPECT_NEAR(s.speed.decode, c.want, 1e-6);
    EXPECT_NEAR(s.speed.prefill, c.want, 1e-6);  // one factor for both
    ASSERT_TRUE(s.last_observed_ratio.has_value());
    EXPECT_NEAR(*s.last_observed_ratio, c.want, 1e-6);
  }
}

TEST(CalibrationTest, LaterWindowsAreSmoothedAndBracketedAroundTheCurrentFactor) {
  // Smoothing 0.3, bracket 1.3. Each step's fit stays within [f / 1.3, f x 1.3] of the current
  // factor f (and the bounds); the new factor is 0.7 f + 0.3 x the fit.
  struct Step {
    double itl_seconds;
    double want_ratio;   // the window's own fit
    double want_factor;  // after smoothing
  };
  const std::vector<Step> steps = {
      // First: 25 ms -> 0.8, taken as it is.
      {0.025, 0.8, 0.8},
      // 20 ms -> 1.0, inside [0.8 / 1.3, 0.8 x 1.3] = [0.615, 1.04]: 0.7 x 0.8 + 0.3 x 1.0 = 0.86.
      {0.020, 1.0, 0.86},
      // 10 ms would be 2.0; the bracket around 0.86 ends at 0.86 x 1.3 = 1.118:
      // 0.7 x 0.86 + 0.3 x 1.118 = 0.9374.
      {0.010, 1.118, 0.9374},
      // 20 ms -> 1.0, inside [0.721, 1.219]: 0.7 x 0.9374 + 0.3 x 1.0 = 0.95618.
      {0.020, 1.0, 0.95618},
      // 40 ms would be 0.5; the bracket's floor is 0.95618 / 1.3 = 0.735523:
      // 0.7 x 0.95618 + 0.3 x 0.735523 = 0.889983.
      {0.040, 0.95618 / 1.3, 0.7 * 0.95618 + 0.3 * (0.95618 / 1.3)},
  };
  const TwinForecaster twin = Twin();
  Calibrator calibrator;
  for (size_t i = 0; i < steps.size(); ++i) {
    SCOPED_TRACE("window " + std::to_string(i + 1));
    const CalibrationState& s = calibrator.Update(Window(steps[i].itl_seconds), Observed(), twin);
    EXPECT_EQ(s.updates, static_cast<int64_t>(i + 1));
    ASSERT_TRUE(s.last_observed_ratio.has_value());
    EXPECT_NEAR(*s.last_observed_ratio, steps[i].want_ratio, 1e-5);
    EXPECT_NEAR(s.speed.decode, steps[i].want_factor, 1e-5);
    EXPECT_EQ(s.speed.prefill, s.speed.decode);
  }
}

TEST(CalibrationTest, ARestoredFactorIsSmoothedTowardTheWindowNotReplaced) {
  // A failover restores 1.2 after 5 updates; a window at the profile's speed (20 ms) fits 1.0,
  // inside [1.2 / 1.3, 1.5] = [0.923, 1.5]: 0.7 x 1.2 + 0.3 x 1.0 = 1.14.
  Calibrator calibrator;
  CalibrationState restored;
  restored.speed = {1.2, 1.2};
  restored.updates = 5;
  calibrator.Restore(restored);
  const CalibrationState& s = calibrator.Update(Window(0.020), Observed(), Twin());
  EXPECT_EQ(s.updates, 6);
  EXPECT_NEAR(*s.last_observed_ratio, 1.0, 1e-6);
  EXPECT_NEAR(s.speed.decode, 1.14, 1e-6);
}

TEST(CalibrationTest, OptionsSetTheBoundsAndTheSmoothing) {
  CalibrationOptions o;
  o.min_factor = 0.9;
  o.max_factor = 1.1;
  o.smoothing = 0.5;
  Calibrator calibrator(o);
  const TwinForecaster twin = Twin();
  // 25 ms would be 0.8: held at the floor, 0.9.
  EXPECT_NEAR(calibrator.Update(Window(0.025), Observed(), twin).speed.decode, 0.9, 1e-6);
  // 16 ms would be 1.25; the bracket around 0.9 reaches 1.17 but the ceiling is 1.1:
  // 0.5 x 0.9 + 0.5 x 1.1 = 1.0.
  EXPECT_NEAR(calibrator.Update(Window(0.016), Observed(), twin).speed.decode, 1.0, 1e-6);
}

TEST(CalibrationTest, WindowsThatSayTooLittleLeaveTheFactorAlone) {
  struct Case {
    std::string why;
    state::FleetSnapshot window;
    policy::ForecastQuestion observed;
  };
  std::vector<Case> cases;
  {
    Case c{"the inter-token latency is stale", Window(0.025), Observed()};
    c.window.workload.itl_mean_seconds = state::Input<double>::Stale("scrape failed");
    cases.push_back(c);
  }
  {
    Case c{"no gaps at all (NoEvents stands for 0 s)", Window(0.025), Observed()};
    c.window.workload.itl_mean_seconds = state::Input<double>::NoEvents();
    cases.push_back(c);
  }
  cases.push_back({"199 gaps, under min_itl_tokens (200)", Window(0.025, 199), Observed()});
  {
    Case c{"no Ready replica to replay", Window(0.025), Observed()};
    c.observed.ready.clear();
    cases.push_back(c);
  }
  {
    Case c{"a negative arrival rate", Window(0.025), Observed()};
    c.observed.arrival_rate = -1;
    cases.push_back(c);
  }
  {
    Case c{"an arrival rate that is not a number", Window(0.025), Observed()};
    c.observed.arrival_rate = std::nan("");
    cases.push_back(c);
  }
  {
    // Nothing decoding and nothing arriving: the twin simulates no gap to match.
    Case c{"the twin has nothing to simulate", Window(0.025), Observed()};
    for (policy::ReplicaStart& r : c.observed.ready) r.running = 0;
    cases.push_back(c);
  }
  const TwinForecaster twin = Twin();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    Calibrator calibrator;
    const CalibrationState& s = calibrator.Update(c.window, c.observed, twin);
    EXPECT_EQ(s.updates, 0);
    EXPECT_EQ(s.speed.decode, 1.0);
    EXPECT_EQ(s.speed.prefill, 1.0);
    EXPECT_FALSE(s.last_observed_ratio.has_value());
  }
  // Exactly min_itl_tokens is enough.
  Calibrator calibrator;
  EXPECT_EQ(calibrator.Update(Window(0.025, 200), Observed(), twin).updates, 1);
}

}  // namespace
}  // namespace twinscale::twin
