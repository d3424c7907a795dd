// The twin as a Forecaster: see twin_forecaster.h for the reduction and why it is sound.
#include "controller/twin/twin_forecaster.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "simulator/core/rng.h"
#include "simulator/core/samplers.h"
#include "simulator/core/simulation.h"
#include "simulator/model/fleet.h"
#include "simulator/model/run_stats.h"

namespace twinscale::twin {
namespace {

using sim::SimDuration;
using sim::SimTime;

// Request lengths: the observed histogram's shape (a bucket by its weight, then log-uniform inside
// it, since length densities fall within the wide buckets of vLLM's 1-2-5 ladder; the +Inf bucket
// spans [last bound, 2 x last bound]) rescaled so its mean is the observed mean,
// or an exponential with that mean when no histogram was seen. Coarse buckets (vLLM's 1-2-5
// ladder) keep the spread of the real lengths, which decides the TTFT tail, without inventing the
// exponential's much heavier one.
class LengthSampler {
 public:
  LengthSampler(const policy::LengthShape& shape, double mean, int32_t max_tokens)
      : mean_(std::max(1.0, mean)), max_(max_tokens) {
    double total = 0;
    for (double w : shape.weights) total += w;
    if (shape.empty() || total <= 0 || shape.weights.size() != shape.upper_bounds.size() + 1) {
      return;
    }
    double lo = 0, acc = 0, dist_mean = 0;
    for (size_t i = 0; i < shape.weights.size(); ++i) {
      const double hi = i < shape.upper_bounds.size() ? shape.upper_bounds[i] : 2 * lo;
      const double p = shape.weights[i] / total;
      if (p > 0 && hi > lo) {
        acc += p;
        buckets_.push_back({acc, lo, hi});
        // Log-uniform inside a bucket (uniform for the first): mean (b - a) / ln(b / a).
        dist_mean += p * (lo > 0 ? (hi - lo) / std::log(hi / lo) : (lo + hi) / 2);
      }
      lo = hi;
    }
    if (buckets_.empty() || dist_mean <= 0) {
      buckets_.clear();
      return;
    }
    buckets_.back().cdf = 1.0;
    scale_ = mean_ / dist_mean;
  }
  int32_t Sample(sim::Rng& rng) const {
    double x;
    if (buckets_.empty()) {
      x = sim::SampleExponential(rng, mean_);
    } else {
      const double u = rng.Uniform01();
      size_t i = 0;
      while (i + 1 < buckets_.size() && buckets_[i].cdf < u) ++i;
      const Bucket& b = buckets_[i];
      const double u2 = rng.Uniform01();
      x = scale_ * (b.lo > 0 ? b.lo * std::pow(b.hi / b.lo, u2) : b.lo + u2 * (b.hi - b.lo));
    }
    return static_cast<int32_t>(std::clamp(std::round(x), 1.0, static_cast<double>(max_)));
  }
  // A length drawn with probability proportional to the length (what a running request is).
  int32_t SampleLengthBiased(sim::Rng& rng) const {
    // Rejection from Sample with acceptance x / cap: exact, and cheap for these spreads.
    const double cap = buckets_.empty() ? 10 * mean_ : scale_ * buckets_.back().hi;
    for (int i = 0; i < 64; ++i) {
      const int32_t x = Sample(rng);
      if (rng.Uniform01() * cap <= x) return x;
    }
    return Sample(rng);
  }

