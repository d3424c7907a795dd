// PodScraper: the MetricsSource for spec.metrics.source = Pods. It GETs every pod's vLLM /metrics
// page over plain HTTP, many pods at once, and reads each page with ParsePrometheusText and
// ExtractVllmObservation (the same code replay uses on the simulated fleet's text).
//
// Per scrape (see metrics_source.h for the codes' meanings):
//   - a hard deadline of `timeout` for the whole exchange (connect, headers, body): a pod that
//     accepts the connection and then says nothing gives DeadlineExceeded after `timeout`, not
//     after the HTTP library's inactivity timer;
//   - Unavailable for a refused or reset connection, an HTTP status other than 200, and a body
//     longer than `max_body_bytes` (reading stops there; a runaway page can't exhaust memory);
//   - InvalidArgument "pod P (http://...): line N: ..." for a page that doesn't parse, with the
//     parser's line number; FailedPrecondition for a page with no vllm:* family (a sidecar, a
//     wrong port); InvalidArgument for unusable vLLM values (ExtractVllmObservation's rules).
// Several engines in one pod (the `engine` label of a data-parallel server) come back as several
// EngineObservations of one PodObservation; `model_name_filter` keeps one served model's samples.
//
// Concurrency: at most `max_concurrency` scrapes are in flight; Read returns when every pod has
// its result, so N hung pods cost about ceil(N / max_concurrency) x timeout.
// `scraped_at` is the injected Clock's time when the request was sent (as Prometheus stamps a
// scrape with its start).
//
// The HTTP machinery (cpprestsdk) lives in the .cc: this header carries no cpprest include.
// Thread-safety: immutable after construction; Read and ScrapeOne may run on several threads.
// Nothing throws out of this class.
#ifndef TWINSCALE_CONTROLLER_METRICS_POD_SCRAPER_H_
#define TWINSCALE_CONTROLLER_METRICS_POD_SCRAPER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "controller/metrics/metrics_source.h"

namespace twinscale::metrics {

struct PodScraperOptions {
  absl::Duration timeout = absl::Seconds(5);  // [5s] > 0: the whole scrape of one pod
  int32_t max_concurrency = 32;               // [32] >= 1: scrapes in flight at once
  // [16 MiB] > 0. A vLLM page is about 20-40 KB per engine and model; a data-parallel pod with
  // many engines is a few hundred KB.
  int64_t max_body_bytes = int64_t{16} << 20;
  std::string model_name_filter;  // [""]: every served model; else only this model_name
};

class PodScraper final : public MetricsSource {
 public:
  // `clock` must outlive the scraper. Out-of-range options are clamped to their minimum.
  PodScraper(const Clock& clock, PodScraperOptions options = {});

  // Scrapes every target concurrently (see the file comment); always OK, per-pod errors inside.
  absl::StatusOr<std::vector<PodResult>> Read(const std::vector<PodTarget>& pods) const override;

  // One pod, on the calling thread (blocks up to `timeout`).
  absl::StatusOr<PodReading> ScrapeOne(const PodTarget& pod) const;

  const PodScraperOptions& options() const { return options_; }

 private:
  const Clock& clock_;
  PodScraperOptions options_;
};

// "http://<ip>:<port><path>" (an IPv6 address in brackets; a path without a leading "/" gets one):
// the URL scraped for `pod`, also used in error messages.
std::string ScrapeUrl(const PodTarget& pod);

}  // namespace twinscale::metrics

#endif  // TWINSCALE_CONTROLLER_METRICS_POD_SCRAPER_H_
