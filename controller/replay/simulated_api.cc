// The simulated cluster behind the Reconciler's seams: see simulated_api.h.
#include "controller/replay/simulated_api.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "controller/kube/resource_ref.h"

namespace twinscale::replay {
namespace {

using Stage = state::PodView::Stage;

// RFC 3339 with the time's full precision (the API server's own stamps have whole seconds; the
// replayed pods keep their simulated times exactly).
std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", t, absl::UTCTimeZone());
}

nlohmann::json Condition(const char* type, bool status, const char* reason = nullptr) {
  nlohmann::json c = {{"type", type}, {"status", status ? "True" : "False"}};
  if (reason != nullptr) c["reason"] = reason;
  return c;
}

absl::Status NotServed(std::string_view what) {
  return absl::UnimplementedError(
      absl::StrCat("replay's simulated API server does not serve ", std::string(what)));
}

}  // namespace

nlohmann::json PodJson(const state::PodView& pod, absl::Time now, const std::string& ns,
                       const std::string& ip, bool marked) {
  nlohmann::json meta = {{"name", pod.name},
                         {"namespace", ns},
                         {"uid", pod.name},
                         {"creationTimestamp", Rfc3339(now - pod.age)}};
  if (marked) {
    meta["annotations"] = {{reconcile::kDeletionCost, reconcile::kVictimCost}};
  }
  nlohmann::json conditions = nlohmann::json::array();
  std::string phase = "Running";
  switch (pod.stage) {
    case Stage::kPending:
      phase = "Pending";
      conditions.push_back(
          Condition("PodScheduled", false, pod.unschedulable ? "Unschedulable" : nullptr));
      break;
    case Stage::kLoading:
      conditions.push_back(Condition("PodScheduled", true));
      conditions.push_back(Condition("ContainersReady", false));
      conditions.push_back(Condition("Ready", false));
      break;
    case Stage::kWarmingUp:
      conditions.push_back(Condition("PodScheduled", true));
      conditions.push_back(Condition("ContainersReady", true));
      conditions.push_back(Condition("Ready", false));
      break;
    case Stage::kReady: {
      conditions.push_back(Condition("PodScheduled", true));
      conditions.push_back(Condition("ContainersReady", true));
      nlohmann::json ready = Condition("Ready", true);
      ready["lastTransitionTime"] = Rfc3339(now - pod.ready_for);
      conditions.push_back(std::move(ready));
      break;
    }
    case Stage::kTerminating:
      meta["deletionTimestamp"] = Rfc3339(now);
      conditions.push_back(Condition("PodScheduled", true));
      conditions.push_back(Condition("Ready", false));
      break;
  }
  nlohmann::json status = {{"phase", phase}, {"conditions", std::move(conditions)}};
  if (pod.stage != Stage::kPending && !ip.empty()) status["podIP"] = ip;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", std::move(meta)},
          {"status", std::move(status)}};
}

// ---- The pods.

class SimulatedApi::PodList final : public reconcile::PodSource {
 public:
  explicit PodList(SimulatedApi* api) : api_(api) {}
  absl::StatusOr<std::vector<nlohmann::json>> Pods(const std::string&, const std::string& ns,
                                                   const std::string&, absl::Time,
                                                   absl::Duration) override {
    std::vector<nlohmann::json> out;
    if (ns != api_->ns_) return out;
    const state::ClusterView& v = api_->view_;
    out.reserve(v.pods.size());
    for (size_t i = 0; i < v.pods.size(); ++i) {
      const std::string ip =
          absl::StrCat("10.", (i >> 16) & 255, ".", (i >> 8) & 255, ".", i & 255);
      out.push_back(PodJson(v.pods[i], v.now, api_->ns_, ip, api_->marked_.count(v.pods[i].name)));
    }
    return out;
  }

 private:
  SimulatedApi* api_;
};

// ---- The API server.

class SimulatedApi::Client final : public kube::KubeClient {
 public:
  explicit Client(SimulatedApi* api) : api_(api) {}

