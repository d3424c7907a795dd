// The decision corpus's JSON lines: see decision_corpus.h.
#include "controller/replay/decision_corpus.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "controller/common/status_macros.h"
#include "nlohmann/json.hpp"

namespace twinscale::replay {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

// The interval of the arrival counts behind a legacy entry's arrival_cv (the replay's 15 s).
constexpr double kLegacyCountInterval_s = 15;

ordered_json ShapeJson(const policy::LengthShape& s) {
  ordered_json j;
  j["upper_bounds"] = s.upper_bounds;
  j["weights"] = s.weights;
  return j;
}

ordered_json QuestionObject(const policy::ForecastQuestion& q) {
  ordered_json j;
  ordered_json ready = ordered_json::array();
  for (const policy::ReplicaStart& r : q.ready) {
    ordered_json x;
    x["waiting"] = r.waiting;
    x["running"] = r.running;
    x["kv_usage"] = r.kv_usage;
    ready.push_back(std::move(x));
  }
  j["ready"] = std::move(ready);
  ordered_json pending = ordered_json::array();
  for (absl::Duration d : q.pending_ready_in) pending.push_back(Seconds(d));
  j["pending_ready_in_s"] = std::move(pending);
  j["new_replica_warmup_s"] = Seconds(q.new_replica_warmup);
  j["arrival_rate"] = q.arrival_rate;
  j["arrival_rate_cv"] = q.arrival_rate_cv;
  j["rate_interval_s"] = Seconds(q.rate_interval);
  if (!q.rate_persistence.empty()) {
    j["arrival_rate_baseline"] = q.arrival_rate_baseline;
    j["rate_persistence"] = q.rate_persistence;
  }
  j["prompt_tokens_mean"] = q.prompt_tokens_mean;
  j["output_tokens_mean"] = q.output_tokens_mean;
  if (!q.prompt_shape.empty()) j["prompt_shape"] = ShapeJson(q.prompt_shape);
  if (!q.output_shape.empty()) j["output_shape"] = ShapeJson(q.output_shape);
  j["horizon_s"] = Seconds(q.horizon);
  j["judge_from_s"] = Seconds(q.judge_from);
  j["ttft_threshold_s"] = Seconds(q.ttft_threshold);
  j["ttft_per_prompt_token_s"] = Seconds(q.ttft_per_prompt_token);
  j["percentile"] = q.percentile;
  j["seed"] = q.seed;
  return j;
}

// Field readers: each names the field (with its path) in the error.
class Reader {
 public:
  Reader(const json& object, std::string path) : j_(object), path_(std::move(path)) {}

  absl::Status Keys(std::initializer_list<const char*> allowed) const {
    if (!j_.is_object()) return Error("", "is not an object");
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      bool known = false;
      for (const char* k : allowed) known = known || it.key() == k;
      if (!known) return Error(it.key(), "is not a known field");
    }
    return absl::OkStatus();
  }
  bool Has(const char* key) const { return j_.contains(key); }
  absl::StatusOr<double> Number(const char* key, double lo, double hi) const {
    if (!j_.contains(key)) return Error(key, "is missing");
    const json& v = j_.at(key);
    if (!v.is_number()) return Error(key, "is not a number");
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < lo || x > hi) {
      return Error(key, absl::StrCat("is ", x, ", outside [", lo, ", ", hi, "]"));
    }
    return x;
  }
  absl::StatusOr<int32_t> Int(const char* key, int32_t lo, int32_t hi) const {
    if (!j_.contains(key)) return Error(key, "is missing");
    const json& v = j_.at(key);
    if (!v.is_number_integer()) return Error(key, "is not an integer");
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
      return Error(key, absl::StrCat("is ", x, ", outside [", lo, ", ", hi, "]"));
    return static_cast<int32_t>(x);
  }
  absl::StatusOr<std::string> String(const char* key) const {
    if (!j_.contains(key)) return Error(key, "is missing");
    if (!j_.at(key).is_string()) return Error(key, "is not a string");
    return j_.at(key).get<std::string>();
  }
  absl::StatusOr<bool> Bool(const char* key) const {
    if (!j_.contains(key)) return Error(key, "is missing");
    if (!j_.at(key).is_boolean()) return Error(key, "is not true or false");
    return j_.at(key).get<bool>();
  }
  absl::StatusOr<Reader> Object(const char* key) const {
    if (!j_.contains(key)) return Error(key, "is missing");
    if (!j_.at(key).is_object()) return Error(key, "is not an object");
    return Reader(j_.at(key), Path(key));
  }
  absl::StatusOr<std::vector<double>> Numbers(const char* key, double lo) const {
    if (!j_.contains(key)) return Error(key, "is missing");
    const json& v = j_.at(key);
    if (!v.is_array()) return Error(key, "is not an array");
    std::vector<double> out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_number() || !std::isfinite(v[i].get<double>()) || v[i].get<double>() < lo) {
        return Error(key, absl::StrCat("[", i, "] is not a number >= ", lo));
      }
      out.push_back(v[i].get<double>());
    }
    return out;
  }
  const json& raw(const char* key) const { return j_.at(key); }
  std::string Path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  absl::Status Error(const std::string& key, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(key.empty() ? path_ : Path(key), " ", what));
  }

 private:
  const json& j_;
  std::string path_;
};

