// One reconcile pass over one InferenceAutoscaler: see reconciler.h.
#include "controller/reconcile/reconciler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "controller/kube/kube_client.h"
#include "controller/kube/resource_ref.h"
#include "controller/outputs/decision_board.h"
#include "controller/reconcile/actuator.h"
#include "controller/reconcile/controller_metrics.h"
#include "controller/reconcile/pod_source.h"
#include "nlohmann/json.hpp"

namespace twinscale::reconcile {

struct Reconciler::TargetState {
  SpecState spec;  // the spec and its decider
  // The metrics source and the spec it was built for.
  std::unique_ptr<metrics::MetricsSource> source;
  std::optional<api::MetricsSpec> source_spec;
  // The status as last written (or, with status_read, as the object had it at start).
  AutoscalerStatus written;
  bool status_read = false;
  int64_t invalid_event_generation = -1;  // the generation an InvalidSpec event was sent for
  std::string last_conflict;              // the other autoscaler last reported
  // The pods whose metrics the last read could not get, with why: the log says when this
  // changes, not every pass.
  std::map<std::string, std::string> unread_pods;
};

// One pass: what its steps read, and the status it builds. Each step fills its part.
struct Reconciler::Pass {
  std::string ns, name, key;
  absl::Time now;
  // Read spec.
  nlohmann::json object;
  int64_t generation = 0;
  TargetState* st = nullptr;
  AutoscalerStatus next;  // starts as the status written; written at the end when it changed
  // Read target.
  kube::ResourceRef target;
  ScaleRead scale;
  std::string other;  // another autoscaler of the target (Direct mode only; "" when none)
  // Read pods.
  ListedPods pods;
  PodReadings readings;
  std::string source_error;  // why the metrics source failed as a whole ("" when it didn't)
  // Act.
  int32_t current = 0;  // the target's replicas once acted

