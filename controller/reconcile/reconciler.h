// The Reconciler: one pass over one InferenceAutoscaler — read spec -> read target -> read pods ->
// decide -> act -> write status (docs/architecture.md "Components and data flow"), one private
// method per step, the steps' rules in reconcile_steps.h. A pass:
//   1. reads the object; a spec that doesn't parse or resolve gets SpecValid=False naming the
//      field, a Warning event (once per generation), and nothing else happens;
//   2. reads the target's /scale (spec.replicas, status.selector) and, in Direct mode, looks for
//      another autoscaler of the same target (an HPA, a KEDA ScaledObject): if there is one,
//      ScalingActive=False names it and nothing is written to /scale;
//   3. takes the target's pods from the pod informers (pod_informers.h: list then watch by the
//      selector, no list per pass; pods not listed yet decide nothing) and reads their vLLM
//      metrics through the spec's source (the pods' /metrics, or Prometheus); a pod that can't be
//      read is Stale, which the policy treats as "hold": a failed read never scales in (the log
//      names the failing pods when they change, not every pass);
//   4. asks the target's Decider (the twin-backed policy) for the decision; starting pods the
//      policy stopped counting as capacity (not Ready past the warm-up deadline, or
//      unschedulable) show as PodsStalled=True with a Warning event when that begins;
//   5. Direct: hands the Actuator (actuator.h) the count and, scaling a Deployment in, the victims
//      (policy::ChooseScaleInVictims; its ReplicaSet honours the marks): the binary's KubeActuator
//      marks them with controller.kubernetes.io/pod-deletion-cost and patches /scale with the read
//      resourceVersion as precondition (a 409 re-reads and retries); records ScaledUp / ScaledDown
//      events, and the write that lands as the decider's scale event (Decider::NoteScaled: its rate
//      limits count changes that happened, never a decision as such). Recommend, KEDA and HPA: the
//      decision goes to status (and to the outputs) only; every mode's decision is published to the
//      DecisionBoard when one is given (the KEDA scaler serves KEDA-mode targets from it, the
//      admission API all of them), with the inputs marked stale when MetricsFresh is False (the
//      outputs then publish "hold");
//   6. writes status when it changed meaningfully (autoscaler_status.h; the arrival history
//      changes when one of its buckets closes) — a merge patch of the /status subresource, which
//      bumps resourceVersion but not generation, so the watch that brings it back doesn't trigger
//      another pass. MetricsFresh=False (MetricsSourceFailed, ScrapesStale) gets a Warning event
//      when it begins or its reason changes, not every pass.
// Per-object state (the decider with its windows, calibration and arrival history, the status last
// written) lives here between passes. On the first pass after a start or failover the calibration
// and the seasonal forecast's arrival history are read back from the status (status.arrivalHistory,
// rewritten as each 5-minute bucket closes); a history too old or damaged to restore, or none,
// is read instead from Prometheus when spec.metrics.source is Prometheus (a range query over the
// history's retention, a week, at its bucket's step); a failed or empty query leaves the history
// empty, logged, and the pass goes on. Thread-safety: passes over different objects may run
// concurrently; one object is never reconciled by two threads at once (the work queue guarantees
// it).
#ifndef TWINSCALE_CONTROLLER_RECONCILE_RECONCILER_H_
#define TWINSCALE_CONTROLLER_RECONCILE_RECONCILER_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/api/spec.h"
#include "controller/common/clock.h"
#include "controller/common/json_log.h"
#include "controller/kube/event_recorder.h"
#include "controller/metrics/metrics_source.h"
#include "controller/metrics/prometheus_arrivals.h"
#include "controller/policy/decider.h"
#include "controller/reconcile/autoscaler_status.h"
#include "controller/reconcile/reconcile_steps.h"