absl::Status ReadShape(const Reader& parent, const char* key, policy::LengthShape& shape) {
  if (!parent.Has(key)) return absl::OkStatus();
  Reader r(parent.raw(key), parent.Path(key));
  TS_RETURN_IF_ERROR(r.Keys({"upper_bounds", "weights"}));
  TS_ASSIGN_OR_RETURN(shape.upper_bounds, r.Numbers("upper_bounds", 0));
  TS_ASSIGN_OR_RETURN(shape.weights, r.Numbers("weights", 0));
  if (shape.weights.size() != shape.upper_bounds.size() + 1) {
    return r.Error("weights", "must have one more element than upper_bounds");
  }
  return absl::OkStatus();
}

absl::Status ReadQuestion(const Reader& r, policy::ForecastQuestion& q) {
  TS_RETURN_IF_ERROR(r.Keys(
      {"ready", "pending_ready_in_s", "new_replica_warmup_s", "arrival_rate", "arrival_rate_cv",
       "rate_interval_s", "arrival_cv", "arrival_rate_baseline", "rate_persistence",
       "prompt_tokens_mean", "output_tokens_mean", "prompt_shape", "output_shape", "horizon_s",
       "judge_from_s", "ttft_threshold_s", "ttft_per_prompt_token_s", "percentile", "seed"}));
  if (!r.Has("ready") || !r.raw("ready").is_array()) return r.Error("ready", "is not an array");
  const json& ready = r.raw("ready");
  for (size_t i = 0; i < ready.size(); ++i) {
    Reader x(ready[i], r.Path(absl::StrCat("ready[", i, "]")));
    TS_RETURN_IF_ERROR(x.Keys({"waiting", "running", "kv_usage"}));
    policy::ReplicaStart s;
    TS_ASSIGN_OR_RETURN(s.waiting, x.Number("waiting", 0, 1e7));
    TS_ASSIGN_OR_RETURN(s.running, x.Number("running", 0, 1e7));
    TS_ASSIGN_OR_RETURN(s.kv_usage, x.Number("kv_usage", 0, 1));
    q.ready.push_back(s);
  }
  std::vector<double> pending;
  TS_ASSIGN_OR_RETURN(pending, r.Numbers("pending_ready_in_s", 0));
  for (double s : pending) q.pending_ready_in.push_back(absl::Seconds(s));
  double s = 0;
  TS_ASSIGN_OR_RETURN(s, r.Number("new_replica_warmup_s", 0, 86400));
  q.new_replica_warmup = absl::Seconds(s);
  TS_ASSIGN_OR_RETURN(q.arrival_rate, r.Number("arrival_rate", 0, 1e7));
  if (r.Has("arrival_cv")) {
    // An entry recorded before the twin modelled burstiness as a modulated rate: it kept the
    // renewal gap CV, sqrt(dispersion of 15 s counts); the dispersion converts to the rate's CV
    // as the snapshot computes it (fleet_snapshot.h), at the 15 s those counts were taken over.
    if (r.Has("arrival_rate_cv") || r.Has("rate_interval_s")) {
      return r.Error("arrival_cv", "can't be combined with arrival_rate_cv / rate_interval_s");
    }
    double cv = 0;
    TS_ASSIGN_OR_RETURN(cv, r.Number("arrival_cv", 0.01, 100));
    q.rate_interval = absl::Seconds(kLegacyCountInterval_s);
    const double mean_count = q.arrival_rate * kLegacyCountInterval_s;
    q.arrival_rate_cv = mean_count > 0 ? std::sqrt(std::max(0.0, cv * cv - 1.0) / mean_count) : 0.0;
  } else {
    TS_ASSIGN_OR_RETURN(q.arrival_rate_cv, r.Number("arrival_rate_cv", 0, 100));
    TS_ASSIGN_OR_RETURN(s, r.Number("rate_interval_s", 1e-3, 86400));
    q.rate_interval = absl::Seconds(s);
  }
  // The rate path (forecaster.h): both or neither; absent in entries recorded before it.
  if (r.Has("rate_persistence") != r.Has("arrival_rate_baseline")) {
    return r.Error(r.Has("rate_persistence") ? "arrival_rate_baseline" : "rate_persistence",
                   "is missing (the rate path needs both)");
  }
  if (r.Has("rate_persistence")) {
    TS_ASSIGN_OR_RETURN(q.arrival_rate_baseline, r.Number("arrival_rate_baseline", 1e-9, 1e7));
    TS_ASSIGN_OR_RETURN(q.rate_persistence, r.Numbers("rate_persistence", 0));
    for (double w : q.rate_persistence) {
      if (w > 1) return r.Error("rate_persistence", "has a weight above 1");
    }
  }
  TS_ASSIGN_OR_RETURN(q.prompt_tokens_mean, r.Number("prompt_tokens_mean", 1, 1e7));
  TS_ASSIGN_OR_RETURN(q.output_tokens_mean, r.Number("output_tokens_mean", 1, 1e7));
  TS_RETURN_IF_ERROR(ReadShape(r, "prompt_shape", q.prompt_shape));
  TS_RETURN_IF_ERROR(ReadShape(r, "output_shape", q.output_shape));
  TS_ASSIGN_OR_RETURN(s, r.Number("horizon_s", 1e-3, 86400));
  q.horizon = absl::Seconds(s);
  TS_ASSIGN_OR_RETURN(s, r.Number("judge_from_s", 0, 86400));
  q.judge_from = absl::Seconds(s);
  TS_ASSIGN_OR_RETURN(s, r.Number("ttft_threshold_s", 0, 3600));
  q.ttft_threshold = absl::Seconds(s);
  TS_ASSIGN_OR_RETURN(s, r.Number("ttft_per_prompt_token_s", 0, 60));
  q.ttft_per_prompt_token = absl::Seconds(s);
  TS_ASSIGN_OR_RETURN(q.percentile, r.Number("percentile", 1e-9, 100));
  if (!r.Has("seed") || !r.raw("seed").is_number_unsigned()) {
    return r.Error("seed", "is not a non-negative integer");
  }
  q.seed = r.raw("seed").get<uint64_t>();
  return absl::OkStatus();
}

