// Truth perturbations: the --truth parsing table, what each perturbation does to a fleet's
// options (the sizes of docs/architecture.md "Truth perturbations", worked by hand), and the
// canonical description.
#include "controller/replay/truth.h"

#include <gtest/gtest.h>

#include <string>

namespace twinscale::replay {
namespace {

TEST(TruthTest, ParsesLists) {
  Truth eff_noise;
  eff_noise.efficiency = eff_noise.noise = true;
  Truth routing;
  routing.routing = true;
  Truth all{true, true, true, true, true};
  Truth warm_front;
  warm_front.warmup = warm_front.frontend = true;
  const struct Case {
    const char* name;
    const char* text;
    Truth want;
  } cases[] = {
      {"none is no perturbation", "none", Truth{}},
      {"one name", "routing", routing},
      {"a comma list", "efficiency,noise", eff_noise},
      {"blanks and case are ignored", " Efficiency , NOISE ", eff_noise},
      {"plus separates too (Describe's spelling)", "warmup+frontend", warm_front},
      {"repeats are harmless", "routing,routing", routing},
      {"all sets every one", "all", all},
      {"all with another name is still all", "all,noise", all},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<Truth> got = ParseTruth(c.text);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, c.want);
  }
}

TEST(TruthTest, RejectsBadLists) {
  const struct Case {
    const char* name;
    const char* text;
  } cases[] = {
      {"empty: say none instead", ""},
      {"an empty element is a typo", "noise,,routing"},
      {"a trailing comma leaves an empty element", "noise,"},
      {"unknown name", "latency"},
      {"none contradicts a perturbation", "none,noise"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<Truth> got = ParseTruth(c.text);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_NE(std::string(ParseTruth("latency").status().message()).find("known:"),
            std::string::npos);
}

TEST(TruthTest, EachPerturbationChangesOnlyItsPart) {
  sim::FleetOptions base;
  base.router.kind = sim::RouterKind::kLeastRequests;
  base.deployment.lifecycle.loading = {sim::SimDuration::Seconds(20), 1.5};
  base.deployment.lifecycle.warming_up = {sim::SimDuration::Seconds(30), 1.2};
  base.deployment.lifecycle.provisioning = {sim::SimDuration::Zero(), 1.0};
  base.deployment.roofline.front_end_delay_us = 1000;
  base.deployment.linear.a0_us = 1601.35;

  {
    SCOPED_TRACE("none changes nothing");
    sim::FleetOptions o = base;
    ApplyTruth(Truth{}, o);
    EXPECT_EQ(o.speed.prefill, 1.0);
    EXPECT_EQ(o.speed.decode, 1.0);
    EXPECT_EQ(o.step_noise_cv, 0.0);
    EXPECT_EQ(o.router.kind, sim::RouterKind::kLeastRequests);
    EXPECT_EQ(o.deployment.lifecycle.loading.median, sim::SimDuration::Seconds(20));
    EXPECT_EQ(o.deployment.roofline.front_end_delay_us, 1000);
  }
  {
    SCOPED_TRACE("efficiency: both speed factors x0.8");
    sim::FleetOptions o = base;
    ApplyTruth(*ParseTruth("efficiency"), o);
    EXPECT_DOUBLE_EQ(o.speed.prefill, 0.8);
    EXPECT_DOUBLE_EQ(o.speed.decode, 0.8);
    EXPECT_EQ(o.step_noise_cv, 0.0);
  }
  {
    SCOPED_TRACE("noise: CV 0.1");
    sim::FleetOptions o = base;
    ApplyTruth(*ParseTruth("noise"), o);
    EXPECT_DOUBLE_EQ(o.step_noise_cv, 0.1);
    EXPECT_EQ(o.speed.prefill, 1.0);
  }
  {
    SCOPED_TRACE("warmup: medians x1.5 (20 s -> 30 s, 30 s -> 45 s, 0 stays 0), tails x1.3");
    sim::FleetOptions o = base;
    ApplyTruth(*ParseTruth("warmup"), o);
    EXPECT_EQ(o.deployment.lifecycle.loading.median, sim::SimDuration::Seconds(30));
    EXPECT_DOUBLE_EQ(o.deployment.lifecycle.loading.p90_over_median, 1.5 * 1.3);
    EXPECT_EQ(o.deployment.lifecycle.warming_up.median, sim::SimDuration::Seconds(45));
    EXPECT_DOUBLE_EQ(o.deployment.lifecycle.warming_up.p90_over_median, 1.2 * 1.3);
    EXPECT_EQ(o.deployment.lifecycle.provisioning.median, sim::SimDuration::Zero());
  }
  {
    SCOPED_TRACE("routing: Random whatever was assumed");
    sim::FleetOptions o = base;
    ApplyTruth(*ParseTruth("routing"), o);
    EXPECT_EQ(o.router.kind, sim::RouterKind::kRandom);
  }
  {
    SCOPED_TRACE("frontend: +30 ms on either latency model's front end");
    sim::FleetOptions o = base;
    ApplyTruth(*ParseTruth("frontend"), o);
    EXPECT_DOUBLE_EQ(o.deployment.roofline.front_end_delay_us, 31000);
    EXPECT_DOUBLE_EQ(o.deployment.linear.a0_us, 31601.35);
  }
}

TEST(TruthTest, FrontEndDelayAddsThirtyMillisecondsToTtft) {
  // The latency model itself: a linear deployment with a0 = 0 gets a 30 ms front end.
  sim::DeploymentSpec d;
  d.latency_model = sim::LatencyModelKind::kLinear;
  d.linear = sim::LinearCoefficients{1000, 0, 0, 0, 0, 0};
  sim::FleetOptions o;
  o.deployment = d;
  ApplyTruth(*ParseTruth("frontend"), o);
  EXPECT_EQ(sim::MakeLatencyModel(o.deployment)->FrontEndDelay(100), sim::SimDuration::Millis(30));
}

TEST(TruthTest, DescribeIsCanonicalAndReadsBack) {
  const struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"none", "none"},
      {"noise,efficiency", "efficiency+noise"},
      {"frontend,routing,warmup", "warmup+routing+frontend"},
      {"efficiency,noise,warmup,routing,frontend", "all"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const Truth t = *ParseTruth(c.text);
    EXPECT_EQ(Describe(t), c.want);
    EXPECT_EQ(*ParseTruth(Describe(t)), t);
  }
}

}  // namespace
}  // namespace twinscale::replay
