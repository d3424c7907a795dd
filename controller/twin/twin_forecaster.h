// The twin as a Forecaster: answers the policy's what-if questions with the simulator.
//
// The reduction that fits the decision budget. Replicas behind one router are exchangeable, so
// instead of the whole fleet of N the twin simulates a sample of them, each fed the share of the
// fleet's arrivals it would receive (N(t) = the replicas serving at time t: Ready now, then pending
// and new ones as their warm-up ends), each seeded with an observed Ready replica's state drawn
// stratified over the fleet's load order (the j-th of k from the j-th of k equal strata; unbiased
// for the fleet's mean, where the strata's midpoints would miss how much worse the most loaded
// replicas do). Fleets no larger than the first batch are simulated whole.
// - Random routing: each sampled replica is an independent simulation, fed an independent
//   thinning (probability 1 / N(t)) of its own realization of the fleet's arrival process: exact
//   in distribution. (Feeding a sample the fleet's own burstiness, as if it received whole
//   bursts, would make a large bursty fleet look several times burstier per replica than it is:
//   on the decision corpus the fast decision would ask for up to 25 replicas more than the whole
//   fleet does.)
// The fleet's arrival process: Poisson within each rate_interval (the controller's scrape
// interval), at arrival_rate x a gamma multiplier (mean 1, CV arrival_rate_cv) drawn afresh per
// interval. The controller sees arrivals only as counts per interval, so this is the burstiness it
// can measure, placed at the time scale it was measured at; it reproduces how real traffic's
// dispersion grows with the window. On the Azure code trace (the index of dispersion of counts,
// from successive differences, over windows of 0.1 / 0.5 / 1 / 5 / 15 / 60 s: 1.2 / 2.3 / 3.1 /
// 17 / 67 / 120) a multiplier with CV 0.28 per 15 s gives about 3 at 0.5 s and 67 at 15 s. A
// gamma renewal process (gap CV = sqrt(dispersion), capped at 3) would put all of it at the scale
// of single gaps (9 at every window) and none of it at the scale of seconds to minutes, where a
// surge outlasts a replica's slack.
// - Balancing routers (LeastRequests, PrefixAware, RoundRobin): sampled replicas run in groups of 8
//   behind the router, each group fed every (N(t) / 8)-th fleet arrival, as a balancing router
//   deals a large fleet's arrivals out evenly. A group pools worse than the whole fleet, which
//   matters where a request's own prefill is most of its target (long prompts): so when two runs
//   of the whole fleet's traffic fit in the request budget (a few thousand long requests, as on
//   the Mooncake trace), the whole fleet is simulated instead, once per unit.
// Sequential sampling: a first batch (sample_replicas replicas, three; two groups behind a
// balancing router); then, while the verdict is within a t-distributed margin of the target (the
// standard error from the spread of the independent runs, at least the binomial one of the
// requests judged) or the attainment is less precise than the question's attainment_tolerance,
// another batch, as long as the requests judged stay within max_sample_requests and the replicas
// simulated within 5 runs' worth of the candidate fleet. Clear what-ifs stay cheap; the few near
// the SLO's edge, which decide the answer, get the precision. Two things also stop it early: a
// question whose caller pools it with earlier draws (ForecastQuestion::prior: the scale-in
// question and the stabilization window's draws) stops once that pool is decided; and a precise
// attainment is grown only while it does not clearly meet the level asked at (the ceiling, which
// matters only where it binds). Proven on the decision corpus
// (controller/replay/corpus_agreement.h): the fast decision agrees within one replica with a
// full-fleet, 5-seed what-if.
//
// Running requests are adopted already decoding, with lengths drawn from the length-biased
// residual of the observed output distribution (new requests draw both lengths from the observed
// histograms, rescaled to the observed means) and contexts consistent with the observed KV use;
// waiting requests are queued at t = 0.
//
// Every candidate N uses the same seed: the same runs, unit by unit, with the same lengths request
// by request (common random numbers), so answers are monotone in N up to noise and comparisons
// are fair. Since a unit's lengths do not depend on N, they are drawn once and kept for the next
// what-ifs with the same question seed (drawing them again would be about a sixth of a what-if's
// cost); the answers are exactly those of drawing them anew. A unit asked again with only its
// judging changed (the percentile, the safety margin, the time judging starts: a target lowered
// under maxReplicas' ceiling asks its sizes again, the ceiling is asked at the SLO and at the
// margin, and a fleet at maxReplicas is its own ceiling) is judged again from the log of its
// first run instead of simulated again, with exactly the answer simulating it would give. On the
// Mooncake entries of the decision corpus that is four what-ifs of about ten.
// Thread-safe: Evaluate is const and builds its own Simulations; the kept lengths are shared
// behind a mutex (by copies of the forecaster, too).
#ifndef TWINSCALE_CONTROLLER_TWIN_TWIN_FORECASTER_H_
#define TWINSCALE_CONTROLLER_TWIN_TWIN_FORECASTER_H_

