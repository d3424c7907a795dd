// SizeFleet: the what-if half of a scaling decision — which fleet size the twin says holds the SLO
// — shared by Recommend and by the offline check of the decision corpus, so both ask exactly the
// same questions in the same order.
//
// The questions, given the current (base) size:
// 1. Does base hold the SLO over the horizon (warm-up included), at the full threshold?
// 2. If not: the smallest larger size that does (SearchUp), or maxReplicas if none.
// 3. If it does and scale-in is allowed: the smallest smaller size that holds the SLO at the safety
//    margin, judged from now (SearchDown), each answer pooled with the earlier decisions' draws at
//    that size (scale_in_evidence); base if none.
// When the previous recommendation was not above base (scale-in allowed), question 3 comes first,
// at the hint if below base, else at base - 1: if that size holds the SLO at the margin, so does
// base (more replicas never forecast worse, nor does the full threshold), so question 1 is skipped
// and the search goes on down. A scale-in is found, then waits out its stabilization window over
// several decisions, each of which would otherwise spend a what-if confirming base (a quarter of
// decision_bench's steady-state time); a steady fleet asks the same two questions in the other
// order. The cost: one what-if (a clear miss at the margin) before a scale-up from a steady fleet.
// Each search starts where the answer probably is: the previous recommendation (`hint`), when it
// lies on the search's side of base. Under monotone forecasts the answer does not depend on where
// the search starts; in the steady state (the hint right) a decision then costs two or three
// what-ifs instead of a gallop from base.
//
// A miss at base that the forecaster itself calls unclear (Forecast::verdict_clear: within its
// noise of the target) is held, not acted on: question 2 is not asked. Near the target a sampled
// forecast moves by about one replica's worth between draws (on the decision corpus's Azure
// conversation entries, a standard deviation of 0.7-1 point of attainment between seeds, where
// one replica more moves it by 0.5-1.2), so acting on every miss would add a replica whenever a
// draw fell short, and the scale-in margin, a stricter question, would keep it: on the flat
// conversation trace at x40 (replay seed 3) that climbs from 23 replicas to 26. The scale-up
// search itself takes the smallest size whose forecast meets the target: stopping at the smallest
// one not clearly short leaves that trace at 22 replicas, 94.7% of requests, on another seed.
// A clear miss is still one draw: over an hour of decisions every 15 s, a draw two standard
// errors short comes up several times on a load that does not change. So a clear miss that only
// eats into the aim's points above the percentile (its attainment still at or above the SLO's own
// percentile) is acted on when the previous decision's forecast also missed at this size
// (miss_seen_at_base; each decision draws its own random numbers): one interval later, and by one
// replica (the next decision, at the new size, asks again). The size the search picks comes from
// this decision's draw alone, and under common random numbers a pessimistic draw is pessimistic at
// every candidate: on the Azure conversation trace at x40 a draw can put 22 replicas at 92.0% where
// the decisions around it say 95-98%, with 23 and 24 short as well; acted on at once it asks for
// 25, which the stricter scale-in question then holds for the rest of the hour, where 23 serve the
// SLO. A miss below the SLO's percentile is not noise; it scales up at once, to the size the
// search found.
//
// The attainment target is capped just below what maxReplicas could reach (CeilingQuestion), so
// that requests no fleet can serve in time (prompts too long to prefill within the threshold) are
// not chased up to maxReplicas. The ceilings are asked only when they could bind: more replicas
// never forecast worse, so once any forecast at a margin reaches target + 1 point, the ceiling at
// that margin (one point below maxReplicas' attainment) is known to be above the target. Not when
// maxReplicas itself is overloaded (its requests wait, on average, at least the TTFT threshold
// before they are scheduled: ceiling_overloaded): then the shortfall is capacity, which every
// added replica relieves, and a target cut to what the overloaded ceiling reaches would be met by
// a smaller, even more overloaded fleet (at 160 req/s on engines that serve 3 each, 48 replicas
// keep 2% of requests in time and 28 keep 1%: one point under the ceiling would ask for 28). The
// target stands and the search runs up to maxReplicas (kMaxInsufficient).
//
// Pure: no I/O, no clock.
#ifndef TWINSCALE_CONTROLLER_POLICY_FLEET_SIZING_H_
#define TWINSCALE_CONTROLLER_POLICY_FLEET_SIZING_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "controller/policy/forecaster.h"
#include "controller/policy/pooled_draws.h"

