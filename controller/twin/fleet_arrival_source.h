// What the twin feeds its simulated replicas: the fleet's arrivals (a rate-modulated Poisson
// process, thinned to the share of the fleet the simulated replicas stand for) with request lengths
// drawn from the observed length histograms.
//
// Arrivals. The fleet's arrival process is a Poisson process whose rate is the interval's mean
// rate times a multiplier drawn afresh for every `interval_s` (gamma, mean 1, coefficient of
// variation `rate_cv`; 1 when rate_cv is 0): burstiness at the time scale the controller measures
// it (twin_forecaster.h says why). The k-th interval's mean rate (k = 1, 2, ...) is the RatePath's
// (policy::ForecastQuestion::rate_persistence): `rate` itself when the path has no weights. It runs
// in operational time (op: the fleet's points are a unit-rate Poisson process in op, and op
// advances by rate x multiplier per second), so thinning and the modulation compose. The source
// emits the points the simulated replicas receive: every point when the whole fleet is simulated;
// for a sample of k replicas out of the N(t) serving at time t, the share k / N(t) of them, chosen
// the way the router would spread the fleet's arrivals:
// - kIndependent (Random routing): each fleet point is kept with probability p = k / N(t). The
//   kept points are again Poisson in op, with gaps of a geometric number G of unit exponentials,
//   i.e. Gamma(G, 1): one geometric and one gamma per kept point. A sampled replica therefore sees
//   its share of the fleet's rate and the fleet's own multiplier: a fleet-wide surge reaches every
//   replica, while the fleet's other noise averages out per replica as it does behind a router.
// - kSystematic (balancing routers: LeastRequests, PrefixAware, RoundRobin): every (1 / p)-th fleet
//   point, from a random phase — what a balancing router does to a large fleet, which hands each
//   replica close to every N-th request; the sample's own router then balances among its k.
//   Behind a balancing router that sends the share s of requests to a random replica instead
//   (TwinOptions::router_random_share: a gateway that balances less than the spec says), the
//   fleet's points split by an independent coin into two independent Poisson processes in op, of
//   rates s and 1 - s: the random ones are thinned independently (kept at rate s p, exponential
//   gaps), the balanced ones systematically (Gamma(G, 1) / (1 - s) for the G-th of them), and the
//   sample receives both merged. Systematic thinning of all of them hands the sample a stream
//   far smoother than Poisson at any share: with every request routed at random, groups of 8
//   forecast 2-3 points more attainment than Random routing does (twin_forecaster_test), and on
//   long prompts with conversations, under a truth that routes at random, the twin was 2.4 points
//   optimistic where it is now 0.3 (docs/results.md, "Long prompts: what the calibration fits").
// When N(t) changes (replicas coming up) the share in force at the previous kept point is used
// for the next gap, a negligible approximation at a handful of instants. Lengths come from a
// RequestLengths, one pair per emitted request (its own streams, so candidates with the same seed
// share them request by request), and the multipliers from their own stream, one per interval.
//
// Not thread-safe: one source per simulation. The length samplers are shared read-only.
#ifndef TWINSCALE_CONTROLLER_TWIN_FLEET_ARRIVAL_SOURCE_H_
#define TWINSCALE_CONTROLLER_TWIN_FLEET_ARRIVAL_SOURCE_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "controller/policy/forecaster.h"
#include "simulator/core/rng.h"
#include "simulator/workload/bucket_length_sampler.h"
#include "simulator/workload/request.h"

namespace twinscale::twin {

// Request lengths: the observed histogram's shape rescaled so its mean is the observed mean, or an
// exponential with that mean when no histogram was seen (simulator/workload/bucket_length_sampler.h
// says why buckets, log-uniform inside).
class LengthSampler : public sim::BucketLengthSampler {
 public:
  LengthSampler(const policy::LengthShape& shape, double mean, int32_t max_tokens)
      : sim::BucketLengthSampler(shape.upper_bounds, shape.weights, std::max(1.0, mean),
                                 max_tokens) {}
};

// Where a source's request lengths come from: the i-th call gives the i-th emitted request's
// (prompt, output) tokens. The twin's forecaster keeps a decision's draws between what-ifs
// (twin_forecaster.cc); SampledLengths draws them afresh.
class RequestLengths {
 public:
  virtual ~RequestLengths() = default;
  virtual void Next(int32_t& prompt_tokens, int32_t& output_tokens) = 0;
};

// Draws each pair from the samplers, on the prompt- and output-length streams of `seed`.
class SampledLengths : public RequestLengths {
 public:
  SampledLengths(const LengthSampler& prompt, const LengthSampler& output, uint64_t seed)
      : prompt_(prompt),
        output_(output),
        prompts_(seed, 0, sim::Stream::kPromptLengths),
        outputs_(seed, 0, sim::Stream::kOutputLengths) {}
  void Next(int32_t& prompt_tokens, int32_t& output_tokens) override {
    prompt_tokens = prompt_.Sample(prompts_);
    output_tokens = output_.Sample(outputs_);
  }

