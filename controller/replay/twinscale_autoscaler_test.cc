// twinscale's policy in replay, end to end through vLLM-format scrapes: calibration converges on a
// truth that is slower than the profile (compute and bandwidth efficiency x0.8) and shrinks the
// prediction error; with an unperturbed truth it stays near 1. The twin's forecast attainment over
// each decision's span (twin_error.h) is unbiased against a truth that is the twin itself, and
// optimistic against a slower one it was not calibrated to.
#include "controller/replay/twinscale_autoscaler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "controller/api/spec_loader.h"
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
  std::vector<double> speed, error, front_end;
  ReplaySummary summary;
  std::vector<policy::Decision> decisions;
};

ReplayRun Replay(const char* truth_text, bool calibrate, int32_t max_replicas = 16,
                 double rate = 25, absl::Duration surplus_window = absl::Minutes(30),
                 int32_t min_replicas = 1, twin::TargetDecider::HeldTwin held = {}) {
  auto profiles = sim::ProfileRegistry::LoadEmbedded();
  EXPECT_TRUE(profiles.ok());
  const sim::DeploymentSpec d = *profiles->Resolve("llama-3.1-8b-h100-sxm-tp1", {});
  policy::PolicyConfig pc;
  pc.min_replicas = min_replicas;
  pc.max_replicas = max_replicas;
  pc.warmup_expected = absl::Seconds(45);
  pc.surplus_window = surplus_window;
  twin::TwinOptions to;
  to.deployment = d;
  TwinscaleAutoscaler a("twinscale", pc, to);
  a.set_calibration(calibrate);
  a.set_held_twin(held);
  ReplayConfig rc;
  rc.trace = SteadyTrace(rate, 20);
  rc.deployment = d;
  rc.truth = *ParseTruth(truth_text);
  rc.initial_replicas = std::clamp(3, min_replicas, max_replicas);
  auto r = RunReplay(rc, a);
  EXPECT_TRUE(r.ok()) << r.status();
  return {a.speed_history(), a.prediction_error_ms(), a.extra_front_end_history(), r->summary,
          a.decisions()};
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

// A view of one Ready pod whose last good scrape is `age` old, having finished `finished`.
ClusterView OnePod(absl::Time now, absl::Duration age, double finished) {
  state::PodView p;
  p.name = "p";
  p.stage = state::PodView::Stage::kReady;
  p.scrape_ok = true;
  p.scraped_at = now - age;
  metrics::EngineObservation e;
  e.engine = "0";
  e.running = 2;
  e.kv_cache_usage = 0.1;
  e.requests_finished_total = finished;
  p.observation.engines.push_back(e);
  ClusterView v;
  v.now = now;
  v.spec_replicas = 2;
  v.pods = {p};
  return v;
}

TEST(TwinscaleAutoscalerTest, AManifestsTargetTakesTheSpecsStaleAfter) {
  // Built from a manifest, the replay's decider comes from the controller's factory
  // (twin::TwinDeciderFactory) and judges freshness by spec.metrics.staleAfter: a scrape 30 s old
  // is stale at 20 s, and the decision freezes scale-in; at 60 s it is fresh and nothing is
  // frozen.
  auto profiles = sim::ProfileRegistry::LoadEmbedded();
  ASSERT_TRUE(profiles.ok());
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  auto decide = [&](const char* stale_after) -> policy::Decision {
    const std::string yaml = absl::StrCat(R"(apiVersion: twinscale.io/v1alpha1
kind: InferenceAutoscaler
metadata: {name: llama, namespace: llm}
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: vllm}
  mode: Direct
  minReplicas: 1
  maxReplicas: 4
  model: {profile: llama-3.1-8b-h100-sxm-tp1}
  metrics: {interval: 15s, staleAfter: )",
                                          stale_after, "}\n");
    absl::StatusOr<nlohmann::json> object = api::InferenceAutoscalerObject(yaml, "test");
    EXPECT_TRUE(object.ok()) << object.status();
    auto a = TwinscaleAutoscaler::FromManifest("twinscale", *object, &*profiles);
    EXPECT_TRUE(a.ok()) << a.status();
    (*a)->Decide(OnePod(t0, absl::Seconds(30), 100));
    (*a)->Decide(OnePod(t0 + absl::Seconds(15), absl::Seconds(30), 130));
    EXPECT_EQ((*a)->decisions().size(), 2u);
    return (*a)->decisions().back();
  };
  auto has = [](const policy::Decision& d, const std::string& code) {
    return std::any_of(d.reasons.begin(), d.reasons.end(),
                       [&](const policy::Reason& r) { return r.code == code; });
  };
  const policy::Decision strict = decide("20s");
  EXPECT_TRUE(has(strict, "InputsStale") || has(strict, "ScaleInFrozen"));
  EXPECT_GE(strict.replicas, 2);  // stale inputs never scale in
  const policy::Decision lenient = decide("60s");
  EXPECT_FALSE(has(lenient, "InputsStale") || has(lenient, "ScaleInFrozen"));
}

