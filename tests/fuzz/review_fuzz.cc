// Fuzzes the capacity review parser (`twinscale plan`'s input, written by users): any bytes must
// give a review or one clear error, never a crash, an exception or a hang. Every error is
// InvalidArgument and starts with the source's name; a review that parses holds the ranges
// controller/plan/review.h promises, which the review's runs rely on.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "controller/plan/review.h"

namespace {

bool Finite(double x) { return std::isfinite(x); }

// The ranges of review.h, checked on a review the parser accepted.
bool Holds(const twinscale::plan::Review& r) {
  using twinscale::plan::Baseline;
  const absl::Duration zero = absl::ZeroDuration();
  if (r.profiles.empty() || r.profiles.size() > twinscale::plan::kMaxProfiles) return false;
  if (r.scenarios.size() > twinscale::plan::kMaxScenarios) return false;
  if (r.seeds < 1 || r.seeds > 10 || r.max_replicas < 1 || r.max_replicas > 4096) return false;
  if (r.planned_replicas < 0) return false;
  if (!(r.slo.ttft > zero) || !(r.slo.percentile > 0 && r.slo.percentile <= 100)) return false;
  if (r.slo.per_prompt_token < zero || r.slo.itl < zero) return false;
  for (const twinscale::plan::ProfileChoice& p : r.profiles) {
    if (p.name.empty() || p.profile.empty() || !Finite(p.gpu_hour_price) ||
        !(p.gpu_hour_price > 0) || (p.tensor_parallel && *p.tensor_parallel < 1)) {
      return false;
    }
  }
  for (const twinscale::plan::Scenario& s : r.scenarios) {
    if (s.name.empty() || s.name == "baseline") return false;
    for (double k : {s.rate, s.prompt_length, s.output_length}) {
      if (!Finite(k) || !(k > 0)) return false;
    }
    if (s.long_context && (!(s.long_context->share > 0) || s.long_context->share > 1 ||
                           s.long_context->prompt_tokens < 1)) {
      return false;
    }
    if (s.retry_spike && (!(s.retry_spike->share > 0) || s.retry_spike->share > 1 ||
                          !(s.retry_spike->timeout > zero) || s.retry_spike->start < zero)) {
      return false;
    }
    if (s.burst && (!Finite(s.burst->peak_to_mean) || !(s.burst->peak_to_mean > 1) ||
                    !(s.burst->window > zero) || s.burst->at < zero)) {
      return false;
    }
  }
  switch (r.baseline.kind) {
    case Baseline::Kind::kTrace:
      return !r.baseline.trace.path.empty() && r.baseline.trace.rate_scale > 0 &&
             r.baseline.trace.rate_scale <= 1000 && Finite(r.baseline.trace.time_scale) &&
             r.baseline.trace.time_scale > 0 && r.baseline.trace.span >= zero;
    case Baseline::Kind::kRateCurve:
      return !r.baseline.rate_curve.path.empty() && !r.baseline.rate_curve.lengths_from.empty() &&
             Finite(r.baseline.rate_curve.time_scale) && r.baseline.rate_curve.time_scale > 0 &&
             Finite(r.baseline.rate_curve.peak_rate) && r.baseline.rate_curve.peak_rate >= 0;
    case Baseline::Kind::kPrometheus:
      return r.baseline.prometheus.range > zero && r.baseline.prometheus.step > zero &&
             !r.baseline.prometheus.end.empty();
    case Baseline::Kind::kSynthetic: {
      const twinscale::plan::SyntheticBaseline& s = r.baseline.synthetic;
      if (!Finite(s.rate) || !(s.rate > 0) || !(s.duration > zero)) return false;
      for (const twinscale::sim::LengthDistribution* d : {&s.prompt, &s.output}) {
        if (!Finite(d->mean) || d->mean < 1 || !Finite(d->stddev) || d->stddev < 0 || d->min < 1 ||
            d->max < d->min) {
          return false;
        }
      }
      return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  const auto review = twinscale::plan::ParseReview(yaml, "fuzz.yaml");
  if (!review.ok()) {
    // One clear error: InvalidArgument, naming the source first.
    if (review.status().code() != absl::StatusCode::kInvalidArgument) abort();
    const std::string_view message(review.status().message().data(),
                                   review.status().message().size());
    if (message.substr(0, 10) != "fuzz.yaml:") abort();
    return 0;
  }
  if (!Holds(*review)) abort();  // the parser accepted a review that breaks its own contract
  return 0;
}
