// Pooling independent draws of one what-if's attainment: the inverse-variance mean, as the
// scale-in question pools its own draw with the stabilization window's earlier ones
// (fleet_sizing.h), and as a sampling forecaster judges when its own draw no longer needs to grow
// because that pool's verdict is already clear (forecaster.h, ForecastQuestion::prior).
//
// One place for the arithmetic, so the forecaster stops exactly when the pool it feeds is decided.
// Pure.
#ifndef TWINSCALE_CONTROLLER_POLICY_POOLED_DRAWS_H_
#define TWINSCALE_CONTROLLER_POLICY_POOLED_DRAWS_H_

#include <cstdint>

namespace twinscale::policy {

// A pooled verdict is clear when the pool's mean stands this many of its standard errors from the
// target: the normal's two-sided 95% quantile (a pool of many draws; a single sampling run's own
// margin is Student's t for its handful of units instead).
inline constexpr double kPooledVerdictZ = 1.96;

// The variance a draw carries into a pool: its standard error squared, never below the binomial
// variance of the requests it judged (a draw that did not estimate its noise, or whose units
// happened to agree, must not dominate), nor below 1e-8.
double DrawVariance(double attainment, double attainment_se, int64_t requests);

// Independent draws of one attainment, pooled by inverse variance. Empty: no draws.
class PooledDraws {
 public:
  void Add(double attainment, double attainment_se, int64_t requests);
  void Add(const PooledDraws& other);

  bool empty() const { return draws_ == 0; }
  int32_t draws() const { return draws_; }
  int64_t requests() const { return requests_; }
  double mean() const;      // the inverse-variance mean (1 when empty)
  double variance() const;  // of that mean (infinite when empty)
  double se() const;
  // Whether the pool's mean stands kPooledVerdictZ standard errors clear of `target` (a share).
  bool Clear(double target) const;

 private:
  double weight_sum_ = 0;           // sum of 1 / variance
  double weighted_attainment_ = 0;  // sum of attainment / variance
  int64_t requests_ = 0;
  int32_t draws_ = 0;
};

}  // namespace twinscale::policy

#endif  // TWINSCALE_CONTROLLER_POLICY_POOLED_DRAWS_H_