TEST(TwinscaleAutoscalerTest, CalibrationConvergesOnASlowerTruthAndShrinksTheError) {
  // The truth runs its GEMMs, attention and memory traffic at 0.8 of the profile's efficiency:
  // exactly the twin's speed factor 0.8 (both leave the fixed per-step costs alone), which the
  // calibration must find, within its window-to-window noise.
  const ReplayRun calibrated = Replay("efficiency", true);
  const ReplayRun uncalibrated = Replay("efficiency", false);
  ASSERT_GT(calibrated.speed.size(), 40u);
  const double final_speed = calibrated.speed.back();
  EXPECT_GT(final_speed, 0.75);
  EXPECT_LT(final_speed, 0.86);
  EXPECT_DOUBLE_EQ(uncalibrated.speed.back(), 1.0);
  EXPECT_LT(MeanAbsLastHalf(calibrated.error), MeanAbsLastHalf(uncalibrated.error));
}

TEST(TwinscaleAutoscalerTest, ATwinHeldAtTheTruthsSpeedStaysThereAndErrsLessThanTheProfile) {
  // --twin-speed: the twin at the factors given, every decision, whatever calibration fits. The
  // truth runs at 0.8 of the profile's efficiency, so a twin held at 0.8 forecasts the windows
  // better than one at the profile's 1.0, and as well as calibration does once it has settled.
  const twin::TargetDecider::HeldTwin at_truth{sim::SpeedFactors{0.8, 0.8}, std::nullopt};
  const ReplayRun held = Replay("efficiency", false, 16, 25, absl::Minutes(30), 1, at_truth);
  const ReplayRun held_calibrating =
      Replay("efficiency", true, 16, 25, absl::Minutes(30), 1, at_truth);
  const ReplayRun profile = Replay("efficiency", false);
  ASSERT_GT(held.speed.size(), 40u);
  for (double s : held.speed) ASSERT_DOUBLE_EQ(s, 0.8);
  for (double s : held_calibrating.speed) ASSERT_DOUBLE_EQ(s, 0.8);
  EXPECT_DOUBLE_EQ(profile.speed.back(), 1.0);
  EXPECT_LT(MeanAbsLastHalf(held.error), MeanAbsLastHalf(profile.error));
}

TEST(TwinscaleAutoscalerTest, CalibrationHoldsOnAnOverloadedFleet) {
  // One replica allowed, twice the traffic it can serve: every step carries a full budget of
  // prefill and inter-token latency is several times an idle fleet's. That is load, not a slower
  // GPU: the factor must still come out near the truth's 0.8 (a mean-load formula read it as a
  // slow fleet and sank to its 0.5 floor, after which the twin thought the SLO out of reach).
  const ReplayRun r = Replay("efficiency", true, /*max_replicas=*/1, /*rate=*/30);
  ASSERT_GT(r.speed.size(), 40u);
  EXPECT_GT(r.speed.back(), 0.72);
  EXPECT_LT(r.speed.back(), 0.88);
}

TEST(TwinscaleAutoscalerTest, CalibrationFollowsALightFleet) {
  // Twelve replicas held for 1.5 req/s of 1,000 / 200-token requests: each decodes for about
  // 200 steps of ~7 ms, so about a fifth of a request runs per replica (at 4 req/s the gauge
  // still reached one per replica often enough to calibrate under the old gate). The
  // window's inter-token latency is then small batches' step time, which the truth's 0.8 sets as
  // it sets a busy fleet's; the factor must find it. (Gated on a running request per Ready
  // replica, it never moved from 1.0 here.)
  const ReplayRun r = Replay("efficiency", true, /*max_replicas=*/12, /*rate=*/1.5,
                             absl::Minutes(30), /*min_replicas=*/12);
  ASSERT_GT(r.speed.size(), 40u);
  EXPECT_GT(r.speed.back(), 0.72);
  EXPECT_LT(r.speed.back(), 0.88);
}

