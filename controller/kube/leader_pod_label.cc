// The leader label on this replica's own pod: see leader_pod_label.h.
#include "controller/kube/leader_pod_label.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/kube/backoff.h"
#include "controller/kube/resource_ref.h"
#include "nlohmann/json.hpp"

namespace twinscale::kube {

LeaderPodLabel::LeaderPodLabel(KubeClient* client, LeaderPodLabelOptions options,
                               ErrorHandler on_error, WrittenHandler on_written)
    : client_(client),
      options_(std::move(options)),
      on_error_(std::move(on_error)),
      on_written_(std::move(on_written)) {}

LeaderPodLabel::~LeaderPodLabel() { Stop(absl::ZeroDuration()).IgnoreError(); }

absl::Status LeaderPodLabel::Start() {
  if (options_.pod_name.empty() || options_.pod_namespace.empty()) {
    return absl::InvalidArgumentError(
        "the leader label needs this pod's name and namespace (POD_NAME and POD_NAMESPACE from "
        "the downward API)");
  }
  if (options_.label.empty()) return absl::InvalidArgumentError("the leader label's key is empty");
  if (writer_.joinable()) return absl::FailedPreconditionError("the leader label already started");
  writer_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void LeaderPodLabel::Set(bool leading) {
  absl::MutexLock lock(&mu_);
  desired_ = leading;
}

std::optional<bool> LeaderPodLabel::written() const {
  absl::MutexLock lock(&mu_);
  return written_;
}

absl::Status LeaderPodLabel::Stop(absl::Duration timeout) {
  absl::Status result;
  {
    absl::MutexLock lock(&mu_);
    auto landed = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return written_.has_value() && *written_ == desired_;
    };
    if (writer_.joinable() && !quit_) mu_.AwaitWithTimeout(absl::Condition(&landed), timeout);
    if (!landed()) {
      result =
          !last_error_.ok()
              ? last_error_
              : absl::DeadlineExceededError(absl::StrCat("the leader label was not written within ",
                                                         absl::FormatDuration(timeout)));
    }
    quit_ = true;
  }
  if (writer_.joinable()) writer_.join();
  return result;
}

absl::Status LeaderPodLabel::Write(bool leading) {
  const nlohmann::json patch = {
      {"metadata", {{"labels", {{options_.label, leading ? "true" : "false"}}}}}};
  absl::StatusOr<nlohmann::json> pod =
      client_->MergePatch(kPods, options_.pod_namespace, options_.pod_name, patch);
  if (!pod.ok()) {
    return absl::Status(pod.status().code(),
                        absl::StrCat("labelling pod ", options_.pod_namespace, "/",
                                     options_.pod_name, " ", options_.label, "=",
                                     leading ? "true" : "false", ": ", pod.status().message()));
  }
  return absl::OkStatus();
}

void LeaderPodLabel::Run() {
  BackoffPolicy policy;
  policy.initial = options_.retry_period;
  policy.max = std::max(options_.retry_period, absl::Seconds(30));
  Backoff backoff(policy);
  mu_.Lock();
  while (true) {
    auto due = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return quit_ || !written_.has_value() || *written_ != desired_;
    };
    mu_.Await(absl::Condition(&due));
    if (quit_) break;
    const bool want = desired_;
    mu_.Unlock();
    const absl::Status s = Write(want);
    if (!s.ok() && on_error_) on_error_(s);
    mu_.Lock();
    if (s.ok()) {
      const bool changed = written_ != want;
      written_ = want;
      last_error_ = absl::OkStatus();
      backoff.Reset();
      if (changed && on_written_) {
        mu_.Unlock();
        on_written_(want);
        mu_.Lock();
      }
      continue;
    }
    last_error_ = s;
    // Wait before trying again (a new Set doesn't cut the wait short: no hammering the server).
    mu_.AwaitWithTimeout(absl::Condition(&quit_), backoff.Next());
  }
  mu_.Unlock();
}

}  // namespace twinscale::kube