absl::Status ReadEntry(const Reader& r, CorpusEntry& e) {
  TS_RETURN_IF_ERROR(r.Keys({"source", "profile", "router", "speed", "prefill_speed",
                             "router_random_share", "current", "min_replicas", "max_replicas",
                             "not_counted", "safety_margin", "scale_in_allowed", "decided",
                             "recommended", "previous_recommendation", "question"}));
  {
    TS_ASSIGN_OR_RETURN(const Reader src, r.Object("source"));
    TS_RETURN_IF_ERROR(src.Keys({"trace", "rate_scale", "truth", "time_s", "policy", "kind"}));
    TS_ASSIGN_OR_RETURN(e.source.trace, src.String("trace"));
    TS_ASSIGN_OR_RETURN(e.source.rate_scale, src.Number("rate_scale", 1e-9, 1e6));
    TS_ASSIGN_OR_RETURN(e.source.truth, src.String("truth"));
    TS_ASSIGN_OR_RETURN(e.source.time_s, src.Number("time_s", 0, 1e9));
    TS_ASSIGN_OR_RETURN(e.source.policy, src.String("policy"));
    TS_ASSIGN_OR_RETURN(e.source.kind, src.String("kind"));
  }
  constexpr int32_t kMax = 1 << 20;
  TS_ASSIGN_OR_RETURN(e.profile, r.String("profile"));
  TS_ASSIGN_OR_RETURN(e.router, r.String("router"));
  TS_ASSIGN_OR_RETURN(e.speed, r.Number("speed", 1e-3, 1e3));
  if (r.Has("prefill_speed")) {
    TS_ASSIGN_OR_RETURN(e.prefill_speed, r.Number("prefill_speed", 1e-3, 1e3));
  }
  if (r.Has("router_random_share")) {
    TS_ASSIGN_OR_RETURN(e.router_random_share, r.Number("router_random_share", 0, 1));
  }
  TS_ASSIGN_OR_RETURN(e.current, r.Int("current", 0, kMax));
  TS_ASSIGN_OR_RETURN(e.min_replicas, r.Int("min_replicas", 1, kMax));
  TS_ASSIGN_OR_RETURN(e.max_replicas, r.Int("max_replicas", 1, kMax));
  if (e.min_replicas > e.max_replicas) return r.Error("min_replicas", "is above max_replicas");
  TS_ASSIGN_OR_RETURN(e.not_counted, r.Int("not_counted", 0, kMax));
  TS_ASSIGN_OR_RETURN(e.safety_margin, r.Number("safety_margin", 1e-3, 1));
  TS_ASSIGN_OR_RETURN(e.scale_in_allowed, r.Bool("scale_in_allowed"));
  TS_ASSIGN_OR_RETURN(e.decided, r.Int("decided", 0, kMax));
  TS_ASSIGN_OR_RETURN(e.recommended, r.Int("recommended", 0, kMax));
  if (r.Has("previous_recommendation")) {
    TS_ASSIGN_OR_RETURN(e.previous_recommendation, r.Int("previous_recommendation", 0, kMax));
  }
  TS_ASSIGN_OR_RETURN(const Reader q, r.Object("question"));
  return ReadQuestion(q, e.question);
}

}  // namespace

