// Lease leader election; see leader_election.h.
#include "controller/kube/leader_election.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/kube/api_errors.h"
#include "controller/kube/kube_time.h"
#include "controller/kube/object_meta.h"

namespace twinscale::kube {
namespace {

using nlohmann::json;

std::string StringField(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t IntField(const json& object, const char* key) {
  if (!object.is_object()) return 0;
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

int64_t WholeSeconds(absl::Duration d) { return std::max<int64_t>(1, absl::ToInt64Seconds(d)); }

}  // namespace

absl::StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(
    KubeClient* client, const Clock* clock, LeaderElectionConfig config, LeaderCallbacks callbacks,
    std::function<void(absl::Duration)> sleep) {
  if (config.identity.empty()) {
    return absl::InvalidArgumentError("leader election: identity is empty");
  }
  if (config.lease_name.empty() || config.lease_namespace.empty()) {
    return absl::InvalidArgumentError("leader election: lease name and namespace are required");
  }
  if (!(config.retry_period > absl::ZeroDuration() && config.renew_deadline > config.retry_period &&
        config.lease_duration > config.renew_deadline)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "leader election: need lease_duration (", absl::FormatDuration(config.lease_duration),
        ") > renew_deadline (", absl::FormatDuration(config.renew_deadline), ") > retry_period (",
        absl::FormatDuration(config.retry_period), ") > 0"));
  }
  return std::unique_ptr<LeaderElector>(
      new LeaderElector(client, clock, std::move(config), std::move(callbacks), std::move(sleep)));
}

LeaderElector::LeaderElector(KubeClient* client, const Clock* clock, LeaderElectionConfig config,
                             LeaderCallbacks callbacks, std::function<void(absl::Duration)> sleep)
    : client_(client),
      clock_(clock),
      config_(std::move(config)),
      callbacks_(std::move(callbacks)),
      sleep_(std::move(sleep)) {}

std::string LeaderElector::ObservedLeader() const {
  absl::MutexLock lock(&mu_);
  return observed_leader_;
}

absl::Status LeaderElector::last_error() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

void LeaderElector::SetError(absl::Status s) {
  absl::MutexLock lock(&mu_);
  last_error_ = std::move(s);
}

void LeaderElector::NoteAttempt(absl::Time now, const absl::Status& failure) {
  bool changed = false;
  {
    absl::MutexLock lock(&mu_);
    if (failure.ok()) {
      changed = !lease_error_.ok();
      failing_since_ = absl::InfiniteFuture();
    } else {
      changed = lease_error_.ok() || lease_error_.code() != failure.code() ||
                KubeReason(lease_error_) != KubeReason(failure);
      if (lease_error_.ok()) failing_since_ = now;
    }
    lease_error_ = failure;
  }
  if (changed && callbacks_.on_lease_error) callbacks_.on_lease_error(failure);
}

absl::Status LeaderElector::LeaseHealth() const {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  if (lease_error_.ok()) return absl::OkStatus();
  const bool refused =
      absl::IsPermissionDenied(lease_error_) || absl::IsUnauthenticated(lease_error_);
  if (!refused && now - failing_since_ < config_.renew_deadline) return absl::OkStatus();
  return absl::Status(lease_error_.code(),
                      absl::StrCat("leader election: cannot reach Lease ", config_.lease_namespace,
                                   "/", config_.lease_name, ": ", lease_error_.message()));
}

void LeaderElector::Observe(const std::string& holder) {
  {
    absl::MutexLock lock(&mu_);
    if (holder == observed_leader_) return;
    observed_leader_ = holder;
  }
  if (!holder.empty() && callbacks_.on_new_leader) callbacks_.on_new_leader(holder);
}

absl::Duration LeaderElector::Jittered(absl::Duration d) {
  return d * absl::Uniform(random_, 1.0, 1.2);
}

bool LeaderElector::TryAcquireOrRenew() {
  const absl::Time now = clock_->Now();
  lost_to_other_ = false;
  const std::string now_text = FormatMicroTime(now);
  absl::StatusOr<json> got = client_->Get(kLeases, config_.lease_namespace, config_.lease_name);
  if (absl::IsNotFound(got.status())) {
    json lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
        {"spec",
         {{"holderIdentity", config_.identity},
          {"leaseDurationSeconds", WholeSeconds(config_.lease_duration)},
          {"acquireTime", now_text},
          {"renewTime", now_text},
          {"leaseTransitions", 0}}}};
    absl::StatusOr<json> created = client_->Create(kLeases, config_.lease_namespace, lease);
    if (!created.ok()) {  // AlreadyExists: a peer created it first
      SetError(created.status());
      NoteAttempt(now,
                  absl::IsAlreadyExists(created.status()) ? absl::OkStatus() : created.status());
      return false;
    }
    NoteAttempt(now, absl::OkStatus());
    renewed_at_ = now;
    is_leader_ = true;
    Observe(config_.identity);
    return true;
  }
  if (!got.ok()) {
    SetError(got.status());
    NoteAttempt(now, got.status());
    return false;
  }