 private:
  bool IsObject(const kube::ResourceRef& ref, std::string_view ns, std::string_view name) const {
    return ref == kube::kInferenceAutoscalers && ns == api_->ns_ && name == api_->name_;
  }
  bool IsTarget(const kube::ResourceRef& ref, std::string_view ns, std::string_view name) const {
    return ref == kube::kDeployments && ns == api_->ns_ && name == api_->target_;
  }

  absl::StatusOr<nlohmann::json> GetImpl(const kube::ResourceRef& ref, std::string_view ns,
                                         std::string_view name,
                                         std::string_view subresource) override {
    if (IsObject(ref, ns, name) && (subresource.empty() || subresource == "status")) {
      nlohmann::json obj = api_->object_;
      if (!api_->status_.is_null()) obj["status"] = api_->status_;
      return obj;
    }
    if (IsTarget(ref, ns, name) && subresource == "scale") {
      const int32_t pods = static_cast<int32_t>(api_->view_.pods.size());
      return nlohmann::json{
          {"apiVersion", "autoscaling/v1"},
          {"kind", "Scale"},
          {"metadata",
           {{"name", api_->target_},
            {"namespace", api_->ns_},
            {"resourceVersion", std::to_string(api_->resource_version_)}}},
          {"spec", {{"replicas", api_->spec_replicas_}}},
          {"status", {{"replicas", pods}, {"selector", absl::StrCat("app=", api_->target_)}}}};
    }
    return absl::NotFoundError(
        absl::StrCat(ref.resource, " ", std::string(ns), "/", std::string(name), " not found"));
  }

  absl::StatusOr<kube::ObjectList> ListImpl(const kube::ResourceRef& ref, std::string_view ns,
                                            const kube::ListOptions& /*options*/) override {
    kube::ObjectList list;
    list.resource_version = std::to_string(api_->resource_version_);
    if (ref == kube::kHorizontalPodAutoscalers || ref == kube::kScaledObjects) return list;
    if (ref == kube::kPods && ns == api_->ns_) {
      auto pods = api_->pods_->Pods("", api_->ns_, "", api_->view_.now, absl::ZeroDuration());
      if (!pods.ok()) return pods.status();
      list.items = *std::move(pods);
      return list;
    }
    return NotServed(absl::StrCat("a list of ", ref.resource));
  }

  absl::StatusOr<nlohmann::json> CreateImpl(const kube::ResourceRef& ref, std::string_view,
                                            const nlohmann::json&) override {
    return NotServed(absl::StrCat("creating ", ref.resource));
  }
  absl::StatusOr<nlohmann::json> UpdateImpl(const kube::ResourceRef& ref, std::string_view,
                                            const nlohmann::json&, std::string_view) override {
    return NotServed(absl::StrCat("updating ", ref.resource));
  }

  absl::StatusOr<nlohmann::json> MergePatchImpl(const kube::ResourceRef& ref, std::string_view ns,
                                                std::string_view name, const nlohmann::json& patch,
                                                std::string_view subresource) override {
    if (IsObject(ref, ns, name) && subresource == "status" && patch.contains("status")) {
      if (api_->status_.is_null()) api_->status_ = nlohmann::json::object();
      api_->status_.merge_patch(patch["status"]);
      ++api_->resource_version_;
      return GetImpl(ref, ns, name, "");
    }
    if (ref == kube::kPods && ns == api_->ns_ && subresource.empty()) {
      const nlohmann::json mark = patch.value("metadata", nlohmann::json::object())
                                      .value("annotations", nlohmann::json::object())
                                      .value(reconcile::kDeletionCost, nlohmann::json());
      if (mark.is_null()) {
        api_->marked_.erase(std::string(name));
      } else {
        api_->marked_.insert(std::string(name));
      }
      ++api_->resource_version_;
      return nlohmann::json::object();
    }
    return NotServed(absl::StrCat("patching ", ref.resource, " ", std::string(subresource)));
  }