TEST(TwinscaleAutoscalerTest, CalibrationStaysNearOneWhenTheTruthIsTheProfile) {
  const ReplayRun r = Replay("none", true);
  ASSERT_GT(r.speed.size(), 40u);
  EXPECT_NEAR(r.speed.back(), 1.0, 0.1);
}

TEST(TwinscaleAutoscalerTest, TheServersFrontEndTimeIsFoundAndTheTwinAddsIt) {
  // The truth's API server holds every request 30 ms before its engine sees it (truth
  // `frontend`); the profile's model has no front end. The pods' vLLM metrics show it as end-to-end
  // latency that is neither queue, prefill nor decode time, and the twin adds it to every request:
  // from 0, each window moves it a tenth of the way, so after the 20 minutes' 80-odd windows it is
  // within a millisecond of 30 ms. Against a truth without one it stays at 0, and with it the
  // twin's p90 TTFT is no longer 30 ms short of what the truth served.
  const ReplayRun with = Replay("frontend", true, /*max_replicas=*/1, /*rate=*/19);
  ASSERT_GT(with.front_end.size(), 40u);
  EXPECT_NEAR(with.front_end.back(), 0.030, 0.001);
  const ReplayRun without = Replay("none", true, /*max_replicas=*/1, /*rate=*/19);
  ASSERT_GT(without.front_end.size(), 40u);
  EXPECT_NEAR(without.front_end.back(), 0.0, 0.001);
  ASSERT_TRUE(with.summary.twin_error.has_value() && without.summary.twin_error.has_value());
  EXPECT_NEAR(with.summary.twin_error->ttft_p90_bias_ms,
              without.summary.twin_error->ttft_p90_bias_ms, 10.0);
}

TEST(TwinscaleAutoscalerTest, PrefixReuseTheFleetReportsIsSkippedNotFittedAsSpeed) {
  // Every other request is the same 4,000-token document (the same prefix ids), the others new
  // ones, at 3 req/s for 20 minutes on at most two replicas, truth `none` (the twin's own engine,
  // its caching on). The pods' counters then show about half the prompt tokens found cached:
  // 3,984 of 4,000 for a repeat (whole blocks short of the last token), none for a new one. The
  // twin skips that share of its own prompts (whole prompts, as the repeats here are), so its
  // prefills take what the fleet's do at the profile's speed, and the prefill factor, fitted to
  // the fleet's prefill time per prompt token, stays near the truth's 1. A twin that prefilled
  // every prompt in full would see the fleet prefill about twice as fast per prompt token and
  // fit its prefill factor well above 1 instead (1.49 over the second half, measured).
  auto profiles = sim::ProfileRegistry::LoadEmbedded();
  ASSERT_TRUE(profiles.ok());
  const sim::DeploymentSpec d = *profiles->Resolve("llama-3.1-8b-h100-sxm-tp1", {});
  auto trace = std::make_shared<sim::Trace>(*SteadyTrace(3, 20));
  for (size_t i = 0; i < trace->requests.size(); ++i) {
    sim::RequestSpec& r = trace->requests[i];
    r.prompt_tokens = 4000;
    r.prefix_hashes.clear();
    for (uint64_t k = 0; k < 8; ++k) r.prefix_hashes.push_back(i % 2 == 0 ? 1 + k : 1000 * i + k);
  }
  policy::PolicyConfig pc;
  pc.min_replicas = 1;
  pc.max_replicas = 2;
  pc.warmup_expected = absl::Seconds(45);
  twin::TwinOptions to;
  to.deployment = d;
  TwinscaleAutoscaler a("twinscale", pc, to);
  ReplayConfig rc;
  rc.trace = trace;
  rc.deployment = d;
  rc.truth = *ParseTruth("none");
  rc.initial_replicas = 2;
  auto run = RunReplay(rc, a);
  ASSERT_TRUE(run.ok()) << run.status();
  const std::vector<policy::Decision>& ds = a.decisions();
  ASSERT_GT(ds.size(), 60u);
  double share = 0;
  int n = 0;
  for (size_t i = ds.size() / 2; i < ds.size(); ++i, ++n)
    share += ds[i].question.prompt_cached_share;
  EXPECT_NEAR(share / n, 0.5 * 3984 / 4000, 0.03);
  const std::vector<double>& prefill = a.prefill_speed_history();
  ASSERT_FALSE(prefill.empty());
  double mean = 0;
  for (size_t i = prefill.size() / 2; i < prefill.size(); ++i) mean += prefill[i];
  mean /= static_cast<double>(prefill.size() - prefill.size() / 2);
  EXPECT_NEAR(mean, 1.0, 0.1);
  ASSERT_TRUE(run->summary.twin_error.has_value());
  EXPECT_LE(std::fabs(run->summary.twin_error->attainment_bias_points), 2.0);
}

