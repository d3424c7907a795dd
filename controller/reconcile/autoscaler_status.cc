// Status conditions, the write rule and the JSON form: see autoscaler_status.h.
#include "controller/reconcile/autoscaler_status.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "controller/common/status_macros.h"
#include "controller/kube/kube_time.h"
#include "controller/policy/decider.h"
#include "nlohmann/json.hpp"

namespace twinscale::reconcile {
namespace {

bool RelativelyDifferent(std::optional<double> a, std::optional<double> b, double tolerance) {
  if (a.has_value() != b.has_value()) return true;
  if (!a.has_value()) return false;
  if ((*a == 0) != (*b == 0)) return true;
  const double scale = std::max(std::abs(*a), std::abs(*b));
  return scale > 0 && std::abs(*a - *b) > tolerance * scale;
}

std::optional<double> Seconds(const std::optional<absl::Duration>& d) {
  if (!d.has_value()) return std::nullopt;
  return absl::ToDoubleSeconds(*d);
}

// Numbers people read: at most 4 significant digits, no exponent for ordinary magnitudes.
nlohmann::json Number(double v) {
  if (!std::isfinite(v)) return nullptr;
  return nlohmann::json::parse(absl::StrFormat("%.4g", v), nullptr, /*allow_exceptions=*/false);
}

absl::Status WrongType(absl::string_view field, absl::string_view want) {
  return absl::InvalidArgumentError(absl::StrCat("status.", field, ": expected ", want));
}

absl::StatusOr<absl::Duration> DurationField(const nlohmann::json& v, absl::string_view field) {
  absl::Duration d;
  if (!v.is_string() || !absl::ParseDuration(v.get<std::string>(), &d)) {
    return WrongType(field, "a duration such as \"1.5s\"");
  }
  return d;
}

absl::StatusOr<std::optional<double>> NumberField(const nlohmann::json& obj, const char* key,
                                                  absl::string_view field) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::optional<double>();
  if (!it->is_number()) return WrongType(field, "a number");
  return std::optional<double>(it->get<double>());
}

// A string field: `fallback` where it is absent or null, InvalidArgument naming `field` where it
// is another type.
absl::StatusOr<std::string> StringField(const nlohmann::json& obj, const char* key,
                                        absl::string_view field, std::string fallback) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_string()) return WrongType(field, "a string");
  return it->get<std::string>();
}

// An integer field within [lo, hi]: `fallback` where it is absent or null, InvalidArgument naming
// `field` where it is another type or out of range.
absl::StatusOr<int64_t> IntegerField(const nlohmann::json& obj, const char* key,
                                     absl::string_view field, int64_t fallback, int64_t lo,
                                     int64_t hi) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (it->is_number_unsigned()) {
    const uint64_t v = it->get<uint64_t>();
    if (v > static_cast<uint64_t>(hi))
      return WrongType(field, absl::StrCat("an integer in [", lo, ", ", hi, "]"));
    return static_cast<int64_t>(v);
  }
  if (!it->is_number_integer()) return WrongType(field, "an integer");
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) return WrongType(field, absl::StrCat("an integer in [", lo, ", ", hi, "]"));
  return v;
}

}  // namespace