  absl::Status DeleteImpl(const kube::ResourceRef& ref, std::string_view,
                          std::string_view) override {
    return NotServed(absl::StrCat("deleting ", ref.resource));
  }
  absl::StatusOr<kube::WatchEnd> WatchImpl(const kube::ResourceRef& ref, std::string_view,
                                           const kube::WatchOptions&,
                                           const kube::WatchEventHandler&,
                                           kube::Cancellation*) override {
    return NotServed(absl::StrCat("a watch of ", ref.resource));
  }

  SimulatedApi* api_;
};

// ---- The pods' /metrics, as scraped.

class SimulatedApi::Metrics final : public metrics::MetricsSource {
 public:
  explicit Metrics(const SimulatedApi* api) : api_(api) {}
  absl::StatusOr<std::vector<metrics::PodResult>> Read(
      const std::vector<metrics::PodTarget>& pods) const override {
    std::vector<metrics::PodResult> out;
    out.reserve(pods.size());
    for (const metrics::PodTarget& t : pods) {
      metrics::PodResult r{t.pod, absl::NotFoundError(absl::StrCat("no pod ", t.pod))};
      for (const state::PodView& p : api_->view_.pods) {
        if (p.name != t.pod) continue;
        if (p.scrape_ok) {
          r.reading = metrics::PodReading{p.scraped_at, p.observation};
        } else {
          r.reading = absl::UnavailableError(absl::StrCat("no scrape of ", t.pod));
        }
        break;
      }
      out.push_back(std::move(r));
    }
    return out;
  }

 private:
  const SimulatedApi* api_;
};

// ---- Direct mode's scale changes.

class SimulatedApi::Act final : public reconcile::Actuator {
 public:
  explicit Act(SimulatedApi* api) : api_(api) {}
  reconcile::ScaleWrite Scale(const reconcile::ScaleOrder& order) override {
    reconcile::ScaleWrite w;
    w.base = api_->spec_replicas_;
    w.current = order.replicas;
    api_->spec_replicas_ = order.replicas;
    ++api_->resource_version_;
    api_->marked_ = std::set<std::string>(order.victims.begin(), order.victims.end());
    if (order.on_write) order.on_write("ok");
    api_->last_order_ = order;
    api_->last_order_->on_write = nullptr;  // the pass's callbacks die with the pass
    api_->last_order_->on_mark_failed = nullptr;
    return w;
  }

 private:
  SimulatedApi* api_;
};

SimulatedApi::SimulatedApi(nlohmann::json object) : object_(std::move(object)) {
  nlohmann::json& meta = object_["metadata"];
  if (!meta.contains("namespace")) meta["namespace"] = "default";
  if (!meta.contains("generation")) meta["generation"] = 1;
  if (!meta.contains("uid")) meta["uid"] = "replay";
  ns_ = meta.value("namespace", "default");
  name_ = meta.value("name", "");
  target_ = object_.value("spec", nlohmann::json::object())
                .value("targetRef", nlohmann::json::object())
                .value("name", "");
  client_ = std::make_unique<Client>(this);
  pods_ = std::make_unique<PodList>(this);
  act_ = std::make_unique<Act>(this);
}

SimulatedApi::~SimulatedApi() = default;

void SimulatedApi::Show(const state::ClusterView& view) {
  view_ = view;
  spec_replicas_ = view.spec_replicas;
  last_order_.reset();
  // The victims marked are gone or going: a mark outlives its pod only as a name nobody has.
  std::set<std::string> kept;
  for (const state::PodView& p : view.pods) {
    if (marked_.count(p.name) != 0 && p.stage != Stage::kTerminating) kept.insert(p.name);
  }
  marked_ = std::move(kept);
}

reconcile::ReconcilerDeps SimulatedApi::Deps() {
  reconcile::ReconcilerDeps deps;
  deps.client = client_.get();
  deps.pods = pods_.get();
  deps.actuator = act_.get();
  deps.metrics_sources =
      [this](const api::MetricsSpec&,
             const std::string&) -> absl::StatusOr<std::unique_ptr<metrics::MetricsSource>> {
    return std::make_unique<Metrics>(this);
  };
  return deps;
}

}  // namespace twinscale::replay
