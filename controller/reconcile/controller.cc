// The controller's informer, queue, workers and leader gating: see controller.h.
#include "controller/reconcile/controller.h"

#include "absl/strings/str_cat.h"
#include "controller/common/json_log.h"
#include "controller/kube/api_errors.h"
#include "controller/kube/cancellation.h"
#include "controller/kube/informer.h"
#include "controller/kube/kube_client.h"
#include "controller/kube/resource_ref.h"
#include "controller/reconcile/controller_metrics.h"
#include "controller/reconcile/pod_informers.h"
#include "nlohmann/json.hpp"

namespace twinscale::reconcile {
namespace {

std::string KeyOf(const nlohmann::json& obj) {
  const nlohmann::json& m = obj["metadata"];
  return absl::StrCat(m.value("namespace", ""), "/", m.value("name", ""));
}

int64_t GenerationOf(const nlohmann::json& obj) {
  return obj["metadata"].value("generation", int64_t{0});
}

}  // namespace

// Queues an object when it is new or its spec changed; forgets it when deleted.
class Controller::Handler : public kube::InformerHandler {
 public:
  explicit Handler(Controller* c) : c_(c) {}
  void OnUpsert(const nlohmann::json* old_object, const nlohmann::json& object) override {
    // The controller's own status writes come back here with the same generation: ignore them,
    // or every write would trigger another pass (and another write).
    if (old_object != nullptr && GenerationOf(*old_object) == GenerationOf(object)) return;
    c_->queue_.Add(KeyOf(object));
  }
  void OnDelete(const nlohmann::json& last_state) override {
    const std::string key = KeyOf(last_state);
    c_->queue_.Forget(key);
    const nlohmann::json& m = last_state["metadata"];
    c_->reconciler_->Forget(m.value("namespace", ""), m.value("name", ""));
  }