 private:
  struct Bucket {
    double cdf, lo, hi;
  };
  double mean_;
  int32_t max_;
  double scale_ = 1;
  std::vector<Bucket> buckets_;
};

// Arrivals. The fleet's arrival process is a renewal process at `rate` with gamma gaps of
// coefficient of variation `cv` (a unit-rate process in operational time, scaled). The source emits
// the points the simulated replicas receive: every point when the whole fleet is simulated; for a
// sample of k replicas out of the N(t) serving at time t, the share k / N(t) of them, chosen the way
// the router would spread the fleet's arrivals:
// - kIndependent (Random routing): each fleet point is kept with probability p = k / N(t). The
//   thinned process is again a renewal process whose gap is a geometric number G of the fleet's
//   gaps, i.e. Gamma(G x shape) — drawn exactly, one geometric and one gamma per kept point. This
//   matters for bursty traffic: feeding the sample a stream with the fleet's own CV (as if the
//   sample received whole bursts) makes a large fleet look far burstier per replica than it is
//   (CV^2 per replica is p cv^2 + 1 - p, not cv^2), and a regular one more regular.
// - kSystematic (balancing routers: LeastRequests, PrefixAware, RoundRobin): every (1 / p)-th fleet
//   point, from a random phase — what a balancing router does to a large fleet, which hands each
//   replica close to every N-th request; the sample's own router then balances among its k.
// When N(t) changes (replicas coming up) the share in force at the previous kept point is used
// for the next gap, a negligible approximation at a handful of instants. Lengths come from their
// own streams, one draw per emitted request, so candidates share them request by request.
class FleetArrivalSource : public sim::RequestSource {
 public:
  struct Segment {
    double start_s;
    double share;  // of the fleet's arrivals the simulated replicas receive from start_s on
  };
  enum class Thinning { kIndependent, kSystematic };
  FleetArrivalSource(std::vector<Segment> segments, Thinning thinning, double rate, double end_s,
                     double cv, const LengthSampler& prompt, const LengthSampler& output,
                     uint64_t seed)
      : segments_(std::move(segments)),
        thinning_(thinning),
        rate_(rate),
        end_s_(end_s),
        shape_(1.0 / (std::clamp(cv, 0.2, 4.0) * std::clamp(cv, 0.2, 4.0))),
        prompt_(prompt),
        output_(output),
        arrivals_(seed, 0, sim::Stream::kArrivals),
        thinning_rng_(seed, 0, sim::Stream::kArrivals, 1),
        prompts_(seed, 0, sim::Stream::kPromptLengths),
        outputs_(seed, 0, sim::Stream::kOutputLengths) {
    phase_ = thinning_rng_.Uniform01();
  }

  bool Next(sim::RequestSpec& out) override {
    if (!(rate_ > 0)) return false;
    const double p = std::clamp(ShareAt(op_ / rate_), 1e-9, 1.0);
    double gaps = 1;  // fleet gaps until the next kept point
    if (p < 1) {
      if (thinning_ == Thinning::kIndependent) {
        // Geometric on {1, 2, ...} by inversion: one uniform per kept point.
        gaps = 1 + std::floor(std::log(thinning_rng_.UniformOpen0()) / std::log1p(-p));
      } else {
        gaps = std::max(1.0, std::ceil((1.0 - phase_) / p - 1e-12));
        phase_ = std::clamp(phase_ + gaps * p - 1.0, 0.0, 1.0);
      }
    }
    op_ += sim::SampleGamma(arrivals_, gaps * shape_, 1.0 / shape_);
    const double t = op_ / rate_;
    if (!(t < end_s_)) return false;
    out.id = next_id_++;
    out.arrival = SimTime::FromSecondsF(t);
    out.prompt_tokens = prompt_.Sample(prompts_);
    out.output_tokens = output_.Sample(outputs_);
    out.prefix_hashes.clear();
    return true;
  }

 private:
  double ShareAt(double t) const {
    double share = segments_.empty() ? 1.0 : segments_.front().share;
    for (const Segment& s : segments_) {
      if (s.start_s <= t) share = s.share;
    }
    return share;
  }

