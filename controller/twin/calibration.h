// Calibration: keeps the twin honest about the real fleet's speed. Each decision takes the mean
// inter-token latency the fleet showed over the last window (vLLM's
// inter_token_latency_seconds histogram: sum / count, so a per-token mean) and finds the speed
// factor at which the twin itself, simulating that window's fleet and traffic (the Ready replicas
// as observed, the window's own arrival rate, the lengths), shows the same mean; then nudges the
// twin's factor toward it: an exponentially weighted average, bounded to [min_factor, max_factor],
// kept across decisions (and, live, in the object's status so it survives a failover).
//
// Why the twin and not a formula. The observed mean is a per-token average of step times, and
// long steps are the ones with prefill chunks in them: where prompts bunch up (bursts, a replica
// that Random routing sent more than its share, an overloaded fleet whose every step is a full
// budget of prefill) the tokens of many sequences wait on the same long steps, so the per-token
// mean sits well above the step time a mean-load formula predicts. A closed form (a mean-load
// prefill share, T0 / (1 - load)) reads that as a slower fleet: on the Azure code trace it settles
// near 0.70 for a truth of 0.80, and on an overloaded fleet it falls to the 0.5 floor, after which
// the twin judges the SLO out of reach and stops scaling up. Matching the twin's own per-token
// mean under the same traffic counts those effects the way the twin will when it forecasts, so
// its errors do not bias the factor (what the twin's arrival model misses still does, in the safe
// direction: a burstier truth looks slower).
//
// Two factors, prefill and decode, are fitted to two observables with different blends once the
// data say two (below). Inter-token
// latency mixes both (a decode that shares its step with a prefill chunk waits for the chunk);
// the prefill time (vllm:request_prefill_time_seconds, from the engine first scheduling a request
// to its first token) is mostly the prompt's own chunks. It is matched per prompt token (the
// window's prefill times summed over the same requests' prompt tokens, twin and fleet alike):
// which prompts a window happened to finish moves a plain mean of tens of 10k-100k-token prompts
// by more than the speed does. One factor fitted to inter-token latency
// alone reads whatever lengthens the steps that decodes share with prefills (long prompts landing
// together on one replica under random routing, which a balancing twin never shows) as a slower
// engine in both phases; with prefill slowed by that much the twin finds long prompts impossible
// to serve in time even on idle replicas (SloUnattainable) and stops scaling out. The fit is
// Newton's method on the two log latencies against the two log factors, with the 2x2 matrix of
// slopes measured from the fit's own moves (Broyden's update) and kept from fit to fit, since both
// latencies depend on both factors: the inter-token latency strongly on prefill where long
// prompts share steps with decodes, the prefill time a little on decode. A window with fewer than
// min_prefill_requests prefill times moves decode alone.
//
// One factor until the data say two. Fitted apart, each factor rests on a latency that only
// partly depends on it, so a window's noise moves it further: on chat-length replays, whose truth
// slows both alike, two factors varied from decision to decision by a standard deviation of
// 0.023-0.027 where one varied by 0.016-0.017, and the fleets cost 0.5-1.3% more GPU-hours over
// three seeds. So the factors start as one, fitted to inter-token latency, while the twin's
// prefill time per prompt token at that factor is watched against the fleet's; once the two
// differ by more than apart_above (smoothed over windows) the factors are fitted apart from then
// on (and a restored state whose factors differ stays apart). The first fit apart measures the
// slopes by moving each factor alone; where the token gaps barely depend on decode (every step a
// full budget of prefill) decode holds.
//
// The gateway's balance, behind a router the spec calls balancing (RoundRobin, LeastRequests,
// PrefixAware). The twin's requests go where that router sends them, so its queues are short;
// a gateway that balances less than it says (a plain Service in front of the pods after all, or
// a prefix-aware one keeping conversations on a busy replica) leaves some replicas queueing long
// prompts while others idle. A twin that never shows those queues either forecasts them away (on
// the Mooncake conversation trace served through random routing, 15 points of attainment
// optimistic) or, fitted for speed alone, reads them as a slow engine (on a long-prompt trace of
// our own, 14 points pessimistic, the longest prompts unservable and the fleet held small).
// Calibration fits the share of requests the twin routes at random instead
// (TwinOptions::router_random_share) to the fleet's mean queue time
// (vllm:request_queue_time_seconds, settled pods). The evidence is pooled over windows, not
// judged one window at a time: the fleet's and the twin's queue times, each window weighted by
// its queued requests and the older ones decaying by share_smoothing per window, and the slope
// of the twin's queue against the share from one probe a quarter further each window (least
// squares through the probes). The fit is the share at which the pooled twin queue meets the
// pooled fleet queue; the share moves share_step of the way there. A window's mean queue rests
// on a few tens of requests whose queue times are mostly zero and now and then tens of seconds,
// so a fit per window is mostly noise, and noise cannot push a share past 1: smoothed fits per
// window settled at 0.69-0.74 under a truth that routes every request at random (the twin at
// that share then 4-6 points of attainment off on long prompts), where the pooled fit's last
// windows reach 0.91-0.99 under that truth (the decisions' means over a replay under truth
// `all`, the climb from 0 included, 0.77-0.97: docs/results.md, "Long prompts"). Pooled queues
// within queue_tolerance_seconds or queue_tolerance_share of each other leave the share where it
// is, and a probe whose queue does not grow with the share (no load to pile up) says nothing. The
// share is kept in the status beside the factors; the evidence is not (it is back within a few
// windows).
//
// The front end. A request's TTFT begins when it reaches the server (vLLM stamps its arrival in
// the API server), before tokenization and the hand-over to the engine; its queue time begins
// when the engine has it. Over the requests a window saw finish, their mean end-to-end latency
// less their mean queue, prefill and decode times is the time spent before the engine
// (state::WorkloadEstimate::front_end_seconds): the front end, which no fleet size shortens and
// which counts against the TTFT threshold. The profile's latency model has its own front-end time
// (0 on most profiles); the twin adds what the fleet shows beyond it
// (TwinOptions::extra_front_end_seconds), smoothed over windows. Without it, a server whose front
// end takes 30 ms leaves the twin 30-45 ms optimistic at p90 and, on the ServeGen days, about 0.6
// points of attainment optimistic where the rate holds steady. Not kept in the status: it is
// measured directly, and is back within a few minutes of a restart.
#ifndef TWINSCALE_CONTROLLER_TWIN_CALIBRATION_H_
#define TWINSCALE_CONTROLLER_TWIN_CALIBRATION_H_

