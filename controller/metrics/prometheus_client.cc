// Prometheus' HTTP query API over cpprestsdk; see prometheus_client.h.
#include "controller/metrics/prometheus_client.h"

#include <cpprest/http_client.h>
#include <cpprest/uri_builder.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace twinscale::metrics {
namespace {

using nlohmann::json;

// A sample value as Prometheus writes it: a decimal string, or NaN / +Inf / -Inf.
bool ParseSampleValue(const std::string& s, double& out) {
  if (s == "NaN") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (s == "+Inf" || s == "Inf") {
    out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "-Inf") {
    out = -std::numeric_limits<double>::infinity();
    return true;
  }
  return absl::SimpleAtod(s, &out) && std::isfinite(out);
}

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("Prometheus answer: ", what));
}

// A JSON document, or InvalidArgument saying where it stops being JSON.
absl::StatusOr<json> ParseJson(std::string_view body) {
  try {
    return json::parse(body.begin(), body.end());
  } catch (const json::parse_error& e) {
    return Bad(absl::StrCat("not JSON at byte ", e.byte));
  } catch (const std::exception& e) {
    return Bad(absl::StrCat("not JSON: ", e.what()));
  }
}

// One [time, "value"] pair at `at` (e.g. "result[2].values[7]").
absl::StatusOr<PromPoint> ParsePoint(const json& p, const std::string& at) {
  if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_string()) {
    return Bad(absl::StrCat(at, " is not [time, \"value\"]"));
  }
  const double t = p[0].get<double>();
  // Unix seconds within absl::Time's comfortable range (years 0..9999).
  if (!std::isfinite(t) || std::fabs(t) > 253402300799.0) {
    return Bad(absl::StrCat(at, " has an out-of-range time"));
  }
  double v = 0;
  if (!ParseSampleValue(p[1].get_ref<const std::string&>(), v)) {
    return Bad(absl::StrCat(at, " has a bad value \"",
                            p[1].get_ref<const std::string&>().substr(0, 40), "\""));
  }
  return PromPoint{absl::FromUnixMillis(static_cast<int64_t>(std::llround(t * 1000.0))), v};
}

// One element of data.result: {"metric": {...}, "values": [[t, "v"], ...]} (a matrix) or
// {"metric": {...}, "value": [t, "v"]} (a vector).
enum class SeriesShape { kValues, kValue };

absl::StatusOr<PromSeries> ParseSeries(const json& j, size_t index, SeriesShape shape) {
  const std::string at = absl::StrCat("result[", index, "]");
  if (!j.is_object()) return Bad(absl::StrCat(at, " is not an object"));
  PromSeries series;
  auto metric = j.find("metric");
  if (metric != j.end()) {
    if (!metric->is_object()) return Bad(absl::StrCat(at, ".metric is not an object"));
    for (auto it = metric->begin(); it != metric->end(); ++it) {
      if (!it.value().is_string()) {
        return Bad(absl::StrCat(at, ".metric.", it.key(), " is not a string"));
      }
      series.labels[it.key()] = it.value().get<std::string>();
    }
  }
  if (shape == SeriesShape::kValue) {
    auto value = j.find("value");
    if (value == j.end()) return Bad(absl::StrCat(at, ".value is missing"));
    absl::StatusOr<PromPoint> p = ParsePoint(*value, absl::StrCat(at, ".value"));
    if (!p.ok()) return p.status();
    series.points.push_back(*p);
    return series;
  }
  auto values = j.find("values");
  if (values == j.end() || !values->is_array()) {
    return Bad(absl::StrCat(at, ".values is missing or not an array"));
  }
  series.points.reserve(values->size());
  for (size_t i = 0; i < values->size(); ++i) {
    const std::string where = absl::StrCat(at, ".values[", i, "]");
    absl::StatusOr<PromPoint> p = ParsePoint((*values)[i], where);
    if (!p.ok()) return p.status();
    if (!series.points.empty() && p->at <= series.points.back().at) {
      return Bad(absl::StrCat(where, " is not after the one before"));
    }
    series.points.push_back(*p);
  }
  return series;
}

