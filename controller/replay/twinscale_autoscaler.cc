// twinscale's policy in replay, through the controller's Reconciler: see twinscale_autoscaler.h.
#include "controller/replay/twinscale_autoscaler.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/api/spec_loader.h"
#include "controller/policy/replica_search.h"

namespace twinscale::replay {
namespace {

// A decider that records the decisions of the TargetDecider it wraps and forwards everything else.
class Recorder final : public policy::Decider {
 public:
  Recorder(std::unique_ptr<twin::TargetDecider> inner, std::function<void()> on_gone)
      : inner_(std::move(inner)), on_gone_(std::move(on_gone)) {}
  ~Recorder() override { on_gone_(); }

  policy::Decision Decide(const state::ClusterView& view) override {
    last_ = inner_->Decide(view);
    ++made_;
    return last_;
  }
  void NoteScaled(absl::Time at, int32_t from, int32_t to) override {
    inner_->NoteScaled(at, from, to);
  }
  const state::FleetSnapshot* last_snapshot() const override { return inner_->last_snapshot(); }
  policy::CalibrationFactors calibration() const override { return inner_->calibration(); }
  void RestoreCalibration(const policy::CalibrationFactors& f) override {
    inner_->RestoreCalibration(f);
  }
  const state::ArrivalHistory* arrival_history() const override {
    return inner_->arrival_history();
  }
  void RestoreArrivals(const state::ArrivalBuckets& b) override { inner_->RestoreArrivals(b); }
  std::optional<double> last_prediction_error_ms() const override {
    return inner_->last_prediction_error_ms();
  }

  twin::TargetDecider& inner() { return *inner_; }
  int64_t made() const { return made_; }
  const policy::Decision& last() const { return last_; }

 private:
  std::unique_ptr<twin::TargetDecider> inner_;
  std::function<void()> on_gone_;
  policy::Decision last_;
  int64_t made_ = 0;
};

// The object a decider from parts sits behind: the least spec the loader accepts, of `mode`, with
// the decider's bounds and interval (the profile it names is not used: the decider is already
// built).
nlohmann::json PartsObject(const policy::PolicyConfig& config, api::Mode mode) {
  return {{"apiVersion", "twinscale.io/v1alpha1"},
          {"kind", "InferenceAutoscaler"},
          {"metadata", {{"name", "replay"}, {"namespace", "default"}}},
          {"spec",
           {{"targetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "target"}}},
            {"mode", std::string(api::ModeName(mode))},
            {"minReplicas", config.min_replicas},
            {"maxReplicas", config.max_replicas},
            {"model", {{"profile", "llama-3.1-8b-h100-sxm-tp1"}}},
            {"metrics",
             {{"interval", absl::FormatDuration(config.interval)},
              {"staleAfter",
               absl::FormatDuration(std::max(absl::Seconds(45), 2 * config.interval))}}}}}};
}

// Recommend is replayed as Direct: as if its decisions were acted on.
api::Mode Replayed(api::Mode mode) {
  return mode == api::Mode::kRecommend ? api::Mode::kDirect : mode;
}

}  // namespace

class TwinscaleAutoscaler::Deciders final : public policy::DeciderFactory {
 public:
  Deciders(const sim::ProfileRegistry* profiles, twin::TwinDeciderFactory::Adjust adjust)
      : factory_(std::make_unique<twin::TwinDeciderFactory>(profiles, std::move(adjust))) {}
  explicit Deciders(std::unique_ptr<twin::TargetDecider> prebuilt)
      : prebuilt_(std::move(prebuilt)) {}

  absl::StatusOr<std::unique_ptr<policy::Decider>> Create(
      const api::InferenceAutoscalerSpec& spec) override {
    std::unique_ptr<twin::TargetDecider> made = std::move(prebuilt_);
    if (made == nullptr) {
      if (factory_ == nullptr) {
        return absl::FailedPreconditionError("replay: the decider from parts was built once");
      }
      auto built = factory_->CreateTarget(spec);
      if (!built.ok()) return built.status();
      made = *std::move(built);
    }
    made->set_calibration(calibrate_);
    made->set_held_twin(held_twin_);
    for (const Seed& s : seeds_) made->SeedArrivals(s.from, s.step, s.arrivals);
    auto recorder = std::make_unique<Recorder>(std::move(made), [this] { current_ = nullptr; });
    current_ = recorder.get();
    return std::unique_ptr<policy::Decider>(std::move(recorder));
  }
  absl::Status Reconfigure(const api::InferenceAutoscalerSpec& spec,
                           policy::Decider& decider) override {
    if (factory_ == nullptr) return absl::OkStatus();  // parts: the spec configures nothing
    return factory_->Reconfigure(spec, static_cast<Recorder&>(decider).inner());
  }

