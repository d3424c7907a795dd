// PromqlSource: see promql_source.h.
#include "controller/metrics/promql_source.h"

#include <algorithm>
#include <cstddef>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/metrics/prometheus_text.h"
#include "controller/metrics/vllm_observation.h"

namespace twinscale::metrics {
namespace {

bool IsLabelName(std::string_view s) {
  if (s.empty()) return false;
  const auto start = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  if (!start(s[0])) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return start(c) || (c >= '0' && c <= '9'); });
}

// A PromQL double-quoted string literal (Go's escapes).
std::string PromqlString(std::string_view v) {
  std::string out = "\"";
  for (char c : v) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  out += '"';
  return out;
}

// How Prometheus writes a target's address in `instance`.
std::string InstanceOf(const PodTarget& pod) {
  const bool ipv6 = pod.ip.find(':') != std::string::npos;
  return absl::StrCat(ipv6 ? "[" : "", pod.ip, ipv6 ? "]" : "", ":", pod.port);
}

std::string_view LabelOf(const PromSeries& s, const std::string& name) {
  auto it = s.labels.find(name);
  return it == s.labels.end() ? std::string_view() : std::string_view(it->second);
}

// One pod's newest scrape as an exposition: the samples stamped `at`, one untyped family per
// metric name (the extractor reads samples by name, as it does for excerpts without TYPE lines).
Exposition RebuildExposition(const std::vector<const PromSeries*>& series, absl::Time at) {
  Exposition e;
  std::map<std::string, size_t> family_of;
  for (const PromSeries* s : series) {
    const PromPoint& last = s->points.back();
    if (last.at != at) continue;  // not in the newest scrape
    const std::string name(LabelOf(*s, "__name__"));
    auto [it, added] = family_of.emplace(name, e.families.size());
    if (added) {
      MetricFamily f;
      f.name = name;
      e.families.push_back(std::move(f));
    }
    Sample sample;
    sample.name = name;
    for (const auto& [k, v] : s->labels) {
      if (k != "__name__") sample.labels.emplace_back(k, v);
    }
    sample.value = last.value;
    e.families[it->second].samples.push_back(std::move(sample));
  }
  return e;
}

}  // namespace

absl::StatusOr<std::string> VllmSamplesQuery(const std::map<std::string, std::string>& matchers,
                                             absl::Duration lookback) {
  std::string selector = R"({__name__=~"vllm:.*",__name__!~".*_created")";
  for (const auto& [name, value] : matchers) {
    if (!IsLabelName(name)) {
      return absl::InvalidArgumentError(absl::StrCat("spec.metrics.prometheus.labelMatchers: \"",
                                                     name, "\" is not a valid label name"));
    }
    absl::StrAppend(&selector, ",", name, "=", PromqlString(value));
  }
  const int64_t ms = std::max<int64_t>(1, absl::ToInt64Milliseconds(lookback));
  absl::StrAppend(&selector, "}[", ms, "ms]");
  return selector;
}