// The envelope every answer shares: {"status": "success", "data": {"resultType": ..., "result":
// ...}} or {"status": "error", "errorType": ..., "error": ...}. Returns data, or the error.
absl::StatusOr<const json*> ParseEnvelope(const json& j) {
  if (!j.is_object()) return Bad("not a JSON object");
  auto status = j.find("status");
  if (status == j.end() || !status->is_string()) return Bad("no \"status\"");
  if (*status == "error") {
    std::string type = "unknown", error = "(no message)";
    if (auto t = j.find("errorType"); t != j.end() && t->is_string()) type = t->get<std::string>();
    if (auto e = j.find("error"); e != j.end() && e->is_string()) error = e->get<std::string>();
    const std::string msg = absl::StrCat("Prometheus error (", type, "): ", error);
    return type == "bad_data" ? absl::InvalidArgumentError(msg) : absl::UnavailableError(msg);
  }
  if (*status != "success") return Bad("\"status\" is neither \"success\" nor \"error\"");
  auto data = j.find("data");
  if (data == j.end() || !data->is_object()) return Bad("no \"data\" object");
  auto type = data->find("resultType");
  if (type == data->end() || !type->is_string()) return Bad("no \"data.resultType\"");
  if (data->find("result") == data->end()) return Bad("no \"data.result\"");
  return &*data;
}

absl::StatusOr<PromMatrix> ParseResultArray(const json& result, SeriesShape shape) {
  if (!result.is_array()) return Bad("\"data.result\" is not an array");
  PromMatrix matrix;
  matrix.reserve(result.size());
  for (size_t i = 0; i < result.size(); ++i) {
    absl::StatusOr<PromSeries> s = ParseSeries(result[i], i, shape);
    if (!s.ok()) return s.status();
    matrix.push_back(std::move(*s));
  }
  return matrix;
}

// Whether a failed parse is Prometheus' own error answer (whose code keeps its meaning).
bool IsPrometheusError(const absl::Status& s) {
  return absl::StartsWith(s.message(), "Prometheus error");
}

// GET <base_url>/<api>?<params>: the status code and body, or the transport's error.
absl::StatusOr<std::pair<int, std::string>> Get(
    const std::string& base_url, const PrometheusClientOptions& options, const std::string& api,
    const std::vector<std::pair<std::string, std::string>>& params) {
  const std::string where = absl::StrCat("Prometheus at ", base_url);
  try {
    web::http::client::http_client_config config;
    config.set_timeout(std::chrono::milliseconds(absl::ToInt64Milliseconds(options.timeout)));
    web::http::client::http_client client(base_url, config);
    web::uri_builder path(api);
    for (const auto& [k, v] : params) path.append_query(k, v);
    web::http::http_response response =
        client.request(web::http::methods::GET, path.to_string()).get();
    const int status_code = response.status_code();
    return std::make_pair(status_code, response.extract_string(/*ignore_content_type=*/true).get());
  } catch (const web::http::http_exception& e) {
    const std::error_code ec = e.error_code();
    if (ec == std::errc::timed_out || ec.value() == static_cast<int>(std::errc::timed_out)) {
      return absl::DeadlineExceededError(absl::StrCat(
          where, ": no answer within ", absl::FormatDuration(options.timeout), ": ", e.what()));
    }
    return absl::UnavailableError(absl::StrCat(where, ": ", e.what()));
  } catch (const std::exception& e) {
    // uri_exception for a malformed URL, pplx::task_canceled, and the like.
    return absl::UnavailableError(absl::StrCat(where, ": ", e.what()));
  }
}

// A parse failure of an answer as the caller sees it: naming the URL, the HTTP status when it was
// not 200, and the query.
absl::Status AnswerError(const std::string& base_url, int status_code, const absl::Status& parse,
                         const std::string& promql) {
  std::string msg = absl::StrCat("Prometheus at ", base_url, ": ");
  if (status_code != 200) absl::StrAppend(&msg, "HTTP ", status_code, ": ");
  absl::StrAppend(&msg, parse.message(), " (query ", promql, ")");
  // Prometheus' own error answers keep their meaning (bad_data: the query is wrong); an answer
  // that isn't the API's JSON (a proxy's page, a 404 for a wrong path) is Unavailable.
  if (IsPrometheusError(parse)) return absl::Status(parse.code(), msg);
  return absl::UnavailableError(msg);
}

}  // namespace

absl::StatusOr<PromMatrix> ParseQueryRangeResponse(std::string_view body) {
  absl::StatusOr<json> j = ParseJson(body);
  if (!j.ok()) return j.status();
  absl::StatusOr<const json*> data = ParseEnvelope(*j);
  if (!data.ok()) return data.status();
  const std::string& type = (*data)->at("resultType").get_ref<const std::string&>();
  if (type != "matrix") {
    return Bad(absl::StrCat("resultType is \"", type.substr(0, 40),
                            "\", want \"matrix\" (a range query)"));
  }
  return ParseResultArray((*data)->at("result"), SeriesShape::kValues);
}

