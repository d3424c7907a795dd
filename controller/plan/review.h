// The capacity review file `twinscale plan` reads: the baseline workload, the SLO, the deployment
// profiles to compare with their price per GPU-hour, and named scenarios, each a set of changes to
// the baseline. deploy/samples/plan/capacity-review.yaml is the documented example; docs/plan.md is
// the manual.
//
//   kind: CapacityReview                # required, as written
//   baseline:                           # exactly one of trace, rateCurve, prometheus, synthetic
//     trace: {path: FILE, format: auto, rateScale: 1, timeScale: 1, span: 10m}
//     rateCurve: {path: CSV, lengthsFrom: TRACE, start: 72h, span: 1h, timeScale: 1, peakRate: 0}
//     prometheus: {url: URL, selector: '{...}', range: 1h, step: 15s, end: now}
//     synthetic: {rate: 40, duration: 10m, arrivalCv: 1,
//                 prompt: {mean: 1000, stddev: 0, distribution: auto, min: 1, max: 131072},
//                 output: {mean: 200, ...}}
//   slo: {ttft: 500ms, percentile: 90, perPromptToken: 0ms, itl: 0ms, itlPercentile: 90}
//   profiles:                           # one or more
//     - {profile: llama-3.1-8b-h100-sxm-tp1, gpuHourPrice: 2.5}
//     - {profile: llama-3.1-8b-h100-sxm-tp1, gpu: a100-80g, gpuHourPrice: 1.6, name: a100}
//   scenarios:                          # zero or more; the baseline itself is always row one
//     - name: launch                    # unique, not "baseline"
//       rate: 2                         # arrivals x k (the trace's shape kept)
//       promptLength: 1.5               # every prompt x k
//       outputLength: 1.5               # every output x k
//       longContext: {share: 0.05, promptTokens: 32000}
//       retrySpike: {share: 0.2, timeout: 30s, start: 0s, span: 0s}
//       prefixCacheMiss: true           # no prefix reuse
//       burst: {peakToMean: 3, window: 2m, at: 5m}
//   plannedReplicas: 0   # the fleet headroom is read at (0: the baseline's answer per profile)
//   seeds: 3             # seeds 1..3 (from `seed`)
//   seed: 1
//   maxReplicas: 256
//   router: random                      # the fleet's router (random, least-requests, ...)
//   emitProfile: ""                     # the profile --emit-policy writes for; "": the cheapest
//
// Durations are Go-style ("90s", "2m", "1h30m"). Every key is checked: an unknown one is an error
// (a typo never passes silently), and so is every value out of range.
//
// Errors are InvalidArgument, one line, naming the source, the 1-based line and the key path:
//   "review.yaml:14: scenarios[2].burst.peakToMean: must be > 1, got 0.5"
// YAML syntax errors name the line and column. LoadReviewFile returns NotFound for a file that
// cannot be opened, and InvalidArgument for one larger than kMaxReviewBytes. No exception escapes.
// Relative paths in the file (trace, rateCurve, lengthsFrom) are kept as written; the caller
// resolves them (against the review file's directory, then the working directory).
//
// Pure apart from LoadReviewFile's read. Thread-safe.
#ifndef TWINSCALE_CONTROLLER_PLAN_REVIEW_H_
#define TWINSCALE_CONTROLLER_PLAN_REVIEW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "simulator/model/router.h"
#include "simulator/workload/generators.h"

