// The replay loop and its accounting: see replay_driver.h.
#include "controller/replay/replay_driver.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "controller/replay/minutes.h"
#include "controller/replay/simulated_cluster.h"
#include "simulator/core/rng.h"
#include "simulator/profiles/profile_loader.h"

namespace twinscale::replay {
namespace {

using sim::SimDuration;
using sim::SimTime;

bool MeetsSlo(const RequestFate& f, const sim::TtftSlo& slo) {
  return f.ttft.nanos() >= 0 && f.ttft <= slo.TargetFor(f.prompt_tokens);
}

// Index of the interval [i P, (i + 1) P) holding t, clamped to [0, n).
size_t Bin(SimTime t, SimDuration period, size_t n) {
  if (n == 0) return 0;
  const int64_t i = t.nanos() < 0 ? 0 : t.nanos() / period.nanos();
  return static_cast<size_t>(std::min<int64_t>(i, static_cast<int64_t>(n) - 1));
}

// Salt for the pre-roll's own prefix ids.
constexpr uint64_t kPreRollPrefixSalt = 0x5052452d524f4c4cULL;  // "PRE-ROLL"

}  // namespace

sim::Trace WithPreRoll(const sim::Trace& trace, SimDuration pre_roll) {
  sim::Trace out;
  out.source = trace.source;
  if (pre_roll <= SimDuration::Zero()) {
    out.requests = trace.requests;
    return out;
  }
  for (const sim::RequestSpec& r : trace.requests) {
    if (r.arrival - SimTime::Zero() >= pre_roll) break;  // sorted
    sim::RequestSpec copy = r;
    for (uint64_t& id : copy.prefix_hashes) id = sim::Mix64(id ^ kPreRollPrefixSalt);
    out.requests.push_back(std::move(copy));
  }
  out.requests.reserve(out.requests.size() + trace.requests.size());
  for (const sim::RequestSpec& r : trace.requests) {
    sim::RequestSpec shifted = r;
    shifted.arrival = r.arrival + pre_roll;
    out.requests.push_back(std::move(shifted));
  }
  for (size_t i = 0; i < out.requests.size(); ++i) out.requests[i].id = i;
  return out;
}

sim::Trace WithPreRoll(const sim::Trace& trace, SimDuration pre_roll, const sim::Trace& history,
                       SimDuration history_span) {
  sim::Trace out;
  out.source = trace.source;
  if (pre_roll > SimDuration::Zero()) {
    // History time h plays at h + (pre_roll - history_span): its end meets the trace's start.
    const SimDuration shift = pre_roll - history_span;
    for (const sim::RequestSpec& r : history.requests) {
      const SimTime at = r.arrival + shift;
      if (at < SimTime::Zero()) continue;
      sim::RequestSpec copy = r;
      copy.arrival = at;
      for (uint64_t& id : copy.prefix_hashes) id = sim::Mix64(id ^ kPreRollPrefixSalt);
      out.requests.push_back(std::move(copy));
    }
  }
  out.requests.reserve(out.requests.size() + trace.requests.size());
  for (const sim::RequestSpec& r : trace.requests) {
    sim::RequestSpec shifted = r;
    shifted.arrival = r.arrival + std::max(pre_roll, SimDuration::Zero());
    out.requests.push_back(std::move(shifted));
  }
  for (size_t i = 0; i < out.requests.size(); ++i) out.requests[i].id = i;
  return out;
}

bool MeetsTarget(const ReplaySummary& s, const AttainmentTarget& target) {
  // A hair of slack so that 0.95 computed as 19/20 meets 0.95.
  return s.attainment + 1e-12 >= target.requests && s.minute_share + 1e-12 >= target.minutes;
}

std::string PolicyFamily(std::string_view policy) {
  const size_t dash = policy.rfind('-');
  if (dash == std::string_view::npos || dash + 1 == policy.size()) return std::string(policy);
  const std::string_view tail = policy.substr(dash + 1);
  bool digit = false;
  for (char c : tail) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digit = true;
    } else if (c != '.') {
      return std::string(policy);
    }
  }
  return digit ? std::string(policy.substr(0, dash)) : std::string(policy);
}

