// The replay baselines (see baselines.h): spec parsing and naming, and one sync of each, mapped
// onto the HPA arithmetic in hpa_algorithm.cc.
#include "controller/policy/baselines.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace twinscale::policy {
namespace {

constexpr char kKedaQueue[] = "keda-queue";
constexpr char kHpaKv[] = "hpa-kv";
constexpr char kStatic[] = "static";
constexpr char kStaticReason[] = "Static";

std::string_view Prefix(BaselineKind kind) {
  switch (kind) {
    case BaselineKind::kKedaQueue:
      return kKedaQueue;
    case BaselineKind::kHpaKv:
      return kHpaKv;
    case BaselineKind::kStatic:
      return kStatic;
  }
  return kStatic;
}

BaselineSpec MakeSpec(BaselineKind kind, double parameter, int32_t min_replicas,
                      int32_t max_replicas) {
  BaselineSpec spec;
  spec.kind = kind;
  spec.parameter = parameter;
  spec.min_replicas = min_replicas;
  spec.max_replicas = max_replicas;
  return spec;
}

std::string_view Trim(std::string_view s) {
  const absl::string_view t = absl::StripAsciiWhitespace(absl::string_view(s.data(), s.size()));
  return std::string_view(t.data(), t.size());
}

// Checks one value of a family; returns an empty string when it is good, else why it is bad.
std::string CheckValue(BaselineKind kind, double v) {
  switch (kind) {
    case BaselineKind::kKedaQueue:
      if (!(v > 0) || !std::isfinite(v)) return "a queue threshold must be a number > 0";
      return "";
    case BaselineKind::kHpaKv:
      if (!(v > 0 && v <= 1)) return "a KV-use target must be in (0, 1]";
      return "";
    case BaselineKind::kStatic:
      if (!std::isfinite(v) || v < 1 || v != std::floor(v) || v > 1e9) {
        return "a static fleet must be a whole number of replicas >= 1";
      }
      return "";
  }
  return "unknown family";
}

}  // namespace

std::string BaselineSpec::Name() const {
  if (kind == BaselineKind::kStatic) {
    return absl::StrCat(std::string(Prefix(kind)), "-", static_cast<int64_t>(parameter));
  }
  // StrCat prints doubles with up to six significant digits and no trailing zeros: 5, 0.8.
  return absl::StrCat(std::string(Prefix(kind)), "-", parameter);
}

HpaConfig BaselineHpaConfig(const BaselineSpec& spec) {
  HpaConfig config;
  config.min_replicas = spec.min_replicas;
  config.max_replicas = spec.max_replicas;
  config.tolerance = 0.1;
  config.has_behavior = false;  // neither KEDA (no `advanced`) nor a plain HPA sets one
  return config;
}

std::vector<BaselineSpec> BaselineFamily(BaselineKind kind, int32_t min_replicas,
                                         int32_t max_replicas) {
  std::vector<double> values;
  switch (kind) {
    case BaselineKind::kKedaQueue:
      values = {1, 2, 3, 5, 10};  // waiting requests per replica (docs/architecture.md "Baselines")
      break;
    case BaselineKind::kHpaKv:
      values = {0.6, 0.7, 0.8, 0.9};  // target mean KV use
      break;
    case BaselineKind::kStatic:
      break;  // a static fleet's sizes are the user's
  }
  std::vector<BaselineSpec> specs;
  for (double v : values) specs.push_back(MakeSpec(kind, v, min_replicas, max_replicas));
  return specs;
}

absl::StatusOr<std::vector<BaselineSpec>> ParseBaselineFamily(std::string_view text,
                                                              int32_t min_replicas,
                                                              int32_t max_replicas) {
  const std::string quoted = absl::StrFormat("baseline family \"%s\"", std::string(text));
  if (min_replicas < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: min replicas %d must be >= 1", quoted, min_replicas));
  }
  if (max_replicas < min_replicas) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: max replicas %d is below min replicas %d", quoted, max_replicas, min_replicas));
  }

  const size_t colon = text.find(':');
  const std::string_view name = Trim(text.substr(0, colon));
  BaselineKind kind;
  if (name == kKedaQueue) {
    kind = BaselineKind::kKedaQueue;
  } else if (name == kHpaKv) {
    kind = BaselineKind::kHpaKv;
  } else if (name == kStatic) {
    kind = BaselineKind::kStatic;
  } else {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: unknown family \"%s\" (want keda-queue, hpa-kv or static:N,...)",
                        quoted, std::string(name)));
  }

  if (colon == std::string_view::npos) {
    if (kind == BaselineKind::kStatic) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: static needs its replica counts, for example static:4,8,12", quoted));
    }
    return BaselineFamily(kind, min_replicas, max_replicas);
  }

  const std::string list(text.substr(colon + 1));
  std::vector<BaselineSpec> specs;
  std::vector<double> seen;
  for (absl::string_view raw : absl::StrSplit(list, ',')) {
    const std::string_view item = Trim(std::string_view(raw.data(), raw.size()));
    if (item.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: empty value in the list", quoted));
    }
    double v = 0;
    if (!absl::SimpleAtod(absl::string_view(item.data(), item.size()), &v)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: \"%s\" is not a number", quoted, std::string(item)));
    }
    if (const std::string why = CheckValue(kind, v); !why.empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: \"%s\": %s", quoted, std::string(item), why));
    }
    if (std::find(seen.begin(), seen.end(), v) != seen.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: \"%s\" is listed twice", quoted, std::string(item)));
    }
    seen.push_back(v);
    specs.push_back(MakeSpec(kind, v, min_replicas, max_replicas));
  }
  return specs;
}

HpaDecision BaselineStep(const BaselineSpec& spec, const FleetSignals& signals,
                         HpaHistory& history) {
  if (spec.kind == BaselineKind::kStatic) {
    const auto n = static_cast<int32_t>(spec.parameter);
    return HpaDecision{n, n, n, kStaticReason};
  }
  HpaMetricSample sample;
  sample.available = signals.metrics_available;
  sample.target = spec.parameter;
  if (spec.kind == BaselineKind::kKedaQueue) {
    // External metric, AverageValue: the HPA divides KEDA's sum by the threshold.
    sample.kind = HpaMetricSample::Kind::kAverageValuePerPod;
    sample.value = signals.waiting_sum;
  } else {
    // Pods metric, AverageValue: the mean over the pods that export it (the ready ones).
    sample.kind = HpaMetricSample::Kind::kUtilizationRatio;
    sample.value = signals.kv_usage_mean;
    const int32_t not_ready = std::max(0, signals.current_replicas - signals.ready_replicas);
    sample.reporting_pods = signals.ready_replicas;
    sample.pending_pods = std::clamp(signals.pending_replicas, 0, not_ready);
    sample.missing_pods = not_ready - sample.pending_pods;
  }
  return HpaStep(BaselineHpaConfig(spec), signals.current_replicas, sample, signals.now, history);
}

}  // namespace twinscale::policy