 private:
  const LengthSampler& prompt_;
  const LengthSampler& output_;
  sim::Rng prompts_, outputs_;
};

// The mean rate of each interval ahead: level, then baseline + weight[k - 1] x (level - baseline)
// for the k-th interval, the last weight standing for the later ones; the level throughout when
// there are no weights.
struct RatePath {
  double level = 0;
  double baseline = 0;
  std::vector<double> weights;
  std::vector<double> season = {};  // ForecastQuestion::rate_season
  double At(int32_t k) const;       // k = 1 for the first interval
};

class FleetArrivalSource : public sim::RequestSource {
 public:
  struct Segment {
    double start_s;
    double share;  // of the fleet's arrivals the simulated replicas receive from start_s on
  };
  enum class Thinning { kIndependent, kSystematic };
  // `segments`: the share in force from each start time on (empty: 1 throughout); arrivals stop
  // at `end_s`. `rate` in requests per second, fleet-wide; `interval_s` > 0 (else 15).
  FleetArrivalSource(std::vector<Segment> segments, Thinning thinning, double rate, double end_s,
                     double rate_cv, double interval_s, RequestLengths& lengths, uint64_t seed)
      : FleetArrivalSource(std::move(segments), thinning, RatePath{rate, rate, {}}, end_s, rate_cv,
                           interval_s, lengths, seed) {}
  // `random_share` (kSystematic only): the share of the fleet's points routed at random.
  FleetArrivalSource(std::vector<Segment> segments, Thinning thinning, RatePath path, double end_s,
                     double rate_cv, double interval_s, RequestLengths& lengths, uint64_t seed,
                     double random_share = 0);

  bool Next(sim::RequestSpec& out) override;

  // Prefix reuse known only as the share of prompt tokens the pods found cached
  // (policy::ForecastQuestion::prompt_cached_share): each emitted request finds its whole prompt
  // cached (but the block holding its last token: the replica keeps that) with probability
  // `cached_share`, decided by its index on its own stream of `seed` (the same requests hit in
  // every candidate of one decision), and nothing otherwise. Whole prompts, because the reuse
  // large enough to matter is a conversation's next turn or a repeated document, which finds
  // most of its prompt cached while a new request finds none; a prompt prefix shared by every
  // request (a system prompt) is reuse spread evenly instead. The pods' counters do not tell the
  // two apart; on the Mooncake trace, whose reuse under random routing is its shared first block
  // (4% of tokens), skipping the share of every prompt instead forecast within 0.2 points of this
  // (docs/results.md, "Prefix reuse").
  void SetPrefixReuse(double cached_share, uint64_t seed);

 private:
  double ShareAt(double t) const;
  double NextStart(double t) const;  // the first segment start after t with a share > 0
  double NextMultiplier();
  void AdvanceInterval();
  double TimeAt(double op);
  double OpAt(double t);
  // Mixed thinning (random_share_ in (0, 1], p < 1): the next kept point of each stream, in op.
  void DrawRandomPoint(double from_op, double p);
  void DrawBalancedPoint(double from_op, double p);
  bool NextMixed(double p, sim::RequestSpec& out);
  // Emits the point at op_ (false past end_s).
  bool Emit(sim::RequestSpec& out);

  std::vector<Segment> segments_;
  Thinning thinning_;
  RatePath path_;
  double end_s_, rate_cv_, interval_s_;
  int32_t interval_ = 1;  // the current interval's k
  RequestLengths& lengths_;
  sim::Rng arrivals_, thinning_rng_, modulation_rng_;
  double op_ = 0;     // operational time of the last fleet point
  double t_ = 0;      // its time (seconds)
  double phase_ = 0;  // systematic thinning: progress toward the next kept point, in [0, 1)
  double random_share_ = 0;
  sim::Rng random_points_;
  // Mixed thinning: each stream's next kept point (op), the share they were drawn at (-1: none
  // drawn since the last point emitted otherwise) and the balanced one's gap in balanced points.
  double mixed_p_ = -1;
  double random_next_op_ = 0, balanced_next_op_ = 0, balanced_gaps_ = 1;
  double interval_start_ = 0, interval_op_ = 0;  // where the current interval starts, in t and op
  double interval_rate_ = 0;                     // its rate: fleet points per second
  uint64_t next_id_ = 1;
  double cached_share_ = 0;
  uint64_t reuse_seed_ = 0;
};

}  // namespace twinscale::twin

#endif  // TWINSCALE_CONTROLLER_TWIN_FLEET_ARRIVAL_SOURCE_H_
