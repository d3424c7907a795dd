// Prometheus' HTTP query API over cpprestsdk; see prometheus_client.h.
#include "controller/metrics/prometheus_client.h"

#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <system_error>
#include <utility>

#include <cpprest/http_client.h>
#include <cpprest/uri_builder.h>
#include <nlohmann/json.hpp>

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

absl::StatusOr<PromSeries> ParseSeries(const json& j, size_t index) {
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
  auto values = j.find("values");
  if (values == j.end() || !values->is_array()) {
    return Bad(absl::StrCat(at, ".values is missing or not an array"));
  }
  series.points.reserve(values->size());
  for (size_t i = 0; i < values->size(); ++i) {
    const json& p = (*values)[i];
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_string()) {
      return Bad(absl::StrCat(at, ".values[", i, "] is not [time, \"value\"]"));
    }
    const double t = p[0].get<double>();
    // Unix seconds within absl::Time's comfortable range (years 0..9999).
    if (!std::isfinite(t) || std::fabs(t) > 253402300799.0) {
      return Bad(absl::StrCat(at, ".values[", i, "] has an out-of-range time"));
    }
    double v = 0;
    if (!ParseSampleValue(p[1].get_ref<const std::string&>(), v)) {
      return Bad(absl::StrCat(at, ".values[", i, "] has a bad value \"",
                              p[1].get_ref<const std::string&>().substr(0, 40), "\""));
    }
    const absl::Time when = absl::FromUnixMillis(static_cast<int64_t>(std::llround(t * 1000.0)));
    if (!series.points.empty() && when <= series.points.back().at) {
      return Bad(absl::StrCat(at, ".values[", i, "] is not after the one before"));
    }
    series.points.push_back(PromPoint{when, v});
  }
  return series;
}

}  // namespace

absl::StatusOr<PromMatrix> ParseQueryRangeResponse(std::string_view body) {
  const json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad("not JSON");
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
  if (*type != "matrix") {
    return Bad(absl::StrCat("resultType is \"", type->get<std::string>().substr(0, 40),
                            "\", want \"matrix\" (a range query)"));
  }
  auto result = data->find("result");
  if (result == data->end() || !result->is_array()) return Bad("no \"data.result\" array");
  PromMatrix matrix;
  matrix.reserve(result->size());
  for (size_t i = 0; i < result->size(); ++i) {
    absl::StatusOr<PromSeries> s = ParseSeries((*result)[i], i);
    if (!s.ok()) return s.status();
    matrix.push_back(std::move(*s));
  }
  return matrix;
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
  const std::string where = absl::StrCat("Prometheus at ", base_url_);
  std::string body;
  int status_code = 0;
  try {
    web::http::client::http_client_config config;
    config.set_timeout(std::chrono::milliseconds(absl::ToInt64Milliseconds(options_.timeout)));
    web::http::client::http_client client(base_url_, config);
    web::uri_builder path("api/v1/query_range");
    path.append_query("query", q.promql);
    path.append_query("start", PromTimestamp(q.start));
    path.append_query("end", PromTimestamp(q.end));
    path.append_query("step", absl::StrFormat("%.3f", absl::ToDoubleSeconds(q.step)));
    web::http::http_response response =
        client.request(web::http::methods::GET, path.to_string()).get();
    status_code = response.status_code();
    body = response.extract_string(/*ignore_content_type=*/true).get();
  } catch (const web::http::http_exception& e) {
    const std::error_code ec = e.error_code();
    if (ec == std::errc::timed_out || ec.value() == static_cast<int>(std::errc::timed_out)) {
      return absl::DeadlineExceededError(absl::StrCat(where, ": no answer within ",
                                                      absl::FormatDuration(options_.timeout), ": ",
                                                      e.what()));
    }
    return absl::UnavailableError(absl::StrCat(where, ": ", e.what()));
  } catch (const std::exception& e) {
    // uri_exception for a malformed URL, pplx::task_canceled, and the like.
    return absl::UnavailableError(absl::StrCat(where, ": ", e.what()));
  }
  absl::StatusOr<PromMatrix> m = ParseQueryRangeResponse(body);
  if (!m.ok()) {
    std::string msg = absl::StrCat(where, ": ");
    if (status_code != 200) absl::StrAppend(&msg, "HTTP ", status_code, ": ");
    absl::StrAppend(&msg, m.status().message(), " (query ", q.promql, ")");
    // Prometheus' own error answers keep their meaning (bad_data: the query is wrong); an answer
    // that isn't the API's JSON (a proxy's page, a 404 for a wrong path) is Unavailable.
    if (absl::StartsWith(m.status().message(), "Prometheus error")) {
      return absl::Status(m.status().code(), msg);
    }
    return absl::UnavailableError(msg);
  }
  return m;
}

}  // namespace twinscale::metrics