absl::StatusOr<std::string> LabelMatchersSelector(
    const std::map<std::string, std::string>& matchers) {
  if (matchers.empty()) return std::string();
  std::vector<std::string> parts;
  for (const auto& [name, value] : matchers) {
    if (!IsLabelName(name)) {
      return absl::InvalidArgumentError(absl::StrCat("spec.metrics.prometheus.labelMatchers: \"",
                                                     name, "\" is not a valid label name"));
    }
    parts.push_back(absl::StrCat(name, "=", PromqlString(value)));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

absl::StatusOr<ArrivalSeries> QueryPrometheusArrivals(
    const std::string& url, const std::map<std::string, std::string>& matchers, absl::Time start,
    absl::Duration step, int64_t steps, absl::Duration timeout) {
  absl::StatusOr<std::string> selector = LabelMatchersSelector(matchers);
  if (!selector.ok()) return selector.status();
  PrometheusClientOptions o;
  o.timeout = timeout;
  const PrometheusClient client(url, o);
  return FetchArrivals([&client](const RangeQuery& q) { return client.QueryRange(q); }, *selector,
                       start, step, steps);
}

std::vector<PodResult> ReadingsFromSamples(const PromMatrix& series,
                                           const std::vector<PodTarget>& pods,
                                           const PromqlSourceOptions& options,
                                           std::string_view source) {
  // Target lookup by pod name and by instance.
  std::map<std::string, size_t, std::less<>> by_pod, by_instance;
  for (size_t i = 0; i < pods.size(); ++i) {
    by_pod.emplace(pods[i].pod, i);
    by_instance.emplace(InstanceOf(pods[i]), i);
  }
  std::vector<std::vector<const PromSeries*>> of_pod(pods.size());
  for (const PromSeries& s : series) {
    if (s.points.empty()) continue;
    const std::string_view pod = LabelOf(s, options.pod_label);
    const auto& index = pod.empty() ? by_instance : by_pod;
    auto it = index.find(pod.empty() ? LabelOf(s, "instance") : pod);
    if (it != index.end()) of_pod[it->second].push_back(&s);
  }

  std::vector<PodResult> results;
  results.reserve(pods.size());
  for (size_t i = 0; i < pods.size(); ++i) {
    const PodTarget& target = pods[i];
    const std::string who = absl::StrCat("pod ", target.pod, " via ", std::string(source));
    PodResult r{target.pod, absl::UnknownError("unread")};
    const std::vector<const PromSeries*>& mine = of_pod[i];
    if (mine.empty()) {
      r.reading = absl::UnavailableError(
          absl::StrCat(who, ": no fresh samples (none within ",
                       absl::FormatDuration(options.lookback), " under label ", options.pod_label,
                       "=\"", target.pod, "\" or instance=\"", InstanceOf(target), "\")"));
      results.push_back(std::move(r));
      continue;
    }
    absl::Time newest = absl::InfinitePast();
    for (const PromSeries* s : mine) newest = std::max(newest, s->points.back().at);
    // Samples of one scrape come from one target; two targets scraping the pod would double its
    // counters when summed, so that is refused rather than guessed at.
    std::set<std::pair<std::string_view, std::string_view>> targets;
    for (const PromSeries* s : mine) {
      if (s->points.back().at == newest)
        targets.emplace(LabelOf(*s, "job"), LabelOf(*s, "instance"));
    }
    if (targets.size() > 1) {
      std::vector<std::string> names;
      for (const auto& [job, instance] : targets) {
        names.push_back(absl::StrCat("job=\"", std::string(job), "\" instance=\"",
                                     std::string(instance), "\""));
      }
      r.reading = absl::InvalidArgumentError(
          absl::StrCat(who, ": scraped by several targets at once (", absl::StrJoin(names, ", "),
                       "): add a label matcher that picks one"));
      results.push_back(std::move(r));
      continue;
    }
    absl::StatusOr<PodObservation> observation =
        ExtractVllmObservation(RebuildExposition(mine, newest), options.model_name_filter);
    if (!observation.ok()) {
      r.reading = absl::Status(observation.status().code(),
                               absl::StrCat(who, ": ", observation.status().message()));
    } else {
      r.reading = PodReading{newest, *std::move(observation)};
    }
    results.push_back(std::move(r));
  }
  return results;
}

PromqlSource::PromqlSource(const Clock& clock, PromqlSourceOptions options)
    : clock_(clock),
      options_(std::move(options)),
      client_(options_.url, PrometheusClientOptions{options_.timeout}) {}

absl::StatusOr<std::vector<PodResult>> PromqlSource::Read(
    const std::vector<PodTarget>& pods) const {
  if (!IsLabelName(options_.pod_label)) {
    return absl::InvalidArgumentError(
        absl::StrCat("pod label \"", options_.pod_label, "\" is not a valid label name"));
  }
  absl::StatusOr<std::string> query = VllmSamplesQuery(options_.label_matchers, options_.lookback);
  if (!query.ok()) return query.status();
  absl::StatusOr<PromQueryResult> answer = client_.Query({*query, clock_.Now()});
  if (!answer.ok()) return answer.status();
  if (answer->type != PromQueryResult::Type::kMatrix) {
    return absl::UnavailableError(absl::StrCat("Prometheus at ", options_.url,
                                               ": a range-vector query did not return a matrix"));
  }
  return ReadingsFromSamples(answer->series, pods, options_,
                             absl::StrCat("Prometheus at ", options_.url));
}

}  // namespace twinscale::metrics
