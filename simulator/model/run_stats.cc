// Run statistics: see run_stats.h.
#include "simulator/model/run_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace twinscale::sim {
namespace {
// Buckets: [1 ns * r^i, 1 ns * r^(i+1)) with r = 1.01 (0.5% half-width) up to ~1e4 s.
constexpr double kRatio = 1.01;
const double kLogRatio = std::log(kRatio);
constexpr int kBuckets = 3100;  // 1.01^3100 ~ 2.6e13 ns
}  // namespace

WeightedDurationHistogram::WeightedDurationHistogram() : buckets_(kBuckets, 0) {}

void WeightedDurationHistogram::Add(SimDuration d, int64_t weight) {
  if (weight <= 0) return;
  const int64_t ns = std::max<int64_t>(1, d.nanos());
  int idx = static_cast<int>(std::log(static_cast<double>(ns)) / kLogRatio);
  idx = std::clamp(idx, 0, kBuckets - 1);
  buckets_[idx] += weight;
  count_ += weight;
  sum_ns_ += ns * weight;
}

double WeightedDurationHistogram::MeanMillis() const {
  return count_ == 0 ? 0.0 : static_cast<double>(sum_ns_) / static_cast<double>(count_) * 1e-6;
}

double WeightedDurationHistogram::QuantileMillis(double q) const {
  if (count_ == 0) return 0.0;
  // Rank of the q-quantile among count_ ordered values (0-based, nearest rank below).
  const int64_t rank = static_cast<int64_t>(std::floor(q * static_cast<double>(count_ - 1)));
  int64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen > rank) {
      // Geometric middle of the bucket.
      return std::exp((i + 0.5) * kLogRatio) * 1e-6;
    }
  }
  return std::exp((kBuckets - 0.5) * kLogRatio) * 1e-6;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  std::nth_element(v.begin(), v.begin() + lo, v.end());
  const double a = v[lo];
  if (hi == lo) return a;
  const double b = *std::min_element(v.begin() + lo + 1, v.end());
  return a + (b - a) * (pos - static_cast<double>(lo));
}

namespace {

// Count, mean and quantiles of `millis` as Quantile() computes them: p90 alone, or p50, p90 and
// p99 from one copy partitioned in increasing rank order, each selection looking only above the
// previous rank (a third of the work of three independent selections).
LatencySummary SummarizeWith(const std::vector<double>& millis, bool p90_only) {
  LatencySummary s;
  s.count = static_cast<int64_t>(millis.size());
  if (millis.empty()) return s;
  // Sum in a fixed order for determinism.
  double sum = 0;
  for (double x : millis) sum += x;
  s.mean = sum / static_cast<double>(millis.size());
  std::vector<double> v = millis;
  size_t done = 0;  // v[0, done) holds the smallest `done` values
  auto quantile = [&](double q) {
    const double pos = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, v.size() - 1);
    if (lo >= done) {
      std::nth_element(v.begin() + static_cast<std::ptrdiff_t>(done),
                       v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
    }
    done = lo + 1;
    const double a = v[lo];
    if (hi == lo) return a;
    const double b = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end());
    return a + (b - a) * (pos - static_cast<double>(lo));
  };
  if (!p90_only) s.p50 = quantile(0.50);
  s.p90 = quantile(0.90);
  if (!p90_only) s.p99 = quantile(0.99);
  return s;
}

}  // namespace

LatencySummary SummarizeLatencies(const std::vector<double>& millis) {
  return SummarizeWith(millis, /*p90_only=*/false);
}

void RunStats::OnDecodeSteps(const SimTime* ends, SimTime first_start, int64_t count,
                             int64_t tokens) {
  if (count <= 0 || tokens <= 0) return;
  output_tokens_ += tokens * count;
  if (itl_threshold_ > SimDuration::Zero()) {
    SimTime start = first_start;
    for (int64_t i = 0; i < count; ++i) {
      if (ends[i] >= judge_from_) {
        judged_itl_tokens_ += tokens;
        if (ends[i] - start > itl_threshold_) judged_itl_over_ += tokens;
      }
      start = ends[i];
    }
  }
  if (ends[count - 1] < itl_from_) return;
  if (ends[0] < itl_from_) {  // the gaps from itl_from_ on only
    int64_t i = 0;
    while (ends[i] < itl_from_) ++i;
    first_start = ends[i - 1];
    ends += i;
    count -= i;
  }
  if (detail_ == StatsDetail::kFull) {
    SimTime start = first_start;
    for (int64_t i = 0; i < count; ++i) {
      itl_.Add(ends[i] - start, tokens);
      start = ends[i];
    }
  } else {
    // Every step lasts at least 1 ns, so the gaps' sum is the span they cover.
    itl_tokens_ += tokens * count;
    itl_sum_ns_ += tokens * (ends[count - 1] - first_start).nanos();
  }
}

JudgedCount Judge(const TtftLog& log, const TtftSlo& slo, SimTime judge_from) {
  JudgedCount c;
  const int64_t from = judge_from.nanos();
  for (int64_t a : log.arrivals_ns) c.judged += a >= from ? 1 : 0;
  for (const TtftLog::FirstToken& t : log.first_tokens) {
    if (t.arrival_ns >= from && SimDuration::Nanos(t.ttft_ns) <= slo.TargetFor(t.prompt_tokens)) {
      ++c.met;
    }
  }
  return c;
}

