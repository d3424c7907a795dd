// The targets' pod informers and their wake-ups: see pod_informers.h.
#include "controller/reconcile/pod_informers.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/kube/kube_client.h"
#include "controller/kube/object_meta.h"
#include "controller/kube/resource_ref.h"
#include "controller/reconcile/kube_pod.h"

namespace twinscale::reconcile {
namespace {

std::string SourceId(const std::string& ns, const std::string& selector) {
  return absl::StrCat(ns, "\n", selector);  // '\n' is in neither a namespace nor a selector
}

}  // namespace

bool PodChangeMatters(const nlohmann::json& before, const nlohmann::json& after) {
  const absl::StatusOr<KubePod> a = ParseKubePod(before);
  const absl::StatusOr<KubePod> b = ParseKubePod(after);
  // A pod that becomes readable (or stops being) changes what the pass sees.
  if (!a.ok() || !b.ok()) return a.ok() != b.ok();
  return a->uid != b->uid || a->stage != b->stage || a->ip != b->ip ||
         a->unschedulable != b->unschedulable || a->ready_since != b->ready_since;
}

// One (namespace, selector)'s informer; its handler reports decision-relevant changes to the owner.
class PodInformers::Source : public kube::InformerHandler {
 public:
  Source(PodInformers* owner, kube::KubeClient* client, kube::InformerOptions options)
      : owner_(owner), informer_(client, std::move(options)) {
    informer_.AddHandler(this);
    informer_.Start();
  }
  ~Source() override { informer_.Stop(); }  // before the handler (this) goes

  void OnUpsert(const nlohmann::json* old_object, const nlohmann::json& object) override {
    if (old_object == nullptr || PodChangeMatters(*old_object, object)) owner_->Changed(this);
  }
  void OnDelete(const nlohmann::json&) override { owner_->Changed(this); }

  kube::Informer& informer() { return informer_; }
  void Stop() { informer_.Stop(); }

 private:
  PodInformers* const owner_;
  kube::Informer informer_;
};

PodInformers::PodInformers(kube::KubeClient* client, PodInformersOptions options)
    : client_(client), options_(std::move(options)) {}

PodInformers::~PodInformers() { Stop(); }

void PodInformers::SetChangeCallback(ChangeCallback on_change) {
  absl::MutexLock lock(&mu_);
  on_change_ = std::move(on_change);
}

void PodInformers::Changed(const Source* source) {
  std::vector<std::pair<std::string, absl::Time>> wake;
  ChangeCallback on_change;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_ || !on_change_) return;
    on_change = on_change_;
    for (const auto& [key, sub] : subscribers_) {
      // One pass per interval: never sooner than an interval after the last one started.
      if (sub.source.get() == source) wake.emplace_back(key, sub.last_pass + sub.interval);
    }
  }
  for (const auto& [key, earliest] : wake) on_change(key, earliest);
}

std::shared_ptr<PodInformers::Source> PodInformers::UnsubscribeLocked(const std::string& key) {
  auto it = subscribers_.find(key);
  if (it == subscribers_.end()) return nullptr;
  std::shared_ptr<Source> source = std::move(it->second.source);
  subscribers_.erase(it);
  for (const auto& [other, sub] : subscribers_) {
    if (sub.source == source) return nullptr;  // still in use
  }
  for (auto s = sources_.begin(); s != sources_.end(); ++s) {
    if (s->second == source) {
      sources_.erase(s);
      break;
    }
  }
  return source;
}

absl::StatusOr<std::vector<nlohmann::json>> PodInformers::Pods(const std::string& key,
                                                               const std::string& ns,
                                                               const std::string& selector,
                                                               absl::Time pass_start,
                                                               absl::Duration interval) {
  const std::string id = SourceId(ns, selector);
  std::shared_ptr<Source> source, released;
  bool started = false;  // this call started the informer
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return absl::CancelledError("pod informers stopped");
    auto sub = subscribers_.find(key);
    if (sub != subscribers_.end() && sources_.count(id) != 0 &&
        sub->second.source == sources_[id]) {
      source = sub->second.source;
    } else {
      released = UnsubscribeLocked(key);
      std::shared_ptr<Source>& slot = sources_[id];
      if (slot == nullptr) {
        kube::InformerOptions io = options_.informer;
        io.resource = kube::kPods;
        io.namespace_name = ns;
        io.label_selector = selector;
        slot = std::make_shared<Source>(this, client_, std::move(io));
        started = true;
      }
      source = slot;
    }
    Subscriber& s = subscribers_[key];
    s.source = source;
    s.last_pass = pass_start;
    s.interval = interval;
  }
  released.reset();  // stops the informer `key` used before, if nobody else does (outside mu_)

  // Only the pass that started the informer waits for its first list: if that list keeps failing
  // (pods forbidden, the server down), later passes go straight to their own list below rather
  // than hold a worker for sync_timeout each time.
  kube::Informer& informer = source->informer();
  const absl::Duration wait = started ? options_.sync_timeout : absl::ZeroDuration();
  if (informer.WaitForSync(wait) && informer.Current()) return informer.List(ns);

  // Not listed yet, or the watch is failing (the cache may miss changes): read the server itself,
  // as a pass did before pods were watched, and report its error if that fails too.
  kube::ListOptions lo;
  lo.label_selector = selector;
  absl::StatusOr<kube::ObjectList> listed = client_->List(kube::kPods, ns, lo);
  if (!listed.ok()) {
    const std::string watch_error = informer.stats().last_error;
    return absl::Status(
        listed.status().code(),
        absl::StrCat("listing the pods of ", ns, " selected by \"", selector,
                     "\": ", listed.status().message(),
                     watch_error.empty() ? "" : absl::StrCat(" (their watch: ", watch_error, ")")));
  }
  std::sort(listed->items.begin(), listed->items.end(),
            [](const nlohmann::json& a, const nlohmann::json& b) {
              return kube::NameOf(a) < kube::NameOf(b);
            });
  return std::move(listed->items);
}

void PodInformers::NotePassStart(const std::string& key, absl::Time start) {
  absl::MutexLock lock(&mu_);
  auto it = subscribers_.find(key);
  if (it != subscribers_.end()) it->second.last_pass = start;
}

void PodInformers::Forget(const std::string& key) {
  std::shared_ptr<Source> released;
  {
    absl::MutexLock lock(&mu_);
    released = UnsubscribeLocked(key);
  }
  // Outside mu_: stopping joins the informer's thread, whose handler may be waiting for mu_.
  released.reset();
}

void PodInformers::Stop() {
  std::map<std::string, std::shared_ptr<Source>> sources;
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    sources.swap(sources_);
    subscribers_.clear();
  }
  for (auto& [id, source] : sources) source->Stop();
}

}  // namespace twinscale::reconcile