TEST(TwinscaleAutoscalerTest, WithTheTwinAsTheTruthThePredictedAttainmentIsUnbiased) {
  // With truth `none` the truth fleet is the twin's own model, so once calibration settles the
  // twin's forecast for each decision's span and what the truth served there differ only by
  // chance. One replica at most, fed 19 req/s: busy enough that some requests miss (about 1%), so
  // the check is not 100% against 100%. Each span is a minute (horizon 45 s warm-up + 60 s,
  // judged after the warm-up) of about 19 x 60 = 1,140 requests; at 99% the binomial noise of a
  // span's share is sqrt(0.99 x 0.01 / 1140) = 0.3 points, for the twin's draw and the truth's
  // alike, 0.4 points for their difference, and a queue that builds up moves a span's requests
  // together, perhaps three times that: about 1.2 points. Successive decisions' spans overlap
  // four times over, so the 60-odd settled decisions of 20 minutes are about 16 independent
  // spans, whose mean carries about 1.2 / sqrt(16) = 0.3 points of noise: 1 point is three of
  // those.
  const ReplayRun r = Replay("none", true, /*max_replicas=*/1, /*rate=*/19);
  ASSERT_TRUE(r.summary.twin_error.has_value());
  const TwinError& e = *r.summary.twin_error;
  EXPECT_GT(e.decisions, 50);
  EXPECT_LE(std::fabs(e.attainment_bias_points), 1.0) << "MAE " << e.attainment_mae_points;
  // A steady Poisson rate comes as forecast: a span's count falls within two standard deviations
  // of the forecast's (the band, wider than 5% at 1,140 requests) about 95% of the time, and the
  // level the twin is asked about carries a little noise of its own. The twin's own part is then
  // nearly all of it, and as unbiased.
  EXPECT_GT(e.rate_as_forecast.decisions, 8 * e.decisions / 10);
  EXPECT_LE(std::fabs(e.rate_as_forecast.attainment_bias_points), 1.0);
  EXPECT_EQ(e.rate_as_forecast.decisions + e.rate_above_forecast.decisions +
                e.rate_below_forecast.decisions,
            e.decisions);
}

TEST(TwinscaleAutoscalerTest, AgainstASlowerTruthItDoesNotKnowTheTwinIsOptimistic) {
  // The truth runs at 0.8 of the profile's efficiency and calibration is off, so the twin keeps
  // the profile's speed: every span is served more slowly than it forecast. One replica at most,
  // fed about half what overloads it at the truth's speed (CalibrationHoldsOnAnOverloadedFleet):
  // busy enough that the slower steps cost requests their target, not so busy that the twin
  // forecasts misses for everything as well.
  const ReplayRun r = Replay("efficiency", false, /*max_replicas=*/1, /*rate=*/15);
  ASSERT_TRUE(r.summary.twin_error.has_value());
  EXPECT_GT(r.summary.twin_error->decisions, 50);
  EXPECT_GT(r.summary.twin_error->attainment_bias_points, 0);
  EXPECT_LT(r.summary.twin_error->ttft_p90_bias_ms, 0);  // forecast TTFTs shorter than served
}

bool Spent(const policy::Decision& d) {
  for (const policy::Reason& r : d.reasons) {
    if (r.code == "SurplusSpent") return true;
  }
  return false;
}

