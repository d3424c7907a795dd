// The latest published decision per InferenceAutoscaler, and change listeners: see
// decision_board.h.
#include "controller/outputs/decision_board.h"

namespace twinscale::outputs {
namespace {

// Everything but decided_at: what makes a publish a change worth telling listeners about.
bool SameContent(const PublishedDecision& a, const PublishedDecision& b) {
  return a.mode == b.mode && a.desired_replicas == b.desired_replicas &&
         a.current_replicas == b.current_replicas && a.inputs_stale == b.inputs_stale &&
         a.admission.active == b.admission.active &&
         a.admission.max_arrival_rate == b.admission.max_arrival_rate &&
         a.admission.max_queue_per_replica == b.admission.max_queue_per_replica;
}

std::pair<std::string, std::string> Id(std::string_view namespace_name, std::string_view name) {
  return {std::string(namespace_name), std::string(name)};
}

}  // namespace

std::string DecisionBoard::Key(std::string_view namespace_name, std::string_view name) {
  std::string key;
  key.reserve(namespace_name.size() + 1 + name.size());
  key.append(namespace_name).append("/").append(name);
  return key;
}

void DecisionBoard::Publish(std::string_view namespace_name, std::string_view name,
                            const PublishedDecision& d) {
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(Id(namespace_name, name));
    if (it != entries_.end() && SameContent(it->second.decision, d)) {
      it->second.decision.decided_at = d.decided_at;
      return;
    }
    BoardEntry& e = entries_[Id(namespace_name, name)];
    e.namespace_name = std::string(namespace_name);
    e.name = std::string(name);
    e.decision = d;
    e.version = ++version_;
  }
  Notify(Key(namespace_name, name));
}

void DecisionBoard::Remove(std::string_view namespace_name, std::string_view name) {
  {
    absl::MutexLock lock(&mu_);
    if (entries_.erase(Id(namespace_name, name)) == 0) return;
    ++version_;
  }
  Notify(Key(namespace_name, name));
}

std::optional<BoardEntry> DecisionBoard::Get(std::string_view namespace_name,
                                             std::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(Id(namespace_name, name));
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

std::vector<BoardEntry> DecisionBoard::List(std::string_view namespace_name) const {
  std::vector<BoardEntry> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [id, entry] : entries_) {
    if (namespace_name.empty() || entry.namespace_name == namespace_name) out.push_back(entry);
  }
  return out;
}

uint64_t DecisionBoard::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

void DecisionBoard::SetServing(bool serving) {
  {
    absl::MutexLock lock(&mu_);
    if (serving_ == serving) return;
    serving_ = serving;
    if (!serving) entries_.clear();
    ++version_;
  }
  Notify("");
}

bool DecisionBoard::serving() const {
  absl::MutexLock lock(&mu_);
  return serving_;
}

DecisionBoard::SubscriptionId DecisionBoard::Subscribe(Listener listener) {
  absl::MutexLock lock(&listeners_mu_);
  const SubscriptionId id = next_id_++;
  listeners_.emplace(id, std::move(listener));
  return id;
}

void DecisionBoard::Unsubscribe(SubscriptionId id) {
  // Taking the lock waits for a Notify in progress, which holds it while listeners run.
  absl::MutexLock lock(&listeners_mu_);
  listeners_.erase(id);
}

void DecisionBoard::Notify(std::string_view key) {
  absl::MutexLock lock(&listeners_mu_);
  for (auto& [id, listener] : listeners_) listener(key);
}

}  // namespace twinscale::outputs
