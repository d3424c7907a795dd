// Rate-curve workload: see rate_curve.h.
#include "simulator/workload/rate_curve.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "simulator/core/rng.h"

namespace twinscale::sim {
namespace {

std::string Hours(double seconds) { return absl::StrCat(seconds / 3600, "h"); }

// The curve's rate at curve second t: linear between window centres, flat beyond the outer ones.
double CurveRateAt(const RecordedRateCurve& curve, double window_s, double t) {
  const size_t n = curve.rates.size();
  const double x = t / window_s - 0.5;  // in units of windows, 0 at the first centre
  if (x <= 0) return curve.rates.front();
  if (x >= static_cast<double>(n - 1)) return curve.rates.back();
  const size_t i = static_cast<size_t>(std::floor(x));
  const double frac = x - static_cast<double>(i);
  return curve.rates[i] + frac * (curve.rates[i + 1] - curve.rates[i]);
}

}  // namespace

double PlayedCurve::RateAt(double s) const {
  if (t.empty()) return 0;
  if (s <= t.front()) return rate.front();
  if (s >= t.back()) return rate.back();
  const size_t i = static_cast<size_t>(std::upper_bound(t.begin(), t.end(), s) - t.begin()) - 1;
  const double len = t[i + 1] - t[i];
  return len > 0 ? rate[i] + (s - t[i]) / len * (rate[i + 1] - rate[i]) : rate[i];
}

double PlayedCurve::Expected(double a, double b) const {
  double sum = 0;
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    const double x = std::max(a, t[i]), y = std::min(b, t[i + 1]);
    if (y > x) sum += (y - x) * (RateAt(x) + RateAt(y)) / 2;  // the trapezoid is exact
  }
  return sum;
}

absl::StatusOr<PlayedCurve> PlanRateCurve(const RecordedRateCurve& curve,
                                          const RateCurvePlay& play) {
  if (curve.rates.empty()) return absl::InvalidArgumentError("rate curve: no windows");
  if (curve.window <= SimDuration::Zero()) {
    return absl::InvalidArgumentError("rate curve: window must be > 0");
  }
  for (size_t i = 0; i < curve.rates.size(); ++i) {
    if (!(curve.rates[i] >= 0) || !std::isfinite(curve.rates[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("rate curve: window ", i, " has rate ", curve.rates[i], " (want >= 0)"));
    }
  }
  const double w = curve.window.seconds();
  const double length = w * static_cast<double>(curve.rates.size());
  const double start = play.start.seconds();
  if (start < 0 || start >= length) {
    return absl::InvalidArgumentError(absl::StrCat(
        "curve start ", Hours(start), " is outside the curve (0 to ", Hours(length), ")"));
  }
  if (play.span < SimDuration::Zero()) {
    return absl::InvalidArgumentError("curve span must be >= 0 (0: to the curve's end)");
  }
  const double span = play.span == SimDuration::Zero() ? length - start : play.span.seconds();
  if (start + span > length + 1e-9) {
    return absl::InvalidArgumentError(absl::StrCat("curve start ", Hours(start), " + span ",
                                                   Hours(span), " goes past the curve's end (",
                                                   Hours(length), ")"));
  }
  const double f = play.time_scale;
  if (!(f > 0) || !std::isfinite(f)) {
    return absl::InvalidArgumentError(absl::StrCat("time scale must be finite and > 0, got ", f));
  }
  if (!(play.peak_rate >= 0) || !std::isfinite(play.peak_rate)) {
    return absl::InvalidArgumentError(
        absl::StrCat("peak rate must be finite and >= 0, got ", play.peak_rate));
  }

  // Knots in curve time: the span's ends and every window centre strictly inside.
  std::vector<double> knots = {start};
  for (size_t i = 0; i < curve.rates.size(); ++i) {
    const double c = (static_cast<double>(i) + 0.5) * w;
    if (c > start && c < start + span) knots.push_back(c);
  }
  knots.push_back(start + span);
  PlayedCurve p;
  double peak = 0;
  for (const double k : knots) {
    p.t.push_back((k - start) * f);
    p.rate.push_back(CurveRateAt(curve, w, k) / f);  // compressing time keeps the count
    peak = std::max(peak, p.rate.back());
  }
  if (play.peak_rate > 0) {
    if (peak == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "peak rate ", play.peak_rate, ": the curve's rate is 0 throughout the span"));
    }
    for (double& r : p.rate) r *= play.peak_rate / peak;  // a linear piece stays linear
  }
  return p;
}

absl::StatusOr<Trace> GenerateRateCurveTrace(const PlayedCurve& played, const Trace& lengths,
                                             uint64_t seed, std::string source) {
  if (lengths.requests.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("lengths trace ", lengths.source, ": no requests to draw lengths from"));
  }
  Trace out;
  out.source = std::move(source);
  Rng arrivals(seed, 0, Stream::kRateCurve, 0);
  Rng pick(seed, 0, Stream::kRateCurve, 1);
  const uint64_t pairs = lengths.requests.size();
  const int64_t end_ns = static_cast<int64_t>(std::llround(played.span_seconds() * 1e9));
  // Each gap is a unit-rate exponential in the integrated rate, Lambda(t): the next arrival is
  // where Lambda has grown by `need` since the last one.
  double need = -std::log(arrivals.UniformOpen0());
  for (size_t i = 0; i + 1 < played.t.size(); ++i) {
    const double b = played.t[i + 1];
    double pos = played.t[i], r = played.rate[i];
    const double len = b - pos;
    if (len <= 0) continue;
    const double slope = (played.rate[i + 1] - r) / len;
    while (true) {
      const double area = (b - pos) * (r + played.rate[i + 1]) / 2;
      if (!(need < area)) {
        need -= area;
        break;
      }
      // Solve r x + slope x^2 / 2 = need for x >= 0, in the form that does not cancel when the
      // slope is small. need < area keeps the root inside the piece and the sqrt's argument >= 0
      // (r^2 + 2 slope need >= r(b)^2 >= 0 on a falling piece).
      const double denom = r + std::sqrt(std::max(0.0, r * r + 2 * slope * need));
      const double x = denom > 0 ? 2 * need / denom : 0;  // need = 0 where the rate is 0
      pos = std::min(b, pos + x);
      r = std::max(0.0, r + slope * x);
      const int64_t ns = std::min<int64_t>(end_ns - 1, std::llround(pos * 1e9));
      const RequestSpec& from = lengths.requests[pick.UniformInt(pairs)];
      RequestSpec req;
      req.id = out.requests.size();
      req.arrival = SimTime::FromNanos(std::max<int64_t>(0, ns));
      req.prompt_tokens = from.prompt_tokens;
      req.output_tokens = from.output_tokens;
      out.requests.push_back(std::move(req));
      need = -std::log(arrivals.UniformOpen0());
    }
  }
  return out;
}

}  // namespace twinscale::sim