absl::StatusOr<PromQueryResult> ParseQueryResponse(std::string_view body) {
  absl::StatusOr<json> j = ParseJson(body);
  if (!j.ok()) return j.status();
  absl::StatusOr<const json*> data = ParseEnvelope(*j);
  if (!data.ok()) return data.status();
  const std::string& type = (*data)->at("resultType").get_ref<const std::string&>();
  const json& result = (*data)->at("result");
  PromQueryResult out;
  if (type == "vector" || type == "matrix") {
    out.type = type == "vector" ? PromQueryResult::Type::kVector : PromQueryResult::Type::kMatrix;
    absl::StatusOr<PromMatrix> m =
        ParseResultArray(result, type == "vector" ? SeriesShape::kValue : SeriesShape::kValues);
    if (!m.ok()) return m.status();
    out.series = *std::move(m);
    return out;
  }
  if (type == "scalar") {
    out.type = PromQueryResult::Type::kScalar;
    absl::StatusOr<PromPoint> p = ParsePoint(result, "data.result");
    if (!p.ok()) return p.status();
    out.series.push_back(PromSeries{{}, {*p}});
    return out;
  }
  return Bad(absl::StrCat("resultType is \"", type.substr(0, 40),
                          "\", want \"vector\", \"matrix\" or \"scalar\""));
}

std::string PromTimestamp(absl::Time t) {
  const int64_t ms = absl::ToUnixMillis(t);
  const int64_t sec = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
  return absl::StrFormat("%d.%03d", sec, ms - sec * 1000);
}

PrometheusClient::PrometheusClient(std::string base_url, PrometheusClientOptions options)
    : base_url_(std::move(base_url)), options_(options) {}

absl::StatusOr<PromMatrix> PrometheusClient::QueryRange(const RangeQuery& q) const {
  if (q.step <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("Prometheus range query: step must be > 0");
  }
  if (q.end < q.start) return absl::InvalidArgumentError("Prometheus range query: end < start");
  const int64_t per = std::max<int64_t>(1, options_.max_points_per_request);
  PromMatrix joined;
  std::map<std::map<std::string, std::string>, size_t> index;  // labels -> position in joined
  for (absl::Time from = q.start; from <= q.end; from += q.step * per) {
    RangeQuery part = q;
    part.start = from;
    part.end = std::min(q.end, from + q.step * (per - 1));
    absl::StatusOr<PromMatrix> m = QueryOnce(part);
    if (!m.ok()) return m.status();
    for (PromSeries& s : *m) {
      auto [it, inserted] = index.emplace(s.labels, joined.size());
      if (inserted) {
        joined.push_back(std::move(s));
      } else {
        auto& points = joined[it->second].points;
        points.insert(points.end(), s.points.begin(), s.points.end());
      }
    }
  }
  return joined;
}

absl::StatusOr<PromMatrix> PrometheusClient::QueryOnce(const RangeQuery& q) const {
  absl::StatusOr<std::pair<int, std::string>> answer =
      Get(base_url_, options_, "api/v1/query_range",
          {{"query", q.promql},
           {"start", PromTimestamp(q.start)},
           {"end", PromTimestamp(q.end)},
           {"step", absl::StrFormat("%.3f", absl::ToDoubleSeconds(q.step))}});
  if (!answer.ok()) return answer.status();
  absl::StatusOr<PromMatrix> m = ParseQueryRangeResponse(answer->second);
  if (!m.ok()) return AnswerError(base_url_, answer->first, m.status(), q.promql);
  return m;
}

absl::StatusOr<PromQueryResult> PrometheusClient::Query(const InstantQuery& q) const {
  absl::StatusOr<std::pair<int, std::string>> answer = Get(
      base_url_, options_, "api/v1/query", {{"query", q.promql}, {"time", PromTimestamp(q.at)}});
  if (!answer.ok()) return answer.status();
  absl::StatusOr<PromQueryResult> r = ParseQueryResponse(answer->second);
  if (!r.ok()) return AnswerError(base_url_, answer->first, r.status(), q.promql);
  return r;
}

}  // namespace twinscale::metrics
