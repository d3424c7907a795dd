// Records core/v1 Events about objects ("kubectl describe ias x" shows them), the way client-go's
// recorder does, but synchronously:
//  - An Event names the object (involvedObject), a reason (CamelCase, e.g. "ScaledUp"), a
//    message, a type (Normal / Warning) and the source component ("twinscale"), with
//    firstTimestamp, lastTimestamp and count.
//  - A repeat of the same (object, type, reason, message) bumps the count and lastTimestamp of
//    the Event already written (a merge patch) instead of creating another; if that Event has
//    expired meanwhile (events live about an hour) a new one carries the count on.
//  - Each object has a token bucket (burst 25, one more every 5 minutes, as client-go): events
//    beyond it are dropped with ResourceExhausted, so a flapping object can't flood the server.
// Time comes from the injected Clock.
// Thread-safety: Record may be called from any thread; calls are serialized (they are rare).
#ifndef TWINSCALE_CONTROLLER_KUBE_EVENT_RECORDER_H_
#define TWINSCALE_CONTROLLER_KUBE_EVENT_RECORDER_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "controller/kube/kube_client.h"

namespace twinscale::kube {

// Which object an Event is about.
struct ObjectReference {
  std::string api_version;  // "twinscale.io/v1alpha1"
  std::string kind;         // "InferenceAutoscaler"
  std::string namespace_name;
  std::string name;
  std::string uid;
};
// The reference to an object as the API serves it (apiVersion, kind, metadata).
ObjectReference ReferenceTo(const nlohmann::json& object);

enum class EventType { kNormal, kWarning };

struct EventRecorderOptions {
  std::string component = "twinscale";       // source.component and reportingComponent
  std::string instance;                      // source.host and reportingInstance (the pod name)
  int burst = 25;                            // events per object before the rate limit applies
  absl::Duration refill = absl::Minutes(5);  // one more event per object per this long
  size_t max_remembered = 4096;     // distinct events remembered for aggregation (oldest forgotten)
  size_t max_message_bytes = 1024;  // longer messages are cut (the API server limits them too)
};

class EventRecorder {
 public:
  // `client` and `clock` must outlive the recorder.
  EventRecorder(KubeClient* client, const Clock* clock, EventRecorderOptions options = {});

  // Writes (or aggregates) an Event. ResourceExhausted when the object's rate limit dropped it;
  // the API's errors otherwise. Callers usually log and carry on: an event is never worth failing
  // a reconcile for.
  absl::Status Record(const ObjectReference& object, EventType type, std::string_view reason,
                      std::string_view message);

 private:
  struct Written {  // an Event already in the cluster, for aggregation
    std::string namespace_name;
    std::string name;
    int64_t count = 0;
    std::string first_timestamp;
    absl::Time last_used;
  };
  struct Bucket {
    double tokens = 0;
    absl::Time updated;
  };

  bool TakeToken(const std::string& object_key, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Remember(const std::string& key, Written written) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string NextEventName(const std::string& object_name, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  KubeClient* const client_;
  const Clock* const clock_;
  const EventRecorderOptions options_;

  absl::Mutex mu_;
  std::map<std::string, Written> written_ ABSL_GUARDED_BY(mu_);  // by aggregation key
  std::map<std::string, Bucket> buckets_ ABSL_GUARDED_BY(mu_);   // by object
  int64_t last_name_nanos_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_EVENT_RECORDER_H_
