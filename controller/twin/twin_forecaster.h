// The twin as a Forecaster: answers the policy's what-if questions with the simulator.
//
// The reduction that fits the decision budget: replicas behind a Random or LeastRequests router are
// exchangeable, so instead of the whole fleet the twin simulates a small sample of k replicas
// (k = sample_replicas, default 4; the whole fleet when it is smaller), seeded with the states of k
// observed Ready replicas chosen evenly across the fleet's load order, fed with k / N(t) of the
// fleet's arrivals, where N(t) is the number of replicas serving at time t (Ready now, plus pending
// and new ones as their warm-up ends). For Random routing this is exact in distribution for Poisson
// arrivals (a thinned Poisson stream is Poisson); for LeastRequests a small group balances worse
// than the full fleet, which errs on the safe side. Running requests are adopted already decoding,
// with lengths drawn from the length-biased residual of the observed output distribution (new
// requests draw both lengths from the observed histograms, rescaled to the observed means) and contexts
// consistent with the observed KV use; waiting requests are queued at t = 0.
//
// Every candidate N uses the same seed: the same unit-rate arrival process and the same lengths
// (common random numbers), so answers are monotone in N up to noise and comparisons are fair.
// Thread-safe: Evaluate is const and builds its own Simulation.
#ifndef TWINSCALE_CONTROLLER_TWIN_TWIN_FORECASTER_H_
#define TWINSCALE_CONTROLLER_TWIN_TWIN_FORECASTER_H_

#include "controller/policy/forecaster.h"
#include "simulator/model/deployment.h"
#include "simulator/model/latency_model.h"
#include "simulator/model/router.h"

namespace twinscale::twin {

struct TwinOptions {
  sim::DeploymentSpec deployment;
  sim::SpeedFactors speed;          // calibration
  sim::RouterKind router = sim::RouterKind::kLeastRequests;
  int32_t sample_replicas = 4;      // 0: simulate the whole fleet
  int32_t seeds = 1;                // independent runs averaged (attainment pooled)
};

class TwinForecaster : public policy::Forecaster {
 public:
  explicit TwinForecaster(TwinOptions options) : options_(std::move(options)) {}
  policy::Forecast Evaluate(const policy::ForecastQuestion& q) const override;
  const TwinOptions& options() const { return options_; }
  void set_speed(sim::SpeedFactors s) { options_.speed = s; }

 private:
  policy::Forecast EvaluateOnce(const policy::ForecastQuestion& q, uint64_t seed) const;
  TwinOptions options_;
};

}  // namespace twinscale::twin

#endif  // TWINSCALE_CONTROLLER_TWIN_TWIN_FORECASTER_H_