namespace twinscale::plan {

// A review file larger than this is refused before it is parsed (a review is a page of YAML).
inline constexpr int64_t kMaxReviewBytes = 1 << 20;
// At most this many scenarios and profiles: the review's runs grow with their product.
inline constexpr int32_t kMaxScenarios = 64;
inline constexpr int32_t kMaxProfiles = 8;

struct TraceBaseline {
  std::string path;
  std::string format = "auto";                 // sim::ParseTraceFormat's names
  double rate_scale = 1;                       // (0, 1000]: ScaleRate, the shape kept
  double time_scale = 1;                       // > 0: ScaleTime
  absl::Duration span = absl::ZeroDuration();  // > 0: only the first `span` (after scaling)
};

struct RateCurveBaseline {
  std::string path;          // a ServeGen aggregate rate CSV
  std::string lengths_from;  // a request trace whose (prompt, output) pairs are drawn
  absl::Duration start = absl::ZeroDuration();
  absl::Duration span = absl::ZeroDuration();  // 0: to the curve's end
  double time_scale = 1;                       // > 0
  double peak_rate = 0;                        // >= 0; 0: the curve's own
};

struct PrometheusBaseline {
  std::string url;       // http(s)://host:port
  std::string selector;  // "" or {label="value",...}
  absl::Duration range = absl::Hours(1);
  absl::Duration step = absl::Seconds(15);
  std::string end = "now";  // "now" or RFC 3339
};

struct SyntheticBaseline {
  double rate = 0;                              // req/s, > 0
  absl::Duration duration = absl::Minutes(10);  // > 0
  double arrival_cv = 1;                        // > 0: gamma gaps' CV (1: Poisson)
  sim::LengthDistribution prompt, output;  // kind from `distribution` (auto: gaussian if stddev)
};

struct Baseline {
  enum class Kind { kTrace, kRateCurve, kPrometheus, kSynthetic };
  Kind kind = Kind::kSynthetic;
  TraceBaseline trace;
  RateCurveBaseline rate_curve;
  PrometheusBaseline prometheus;
  SyntheticBaseline synthetic;
};

struct Slo {
  absl::Duration ttft = absl::Milliseconds(500);           // > 0
  double percentile = 90;                                  // (0, 100]
  absl::Duration per_prompt_token = absl::ZeroDuration();  // >= 0
  absl::Duration itl = absl::ZeroDuration();               // >= 0; 0: no ITL objective
  double itl_percentile = 90;                              // (0, 100]
};

struct ProfileChoice {
  std::string name;                        // the row's label: `name`, or the profile as resolved
  std::string profile;                     // a deployment profile (twinscale profiles)
  std::optional<std::string> model, gpu;   // overrides, as simulate's --model / --gpu
  std::optional<int32_t> tensor_parallel;  // >= 1
  double gpu_hour_price = 0;               // > 0, in the review's currency per GPU-hour
  int line = 0;                            // 1-based line of the entry, for messages
};

struct Scenario {
  std::string name;
  int line = 0;
  double rate = 1;           // > 0, <= 1000
  double prompt_length = 1;  // > 0, <= 100
  double output_length = 1;  // > 0, <= 100
  struct LongContext {
    double share = 0;           // (0, 1]
    int32_t prompt_tokens = 0;  // >= 1
  };
  std::optional<LongContext> long_context;
  struct RetrySpike {
    double share = 0;                             // (0, 1]
    absl::Duration timeout = absl::Seconds(30);   // > 0
    absl::Duration start = absl::ZeroDuration();  // >= 0: first original arrival retried
    absl::Duration span = absl::ZeroDuration();   // >= 0; 0: to the end
  };
  std::optional<RetrySpike> retry_spike;
  bool prefix_cache_miss = false;
  struct Burst {
    double peak_to_mean = 2;  // > 1: the window's rate / the whole trace's mean rate
    absl::Duration window = absl::Minutes(2);  // > 0
    absl::Duration at = absl::ZeroDuration();  // >= 0: where the window starts
  };
  std::optional<Burst> burst;
};

struct Review {
  std::string source;  // the path (or name) it was read from
  Baseline baseline;
  Slo slo;
  std::vector<ProfileChoice> profiles;  // at least one
  std::vector<Scenario> scenarios;      // names unique, none "baseline"
  int32_t planned_replicas = 0;         // >= 0
  int32_t seeds = 3;                    // [1, 10]
  uint64_t seed = 1;
  int32_t max_replicas = 256;  // [1, 4096]
  sim::RouterKind router = sim::RouterKind::kRandom;
  std::string emit_profile;  // "" or one of the profiles' names
};

// The review in `yaml`; `source` names it in messages.
absl::StatusOr<Review> ParseReview(std::string_view yaml, std::string_view source);

// ParseReview on a file's contents (the path is the source).
absl::StatusOr<Review> LoadReviewFile(const std::string& path);

}  // namespace twinscale::plan

#endif  // TWINSCALE_CONTROLLER_PLAN_REVIEW_H_