void RunStats::OnInjected(SimTime arrival) {
  ++injected_;
  if (log_ != nullptr) log_->arrivals_ns.push_back(arrival.nanos());
  if (arrival >= judge_from_) ++judged_;
  if (!any_arrival_ || arrival < first_arrival_) first_arrival_ = arrival;
  any_arrival_ = true;
  OnEvent(arrival);
}

void RunStats::OnFirstToken(int32_t prompt_tokens, SimDuration ttft, SimTime arrival) {
  ttft_ms_.push_back(ttft.millis());
  if (log_ != nullptr) log_->first_tokens.push_back({arrival.nanos(), ttft.nanos(), prompt_tokens});
  if (ttft <= slo_.TargetFor(prompt_tokens)) {
    ++slo_met_;
    if (arrival >= judge_from_) ++judged_met_;
  }
}

void RunStats::OnFinished(const RequestRecord& r) {
  if (r.outcome == RequestOutcome::kAborted) {
    ++aborted_;
  } else {
    ++completed_;
    if (detail_ == StatsDetail::kFull) e2e_ms_.push_back(r.e2e.millis());
  }
  if (r.scheduling_delay.nanos() >= 0) {
    if (detail_ == StatsDetail::kFull) {
      sched_ms_.push_back(r.scheduling_delay.millis());
    } else {
      ++sched_count_;
      sched_sum_ms_ += r.scheduling_delay.millis();
    }
  }
  if (sink_) sink_(r);
}

void RunStats::OnRejected(const RequestRecord& r) {
  ++rejected_;
  if (sink_) sink_(r);
}

RunSummary RunStats::Summarize(int64_t queued_at_end, int64_t running_at_end) const {
  RunSummary s;
  s.injected = injected_;
  s.completed = completed_;
  s.rejected = rejected_;
  s.aborted = aborted_;
  s.queued_at_end = queued_at_end;
  s.running_at_end = running_at_end;
  s.simulated_seconds = any_arrival_ ? (last_event_ - first_arrival_).seconds() : 0.0;
  const double secs = s.simulated_seconds > 0 ? s.simulated_seconds : 1.0;
  s.throughput_rps = static_cast<double>(completed_) / secs;
  s.output_tokens_per_s = static_cast<double>(output_tokens_) / secs;
  s.ttft_ms = SummarizeWith(ttft_ms_, /*p90_only=*/detail_ == StatsDetail::kSloOnly);
  s.e2e_ms = SummarizeLatencies(e2e_ms_);
  if (detail_ == StatsDetail::kFull) {
    s.scheduling_delay_ms = SummarizeLatencies(sched_ms_);
  } else if (sched_count_ > 0) {
    s.scheduling_delay_ms.count = sched_count_;
    s.scheduling_delay_ms.mean = sched_sum_ms_ / static_cast<double>(sched_count_);
  }
  if (detail_ == StatsDetail::kFull) {
    s.itl_ms.count = itl_.count();
    s.itl_ms.mean = itl_.MeanMillis();
    s.itl_ms.p50 = itl_.QuantileMillis(0.50);
    s.itl_ms.p90 = itl_.QuantileMillis(0.90);
    s.itl_ms.p99 = itl_.QuantileMillis(0.99);
  } else if (itl_tokens_ > 0) {
    s.itl_ms.count = itl_tokens_;
    s.itl_ms.mean = static_cast<double>(itl_sum_ns_) / static_cast<double>(itl_tokens_) * 1e-6;
  }
  if (prefill_count_ > 0) {
    s.prefill_ms.count = prefill_count_;
    s.prefill_ms.mean =
        static_cast<double>(prefill_sum_ns_) / static_cast<double>(prefill_count_) * 1e-6;
    s.prefill_prompt_tokens = prefill_prompt_tokens_;
    s.queue_ms.count = prefill_count_;
    s.queue_ms.mean =
        static_cast<double>(queue_sum_ns_) / static_cast<double>(prefill_count_) * 1e-6;
  }
  s.preemptions = preemptions_;
  s.kv_peak_utilization = kv_peak_;
  s.slo_attainment = injected_ == 0 ? 1.0 : static_cast<double>(slo_met_) / injected_;
  s.goodput_rps = static_cast<double>(slo_met_) / secs;
  s.judged_requests = judged_;
  s.judged_attainment = judged_ == 0 ? 1.0 : static_cast<double>(judged_met_) / judged_;
  s.judged_itl_tokens = judged_itl_tokens_;
  s.judged_itl_over = judged_itl_over_;
  s.gpu_hours = gpu_seconds_ / 3600.0;
  s.engine_steps = engine_steps_;
  s.sequence_steps = sequence_steps_;
  s.output_tokens = output_tokens_;
  s.prompt_tokens_computed = prompt_tokens_computed_;
  s.prefix_cache_queried_tokens = prefix_queried_;
  s.prefix_cache_hit_tokens = prefix_hits_;
  s.prefix_cache_hit_rate = prefix_queried_ == 0 ? 0.0
                                                 : static_cast<double>(prefix_hits_) /
                                                       static_cast<double>(prefix_queried_);
  return s;
}

}  // namespace twinscale::sim
