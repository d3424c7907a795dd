// Snapshot building: see fleet_snapshot.h.
#include "controller/state/fleet_snapshot.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "controller/metrics/histogram_window.h"
#include "controller/state/rate_estimators.h"

namespace twinscale::state {

int32_t FleetSnapshot::CountStage(PodView::Stage s) const {
  int32_t n = 0;
  for (const ReplicaState& r : replicas) n += r.stage == s ? 1 : 0;
  return n;
}

double FleetSnapshot::total_waiting() const {
  double t = 0;
  for (const ReplicaState& r : replicas) t += r.waiting;
  return t;
}

double FleetSnapshot::total_running() const {
  double t = 0;
  for (const ReplicaState& r : replicas) t += r.running;
  return t;
}

double FleetSnapshot::max_kv_usage() const {
  double m = 0;
  for (const ReplicaState& r : replicas) {
    if (r.stage == PodView::Stage::kReady && r.fresh) m = std::max(m, r.kv_usage);
  }
  return m;
}

namespace {

// Adds `part` into `acc` (same layout), or starts `acc`.
void Accumulate(std::optional<metrics::CumulativeHistogram>& acc,
                const metrics::CumulativeHistogram& part) {
  if (!acc.has_value()) {
    acc = part;
    return;
  }
  auto sum = metrics::SumHistograms({*acc, part});
  if (sum.ok()) acc = *sum;
}

// Sum over engines of an optional histogram (engines of one pod share the layout).
std::optional<metrics::CumulativeHistogram> PodHistogram(
    const metrics::PodObservation& pod,
    std::optional<metrics::CumulativeHistogram> metrics::EngineObservation::*field) {
  std::optional<metrics::CumulativeHistogram> acc;
  for (const auto& e : pod.engines) {
    if ((e.*field).has_value()) Accumulate(acc, *(e.*field));
  }
  return acc;
}

}  // namespace

namespace {

ArrivalHistory HistoryFor(const SnapshotOptions& o) {
  return ArrivalHistory(o.season.bucket(), o.season.retention(o.season_lead));
}

SeasonSkill SkillFor(const SnapshotOptions& o) {
  return SeasonSkill(o.season.period * o.season_skill_share, o.season_min_checks);
}

}  // namespace

SnapshotBuilder::SnapshotBuilder(SnapshotOptions options)
    : options_(options), arrival_history_(HistoryFor(options)), season_skill_(SkillFor(options)) {}

void SnapshotBuilder::set_options(const SnapshotOptions& o) {
  const bool same_season =
      o.season.period == options_.season.period &&
      o.season.bucket_share == options_.season.bucket_share &&
      o.season.retention(o.season_lead) == options_.season.retention(options_.season_lead);
  const bool same_skill = same_season && o.season_skill_share == options_.season_skill_share &&
                          o.season_min_checks == options_.season_min_checks &&
                          o.season_lead == options_.season_lead &&
                          o.season_judged_from == options_.season_judged_from;
  options_ = o;
  if (!same_season) arrival_history_ = HistoryFor(o);
  if (!same_skill) season_skill_ = SkillFor(o);
}

void SnapshotBuilder::SeedArrivals(absl::Time from, absl::Duration step,
                                   const std::vector<double>& arrivals) {
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const absl::Time t = from + static_cast<int64_t>(i) * step;
    arrival_history_.Add(t, t + step, arrivals[i]);
  }
}