namespace twinscale {
namespace kube {
class KubeClient;
}  // namespace kube
namespace outputs {
class DecisionBoard;
}  // namespace outputs
namespace reconcile {
struct ControllerMetrics;
class Actuator;
class PodSource;

// The source of a spec's metrics (PodScraper or PromqlSource in the binary).
using MetricsSourceFactory = std::function<absl::StatusOr<std::unique_ptr<metrics::MetricsSource>>(
    const api::MetricsSpec& spec, const std::string& model_name)>;

// The arrivals Prometheus recorded for a spec's fleet on a grid of `steps` steps of `step` from
// `start` (metrics::FetchArrivals with the spec's Prometheus and label matchers, in the binary).
using PrometheusArrivals = std::function<absl::StatusOr<metrics::ArrivalSeries>(
    const api::MetricsSpec& spec, absl::Time start, absl::Duration step, int64_t steps)>;

struct ReconcilerDeps {
  kube::KubeClient* client = nullptr;          // required
  const Clock* clock = nullptr;                // required
  PodSource* pods = nullptr;                   // required: the targets' pods (PodInformers)
  policy::DeciderFactory* deciders = nullptr;  // required
  MetricsSourceFactory metrics_sources;        // required
  kube::EventRecorder* events = nullptr;       // optional
  JsonLogger* log = nullptr;                   // optional
  ControllerMetrics* metrics = nullptr;        // optional
  // Optional: asked once per new decider whose spec reads Prometheus and whose status holds no
  // arrival history to restore.
  PrometheusArrivals prometheus_arrivals;
  // Optional: where each pass's decision is published for the gRPC outputs (KEDA's external
  // scaler, the admission API); Forget removes the object's entry.
  outputs::DecisionBoard* board = nullptr;
  // Optional: what carries out Direct mode's scale changes; a KubeActuator over `client` when null.
  Actuator* actuator = nullptr;
};

struct ReconcileResult {
  // When to reconcile this object again (its interval, or sooner to retry); nullopt when the
  // object is gone.
  std::optional<absl::Duration> requeue_after;
  absl::Status status;  // what went wrong, if anything (also in the object's conditions)
};

class Reconciler {
 public:
  explicit Reconciler(ReconcilerDeps deps);
  ~Reconciler();
  ReconcileResult Reconcile(const std::string& ns, const std::string& name);
  // Forgets an object's state (it was deleted), its published decision and its pod informer.
  void Forget(const std::string& ns, const std::string& name);

 private:
  struct TargetState;
  struct Pass;
  // The state kept for object `key` between passes (created on its first pass).
  TargetState& StateFor(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_);

  // The steps of a pass, in order (the list above; their rules are in reconcile_steps.h). A step
  // that returns a result ends the pass with it, its status written; nullopt goes on to the next.
  // Read spec: parses the object and builds or reconfigures its decider; SpecValid.
  std::optional<ReconcileResult> ReadSpec(Pass& pass);
  // A new decider's arrival history: from the status, else from Prometheus (the file comment).
  void SeedArrivalHistory(Pass& pass);
  // Read target: /scale and, in Direct mode, another autoscaler of the target.
  std::optional<ReconcileResult> ReadTarget(Pass& pass);
  // Read pods: the informer's pods of the target and their metrics (the source rebuilt when the
  // spec changed it); a failed read of the metrics goes on, as stale inputs.
  std::optional<ReconcileResult> ReadPods(Pass& pass);
  // Decide: the decider's decision on the pass's view.
  policy::Decision Decide(Pass& pass);
  // Act: in Direct mode marks scale-in victims and writes /scale; ScalingActive in every mode.
  // The write's error, if any.
  absl::Status Act(Pass& pass, const policy::Decision& decision);
  // Write status: MetricsFresh, SloAtRisk, PodsStalled and the status fields, the metrics, the
  // published decision; then the status write. The pass's result.
  ReconcileResult WriteStatus(Pass& pass, const policy::Decision& decision,
                              const absl::Status& act_status);

  // The merge patch of /status when the pass's status differs meaningfully from the one written.
  absl::Status PatchStatus(Pass& pass);
  void Record(const Pass& pass, kube::EventType type, std::string_view reason,
              const std::string& message);
  void Log(const Pass& pass, LogLevel level, std::string_view msg,
           std::initializer_list<LogField> fields);
  void CountError(const char* stage);

  ReconcilerDeps deps_;
  std::unique_ptr<Actuator> own_actuator_;  // deps_.actuator's default
  // Guards the map, not the states: the work queue hands a key to one worker at a time.
  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<TargetState>> states_ ABSL_GUARDED_BY(mu_);
};

}  // namespace reconcile
}  // namespace twinscale

#endif  // TWINSCALE_CONTROLLER_RECONCILE_RECONCILER_H_
