// The controller's own metrics: see metrics_registry.h.
#include "controller/common/metrics_registry.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <cmath>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace twinscale {
namespace {

bool IsMetricName(const std::string& s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool IsLabelName(const std::string& s) {
  if (s.empty() || s.rfind("__", 0) == 0) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

void AppendEscaped(std::string& out, const std::string& s, bool quote) {
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

// {l1="v1",...[,le="edge"]}; nothing when there are no labels at all.
void AppendLabels(std::string& out, const std::vector<std::string>& names,
                  const std::vector<std::string>& values, const std::string* le = nullptr) {
  if (names.empty() && le == nullptr) return;
  out += '{';
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    out += names[i];
    out += "=\"";
    AppendEscaped(out, values[i], /*quote=*/true);
    out += '"';
  }
  if (le != nullptr) {
    if (!names.empty()) out += ',';
    out += "le=\"";
    out += *le;
    out += '"';
  }
  out += '}';
}

void AtomicAdd(std::atomic<double>& a, double by) {
  double old = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(old, old + by, std::memory_order_relaxed)) {
  }
}

}  // namespace

std::string FormatMetricValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::array<char, 64> buf;
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), end);
}

void Counter::Increment(double by) {
  if (!(by >= 0)) return;  // negative or NaN
  AtomicAdd(value_, by);
}

void Gauge::Add(double by) { AtomicAdd(value_, by); }

Histogram::Histogram(const std::vector<double>* upper_bounds)
    : upper_bounds_(upper_bounds), counts_(upper_bounds->size() + 1, 0) {}

void Histogram::Observe(double v) {
  if (std::isnan(v)) return;
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(upper_bounds_->begin(), upper_bounds_->end(), v) - upper_bounds_->begin());
  absl::MutexLock lock(&mu_);
  ++counts_[bucket];
  sum_ += v;
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  absl::MutexLock lock(&mu_);
  s.cumulative.reserve(counts_.size());
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  s.count = running;
  s.sum = sum_;
  return s;
}

template <typename Metric>
Family<Metric>::Family(std::string name, std::string help, std::vector<std::string> label_names,
                       std::vector<double> upper_bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      upper_bounds_(std::move(upper_bounds)) {}

template <typename Metric>
Metric& Family<Metric>::WithLabels(const std::vector<std::string>& values) {
  assert(values.size() == label_names_.size());
  std::vector<std::string> key = values;
  key.resize(label_names_.size());
  absl::MutexLock lock(&mu_);
  auto it = series_.find(key);
  if (it == series_.end()) {
    std::unique_ptr<Metric> m;
    if constexpr (std::is_same_v<Metric, Histogram>) {
      m = std::make_unique<Histogram>(&upper_bounds_);
    } else {
      m = std::make_unique<Metric>();
    }
    it = series_.emplace(std::move(key), std::move(m)).first;
  }
  return *it->second;
}

template <typename Metric>
void Family<Metric>::RenderTo(std::string& out, std::string_view type) const {
  out += "# HELP ";
  out += name_;
  out += ' ';
  AppendEscaped(out, help_, /*quote=*/false);
  out += "\n# TYPE ";
  out += name_;
  out += ' ';
  out += type;
  out += '\n';
  absl::MutexLock lock(&mu_);
  for (const auto& [values, metric] : series_) {
    if constexpr (std::is_same_v<Metric, Histogram>) {
      const Histogram::Snapshot s = metric->Read();
      for (size_t i = 0; i <= upper_bounds_.size(); ++i) {
        const std::string le =
            i < upper_bounds_.size() ? FormatMetricValue(upper_bounds_[i]) : "+Inf";
        out += name_;
        out += "_bucket";
        AppendLabels(out, label_names_, values, &le);
        out += ' ';
        out += FormatMetricValue(static_cast<double>(s.cumulative[i]));
        out += '\n';
      }
      out += name_;
      out += "_sum";
      AppendLabels(out, label_names_, values);
      out += ' ';
      out += FormatMetricValue(s.sum);
      out += '\n';
      out += name_;
      out += "_count";
      AppendLabels(out, label_names_, values);
      out += ' ';
      out += FormatMetricValue(static_cast<double>(s.count));
      out += '\n';
    } else {
      out += name_;
      AppendLabels(out, label_names_, values);
      out += ' ';
      out += FormatMetricValue(metric->Value());
      out += '\n';
    }
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

absl::Status MetricsRegistry::CheckNames(const std::string& name,
                                         const std::vector<std::string>& label_names,
                                         bool histogram) {
  if (!IsMetricName(name)) {
    return absl::InvalidArgumentError(absl::StrCat("metric name \"", name, "\" is not valid"));
  }
  for (size_t i = 0; i < label_names.size(); ++i) {
    const std::string& l = label_names[i];
    if (!IsLabelName(l)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": label name \"", l, "\" is not valid"));
    }
    if (histogram && l == "le") {
      return absl::InvalidArgumentError(absl::StrCat(name, ": \"le\" is reserved in histograms"));
    }
    if (std::find(label_names.begin(), label_names.begin() + i, l) != label_names.begin() + i) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": label \"", l, "\" appears twice"));
    }
  }
  return absl::OkStatus();
}

