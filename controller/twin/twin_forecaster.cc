// The twin as a Forecaster: see twin_forecaster.h for the reduction and why it is sound.
#include "controller/twin/twin_forecaster.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "controller/twin/fleet_arrival_source.h"
#include "simulator/core/rng.h"
#include "simulator/core/samplers.h"
#include "simulator/core/simulation.h"
#include "simulator/model/fleet.h"
#include "simulator/model/latency_model.h"
#include "simulator/model/run_stats.h"

namespace twinscale::twin {
namespace {

using sim::SimDuration;
using sim::SimTime;

// The lengths of the new requests one unit (one independent simulation) draws, in order. They
// depend only on the unit's seed and the question's length distributions, not on the candidate
// fleet (only how many of them a run uses does), so LengthCache keeps them between what-ifs.
// Immutable once shared.
struct LengthDraws {
  explicit LengthDraws(uint64_t unit_seed)
      : prompts(unit_seed, 0, sim::Stream::kPromptLengths),
        outputs(unit_seed, 0, sim::Stream::kOutputLengths) {}
  std::vector<std::pair<int32_t, int32_t>> lengths;  // (prompt, output) of the i-th request
  sim::Rng prompts, outputs;                         // the streams, positioned after `lengths`
};

// Reads a unit's lengths from what was kept, then draws on where that ends (from copies of the
// kept streams, so the sequence is the one drawing from the start would give).
class LengthStream : public RequestLengths {
 public:
  LengthStream(std::shared_ptr<const LengthDraws> kept, const LengthSampler& prompt,
               const LengthSampler& output)
      : kept_(std::move(kept)), read_(kept_.get()), prompt_(prompt), output_(output) {}

  void Next(int32_t& prompt, int32_t& output) override {
    if (next_ == read_->lengths.size()) DrawOne();
    const std::pair<int32_t, int32_t>& l = read_->lengths[next_++];
    prompt = l.first;
    output = l.second;
  }
  // What was kept plus what this stream drew beyond it; null if it drew nothing new.
  std::shared_ptr<const LengthDraws> extended() const { return more_; }

 private:
  void DrawOne() {
    if (more_ == nullptr) {
      more_ = std::make_shared<LengthDraws>(*kept_);
      read_ = more_.get();
    }
    more_->lengths.emplace_back(prompt_.Sample(more_->prompts), output_.Sample(more_->outputs));
  }

  std::shared_ptr<const LengthDraws> kept_;
  std::shared_ptr<LengthDraws> more_;
  const LengthDraws* read_;
  size_t next_ = 0;
  const LengthSampler& prompt_;
  const LengthSampler& output_;
};

}  // namespace

// The units' lengths for the latest question seed and length distributions: one decision's worth,
// since a question with another seed or other distributions (the next decision's: the observed
// histograms move) replaces them all. Bounded, as a forecaster lives as long as its target: at
// most kMaxUnits units and kMaxRequests lengths (8 bytes each, plus 5 KB of stream state per
// unit: at most about 420 KB; the fixed decision of decision_bench keeps about 180 KB). Units
// beyond the bound draw their own lengths, as without the cache.
class LengthCache {
 public:
  struct Key {
    uint64_t question_seed = 0;
    policy::LengthShape prompt_shape, output_shape;
    double prompt_mean = 0, output_mean = 0;
    int32_t max_tokens = 0;
    bool operator==(const Key& o) const {
      return question_seed == o.question_seed && prompt_mean == o.prompt_mean &&
             max_tokens == o.max_tokens && output_mean == o.output_mean &&
             prompt_shape.upper_bounds == o.prompt_shape.upper_bounds &&
             prompt_shape.weights == o.prompt_shape.weights &&
             output_shape.upper_bounds == o.output_shape.upper_bounds &&
             output_shape.weights == o.output_shape.weights;
    }
  };
  static Key KeyOf(const policy::ForecastQuestion& q, int32_t max_tokens) {
    return {q.seed,    q.prompt_shape, q.output_shape, q.prompt_tokens_mean, q.output_tokens_mean,
            max_tokens};
  }

  // What is kept for `unit_seed`; nothing drawn yet when nothing is.
  std::shared_ptr<const LengthDraws> Get(const Key& key, uint64_t unit_seed)
      ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      if (!(key == key_)) {
        key_ = key;
        kept_.clear();
        kept_requests_ = 0;
      }
      auto it = kept_.find(unit_seed);
      if (it != kept_.end()) return it->second;
    }
    return std::make_shared<const LengthDraws>(unit_seed);
  }
  // Keeps `draws` for `unit_seed` if they are more than what is kept and the bound allows.
  void Put(const Key& key, uint64_t unit_seed, std::shared_ptr<const LengthDraws> draws)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (!(key == key_)) return;
    auto it = kept_.find(unit_seed);
    const size_t had = it == kept_.end() ? 0 : it->second->lengths.size();
    if (draws->lengths.size() <= had) return;
    if (it == kept_.end() && kept_.size() >= kMaxUnits) return;
    if (kept_requests_ - had + draws->lengths.size() > kMaxRequests) return;
    kept_requests_ += draws->lengths.size() - had;
    kept_[unit_seed] = std::move(draws);
  }

 private:
  static constexpr size_t kMaxUnits = 32;
  static constexpr size_t kMaxRequests = 65536;

  absl::Mutex mu_;
  Key key_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::shared_ptr<const LengthDraws>> kept_ ABSL_GUARDED_BY(mu_);
  size_t kept_requests_ ABSL_GUARDED_BY(mu_) = 0;
};