#include <optional>

#include "controller/policy/forecaster.h"
#include "controller/state/fleet_snapshot.h"
#include "controller/twin/twin_forecaster.h"
#include "simulator/model/latency_model.h"

namespace twinscale::twin {

struct CalibrationOptions {
  // The factors' memory: each window's fit counts with weight one over the windows so far, the
  // older ones decayed by 1 - smoothing per window, so the first windows count alike (the first
  // alone sets the factors) and later ones settle at this weight (about ten windows' worth).
  // A window's fit is noisy where a window holds tens of prompts of 10k-100k tokens. Near
  // capacity the twin's attainment falls faster with a slower factor than it rises with a faster
  // one, so a noisy factor is pessimistic on average even where its mean is right. On the
  // long-prompt replays (lp12, lp08: truth `all`, five seeds) a weight of 0.3 left the decode
  // factor varying over a replay's decisions by a standard deviation of 0.06-0.08 and the twin
  // 1.3-2.0 points of attainment pessimistic on average; 0.1 keeps the same means at 0.03-0.06
  // and 0.0-1.0 points. On chat lengths and the ServeGen days the bias and the minutes met stay
  // where they were and the GPU-hours within 1% (docs/results.md, "The factors' memory").
  // A real change of the fleet's speed (new hardware, a driver) is followed over about ten
  // decisions, a few minutes; the load itself is not in the factor but in the question the twin
  // is asked.
  double smoothing = 0.1;
  // The one factor splits in two once the twin's prefill time per prompt token at it and the
  // fleet's differ by more than this ratio, smoothed over windows: a truth that slows both alike
  // keeps one factor, which one observable fits with less noise; one whose inter-token latency
  // says something its prefill times do not (long prompts piling up behind a gateway that
  // balances less than the spec says) is fitted apart.
  // At 1.15 the chat-length replays (prompts of about a thousand tokens, Random routing) keep one
  // factor on every seed measured, and the long-prompt ones split: their prefill factor settles
  // at the truth's speed and decode below it (token gaps that wait on other replicas' long
  // prefills under random routing). Infinity keeps one factor always.
  double apart_above = 1.15;
  // Windows the one factor settles for before the prefill times count, and the weight of a
  // window in the smoothed disagreement: a disagreement must last minutes, not one window after
  // a cold start (on the Azure conversation trace the first windows' prefill times sat 26% off
  // the factor an inter-token fit had not yet settled).
  int64_t apart_after = 20;
  double apart_smoothing = 0.1;
  // Windows with more requests waiting than this per Ready replica (a backlog) do not count
  // toward the split: there both latencies are set by the backlog's prompts, which the twin
  // rebuilds only from the window's means, so their disagreement says nothing about the engine.
  // (One replica fed twice what it serves, thousands waiting, disagreed by 23-68% in its first
  // windows and split, and its decode factor, which full-prefill steps barely constrain, drifted
  // to 0.90 for a truth of 0.80; the long-prompt replays wait 0.02-0.04 per replica at the median
  // and p90.)
  double apart_max_waiting_per_replica = 1.0;
  double min_factor = 0.5;
  double max_factor = 1.5;
  // Token gaps the window must hold fleet-wide, else its mean says too little. Not a floor on the
  // running batch: a light fleet's inter-token latency is its small batches' step time, which the
  // speed sets as surely as a busy fleet's (batch-1 decode reads the weights each step), and the
  // twin replays the same light traffic. A floor of one running request per Ready replica would
  // freeze the factor wherever the fleet has room: on the Azure code trace (outputs of about 20-30
  // tokens) a fleet scaled out for a burst would stop calibrating, and a factor a cold start's
  // backlog pulled to 0.50 (the truth: 0.80) would stay there, the twin forecasting only 90% of
  // requests in time even with 48 replicas and holding the fleet at 48 (for 35 minutes of that
  // trace's hour).
  double min_itl_tokens = 200;
  // Prefill times the window must hold fleet-wide (requests that got their first token) for the
  // prefill factor to move: a mean of a handful of long prompts is mostly which prompts they were.
  double min_prefill_requests = 10;
  // The routing fit (calibration.h) leaves the share alone while the twin's mean queue time is
  // within this, or this share of the observed one, of the fleet's. The share cannot go below 0,
  // so moves on noise alone push it up; a window's queue must be clearly off to move it (with
  // 5 ms or a tenth, the share drifted to 0.05-0.1 under a truth balancing as the twin does, and
  // the twin then fitted its speed 7% high to make up for the queues it added).
  double queue_tolerance_seconds = 0.02;
  double queue_tolerance_share = 0.25;
  // The routing fit's memory: the weight of the newest window in the pooled queue times and
  // slope (about ten windows' worth), and how far toward the pooled fit the share moves per window.
  double share_smoothing = 0.1;
  double share_step = 0.3;
  // How long the twin simulates the observed window's fleet to measure its latencies, and how
  // long it runs before the token gaps count (TwinForecaster::CalibrationLatencies: the requests
  // it seeds are all decoding, where a tenth to a half of the fleet's were in their prefill). A
  // 10k-100k-token prompt prefills in 1-10 s at an H100's speed; ten seconds let the twin's own
  // arrivals bring the mix back. On the long-prompt replays at the truth's speed the twin's token
  // gaps were 4.0% short of the fleet's in a 30 s window counted from its start (arrivals going
  // on past it), 2.6% counted from 10 s, 1.2% in a 60 s window counted from 10 s (docs/results.md,
  // "The calibration's reading of the window").
  absl::Duration window = absl::Seconds(60);
  absl::Duration lead_in = TwinForecaster::kCalibrationLeadIn;
  // The twin's mean inter-token latency falls with its speed locally as speed^-b: b a little under
  // 1 on a light fleet (fixed per-step costs don't scale), up to 3 or more near saturation (a
  // slower engine also batches more, and each step grows). The fit starts at the current factors
  // and takes Newton steps on log(latency) against log(speed), the slopes re-estimated from each
  // pair of readings far enough apart and kept for the next fit (-1 at first): `first_steps`
  // simulations after the first for the first fit, `later_steps` after it, then a last interpolated
  // step that needs no simulation. A bisection to the same precision would take 8 simulations per
  // decision and make the replay 4x slower; the smoothing below averages more noise away than
  // either leaves. Later fits stay within the current factor x/÷ `bracket` (what the smoothed
  // factor can move toward anyway); a fit at the bracket's edge just pulls the factor that way.
  int32_t first_steps = 3;
  int32_t later_steps = 1;
  double bracket = 1.3;
  // The front end's time ("The front end" above): a window counts when at least
  // min_prefill_requests requests finished in it on settled pods, and moves the twin's extra
  // front-end time by this weight toward what it shows, from 0 (a window's means rest on tens to
  // thousands of requests, and the four latencies it subtracts are each far larger than a front
  // end's tens of milliseconds; with 0.1, 20 windows take it 88% of the way).
  double front_end_smoothing = 0.1;
};

struct CalibrationState {
  sim::SpeedFactors speed;  // current factors (1 = the profile's speed)
  int64_t updates = 0;
  // The factors this window alone gave, unsmoothed (the prefill one only where it was fitted).
  std::optional<double> last_observed_ratio;  // decode
  std::optional<double> last_observed_prefill_ratio;
  // Behind a balancing router, the share of requests the twin routes at random
  // (TwinOptions::router_random_share), and what this window alone gave.
  double router_random_share = 0;
  std::optional<double> last_observed_random_share;
  // The routing fit's evidence: sums over the windows, each weighted by the requests whose queue
  // times it holds, the older ones decaying by 1 - share_smoothing per window.
  struct RoutingEvidence {
    double requests = 0;      // the weight
    double observed = 0;      // x the fleet's mean queue time, seconds
    double twin = 0;          // x the twin's, at the share it had then
    double share = 0;         // x that share
    double slope_moment = 0;  // x the probe's queue change x its share change
    double slope_spread = 0;  // x the probe's share change squared
  } routing;
  // Time the fleet's requests spend before the engine sees them beyond what the profile's latency
  // model puts there (TwinOptions::extra_front_end_seconds; negative where the profile puts more),
  // how many windows set it, and what this window alone gave.
  double extra_front_end_seconds = 0;
  int64_t front_end_updates = 0;
  std::optional<double> last_observed_front_end;
};

class Calibrator {
 public:
  explicit Calibrator(CalibrationOptions options = {}) : options_(options) {}
  // Folds the snapshot's window into the factors; returns the new state. `observed` is the
  // question for the fleet as observed (policy::ObservedQuestion: Ready replicas, rate,
  // burstiness, lengths); `twin` simulates it. Windows without enough decode traffic, a usable
  // arrival rate or a Ready replica leave the factors as they were.
  const CalibrationState& Update(const state::FleetSnapshot& snapshot,
                                 const policy::ForecastQuestion& observed,
                                 const TwinForecaster& twin);
  const CalibrationState& state() const { return state_; }
  // Speed factors held rather than fitted (replay's --twin-speed): Update leaves them as given
  // and fits the rest (the routing share, the front end) with them. nullopt: fitted.
  void set_held_speed(std::optional<sim::SpeedFactors> speed) {
    held_speed_ = speed;
    if (speed.has_value()) state_.speed = *speed;
  }
  // A restored state whose factors differ was fitted apart: it stays apart.
  void Restore(const CalibrationState& s) {
    state_ = s;
    if (s.updates > 0) speed_windows_ = 1 / options_.smoothing;  // settled
    apart_ = apart_ || s.speed.prefill != s.speed.decode;
  }