  const api::InferenceAutoscalerSpec& spec() const { return *st->spec.spec; }
};

namespace {

const absl::Duration kRetry = absl::Seconds(10);        // after a failed read of the target
const absl::Duration kInvalidRetry = absl::Minutes(5);  // an invalid spec waits for an edit

std::string Key(const std::string& ns, const std::string& name) {
  return absl::StrCat(ns, "/", name);
}

kube::ObjectReference RefOf(const nlohmann::json& obj) {
  kube::ObjectReference r;
  r.api_version = obj.value("apiVersion", "twinscale.io/v1alpha1");
  r.kind = obj.value("kind", "InferenceAutoscaler");
  const nlohmann::json& m = obj["metadata"];
  r.namespace_name = m.value("namespace", "");
  r.name = m.value("name", "");
  r.uid = m.value("uid", "");
  return r;
}

}  // namespace

Reconciler::Reconciler(ReconcilerDeps deps) : deps_(std::move(deps)) {
  if (deps_.actuator == nullptr) {
    own_actuator_ = std::make_unique<KubeActuator>(deps_.client);
    deps_.actuator = own_actuator_.get();
  }
}
Reconciler::~Reconciler() = default;

Reconciler::TargetState& Reconciler::StateFor(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto& slot = states_[key];
  if (!slot) slot = std::make_unique<TargetState>();
  return *slot;
}

void Reconciler::Forget(const std::string& ns, const std::string& name) {
  {
    absl::MutexLock lock(&mu_);
    states_.erase(Key(ns, name));
  }
  if (deps_.board != nullptr) deps_.board->Remove(ns, name);
  deps_.pods->Forget(Key(ns, name));
}

ReconcileResult Reconciler::Reconcile(const std::string& ns, const std::string& name) {
  Pass pass;
  pass.ns = ns;
  pass.name = name;
  pass.key = Key(ns, name);
  pass.now = deps_.clock->Now();
  // Pod changes wake this object an interval from here.
  deps_.pods->NotePassStart(pass.key, pass.now);

  if (auto done = ReadSpec(pass)) return *done;
  if (auto done = ReadTarget(pass)) return *done;
  if (auto done = ReadPods(pass)) return *done;
  const policy::Decision decision = Decide(pass);
  const absl::Status act_status = Act(pass, decision);
  return WriteStatus(pass, decision, act_status);
}

std::optional<ReconcileResult> Reconciler::ReadSpec(Pass& pass) {
  auto obj = deps_.client->Get(kube::kInferenceAutoscalers, pass.ns, pass.name);
  if (!obj.ok()) {
    if (absl::IsNotFound(obj.status())) {
      Forget(pass.ns, pass.name);
      return ReconcileResult{std::nullopt, absl::OkStatus()};
    }
    CountError("read");
    return ReconcileResult{kRetry, obj.status()};
  }
  pass.object = *std::move(obj);
  TargetState& st = StateFor(pass.key);
  pass.st = &st;
  pass.generation = pass.object["metadata"].value("generation", int64_t{0});
  if (!st.status_read) {
    // First pass since this process started (or took over): the status is the memory of the
    // previous leader — its conditions' transition times, the calibration and the arrival
    // history.
    // A damaged field is left out, said once, and costs nothing else.
    std::vector<absl::Status> unreadable;
    st.written = ReadableStatus(pass.object.value("status", nlohmann::json()), unreadable);
    st.status_read = true;
    for (const absl::Status& e : unreadable) {
      Log(pass, LogLevel::kWarning, "status field not read back", {{"error", e}});
      Record(pass, kube::EventType::kWarning, "StatusUnreadable",
             absl::StrCat(e.message(), " (left out; the rest of the status is restored)"));
    }
  }
  pass.next = st.written;
  pass.next.observed_generation = pass.generation;

  const bool had_decider = st.spec.decider != nullptr;
  const absl::Status spec_status = ResolveSpec(pass.object, pass.key, pass.generation,
                                               st.written.calibration, *deps_.deciders, st.spec);
  if (spec_status.ok() && !had_decider) SeedArrivalHistory(pass);
  if (!spec_status.ok()) {
    CountError("spec");
    SetCondition(pass.next, kSpecValid, "False", "InvalidSpec", std::string(spec_status.message()),
                 pass.now, pass.generation);
    SetCondition(pass.next, kScalingActive, "False", "InvalidSpec",
                 "the spec is invalid: nothing is decided or scaled until it is fixed", pass.now,
                 pass.generation);
    if (st.invalid_event_generation != pass.generation) {
      Record(pass, kube::EventType::kWarning, "InvalidSpec", std::string(spec_status.message()));
      st.invalid_event_generation = pass.generation;
    }
    Log(pass, LogLevel::kWarning, "invalid spec", {{"error", spec_status}});
    (void)PatchStatus(pass);
    return ReconcileResult{kInvalidRetry, spec_status};
  }
  SetCondition(pass.next, kSpecValid, "True", "Valid", "", pass.now, pass.generation);
  return std::nullopt;
}

void Reconciler::SeedArrivalHistory(Pass& pass) {
  TargetState& st = *pass.st;
  policy::Decider& decider = *st.spec.decider;
  const state::ArrivalHistory* history = decider.arrival_history();
  if (history == nullptr) return;
  if (st.written.arrival_history.has_value()) {
    absl::StatusOr<state::ArrivalBuckets> saved =
        RestorableArrivals(*st.written.arrival_history, history->retention(), pass.now);
    if (saved.ok()) {
      decider.RestoreArrivals(*saved);
      Log(pass, LogLevel::kInfo, "arrival history restored from status",
          {{"buckets", static_cast<int64_t>(saved->size())},
           {"from", saved->start},
           {"to", saved->end()}});
      return;
    }
    Log(pass, LogLevel::kWarning, "arrival history in status not restored",
        {{"error", saved.status()}});
  }
  const api::MetricsSpec& metrics = pass.spec().metrics;
  if (metrics.source != api::MetricsSourceKind::kPrometheus || !deps_.prometheus_arrivals) return;
  const ArrivalQuery q = ArrivalQueryFor(history->bucket(), history->retention(), pass.now);
  absl::StatusOr<metrics::ArrivalSeries> series =
      deps_.prometheus_arrivals(metrics, q.start, q.step, q.steps);
  if (!series.ok()) {
    // The forecast starts without the days before, as it would with no Prometheus at all.
    CountError("history");
    Log(pass, LogLevel::kWarning, "arrival history not read from Prometheus",
        {{"error", series.status()}});
    return;
  }
  const state::ArrivalBuckets read = ArrivalBucketsOf(*series);
  int64_t observed = 0;
  for (double s : read.observed_s) observed += s > 0;
  decider.RestoreArrivals(read);
  Log(pass, LogLevel::kInfo, "arrival history read from Prometheus",
      {{"buckets", observed},
       {"of", static_cast<int64_t>(read.size())},
       {"from", read.start},
       {"to", read.end()}});
}

std::optional<ReconcileResult> Reconciler::ReadTarget(Pass& pass) {
  const api::InferenceAutoscalerSpec& spec = pass.spec();
  pass.target = ScaleTargetResource(spec.target_ref);
  auto scale = deps_.client->Get(pass.target, pass.ns, spec.target_ref.name, "scale");
  if (!scale.ok()) {
    CountError("scale");
    SetCondition(pass.next, kScalingActive, "False", "FailedGetScale",
                 absl::StrCat("reading ", spec.target_ref.kind, " ", spec.target_ref.name,
                              "/scale: ", scale.status().message()),
                 pass.now, pass.generation);
    (void)PatchStatus(pass);
    return ReconcileResult{kRetry, scale.status()};
  }
  pass.scale = ParseScale(*scale);
  if (spec.mode == api::Mode::kDirect) {
    auto found = OtherAutoscaler(*deps_.client, pass.ns, spec.target_ref);
    if (!found.ok()) {
      CountError("scale");
      SetCondition(pass.next, kScalingActive, "False", "FailedListAutoscalers",
                   std::string(found.status().message()), pass.now, pass.generation);
      (void)PatchStatus(pass);
      return ReconcileResult{kRetry, found.status()};
    }
    pass.other = *found;
  }
  return std::nullopt;
}

std::optional<ReconcileResult> Reconciler::ReadPods(Pass& pass) {
  const api::InferenceAutoscalerSpec& spec = pass.spec();
  TargetState& st = *pass.st;
  if (pass.scale.selector.empty()) {
    // Nothing to watch: a target without a selector has no pods we know.
    deps_.pods->Forget(pass.key);
  } else {
    // From the watch, not a list per pass.
    auto listed =
        deps_.pods->Pods(pass.key, pass.ns, pass.scale.selector, pass.now, spec.metrics.interval);
    if (!listed.ok()) {
      // Pods unknown is not "no pods": decide nothing (so scale nothing) until they are listed.
      CountError("pods");
      SetCondition(pass.next, kMetricsFresh, "False", "FailedListPods",
                   absl::StrCat(listed.status().message(), "; holding (no decision without pods)"),
                   pass.now, pass.generation);
      (void)PatchStatus(pass);
      return ReconcileResult{kRetry, listed.status()};
    }
    pass.pods = ParseListedPods(*listed);
    for (const absl::Status& skipped : pass.pods.skipped) {
      Log(pass, LogLevel::kWarning, "pod skipped", {{"error", skipped}});
    }
  }
  if (!st.source || MetricsSourceOutdated(st.source_spec, spec.metrics)) {
    auto made = deps_.metrics_sources(spec.metrics, "");
    if (!made.ok()) {
      CountError("metrics");
      SetCondition(pass.next, kMetricsFresh, "False", "BadMetricsSource",
                   std::string(made.status().message()), pass.now, pass.generation);
      (void)PatchStatus(pass);
      return ReconcileResult{kInvalidRetry, made.status()};
    }
    st.source = *std::move(made);
    st.source_spec = spec.metrics;
  }
  const std::vector<metrics::PodTarget> targets = ScrapeTargets(pass.pods.pods, spec.metrics);
  if (targets.empty()) return std::nullopt;
  auto results = st.source->Read(targets);
  if (!results.ok()) {
    CountError("metrics");
    pass.source_error = std::string(results.status().message());
    return std::nullopt;
  }
  pass.readings = SplitReadings(*std::move(results));
  // One line when the failing pods (or their errors) change, not one per pod per pass.
  const std::map<std::string, std::string>& failing = pass.readings.failing;
  if (failing != st.unread_pods) {
    if (!failing.empty()) {
      Log(pass, LogLevel::kWarning, "pod metrics unavailable",
          {{"failing", static_cast<int64_t>(failing.size())},
           {"of", static_cast<int64_t>(targets.size())},
           {"pods", DescribeFailing(failing)}});
    } else {
      Log(pass, LogLevel::kInfo, "pod metrics recovered",
          {{"pods", static_cast<int64_t>(st.unread_pods.size())}});
    }
    st.unread_pods = failing;
  }
  return std::nullopt;
}

policy::Decision Reconciler::Decide(Pass& pass) {
  const state::ClusterView view =
      ClusterViewOf(pass.pods.pods, pass.readings.readings, pass.scale.spec_replicas, pass.now);
  return pass.st->spec.decider->Decide(view);
}

absl::Status Reconciler::Act(Pass& pass, const policy::Decision& decision) {
  const api::InferenceAutoscalerSpec& spec = pass.spec();
  TargetState& st = *pass.st;
  const int32_t spec_replicas = pass.scale.spec_replicas;
  pass.current = spec_replicas;
  absl::Status act_status;
  if (spec.mode != api::Mode::kDirect) {
    const char* mode = spec.mode == api::Mode::kRecommend ? "Recommend"
                       : spec.mode == api::Mode::kKeda    ? "KEDA"
                                                          : "HPA";
    SetCondition(pass.next, kScalingActive, "True", mode,
                 spec.mode == api::Mode::kRecommend
                     ? "dry run: the decision is in status.desiredReplicas; nothing is scaled"
                     : "the decision is published for the autoscaler that scales the target",
                 pass.now, pass.generation);
  } else if (!pass.other.empty()) {
    SetCondition(pass.next, kScalingActive, "False", "ConflictingAutoscaler",
                 absl::StrCat(pass.other, " also scales ", spec.target_ref.kind, " ",
                              spec.target_ref.name, ": twinscale reports but does not scale"),
                 pass.now, pass.generation);
    if (st.last_conflict != pass.other) {
      Record(pass, kube::EventType::kWarning, "ConflictingAutoscaler",
             absl::StrCat(pass.other, " also scales ", spec.target_ref.name, "; not scaling"));
    }
  } else {
    if (decision.replicas != spec_replicas) {
      ScaleOrder order;
      order.target = pass.target;
      order.ns = pass.ns;
      order.name = spec.target_ref.name;
      order.read = pass.scale;
      order.replicas = decision.replicas;
      // Scale-in: which pods go (the ReplicaSet honours the marks; other kinds choose their own).
      if (decision.replicas < spec_replicas && pass.target == kube::kDeployments) {
        order.victims =
            policy::ChooseScaleInVictims(VictimCandidatesOf(pass.pods.pods, pass.readings.readings),
                                         spec_replicas - decision.replicas);
        order.marked = pass.pods.marked;
      }
      order.on_write = [&](std::string_view outcome) {
        if (deps_.metrics) {
          deps_.metrics->scale_writes->WithLabels({pass.key, std::string(outcome)}).Increment();
        }
      };
      order.on_mark_failed = [&](const std::string& pod, const absl::Status& error) {
        Log(pass, LogLevel::kWarning, "could not set or clear a scale-in mark",
            {{"pod", pod}, {"error", error}});
      };
      const ScaleWrite written = deps_.actuator->Scale(order);
      pass.current = written.current;
      act_status = written.status;
      if (written.Scaled(decision.replicas)) {
        // The write landed: a scale event for the rate limits (the decision alone is none).
        st.spec.decider->NoteScaled(pass.now, written.base, decision.replicas);
        const bool up = decision.replicas > written.base;
        Record(pass, kube::EventType::kNormal, up ? "ScaledUp" : "ScaledDown",
               absl::StrCat("from ", written.base, " to ", decision.replicas, ": ",
                            ReasonsText(decision)));
        Log(pass, LogLevel::kInfo, "scaled",
            {{"from", written.base}, {"to", decision.replicas}, {"reason", ReasonsText(decision)}});
      }
    }
    if (act_status.ok()) {
      SetCondition(
          pass.next, kScalingActive, "True", "Direct",
          absl::StrCat("twinscale scales ", spec.target_ref.kind, " ", spec.target_ref.name),
          pass.now, pass.generation);
    } else {
      CountError("scale");
      SetCondition(pass.next, kScalingActive, "False", "FailedUpdateScale",
                   std::string(act_status.message()), pass.now, pass.generation);
      Record(pass, kube::EventType::kWarning, "FailedUpdateScale",
             std::string(act_status.message()));
    }
  }
  st.last_conflict = pass.other;
  return act_status;
}

ReconcileResult Reconciler::WriteStatus(Pass& pass, const policy::Decision& decision,
                                        const absl::Status& act_status) {
  const api::InferenceAutoscalerSpec& spec = pass.spec();
  TargetState& st = *pass.st;
  AutoscalerStatus& next = pass.next;
  const state::FleetSnapshot* snap = st.spec.decider->last_snapshot();
  const Freshness freshness = FreshnessOf(snap, pass.pods.pods, pass.readings.readings);
  // Stale inputs, as MetricsFresh reports them: the outputs publish "hold" on them.
  const bool inputs_stale = SetMetricsFresh(next, pass.source_error, freshness,
                                            pass.readings.unread, pass.now, pass.generation);
  // Stale inputs: a Warning event when that begins (or its cause changes), not every pass.
  if (ConditionBegan(st.written, next, kMetricsFresh, "False")) {
    const Condition& c = *next.FindCondition(kMetricsFresh);
    Record(pass, kube::EventType::kWarning, c.reason, c.message);
    Log(pass, LogLevel::kWarning, "metrics stale", {{"reason", c.reason}, {"detail", c.message}});
  }
  SetCondition(next, kSloAtRisk, decision.slo_at_risk ? "True" : "False",
               decision.slo_at_risk ? "ForecastMissesSlo" : "ForecastMeetsSlo",
               decision.slo_at_risk ? ReasonsText(decision) : "", pass.now, pass.generation);
  // Starting pods the policy no longer counts: a Warning event when that begins (or its cause
  // changes), not every pass; the condition carries it from there.
  const std::string stalled = SetPodsStalled(next, decision, pass.now, pass.generation);
  if (ConditionBegan(st.written, next, kPodsStalled, "True")) {
    const Condition& c = *next.FindCondition(kPodsStalled);
    Record(pass, kube::EventType::kWarning, c.reason, stalled);
    Log(pass, LogLevel::kWarning, "starting pods stalled",
        {{"reason", c.reason}, {"detail", stalled}});
  }
  next.current_replicas = pass.current;
  next.desired_replicas = decision.replicas;
  next.admission = decision.admission;
  if (snap != nullptr) next.observed = ObservedOf(*snap);
  if (auto warmup = MeasuredWarmup(pass.pods.pods)) next.measured_warmup = *warmup;
  const policy::CalibrationFactors cal = st.spec.decider->calibration();
  next.calibration =
      AutoscalerStatus::Calibration{cal.prefill_speed, cal.decode_speed, cal.updates,
                                    cal.router_random_share, cal.extra_front_end_seconds};
  if (const state::ArrivalHistory* history = st.spec.decider->arrival_history()) {
    next.arrival_history = ArrivalHistoryStatus(*history, pass.now, st.written.arrival_history);
  }
  next.last_decision =
      AutoscalerStatus::LastDecision{pass.now, decision.replicas, decision.reasons};

  if (deps_.metrics != nullptr) {
    const int32_t spec_replicas = pass.scale.spec_replicas;
    const char* direction = decision.replicas > spec_replicas   ? "up"
                            : decision.replicas < spec_replicas ? "down"
                                                                : "hold";
    deps_.metrics->decisions->WithLabels({pass.key, direction}).Increment();
    deps_.metrics->desired_replicas->WithLabels({pass.key}).Set(decision.replicas);
    deps_.metrics->current_replicas->WithLabels({pass.key}).Set(pass.current);
    deps_.metrics->stale_pods->WithLabels({pass.key}).Set(freshness.readable - freshness.fresh);
    if (auto err = st.spec.decider->last_prediction_error_ms()) {
      deps_.metrics->prediction_error->WithLabels({pass.key}).Set(*err / 1000);
    }
  }
  if (deps_.board != nullptr) {
    outputs::PublishedDecision published;
    published.mode = spec.mode;
    published.desired_replicas = decision.replicas;
    published.current_replicas = pass.current;
    published.inputs_stale = inputs_stale;
    published.admission = decision.admission;
    published.decided_at = pass.now;
    deps_.board->Publish(pass.ns, pass.name, published);
  }
  const absl::Status status_write = PatchStatus(pass);
  if (!act_status.ok()) return {kRetry, act_status};
  return {spec.metrics.interval, status_write};
}

absl::Status Reconciler::PatchStatus(Pass& pass) {
  TargetState& st = *pass.st;
  if (!MeaningfulChange(st.written, pass.next)) return absl::OkStatus();
  auto patched = deps_.client->MergePatch(kube::kInferenceAutoscalers, pass.ns, pass.name,
                                          {{"status", StatusToJson(pass.next)}}, "status");
  if (!patched.ok()) {
    CountError("status");
    Log(pass, LogLevel::kWarning, "status write failed", {{"error", patched.status()}});
    return patched.status();
  }
  st.written = pass.next;
  return absl::OkStatus();
}

void Reconciler::Record(const Pass& pass, kube::EventType type, std::string_view reason,
                        const std::string& message) {
  if (deps_.events == nullptr) return;
  const absl::Status s = deps_.events->Record(RefOf(pass.object), type, reason, message);
  if (!s.ok() && !absl::IsResourceExhausted(s)) {
    Log(pass, LogLevel::kWarning, "event not recorded", {{"reason", reason}, {"error", s}});
  }
}

void Reconciler::Log(const Pass& pass, LogLevel level, std::string_view msg,
                     std::initializer_list<LogField> fields) {
  if (deps_.log != nullptr) deps_.log->Log(level, msg, pass.key, fields);
}

void Reconciler::CountError(const char* stage) {
  if (deps_.metrics != nullptr) deps_.metrics->errors->WithLabels({stage}).Increment();
}

}  // namespace twinscale::reconcile
