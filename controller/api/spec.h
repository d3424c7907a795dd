// The InferenceAutoscaler (twinscale.io/v1alpha1) as typed C++ values: what the policy, the
// reconciler and `twinscale replay` read. The CRD in
// deploy/crds/twinscale.io_inferenceautoscalers.yaml is the source of truth for names, bounds and
// defaults; spec_loader.h turns YAML into these structs (validated, with the schema's defaults
// applied), so code downstream never sees YAML and can rely on every documented bound holding.
//
// Each field's default is written beside it, as the schema states it. The C++ initializers equal
// those defaults (a test checks that a minimal manifest loads to them), so a spec built in code
// behaves like a manifest that leaves the field out. std::optional marks fields without a schema
// default: their value comes from the deployment profile or from the running pods.
//
// Plain values: no behaviour beyond small helpers, copyable, safe to share between threads as
// const.
#ifndef TWINSCALE_CONTROLLER_API_SPEC_H_
#define TWINSCALE_CONTROLLER_API_SPEC_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "controller/api/scaling_rules.h"

namespace twinscale::api {

// spec.mode: how decisions are acted on.
enum class Mode {
  kDirect,     // "Direct": scale the target's /scale subresource
  kKeda,       // "KEDA": publish through KEDA's external-scaler gRPC protocol
  kHpa,        // "HPA": publish on the external metrics API for a plain HPA
  kRecommend,  // "Recommend": decide and report in status, never act (dry run)
};

// spec.routing: how the real fleet's traffic is spread, so the twin routes the same way.
enum class Routing {
  kRandom,         // "Random": a plain Service through kube-proxy
  kRoundRobin,     // "RoundRobin"
  kLeastRequests,  // "LeastRequests"
  kPrefixAware,    // "PrefixAware": a prefix-cache-aware gateway
};

// spec.metrics.source: where the fleet's vLLM metrics come from.
enum class MetricsSourceKind {
  kPods,        // "Pods": scrape each ready pod's endpoint
  kPrometheus,  // "Prometheus": query a Prometheus server
};

// The CRD's spelling of each enumerator ("Direct", "KEDA", ...), for status, logs and reports.
std::string_view ModeName(Mode mode);

// metadata: the parts of Kubernetes' ObjectMeta the controller uses. From a manifest written by
// hand only name (and perhaps namespace and labels) are set; from the API server all of them.
struct ObjectMeta {
  std::string name;                                // required
  std::string namespace_;                          // "" = the client's current namespace
  std::string uid;                                 // "" until the API server assigns one
  int64_t generation = 0;                          // 0 until the API server assigns one
  std::string resource_version;                    // "" until the API server assigns one
  std::map<std::string, std::string> labels;       // []
  std::map<std::string, std::string> annotations;  // []
};

// spec.targetRef: the workload to scale (anything with a /scale subresource).
struct TargetRef {
  std::string api_version;  // required, e.g. "apps/v1"
  std::string kind;         // required, e.g. "Deployment"
  std::string name;         // required; in the autoscaler's namespace
};

// spec.model: the deployment profile and its overrides. Unset overrides keep the profile's value
// (or, when pods run, what the pods report).
struct ModelSpec {
  std::string profile;                            // required, e.g. "llama-3.1-8b-h100-sxm-tp1"
  std::optional<int32_t> tensor_parallel;         // [from the profile] 1..64
  std::optional<int32_t> max_num_seqs;            // [from the profile or the pods] >= 1
  std::optional<int32_t> max_num_batched_tokens;  // [from the profile or the pods] >= 1
  std::optional<double> gpu_memory_utilization;   // [from the profile or the pods] (0, 1]
  std::optional<int32_t> block_size;              // [from the profile or the pods] 1|8|16|...|128
  std::optional<int32_t> max_model_len;           // [from the profile or the pods] >= 2
};

// spec.slo.ttft: a request meets the objective if its time-to-first-token is at most
// threshold + per_prompt_token x prompt tokens; `percentile` percent of requests must meet it.
struct TtftObjective {
  absl::Duration threshold = absl::Milliseconds(500);      // [500ms] > 0
  double percentile = 90;                                  // [90] (0, 100]
  absl::Duration per_prompt_token = absl::ZeroDuration();  // [0ms] >= 0
  // [30m] >= 0: how far back a surplus of served attainment is judged (PolicyConfig::
  // surplus_window); 0 spends none.
  absl::Duration surplus_window = absl::Minutes(30);