 private:
  // The front end's time from the window (the header says how).
  void UpdateFrontEnd(const state::WorkloadEstimate& w, const policy::ForecastQuestion& observed,
                      const TwinForecaster& twin);

  CalibrationOptions options_;
  CalibrationState state_;
  std::optional<sim::SpeedFactors> held_speed_;
  // The slopes of log latency against log factor, as the last fits measured them (-b in
  // CalibrationOptions): while the factors are tied, the inter-token latency's against the one
  // factor; apart, the 2x2 matrix of both latencies against both factors.
  double tied_slope_ = -1;
  struct Slopes {
    double itl_by_decode = -1, itl_by_prefill = 0;
    double prefill_by_decode = 0, prefill_by_prefill = -1;
    // A move of the log factors by (dx_d, dx_p) changed the log latencies by (d_itl, d_prefill).
    void Update(double dx_d, double dx_p, double d_itl, std::optional<double> d_prefill);
    // Slopes measured by moving each factor alone (bounded as Update bounds them).
    void Set(double itl_d, double itl_p, double prefill_d, double prefill_p);
  };
  Slopes slopes_;
  bool slopes_measured_ = false;
  // The windows the factors rest on, each older one decayed by 1 - smoothing.
  double speed_windows_ = 0;
  // Whether the factors are fitted apart, and while they are one, the smoothed log ratio of the
  // twin's prefill time per prompt token at that factor to the fleet's.
  bool apart_ = false;
  double prefill_disagreement_ = 0;
  // The routing fit: one probe at another share, the secant through it and the current reading.
  void FitRouting(const state::WorkloadEstimate& w, const TwinForecaster& twin,
                  const policy::ForecastQuestion& q, sim::SpeedFactors speed, double twin_queue);
};

}  // namespace twinscale::twin

#endif  // TWINSCALE_CONTROLLER_TWIN_CALIBRATION_H_
