// The rules of a reconcile pass's steps: see reconcile_steps.h.
#include "controller/reconcile/reconcile_steps.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "controller/api/spec_loader.h"
#include "controller/kube/api_errors.h"
#include "controller/kube/kube_client.h"
#include "controller/kube/kube_time.h"
#include "controller/state/arrival_history_codec.h"
#include "nlohmann/json.hpp"

namespace twinscale::reconcile {

using Stage = state::PodView::Stage;

absl::Status ResolveSpec(const nlohmann::json& object, const std::string& key, int64_t generation,
                         const std::optional<AutoscalerStatus::Calibration>& calibration,
                         policy::DeciderFactory& factory, SpecState& state) {
  absl::StatusOr<api::InferenceAutoscaler> parsed =
      api::ParseInferenceAutoscaler(object.dump(), absl::StrCat("InferenceAutoscaler ", key));
  if (!parsed.ok()) return parsed.status();
  if (state.decider != nullptr && state.generation == generation) return absl::OkStatus();
  if (state.decider == nullptr) {
    auto made = factory.Create(parsed->spec);
    if (!made.ok()) return made.status();
    state.decider = *std::move(made);
    if (calibration.has_value()) {
      state.decider->RestoreCalibration({calibration->prefill_speed, calibration->decode_speed,
                                         calibration->updates, calibration->router_random_share,
                                         calibration->extra_front_end_seconds});
    }
  } else if (absl::Status s = factory.Reconfigure(parsed->spec, *state.decider); !s.ok()) {
    return s;
  }
  state.generation = generation;
  state.spec = parsed->spec;
  return absl::OkStatus();
}

absl::StatusOr<state::ArrivalBuckets> RestorableArrivals(
    const AutoscalerStatus::ArrivalHistory& saved, absl::Duration retention, absl::Time now) {
  absl::StatusOr<state::ArrivalBuckets> b =
      state::DecodeArrivalBuckets(saved.bucket, saved.start, saved.data);
  if (!b.ok()) return b.status();
  if (b->end() < now - retention) {
    return absl::FailedPreconditionError(
        absl::StrCat("the arrival history in status ends at ", kube::FormatKubeTime(b->end()),
                     ", more than ", absl::FormatDuration(retention), " ago"));
  }
  if (b->end() > now) {
    return absl::FailedPreconditionError(
        absl::StrCat("the arrival history in status ends at ", kube::FormatKubeTime(b->end()),
                     ", after now (", kube::FormatKubeTime(now), ")"));
  }
  return b;
}

ArrivalQuery ArrivalQueryFor(absl::Duration bucket, absl::Duration retention, absl::Time now) {
  ArrivalQuery q;
  q.step = bucket;
  const absl::Time end = absl::UnixEpoch() + absl::Floor(now - absl::UnixEpoch(), bucket);
  absl::Duration rest;
  q.steps = absl::IDivDuration(retention, bucket, &rest);
  q.start = end - bucket * q.steps;
  return q;
}

state::ArrivalBuckets ArrivalBucketsOf(const metrics::ArrivalSeries& series) {
  state::ArrivalBuckets b;
  b.bucket = series.step;
  b.start = series.start;
  b.arrivals = series.arrivals;
  for (size_t i = 0; i < series.arrivals.size(); ++i) {
    const bool observed = i < series.observed.size() && series.observed[i];
    b.observed_s.push_back(observed ? absl::ToDoubleSeconds(series.step) : 0.0);
  }
  return b;
}

kube::ResourceRef ScaleTargetResource(const api::TargetRef& target) {
  if (target.api_version == "apps/v1" && target.kind == "Deployment") return kube::kDeployments;
  if (target.api_version == "apps/v1" && target.kind == "StatefulSet") return kube::kStatefulSets;
  std::vector<std::string> gv = absl::StrSplit(target.api_version, absl::MaxSplits('/', 1));
  kube::ResourceRef ref;
  if (gv.size() == 2) {
    ref.group = gv[0];
    ref.version = gv[1];
  } else {
    ref.version = gv[0];
  }
  ref.resource = absl::StrCat(absl::AsciiStrToLower(target.kind), "s");
  ref.namespaced = true;
  return ref;
}

ScaleRead ParseScale(const nlohmann::json& scale) {
  ScaleRead read;
  read.spec_replicas = scale.at("spec").value("replicas", 0);
  read.selector = scale.value("status", nlohmann::json::object()).value("selector", "");
  read.resource_version =
      scale.value("metadata", nlohmann::json::object()).value("resourceVersion", "");
  return read;
}

absl::StatusOr<std::string> OtherAutoscaler(kube::KubeClient& client, const std::string& ns,
                                            const api::TargetRef& target) {
  // The scaleTargetRef of one autoscaler object names `target`; KEDA's kind defaults to
  // Deployment, the HPA's is required.
  auto names_target = [&](const nlohmann::json& obj, const char* default_kind) {
    const nlohmann::json ref = obj.value("spec", nlohmann::json::object())
                                   .value("scaleTargetRef", nlohmann::json::object());
    return ref.value("kind", default_kind) == target.kind && ref.value("name", "") == target.name;
  };
  auto hpas = client.List(kube::kHorizontalPodAutoscalers, ns);
  if (!hpas.ok() && !absl::IsNotFound(hpas.status())) return hpas.status();
  if (hpas.ok()) {
    for (const nlohmann::json& h : hpas->items) {
      if (names_target(h, "")) {
        return absl::StrCat("HorizontalPodAutoscaler ", h.at("metadata").value("name", ""));
      }
    }
  }
  auto scaled = client.List(kube::kScaledObjects, ns);
  if (!scaled.ok() && !absl::IsNotFound(scaled.status())) return scaled.status();
  if (scaled.ok()) {
    for (const nlohmann::json& s : scaled->items) {
      if (names_target(s, "Deployment")) {
        return absl::StrCat("ScaledObject ", s.at("metadata").value("name", ""));
      }
    }
  }
  return std::string();
}

ListedPods ParseListedPods(const std::vector<nlohmann::json>& listed) {
  ListedPods out;
  for (const nlohmann::json& p : listed) {
    const nlohmann::json metadata = p.value("metadata", nlohmann::json::object());
    const nlohmann::json annotations = metadata.value("annotations", nlohmann::json::object());
    if (annotations.value(kDeletionCost, "") == kVictimCost) {
      out.marked.insert(metadata.value("name", ""));
    }
    auto pod = ParseKubePod(p);
    if (pod.ok()) {
      out.pods.push_back(*std::move(pod));
    } else {
      out.skipped.push_back(pod.status());
    }
  }
  return out;
}

bool MetricsSourceOutdated(const std::optional<api::MetricsSpec>& built_for,
                           const api::MetricsSpec& wanted) {
  if (!built_for.has_value()) return true;
  if (built_for->source != wanted.source || built_for->port != wanted.port ||
      built_for->path != wanted.path || built_for->stale_after != wanted.stale_after) {
    return true;
  }
  if (built_for->prometheus.has_value() != wanted.prometheus.has_value()) return true;
  return wanted.prometheus.has_value() &&
         (wanted.prometheus->url != built_for->prometheus->url ||
          wanted.prometheus->label_matchers != built_for->prometheus->label_matchers);
}

std::vector<metrics::PodTarget> ScrapeTargets(const std::vector<KubePod>& pods,
                                              const api::MetricsSpec& spec) {
  std::vector<metrics::PodTarget> targets;
  for (const KubePod& p : pods) {
    // Only a started server answers /metrics; a pod without an address can't be asked.
    if (p.ip.empty() || p.stage == Stage::kPending) continue;
    targets.push_back({p.name, p.ip, spec.port, spec.path});
  }
  return targets;
}

PodReadings SplitReadings(std::vector<metrics::PodResult> results) {
  PodReadings out;
  for (metrics::PodResult& r : results) {
    if (r.reading.ok()) {
      out.readings.emplace(r.pod, *std::move(r.reading));
    } else {
      ++out.unread;
      out.failing.emplace(r.pod, std::string(r.reading.status().message()));
    }
  }
  return out;
}

std::string DescribeFailing(const std::map<std::string, std::string>& failing) {
  constexpr size_t kNamed = 3;
  std::vector<std::string> named;
  for (const auto& [pod, error] : failing) {
    if (named.size() == kNamed) break;
    named.push_back(absl::StrCat(pod, ": ", error));
  }
  std::string text = absl::StrJoin(named, "; ");
  if (failing.size() > kNamed) absl::StrAppend(&text, "; and ", failing.size() - kNamed, " more");
  return text;
}

state::ClusterView ClusterViewOf(const std::vector<KubePod>& pods,
                                 const std::map<std::string, metrics::PodReading>& readings,
                                 int32_t spec_replicas, absl::Time now) {
  state::ClusterView view;
  view.now = now;
  view.spec_replicas = spec_replicas;
  for (const KubePod& p : pods) {
    state::PodView v;
    v.name = p.name;
    v.stage = p.stage;
    v.age = now - p.created;
    v.ready_for =
        (p.stage == Stage::kReady && p.ready_since) ? now - *p.ready_since : absl::ZeroDuration();
    v.unschedulable = p.unschedulable;
    v.engine_args = p.engine_args;
    v.engine_args_error = p.engine_args_error;
    if (auto it = readings.find(p.name); it != readings.end()) {
      v.scrape_ok = true;
      v.scraped_at = it->second.scraped_at;
      v.observation = it->second.observation;
    }
    view.pods.push_back(std::move(v));
  }
  return view;
}

std::optional<absl::Duration> MeasuredWarmup(const std::vector<KubePod>& pods) {
  std::vector<absl::Duration> warmups;
  for (const KubePod& p : pods) {
    if (p.ready_since.has_value() && *p.ready_since >= p.created) {
      warmups.push_back(*p.ready_since - p.created);
    }
  }
  if (warmups.empty()) return std::nullopt;
  std::sort(warmups.begin(), warmups.end());
  return warmups[warmups.size() / 2];
}

std::vector<policy::VictimCandidate> VictimCandidatesOf(
    const std::vector<KubePod>& pods, const std::map<std::string, metrics::PodReading>& readings) {
  std::vector<policy::VictimCandidate> candidates;
  for (const KubePod& p : pods) {
    if (p.stage == Stage::kTerminating) continue;
    policy::VictimCandidate c{p.name, p.stage == Stage::kReady, p.created, std::nullopt};
    if (auto it = readings.find(p.name); it != readings.end()) {
      c.in_flight = policy::InFlightOf(it->second.observation);
    }
    candidates.push_back(std::move(c));
  }
  return candidates;
}

ScaleWrite WriteScale(kube::KubeClient& client, const kube::ResourceRef& resource,
                      const std::string& ns, const std::string& name, const ScaleRead& read,
                      int32_t replicas, const std::function<void(std::string_view)>& on_write) {
  constexpr int kWrites = 4;
  ScaleWrite w;
  w.current = read.spec_replicas;
  w.base = read.spec_replicas;
  std::string rv = read.resource_version;
  for (int attempt = 0; attempt < kWrites; ++attempt) {
    nlohmann::json patch = {{"spec", {{"replicas", replicas}}}};
    if (!rv.empty()) patch["metadata"] = {{"resourceVersion", rv}};
    auto written = client.MergePatch(resource, ns, name, patch, "scale");
    if (written.ok()) {
      w.current = replicas;
      w.status = absl::OkStatus();
      on_write("ok");
      return w;
    }
    w.status = written.status();
    if (!kube::IsConflict(written.status())) {
      on_write("error");
      return w;
    }
    on_write("conflict");
    // Someone wrote /scale since we read it: read it again and re-apply the decision.
    auto again = client.Get(resource, ns, name, "scale");
    if (!again.ok()) {
      w.status = again.status();
      return w;
    }
    const ScaleRead reread = ParseScale(*again);
    rv = reread.resource_version;
    w.base = reread.spec_replicas;
    if (w.base == replicas) {
      w.current = w.base;
      w.status = absl::OkStatus();
      return w;
    }
  }
  return w;
}

std::string ReasonsText(const policy::Decision& decision) {
  std::vector<std::string> parts;
  for (const policy::Reason& r : decision.reasons) {
    parts.push_back(r.message.empty() ? r.code : absl::StrCat(r.code, ": ", r.message));
  }
  return absl::StrJoin(parts, "; ");
}

Freshness FreshnessOf(const state::FleetSnapshot* snapshot, const std::vector<KubePod>& pods,
                      const std::map<std::string, metrics::PodReading>& readings) {
  Freshness f;
  if (snapshot != nullptr) {
    for (const state::ReplicaState& r : snapshot->replicas) {
      if (r.stage != Stage::kReady) continue;
      ++f.readable;
      if (r.fresh) ++f.fresh;
    }
    return f;
  }
  for (const KubePod& p : pods) {
    if (p.stage != Stage::kReady) continue;
    ++f.readable;
    if (readings.count(p.name) != 0) ++f.fresh;
  }
  return f;
}

bool SetMetricsFresh(AutoscalerStatus& status, const std::string& source_error, Freshness freshness,
                     int32_t unread, absl::Time now, int64_t generation) {
  if (!source_error.empty()) {
    SetCondition(status, kMetricsFresh, "False", "MetricsSourceFailed",
                 absl::StrCat(source_error, "; holding (no scale-in on stale data)"), now,
                 generation);
    return true;
  }
  if (freshness.readable > 0 && freshness.fresh == 0) {
    SetCondition(status, kMetricsFresh, "False", "ScrapesStale",
                 absl::StrCat("no Ready pod's metrics are fresh (", unread,
                              " reads failed); holding (no scale-in on stale data)"),
                 now, generation);
    return true;
  }
  SetCondition(status, kMetricsFresh, "True", "Fresh",
               absl::StrCat(freshness.fresh, " of ", freshness.readable, " Ready pods read fresh"),
               now, generation);
  return false;
}

bool ConditionBegan(const AutoscalerStatus& written, const AutoscalerStatus& next,
                    std::string_view type, std::string_view value) {
  const Condition* now = next.FindCondition(type);
  if (now == nullptr || now->status != value) return false;
  const Condition* before = written.FindCondition(type);
  return before == nullptr || before->status != value || before->reason != now->reason;
}

std::optional<AutoscalerStatus::ArrivalHistory> ArrivalHistoryStatus(
    const state::ArrivalHistory& history, absl::Time now,
    const std::optional<AutoscalerStatus::ArrivalHistory>& written) {
  state::ArrivalBuckets b = history.Buckets(now);
  if (b.size() == 0) return written;
  if (written.has_value() && written->bucket == b.bucket && written->start == b.start &&
      written->end == b.end()) {
    return written;
  }
  return AutoscalerStatus::ArrivalHistory{b.bucket, b.start, b.end(),
                                          state::EncodeArrivalBuckets(b)};
}

AutoscalerStatus::Observed ObservedOf(const state::FleetSnapshot& snapshot) {
  AutoscalerStatus::Observed o;
  int32_t ready = 0;
  double waiting = 0;
  for (const state::ReplicaState& r : snapshot.replicas) {
    if (r.stage == Stage::kReady && r.fresh) {
      ++ready;
      waiting += r.waiting;
    }
  }
  if (ready > 0) {
    o.queue_depth_per_replica = waiting / ready;
    o.kv_cache_utilization = snapshot.workload.kv_usage_mean;
  }
  if (snapshot.workload.arrival_rate.kind() == state::Input<double>::Kind::kValue) {
    o.arrival_rate = snapshot.workload.arrival_rate.value();
  }
  if (snapshot.workload.ttft_p90_seconds.kind() == state::Input<double>::Kind::kValue) {
    o.ttft_p90 = absl::Milliseconds(std::round(1000 * snapshot.workload.ttft_p90_seconds.value()));
  }
  return o;
}

}  // namespace twinscale::reconcile
