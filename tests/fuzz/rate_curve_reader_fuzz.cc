// libFuzzer target for ServeGen's rate CSV reader (simulator/workload/trace_reader.h) and the
// rate-curve workload behind it: arbitrary bytes go to ParseServeGenRateCsv. Nothing may crash,
// hang or throw; whatever parses must hold at least two finite, non-negative rates on a positive
// window, and a short play of it (its first two windows, compressed so it stays small) must plan
// and generate a sorted trace inside the played span. Those are checked here as the oracle.
// Built with clang and -DTWINSCALE_BUILD_FUZZ=ON (target rate_curve_reader_fuzz).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "simulator/workload/rate_curve.h"
#include "simulator/workload/trace_reader.h"

namespace {

using twinscale::sim::PlayedCurve;
using twinscale::sim::RateCurvePlay;
using twinscale::sim::RecordedRateCurve;
using twinscale::sim::RequestSpec;
using twinscale::sim::SimDuration;
using twinscale::sim::Trace;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<RecordedRateCurve> curve =
      twinscale::sim::ParseServeGenRateCsv(text, "fuzz");
  if (!curve.ok()) return 0;
  if (curve->rates.size() < 2 || curve->window <= SimDuration::Zero()) __builtin_trap();
  double peak = 0;
  for (const double r : curve->rates) {
    if (!(r >= 0) || !std::isfinite(r)) __builtin_trap();
    peak = r > peak ? r : peak;
  }
  if (peak == 0) return 0;
  // Two windows played with a peak of 50 req/s over at most 10 s: about 500 requests at most.
  RateCurvePlay play;
  play.span = curve->window + curve->window;
  play.time_scale = 10.0 / play.span.seconds();
  play.peak_rate = 50;
  const absl::StatusOr<PlayedCurve> played = twinscale::sim::PlanRateCurve(*curve, play);
  if (!played.ok()) return 0;  // e.g. a span of two windows that the rates' zeros make empty
  Trace lengths;
  RequestSpec pair;
  pair.prompt_tokens = 10;
  pair.output_tokens = 2;
  lengths.requests.push_back(pair);
  const absl::StatusOr<Trace> t = twinscale::sim::GenerateRateCurveTrace(*played, lengths, 1, "f");
  if (!t.ok()) __builtin_trap();
  const int64_t end = static_cast<int64_t>(std::llround(played->span_seconds() * 1e9));
  for (size_t i = 0; i < t->requests.size(); ++i) {
    const RequestSpec& r = t->requests[i];
    if (r.id != i || r.arrival.nanos() < 0 || r.arrival.nanos() >= end) __builtin_trap();
    if (i > 0 && r.arrival < t->requests[i - 1].arrival) __builtin_trap();
  }
  return 0;
}
