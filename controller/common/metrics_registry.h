// The controller's own metrics (docs/architecture.md "Outputs and their contracts"): counters,
// gauges and histograms, each a family with a fixed set of label names, rendered in the Prometheus
// text format 0.0.4 that controller/outputs/ops_server.h serves on /metrics.
//
// Usage (at startup; registration fails only for a bad or conflicting name):
//   MetricsRegistry registry;
//   TS_ASSIGN_OR_RETURN(CounterFamily* decisions,
//                       registry.AddCounter("twinscale_decisions_total",
//                                           "Decisions taken, by target and outcome.",
//                                           {"target", "outcome"}));
//   decisions->WithLabels({"llm/llama", "scale_up"}).Increment();
//   TS_ASSIGN_OR_RETURN(HistogramFamily* latency,
//                       registry.AddHistogram("twinscale_decision_seconds",
//                                             "Time to take one decision.",
//                                             {0.005, 0.025, 0.1, 0.5}, {}));
//   latency->WithLabels({}).Observe(0.012);
//   std::string page = registry.Render();
//
// Rendering (the layout of Prometheus' Go client, which Prometheus and promtool read):
//   - families in registration order, each as "# HELP name help" (help escaped: "\\" and "\n")
//     then "# TYPE name counter|gauge|histogram", then its series sorted by label values;
//   - a series line is name{l1="v1",l2="v2"} value, label values escaped ("\\", "\"", "\n"), no
//     braces without labels; histograms as name_bucket{...,le="edge"} (cumulative, then
//     le="+Inf"), name_sum and name_count;
//   - numbers as the shortest text that reads back as the same double (std::to_chars: "0.1",
//     "3", "1234567", "1e+21"; the Go client would write "1.234567e+06", the same number), and
//     "+Inf", "-Inf", "NaN"; edges the same way ("0.005", "1", "+Inf").
//   A family without series renders its HELP and TYPE lines only.
//
// Names: metric names must match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*
// without a "__" prefix; "le" is reserved in histograms; bucket edges must be finite and strictly
// increasing. A counter's name conventionally ends in _total (not enforced).
//
// Thread-safety: everything may be called from any thread. Registering takes the registry's lock;
// WithLabels takes its family's lock (keep the returned reference to avoid the lookup on hot
// paths: it stays valid as long as the registry); Increment / Set / Add are lock-free atomics;
// Observe takes its histogram's own lock so a render never sees a bucket without its count.
#ifndef TWINSCALE_CONTROLLER_COMMON_METRICS_REGISTRY_H_
#define TWINSCALE_CONTROLLER_COMMON_METRICS_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace twinscale {

// A value that only goes up (restarts from 0 with the process).
class Counter {
 public:
  // Adds `by`; a negative or NaN `by` is ignored (a counter never goes down).
  void Increment(double by = 1);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A value that goes up and down.
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double by);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Observations counted into fixed buckets (le inclusive, as Prometheus defines them).
class Histogram {
 public:
  explicit Histogram(const std::vector<double>* upper_bounds);
  // Counts `v` in the first bucket whose edge is >= v (+Inf if none); adds v to the sum. NaN is
  // ignored.
  void Observe(double v);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // per edge, then +Inf (= count)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double>* upper_bounds_;  // the family's; finite, ascending
  mutable absl::Mutex mu_;
  std::vector<uint64_t> counts_ ABSL_GUARDED_BY(mu_);  // per bucket, not cumulative, +Inf last
  double sum_ ABSL_GUARDED_BY(mu_) = 0;
};

// A family: one metric name, help and label names; one series per distinct label values.
template <typename Metric>
class Family {
 public:
  // The series with these label values, created (at zero) on first use. Precondition:
  // values.size() == label_names().size(); in a release build a mismatch is padded with "" or cut
  // (it never crashes, and the odd series shows up in the page).
  Metric& WithLabels(const std::vector<std::string>& values);

  const std::string& name() const { return name_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

 private:
  friend class MetricsRegistry;
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         std::vector<double> upper_bounds = {});
  void RenderTo(std::string& out, std::string_view type) const;

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> upper_bounds_;  // histograms only
  mutable absl::Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> series_ ABSL_GUARDED_BY(mu_);
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

class MetricsRegistry {
 public:
  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Registers a family, or returns the one already registered under `name` when its type, help,
  // label names (and edges) are the same. InvalidArgument for a bad name (see the file comment)
  // or a name taken by a different family.
  absl::StatusOr<CounterFamily*> AddCounter(const std::string& name, const std::string& help,
                                            const std::vector<std::string>& label_names);
  absl::StatusOr<GaugeFamily*> AddGauge(const std::string& name, const std::string& help,
                                        const std::vector<std::string>& label_names);
  absl::StatusOr<HistogramFamily*> AddHistogram(const std::string& name, const std::string& help,
                                                const std::vector<double>& upper_bounds,
                                                const std::vector<std::string>& label_names);

  // The whole page (see the file comment).
  std::string Render() const;

 private:
  struct Entry {
    std::string type;  // "counter", "gauge" or "histogram"
    std::unique_ptr<CounterFamily> counter;
    std::unique_ptr<GaugeFamily> gauge;
    std::unique_ptr<HistogramFamily> histogram;
  };
  // InvalidArgument if the metric name or a label name is bad.
  static absl::Status CheckNames(const std::string& name,
                                 const std::vector<std::string>& label_names, bool histogram);
  // The entry registered under `name`, or nullptr.
  Entry* Find(const std::string& name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);  // registration order
};

// The content type of Render()'s output.
inline constexpr char kPrometheusTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// How the registry writes a number: see the file comment.
std::string FormatMetricValue(double v);

}  // namespace twinscale

#endif  // TWINSCALE_CONTROLLER_COMMON_METRICS_REGISTRY_H_