TEST(TwinscaleAutoscalerTest, AFleetThatServedASurplusSpendsItOnlyAfterTenMinutesOfRecord) {
  // 20 minutes of steady traffic on an unperturbed truth: the fleet the twin sizes for a 95% aim
  // serves more than 95.5% of requests in time (the record the decisions keep comes from the
  // fleet's own TTFT histograms, through the scrapes). Once 10 minutes are on record the
  // decisions spend the surplus: the aim falls below 95, by at most 4 points (the SLO's 90 + 1),
  // and the reason says so. Before that, and with surplusWindow 0 throughout, every decision aims
  // at 95.
  const ReplayRun on = Replay("none", true);
  const ReplayRun off = Replay("none", true, 16, 25, absl::ZeroDuration());
  ASSERT_GT(on.decisions.size(), 60u);
  EXPECT_GT(on.summary.attainment, 0.955);
  const absl::Time first = on.decisions.front().at;  // 15 s into the trace
  int spent = 0;
  for (const policy::Decision& d : on.decisions) {
    if (d.question.arrival_rate <= 0) continue;
    SCOPED_TRACE(absl::FormatDuration(d.at - first));
    if (d.at - first < absl::Minutes(10) - absl::Seconds(30)) {
      EXPECT_FALSE(Spent(d));
      EXPECT_DOUBLE_EQ(d.question.percentile, 95);
    }
    if (Spent(d)) {
      ++spent;
      EXPECT_GT(d.aim_lowered_by, 0);
      EXPECT_LE(d.aim_lowered_by, 4 + 1e-9);
      EXPECT_NEAR(d.question.percentile, 95 - d.aim_lowered_by, 1e-9);
    }
  }
  EXPECT_GT(spent, 10);
  for (const policy::Decision& d : off.decisions) {
    EXPECT_FALSE(Spent(d));
    if (d.question.arrival_rate > 0) {
      EXPECT_DOUBLE_EQ(d.question.percentile, 95);
    }
  }
}

TEST(TwinscaleAutoscalerTest, AnSloPerPromptTokenIsNotJudgedAgainstItsThresholdAlone) {
  // An SLO of 100 ms + 0.5 ms per prompt token: a 1000-token prompt's target is 600 ms, and
  // nearly every first token takes more than 100 ms (the prefill alone). The pods' TTFT histogram
  // says how long first tokens took, not for which prompts, so the fleet's record can't be judged
  // against each request's own target; judged against 100 ms alone, every minute would read as
  // missed (MinuteMissed on every decision, the aim pinned at its 99.5% ceiling, the record's
  // shortfall on top). With the record left unjudged the decisions aim at the target's share, and
  // the replay, which does know each request's prompt, finds the target met.
  auto profiles = sim::ProfileRegistry::LoadEmbedded();
  ASSERT_TRUE(profiles.ok());
  const sim::DeploymentSpec d = *profiles->Resolve("llama-3.1-8b-h100-sxm-tp1", {});
  policy::PolicyConfig pc;
  pc.max_replicas = 16;
  pc.warmup_expected = absl::Seconds(45);
  pc.ttft_threshold = absl::Milliseconds(100);
  pc.ttft_per_prompt_token = absl::Microseconds(500);
  twin::TwinOptions to;
  to.deployment = d;
  TwinscaleAutoscaler a("twinscale", pc, to);
  ReplayConfig rc;
  rc.trace = SteadyTrace(25, 20);
  rc.deployment = d;
  rc.truth = *ParseTruth("none");
  rc.slo.threshold = sim::SimDuration::Millis(100);
  rc.slo.per_prompt_token = sim::SimDuration::Micros(500);
  rc.initial_replicas = 3;
  auto r = RunReplay(rc, a);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_GT(a.decisions().size(), 60u);
  int aimed = 0;
  for (const policy::Decision& dec : a.decisions()) {
    SCOPED_TRACE(absl::FormatDuration(dec.at - a.decisions().front().at));
    EXPECT_FALSE(policy::HasReason(dec.reasons, policy::ReasonCode::kMinuteMissed));
    EXPECT_FALSE(policy::HasReason(dec.reasons, policy::ReasonCode::kShortfallOnRecord));
    EXPECT_EQ(dec.served_requests, 0);
    if (dec.question.arrival_rate > 0) {
      EXPECT_LE(dec.question.percentile, 95 + 1e-9);
      ++aimed;
    }
  }
  EXPECT_GT(aimed, 60);
  EXPECT_GT(r->summary.attainment, 0.95);
}

}  // namespace
}  // namespace twinscale::replay