namespace twinscale::policy {

// A scale-in what-if (at the safety margin) that an earlier decision asked while the fleet stood
// at the same size: evidence the scale-in question pools with its own (SizingBounds).
struct MarginForecast {
  int32_t replicas = 0;
  double attainment = 1;
  double attainment_se = 0;  // 0: not estimated (the binomial's of `requests` stands in)
  int64_t requests = 0;
  // The fleet arrival rate (req/s) the draw was asked at; 0: not recorded. A clear miss is pooled
  // only with draws asked at a rate at least about as high as its own (PoolMarginForecasts).
  double arrival_rate = 0;
};

struct SizingBounds {
  int32_t base = 1;  // the current size, clamped to [min_replicas, max_replicas], >= 1
  int32_t min_replicas = 1;
  int32_t max_replicas = 1;
  int32_t not_counted = 0;   // starting pods holding a slot but no capacity (CandidateQuestion)
  double safety_margin = 1;  // scale-in is judged at this share of each request's slack
  bool scale_in_allowed = true;
  int32_t hint = 0;  // the previous recommendation; 0: none
  // A clear miss at base that still meets the SLO's own percentile (it only eats into the
  // aim's points above the percentile) scales up only when the previous decision's forecast also
  // missed at this base, an independent draw; a deeper miss scales up at once. 0: every clear miss
  // at once.
  double slo_percentile = 0;
  bool miss_seen_at_base = false;
  // The last minute missed the SLO in the fleet's own record (minute_check.h): a miss the fleet
  // shows is confirmed, so the twin's misses are not held (within its noise, or shallow and first
  // seen) and scale up in one step.
  bool miss_observed = false;
  // The arrivals have run above the rate forecast check after check (the forecast's margin,
  // rate_forecast_error.h) while the SLO's record has no minutes to spare (MinutesToSpare,
  // slo_budget.h): a rising load the twin's noise cannot explain confirms its misses as a missed
  // minute does (not held, not taken one replica at a time), and the record cannot afford the
  // minute a held miss may cost. Scale-in is not affected.
  bool rise_on_record = false;
  // Earlier decisions' independent draws of the scale-in question at this base (same margin and
  // SLO), within the scale-down stabilization window. A scale-in waits out that window and moves
  // only if every decision in it recommended it, so a single draw's noise would veto it again and
  // again: on the flat Azure conversation trace one draw in a few puts N - 1 just short, which
  // alone would hold the fleet a replica above its need for most of an hour. A decision's answer
  // at the margin is therefore the inverse-variance pool of its own draw and these (unless its own
  // draw is a clear miss, which stands): the window's evidence, judged as a whole.
  std::vector<MarginForecast> scale_in_evidence;
};

struct Sizing {
  enum class Outcome {
    kHold,             // base holds the SLO (or misses within the noise); scale-in not allowed
                       // or nothing smaller is safe
    kScaleUp,          // base misses; `replicas` is the smallest larger size that meets
    kMaxInsufficient,  // base misses and so does maxReplicas; replicas = max_replicas
    kScaleIn,          // a smaller size holds the SLO at the safety margin
  };
  Outcome outcome = Outcome::kHold;
  int32_t replicas = 0;
  Forecast at_base;  // base, full threshold (at_answer when base_implied)
  // Base was not asked: a smaller fleet held the SLO at the margin, which implies base holds it at
  // the full threshold. at_base is then that smaller fleet's forecast (a lower bound).
  bool base_implied = false;
  Forecast at_answer;  // at `replicas` (at the margin for kScaleIn; at_base for kHold)
  // The targets (percent) the questions were asked at, and the ceilings when they were asked.
  double keep_percentile = 0;
  double scale_in_percentile = 0;
  std::optional<double> keep_ceiling;      // CeilingTarget at the full threshold
  std::optional<double> scale_in_ceiling;  // CeilingTarget at the safety margin
  bool slo_unattainable = false;           // keep_ceiling capped the target
  // maxReplicas was asked about and is overloaded (mean scheduling delay at least the threshold):
  // the target was left as it was. Its mean scheduling delay, in ms.
  bool ceiling_overloaded = false;
  double ceiling_delay_ms = 0;
  bool miss_within_noise = false;  // kHold: base missed, but not clearly (held)
  bool miss_unconfirmed = false;   // kHold: a shallow clear miss, first seen (held)
  bool shallow_step = false;       // kScaleUp: a shallow miss, confirmed: base + 1
  bool miss_observed = false;      // SizingBounds': the last minute missed (nothing scaled in)
  bool rise_on_record = false;     // SizingBounds': a rising load confirmed the misses
  bool missed_at_base = false;     // base was asked and missed (for the next decision)
  int32_t evaluations = 0;         // what-ifs asked (ceilings included)

