// One reconcile pass over one InferenceAutoscaler: see reconciler.h.
#include "controller/reconcile/reconciler.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "controller/common/json_log.h"
#include "controller/kube/api_errors.h"
#include "controller/kube/event_recorder.h"
#include "controller/kube/kube_client.h"
#include "controller/kube/resource_ref.h"
#include "controller/outputs/decision_board.h"
#include "controller/policy/spec_loader.h"
#include "controller/reconcile/controller_metrics.h"
#include "controller/reconcile/kube_pod.h"
#include "controller/reconcile/pod_informers.h"
#include "nlohmann/json.hpp"

namespace twinscale::reconcile {

using Stage = state::PodView::Stage;

struct Reconciler::TargetState {
  int64_t generation = -1;                    // of the spec the decider was built for
  std::optional<policy::InferenceAutoscalerSpec> spec;
  std::unique_ptr<policy::Decider> decider;
  std::unique_ptr<metrics::MetricsSource> source;
  std::optional<policy::MetricsSpec> source_spec;
  AutoscalerStatus written;                   // the status as last written (or read at start)
  bool status_read = false;                   // `written` holds what the object had at start
  int64_t invalid_event_generation = -1;      // the generation an InvalidSpec event was sent for
  std::string last_conflict;                  // the other autoscaler last reported
  // The pods whose metrics the last read could not get, with why: the log says when this
  // changes, not every pass.
  std::map<std::string, std::string> unread_pods;
};

namespace {

constexpr char kDeletionCost[] = "controller.kubernetes.io/pod-deletion-cost";
constexpr char kVictimCost[] = "-1000";  // the value twinscale marks its scale-in victims with
const absl::Duration kRetry = absl::Seconds(10);         // after a failed read of the target
const absl::Duration kInvalidRetry = absl::Minutes(5);   // an invalid spec waits for an edit

std::string Key(const std::string& ns, const std::string& name) { return absl::StrCat(ns, "/", name); }

// The /scale-bearing resource a targetRef names: the two apps/v1 kinds by name, anything else as
// group/version and the lower-case plural of its kind (LeaderWorkerSet -> leaderworkersets).
kube::ResourceRef ScaleTargetResource(const policy::TargetRef& t) {
  if (t.api_version == "apps/v1" && t.kind == "Deployment") return kube::kDeployments;
  if (t.api_version == "apps/v1" && t.kind == "StatefulSet") return kube::kStatefulSets;
  std::vector<std::string> gv = absl::StrSplit(t.api_version, absl::MaxSplits('/', 1));
  kube::ResourceRef ref;
  if (gv.size() == 2) {
    ref.group = gv[0];
    ref.version = gv[1];
  } else {
    ref.version = gv[0];
  }
  ref.resource = absl::StrCat(absl::AsciiStrToLower(t.kind), "s");
  ref.namespaced = true;
  return ref;
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

std::string ReasonsText(const policy::Decision& d) {
  std::vector<std::string> parts;
  for (const policy::Reason& r : d.reasons) {
    parts.push_back(r.message.empty() ? r.code : absl::StrCat(r.code, ": ", r.message));
  }
  return absl::StrJoin(parts, "; ");
}

// Another autoscaler of the same target in the namespace ("HorizontalPodAutoscaler x"), or "".
// A resource the cluster doesn't serve (no KEDA installed: 404) means no such autoscaler.
absl::StatusOr<std::string> OtherAutoscaler(kube::KubeClient& client, const std::string& ns,
                                            const policy::TargetRef& target) {
  auto hpas = client.List(kube::kHorizontalPodAutoscalers, ns);
  if (!hpas.ok() && !absl::IsNotFound(hpas.status())) return hpas.status();
  if (hpas.ok()) {
    for (const nlohmann::json& h : hpas->items) {
      const nlohmann::json ref = h.value("spec", nlohmann::json::object())
                                     .value("scaleTargetRef", nlohmann::json::object());
      if (ref.value("kind", "") == target.kind && ref.value("name", "") == target.name) {
        return absl::StrCat("HorizontalPodAutoscaler ", h["metadata"].value("name", ""));
      }
    }
  }
  auto scaled = client.List(kube::kScaledObjects, ns);
  if (!scaled.ok() && !absl::IsNotFound(scaled.status())) return scaled.status();
  if (scaled.ok()) {
    for (const nlohmann::json& s : scaled->items) {
      const nlohmann::json ref = s.value("spec", nlohmann::json::object())
                                     .value("scaleTargetRef", nlohmann::json::object());
      // KEDA's scaleTargetRef.kind defaults to Deployment.
      if (ref.value("kind", "Deployment") == target.kind && ref.value("name", "") == target.name) {
        return absl::StrCat("ScaledObject ", s["metadata"].value("name", ""));
      }
    }
  }
  return std::string();
}

}  // namespace

std::vector<std::string> ChooseScaleInVictims(std::vector<VictimCandidate> pods, int32_t count) {
  std::sort(pods.begin(), pods.end(), [](const VictimCandidate& a, const VictimCandidate& b) {
    if (a.ready != b.ready) return !a.ready;                  // not Ready first
    if (!a.ready) {
      if (a.created != b.created) return a.created > b.created;  // newest first
      return a.name < b.name;
    }
    if (a.in_flight.has_value() != b.in_flight.has_value()) return a.in_flight.has_value();
    if (a.in_flight.has_value() && *a.in_flight != *b.in_flight) return *a.in_flight < *b.in_flight;
    // Equally loaded: the newest, as the ReplicaSet controller itself prefers among otherwise
    // equal pods, so a mark it can't honour (a target that ignores the deletion cost) and the
    // pod it removes agree.
    if (a.created != b.created) return a.created > b.created;
    return a.name < b.name;
  });
  std::vector<std::string> out;
  for (int32_t i = 0; i < count && i < static_cast<int32_t>(pods.size()); ++i) {
    out.push_back(pods[i].name);
  }
  return out;
}

Reconciler::Reconciler(ReconcilerDeps deps) : deps_(std::move(deps)) {}
Reconciler::~Reconciler() = default;

Reconciler::TargetState& Reconciler::StateFor(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = states_[key];
  if (!slot) slot = std::make_unique<TargetState>();
  return *slot;
}

void Reconciler::Forget(const std::string& ns, const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    states_.erase(Key(ns, name));
  }
  if (deps_.board != nullptr) deps_.board->Remove(ns, name);
  deps_.pods->Forget(Key(ns, name));
}

ReconcileResult Reconciler::Reconcile(const std::string& ns, const std::string& name) {
  const std::string key = Key(ns, name);
  kube::KubeClient& client = *deps_.client;
  const absl::Time now = deps_.clock->Now();
  auto log = [&](LogLevel level, std::string_view msg, std::initializer_list<LogField> fields) {
    if (deps_.log != nullptr) deps_.log->Log(level, msg, key, fields);
  };
  auto count_error = [&](const char* stage) {
    if (deps_.metrics != nullptr) deps_.metrics->errors->WithLabels({stage}).Increment();
  };
  deps_.pods->NotePassStart(key, now);  // pod changes wake this object an interval from here

  // 1. The object and its spec.
  auto obj = client.Get(kube::kInferenceAutoscalers, ns, name);
  if (!obj.ok()) {
    if (absl::IsNotFound(obj.status())) {
      Forget(ns, name);
      return {std::nullopt, absl::OkStatus()};
    }
    count_error("read");
    return {kRetry, obj.status()};
  }
  TargetState& st = StateFor(key);
  const int64_t generation = (*obj)["metadata"].value("generation", int64_t{0});
  if (!st.status_read) {
    // First pass since this process started (or took over): the status is the memory of the
    // previous leader — its conditions' transition times and the calibration.
    auto previous = StatusFromJson(obj->value("status", nlohmann::json()));
    if (previous.ok()) st.written = *std::move(previous);
    st.status_read = true;
  }
  AutoscalerStatus next = st.written;
  next.observed_generation = generation;

  auto write_status = [&]() -> absl::Status {
    if (!MeaningfulChange(st.written, next)) return absl::OkStatus();
    auto patched = client.MergePatch(kube::kInferenceAutoscalers, ns, name,
                                     {{"status", StatusToJson(next)}}, "status");
    if (!patched.ok()) {
      count_error("status");
      log(LogLevel::kWarning, "status write failed", {{"error", patched.status()}});
      return patched.status();
    }
    st.written = next;
    return absl::OkStatus();
  };
  auto record = [&](kube::EventType type, std::string_view reason, const std::string& message) {
    if (deps_.events == nullptr) return;
    const absl::Status s = deps_.events->Record(RefOf(*obj), type, reason, message);
    if (!s.ok() && !absl::IsResourceExhausted(s)) {
      log(LogLevel::kWarning, "event not recorded", {{"reason", reason}, {"error", s}});
    }
  };

  absl::StatusOr<policy::InferenceAutoscaler> parsed =
      policy::ParseInferenceAutoscaler(obj->dump(), absl::StrCat("InferenceAutoscaler ", key));
  absl::Status spec_status = parsed.ok() ? absl::OkStatus() : parsed.status();
  if (spec_status.ok() && (st.decider == nullptr || st.generation != generation)) {
    if (st.decider == nullptr) {
      auto made = deps_.deciders->Create(parsed->spec);
      if (made.ok()) {
        st.decider = *std::move(made);
        if (st.written.calibration.has_value()) {
          st.decider->RestoreCalibration({st.written.calibration->prefill_speed,
                                          st.written.calibration->decode_speed,
                                          st.written.calibration->updates});
        }
      } else {
        spec_status = made.status();
      }
    } else {
      spec_status = deps_.deciders->Reconfigure(parsed->spec, *st.decider);
    }
    if (spec_status.ok()) {
      st.generation = generation;
      st.spec = parsed->spec;
    }
  }
  if (!spec_status.ok()) {
    count_error("spec");
    SetCondition(next, kSpecValid, "False", "InvalidSpec", std::string(spec_status.message()), now,
                 generation);
    SetCondition(next, kScalingActive, "False", "InvalidSpec",
                 "the spec is invalid: nothing is decided or scaled until it is fixed", now,
                 generation);
    if (st.invalid_event_generation != generation) {
      record(kube::EventType::kWarning, "InvalidSpec", std::string(spec_status.message()));
      st.invalid_event_generation = generation;
    }
    log(LogLevel::kWarning, "invalid spec", {{"error", spec_status}});
    (void)write_status();
    return {kInvalidRetry, spec_status};
  }
  SetCondition(next, kSpecValid, "True", "Valid", "", now, generation);
  const policy::InferenceAutoscalerSpec& spec = *st.spec;
  const absl::Duration interval = spec.metrics.interval;

  // 2. The target's /scale, and whether another autoscaler drives it.
  const kube::ResourceRef target = ScaleTargetResource(spec.target_ref);
  auto scale = client.Get(target, ns, spec.target_ref.name, "scale");
  if (!scale.ok()) {
    count_error("scale");
    SetCondition(next, kScalingActive, "False", "FailedGetScale",
                 absl::StrCat("reading ", spec.target_ref.kind, " ", spec.target_ref.name,
                              "/scale: ", scale.status().message()),
                 now, generation);
    (void)write_status();
    return {kRetry, scale.status()};
  }
  const int32_t spec_replicas = (*scale)["spec"].value("replicas", 0);
  const std::string selector =
      (*scale).value("status", nlohmann::json::object()).value("selector", "");
  std::string other;
  if (spec.mode == policy::Mode::kDirect) {
    auto found = OtherAutoscaler(client, ns, spec.target_ref);
    if (!found.ok()) {
      count_error("scale");
      SetCondition(next, kScalingActive, "False", "FailedListAutoscalers",
                   std::string(found.status().message()), now, generation);
      (void)write_status();
      return {kRetry, found.status()};
    }
    other = *found;
  }

  // 3. Pods (from the watch, not a list per pass) and their metrics.
  std::vector<KubePod> pods;
  std::set<std::string> marked;  // pods carrying twinscale's victim mark (kVictimCost)
  if (selector.empty()) {
    deps_.pods->Forget(key);  // nothing to watch: a target without a selector has no pods we know
  } else {
    auto listed = deps_.pods->Pods(key, ns, selector, now, interval);
    if (!listed.ok()) {
      // Pods unknown is not "no pods": decide nothing (so scale nothing) until they are listed.
      count_error("pods");
      SetCondition(next, kMetricsFresh, "False", "FailedListPods",
                   absl::StrCat(listed.status().message(), "; holding (no decision without pods)"),
                   now, generation);
      (void)write_status();
      return {kRetry, listed.status()};
    }
    for (const nlohmann::json& p : *listed) {
      const nlohmann::json annotations = p.value("metadata", nlohmann::json::object())
                                             .value("annotations", nlohmann::json::object());
      if (annotations.value(kDeletionCost, "") == kVictimCost) {
        marked.insert(p["metadata"].value("name", ""));
      }
      auto pod = ParseKubePod(p);
      if (pod.ok()) {
        pods.push_back(*std::move(pod));
      } else {
        log(LogLevel::kWarning, "pod skipped", {{"error", pod.status()}});
      }
    }
  }
  if (!st.source || st.source_spec.has_value() == false ||
      st.source_spec->source != spec.metrics.source || st.source_spec->port != spec.metrics.port ||
      st.source_spec->path != spec.metrics.path ||
      st.source_spec->stale_after != spec.metrics.stale_after ||
      (spec.metrics.prometheus.has_value() !=
       st.source_spec->prometheus.has_value()) ||
      (spec.metrics.prometheus.has_value() &&
       (spec.metrics.prometheus->url != st.source_spec->prometheus->url ||
        spec.metrics.prometheus->label_matchers != st.source_spec->prometheus->label_matchers))) {
    auto made = deps_.metrics_sources(spec.metrics, "");
    if (!made.ok()) {
      count_error("metrics");
      SetCondition(next, kMetricsFresh, "False", "BadMetricsSource",
                   std::string(made.status().message()), now, generation);
      (void)write_status();
      return {kInvalidRetry, made.status()};
    }
    st.source = *std::move(made);
    st.source_spec = spec.metrics;
  }
  std::vector<metrics::PodTarget> targets;
  for (const KubePod& p : pods) {
    // Only a started server answers /metrics; a pod without an address can't be asked.
    if (p.ip.empty() || p.stage == Stage::kPending) continue;
    targets.push_back({p.name, p.ip, spec.metrics.port, spec.metrics.path});
  }
  std::map<std::string, metrics::PodReading> readings;
  std::string source_error;
  int32_t unread = 0;
  if (!targets.empty()) {
    auto results = st.source->Read(targets);
    if (!results.ok()) {
      count_error("metrics");
      source_error = std::string(results.status().message());
    } else {
      std::map<std::string, std::string> failing;
      for (metrics::PodResult& r : *results) {
        if (r.reading.ok()) {
          readings.emplace(r.pod, *std::move(r.reading));
        } else {
          ++unread;
          failing.emplace(r.pod, std::string(r.reading.status().message()));
        }
      }
      // One line when the failing pods (or their errors) change, not one per pod per pass.
      if (failing != st.unread_pods) {
        if (!failing.empty()) {
          constexpr size_t kNamed = 3;
          std::vector<std::string> named;
          for (const auto& [pod, error] : failing) {
            if (named.size() == kNamed) break;
            named.push_back(absl::StrCat(pod, ": ", error));
          }
          std::string pods = absl::StrJoin(named, "; ");
          if (failing.size() > kNamed) {
            absl::StrAppend(&pods, "; and ", failing.size() - kNamed, " more");
          }
          log(LogLevel::kWarning, "pod metrics unavailable",
              {{"failing", static_cast<int64_t>(failing.size())},
               {"of", static_cast<int64_t>(targets.size())},
               {"pods", pods}});
        } else {
          log(LogLevel::kInfo, "pod metrics recovered",
              {{"pods", static_cast<int64_t>(st.unread_pods.size())}});
        }
        st.unread_pods = std::move(failing);
      }
    }
  }

  // 4. Decide.
  state::ClusterView view;
  view.now = now;
  view.spec_replicas = spec_replicas;
  std::vector<absl::Duration> warmups;
  for (const KubePod& p : pods) {
    state::PodView v;
    v.name = p.name;
    v.stage = p.stage;
    v.age = now - p.created;
    v.ready_for = (p.stage == Stage::kReady && p.ready_since) ? now - *p.ready_since
                                                              : absl::ZeroDuration();
    v.unschedulable = p.unschedulable;
    v.engine_args = p.engine_args;
    v.engine_args_error = p.engine_args_error;
    if (auto it = readings.find(p.name); it != readings.end()) {
      v.scrape_ok = true;
      v.scraped_at = it->second.scraped_at;
      v.observation = it->second.observation;
    }
    if (p.ready_since.has_value() && *p.ready_since >= p.created) {
      warmups.push_back(*p.ready_since - p.created);
    }
    view.pods.push_back(std::move(v));
  }
  policy::Decision decision = st.decider->Decide(view);

  // 5. Act.
  int32_t current = spec_replicas;
  absl::Status act_status;
  const bool direct = spec.mode == policy::Mode::kDirect;
  if (direct && !other.empty()) {
    SetCondition(next, kScalingActive, "False", "ConflictingAutoscaler",
                 absl::StrCat(other, " also scales ", spec.target_ref.kind, " ",
                              spec.target_ref.name, ": twinscale reports but does not scale"),
                 now, generation);
    if (st.last_conflict != other) {
      record(kube::EventType::kWarning, "ConflictingAutoscaler",
             absl::StrCat(other, " also scales ", spec.target_ref.name, "; not scaling"));
    }
  } else if (direct) {
    if (decision.replicas != spec_replicas) {
      // Scale-in: tell the ReplicaSet which pods to remove (lowest deletion cost goes first).
      if (decision.replicas < spec_replicas && target == kube::kDeployments) {
        std::vector<VictimCandidate> cands;
        for (const KubePod& p : pods) {
          if (p.stage == Stage::kTerminating) continue;
          VictimCandidate c{p.name, p.stage == Stage::kReady, p.created, std::nullopt};
          if (auto it = readings.find(p.name); it != readings.end()) {
            double load = 0;
            for (const auto& e : it->second.observation.engines) {
              load += e.running.value_or(0) + e.waiting.value_or(0);
            }
            c.in_flight = load;
          }
          cands.push_back(std::move(c));
        }
        const std::vector<std::string> victims =
            ChooseScaleInVictims(std::move(cands), spec_replicas - decision.replicas);
        // Only this scale-in's victims keep the mark: one left from an earlier scale-in that
        // removed nothing (a failed write, a scale-up since) would tie with them at -1000.
        for (const std::string& pod : marked) {
          if (std::find(victims.begin(), victims.end(), pod) != victims.end()) continue;
          auto cleared = client.MergePatch(
              kube::kPods, ns, pod, {{"metadata", {{"annotations", {{kDeletionCost, nullptr}}}}}});
          if (!cleared.ok() && !absl::IsNotFound(cleared.status())) {
            log(LogLevel::kWarning, "could not clear a stale scale-in mark",
                {{"pod", pod}, {"error", cleared.status()}});
          }
        }
        for (const std::string& victim : victims) {
          if (marked.count(victim) != 0) continue;  // already marked
          auto patched = client.MergePatch(
              kube::kPods, ns, victim,
              {{"metadata", {{"annotations", {{kDeletionCost, kVictimCost}}}}}});
          if (!patched.ok() && !absl::IsNotFound(patched.status())) {
            log(LogLevel::kWarning, "could not mark scale-in victim",
                {{"pod", victim}, {"error", patched.status()}});
          }
        }
      }
      std::string rv = (*scale)["metadata"].value("resourceVersion", "");
      int32_t base = spec_replicas;
      for (int attempt = 0; attempt < 4; ++attempt) {
        nlohmann::json patch = {{"spec", {{"replicas", decision.replicas}}}};
        if (!rv.empty()) patch["metadata"] = {{"resourceVersion", rv}};
        auto written = client.MergePatch(target, ns, spec.target_ref.name, patch, "scale");
        if (written.ok()) {
          current = decision.replicas;
          act_status = absl::OkStatus();
          if (deps_.metrics) deps_.metrics->scale_writes->WithLabels({key, "ok"}).Increment();
          break;
        }
        act_status = written.status();
        if (!kube::IsConflict(written.status())) {
          if (deps_.metrics) deps_.metrics->scale_writes->WithLabels({key, "error"}).Increment();
          break;
        }
        if (deps_.metrics) deps_.metrics->scale_writes->WithLabels({key, "conflict"}).Increment();
        // Someone wrote /scale since we read it: read it again and re-apply the decision.
        auto again = client.Get(target, ns, spec.target_ref.name, "scale");
        if (!again.ok()) {
          act_status = again.status();
          break;
        }
        rv = (*again)["metadata"].value("resourceVersion", "");
        base = (*again)["spec"].value("replicas", 0);
        if (base == decision.replicas) {
          current = base;
          act_status = absl::OkStatus();
          break;
        }
      }
      if (act_status.ok() && current == decision.replicas && base != decision.replicas) {
        // The write landed: a scale event for the rate limits (the decision alone is none).
        st.decider->NoteScaled(now, base, decision.replicas);
        const bool up = decision.replicas > base;
        record(kube::EventType::kNormal, up ? "ScaledUp" : "ScaledDown",
               absl::StrCat("from ", base, " to ", decision.replicas, ": ", ReasonsText(decision)));
        log(LogLevel::kInfo, "scaled",
            {{"from", base}, {"to", decision.replicas}, {"reason", ReasonsText(decision)}});
      }
    }
    if (act_status.ok()) {
      SetCondition(next, kScalingActive, "True", "Direct",
                   absl::StrCat("twinscale scales ", spec.target_ref.kind, " ", spec.target_ref.name),
                   now, generation);
    } else {
      count_error("scale");
      SetCondition(next, kScalingActive, "False", "FailedUpdateScale",
                   std::string(act_status.message()), now, generation);
      record(kube::EventType::kWarning, "FailedUpdateScale", std::string(act_status.message()));
    }
  } else {
    const char* mode = spec.mode == policy::Mode::kRecommend ? "Recommend"
                       : spec.mode == policy::Mode::kKeda    ? "KEDA"
                                                             : "HPA";
    SetCondition(next, kScalingActive, "True", mode,
                 spec.mode == policy::Mode::kRecommend
                     ? "dry run: the decision is in status.desiredReplicas; nothing is scaled"
                     : "the decision is published for the autoscaler that scales the target",
                 now, generation);
  }
  st.last_conflict = other;

  // 6. Status.
  const state::FleetSnapshot* snap = st.decider->last_snapshot();
  // Freshness as the policy judges it (staleAfter) when it built a snapshot; else by the reads.
  int32_t fresh = 0, readable = 0;
  if (snap != nullptr) {
    for (const state::ReplicaState& r : snap->replicas) {
      if (r.stage == Stage::kReady) {
        ++readable;
        if (r.fresh) ++fresh;
      }
    }
  } else {
    for (const KubePod& p : pods) {
      if (p.stage != Stage::kReady) continue;
      ++readable;
      if (readings.count(p.name) != 0) ++fresh;
    }
  }
  // Stale inputs, as MetricsFresh reports them: the outputs publish "hold" on them.
  const bool inputs_stale = !source_error.empty() || (readable > 0 && fresh == 0);
  if (!source_error.empty()) {
    SetCondition(next, kMetricsFresh, "False", "MetricsSourceFailed",
                 absl::StrCat(source_error, "; holding (no scale-in on stale data)"), now, generation);
  } else if (readable > 0 && fresh == 0) {
    SetCondition(next, kMetricsFresh, "False", "ScrapesStale",
                 absl::StrCat("no Ready pod's metrics are fresh (", unread,
                              " reads failed); holding (no scale-in on stale data)"),
                 now, generation);
  } else {
    SetCondition(next, kMetricsFresh, "True", "Fresh",
                 absl::StrCat(fresh, " of ", readable, " Ready pods read fresh"), now, generation);
  }
  // Stale inputs: a Warning event when that begins (or its cause changes), not every pass.
  if (const Condition* c = next.FindCondition(kMetricsFresh); c != nullptr && inputs_stale) {
    const Condition* before = st.written.FindCondition(kMetricsFresh);
    if (before == nullptr || before->status != "False" || before->reason != c->reason) {
      record(kube::EventType::kWarning, c->reason, c->message);
      log(LogLevel::kWarning, "metrics stale", {{"reason", c->reason}, {"detail", c->message}});
    }
  }
  SetCondition(next, kSloAtRisk, decision.slo_at_risk ? "True" : "False",
               decision.slo_at_risk ? "ForecastMissesSlo" : "ForecastMeetsSlo",
               decision.slo_at_risk ? ReasonsText(decision) : "", now, generation);
  // Starting pods the policy no longer counts: a Warning event when that begins (or its cause
  // changes), not every pass; the condition carries it from there.
  const std::string stalled = SetPodsStalled(next, decision, now, generation);
  if (const Condition* c = next.FindCondition(kPodsStalled); c != nullptr && c->status == "True") {
    const Condition* before = st.written.FindCondition(kPodsStalled);
    if (before == nullptr || before->status != "True" || before->reason != c->reason) {
      record(kube::EventType::kWarning, c->reason, stalled);
      log(LogLevel::kWarning, "starting pods stalled",
          {{"reason", c->reason}, {"detail", stalled}});
    }
  }
  next.current_replicas = current;
  next.desired_replicas = decision.replicas;
  next.admission = decision.admission;
  if (snap != nullptr) {
    AutoscalerStatus::Observed o;
    int32_t ready = 0;
    double waiting = 0;
    for (const state::ReplicaState& r : snap->replicas) {
      if (r.stage == Stage::kReady && r.fresh) {
        ++ready;
        waiting += r.waiting;
      }
    }
    if (ready > 0) {
      o.queue_depth_per_replica = waiting / ready;
      o.kv_cache_utilization = snap->workload.kv_usage_mean;
    }
    if (snap->workload.arrival_rate.kind() == state::Input<double>::Kind::kValue) {
      o.arrival_rate = snap->workload.arrival_rate.value();
    }
    if (snap->workload.ttft_p90_seconds.kind() == state::Input<double>::Kind::kValue) {
      o.ttft_p90 = absl::Milliseconds(std::round(1000 * snap->workload.ttft_p90_seconds.value()));
    }
    next.observed = o;
  }
  if (!warmups.empty()) {
    std::sort(warmups.begin(), warmups.end());
    next.measured_warmup = warmups[warmups.size() / 2];
  }
  const policy::CalibrationFactors cal = st.decider->calibration();
  next.calibration = AutoscalerStatus::Calibration{cal.prefill_speed, cal.decode_speed, cal.updates};
  next.last_decision = AutoscalerStatus::LastDecision{now, decision.replicas, decision.reasons};

  if (deps_.metrics != nullptr) {
    const char* direction = decision.replicas > spec_replicas   ? "up"
                            : decision.replicas < spec_replicas ? "down"
                                                                : "hold";
    deps_.metrics->decisions->WithLabels({key, direction}).Increment();
    deps_.metrics->desired_replicas->WithLabels({key}).Set(decision.replicas);
    deps_.metrics->current_replicas->WithLabels({key}).Set(current);
    deps_.metrics->stale_pods->WithLabels({key}).Set(readable - fresh);
    if (auto err = st.decider->last_prediction_error_ms()) {
      deps_.metrics->prediction_error->WithLabels({key}).Set(*err / 1000);
    }
  }
  if (deps_.board != nullptr) {
    outputs::PublishedDecision published;
    published.mode = spec.mode;
    published.desired_replicas = decision.replicas;
    published.current_replicas = current;
    published.inputs_stale = inputs_stale;
    published.admission = decision.admission;
    published.decided_at = now;
    deps_.board->Publish(ns, name, published);
  }
  const absl::Status status_write = write_status();
  if (!act_status.ok()) return {kRetry, act_status};
  return {interval, status_write};
}

}  // namespace twinscale::reconcile