std::string CorpusEntryToJson(const CorpusEntry& e) {
  ordered_json j;
  ordered_json src;
  src["trace"] = e.source.trace;
  src["rate_scale"] = e.source.rate_scale;
  src["truth"] = e.source.truth;
  src["time_s"] = e.source.time_s;
  src["policy"] = e.source.policy;
  src["kind"] = e.source.kind;
  j["source"] = std::move(src);
  j["profile"] = e.profile;
  j["router"] = e.router;
  j["speed"] = e.speed;
  if (e.prefill_speed) j["prefill_speed"] = *e.prefill_speed;
  if (e.router_random_share) j["router_random_share"] = *e.router_random_share;
  j["current"] = e.current;
  j["min_replicas"] = e.min_replicas;
  j["max_replicas"] = e.max_replicas;
  j["not_counted"] = e.not_counted;
  j["safety_margin"] = e.safety_margin;
  j["scale_in_allowed"] = e.scale_in_allowed;
  j["decided"] = e.decided;
  j["recommended"] = e.recommended;
  if (e.previous_recommendation > 0) j["previous_recommendation"] = e.previous_recommendation;
  j["question"] = QuestionObject(e.question);
  return j.dump();
}

absl::StatusOr<CorpusEntry> ParseCorpusLine(std::string_view line) {
  const json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("not valid JSON");
  CorpusEntry e;
  // The readers check every type before reading, so nlohmann never throws here; the catch is a
  // backstop so no exception escapes a parser of outside input.
  try {
    TS_RETURN_IF_ERROR(ReadEntry(Reader(j, ""), e));
  } catch (const json::exception& ex) {
    return absl::InvalidArgumentError(absl::StrCat("bad JSON value: ", ex.what()));
  }
  return e;
}

absl::StatusOr<std::vector<CorpusEntry>> ParseCorpus(std::string_view text) {
  std::vector<CorpusEntry> out;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    absl::StatusOr<CorpusEntry> e = ParseCorpusLine(line);
    if (!e.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_no, ": ", e.status().message()));
    }
    out.push_back(std::move(*e));
  }
  return out;
}

CorpusEntry EntryFromDecision(const policy::Decision& d) {
  CorpusEntry e;
  e.current = d.current;
  e.decided = d.replicas;
  e.recommended = d.recommendation;
  e.previous_recommendation = d.previous_recommendation;
  e.question = d.question;
  // Recommend stores candidate_replicas = max(1, replicas - not counted).
  e.not_counted = d.question.candidate_replicas > 1
                      ? std::max(0, d.replicas - d.question.candidate_replicas)
                      : 0;
  e.question.candidate_replicas = 1;
  e.question.judge_from = d.question.new_replica_warmup;
  for (const policy::Reason& r : d.reasons) {
    if (r.code == "ScaleInFrozen" || r.code == "ScaleInBlockedByLimits" ||
        r.code == "LimitsExceeded" || r.code == "InputsStale") {
      e.scale_in_allowed = false;
    }
  }
  return e;
}

}  // namespace twinscale::replay
