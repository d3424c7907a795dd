// RecordingHandler: an InformerHandler that records each call as "add ns/name", "update ns/name"
// or "delete ns/name", for the informer's tests against the in-memory client and the fake API
// server. Header-only. Thread-safe: the informer calls it from its own thread.
#ifndef TWINSCALE_TESTS_FAKES_RECORDING_HANDLER_H_
#define TWINSCALE_TESTS_FAKES_RECORDING_HANDLER_H_

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "controller/kube/informer.h"
#include "controller/kube/object_meta.h"
#include "nlohmann/json.hpp"

namespace twinscale::fakes {

class RecordingHandler : public kube::InformerHandler {
 public:
  void OnUpsert(const nlohmann::json* old_object, const nlohmann::json& object) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back(
        absl::StrCat(old_object == nullptr ? "add " : "update ", kube::ObjectKey(object)));
  }
  void OnDelete(const nlohmann::json& last) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back(absl::StrCat("delete ", kube::ObjectKey(last)));
  }
  // Waits (real time, up to 10 s) for `n` calls in all, then returns them and forgets them.
  std::vector<std::string> Take(size_t n) {
    absl::MutexLock lock(&mu_);
    const auto enough = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return calls_.size() >= n; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
    std::vector<std::string> out;
    out.swap(calls_);
    return out;
  }
  size_t count() {
    absl::MutexLock lock(&mu_);
    return calls_.size();
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace twinscale::fakes

#endif  // TWINSCALE_TESTS_FAKES_RECORDING_HANDLER_H_