// What one simulation of a group of replicas judged.
struct GroupResult {
  int64_t judged = 0;
  int64_t met = 0;
  double ttft_p90_ms = 0;
  double scheduling_delay_mean_ms = 0;
  int64_t preemptions = 0;
  double itl_sum_ms = 0;  // inter-token gaps, summed per token
  int64_t itl_count = 0;
  double prefill_sum_ms = 0;          // prefill times, summed per request
  double queue_sum_ms = 0;            // the same requests' queue times
  int64_t prefill_prompt_tokens = 0;  // and prompt tokens
  int64_t prefill_count = 0;
  int64_t itl_judged = 0, itl_over = 0;  // with an ITL objective: judged tokens, those over it
  int64_t waiting_at_horizon = 0;        // over the group's replicas
};

// A unit's run kept for judging again: its result and the log its judged counts come from.
struct UnitRun {
  GroupResult result;
  sim::TtftLog log;
};

// The units one decision's what-ifs simulated, by everything their simulation depends on, so that
// a unit asked again with only its judging changed (the target's percentile, which decides only
// when sampling stops; the safety margin; the time judging starts) is judged again from its log
// instead of simulated again. A decision asks that often: a target lowered under maxReplicas'
// ceiling asks its sizes again, the ceiling at the SLO and at the margin simulate the same fleet,
// and where the fleet is at maxReplicas so does its own size. The answers are exactly those of
// simulating again (twin_forecaster_test). Kept for the latest question seed only (the next
// decision's replaces them) and bounded: at most kMaxRequests logged requests (about 24 bytes
// each: at most about 6 MB); units beyond the bound are simulated each time, as without it.
class UnitCache {
 public:
  std::shared_ptr<const UnitRun> Get(uint64_t question_seed, const std::string& key)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (question_seed != seed_) return nullptr;
    auto it = kept_.find(key);
    if (it == kept_.end()) return nullptr;
    ++judged_again_;
    return it->second;
  }
  int64_t judged_again() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return judged_again_;
  }
  void Put(uint64_t question_seed, std::string key, std::shared_ptr<const UnitRun> run)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (question_seed != seed_) {
      seed_ = question_seed;
      kept_.clear();
      kept_requests_ = 0;
    }
    const size_t n = run->log.requests();
    if (kept_requests_ + n > kMaxRequests || kept_.contains(key)) return;
    kept_requests_ += n;
    kept_.emplace(std::move(key), std::move(run));
  }

 private:
  static constexpr size_t kMaxRequests = 262144;

  mutable absl::Mutex mu_;
  uint64_t seed_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, std::shared_ptr<const UnitRun>> kept_ ABSL_GUARDED_BY(mu_);
  size_t kept_requests_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t judged_again_ ABSL_GUARDED_BY(mu_) = 0;
};

int64_t TwinForecaster::units_judged_again() const { return units_->judged_again(); }

double TwinForecaster::OwnFrontEndSeconds(double prompt_tokens) const {
  const std::shared_ptr<const sim::LatencyModel> latency =
      sim::MakeLatencyModel(options_.deployment, options_.speed);
  return latency->FrontEndDelay(static_cast<int32_t>(std::clamp(prompt_tokens, 0.0, 1e9)))
      .seconds();
}

TwinForecaster::TwinForecaster(TwinOptions options)
    : options_(std::move(options)),
      lengths_(std::make_shared<LengthCache>()),
      units_(std::make_shared<UnitCache>()) {}