#include <memory>
#include <optional>

#include "controller/policy/forecaster.h"
#include "simulator/model/deployment.h"
#include "simulator/model/latency_model.h"
#include "simulator/model/router.h"

namespace twinscale::twin {

struct TwinOptions {
  sim::DeploymentSpec deployment;
  sim::SpeedFactors speed;  // calibration
  sim::RouterKind router = sim::RouterKind::kLeastRequests;
  // Replicas sampled in the first batch (behind a balancing router, at least two groups of 8);
  // fleets no larger are simulated whole. 0: always simulate the whole fleet, once per seed.
  // Three: a verdict is judged against the spread of the units, with t-quantiles for their
  // degrees of freedom, and two units have one (t = 12.7), so even a clear what-if 2 points
  // from the target would need a second batch (four replicas). Three have two (t = 4.3), which
  // settles most clear what-ifs in one batch; sequential sampling still adds replicas where the
  // verdict needs them. In decision_bench three take a quarter less of the fixed decision's mean
  // CPU time than two (steady state 27-29 ms against 38, a scale-in first found 40-42 ms against
  // 55, on a busy machine) and agree with the exact decision on 96.9% of the corpus (against
  // 95.9%), the exact decision's own noise floor.
  int32_t sample_replicas = 3;
  int32_t seeds = 1;  // independent runs averaged (attainment pooled)
  // Sequential sampling (with sample_replicas > 0): while a what-if's verdict is uncertain (or its
  // attainment less precise than the question's attainment_tolerance), simulate another batch,
  // as long as the requests judged stay within this many (a batch that would end beyond it, at
  // the average so far, is not started) and the replicas within 5 runs of the candidate fleet
  // (what the exact what-if spends). 0: never. 20,000: with three sampled replicas it puts 96.9%
  // of the decision corpus within one replica of the exact answer (decision_bench), the exact
  // decision's own noise floor. The budget matters more with two sampled replicas: 15,000 give
  // 87.6%, 20,000 95.9% at a steady-state mean of 24-28 ms, 30,000 96.9% at 31-37 ms.
  int64_t max_sample_requests = 20000;
  // A balancing router's share of requests the twin routes at random instead (calibration: the
  // fleet's queues say how well its gateway balances; sim::RouterOptions::random_share). Last, so
  // the positional initialisations of the fields above keep their meaning.
  double router_random_share = 0;
  // Threads that simulate a batch's units side by side (each unit is its own simulation with its
  // own seed, and the batch is pooled in unit order, so the answer is the same for any count).
  // 1: the caller's thread alone (decision_bench's one-core figures).
  int32_t threads = 1;
  // Time before the engine sees a request, beyond what the deployment's latency model puts there
  // (calibration.h, "The front end"): added to every simulated request's front end.
  double extra_front_end_seconds = 0;
  // Calibration readings only (CalibrationLatencies): the inter-token latency counts the gaps whose
  // step ended this long after the start or later, and arrivals go on past q.horizon while the
  // last requests finish. Forecasts leave both alone: they judge first tokens, not the gaps.
  absl::Duration itl_from = absl::ZeroDuration();
  bool arrivals_past_horizon = false;
};

class LengthCache;  // twin_forecaster.cc
class UnitCache;    // twin_forecaster.cc

class TwinForecaster : public policy::Forecaster {
 public:
  explicit TwinForecaster(TwinOptions options);
  policy::Forecast Evaluate(const policy::ForecastQuestion& q) const override;
  // What calibration (calibration.h) matches the fleet's metrics against: the latencies the twin
  // shows for `q`'s fleet and traffic over q.horizon at `speed` instead of the options' factors.
  // One seed and a fixed sample of at least kCalibrationSample replicas, the same for every
  // speed, so the answers fall with the speed up to little noise. The mean inter-token latency
  // (seconds, per token as vLLM's histogram averages it; 0 when no token gap was simulated), the
  // mean prefill time (first scheduled to first token, per request, as
  // vllm:request_prefill_time_seconds averages it) and queue time (reaching the engine to being
  // scheduled, as vllm:request_queue_time_seconds) over the `prefill_requests` that got a first
  // token. 0 where nothing was simulated.
  //
  // The reading is the window at a steady mix of prefills and decodes, as the fleet's token gaps
  // were. The twin seeds the requests the replicas hold as decoding (a running request's place in
  // its prefill is not observed), so its first seconds lack the prefill chunks that the fleet's
  // decodes were sharing their steps with; where the window has arrivals, the gaps count from
  // `itl_lead_in` on (CalibrationOptions::lead_in, by default kCalibrationLeadIn). And arrivals go
  // on past q.horizon while the window's last requests finish, as the fleet's go on past its
  // scrape: a twin whose arrivals stop drains with nothing to prefill, and its last token gaps are
  // short. Both made the gaps short by 4-5% on long prompts (docs/results.md, "The calibration's
  // reading of the window").
  static constexpr int32_t kCalibrationSample = 8;
  static constexpr absl::Duration kCalibrationLeadIn = absl::Seconds(10);
  struct CalibrationReading {
    double itl_mean_seconds = 0;
    double prefill_mean_seconds = 0;
    // Their prefill time summed over their prompt tokens summed: what calibration matches, since
    // which prompts a window happened to hold moves the plain mean more than the speed does.
    double prefill_seconds_per_prompt_token = 0;
    double queue_mean_seconds = 0;  // the same requests' mean queue time
    int64_t prefill_requests = 0;
  };
  // `router_random_share`: instead of the options' (TwinOptions::router_random_share).
  CalibrationReading CalibrationLatencies(const policy::ForecastQuestion& q,
                                          sim::SpeedFactors speed,
                                          std::optional<double> router_random_share = std::nullopt,
                                          absl::Duration itl_lead_in = kCalibrationLeadIn) const;
  // The forecast from the first batch alone, never grown: for reading the forecast's numbers (the
  // TTFT p90 that the prediction error compares with the fleet's), where no verdict needs
  // settling. Evaluate would grow a what-if near the SLO's edge up to the request budget: on the
  // Azure conversation trace at x40 these 15 s readings would then cost as much as a tenth of the
  // decisions.
  policy::Forecast Reading(const policy::ForecastQuestion& q) const;
  const TwinOptions& options() const { return options_; }
  // Units (independent simulations) that a what-if took from an earlier one of the same decision
  // and judged again instead of simulating (see "Every candidate N" above), since construction.
  int64_t units_judged_again() const;
  void set_speed(sim::SpeedFactors s) { options_.speed = s; }
  void set_router_random_share(double share) { options_.router_random_share = share; }
  void set_extra_front_end_seconds(double s) { options_.extra_front_end_seconds = s; }
  // The deployment's own front-end time for a prompt of `prompt_tokens` (its latency model's,
  // without the extra above).
  double OwnFrontEndSeconds(double prompt_tokens) const;

 private:
  policy::Forecast EvaluateOnce(const policy::ForecastQuestion& q, uint64_t seed) const;
  TwinOptions options_;
  std::shared_ptr<LengthCache> lengths_;  // never null
  std::shared_ptr<UnitCache> units_;      // never null
};

}  // namespace twinscale::twin

#endif  // TWINSCALE_CONTROLLER_TWIN_TWIN_FORECASTER_H_