absl::StatusOr<ReplayResult> RunReplay(const ReplayConfig& config, Autoscaler& autoscaler,
                                       const Clock* wall_clock) {
  const absl::Time wall_start = wall_clock != nullptr ? wall_clock->Now() : absl::UnixEpoch();
  if (config.trace == nullptr) return absl::InvalidArgumentError("replay: no trace");
  if (config.initial_replicas < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("replay: initial replicas (", config.initial_replicas, ") must be >= 0"));
  }
  if (config.pre_roll < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "replay: pre-roll (", absl::FormatDuration(config.pre_roll), ") must be >= 0"));
  }
  if (config.max_drain < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("replay: max_drain must be >= 0");
  }
  const absl::Duration sync = autoscaler.SyncPeriod();
  if (sync <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("replay: ", autoscaler.Name(),
                                                   "'s sync period (", absl::FormatDuration(sync),
                                                   ") must be > 0"));
  }
  if (absl::Status s = sim::ValidateDeployment(config.deployment); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("replay: ", s.message()));
  }
  const sim::Trace& trace = *config.trace;
  const SimDuration period = SimDuration::FromAbsl(sync);
  const SimTime trace_last =
      trace.requests.empty() ? SimTime::Zero() : trace.requests.back().arrival;
  // Whole periods (decisions fall on multiples of the period from the pre-roll's start, so the
  // trace's own start is one too), and a trace shorter than the pre-roll is pre-rolled once, whole.
  auto periods_covering = [&](int64_t nanos) {
    return SimDuration::Nanos((nanos + period.nanos() - 1) / period.nanos() * period.nanos());
  };
  const SimDuration pre = std::min(periods_covering(absl::ToInt64Nanoseconds(config.pre_roll)),
                                   periods_covering(trace_last.nanos() + 1));
  std::shared_ptr<const sim::Trace> played = config.trace;
  if (pre > SimDuration::Zero()) {
    played = std::make_shared<const sim::Trace>(
        config.history != nullptr
            ? WithPreRoll(trace, pre, *config.history, SimDuration::FromAbsl(config.history_span))
            : WithPreRoll(trace, pre));
  }
  const SimTime zero = SimTime::Zero() + pre;  // the trace's first arrival

  ClusterOptions co;
  co.fleet.deployment = config.deployment;
  co.fleet.router.kind = config.router;
  co.fleet.initial_replicas = config.initial_replicas;
  co.fleet.model_name = config.model_name;
  co.fleet.seed = config.seed;
  co.fleet.run = 0;
  ApplyTruth(config.truth, co.fleet);
  co.slo = config.slo;
  co.start = config.start - pre.ToAbsl();
  co.pod_prefix = config.deployment.name;
  co.scrape_interval = config.scrape_interval;
  co.scrape_retention = std::max(absl::Minutes(5), config.scrape_delay);
  SimulatedCluster cluster(std::move(co), played);

  const SimTime last_arrival = trace_last + pre;
  const SimTime drain_limit = last_arrival + SimDuration::FromAbsl(config.max_drain);

  ReplayResult result;
  ReplaySummary& s = result.summary;
  s.policy = autoscaler.Name();
  s.family = PolicyFamily(s.policy);
  s.truth = Describe(config.truth);
  s.seed = config.seed;
  s.pre_roll_seconds = pre.seconds();
  s.admission_enforced = config.enforce_admission;
  int32_t desired = config.initial_replicas;
  s.max_replicas = desired;
  double gpu_hours_before = 0;  // held during the pre-roll

  SimTime t = SimTime::Zero();
  // One sync: the cluster advanced a period, the autoscaler's answer applied. The same in the
  // pre-roll and after it.
  auto sync_once = [&]() {
    t += period;
    cluster.AdvanceTo(cluster.ToAbsl(t));
    const int32_t want = std::max(0, autoscaler.Decide(cluster.View(config.scrape_delay)));
    cluster.Scale(want, autoscaler.Victims());
    if (config.enforce_admission) cluster.SetAdmission(autoscaler.Admission());
    return want;
  };
  while (t < zero) {  // the pre-roll: decided on, not counted
    desired = sync_once();
    s.max_replicas = desired;
    gpu_hours_before = cluster.GpuHours();
  }
  std::vector<TwinPrediction> predictions;
  for (;;) {
    const int32_t want = sync_once();
    ++s.decisions;
    if (std::optional<TwinPrediction> p = autoscaler.LastPrediction()) {
      p->at = (t - zero).ToAbsl();
      predictions.push_back(*p);
    }
    if (want != desired) {
      ++s.scale_events;
      desired = want;
    }
    s.max_replicas = std::max(s.max_replicas, want);

    const FleetState state = cluster.State();
    TimelineRow row;
    row.time = (t - zero).ToAbsl();
    row.interval = sync;
    row.desired = want;
    row.ready = state.ready;
    row.warming = state.warming;
    row.waiting = state.waiting + state.gateway;
    row.running = state.running;
    row.kv_mean = state.kv_mean;
    row.reason = autoscaler.LastReason();
    result.timeline.push_back(std::move(row));
    if (config.progress) config.progress(result.timeline.back().time);

    if (t > last_arrival && (cluster.Done() || t >= drain_limit)) break;
  }

  // Per-interval arrivals and offered tokens, from the trace.
  std::vector<TimelineRow>& rows = result.timeline;
  const size_t n_rows = rows.size();
  std::vector<int64_t> prompt_tokens(n_rows, 0), output_tokens(n_rows, 0);
  for (const sim::RequestSpec& r : trace.requests) {
    const size_t i = Bin(r.arrival, period, n_rows);
    ++rows[i].arrivals;
    prompt_tokens[i] += r.prompt_tokens;
    output_tokens[i] += r.output_tokens;
  }
  const double secs = absl::ToDoubleSeconds(sync);
  for (size_t i = 0; i < n_rows; ++i) {
    rows[i].arrival_rps = static_cast<double>(rows[i].arrivals) / secs;
    rows[i].prompt_tokens_per_s = static_cast<double>(prompt_tokens[i]) / secs;
    rows[i].output_tokens_per_s = static_cast<double>(output_tokens[i]) / secs;
  }

  // Per-request fates: the summary, the minutes, and the timeline's TTFT and rejections.
  const int64_t n_minutes = trace.requests.empty() ? 0 : MinuteOf(trace_last) + 1;
  std::vector<int64_t> minute_arrivals(static_cast<size_t>(n_minutes), 0);
  std::vector<int64_t> minute_met(static_cast<size_t>(n_minutes), 0);
  for (const sim::RequestSpec& r : trace.requests) {
    ++minute_arrivals[static_cast<size_t>(MinuteOf(r.arrival))];
  }
  std::vector<std::vector<double>> interval_ttfts(n_rows);
  std::vector<ServedRequest> record;  // for the predictions' check
  if (!predictions.empty()) record.reserve(cluster.fates().size());
  std::vector<double> ttfts;
  ttfts.reserve(cluster.fates().size());
  int64_t met = 0, counted_fates = 0;
  for (RequestFate f : cluster.fates()) {
    if (f.arrival < zero) continue;  // the pre-roll's
    f.arrival = SimTime::Zero() + (f.arrival - zero);
    switch (f.outcome) {
      case sim::RequestOutcome::kCompleted:
        ++s.served;
        break;
      case sim::RequestOutcome::kRejected:
        ++s.rejected;
        ++rows[Bin(f.arrival, period, n_rows)].rejected;
        break;
      case sim::RequestOutcome::kAborted:
        ++s.aborted;
        break;
    }
    if (f.ttft.nanos() >= 0) {
      ttfts.push_back(f.ttft.millis());
      interval_ttfts[Bin(f.arrival + f.ttft, period, n_rows)].push_back(f.ttft.millis());
    }
    ++counted_fates;
    const bool meets = MeetsSlo(f, config.slo);
    if (!predictions.empty()) {
      record.push_back({(f.arrival - SimTime::Zero()).ToAbsl(),
                        f.ttft.nanos() >= 0 ? std::optional<double>(f.ttft.millis()) : std::nullopt,
                        meets});
    }
    if (meets) {
      ++met;
      const int64_t m = MinuteOf(f.arrival);
      if (m >= 0 && m < n_minutes) ++minute_met[static_cast<size_t>(m)];
    }
  }
  for (size_t i = 0; i < n_rows; ++i) {
    rows[i].first_tokens = static_cast<int64_t>(interval_ttfts[i].size());
    if (!interval_ttfts[i].empty()) {
      rows[i].ttft_p90_ms = sim::Quantile(std::move(interval_ttfts[i]), 0.90);
    }
  }

  s.requests = static_cast<int64_t>(trace.requests.size());
  s.unfinished = s.requests - counted_fates;
  const sim::LatencySummary ttft = sim::SummarizeLatencies(ttfts);
  s.ttft_p50_ms = ttft.p50;
  s.ttft_p90_ms = ttft.p90;
  s.ttft_p99_ms = ttft.p99;
  s.attainment = s.requests == 0 ? 1.0 : static_cast<double>(met) / s.requests;
  const double need = config.slo.percentile / 100.0;
  // The share of minutes weighs the trace's last minute by the part of it the trace covers, as
  // the oracles do (minutes.h).
  s.last_minute_weight = n_minutes == 0 ? 1.0 : LastMinuteWeight(trace_last);
  for (int64_t m = 0; m < n_minutes; ++m) {
    const int64_t arrivals = minute_arrivals[static_cast<size_t>(m)];
    if (arrivals == 0) continue;
    const double weight = m == n_minutes - 1 ? s.last_minute_weight : 1.0;
    ++s.minutes_with_traffic;
    s.minutes_weighted += weight;
    if (static_cast<double>(minute_met[static_cast<size_t>(m)]) / arrivals + 1e-12 >= need) {
      ++s.minutes_meeting_slo;
      s.minutes_met_weighted += weight;
    }
  }
  // Traffic only at an instant (every arrival at the start of the one minute) weighs nothing:
  // the minutes then count whole.
  s.minute_share = s.minutes_with_traffic == 0 ? 1.0
                   : s.minutes_weighted > 0
                       ? s.minutes_met_weighted / s.minutes_weighted
                       : static_cast<double>(s.minutes_meeting_slo) / s.minutes_with_traffic;
  if (!predictions.empty()) {
    std::stable_sort(
        record.begin(), record.end(),
        [](const ServedRequest& a, const ServedRequest& b) { return a.arrival < b.arrival; });
    std::vector<QueueSample> queue;
    queue.reserve(n_rows);
    for (const TimelineRow& row : rows) queue.push_back({row.time, row.waiting});
    result.twin_checks =
        CheckPredictions(predictions, record, queue, (trace_last - SimTime::Zero()).ToAbsl());
    s.twin_error = SummarizeTwinError(result.twin_checks);
  }
  s.gpu_hours = cluster.GpuHours() - gpu_hours_before;
  s.simulated_seconds = (t - zero).seconds();
  if (wall_clock != nullptr) s.wall_seconds = absl::ToDoubleSeconds(wall_clock->Now() - wall_start);
  return result;
}

}  // namespace twinscale::replay