MetricsRegistry::Entry* MetricsRegistry::Find(const std::string& name) const {
  for (const auto& e : entries_) {
    const std::string& n = e->counter ? e->counter->name()
                           : e->gauge ? e->gauge->name()
                                      : e->histogram->name();
    if (n == name) return e.get();
  }
  return nullptr;
}

namespace {

absl::Status Taken(const std::string& name) {
  return absl::InvalidArgumentError(absl::StrCat(
      "metric \"", name, "\" is already registered with another type, help or labels"));
}

}  // namespace

absl::StatusOr<CounterFamily*> MetricsRegistry::AddCounter(
    const std::string& name, const std::string& help, const std::vector<std::string>& label_names) {
  if (absl::Status s = CheckNames(name, label_names, false); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (Entry* e = Find(name)) {
    if (e->counter && e->counter->help_ == help && e->counter->label_names() == label_names) {
      return e->counter.get();
    }
    return Taken(name);
  }
  auto e = std::make_unique<Entry>();
  e->type = "counter";
  e->counter.reset(new CounterFamily(name, help, label_names));
  entries_.push_back(std::move(e));
  return entries_.back()->counter.get();
}

absl::StatusOr<GaugeFamily*> MetricsRegistry::AddGauge(
    const std::string& name, const std::string& help, const std::vector<std::string>& label_names) {
  if (absl::Status s = CheckNames(name, label_names, false); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (Entry* e = Find(name)) {
    if (e->gauge && e->gauge->help_ == help && e->gauge->label_names() == label_names) {
      return e->gauge.get();
    }
    return Taken(name);
  }
  auto e = std::make_unique<Entry>();
  e->type = "gauge";
  e->gauge.reset(new GaugeFamily(name, help, label_names));
  entries_.push_back(std::move(e));
  return entries_.back()->gauge.get();
}

absl::StatusOr<HistogramFamily*> MetricsRegistry::AddHistogram(
    const std::string& name, const std::string& help, const std::vector<double>& upper_bounds,
    const std::vector<std::string>& label_names) {
  if (absl::Status s = CheckNames(name, label_names, true); !s.ok()) return s;
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    if (!std::isfinite(upper_bounds[i]) || (i > 0 && !(upper_bounds[i - 1] < upper_bounds[i]))) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": bucket edges must be finite and strictly increasing (edge ", i, ")"));
    }
  }
  absl::MutexLock lock(&mu_);
  if (Entry* e = Find(name)) {
    if (e->histogram && e->histogram->help_ == help && e->histogram->label_names() == label_names &&
        e->histogram->upper_bounds_ == upper_bounds) {
      return e->histogram.get();
    }
    return Taken(name);
  }
  auto e = std::make_unique<Entry>();
  e->type = "histogram";
  e->histogram.reset(new HistogramFamily(name, help, label_names, upper_bounds));
  entries_.push_back(std::move(e));
  return entries_.back()->histogram.get();
}

std::string MetricsRegistry::Render() const {
  std::string out;
  absl::MutexLock lock(&mu_);
  for (const auto& e : entries_) {
    if (e->counter) e->counter->RenderTo(out, e->type);
    if (e->gauge) e->gauge->RenderTo(out, e->type);
    if (e->histogram) e->histogram->RenderTo(out, e->type);
  }
  return out;
}

}  // namespace twinscale