namespace {

// The fleet a what-if simulates: the deployment as the twin runs it.
sim::FleetOptions WhatIfFleet(const TwinOptions& options, uint64_t seed) {
  sim::FleetOptions fo;
  fo.deployment = options.deployment;
  fo.deployment.lifecycle.slow_period = SimDuration::Zero();
  // The twin's requests carry no prefix hashes (the observed traffic's sharing is not known per
  // request), so a prefix cache would only cost its bookkeeping; the reuse the pods report is
  // assumed per request instead (FleetArrivalSource::SetPrefixReuse).
  fo.deployment.engine.enable_prefix_caching = false;
  // The front end the fleet shows beyond the model's (calibration.h): both latency models' front
  // end is a0 + a1 x prompt (the roofline's a0 is front_end_delay_us).
  fo.deployment.roofline.front_end_delay_us += 1e6 * options.extra_front_end_seconds;
  fo.deployment.linear.a0_us += 1e6 * options.extra_front_end_seconds;
  fo.speed = options.speed;
  fo.router.kind = options.router;
  fo.router.random_share = options.router_random_share;
  fo.initial_replicas = 0;
  fo.vllm_metrics = false;  // a what-if reads only its RunStats
  fo.seed = seed;
  return fo;
}

// The target each request of `q` is judged against on `fo`'s fleet.
sim::TtftSlo WhatIfSlo(const sim::FleetOptions& fo, const policy::ForecastQuestion& q) {
  sim::TtftSlo slo;
  slo.threshold = SimDuration::FromAbsl(q.ttft_threshold);
  slo.per_prompt_token = SimDuration::FromAbsl(q.ttft_per_prompt_token);
  slo.percentile = q.percentile;
  if (q.slack_margin < 1.0) {
    slo.slack_share = q.slack_margin;
    std::shared_ptr<const sim::LatencyModel> latency =
        sim::MakeLatencyModel(fo.deployment, fo.speed);
    slo.unloaded = [latency, engine = fo.deployment.engine](int32_t prompt_tokens) {
      return sim::UnloadedTtft(*latency, engine, prompt_tokens);
    };
  }
  return slo;
}

// The time judging starts for `q`: its judge_from, at most its horizon.
SimTime JudgeFrom(const policy::ForecastQuestion& q) {
  return SimTime::FromSecondsF(
      std::min(absl::ToDoubleSeconds(q.judge_from), absl::ToDoubleSeconds(q.horizon)));
}

// One simulation: replica i serves from serve_at[i] seconds on, seeded with *states[i] (null: it
// starts empty), fed the share `segments` of the fleet's arrivals, its requests judged against
// `slo` (WhatIfSlo: the same for every unit of a what-if). `log`, when not null, receives what its
// judged counts come from (sim::TtftLog).
GroupResult SimulateGroup(const TwinOptions& options, const policy::ForecastQuestion& q,
                          const sim::TtftSlo& slo, const std::vector<double>& serve_at,
                          const std::vector<const policy::ReplicaStart*>& states,
                          std::vector<FleetArrivalSource::Segment> segments,
                          FleetArrivalSource::Thinning thinning,
                          const LengthSampler& prompt_lengths, const LengthSampler& output_lengths,
                          LengthCache& length_cache, const LengthCache::Key& length_key,
                          uint64_t seed, sim::TtftLog* log) {
  const double horizon_s = absl::ToDoubleSeconds(q.horizon);
  const sim::FleetOptions fo = WhatIfFleet(options, seed);
  sim::Simulation simulation;
  sim::RunStats stats(slo, sim::StatsDetail::kSloOnly);
  stats.set_ttft_log(log);
  if (q.itl_threshold > absl::ZeroDuration()) {
    stats.set_itl_threshold(
        SimDuration::FromAbsl(q.itl_threshold * std::min(1.0, std::max(0.0, q.slack_margin))));
  }
  stats.set_judge_from(JudgeFrom(q));
  if (options.itl_from > absl::ZeroDuration()) {
    stats.set_itl_from(SimTime::FromNanos(absl::ToInt64Nanoseconds(options.itl_from)));
  }
  sim::Fleet fleet(simulation, fo, &stats);
  for (double t : serve_at) fleet.AddReplicaReadyAfter(SimDuration::FromSecondsF(t));

  // Seed what the observed replicas hold.
  sim::Rng seed_rng(seed, 1, sim::Stream::kLifecycle);
  const int64_t capacity = sim::KvCapacityTokens(options.deployment);
  const double out_mean = std::max(1.0, q.output_tokens_mean);
  uint64_t id = 1ULL << 40;
  for (size_t r = 0; r < states.size(); ++r) {
    if (states[r] == nullptr) continue;
    const policy::ReplicaStart& st = *states[r];
    const int32_t running = static_cast<int32_t>(std::lround(st.running));
    const double kv_tokens = st.kv_usage * static_cast<double>(capacity);
    const double context =
        running > 0 && kv_tokens > 0 ? kv_tokens / running : q.prompt_tokens_mean + out_mean / 2;
    for (int32_t j = 0; j < running; ++j) {
      // A running request's output length is length-biased; its progress is uniform.
      const double total =
          std::max(2.0, static_cast<double>(output_lengths.SampleLengthBiased(seed_rng)));
      const int32_t generated = static_cast<int32_t>(
          std::clamp(std::floor(seed_rng.Uniform01() * total), 1.0, total - 1));
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

  LengthStream lengths(length_cache.Get(length_key, seed), prompt_lengths, output_lengths);
  RatePath path{q.arrival_rate, q.arrival_rate, {}};
  if (q.arrival_rate_baseline > 0 && !q.rate_persistence.empty()) {
    path.baseline = q.arrival_rate_baseline;
    path.weights = q.rate_persistence;
  }
  path.season = q.rate_season;
  // Every request that arrived by the horizon is judged: one still without a first token when the
  // run stops has waited longer than any target it could have, so it is a miss.
  const double slack_s =
      absl::ToDoubleSeconds(q.ttft_threshold) +
      absl::ToDoubleSeconds(q.ttft_per_prompt_token) * sim::MaxRequestTokens(options.deployment) +
      1.0;
  FleetArrivalSource source(std::move(segments), thinning, std::move(path),
                            horizon_s + (options.arrivals_past_horizon ? slack_s : 0.0),
                            q.arrival_rate_cv, absl::ToDoubleSeconds(q.rate_interval), lengths,
                            seed, options.router_random_share);
  source.SetPrefixReuse(q.prompt_cached_share, seed);
  fleet.AttachSource(&source);
  simulation.RunUntil(SimTime::FromSecondsF(horizon_s));
  const int64_t waiting_at_horizon = fleet.waiting();
  simulation.RunUntil(SimTime::FromSecondsF(horizon_s + slack_s));
  const sim::RunSummary s = stats.Summarize(0, 0);
  if (std::shared_ptr<const LengthDraws> more = lengths.extended()) {
    length_cache.Put(length_key, seed, std::move(more));
  }

  GroupResult g;
  g.judged = s.judged_requests;
  g.met = static_cast<int64_t>(
      std::llround(s.judged_attainment * static_cast<double>(s.judged_requests)));
  g.ttft_p90_ms = s.ttft_ms.p90;
  g.scheduling_delay_mean_ms = s.scheduling_delay_ms.mean;
  g.preemptions = s.preemptions;
  g.itl_count = s.itl_ms.count;
  g.itl_sum_ms = s.itl_ms.mean * static_cast<double>(s.itl_ms.count);
  g.prefill_count = s.prefill_ms.count;
  g.prefill_sum_ms = s.prefill_ms.mean * static_cast<double>(s.prefill_ms.count);
  g.queue_sum_ms = s.queue_ms.mean * static_cast<double>(s.queue_ms.count);
  g.prefill_prompt_tokens = s.prefill_prompt_tokens;
  g.itl_judged = s.judged_itl_tokens;
  g.itl_over = s.judged_itl_over;
  g.waiting_at_horizon = waiting_at_horizon;
  return g;
}

// Everything a unit's simulation depends on beyond the forecaster's deployment (UnitCache): the
// options' calibration and routing, the question's arrivals, lengths, horizon and targets' run
// length, and the unit's own replicas, states, share of the arrivals and seed. Not the judging
// (percentile, safety margin, judge-from time), which is applied to the unit's log, except with
// an ITL objective, whose judged token gaps are counted during the run (both are in the key then).
class UnitKey {
 public:
  UnitKey(const TwinOptions& o, const policy::ForecastQuestion& q, int32_t max_tokens) {
    Add(o.speed.prefill, o.speed.decode, static_cast<double>(o.router), o.router_random_share,
        o.extra_front_end_seconds, static_cast<double>(max_tokens),
        o.arrivals_past_horizon ? 1.0 : 0.0);
    AddInt(absl::ToInt64Nanoseconds(o.itl_from));
    AddInt(absl::ToInt64Nanoseconds(q.horizon), absl::ToInt64Nanoseconds(q.ttft_threshold),
           absl::ToInt64Nanoseconds(q.ttft_per_prompt_token),
           absl::ToInt64Nanoseconds(q.rate_interval), static_cast<int64_t>(q.seed));
    Add(q.arrival_rate, q.arrival_rate_baseline, q.arrival_rate_cv, q.prompt_tokens_mean,
        q.output_tokens_mean, q.prompt_cached_share);
    AddList(q.rate_persistence);
    AddList(q.rate_season);
    AddList(q.prompt_shape.upper_bounds);
    AddList(q.prompt_shape.weights);
    AddList(q.output_shape.upper_bounds);
    AddList(q.output_shape.weights);
    if (q.itl_threshold > absl::ZeroDuration()) {
      AddInt(absl::ToInt64Nanoseconds(q.itl_threshold), absl::ToInt64Nanoseconds(q.judge_from));
      Add(q.slack_margin);
    }
  }
  // The unit: its replicas' serving times and states, its share of the arrivals and its seed.
  std::string For(const std::vector<double>& serve_at,
                  const std::vector<const policy::ReplicaStart*>& states,
                  const std::vector<FleetArrivalSource::Segment>& segments,
                  FleetArrivalSource::Thinning thinning, uint64_t unit_seed) const {
    UnitKey k = *this;
    k.AddInt(static_cast<int64_t>(thinning), static_cast<int64_t>(unit_seed),
             static_cast<int64_t>(serve_at.size()));
    for (size_t i = 0; i < serve_at.size(); ++i) {
      const policy::ReplicaStart* st = states[i];
      k.Add(serve_at[i], st != nullptr ? 1.0 : 0.0);
      if (st != nullptr) k.Add(st->waiting, st->running, st->kv_usage);
    }
    k.AddInt(static_cast<int64_t>(segments.size()));
    for (const FleetArrivalSource::Segment& seg : segments) k.Add(seg.start_s, seg.share);
    return std::move(k.bytes_);
  }

 private:
  template <typename... T>
  void Add(T... v) {
    (bytes_.append(reinterpret_cast<const char*>(&v), sizeof(double)), ...);
    static_assert((std::is_same_v<T, double> && ...));
  }
  template <typename... T>
  void AddInt(T... v) {
    (bytes_.append(reinterpret_cast<const char*>(&v), sizeof(int64_t)), ...);
    static_assert((std::is_same_v<T, int64_t> && ...));
  }
  void AddList(const std::vector<double>& v) {
    AddInt(static_cast<int64_t>(v.size()));
    bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  }
  std::string bytes_;
};

// Pooled attainment of `units` and its standard error: the ratio estimator's, from the spread of
// the units around it (infinite with fewer than two units), but never below the binomial standard
// error of the requests judged. Requests of one run miss together more often than independently
// (a queue that builds up delays every request behind it), so the binomial is a floor; without it
// a few units that happened to agree looked certain. On bursty traffic the first units of a
// what-if often saw no burst at all: they agreed to within a point, the verdict came out "clear"
// after two or four small units, and the decision missed the exact one's by up to 7 replicas
// (decision corpus, Azure code trace at CV 3, some seeds). Laplace's rule keeps the floor
// positive when every judged request met (or missed) its target.
std::pair<double, double> PooledAttainment(const std::vector<GroupResult>& units) {
  int64_t met = 0, judged = 0;
  for (const GroupResult& g : units) {
    met += g.met;
    judged += g.judged;
  }
  if (judged <= 0) return {1.0, 0.0};
  const double a = static_cast<double>(met) / static_cast<double>(judged);
  const double n = static_cast<double>(units.size());
  if (units.size() < 2) return {a, std::numeric_limits<double>::infinity()};
  const double mean_judged = static_cast<double>(judged) / n;
  double ss = 0;
  for (const GroupResult& g : units) {
    const double r = static_cast<double>(g.met) - a * static_cast<double>(g.judged);
    ss += r * r;
  }
  const double spread_se = std::sqrt(ss / (n * (n - 1))) / mean_judged;
  const double laplace = (static_cast<double>(met) + 1) / (static_cast<double>(judged) + 2);
  const double binomial_se = std::sqrt(laplace * (1 - laplace) / static_cast<double>(judged));
  return {a, std::max(spread_se, binomial_se)};
}

// How sure a verdict must be before the sample stops growing: |attainment - target| at least
// this many standard errors — Student's t at 97.5% for the units' degrees of freedom, since the
// standard error itself is estimated from a handful of units (2 standard errors from 4 units
// would be overconfident).
double VerdictMargin(size_t units) {
  static constexpr double kT[] = {12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23};
  const size_t df = units > 1 ? units - 1 : 1;
  return df <= 10 ? kT[df - 1] : 1.96 + 2.4 / static_cast<double>(df);
}

// Whether the caller's pool of this draw (attainment `a`, standard error `se`, from `judged`
// requests) with the question's prior is already decided, so growing the draw changes nothing the
// caller acts on (ForecastQuestion::prior): the pool clearly misses, or it clearly meets and so
// does the draw (a draw still short might yet become a clear miss, which would stand alone).
// On the Azure code trace at x20 the scale-in questions (their ceilings included) are nine tenths
// of the requests the twin simulates, and without this many would be drawn up to the request
// budget near the edge although the stabilization window's earlier draws at that size have
// settled the answer.
bool PriorDecides(const policy::PooledDraws& prior, double a, double se, int64_t judged,
                  double target) {
  if (prior.empty() || !std::isfinite(se)) return false;
  policy::PooledDraws pool = prior;
  pool.Add(a, se, judged);
  if (!pool.Clear(target)) return false;
  return pool.mean() < target || a >= target;
}

// Sampled replicas simulated together behind a balancing router.
constexpr int32_t kBalancedGroup = 8;
// Sequential sampling never simulates more replicas than this many runs of the candidate fleet
// (the exact what-if's five seeds).
constexpr int64_t kMaxFleets = 5;
// Behind a balancing router, whole fleets are simulated instead of groups when this many runs of
// the fleet's traffic fit in the request budget.
constexpr double kWholeFleetRuns = 2;

// The forecast's attainment over `units` (PooledAttainment), its verdict against `target`, and
// how sure that verdict is (policy::Forecast). One unit says nothing of its own noise: its
// verdict is taken as it is.
void SetAttainment(policy::Forecast& f, const std::vector<GroupResult>& units, double target) {
  const auto [attainment, se] = PooledAttainment(units);
  f.attainment = attainment;
  f.meets_slo = attainment + 1e-12 >= target;
  f.attainment_se = std::isfinite(se) ? se : 0;
  f.verdict_clear =
      !std::isfinite(se) || std::abs(attainment - target) >= VerdictMargin(units.size()) * se;
}

// The ITL objective's part of the forecast (policy::Forecast::itl_*): `over` of `tokens` judged
// output tokens came later than the threshold.
void SetItl(policy::Forecast& f, int64_t tokens, int64_t over, const policy::ForecastQuestion& q) {
  if (q.itl_threshold <= absl::ZeroDuration()) return;
  f.itl_tokens = tokens;
  f.itl_within = tokens > 0 ? 1.0 - static_cast<double>(over) / static_cast<double>(tokens) : 1.0;
  f.itl_met = f.itl_within + 1e-12 >= q.itl_percentile / 100.0;
  if (!f.itl_met) {
    f.meets_slo = false;
    f.verdict_clear = true;
  }
}

}  // namespace

policy::Forecast TwinForecaster::Evaluate(const policy::ForecastQuestion& q) const {
  const int32_t runs = std::max(1, options_.seeds);
  if (runs == 1) return EvaluateOnce(q, q.seed);
  // Several seeds: the attainment over every judged request, and its noise from the spread of
  // the runs (each a whole fleet, or a sample of one), never below the binomial's.
  policy::Forecast sum;
  std::vector<GroupResult> as_units;
  int64_t itl_tokens = 0, itl_over = 0;
  for (int32_t i = 0; i < runs; ++i) {
    const policy::Forecast f =
        EvaluateOnce(q, sim::DeriveSeed(q.seed, static_cast<uint64_t>(i), 77));
    GroupResult g;
    g.judged = f.requests;
    g.met = std::llround(f.attainment * static_cast<double>(f.requests));
    as_units.push_back(g);
    sum.ttft_p90_ms += f.ttft_p90_ms / runs;
    sum.scheduling_delay_mean_ms += f.scheduling_delay_mean_ms / runs;
    sum.preemptions_per_s += f.preemptions_per_s / runs;
    sum.waiting_at_horizon += f.waiting_at_horizon / runs;
    itl_tokens += f.itl_tokens;
    itl_over += std::llround((1.0 - f.itl_within) * static_cast<double>(f.itl_tokens));
  }
  for (const GroupResult& g : as_units) sum.requests += g.judged;
  SetAttainment(sum, as_units, q.percentile / 100.0);
  SetItl(sum, itl_tokens, itl_over, q);
  return sum;
}

TwinForecaster::CalibrationReading TwinForecaster::CalibrationLatencies(
    const policy::ForecastQuestion& q, sim::SpeedFactors speed,
    std::optional<double> router_random_share, absl::Duration itl_lead_in) const {
  TwinOptions o = options_;
  o.speed = speed;
  if (router_random_share) o.router_random_share = *router_random_share;
  // With nothing arriving the requests held are the whole window, and its start is as steady as
  // it gets.
  if (q.arrival_rate > 0) o.itl_from = std::max(absl::ZeroDuration(), itl_lead_in);
  o.arrivals_past_horizon = true;
  o.sample_replicas = std::max(o.sample_replicas, kCalibrationSample);
  o.max_sample_requests = 0;  // a fixed sample: its size must not depend on the speed tried
  const policy::Forecast f = TwinForecaster(o).EvaluateOnce(q, q.seed);
  CalibrationReading r;
  r.itl_mean_seconds = f.itl_mean_ms / 1000;
  r.prefill_mean_seconds = f.prefill_mean_ms / 1000;
  r.prefill_seconds_per_prompt_token = f.prefill_prompt_tokens > 0
                                           ? f.prefill_mean_ms / 1000 *
                                                 static_cast<double>(f.prefill_count) /
                                                 static_cast<double>(f.prefill_prompt_tokens)
                                           : 0;
  r.queue_mean_seconds = f.queue_mean_ms / 1000;
  r.prefill_requests = f.prefill_count;
  return r;
}

policy::Forecast TwinForecaster::Reading(const policy::ForecastQuestion& q) const {
  if (options_.max_sample_requests <= 0) return Evaluate(q);
  TwinForecaster first_batch = *this;  // shares the kept lengths
  first_batch.options_.max_sample_requests = 0;
  return first_batch.EvaluateOnce(q, q.seed);
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

  // The observed Ready replicas in load order, so a sample can be stratified over it.
  std::vector<policy::ReplicaStart> ready(q.ready.begin(), q.ready.begin() + ready_now);
  std::stable_sort(ready.begin(), ready.end(), [](const auto& a, const auto& b) {
    return a.waiting + a.running < b.waiting + b.running;
  });

  const double horizon_s = absl::ToDoubleSeconds(q.horizon);
  const bool random_routing = options_.router == sim::RouterKind::kRandom ||
                              options_.router == sim::RouterKind::kRandomPerConnection;
  const FleetArrivalSource::Thinning thinning = random_routing
                                                    ? FleetArrivalSource::Thinning::kIndependent
                                                    : FleetArrivalSource::Thinning::kSystematic;
  // A unit is one independent simulation: the whole candidate fleet, or sampled replicas. With
  // Random routing a sampled replica is exact in distribution on its own, so each is its own unit
  // (its own realization of the fleet's arrivals: a burst that hits one sampled replica need not
  // hit the others, as in a large fleet). A balancing router needs company to balance against: its
  // sampled replicas run in groups of kBalancedGroup, and the first batch has two groups so their
  // spread is known. (On the decision corpus's long-context entries, behind a prefix-aware router,
  // groups of 1 or 2 balanced too little and asked for 3-5 replicas more than the whole fleet
  // did; groups of 4, 2-3 more; groups of 8 agree.)
  const int32_t per_sample_unit = random_routing ? 1 : kBalancedGroup;
  const int32_t first_sample =
      options_.sample_replicas <= 0
          ? 0
          : (random_routing ? options_.sample_replicas
                            : std::max(options_.sample_replicas, 2 * kBalancedGroup));
  // Behind a balancing router a group balances over fewer replicas than the fleet does, and pools
  // worse: where a request's own prefill is a large part of its target (long prompts), waiting
  // behind one other prefill is a miss, and a group of 8 finds an idle replica less often than a
  // fleet of 48. On the decision corpus's Mooncake entries (12k-token prompts, about 0.6 req/s per
  // replica) groups of 8 ask for 2-4 replicas more than the whole fleet; groups of 12 do no
  // better. There the whole fleet's traffic is also small: when kWholeFleetRuns runs of it fit in
  // the request budget, the units are whole fleets (the exact what-if, with fewer seeds, stopped
  // as soon as the verdict is clear).
  double fleet_requests = q.arrival_rate * horizon_s;
  for (int32_t i = 0; i < ready_now; ++i) fleet_requests += ready[i].waiting + ready[i].running;
  const bool whole_fleet_affordable =
      !random_routing && options_.max_sample_requests > 0 &&
      fleet_requests * kWholeFleetRuns <= static_cast<double>(options_.max_sample_requests);
  const bool full_fleet =
      first_sample <= 0 || candidate <= first_sample || ready_now == 0 || whole_fleet_affordable;
  const int32_t k = full_fleet ? candidate : first_sample;
  // The longest request the twin draws is sim::MaxRequestTokens: the deployment's --max-model-len
  // (by default the model's context, Llama-3.1's 131,072 tokens), or the KV cache if smaller (a
  // longer request is refused). Long-context traffic lives in this tail: a third of the Mooncake
  // conversation trace's prompt tokens are in prompts over 32k, which a 32,768 cap would silently
  // cut off. A short-context deployment's limit matters as much the other way: the length samplers
  // cut their buckets at it, where vLLM's 1-2-5 buckets alone would have the twin draw prompts up
  // to 10k on an 8k server.
  const int32_t max_tokens = static_cast<int32_t>(sim::MaxRequestTokens(options_.deployment));
  const LengthSampler prompt_lengths(q.prompt_shape, q.prompt_tokens_mean, max_tokens);
  const LengthSampler output_lengths(q.output_shape, std::max(1.0, q.output_tokens_mean),
                                     max_tokens);
  const LengthCache::Key length_key = LengthCache::KeyOf(q, max_tokens);
  const int32_t per_unit = full_fleet ? candidate : std::min(per_sample_unit, k);
  // The share of the fleet's arrivals that replicas serving from `members` (seconds) get: (those of
  // them serving at t) / N(t), piecewise constant between the instants replicas come up.
  std::vector<double> times = serve_at;
  std::sort(times.begin(), times.end());
  auto share_of = [&](const std::vector<double>& members) {
    std::vector<FleetArrivalSource::Segment> segments;
    size_t i = 0;
    while (i < times.size()) {
      const double t = times[i];
      while (i < times.size() && times[i] == t) ++i;
      int32_t mine = 0;
      for (double m : members) mine += m <= t ? 1 : 0;
      segments.push_back({t, std::min(1.0, static_cast<double>(mine) / static_cast<double>(i))});
    }
    return segments;
  };
  // Every unit's target; a unit simulated earlier in the decision is judged again from its log
  // (UnitCache).
  const sim::TtftSlo slo = WhatIfSlo(WhatIfFleet(options_, seed), q);
  const UnitKey unit_key(options_, q, max_tokens);
  const SimTime judge_from = JudgeFrom(q);
  auto simulate =
      [&](const std::vector<double>& at, const std::vector<const policy::ReplicaStart*>& states,
          std::vector<FleetArrivalSource::Segment> segments, uint64_t unit_seed) -> GroupResult {
    std::string key = unit_key.For(at, states, segments, thinning, unit_seed);
    if (std::shared_ptr<const UnitRun> kept = units_->Get(q.seed, key)) {
      GroupResult g = kept->result;
      const sim::JudgedCount c = sim::Judge(kept->log, slo, judge_from);
      g.judged = c.judged;
      g.met = c.met;
      return g;
    }
    auto run = std::make_shared<UnitRun>();
    run->result =
        SimulateGroup(options_, q, slo, at, states, std::move(segments), thinning, prompt_lengths,
                      output_lengths, *lengths_, length_key, unit_seed, &run->log);
    GroupResult g = run->result;
    units_->Put(q.seed, std::move(key), std::move(run));
    return g;
  };
  auto run_unit = [&](int32_t u) -> GroupResult {
    const uint64_t unit_seed =
        u == 0 && full_fleet ? seed : sim::DeriveSeed(seed, static_cast<uint64_t>(u), 91);
    if (full_fleet) {
      std::vector<const policy::ReplicaStart*> states;
      for (int32_t i = 0; i < candidate; ++i) {
        states.push_back(i < ready_now ? &ready[static_cast<size_t>(i)] : nullptr);
      }
      return simulate(serve_at, states, {{0.0, 1.0}}, unit_seed);
    }
    // Each batch of k sampled replicas is stratified over the candidate fleet: the j-th is drawn
    // uniformly from the j-th of k equal strata of [Ready ones in load order, pending ones, new
    // ones]. Unbiased for the fleet's mean: the strata's midpoints would miss how much worse the
    // most loaded replicas do, and a sample of Ready replicas alone would miss how much better the
    // ones still warming do once they serve, empty, after a scale-up.
    std::vector<double> at;
    std::vector<const policy::ReplicaStart*> states;
    for (int32_t r = 0; r < per_unit; ++r) {
      const int32_t j = (u * per_unit + r) % k;
      sim::Rng pick(seed, static_cast<uint64_t>(u * per_unit + r), sim::Stream::kLifecycle, 17);
      const int32_t x =
          std::min(candidate - 1, static_cast<int32_t>((j + pick.Uniform01()) * candidate / k));
      at.push_back(serve_at[static_cast<size_t>(x)]);
      states.push_back(x < ready_now ? &ready[static_cast<size_t>(x)] : nullptr);
    }
    return simulate(at, states, share_of(at), unit_seed);
  };

  // Sequential sampling: a batch first (k sampled replicas, or the whole fleet once or more); then,
  // while the verdict is within VerdictMargin standard errors of the target or the attainment is
  // less precise than the question asks, another batch — within max_sample_requests judged requests
  // and kMaxFleets x the candidate fleet in replicas. Most what-ifs are clear and stay at one or
  // two batches; the few near the SLO's edge, which decide the answer, get the precision. The
  // budget is in requests because they are what both the cost and the precision follow: a busy
  // replica's run costs as much as many idle ones' and tells as much. It is a cap: a batch that
  // would, at the units' average so far, end beyond it is not started (an overshoot of up to a
  // batch made the what-ifs at the edge, two thirds of the fixed decision's cost, a third dearer).
  const int32_t batch = std::max(1, (full_fleet ? std::max(1, first_sample) : k) / per_unit);
  const bool sequential = options_.sample_replicas > 0 && options_.max_sample_requests > 0;
  const int64_t max_units =
      sequential ? std::max<int64_t>(batch, kMaxFleets * candidate / per_unit) : batch;
  const double target = q.percentile / 100.0;
  std::vector<GroupResult> units;
  int64_t judged_so_far = 0;
  // Units first .. first + count - 1, appended in unit order. With options_.threads > 1 they run
  // side by side, and threads left over simulate the units after them ahead of need (a what-if
  // that is not yet clear takes another batch, most of them do: each unit depends on its index
  // alone, so one simulated ahead and not needed changes nothing but the CPU time spent).
  std::map<int32_t, GroupResult> ahead;
  auto add = [&](int32_t first, int32_t count) {
    const int32_t threads = std::max(1, options_.threads);
    std::vector<int32_t> todo;
    for (int32_t u = first; u < first + count; ++u) {
      if (!ahead.contains(u)) todo.push_back(u);
    }
    // Ahead of need only beside needed work, on threads it leaves idle.
    const int64_t end = sequential ? max_units : first + count;
    for (int32_t u = first + count;
         !todo.empty() && u < end && static_cast<int32_t>(todo.size()) < threads; ++u) {
      if (!ahead.contains(u)) todo.push_back(u);
    }
    std::vector<GroupResult> done(todo.size());
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < todo.size(); i = next++) done[i] = run_unit(todo[i]);
    };
    std::vector<std::thread> helpers;
    for (int32_t t = 1; t < std::min<int32_t>(threads, static_cast<int32_t>(todo.size())); ++t) {
      helpers.emplace_back(work);
    }
    work();
    for (std::thread& h : helpers) h.join();
    for (size_t i = 0; i < todo.size(); ++i) ahead.emplace(todo[i], std::move(done[i]));
    for (int32_t u = first; u < first + count; ++u) {
      auto it = ahead.find(u);
      judged_so_far += it->second.judged;
      units.push_back(std::move(it->second));
      ahead.erase(it);
    }
  };
  add(0, batch);
  while (sequential && static_cast<int64_t>(units.size()) < max_units) {
    const auto [a, se] = PooledAttainment(units);
    const bool clear = std::abs(a - target) >= VerdictMargin(units.size()) * se;
    const bool precise =
        q.attainment_tolerance <= 0 || se <= q.attainment_tolerance || (clear && a >= target);
    if (clear && precise) break;
    if (precise && PriorDecides(q.prior, a, se, judged_so_far, target)) break;
    const int64_t more = std::min<int64_t>(batch, max_units - static_cast<int64_t>(units.size()));
    const int64_t judged_per_unit = judged_so_far / static_cast<int64_t>(units.size());
    if (judged_so_far + judged_per_unit * more > options_.max_sample_requests) break;
    add(static_cast<int32_t>(units.size()), static_cast<int32_t>(more));
  }