const Condition* AutoscalerStatus::FindCondition(std::string_view type) const {
  for (const Condition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

void SetCondition(AutoscalerStatus& status, std::string_view type, std::string_view value,
                  std::string_view reason, std::string_view message, absl::Time now,
                  int64_t generation) {
  for (Condition& c : status.conditions) {
    if (c.type != type) continue;
    if (c.status != value) c.last_transition_time = now;
    c.status = std::string(value);
    c.reason = std::string(reason);
    c.message = std::string(message);
    c.observed_generation = generation;
    return;
  }
  status.conditions.push_back(Condition{std::string(type), std::string(value), std::string(reason),
                                        std::string(message), now, generation});
}

std::string SetPodsStalled(AutoscalerStatus& status, const policy::Decision& decision,
                           absl::Time now, int64_t generation) {
  if (decision.not_counted.empty()) {
    SetCondition(status, kPodsStalled, "False", "NoneStalled", "", now, generation);
    return "";
  }
  constexpr size_t kNamed = 5;  // enough to find them; the rest are counted
  // "vllm-7 (created 2026-11-21T09:00:15Z), ..." or, for the event, "... (not Ready after 2m15s)".
  auto describe = [&](bool unschedulable, bool with_age) {
    std::vector<std::string> named;
    size_t count = 0;
    for (const policy::NotCountedPod& p : decision.not_counted) {
      if (p.unschedulable != unschedulable) continue;
      if (++count > kNamed) continue;
      named.push_back(with_age ? absl::StrCat(p.name, " (", absl::FormatDuration(p.age), " old)")
                               : absl::StrCat(p.name, " (created ",
                                              kube::FormatKubeTime(decision.at - p.age), ")"));
    }
    std::string text = absl::StrJoin(named, ", ");
    if (count > kNamed) absl::StrAppend(&text, " and ", count - kNamed, " more");
    return std::make_pair(count, text);
  };
  auto message = [&](bool with_age) {
    std::vector<std::string> parts;
    const auto [late, late_names] = describe(false, with_age);
    const auto [unschedulable, unschedulable_names] = describe(true, with_age);
    if (late > 0) {
      parts.push_back(absl::StrCat(late, late == 1 ? " pod is" : " pods are", " not Ready ",
                                   absl::FormatDuration(decision.warmup_deadline),
                                   " after creation (the warm-up deadline): ", late_names));
    }
    if (unschedulable > 0) {
      parts.push_back(absl::StrCat(unschedulable, unschedulable == 1 ? " pod is" : " pods are",
                                   " unschedulable: ", unschedulable_names));
    }
    return absl::StrCat(absl::StrJoin(parts, "; "),
                        ". They hold replicas but are not counted as capacity (twinscale does not "
                        "scale in on their account); check their events and logs");
  };
  const bool any_late =
      std::any_of(decision.not_counted.begin(), decision.not_counted.end(),
                  [](const policy::NotCountedPod& p) { return !p.unschedulable; });
  SetCondition(status, kPodsStalled, "True", any_late ? "PodsNotReady" : "PodsUnschedulable",
               message(/*with_age=*/false), now, generation);
  return message(/*with_age=*/true);
}

bool MeaningfulChange(const AutoscalerStatus& a, const AutoscalerStatus& b) {
  if (a.observed_generation != b.observed_generation) return true;
  if (a.conditions.size() != b.conditions.size()) return true;
  for (const Condition& c : b.conditions) {
    const Condition* o = a.FindCondition(c.type);
    if (o == nullptr || o->status != c.status || o->reason != c.reason || o->message != c.message) {
      return true;
    }
  }
  if (a.current_replicas != b.current_replicas || a.desired_replicas != b.desired_replicas) {
    return true;
  }
  if (a.admission.has_value() != b.admission.has_value()) return true;
  if (a.admission.has_value() &&
      (a.admission->active != b.admission->active ||
       a.admission->max_queue_per_replica != b.admission->max_queue_per_replica ||
       RelativelyDifferent(a.admission->max_arrival_rate, b.admission->max_arrival_rate, 0.1))) {
    return true;
  }
  if (a.last_decision.has_value() != b.last_decision.has_value()) return true;
  if (a.last_decision.has_value()) {
    if (a.last_decision->replicas != b.last_decision->replicas) return true;
    if (a.last_decision->reasons.size() != b.last_decision->reasons.size()) return true;
    for (size_t i = 0; i < a.last_decision->reasons.size(); ++i) {
      if (a.last_decision->reasons[i].code != b.last_decision->reasons[i].code) return true;
    }
  }
  if (a.calibration.has_value() != b.calibration.has_value()) return true;
  if (a.calibration.has_value() &&
      (RelativelyDifferent(a.calibration->prefill_speed, b.calibration->prefill_speed, 0.01) ||
       RelativelyDifferent(a.calibration->decode_speed, b.calibration->decode_speed, 0.01) ||
       std::abs(a.calibration->router_random_share - b.calibration->router_random_share) >= 0.01 ||
       std::abs(a.calibration->extra_front_end_seconds - b.calibration->extra_front_end_seconds) >=
           0.001)) {
    return true;
  }
  if (a.arrival_history.has_value() != b.arrival_history.has_value()) return true;
  if (a.arrival_history.has_value() && (a.arrival_history->bucket != b.arrival_history->bucket ||
                                        a.arrival_history->start != b.arrival_history->start ||
                                        a.arrival_history->end != b.arrival_history->end ||
                                        a.arrival_history->data != b.arrival_history->data)) {
    return true;
  }
  if (a.measured_warmup.has_value() != b.measured_warmup.has_value()) return true;
  if (a.measured_warmup.has_value() &&
      absl::AbsDuration(*a.measured_warmup - *b.measured_warmup) >= absl::Seconds(1)) {
    return true;
  }
  if (a.observed.has_value() != b.observed.has_value()) return true;
  if (a.observed.has_value()) {
    const auto& x = *a.observed;
    const auto& y = *b.observed;
    if (RelativelyDifferent(x.queue_depth_per_replica, y.queue_depth_per_replica, 0.1) ||
        RelativelyDifferent(x.kv_cache_utilization, y.kv_cache_utilization, 0.1) ||
        RelativelyDifferent(x.arrival_rate, y.arrival_rate, 0.1) ||
        RelativelyDifferent(Seconds(x.ttft_p90), Seconds(y.ttft_p90), 0.1)) {
      return true;
    }
  }
  return false;
}

std::string FormatSpecDuration(absl::Duration d) {
  if (d == absl::ZeroDuration()) return "0s";
  // Milliseconds are the finest grain anyone reads here; absl would print "1.234567891s".
  return absl::FormatDuration(absl::Trunc(d, absl::Milliseconds(1)));
}

nlohmann::json StatusToJson(const AutoscalerStatus& s) {
  nlohmann::json j = nlohmann::json::object();
  j["observedGeneration"] = s.observed_generation;
  nlohmann::json conditions = nlohmann::json::array();
  for (const Condition& c : s.conditions) {
    conditions.push_back({{"type", c.type},
                          {"status", c.status},
                          {"reason", c.reason},
                          {"message", c.message},
                          {"lastTransitionTime", kube::FormatKubeTime(c.last_transition_time)},
                          {"observedGeneration", c.observed_generation}});
  }
  j["conditions"] = std::move(conditions);
  if (s.current_replicas) j["currentReplicas"] = *s.current_replicas;
  if (s.desired_replicas) j["desiredReplicas"] = *s.desired_replicas;
  if (s.admission) {
    j["admission"] = {{"active", s.admission->active}};
    if (s.admission->active) {
      j["admission"]["maxQueuePerReplica"] = s.admission->max_queue_per_replica;
      j["admission"]["maxArrivalRate"] = Number(s.admission->max_arrival_rate);
    }
  }
  if (s.observed) {
    nlohmann::json o = nlohmann::json::object();
    if (s.observed->queue_depth_per_replica) {
      o["queueDepthPerReplica"] = Number(*s.observed->queue_depth_per_replica);
    }
    if (s.observed->ttft_p90) o["ttftP90"] = FormatSpecDuration(*s.observed->ttft_p90);
    if (s.observed->kv_cache_utilization) {
      o["kvCacheUtilization"] = Number(std::clamp(*s.observed->kv_cache_utilization, 0.0, 1.0));
    }
    if (s.observed->arrival_rate) o["arrivalRate"] = Number(*s.observed->arrival_rate);
    j["observed"] = std::move(o);
  }
  if (s.measured_warmup) j["measuredWarmup"] = FormatSpecDuration(*s.measured_warmup);
  if (s.calibration) {
    j["calibration"] = {{"prefillSpeed", Number(s.calibration->prefill_speed)},
                        {"decodeSpeed", Number(s.calibration->decode_speed)},
                        {"updates", s.calibration->updates}};
    if (s.calibration->router_random_share > 0) {
      j["calibration"]["routerRandomShare"] =
          Number(std::clamp(s.calibration->router_random_share, 0.0, 1.0));
    }
    if (s.calibration->extra_front_end_seconds != 0 &&
        std::isfinite(s.calibration->extra_front_end_seconds)) {
      j["calibration"]["extraFrontEndSeconds"] =
          Number(std::clamp(s.calibration->extra_front_end_seconds,
                            -policy::kMaxExtraFrontEndSeconds, policy::kMaxExtraFrontEndSeconds));
    }
  }
  if (s.arrival_history) {
    j["arrivalHistory"] = {{"bucket", FormatSpecDuration(s.arrival_history->bucket)},
                           {"start", kube::FormatKubeTime(s.arrival_history->start)},
                           {"end", kube::FormatKubeTime(s.arrival_history->end)},
                           {"data", s.arrival_history->data}};
  }
  if (s.last_decision) {
    nlohmann::json reasons = nlohmann::json::array();
    for (const policy::Reason& r : s.last_decision->reasons) {
      reasons.push_back({{"code", r.code}, {"message", r.message.substr(0, 4096)}});
    }
    j["lastDecision"] = {{"time", kube::FormatKubeTime(s.last_decision->time)},
                         {"replicas", s.last_decision->replicas},
                         {"reasons", std::move(reasons)}};
  }
  return j;
}

absl::StatusOr<AutoscalerStatus> StatusFromJson(const nlohmann::json& j) {
  AutoscalerStatus s;
  if (j.is_null()) return s;
  if (!j.is_object()) return WrongType("", "an object");
  if (auto it = j.find("observedGeneration"); it != j.end()) {
    if (!it->is_number_integer()) return WrongType("observedGeneration", "an integer");
    s.observed_generation = it->get<int64_t>();
  }
  if (auto it = j.find("conditions"); it != j.end()) {
    if (!it->is_array()) return WrongType("conditions", "a list");
    for (size_t i = 0; i < it->size(); ++i) {
      const nlohmann::json& c = (*it)[i];
      const std::string field = absl::StrCat("conditions[", i, "]");
      if (!c.is_object() || !c.contains("type") || !c["type"].is_string()) {
        return WrongType(field, "an object with a string type");
      }
      Condition cond;
      cond.type = c["type"].get<std::string>();
      TS_ASSIGN_OR_RETURN(cond.status, StringField(c, "status", field + ".status", "Unknown"));
      TS_ASSIGN_OR_RETURN(cond.reason, StringField(c, "reason", field + ".reason", ""));
      TS_ASSIGN_OR_RETURN(cond.message, StringField(c, "message", field + ".message", ""));
      TS_ASSIGN_OR_RETURN(cond.observed_generation,
                          IntegerField(c, "observedGeneration", field + ".observedGeneration", 0, 0,
                                       std::numeric_limits<int64_t>::max()));
      TS_ASSIGN_OR_RETURN(const std::string when,
                          StringField(c, "lastTransitionTime", field + ".lastTransitionTime", ""));
      auto t = kube::ParseKubeTime(when);
      if (!t.ok()) return WrongType(field + ".lastTransitionTime", "an RFC 3339 time");
      cond.last_transition_time = *t;
      s.conditions.push_back(std::move(cond));
    }
  }
  for (auto [key, field] : {std::pair{"currentReplicas", &s.current_replicas},
                            std::pair{"desiredReplicas", &s.desired_replicas}}) {
    TS_ASSIGN_OR_RETURN(const int64_t replicas,
                        IntegerField(j, key, key, -1, 0, std::numeric_limits<int32_t>::max()));
    if (replicas >= 0) *field = static_cast<int32_t>(replicas);  // -1: absent
  }
  if (auto it = j.find("measuredWarmup"); it != j.end()) {
    auto d = DurationField(*it, "measuredWarmup");
    if (!d.ok()) return d.status();
    s.measured_warmup = *d;
  }
  if (auto it = j.find("calibration"); it != j.end()) {
    if (!it->is_object()) return WrongType("calibration", "an object");
    AutoscalerStatus::Calibration c;
    auto prefill = NumberField(*it, "prefillSpeed", "calibration.prefillSpeed");
    if (!prefill.ok()) return prefill.status();
    auto decode = NumberField(*it, "decodeSpeed", "calibration.decodeSpeed");
    if (!decode.ok()) return decode.status();
    if (prefill->has_value()) c.prefill_speed = **prefill;
    if (decode->has_value()) c.decode_speed = **decode;
    TS_ASSIGN_OR_RETURN(c.updates, IntegerField(*it, "updates", "calibration.updates", 0, 0,
                                                std::numeric_limits<int64_t>::max()));
    if (c.prefill_speed <= 0 || c.decode_speed <= 0) {
      return WrongType("calibration", "speed factors above zero");
    }
    auto share = NumberField(*it, "routerRandomShare", "calibration.routerRandomShare");
    if (!share.ok()) return share.status();
    if (share->has_value()) {
      if (!(**share >= 0 && **share <= 1)) {
        return WrongType("calibration.routerRandomShare", "a share in [0, 1]");
      }
      c.router_random_share = **share;
    }
    auto front_end = NumberField(*it, "extraFrontEndSeconds", "calibration.extraFrontEndSeconds");
    if (!front_end.ok()) return front_end.status();
    if (front_end->has_value()) {
      if (!(std::abs(**front_end) <= policy::kMaxExtraFrontEndSeconds)) {
        return WrongType("calibration.extraFrontEndSeconds",
                         absl::StrCat("seconds in [-", policy::kMaxExtraFrontEndSeconds, ", ",
                                      policy::kMaxExtraFrontEndSeconds, "]"));
      }
      c.extra_front_end_seconds = **front_end;
    }
    s.calibration = c;
  }
  if (auto it = j.find("arrivalHistory"); it != j.end()) {
    if (!it->is_object()) return WrongType("arrivalHistory", "an object");
    AutoscalerStatus::ArrivalHistory h;
    auto bucket = DurationField(it->value("bucket", nlohmann::json()), "arrivalHistory.bucket");
    if (!bucket.ok()) return bucket.status();
    h.bucket = *bucket;
    for (auto [key, field] : {std::pair{"start", &h.start}, std::pair{"end", &h.end}}) {
      const nlohmann::json v = it->value(key, nlohmann::json());
      auto t = kube::ParseKubeTime(v.is_string() ? v.get<std::string>() : "");
      if (!t.ok()) return WrongType(absl::StrCat("arrivalHistory.", key), "an RFC 3339 time");
      *field = *t;
    }
    const nlohmann::json data = it->value("data", nlohmann::json());
    if (!data.is_string()) return WrongType("arrivalHistory.data", "a string");
    h.data = data.get<std::string>();
    s.arrival_history = std::move(h);
  }
  if (auto it = j.find("lastDecision"); it != j.end() && it->is_object()) {
    AutoscalerStatus::LastDecision d;
    TS_ASSIGN_OR_RETURN(const std::string when, StringField(*it, "time", "lastDecision.time", ""));
    auto t = kube::ParseKubeTime(when);
    if (!t.ok()) return WrongType("lastDecision.time", "an RFC 3339 time");
    d.time = *t;
    TS_ASSIGN_OR_RETURN(const int64_t replicas,
                        IntegerField(*it, "replicas", "lastDecision.replicas", 0, 0,
                                     std::numeric_limits<int32_t>::max()));
    d.replicas = static_cast<int32_t>(replicas);
    if (auto r = it->find("reasons"); r != it->end() && r->is_array()) {
      for (const nlohmann::json& x : *r) {
        if (!x.is_object()) continue;
        TS_ASSIGN_OR_RETURN(std::string code,
                            StringField(x, "code", "lastDecision.reasons.code", ""));
        TS_ASSIGN_OR_RETURN(std::string message,
                            StringField(x, "message", "lastDecision.reasons.message", ""));
        d.reasons.push_back({std::move(code), std::move(message)});
      }
    }
    s.last_decision = std::move(d);
  }
  // admission and observed are recomputed every decision; nothing downstream reads them back.
  return s;
}

AutoscalerStatus ReadableStatus(const nlohmann::json& j, std::vector<absl::Status>& unreadable) {
  if (j.is_null()) return {};
  if (!j.is_object()) {
    unreadable.push_back(WrongType("", "an object"));
    return {};
  }
  nlohmann::json readable = nlohmann::json::object();
  for (const auto& [key, value] : j.items()) {
    const absl::StatusOr<AutoscalerStatus> part = StatusFromJson({{key, value}});
    if (part.ok()) {
      readable[key] = value;
    } else {
      unreadable.push_back(part.status());
    }
  }
  // The parts are read independently of each other, so what read alone reads together.
  absl::StatusOr<AutoscalerStatus> s = StatusFromJson(readable);
  if (!s.ok()) {
    unreadable.push_back(s.status());
    return {};
  }
  return *std::move(s);
}

}  // namespace twinscale::reconcile