  json lease = *std::move(got);
  if (!lease.contains("spec") || !lease["spec"].is_object()) lease["spec"] = json::object();
  json& spec = lease["spec"];
  const std::string holder = StringField(spec, "holderIdentity");
  const int64_t duration_seconds = IntField(spec, "leaseDurationSeconds");
  // A lease without a readable renewTime can't prove it is alive: treat it as expired.
  absl::StatusOr<absl::Time> renewed = ParseKubeTime(StringField(spec, "renewTime"));
  const absl::Time renew_time = renewed.ok() ? *renewed : absl::InfinitePast();
  Observe(holder);

  const bool held_by_us = holder == config_.identity;
  const bool expired = renew_time + absl::Seconds(duration_seconds) < now;
  if (!held_by_us && !holder.empty() && !expired) {
    NoteAttempt(now, absl::OkStatus());  // read, and rightly not written
    is_leader_ = false;
    lost_to_other_ = true;
    SetError(absl::FailedPreconditionError(absl::StrCat(
        "lease ", config_.lease_namespace, "/", config_.lease_name, " is held by ", holder,
        " until ", FormatMicroTime(renew_time + absl::Seconds(duration_seconds)))));
    return false;
  }
  // Taking it over (or back after a release) is a transition; renewing our own is not.
  if (!held_by_us) {
    spec["acquireTime"] = now_text;
    spec["leaseTransitions"] = IntField(spec, "leaseTransitions") + 1;
  } else if (StringField(spec, "acquireTime").empty()) {
    spec["acquireTime"] = now_text;
  }
  if (!spec.contains("leaseTransitions")) spec["leaseTransitions"] = 0;
  spec["holderIdentity"] = config_.identity;
  spec["leaseDurationSeconds"] = WholeSeconds(config_.lease_duration);
  spec["renewTime"] = now_text;
  // metadata.resourceVersion is the one just read: the PUT fails with 409 if anyone wrote since.
  absl::StatusOr<json> updated = client_->Update(kLeases, config_.lease_namespace, lease);
  if (!updated.ok()) {
    SetError(updated.status());
    NoteAttempt(now, IsConflict(updated.status()) ? absl::OkStatus() : updated.status());
    return false;
  }
  NoteAttempt(now, absl::OkStatus());
  renewed_at_ = now;
  is_leader_ = true;
  Observe(config_.identity);
  return true;
}

absl::Status LeaderElector::Release() {
  absl::StatusOr<json> got = client_->Get(kLeases, config_.lease_namespace, config_.lease_name);
  if (absl::IsNotFound(got.status())) {
    is_leader_ = false;
    return absl::OkStatus();
  }
  if (!got.ok()) return got.status();
  json lease = *std::move(got);
  if (!lease.contains("spec") || !lease["spec"].is_object()) lease["spec"] = json::object();
  json& spec = lease["spec"];
  if (StringField(spec, "holderIdentity") != config_.identity) {
    is_leader_ = false;  // not ours (any more): nothing to give up
    return absl::OkStatus();
  }
  const std::string now_text = FormatMicroTime(clock_->Now());
  spec["holderIdentity"] = "";
  spec["leaseDurationSeconds"] = 1;
  spec["acquireTime"] = now_text;
  spec["renewTime"] = now_text;
  if (!spec.contains("leaseTransitions")) spec["leaseTransitions"] = 0;
  absl::StatusOr<json> updated = client_->Update(kLeases, config_.lease_namespace, lease);
  if (!updated.ok()) return updated.status();
  is_leader_ = false;
  Observe("");
  return absl::OkStatus();
}

void LeaderElector::Run(Cancellation* cancel) {
  // Waits; false once cancelled.
  const auto wait = [&](absl::Duration d) {
    if (sleep_) {
      sleep_(d);
    } else {
      cancel->WaitFor(d);
    }
    return !cancel->IsCancelled();
  };
  while (true) {
    if (cancel->IsCancelled()) return;
    if (TryAcquireOrRenew()) break;
    if (!wait(Jittered(config_.retry_period))) return;
  }
  if (callbacks_.on_started_leading) callbacks_.on_started_leading();
  while (true) {
    if (!wait(config_.retry_period)) {
      if (config_.release_on_cancel) {
        if (absl::Status s = Release(); !s.ok()) SetError(s);
      }
      break;
    }
    if (TryAcquireOrRenew()) continue;
    // Someone else holds a valid lease: we are not the leader, whatever our deadline says.
    if (lost_to_other_) break;
    // Keep trying until the deadline: past it the others may soon see our lease expire.
    if (clock_->Now() - renewed_at_ >= config_.renew_deadline) break;
  }
  is_leader_ = false;
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

}  // namespace twinscale::kube