 private:
  Controller* c_;
};

Controller::Controller(ControllerOptions options, kube::KubeClient* client, Reconciler* reconciler,
                       PodInformers* pods, const Clock* clock, JsonLogger* log,
                       ControllerMetrics* metrics)
    : options_(std::move(options)),
      client_(client),
      reconciler_(reconciler),
      pods_(pods),
      clock_(clock),
      log_(log),
      metrics_(metrics),
      queue_(clock),
      handler_(std::make_unique<Handler>(this)),
      stop_(std::make_unique<kube::Cancellation>()) {}

Controller::~Controller() { Stop(); }

absl::Status Controller::Start() {
  kube::InformerOptions io;
  io.resource = kube::kInferenceAutoscalers;
  io.namespace_name = options_.watch_namespace;
  io.on_error = [this](const absl::Status& s) {
    if (log_) log_->Warning("watch of InferenceAutoscalers failed", "", {{"error", s}});
  };
  informer_ = std::make_unique<kube::Informer>(client_, io);
  informer_->AddHandler(handler_.get());
  // A pod change schedules the pass, it doesn't run it now: the queue keeps the earliest due time
  // of a key and runs it once, however many pods changed (and a key already queued stays put).
  pods_->SetChangeCallback([this](const std::string& key, absl::Time earliest) {
    queue_.AddAfter(key, earliest - clock_->Now());
  });
  if (options_.leader_election) {
    kube::LeaderCallbacks cb;
    cb.on_started_leading = [this] { StartLeading(); };
    cb.on_stopped_leading = [this] { StopLeading(); };
    cb.on_new_leader = [this](const std::string& id) {
      if (log_) log_->Info("leader", "", {{"identity", id}});
    };
    // Once per episode (and per change of its error), not per retry.
    cb.on_lease_error = [this](const absl::Status& s) {
      if (!log_) return;
      const std::string lease =
          absl::StrCat(options_.lease.lease_namespace, "/", options_.lease.lease_name);
      if (s.ok()) {
        log_->Info("leader election Lease reachable again", "", {{"lease", lease}});
      } else {
        log_->Warning("cannot read or write the leader election Lease; this replica can't lead", "",
                      {{"lease", lease}, {"reason", kube::KubeReason(s)}, {"error", s}});
      }
    };
    auto elector = kube::LeaderElector::Create(client_, clock_, options_.lease, cb);
    if (!elector.ok()) return elector.status();
    elector_ = *std::move(elector);
  }
  // A follower exports twinscale_leader 0 (not nothing) from the start.
  if (metrics_) metrics_->is_leader->WithLabels({}).Set(0);
  informer_->Start();
  if (elector_) {
    election_thread_ = std::thread([this] {
      // Run returns when leadership is lost (or on Stop): campaign again until stopped.
      while (!stop_->IsCancelled()) {
        elector_->Run(stop_.get());
        if (!stop_->IsCancelled()) stop_->WaitFor(options_.lease.retry_period);
      }
    });
  } else {
    StartLeading();
  }
  return absl::OkStatus();
}

void Controller::StartLeading() {
  {
    absl::MutexLock lock(&workers_mu_);
    if (stopped_ || leading_.load()) return;
    StartWorkersLocked();
  }
  NotifyLeadership();
}

void Controller::NotifyLeadership() {
  if (!options_.on_leadership_change) return;
  // Serialized, and always the state as it is now: a StopLeading racing a StartLeading can't
  // leave the hook believing the wrong one.
  absl::MutexLock lock(&notify_mu_);
  const bool leading = leading_.load();
  if (leading == notified_leading_) return;
  notified_leading_ = leading;
  options_.on_leadership_change(leading);
}

void Controller::StartWorkersLocked() {
  leading_ = true;
  if (metrics_) metrics_->is_leader->WithLabels({}).Set(1);
  if (log_) log_->Info("started leading");
  // Everything known is due now: a new leader doesn't wait out the old leader's schedule.
  for (const nlohmann::json& obj : informer_->List("")) queue_.Add(KeyOf(obj));
  const int64_t epoch = ++leadership_epoch_;
  for (int32_t i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this, epoch] {
      while (leadership_epoch_.load() == epoch && leading_.load()) {
        std::optional<std::string> key = queue_.GetFor(absl::Milliseconds(250));
        if (!key.has_value()) {
          if (queue_.shutting_down()) return;
          continue;
        }
        if (!leading_.load() || leadership_epoch_.load() != epoch) {
          // Lost the lease while waiting: leave the key for whoever leads next time.
          queue_.Done(*key);
          queue_.Add(*key);
          return;
        }
        const size_t slash = key->find('/');
        const std::string ns = key->substr(0, slash), name = key->substr(slash + 1);
        const absl::Time start = clock_->Now();
        ReconcileResult r = reconciler_->Reconcile(ns, name);
        if (metrics_) {
          metrics_->reconciles->WithLabels({r.status.ok() ? "ok" : "error"}).Increment();
          metrics_->reconcile_seconds->WithLabels({}).Observe(
              absl::ToDoubleSeconds(clock_->Now() - start));
        }
        if (!r.status.ok() && log_) log_->Warning("reconcile failed", *key, {{"error", r.status}});
        queue_.Done(*key);
        if (r.requeue_after.has_value()) queue_.AddAfter(*key, *r.requeue_after);
      }
    });
  }
}

void Controller::StopLeading() {
  std::vector<std::thread> old;
  {
    absl::MutexLock lock(&workers_mu_);
    if (!leading_.load()) return;
    leading_ = false;
    ++leadership_epoch_;
    old.swap(workers_);
  }
  if (metrics_) metrics_->is_leader->WithLabels({}).Set(0);
  if (log_) log_->Info("stopped leading");
  for (std::thread& t : old) {
    if (t.get_id() != std::this_thread::get_id())
      t.join();
    else
      t.detach();
  }
  NotifyLeadership();
}

bool Controller::Synced() const { return informer_ != nullptr && informer_->HasSynced(); }

absl::Status Controller::LeaseHealth() const {
  return elector_ != nullptr ? elector_->LeaseHealth() : absl::OkStatus();
}

void Controller::Stop() {
  {
    absl::MutexLock lock(&workers_mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  // Workers first (no act after this point), then the Lease (released by Run on cancel), then
  // the watch.
  {
    absl::MutexLock lock(&workers_mu_);
    leading_ = false;
    ++leadership_epoch_;
  }
  std::vector<std::thread> old;
  {
    absl::MutexLock lock(&workers_mu_);
    old.swap(workers_);
  }
  for (std::thread& t : old) t.join();
  NotifyLeadership();
  stop_->Cancel();
  if (election_thread_.joinable()) election_thread_.join();
  queue_.ShutDown();
  pods_->Stop();
  if (informer_) informer_->Stop();
}

}  // namespace twinscale::reconcile