  struct Asked {
    int32_t replicas;
    double margin;
    double percentile;
    Forecast forecast;   // at the margin: pooled with the evidence when there was some
    Forecast own;        // this decision's own draw
    int32_t pooled = 0;  // earlier draws pooled into `forecast`
  };
  std::vector<Asked> asked;  // every what-if, in order (ceilings excluded)
  // The smallest size below base asked at the safety margin whose answer (pooled with the
  // window's earlier draws) meets the SLO clearly (Forecast::verdict_clear); 0: none. A scale-in
  // to it need not wait out the whole stabilization window (stabilize.h).
  int32_t clearly_safe = 0;
  // The forecast for `n` at `margin` at that margin's target, if it was asked.
  std::optional<Forecast> Find(int32_t n, double margin) const;
};

// The earlier draws at `replicas` in `evidence` asked at `min_arrival_rate` req/s or more, pooled
// (pooled_draws.h). The scale-in question
// at that size carries them as its prior (ForecastQuestion::prior), so a sampling twin stops
// drawing once the pool below is decided.
PooledDraws EvidenceAt(int32_t replicas, const std::vector<MarginForecast>& evidence,
                       double min_arrival_rate = 0);

// The inverse-variance mean of `own` and the earlier draws at `replicas` in `evidence` (each
// draw's variance at least the binomial's of the requests it judged), judged against `target` (a
// fraction). `own` was asked at `arrival_rate`. A clear miss of `own` is pooled only with the
// draws asked at no less than kComparableRate x that rate: earlier passes at a lower load say
// nothing against a miss at a higher one, but passes at the same or a higher load do (a what-if's
// draw is one scenario of bursts, shared by every candidate size through common random numbers:
// on the Azure code trace at x20 one draw in a few misses clearly at N - 1 on a load where the
// window's other draws hold at N - 5, and since the stabilization window takes the largest
// recommendation, that one draw unpooled would hold the surplus for the next five minutes, and
// again at the next such draw: 27 replicas for 18 minutes where 19-22 hold the SLO). With none
// such, a clear miss is returned as it is. `pooled` gets the number of earlier draws used.
inline constexpr double kComparableRate = 0.95;
Forecast PoolMarginForecasts(const Forecast& own, int32_t replicas,
                             const std::vector<MarginForecast>& evidence, double target,
                             int32_t& pooled, double arrival_rate = 0);

// `question` carries the observed fleet, the workload and the SLO (candidate_replicas, judge_from
// and the thresholds are set per question by CandidateQuestion). b.base >= 1.
Sizing SizeFleet(const ForecastQuestion& question, const Forecaster& forecaster,
                 const SizingBounds& b);

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_FLEET_SIZING_H_