  Recorder* current() const { return current_; }
  void set_calibration(bool on) {
    calibrate_ = on;
    if (current_ != nullptr) current_->inner().set_calibration(on);
  }
  void set_held_twin(twin::TargetDecider::HeldTwin held) {
    held_twin_ = held;
    if (current_ != nullptr) current_->inner().set_held_twin(held);
  }
  void SeedArrivals(absl::Time from, absl::Duration step, const std::vector<double>& arrivals) {
    if (current_ != nullptr) {
      current_->inner().SeedArrivals(from, step, arrivals);
    } else {
      seeds_.push_back({from, step, arrivals});
    }
  }

 private:
  struct Seed {
    absl::Time from;
    absl::Duration step;
    std::vector<double> arrivals;
  };
  std::unique_ptr<twin::TwinDeciderFactory> factory_;
  std::unique_ptr<twin::TargetDecider> prebuilt_;
  Recorder* current_ = nullptr;
  bool calibrate_ = true;
  twin::TargetDecider::HeldTwin held_twin_;
  std::vector<Seed> seeds_;
};

absl::StatusOr<std::unique_ptr<TwinscaleAutoscaler>> TwinscaleAutoscaler::FromManifest(
    std::string name, nlohmann::json object, const sim::ProfileRegistry* profiles,
    twin::TwinDeciderFactory::Adjust adjust, std::optional<api::Mode> mode) {
  absl::StatusOr<api::InferenceAutoscaler> ias = api::ParseInferenceAutoscaler(object.dump(), name);
  if (!ias.ok()) return ias.status();
  const api::Mode replayed = Replayed(mode.value_or(ias->spec.mode));
  object["spec"]["mode"] = std::string(api::ModeName(replayed));
  return std::unique_ptr<TwinscaleAutoscaler>(new TwinscaleAutoscaler(
      std::move(name), std::move(object), std::make_unique<Deciders>(profiles, std::move(adjust)),
      ias->spec.metrics.interval, ias->spec.min_replicas, ias->spec.max_replicas, replayed));
}

TwinscaleAutoscaler::TwinscaleAutoscaler(std::string name, policy::PolicyConfig config,
                                         twin::TwinOptions twin, api::Mode mode)
    : TwinscaleAutoscaler(name, PartsObject(config, Replayed(mode)),
                          std::make_unique<Deciders>(std::make_unique<twin::TargetDecider>(
                              config, std::move(twin), absl::Seconds(45))),
                          config.interval, config.min_replicas, config.max_replicas,
                          Replayed(mode)) {}

TwinscaleAutoscaler::TwinscaleAutoscaler(std::string name, nlohmann::json object,
                                         std::unique_ptr<Deciders> deciders,
                                         absl::Duration interval, int32_t min_replicas,
                                         int32_t max_replicas, api::Mode mode)
    : name_(std::move(name)),
      mode_(mode),
      interval_(interval),
      api_(std::move(object)),
      deciders_(std::move(deciders)),
      output_(mode, min_replicas, max_replicas) {
  reconcile::ReconcilerDeps deps = api_.Deps();
  deps.clock = &clock_;
  deps.deciders = deciders_.get();
  deps.board = &board_;
  reconciler_ = std::make_unique<reconcile::Reconciler>(std::move(deps));
}

TwinscaleAutoscaler::~TwinscaleAutoscaler() {
  reconciler_.reset();  // its deciders first: they tell deciders_ they are gone
}

void TwinscaleAutoscaler::SeedArrivals(absl::Time from, absl::Duration step,
                                       const std::vector<double>& arrivals) {
  deciders_->SeedArrivals(from, step, arrivals);
}

void TwinscaleAutoscaler::set_calibration(bool on) { deciders_->set_calibration(on); }
void TwinscaleAutoscaler::set_held_twin(twin::TargetDecider::HeldTwin held) {
  deciders_->set_held_twin(held);
}

std::optional<TwinPrediction> TwinscaleAutoscaler::PredictionFor(const twin::TargetDecider& decider,
                                                                 const policy::Decision& d,
                                                                 int32_t applied) const {
  const policy::ForecastQuestion& q = d.question;
  if (q.arrival_rate <= 0) return std::nullopt;  // a decision that forecast nothing
  const policy::PolicyConfig& c = decider.config();
  // The size the decision's what-ifs grew or shrank from (recommend.cc's BaseSize): a count at or
  // above it is judged after the warm-up, a smaller one from now.
  const int32_t base = std::clamp(std::max(d.current, 1), c.min_replicas, c.max_replicas);
  const policy::ForecastQuestion asked = policy::CandidateQuestion(
      q, applied, base, static_cast<int32_t>(d.not_counted.size()), /*margin=*/1.0);
  const policy::Forecast f = decider.forecaster().Reading(asked);
  TwinPrediction p;
  p.judge_from = asked.judge_from;
  p.horizon = asked.horizon;
  p.replicas = applied;
  p.attainment = f.attainment;
  p.ttft_p90_ms = f.ttft_p90_ms;
  p.waiting_at_end = f.waiting_at_horizon;
  p.settled =
      !decider.calibration_on() || decider.calibration().updates >= kSettledCalibrationUpdates;
  p.forecast_rps = d.rate_check ? d.rate_check->forecast * d.forecast_margin : q.arrival_rate;
  p.aim_percent = q.percentile;
  p.budget_requests_percent = d.ledger.request_percent();
  p.budget_minutes_percent = d.ledger.minute_percent();
  return p;
}

int32_t TwinscaleAutoscaler::Decide(const ClusterView& view) {
  api_.Show(view);
  clock_.Set(view.now);
  Recorder* before = deciders_->current();
  const int64_t made = before != nullptr ? before->made() : 0;
  const reconcile::ReconcileResult pass = reconciler_->Reconcile(api_.ns(), api_.name());
  victims_.clear();
  Recorder* recorder = deciders_->current();
  if (recorder == nullptr || recorder->made() == made) {
    // The pass ended before deciding (the spec or the target unreadable): nothing changes.
    last_reason_ = absl::StrCat("no decision: ", pass.status.message());
    last_prediction_.reset();
    return view.spec_replicas;
  }
  const twin::TargetDecider& decider = recorder->inner();
  speed_history_.push_back(decider.forecaster().options().speed.decode);
  prefill_speed_history_.push_back(decider.forecaster().options().speed.prefill);
  router_random_share_history_.push_back(decider.forecaster().options().router_random_share);
  extra_front_end_history_.push_back(decider.forecaster().options().extra_front_end_seconds);
  prediction_error_ms_.push_back(decider.last_prediction_error_ms().value_or(std::nan("")));
  decisions_.push_back(recorder->last());
  const policy::Decision& d = decisions_.back();
  last_reason_.clear();
  for (const policy::Reason& r : d.reasons) {
    if (!last_reason_.empty()) last_reason_ += "; ";
    absl::StrAppend(&last_reason_, r.code);
  }
  int32_t applied = view.spec_replicas;
  if (mode_ == api::Mode::kDirect) {
    // What the pass's actuator was told (no order: the target already had the decided count).
    if (const std::optional<reconcile::ScaleOrder>& order = api_.last_order()) {
      applied = order->replicas;
      victims_ = order->victims;
    }
  } else {
    // The HPA reads the published metric: the decision, or the current count while stale.
    const std::optional<outputs::BoardEntry> published = board_.Get(api_.ns(), api_.name());
    applied = output_.Apply(published ? published->decision.published_replicas() : d.replicas,
                            view.spec_replicas, view.now);
    if (applied != d.replicas) {
      absl::StrAppend(&last_reason_, "; HPA ", output_.last_reason(), " (decided ", d.replicas,
                      ", HPA set ", applied, ")");
    }
  }
  last_prediction_ = PredictionFor(decider, d, applied);
  return applied;
}

sim::AdmissionLimits TwinscaleAutoscaler::Admission() const {
  sim::AdmissionLimits limits;
  if (decisions_.empty() || !decisions_.back().admission.active) return limits;
  const policy::AdmissionAdvice& a = decisions_.back().admission;
  // A rate limit of 0 would mean "none": an advice that the serving fleet holds nothing in time
  // still admits a trickle (one request a second) rather than lifting the limit.
  limits.max_arrival_rate = std::max(1.0, a.max_arrival_rate);
  limits.max_waiting_per_replica = a.max_queue_per_replica;
  return limits;
}

}  // namespace twinscale::replay