FleetSnapshot SnapshotBuilder::Build(const ClusterView& view) {
  FleetSnapshot snap;
  snap.at = view.now;
  snap.spec_replicas = view.spec_replicas;

  double arrivals = 0;  // over pods seen fresh both now and before
  bool any_fresh = false;
  bool arrivals_known = false;
  std::optional<metrics::CumulativeHistogram> ttft_inc, prompt_inc, output_inc, itl_inc,
      prefill_inc, queue_inc, settled_prompt_inc, e2e_inc, decode_inc;
  std::map<std::string, PodMemory> current;
  double prefix_queried = 0, prefix_hit = 0;  // tokens, over pods seen fresh both now and before

  for (const PodView& pod : view.pods) {
    ReplicaState r;
    r.name = pod.name;
    r.stage = pod.stage;
    r.age = pod.age;
    r.ready_for = pod.ready_for;
    r.unschedulable = pod.unschedulable;
    const bool serving =
        pod.stage == PodView::Stage::kReady || pod.stage == PodView::Stage::kTerminating;
    r.fresh = pod.scrape_ok && view.now - pod.scraped_at <= options_.stale_after;
    if (serving && !r.fresh && pod.stage == PodView::Stage::kReady) {
      snap.stale = true;
      if (snap.stale_reason.empty()) {
        snap.stale_reason =
            pod.scrape_ok ? absl::StrCat("pod ", pod.name, ": last scrape is ",
                                         absl::FormatDuration(view.now - pod.scraped_at), " old")
                          : absl::StrCat("pod ", pod.name, ": scrape failed");
      }
    }
    if (r.fresh) {
      any_fresh = true;
      double finished = 0, in_flight = 0, kv_sum = 0;
      for (const auto& e : pod.observation.engines) {
        ++r.engines;
        r.waiting += e.waiting.value_or(0);
        r.running += e.running.value_or(0);
        kv_sum += e.kv_cache_usage.value_or(0);
        finished += e.requests_finished_total.value_or(0);
        if (e.num_gpu_blocks && e.block_size)
          r.kv_capacity_tokens += *e.num_gpu_blocks * *e.block_size;
      }
      in_flight = r.waiting + r.running;
      r.kv_usage = r.engines > 0 ? kv_sum / r.engines : 0;

      PodMemory mem;
      for (const auto& e : pod.observation.engines) {
        if (e.prefix_cache_queries_total && e.prefix_cache_hits_total) {
          mem.prefix_queries = mem.prefix_queries.value_or(0) + *e.prefix_cache_queries_total;
          mem.prefix_hits = mem.prefix_hits.value_or(0) + *e.prefix_cache_hits_total;
        }
      }
      mem.scraped_at = pod.scraped_at;
      mem.finished = finished;
      mem.in_flight = in_flight;
      mem.ttft = PodHistogram(pod.observation, &metrics::EngineObservation::ttft);
      mem.prompt_tokens = PodHistogram(pod.observation, &metrics::EngineObservation::prompt_tokens);
      mem.generation_tokens =
          PodHistogram(pod.observation, &metrics::EngineObservation::generation_tokens);
      mem.itl = PodHistogram(pod.observation, &metrics::EngineObservation::itl);
      mem.prefill = PodHistogram(pod.observation, &metrics::EngineObservation::prefill_time);
      mem.queue = PodHistogram(pod.observation, &metrics::EngineObservation::queue_time);
      mem.e2e = PodHistogram(pod.observation, &metrics::EngineObservation::e2e);
      mem.decode = PodHistogram(pod.observation, &metrics::EngineObservation::decode_time);

      auto prev = previous_.find(pod.name);
      if (prev != previous_.end()) {
        // Arrivals = finished during the window + growth of what is inside the server.
        arrivals += metrics::CounterIncrease(prev->second.finished, finished) +
                    (in_flight - prev->second.in_flight);
        arrivals_known = true;
        auto inc = [](const std::optional<metrics::CumulativeHistogram>& a,
                      const std::optional<metrics::CumulativeHistogram>& b,
                      std::optional<metrics::CumulativeHistogram>& acc) {
          if (!a || !b) return;
          auto d = metrics::HistogramIncrease(*a, *b);
          if (d.ok()) Accumulate(acc, *d);
        };
        if (prev->second.prefix_queries && mem.prefix_queries) {
          const double queried =
              metrics::CounterIncrease(*prev->second.prefix_queries, *mem.prefix_queries);
          const double hit = metrics::CounterIncrease(*prev->second.prefix_hits, *mem.prefix_hits);
          // A counter reset reads as the whole new count; a hit count above its queries is not
          // a share.
          if (hit <= queried) {
            prefix_queried += queried;
            prefix_hit += hit;
          }
        }
        inc(prev->second.ttft, mem.ttft, ttft_inc);
        inc(prev->second.prompt_tokens, mem.prompt_tokens, prompt_inc);
        inc(prev->second.generation_tokens, mem.generation_tokens, output_inc);
        if (pod.ready_for >= options_.settled_after) {
          inc(prev->second.itl, mem.itl, itl_inc);
          inc(prev->second.prefill, mem.prefill, prefill_inc);
          inc(prev->second.queue, mem.queue, queue_inc);
          inc(prev->second.prompt_tokens, mem.prompt_tokens, settled_prompt_inc);
          inc(prev->second.e2e, mem.e2e, e2e_inc);
          inc(prev->second.decode, mem.decode, decode_inc);
        }
      } else if (last_build_.has_value()) {
        // A pod new since the last decision: everything it has seen arrived in this window.
        arrivals += finished + in_flight;
        arrivals_known = true;
      }
      current[pod.name] = std::move(mem);
    } else {
      auto prev = previous_.find(pod.name);
      if (prev != previous_.end()) current[pod.name] = prev->second;  // keep for the next window
    }
    snap.replicas.push_back(std::move(r));
  }

  {
    // The engine the pods run: the most common flags, and the median engine's KV capacity.
    std::vector<std::pair<EngineArgs, int32_t>> seen;
    for (const PodView& pod : view.pods) {
      if (pod.stage == PodView::Stage::kTerminating) continue;
      if (!pod.engine_args_error.empty() && snap.engine_args_error.empty()) {
        snap.engine_args_error = pod.engine_args_error;
      }
      if (!pod.engine_args.has_value()) continue;
      auto it = std::find_if(seen.begin(), seen.end(),
                             [&](const auto& e) { return e.first == *pod.engine_args; });
      if (it == seen.end()) {
        seen.push_back({*pod.engine_args, 1});
      } else {
        ++it->second;
      }
    }
    const auto most = std::max_element(seen.begin(), seen.end(), [](const auto& a, const auto& b) {
      return a.second < b.second;  // the first of equals wins
    });
    if (most != seen.end()) snap.engine_args = most->first;
    std::vector<int64_t> capacities;
    for (const ReplicaState& r : snap.replicas) {
      if (r.stage == PodView::Stage::kReady && r.fresh && r.engines > 0 &&
          r.kv_capacity_tokens > 0) {
        capacities.push_back(r.kv_capacity_tokens / r.engines);
      }
    }
    if (!capacities.empty()) {
      std::sort(capacities.begin(), capacities.end());
      snap.kv_capacity_tokens_per_engine = capacities[(capacities.size() - 1) / 2];
    }
  }
  WorkloadEstimate& w = snap.workload;
  const double window_s =
      last_build_.has_value() ? absl::ToDoubleSeconds(view.now - *last_build_) : 0.0;
  bool counted_now = false;
  if (snap.stale && !any_fresh) {
    w.arrival_rate = Input<double>::Stale(snap.stale_reason);
  } else if (arrivals_known && window_s > 0) {
    const double n = std::max(0.0, arrivals);
    arrival_counts_.push_back(n);
    count_windows_s_.push_back(window_s);
    while (static_cast<int32_t>(arrival_counts_.size()) > options_.dispersion_history) {
      arrival_counts_.pop_front();
      count_windows_s_.pop_front();
    }
    history_counts_.push_back(n);
    history_windows_s_.push_back(window_s);
    arrival_history_.Add(*last_build_, view.now, n);
    while (static_cast<int32_t>(history_counts_.size()) > options_.persistence_history) {
      history_counts_.pop_front();
      history_windows_s_.pop_front();
    }
    w.arrival_rate = n == 0 ? Input<double>::NoEvents(0.0) : Input<double>::Value(n / window_s);
    counted_now = true;
  } else if (any_fresh && !snap.stale) {
    // First sight of the fleet: rate unknown until the next window, but an empty fleet is a fact.
    double in_flight = snap.total_waiting() + snap.total_running();
    w.arrival_rate = in_flight == 0 ? Input<double>::NoEvents(0.0)
                                    : Input<double>::Stale("first scrape: no window yet");
  }
  // The counts' dispersion as measured, for the level's shift test (the clamp below is for the
  // twin's use; a bursty trace measures 60 and more, and a test against 16 would see every burst as
  // a new level). Poisson until 4 intervals are seen.
  double measured_dispersion = 1.0;
  if (arrival_counts_.size() >= 4) {
    // The what-if already follows the current rate; AllanDispersion ignores its slow trend.
    const double mean = std::accumulate(arrival_counts_.begin(), arrival_counts_.end(), 0.0) /
                        static_cast<double>(arrival_counts_.size());
    const double dispersion =
        AllanDispersion(std::vector<double>(arrival_counts_.begin(), arrival_counts_.end()));
    w.dispersion = mean > 0 ? std::clamp(dispersion, 0.25, 16.0) : 1.0;
    if (mean > 0) measured_dispersion = std::max(0.25, dispersion);
    if (mean > 0) w.rate_cv = std::sqrt(std::max(0.0, dispersion - 1.0) / mean);
    const double window_mean =
        std::accumulate(count_windows_s_.begin(), count_windows_s_.end(), 0.0) /
        static_cast<double>(count_windows_s_.size());
    if (window_mean > 0) w.rate_interval = absl::Seconds(window_mean);
  }
  if (counted_now) {
    const RateLevel level = LevelOf(arrival_counts_, count_windows_s_, level_intervals_ + 1,
                                    options_.rate_shift_intervals, options_.rate_level_intervals,
                                    measured_dispersion, options_.level_shift_z);
    level_intervals_ = level.intervals;
    w.arrival_rate_level = level.rate;
    w.rate_level_intervals = level.intervals;
    w.rate_level_shifted = level.shifted;
    const size_t span = std::min(arrival_counts_.size(),
                                 static_cast<size_t>(std::max(1, options_.rate_level_intervals)));
    double requests = 0, seconds = 0;
    for (size_t i = arrival_counts_.size() - span; i < arrival_counts_.size(); ++i) {
      requests += arrival_counts_[i];
      seconds += count_windows_s_[i];
    }
    w.arrival_rate_baseline = seconds > 0 ? requests / seconds : 0.0;
    w.rate_persistence = RatePersistence(
        history_counts_, history_windows_s_, options_.rate_shift_intervals,
        options_.rate_level_intervals, options_.persistence_lags, options_.persistence_min_pairs);
    // The season, from the span the level averages to each interval of the lead ahead.
    double level_s = 0;
    for (size_t i = count_windows_s_.size() -
                    std::min<size_t>(count_windows_s_.size(), static_cast<size_t>(level.intervals));
         i < count_windows_s_.size(); ++i) {
      level_s += count_windows_s_[i];
    }
    const absl::Duration interval = w.rate_interval;
    if (interval > absl::ZeroDuration()) {
      const int32_t ahead =
          static_cast<int32_t>(std::ceil(absl::FDivDuration(options_.season_lead, interval)));
      std::vector<double> ratios = SeasonalRatios(
          arrival_history_, view.now, absl::Seconds(level_s), interval, ahead, options_.season);
      // Its record: checked as it matures; this one's forecast of the span a decision judges.
      season_skill_.Mature(view.now, arrival_history_);
      if (!ratios.empty() && level.rate > 0) {
        const int64_t first = std::max<int64_t>(
            1, 1 + static_cast<int64_t>(absl::FDivDuration(options_.season_judged_from, interval)));
        double sum = 0;
        int64_t n = 0;
        for (int64_t k = first; k <= ahead; ++k, ++n) sum += ratios[static_cast<size_t>(k - 1)];
        if (n > 0) {
          season_skill_.Forecast(view.now + options_.season_judged_from,
                                 view.now + options_.season_lead, level.rate,
                                 level.rate * sum / static_cast<double>(n));
        }
      }
      w.season_skill = season_skill_.score();
      if (w.season_skill.use_season) w.rate_season = std::move(ratios);
    }
  }
  auto mean_of = [](const std::optional<metrics::CumulativeHistogram>& h) -> std::optional<double> {
    if (!h || h->count <= 0 || !std::isfinite(h->sum)) return std::nullopt;
    return h->sum / h->count;
  };
  // Lengths over the latest windows that together saw min_length_requests finish: a quiet window
  // says nothing new, and a window of a handful must not speak for every request the twin draws.
  // (At the end of the Azure conversation trace one window held a single request, of 952 output
  // tokens against a mean of about 210; with the rate still at its level the twin forecast 0.75%
  // of requests in time at 22 replicas and asked for 48.)
  const size_t keep = static_cast<size_t>(std::max(1, options_.dispersion_history));
  auto lengths_over = [&](const std::optional<metrics::CumulativeHistogram>& latest,
                          std::deque<metrics::CumulativeHistogram>& windows) {
    if (mean_of(latest)) windows.push_back(*latest);
    while (windows.size() > keep) windows.pop_front();
    std::optional<metrics::CumulativeHistogram> acc;
    for (auto it = windows.rbegin(); it != windows.rend(); ++it) {
      Accumulate(acc, *it);
      if (acc->count >= options_.min_length_requests) break;
    }
    return acc;
  };
  w.prompt_lengths = lengths_over(prompt_inc, prompt_windows_);
  w.output_lengths = lengths_over(output_inc, output_windows_);
  if (auto m = mean_of(w.prompt_lengths)) w.prompt_tokens_mean = Input<double>::Value(*m);
  if (auto m = mean_of(w.output_lengths)) w.output_tokens_mean = Input<double>::Value(*m);
  if (auto m = mean_of(itl_inc)) {
    w.itl_mean_seconds = Input<double>::Value(*m);
    w.itl_tokens = itl_inc->count;
  }
  if (auto m = mean_of(prefill_inc)) {
    w.prefill_mean_seconds = Input<double>::Value(*m);
    w.prefill_requests = prefill_inc->count;
    if (settled_prompt_inc && settled_prompt_inc->sum > 0 &&
        std::abs(settled_prompt_inc->count - prefill_inc->count) <= 0.02 * prefill_inc->count) {
      w.prefill_seconds_per_prompt_token =
          Input<double>::Value(prefill_inc->sum / settled_prompt_inc->sum);
    }
  }
  if (e2e_inc && queue_inc && prefill_inc && decode_inc && e2e_inc->count > 0 &&
      std::isfinite(e2e_inc->sum) && std::isfinite(queue_inc->sum) &&
      std::isfinite(prefill_inc->sum) && std::isfinite(decode_inc->sum)) {
    const double n = e2e_inc->count;
    const bool same = std::abs(queue_inc->count - n) <= 0.02 * n &&
                      std::abs(prefill_inc->count - n) <= 0.02 * n &&
                      std::abs(decode_inc->count - n) <= 0.02 * n;
    if (same) {
      w.front_end_seconds = Input<double>::Value(
          (e2e_inc->sum - queue_inc->sum - prefill_inc->sum - decode_inc->sum) / n);
      w.front_end_requests = n;
    }
  }
  if (prefix_queried > 0) prefix_windows_.push_back({prefix_queried, prefix_hit});
  while (prefix_windows_.size() > keep) prefix_windows_.pop_front();
  if (!prefix_windows_.empty()) {
    double queried = 0, hit = 0;
    for (const auto& [q, h] : prefix_windows_) {
      queried += q;
      hit += h;
    }
    w.prefix_cache_hit_share = Input<double>::Value(std::clamp(hit / queried, 0.0, 1.0));
    w.prefix_cache_queried_tokens = queried;
  }
  if (auto m = mean_of(queue_inc)) {
    w.queue_mean_seconds = Input<double>::Value(*m);
    w.queue_requests = queue_inc->count;
  }
  {
    double kv = 0;
    int32_t n = 0;
    for (const ReplicaState& r : snap.replicas) {
      if (r.stage != PodView::Stage::kReady || !r.fresh) continue;
      kv += r.kv_usage;
      ++n;
    }
    w.kv_usage_mean = n > 0 ? kv / n : 0;
  }
  // A target that grows with the prompt cannot be judged from the TTFT histogram alone.
  const bool judged = options_.slo_per_prompt_token_seconds <= 0;
  if (!judged) {
    w.ttft_attainment = Input<double>::Stale(
        "the SLO's TTFT target grows with each prompt (slo.ttft.perPromptToken), and the TTFT "
        "histogram does not say which prompt each first token was for");
  }
  if (ttft_inc && ttft_inc->count > 0) {
    w.ttft_window = ttft_inc;
    w.ttft_p90_seconds = Input<double>::Value(metrics::HistogramQuantile(0.9, *ttft_inc));
    if (judged) {
      w.ttft_attainment = Input<double>::Value(
          metrics::ShareAtOrBelow(options_.slo_threshold_seconds, *ttft_inc).share);
    }
  } else if (any_fresh) {
    w.ttft_p90_seconds = Input<double>::NoEvents(0.0);
    if (judged) w.ttft_attainment = Input<double>::NoEvents(1.0);
  }
  previous_ = std::move(current);
  last_build_ = view.now;
  return snap;
}

}  // namespace twinscale::state
