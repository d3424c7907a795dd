// PromqlSource: the MetricsSource for spec.metrics.source = Prometheus. It reads the same
// PodObservations the PodScraper would, from a Prometheus server that scrapes the pods.
//
// One instant query per Read fetches the RAW samples of every vLLM series (a range-vector
// selector, so Prometheus returns each sample with its own scrape timestamp rather than the
// evaluation time):
//     {__name__=~"vllm:.*", __name__!~".*_created", <label matchers>}[<lookback>]
// evaluated at the injected Clock's now. The series are grouped per pod by the pod label
// (`pod_label`, "pod" by default: what Kubernetes service discovery relabels to), and a series
// without that label is matched by its `instance` label to the target's "ip:port" (a static
// scrape config). Per pod, the newest scrape wins: scraped_at is the newest sample timestamp among
// the pod's series, and only the samples carrying that timestamp (all the samples of that one
// scrape: Prometheus stamps a scrape's samples alike) are rebuilt into an exposition (families,
// labels, values) and read with ExtractVllmObservation, the extraction the scraper uses. So the
// staleness the policy sees is Prometheus' own scrape age.
//
// Errors (metrics_source.h): Read fails as a whole with Unavailable / DeadlineExceeded naming the
// URL when Prometheus is down, answers an HTTP error or its own error JSON, and InvalidArgument
// for a label matcher or pod label that is not a valid label name. Per pod: Unavailable "no fresh
// samples" when Prometheus has nothing for the pod within `lookback` (not scraped yet, scrape
// failing, or excluded by the matchers), and the extractor's errors for unusable values.
//
// Thread-safety: immutable after construction; Read may run on several threads.
#ifndef TWINSCALE_CONTROLLER_METRICS_PROMQL_SOURCE_H_
#define TWINSCALE_CONTROLLER_METRICS_PROMQL_SOURCE_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "controller/metrics/metrics_source.h"
#include "controller/metrics/prometheus_arrivals.h"
#include "controller/metrics/prometheus_client.h"

namespace twinscale::metrics {

struct PromqlSourceOptions {
  std::string url;  // required: spec.metrics.prometheus.url, e.g. "http://prometheus:9090"
  // [] spec.metrics.prometheus.label_matchers: label name -> value, each ANDed in as name="value".
  std::map<std::string, std::string> label_matchers;
  std::string pod_label = "pod";  // ["pod"] the label naming the pod; else `instance` is used
  // [45s] > 0: only samples this recent count (spec.metrics.stale_after): a pod whose newest
  // sample is older has no fresh samples.
  absl::Duration lookback = absl::Seconds(45);
  absl::Duration timeout = absl::Seconds(10);  // [10s] per query (inactivity: prometheus_client.h)
  std::string model_name_filter;               // [""]: every served model; else only this one
};

class PromqlSource final : public MetricsSource {
 public:
  // `clock` must outlive the source.
  PromqlSource(const Clock& clock, PromqlSourceOptions options);

  absl::StatusOr<std::vector<PodResult>> Read(const std::vector<PodTarget>& pods) const override;

  const PromqlSourceOptions& options() const { return options_; }

 private:
  const Clock& clock_;
  PromqlSourceOptions options_;
  PrometheusClient client_;
};

// The query Read sends (see the file comment); InvalidArgument naming a matcher whose label name
// is not [a-zA-Z_][a-zA-Z0-9_]*. Values are escaped as PromQL strings.
absl::StatusOr<std::string> VllmSamplesQuery(const std::map<std::string, std::string>& matchers,
                                             absl::Duration lookback);

// The PromQL selector of `matchers` ("{a=\"x\",b=\"y\"}", or "" for none); InvalidArgument as
// VllmSamplesQuery's.
absl::StatusOr<std::string> LabelMatchersSelector(
    const std::map<std::string, std::string>& matchers);

// The arrivals the Prometheus at `url` recorded for the series `matchers` select, on the grid of
// `steps` steps of `step` from `start` (FetchArrivals, prometheus_arrivals.h, through a
// PrometheusClient with `timeout` per request): the controller's seed of the seasonal forecast's
// history when it starts without one. Errors as FetchArrivals' and LabelMatchersSelector's.
absl::StatusOr<ArrivalSeries> QueryPrometheusArrivals(
    const std::string& url, const std::map<std::string, std::string>& matchers, absl::Time start,
    absl::Duration step, int64_t steps, absl::Duration timeout = absl::Seconds(30));

// The pure half of Read: one PodResult per target, in order, from the query's series (a matrix of
// raw samples). `source` names the Prometheus in messages. Series matching no target are ignored.
std::vector<PodResult> ReadingsFromSamples(const PromMatrix& series,
                                           const std::vector<PodTarget>& pods,
                                           const PromqlSourceOptions& options,
                                           std::string_view source);

}  // namespace twinscale::metrics

#endif  // TWINSCALE_CONTROLLER_METRICS_PROMQL_SOURCE_H_
