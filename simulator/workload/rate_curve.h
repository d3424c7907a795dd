// A rate-curve workload: arrivals drawn from a recorded request-rate curve (such as ServeGen's
// per-window aggregate rates) and token lengths drawn from a request trace's (prompt, output)
// pairs. `twinscale replay --rate-curve FILE --lengths-from TRACE` plays a day of real traffic's
// shape where no per-request trace of that day exists.
//
// The rate between windows: a window's rate is taken as the rate at its centre, and the rate is
// linear between consecutive centres (held flat before the first centre and after the last), so
// a ramp recorded as a staircase of 10-minute means plays as a ramp. Arrivals are a Poisson
// process with that rate, drawn by inverting its integral exactly on each linear piece (no
// thinning, so a deep night costs no rejected draws).
//
// Playing part of a curve (RateCurvePlay): the span [start, start + span) of curve time is
// played from t = 0; time_scale f multiplies played time (f = 0.125 plays 24 h in 3 h), keeping
// the span's expected request count, so the rate is multiplied by 1/f (the same meaning as
// --time-scale on a trace); then peak_rate R, if set, multiplies every rate so the played curve's
// peak over the span is R req/s (the count follows).
//
// Pure: no I/O (trace_reader.h reads the CSV). Deterministic for a given seed (Stream::kRateCurve:
// index 0 the arrivals, 1 the lengths). Thread-safety: plain values and functions.
#ifndef TWINSCALE_SIMULATOR_WORKLOAD_RATE_CURVE_H_
#define TWINSCALE_SIMULATOR_WORKLOAD_RATE_CURVE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "simulator/core/time.h"
#include "simulator/workload/trace.h"

namespace twinscale::sim {

// A recorded curve: rates[i] is the mean arrival rate in req/s over window i,
// [i window, (i + 1) window). (generators.h's RateCurve is the analytic kind, for synthetic loads.)
struct RecordedRateCurve {
  std::string source;  // where it came from (a file name), for reports
  SimDuration window = SimDuration::Seconds(600);
  std::vector<double> rates;  // finite, >= 0
};

struct RateCurvePlay {
  SimDuration start = SimDuration::Zero();  // where in the curve to begin (>= 0)
  SimDuration span = SimDuration::Zero();   // how much of it (0: to the curve's end)
  double time_scale = 1;                    // played time = curve time x this (> 0)
  double peak_rate = 0;                     // > 0: the played peak in req/s; 0: the curve's own
};

// The played rate, a piecewise-linear function of played seconds since the span's start.
struct PlayedCurve {
  std::vector<double> t;     // knots, played seconds: 0, each window centre inside, the end
  std::vector<double> rate;  // req/s at each knot
  double span_seconds() const { return t.empty() ? 0 : t.back(); }
  // The rate at played second s, in [0, span_seconds()] (clamped outside).
  double RateAt(double s) const;
  // The expected number of arrivals in [a, b] (0 <= a <= b <= span_seconds()).
  double Expected(double a, double b) const;
};

// The played rate for `play` on `curve`. InvalidArgument (the message names the quantity) for an
// empty curve, a window <= 0, a negative or non-finite rate, a start or span < 0, a start + span
// past the curve's end, a time scale <= 0 or not finite, a negative or non-finite peak rate, or a
// peak rate on a span whose rate is 0 throughout.
absl::StatusOr<PlayedCurve> PlanRateCurve(const RecordedRateCurve& curve,
                                          const RateCurvePlay& play);

// Draws a trace from `played`: Poisson arrivals at the played rate, each given the (prompt,
// output) of a request of `lengths` drawn uniformly with replacement. Prefix hashes are not
// copied: a drawn pair is another user's prompt, sharing no prefix with the others. Arrivals are
// in [0, span) nanoseconds from the span's start (not shifted so the first is at 0), sorted, ids
// 0..n-1. `source` names the result. InvalidArgument if `lengths` has no requests.
absl::StatusOr<Trace> GenerateRateCurveTrace(const PlayedCurve& played, const Trace& lengths,
                                             uint64_t seed, std::string source);

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_WORKLOAD_RATE_CURVE_H_
