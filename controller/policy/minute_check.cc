// The last minute's forecasts, checked: see minute_check.h.
#include "controller/policy/minute_check.h"

#include <algorithm>
#include <cmath>

namespace twinscale::policy {

std::optional<MinuteCheck> CheckLastMinute(const std::deque<IntervalCheck>& checks, absl::Time now,
                                           absl::Duration window, absl::Duration interval,
                                           double percentile) {
  if (window <= absl::ZeroDuration()) return std::nullopt;
  MinuteCheck m;
  // The forecast's variance: each interval's own standard error, or a binomial one over as many
  // requests as were served where the twin gave none; pooled by requests, sum(n^2 v) / N^2.
  double predicted = 0, served = 0, n2v = 0;
  for (const IntervalCheck& c : checks) {
    if (c.at <= now - window || c.at > now || !(c.requests > 0)) continue;
    ++m.intervals;
    m.requests += c.requests;
    predicted += c.requests * c.predicted;
    served += c.requests * c.served;
    const double f = std::clamp(c.predicted, 0.0, 1.0);
    const double v =
        c.predicted_se > 0 ? c.predicted_se * c.predicted_se : f * (1 - f) / c.requests;
    n2v += c.requests * c.requests * v;
  }
  if (m.intervals == 0 || interval * m.intervals < window / 2) return std::nullopt;
  const double p = std::clamp(predicted / m.requests, 0.0, 1.0);
  const double s = std::clamp(served / m.requests, 0.0, 1.0);
  const double var_p = n2v / (m.requests * m.requests);
  const double var_s = s * (1 - s) / m.requests;
  m.predicted_percent = 100 * p;
  m.served_percent = 100 * s;
  m.missed = m.served_percent < percentile;
  m.noise_points = 200 * std::sqrt(var_p + var_s);
  const double gap = m.predicted_percent - m.served_percent;
  if (gap > m.noise_points) m.optimism = gap;
  return m;
}

bool MinuteAtRisk(const MinuteCheck& m, double percentile, double headroom) {
  return !m.missed && m.optimism > 0 && m.served_percent - m.optimism < percentile + headroom;
}

}  // namespace twinscale::policy