  std::vector<Segment> segments_;
  Thinning thinning_;
  double rate_, end_s_, shape_;
  const LengthSampler& prompt_;
  const LengthSampler& output_;
  sim::Rng arrivals_, thinning_rng_, prompts_, outputs_;
  double op_ = 0;     // operational time of the last fleet point (fleet points = op x rate)
  double phase_ = 0;  // systematic thinning: progress toward the next kept point, in [0, 1)
  uint64_t next_id_ = 1;
};

}  // namespace

policy::Forecast TwinForecaster::Evaluate(const policy::ForecastQuestion& q) const {
  const int32_t runs = std::max(1, options_.seeds);
  if (runs == 1) return EvaluateOnce(q, q.seed);
  policy::Forecast sum;
  sum.attainment = 0;
  int64_t judged = 0;
  double met = 0;
  for (int32_t i = 0; i < runs; ++i) {
    const policy::Forecast f = EvaluateOnce(q, sim::DeriveSeed(q.seed, static_cast<uint64_t>(i), 77));
    met += f.attainment * static_cast<double>(f.requests);
    judged += f.requests;
    sum.ttft_p90_ms += f.ttft_p90_ms / runs;
    sum.scheduling_delay_mean_ms += f.scheduling_delay_mean_ms / runs;
    sum.preemptions_per_s += f.preemptions_per_s / runs;
  }
  sum.requests = judged;
  sum.attainment = judged > 0 ? met / static_cast<double>(judged) : 1.0;
  sum.meets_slo = sum.attainment + 1e-12 >= q.percentile / 100.0;
  return sum;
}

policy::Forecast TwinForecaster::EvaluateOnce(const policy::ForecastQuestion& q,
                                              uint64_t seed) const {
  const int32_t candidate = std::max(1, q.candidate_replicas);
  const int32_t ready_now = std::min<int32_t>(static_cast<int32_t>(q.ready.size()), candidate);
  // Serving times of the candidate fleet: Ready now, then pending ones, then new ones.
  std::vector<double> serve_at;  // seconds from now, one per replica of the candidate fleet
  for (int32_t i = 0; i < ready_now; ++i) serve_at.push_back(0.0);
  std::vector<absl::Duration> pending = q.pending_ready_in;
  std::sort(pending.begin(), pending.end());
  for (const absl::Duration& d : pending) {
    if (static_cast<int32_t>(serve_at.size()) >= candidate) break;
    serve_at.push_back(std::max(0.0, absl::ToDoubleSeconds(d)));
  }
  while (static_cast<int32_t>(serve_at.size()) < candidate) {
    serve_at.push_back(absl::ToDoubleSeconds(q.new_replica_warmup));
  }

  // The observed Ready replicas in load order, so a sample can spread evenly across it.
  std::vector<policy::ReplicaStart> ready(q.ready.begin(), q.ready.begin() + ready_now);
  std::stable_sort(ready.begin(), ready.end(), [](const auto& a, const auto& b) {
    return a.waiting + a.running < b.waiting + b.running;
  });

  const double horizon_s = absl::ToDoubleSeconds(q.horizon);
  const bool full_fleet = options_.sample_replicas <= 0 || candidate <= options_.sample_replicas ||
                          ready_now == 0;
  const int32_t k = full_fleet ? candidate : std::min(options_.sample_replicas, ready_now);

  std::vector<FleetArrivalSource::Segment> segments;
  if (full_fleet) {
    segments.push_back({0.0, 1.0});
  } else {
    // The sample receives k / N(t) of the fleet's arrivals; N(t) grows as replicas come up (the
    // sample is drawn from the Ready replicas, so N(0) >= k).
    std::vector<double> times = serve_at;
    std::sort(times.begin(), times.end());
    int32_t serving = 0;
    size_t i = 0;
    while (i < times.size()) {
      const double t = times[i];
      while (i < times.size() && times[i] == t) {
        ++serving;
        ++i;
      }
      segments.push_back({t, std::min(1.0, static_cast<double>(k) / std::max(1, serving))});
    }
  }
  const FleetArrivalSource::Thinning thinning =
      options_.router == sim::RouterKind::kRandom ||
              options_.router == sim::RouterKind::kRandomPerConnection
          ? FleetArrivalSource::Thinning::kIndependent
          : FleetArrivalSource::Thinning::kSystematic;

  sim::FleetOptions fo;
  fo.deployment = options_.deployment;
  fo.deployment.lifecycle.slow_period = SimDuration::Zero();
  fo.speed = options_.speed;
  fo.router.kind = options_.router;
  fo.initial_replicas = 0;
  fo.seed = seed;
  sim::Simulation simulation;
  sim::TtftSlo slo;
  slo.threshold = SimDuration::FromAbsl(q.ttft_threshold);
  slo.per_prompt_token = SimDuration::FromAbsl(q.ttft_per_prompt_token);
  slo.percentile = q.percentile;
  sim::RunStats stats(slo);
  stats.set_judge_from(SimTime::FromSecondsF(std::min(absl::ToDoubleSeconds(q.judge_from), horizon_s)));
  sim::Fleet fleet(simulation, fo, &stats);

  // Replicas: which observed states seed them, and when each serves.
  std::vector<int32_t> seeded;  // index into `ready` for each simulated replica, -1 for none
  if (full_fleet) {
    for (int32_t i = 0; i < candidate; ++i) {
      fleet.AddReplicaReadyAfter(SimDuration::FromSecondsF(serve_at[static_cast<size_t>(i)]));
      seeded.push_back(i < ready_now ? i : -1);
    }
  } else {
    for (int32_t i = 0; i < k; ++i) {
      fleet.AddReplicaReadyAfter(SimDuration::Zero());
      // Evenly spread over the load order: the (i + 0.5) / k quantile.
      seeded.push_back(std::min(ready_now - 1, static_cast<int32_t>((i + 0.5) * ready_now / k)));
    }
  }

  // Seed what the observed replicas hold.
  sim::Rng seed_rng(seed, 1, sim::Stream::kLifecycle);
  const int64_t capacity = sim::KvCapacityTokens(options_.deployment);
  const double out_mean = std::max(1.0, q.output_tokens_mean);
  const LengthSampler prompt_lengths(q.prompt_shape, q.prompt_tokens_mean, 32768);
  const LengthSampler output_lengths(q.output_shape, out_mean, 32768);
  uint64_t id = 1ULL << 40;
  for (size_t r = 0; r < seeded.size(); ++r) {
    if (seeded[r] < 0) continue;
    const policy::ReplicaStart& st = ready[static_cast<size_t>(seeded[r])];
    const int32_t running = static_cast<int32_t>(std::lround(st.running));
    const double kv_tokens = st.kv_usage * static_cast<double>(capacity);
    const double context =
        running > 0 && kv_tokens > 0 ? kv_tokens / running : q.prompt_tokens_mean + out_mean / 2;
    for (int32_t j = 0; j < running; ++j) {
      // A running request's output length is length-biased; its progress is uniform.
      const double total = std::max(2.0, static_cast<double>(output_lengths.SampleLengthBiased(seed_rng)));
      const int32_t generated =
          static_cast<int32_t>(std::clamp(std::floor(seed_rng.Uniform01() * total), 1.0, total - 1));
      sim::RequestSpec req;
      req.id = id++;
      req.prompt_tokens = static_cast<int32_t>(std::max(1.0, std::round(context) - generated));
      req.output_tokens = static_cast<int32_t>(total);
      if (!fleet.AdoptRunning(static_cast<int32_t>(r), req, generated)) break;
    }
    const int32_t waiting = static_cast<int32_t>(std::lround(st.waiting));
    for (int32_t j = 0; j < waiting; ++j) {
      sim::RequestSpec req;
      req.id = id++;
      req.prompt_tokens = prompt_lengths.Sample(seed_rng);
      req.output_tokens = output_lengths.Sample(seed_rng);
      fleet.InjectTo(static_cast<int32_t>(r), req);
    }
  }

  FleetArrivalSource source(std::move(segments), thinning, q.arrival_rate, horizon_s, q.arrival_cv,
                            prompt_lengths, output_lengths, seed);
  fleet.AttachSource(&source);
  // Every request that arrived by the horizon is judged: one still without a first token when the
  // run stops has waited longer than any target it could have, so it is a miss.
  const double slack_s = absl::ToDoubleSeconds(q.ttft_threshold) +
                         absl::ToDoubleSeconds(q.ttft_per_prompt_token) * 32768 + 1.0;
  simulation.RunUntil(SimTime::FromSecondsF(horizon_s + slack_s));
  const sim::RunSummary s = stats.Summarize(0, 0);

  policy::Forecast f;
  f.requests = s.judged_requests;
  f.attainment = s.judged_requests > 0 ? s.judged_attainment : 1.0;
  f.ttft_p90_ms = s.ttft_ms.p90;
  f.scheduling_delay_mean_ms = s.scheduling_delay_ms.mean;
  f.preemptions_per_s = horizon_s > 0 ? static_cast<double>(s.preemptions) / horizon_s : 0;
  f.meets_slo = f.attainment + 1e-12 >= q.percentile / 100.0;
  return f;
}

}  // namespace twinscale::twin
