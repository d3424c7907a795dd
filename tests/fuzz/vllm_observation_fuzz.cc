// libFuzzer target for the path from a scraped body to typed vLLM observations: parse
// (prometheus_text.h), extract (vllm_observation.h), then run every extracted histogram through
// histogram_window.h. A pod's body is outside input, so any byte string must end in a value or a
// clean error, never a crash or a hang. Besides "no crash" it checks the extractor's promises:
// errors are FailedPrecondition (not vLLM) or InvalidArgument; every histogram it returns passes
// ValidateHistogram; engines come out sorted without duplicates; quantiles and shares of a valid
// histogram stay inside its range.
//
// Built by tests/fuzz/CMakeLists.txt (linked to ts_metrics); run by hack/fuzz.sh, seeded with
// tests/data/fixtures/.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

#include "controller/metrics/histogram_window.h"
#include "controller/metrics/prometheus_text.h"
#include "controller/metrics/vllm_observation.h"

namespace {

using twinscale::metrics::CumulativeHistogram;

void CheckHistogram(const std::optional<CumulativeHistogram>& h) {
  if (!h.has_value()) return;
  if (!twinscale::metrics::ValidateHistogram(*h).ok()) std::abort();
  // Quantiles of a valid histogram lie in [min(0, first edge), last finite edge] (up to rounding)
  // or are NaN. Edges so far apart that their difference overflows are left out of the check.
  const double lo = h->upper_bounds.empty() ? 0 : std::fmin(0.0, h->upper_bounds.front());
  const double hi = h->upper_bounds.empty() ? 0 : h->upper_bounds.back();
  if (std::isfinite(hi - lo)) {
    const double slack = 1e-9 * (std::fabs(lo) + std::fabs(hi));
    for (double q : {0.0, 0.5, 0.9, 0.99, 1.0}) {
      const double v = twinscale::metrics::HistogramQuantile(q, *h);
      if (!std::isnan(v) && (v < lo - slack || v > hi + slack)) std::abort();
    }
  }
  for (double t : {0.0, 0.5, 1e300}) {
    const twinscale::metrics::Attainment a = twinscale::metrics::ShareAtOrBelow(t, *h);
    if (!std::isnan(a.share) && (a.share < 0 || a.share > 1 + 1e-9)) std::abort();
  }
  // A histogram's increase over itself is zero; with itself it sums to twice its counts.
  const auto zero = twinscale::metrics::HistogramIncrease(*h, *h);
  if (!zero.ok() || zero->count != 0) std::abort();
  const auto twice = twinscale::metrics::SumHistograms({*h, *h});
  if (!twice.ok() || twice->count != 2 * h->count) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<twinscale::metrics::Exposition> exposition =
      twinscale::metrics::ParsePrometheusText(text);
  if (!exposition.ok()) return 0;
  // Unfiltered, and filtered by the first engine's model when there is one.
  const absl::StatusOr<twinscale::metrics::PodObservation> pod =
      twinscale::metrics::ExtractVllmObservation(*exposition);
  if (!pod.ok()) {
    const absl::StatusCode code = pod.status().code();
    if (code != absl::StatusCode::kFailedPrecondition &&
        code != absl::StatusCode::kInvalidArgument) {
      std::abort();
    }
    return 0;
  }
  for (size_t i = 0; i < pod->engines.size(); ++i) {
    const auto& e = pod->engines[i];
    if (i > 0 && pod->engines[i - 1].engine == e.engine &&
        pod->engines[i - 1].model_name == e.model_name) {
      std::abort();
    }
    for (const auto* h : {&e.ttft, &e.itl, &e.e2e, &e.queue_time, &e.prefill_time, &e.decode_time,
                          &e.prompt_tokens, &e.generation_tokens}) {
      CheckHistogram(*h);
    }
  }
  if (!pod->engines.empty() && !pod->engines[0].model_name.empty()) {
    const auto filtered =
        twinscale::metrics::ExtractVllmObservation(*exposition, pod->engines[0].model_name);
    if (!filtered.ok() || filtered->engines.empty()) std::abort();
  }
  return 0;
}