  // Pooled: attainment over every judged request; the TTFT p90 and mean scheduling delay of the
  // units weighted by their requests (an approximation of the pooled quantile); preemptions per
  // second of the simulated replicas; the queue at the horizon, per replica, times the fleet.
  policy::Forecast f;
  double p90 = 0, sched = 0, itl_sum = 0, prefill_sum = 0, queue_sum = 0;
  int64_t preemptions = 0, itl_count = 0, itl_judged = 0, itl_over = 0, waiting = 0;
  for (const GroupResult& g : units) {
    waiting += g.waiting_at_horizon;
    itl_judged += g.itl_judged;
    itl_over += g.itl_over;
    f.requests += g.judged;
    p90 += g.ttft_p90_ms * static_cast<double>(g.judged);
    sched += g.scheduling_delay_mean_ms * static_cast<double>(g.judged);
    preemptions += g.preemptions;
    itl_sum += g.itl_sum_ms;
    itl_count += g.itl_count;
    prefill_sum += g.prefill_sum_ms;
    queue_sum += g.queue_sum_ms;
    f.prefill_prompt_tokens += g.prefill_prompt_tokens;
    f.prefill_count += g.prefill_count;
  }
  f.itl_mean_ms = itl_count > 0 ? itl_sum / static_cast<double>(itl_count) : 0;
  f.prefill_mean_ms = f.prefill_count > 0 ? prefill_sum / static_cast<double>(f.prefill_count) : 0;
  f.queue_mean_ms = f.prefill_count > 0 ? queue_sum / static_cast<double>(f.prefill_count) : 0;
  const double judged = static_cast<double>(f.requests);
  SetAttainment(f, units, target);
  SetItl(f, itl_judged, itl_over, q);
  f.ttft_p90_ms = f.requests > 0 ? p90 / judged : units.front().ttft_p90_ms;
  f.scheduling_delay_mean_ms =
      f.requests > 0 ? sched / judged : units.front().scheduling_delay_mean_ms;
  const double replicas_per_fleet =
      static_cast<double>(units.size()) * per_unit / (full_fleet ? candidate : k);
  // The simulated replicas' mean queue, scaled to the candidate fleet.
  f.waiting_at_horizon =
      static_cast<double>(waiting) * candidate / (static_cast<double>(units.size()) * per_unit);
  f.preemptions_per_s = horizon_s > 0 ? static_cast<double>(preemptions) / horizon_s /
                                            std::max(1.0, replicas_per_fleet)
                                      : 0;
  return f;
}

}  // namespace twinscale::twin
