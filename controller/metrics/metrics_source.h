// MetricsSource: where the live controller gets each pod's vLLM metrics (docs/architecture.md
// "Components and data flow", metrics in).
// Two implementations give the policy the same inputs:
//   PodScraper   (pod_scraper.h)    scrapes each pod's /metrics endpoint itself (source
//                                   Pods);
//   PromqlSource (promql_source.h)  asks a Prometheus server that scrapes the pods (source
//                                   Prometheus).
// Both turn a pod's samples into a PodObservation with ExtractVllmObservation, so a pod reads the
// same whichever way it was fetched; only `scraped_at` differs (when the pod's page was taken:
// the scraper's own time, or Prometheus' sample timestamp).
//
// Error meanings (docs/architecture.md "Error codes"). Per pod, in PodResult::reading: Unavailable
// (connection refused, HTTP error, body too large, Prometheus has no fresh samples for the pod),
// DeadlineExceeded (no complete answer in time), InvalidArgument (the page does not parse: "line N:
// ..."; or its vLLM values are unusable), FailedPrecondition (not a vLLM server). Whole-source
// errors, from Read itself: Unavailable / DeadlineExceeded when Prometheus can't answer,
// InvalidArgument for a bad configuration (a label matcher that is not a valid label name). The
// reconciler treats a pod without a reading as Stale, which blocks scale-in and never scales
// anything down by itself.
//
// Thread-safety: implementations are immutable after construction; Read may be called from
// several threads at once.
#ifndef TWINSCALE_CONTROLLER_METRICS_METRICS_SOURCE_H_
#define TWINSCALE_CONTROLLER_METRICS_METRICS_SOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/metrics/vllm_observation.h"

namespace twinscale::metrics {

// One pod to read: its name (what Prometheus' `pod` label holds) and where its server listens
// (spec.metrics.port and .path; what the scraper connects to, and what Prometheus' `instance`
// label holds as "ip:port" when the pods carry no pod label).
struct PodTarget {
  std::string pod;                // metadata.name
  std::string ip;                 // status.podIP (IPv4, or IPv6 without brackets)
  int32_t port = 8000;            // [8000]
  std::string path = "/metrics";  // ["/metrics"]
};

// One pod's metrics as of one scrape.
struct PodReading {
  absl::Time scraped_at;  // when the page was taken (scrape start, as Prometheus stamps it)
  PodObservation observation;
};

struct PodResult {
  std::string pod;                     // PodTarget::pod
  absl::StatusOr<PodReading> reading;  // the reading, or why there is none (see above)
};

class MetricsSource {
 public:
  virtual ~MetricsSource() = default;

  // Reads every pod of `pods`: one result per pod, in the order given. Per-pod failures are in the
  // results; a non-OK return means no pod could be read (see the file comment). Never throws.
  virtual absl::StatusOr<std::vector<PodResult>> Read(const std::vector<PodTarget>& pods) const = 0;
};

}  // namespace twinscale::metrics

#endif  // TWINSCALE_CONTROLLER_METRICS_METRICS_SOURCE_H_