  // The TTFT target of one request with `prompt_tokens` tokens of prompt.
  absl::Duration TargetFor(int64_t prompt_tokens) const;
};

// spec.slo.itl: the gaps between output tokens; `percentile` percent must be at most threshold.
struct ItlObjective {
  absl::Duration threshold;  // required, > 0
  double percentile = 90;    // [90] (0, 100]
};

// spec.slo.target: the quality the fleet is held to over `window` (the SLO's error budget): at
// least `requests` percent of requests within the TTFT objective, and `minutes` percent of the
// minutes with traffic whose TTFT percentile meets the threshold (PolicyConfig::target_*; replay's
// AttainmentTarget).
struct SloTarget {
  double requests = 95;                     // [95] (0, 100]
  double minutes = 95;                      // [95] [0, 100]
  absl::Duration window = absl::Hours(24);  // [24h] > 0, <= 168h (7 days)
};

// spec.slo.
struct SloSpec {
  TtftObjective ttft;               // [{}: every field defaulted]
  std::optional<ItlObjective> itl;  // [none]
  SloTarget target;                 // [{}: every field defaulted]
};

// spec.scaleDown: the HPA's rules plus twinscale's own margin and clear-evidence window.
struct ScaleDownSpec {
  // [300 s window; no policies: twinscale's own rate (policy/rate_limit.h); selectPolicy Max]
  ScalingRules rules = TwinscaleDefaultScaleDown();
  // [0.8] (0, 1]: scale in only if the twin shows the TTFT objective held by the smaller fleet
  // with each request using at most this share of its slack (target minus unloaded TTFT).
  double safety_margin = 0.8;
  // [3m] >= 0: a scale-in to a size the twin shows clearly safe waits this long instead of the
  // whole stabilization window (0: never shorter).
  absl::Duration clearly_safe_window = absl::Minutes(3);
};

// spec.limits: guards on observed load; by default they only block scale-in.
struct Limits {
  double queue_depth_per_replica = 4;  // [4] > 0: mean waiting requests per ready replica
  double kv_cache_utilization = 0.85;  // [0.85] (0, 1]: mean KV-cache use of ready replicas
  bool enforce_on_scale_up = false;    // [false]: also scale up when a limit is exceeded
};

// spec.warmup.
struct WarmupSpec {
  std::optional<absl::Duration> expected;  // [from the profile] > 0: pod creation to ready
};

// spec.admission: advisory limits published for a gateway to enforce.
struct AdmissionSpec {
  bool enabled = false;                          // [false]
  std::optional<int32_t> max_queue_per_replica;  // [computed from the SLO] >= 0
};

// spec.metrics.prometheus.
struct PrometheusSpec {
  std::string url;                                    // required, http(s)://host[:port][/path]
  std::map<std::string, std::string> label_matchers;  // [] label name -> value, ANDed into queries
};

// spec.metrics.
struct MetricsSpec {
  MetricsSourceKind source = MetricsSourceKind::kPods;  // [Pods]
  int32_t port = 8000;                                  // [8000] 1..65535 (source Pods)
  std::string path = "/metrics";                        // ["/metrics"] (source Pods)
  std::optional<PrometheusSpec> prometheus;             // required when source is Prometheus
  absl::Duration interval = absl::Seconds(15);          // [15s] > 0: read and decide this often
  absl::Duration stale_after = absl::Seconds(45);       // [45s] > interval
};

// spec.
struct InferenceAutoscalerSpec {
  TargetRef target_ref;                         // required
  Mode mode = Mode::kRecommend;                 // [Recommend]
  int32_t min_replicas = 1;                     // [1] >= 1 (no scale-to-zero in v1alpha1)
  int32_t max_replicas = 1;                     // required, >= min_replicas
  ModelSpec model;                              // required
  Routing routing = Routing::kRandom;           // [Random]
  SloSpec slo;                                  // [{}]
  ScalingRules scale_up = HpaDefaultScaleUp();  // [{}: the HPA's: 0 s; max(4 pods, 100%) per 15 s]
  ScaleDownSpec scale_down;                     // [{}: see ScaleDownSpec]
  Limits limits;                                // [{}]
  WarmupSpec warmup;                            // [none]
  AdmissionSpec admission;                      // [{}]
  MetricsSpec metrics;                          // [{}]
};

// One InferenceAutoscaler object. Its status is written by the controller and is not part of what
// the loader reads.
struct InferenceAutoscaler {
  ObjectMeta metadata;
  InferenceAutoscalerSpec spec;
};

}  // namespace twinscale::api

#endif  // TWINSCALE_CONTROLLER_API_SPEC_H_
