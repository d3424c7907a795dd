// The steps of a reconcile pass (reconciler.h), as the functions that carry their rules: read spec
// -> read target -> read pods -> decide -> act -> write status. The Reconciler strings them
// together and owns what they report (conditions, events, logs, metrics); these functions decide
// and, where a step is a request to the API server, make it. Pure unless they take a
// kube::KubeClient. Thread-safety: none needed; nothing here keeps state.
#ifndef TWINSCALE_CONTROLLER_RECONCILE_RECONCILE_STEPS_H_
#define TWINSCALE_CONTROLLER_RECONCILE_RECONCILE_STEPS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/api/spec.h"
#include "controller/kube/resource_ref.h"
#include "controller/metrics/metrics_source.h"
#include "controller/metrics/prometheus_arrivals.h"
#include "controller/policy/decider.h"
#include "controller/policy/decision.h"
#include "controller/policy/scale_in_victims.h"
#include "controller/reconcile/autoscaler_status.h"
#include "controller/reconcile/kube_pod.h"
#include "controller/state/arrival_history.h"
#include "controller/state/cluster_view.h"
#include "controller/state/fleet_snapshot.h"
#include "nlohmann/json_fwd.hpp"

namespace twinscale {
namespace kube {
class KubeClient;
}  // namespace kube
namespace reconcile {

// The annotation the ReplicaSet controller ranks pods by when it scales in (lowest first), and the
// value twinscale marks its scale-in victims with.
inline constexpr char kDeletionCost[] = "controller.kubernetes.io/pod-deletion-cost";
inline constexpr char kVictimCost[] = "-1000";

// ---- 1. Read spec.

// The object's spec and the decider built for it, kept between passes.
struct SpecState {
  int64_t generation = -1;  // of the spec the decider was built for
  std::optional<api::InferenceAutoscalerSpec> spec;
  std::unique_ptr<policy::Decider> decider;
};

// Parses InferenceAutoscaler `object` (its key "namespace/name" names it in messages) and makes
// `state` hold its spec and a decider for it: on the first pass a decider from `factory`, started
// from `calibration` (the status' when there is one); on a pass with a new `generation` the same
// decider reconfigured; otherwise nothing changes. InvalidArgument naming the field when the
// spec doesn't parse, or the factory's error when it can't be resolved; `state` then keeps what
// it had.
absl::Status ResolveSpec(const nlohmann::json& object, const std::string& key, int64_t generation,
                         const std::optional<AutoscalerStatus::Calibration>& calibration,
                         policy::DeciderFactory& factory, SpecState& state);

// The buckets of the status' arrival history `saved` that a new decider's history (keeping
// `retention`) starts from at `now`: InvalidArgument, from the decoder, when its data is damaged
// (arrival_history_codec.h); FailedPrecondition when it ended more than `retention` before `now`
// (the history would keep none of it) or ends after `now` (a clock gone wrong, or not ours).
absl::StatusOr<state::ArrivalBuckets> RestorableArrivals(
    const AutoscalerStatus::ArrivalHistory& saved, absl::Duration retention, absl::Time now);

// What a history with buckets of `bucket` and `retention` asks Prometheus for at `now`: the whole
// buckets of the retention that have closed by `now` (the grid ends at the bucket boundary at or
// before `now`).
struct ArrivalQuery {
  absl::Time start;
  absl::Duration step;
  int64_t steps = 0;
};
ArrivalQuery ArrivalQueryFor(absl::Duration bucket, absl::Duration retention, absl::Time now);

// Prometheus' arrivals as buckets: each observed step observed throughout, the others not at all.
state::ArrivalBuckets ArrivalBucketsOf(const metrics::ArrivalSeries& series);

// ---- 2. Read target.

// The /scale-bearing resource a targetRef names: the two apps/v1 kinds by name, anything else as
// group/version and the lower-case plural of its kind (LeaderWorkerSet -> leaderworkersets).
kube::ResourceRef ScaleTargetResource(const api::TargetRef& target);

// What a pass reads of the target's autoscaling/v1 Scale.
struct ScaleRead {
  int32_t spec_replicas = 0;     // spec.replicas (0 when unset)
  std::string selector;          // status.selector ("" when unset: the pods are unknown)
  std::string resource_version;  // metadata.resourceVersion: the precondition of the write
};
ScaleRead ParseScale(const nlohmann::json& scale);

// Another autoscaler of `target` in namespace `ns` ("HorizontalPodAutoscaler x", "ScaledObject
// y"), or "" when none. A resource the cluster doesn't serve (no KEDA installed: 404) means no
// such autoscaler; any other failure to list is returned.
absl::StatusOr<std::string> OtherAutoscaler(kube::KubeClient& client, const std::string& ns,
                                            const api::TargetRef& target);

// ---- 3. Read pods.

// A pass's pods as the informer listed them.
struct ListedPods {
  std::vector<KubePod> pods;          // in list order, the readable ones
  std::set<std::string> marked;       // names of those carrying kDeletionCost = kVictimCost
  std::vector<absl::Status> skipped;  // why each unreadable pod was left out
};
ListedPods ParseListedPods(const std::vector<nlohmann::json>& listed);

// Whether a metrics source built for `built_for` (nullopt: none built) must be built again for
// `wanted`: the source, port, path, staleAfter or Prometheus endpoint changed (the interval
// doesn't matter to a source).
bool MetricsSourceOutdated(const std::optional<api::MetricsSpec>& built_for,
                           const api::MetricsSpec& wanted);

// The pods to read metrics from: those with an address whose server has started (not Pending).
std::vector<metrics::PodTarget> ScrapeTargets(const std::vector<KubePod>& pods,
                                              const api::MetricsSpec& spec);

// A read's results split into the readings (by pod; the first of duplicates) and the pods that
// could not be read with why.
struct PodReadings {
  std::map<std::string, metrics::PodReading> readings;
  std::map<std::string, std::string> failing;
  int32_t unread = 0;  // failed results
};
PodReadings SplitReadings(std::vector<metrics::PodResult> results);

// The failing pods for a log line: the first three by name with their errors, then how many more
// ("a: e1; b: e2; c: e3; and 2 more").
std::string DescribeFailing(const std::map<std::string, std::string>& failing);

// ---- 4. Decide.

// What the decider is shown: each pod's stage, age, time Ready and engine flags at `now`, with its
// reading when it has one.
state::ClusterView ClusterViewOf(const std::vector<KubePod>& pods,
                                 const std::map<std::string, metrics::PodReading>& readings,
                                 int32_t spec_replicas, absl::Time now);

// The pods' warm-up (creation to Ready) as status reports it: the upper median over the pods that
// have been Ready (a Ready time before creation is left out); nullopt when none has.
std::optional<absl::Duration> MeasuredWarmup(const std::vector<KubePod>& pods);

// ---- 5. Act.

// The candidates among `pods` (Terminating ones aren't), with their requests in flight from
// `readings`, for policy::ChooseScaleInVictims (the one victim rule).
std::vector<policy::VictimCandidate> VictimCandidatesOf(
    const std::vector<KubePod>& pods, const std::map<std::string, metrics::PodReading>& readings);

// A /scale write and what it left.
struct ScaleWrite {
  absl::Status status;  // the last write's or re-read's error; OK when the target has `replicas`
  int32_t current = 0;  // the replicas the target has as far as the writes saw
  int32_t base = 0;     // the spec.replicas the write changed (the last one read)
  // The write landed and changed the replica count: a scale event.
  bool Scaled(int32_t replicas) const {
    return status.ok() && current == replicas && base != replicas;
  }
};

// Sets the target's /scale spec.replicas to `replicas` with `read`'s resourceVersion as the
// precondition. On a 409 it reads /scale again and re-applies, four writes at most, and stops
// there when someone else already set `replicas`. `on_write` is told each write's outcome ("ok",
// "conflict", "error").
ScaleWrite WriteScale(kube::KubeClient& client, const kube::ResourceRef& resource,
                      const std::string& ns, const std::string& name, const ScaleRead& read,
                      int32_t replicas, const std::function<void(std::string_view)>& on_write);

// ---- 6. Write status.

// The decision's reasons for a message: "code: message; code".
std::string ReasonsText(const policy::Decision& decision);

// Ready pods and how many of them read fresh: as the policy judged freshness (staleAfter) when it
// built a snapshot, else by whether this pass read them.
struct Freshness {
  int32_t fresh = 0;
  int32_t readable = 0;
};
Freshness FreshnessOf(const state::FleetSnapshot* snapshot, const std::vector<KubePod>& pods,
                      const std::map<std::string, metrics::PodReading>& readings);

// Sets MetricsFresh from the pass's reads: False when the source failed (`source_error` non-empty,
// reason MetricsSourceFailed) or no Ready pod read fresh (ScrapesStale, `unread` failed reads),
// else True. Returns whether the inputs are stale (False), which the outputs publish as "hold".
bool SetMetricsFresh(AutoscalerStatus& status, const std::string& source_error, Freshness freshness,
                     int32_t unread, absl::Time now, int64_t generation);

// Whether condition `type` holds `value` in `next` and did not in `written`, or holds it for
// another reason now: when an episode's Warning event is due (once per episode and cause, not per
// pass).
bool ConditionBegan(const AutoscalerStatus& written, const AutoscalerStatus& next,
                    std::string_view type, std::string_view value);

// status.arrivalHistory for a decider's `history` at `now`: the buckets closed by `now`, encoded
// (arrival_history_codec.h). `written` (the status' own) when it already holds those buckets, so a
// pass between two closings encodes nothing and changes nothing; also `written` when the history
// has no closed bucket yet (a new leader that had nothing to restore keeps the old one's until its
// own first bucket closes).
std::optional<AutoscalerStatus::ArrivalHistory> ArrivalHistoryStatus(
    const state::ArrivalHistory& history, absl::Time now,
    const std::optional<AutoscalerStatus::ArrivalHistory>& written);

// status.observed from the snapshot the decision was made on: the queue per fresh Ready replica
// and the KV use (when any is), the arrival rate and observed TTFT p90 (when measured).
AutoscalerStatus::Observed ObservedOf(const state::FleetSnapshot& snapshot);

}  // namespace reconcile
}  // namespace twinscale

#endif  // TWINSCALE_CONTROLLER_RECONCILE_RECONCILE_STEPS_H_
