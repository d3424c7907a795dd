// The Prometheus API answer parser (table of good and bad bodies) and the client's errors when
// Prometheus can't be reached. The client against a real Prometheus is
// tests/integration/prometheus_history_test.cc.
#include "controller/metrics/prometheus_client.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace twinscale::metrics {
namespace {

TEST(ParseQueryRangeResponseTest, ParsesAMatrix) {
  const std::string body = R"({"status":"success","data":{"resultType":"matrix","result":[
    {"metric":{"__name__":"up","le":"+Inf"},"values":[[1700000000,"1"],[1700000015.5,"NaN"],
                                                      [1700000030,"+Inf"]]},
    {"metric":{},"values":[[1700000000.123,"2.5e3"]]}]}})";
  absl::StatusOr<PromMatrix> m = ParseQueryRangeResponse(body);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ((*m)[0].labels.at("le"), "+Inf");
  ASSERT_EQ((*m)[0].points.size(), 3u);
  EXPECT_EQ((*m)[0].points[1].at, absl::FromUnixMillis(1700000015500));
  EXPECT_TRUE(std::isnan((*m)[0].points[1].value));
  EXPECT_TRUE(std::isinf((*m)[0].points[2].value));
  EXPECT_EQ((*m)[1].points[0].at, absl::FromUnixMillis(1700000000123));
  EXPECT_DOUBLE_EQ((*m)[1].points[0].value, 2500);
}

TEST(ParseQueryRangeResponseTest, RejectsWhatIsNotAMatrixAnswer) {
  struct Case {
    std::string name;  // why the body is bad
    std::string body;
    absl::StatusCode code;
    std::string mentions;
  };
  const std::vector<Case> cases = {
      {"not JSON", "<html>502 Bad Gateway</html>", absl::StatusCode::kInvalidArgument, "not JSON"},
      {"truncated JSON", R"({"status":"success","data":{)", absl::StatusCode::kInvalidArgument,
       "not JSON"},
      {"a JSON array, not an object", "[]", absl::StatusCode::kInvalidArgument, "object"},
      {"no status", R"({"data":{}})", absl::StatusCode::kInvalidArgument, "status"},
      {"Prometheus' own error: bad query",
       R"({"status":"error","errorType":"bad_data","error":"parse error at char 5"})",
       absl::StatusCode::kInvalidArgument, "parse error at char 5"},
      {"Prometheus' own error: overloaded",
       R"({"status":"error","errorType":"timeout","error":"query timed out"})",
       absl::StatusCode::kUnavailable, "query timed out"},
      {"an instant query's vector",
       R"({"status":"success","data":{"resultType":"vector","result":[]}})",
       absl::StatusCode::kInvalidArgument, "want \"matrix\""},
      {"values not an array",
       R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":3}]}})",
       absl::StatusCode::kInvalidArgument, "values"},
      {"a value that is a number, not a string",
       R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,2]]}]}})",
       absl::StatusCode::kInvalidArgument, "values[0]"},
      {"an unparsable value",
       R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}})",
       absl::StatusCode::kInvalidArgument, "bad value"},
      {"times out of order",
       R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[2,"1"],[1,"1"]]}]}})",
       absl::StatusCode::kInvalidArgument, "not after"},
      {"a label value that is not a string",
       R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":1},"values":[]}]}})",
       absl::StatusCode::kInvalidArgument, "metric.a"},
      {"a time beyond year 9999",
       R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1e300,"1"]]}]}})",
       absl::StatusCode::kInvalidArgument, "out-of-range time"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::Status s = ParseQueryRangeResponse(c.body).status();
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), c.mentions)) << s;
  }
}

TEST(ParseQueryResponseTest, ParsesEachResultType) {
  // A vector: one point per series, at the evaluation time.
  absl::StatusOr<PromQueryResult> v = ParseQueryResponse(R"({"status":"success","data":{
    "resultType":"vector","result":[{"metric":{"__name__":"up","pod":"a"},"value":[1700000000.5,"1"]},
                                    {"metric":{},"value":[1700000000.5,"-Inf"]}]}})");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->type, PromQueryResult::Type::kVector);
  ASSERT_EQ(v->series.size(), 2u);
  EXPECT_EQ(v->series[0].labels.at("pod"), "a");
  ASSERT_EQ(v->series[0].points.size(), 1u);
  EXPECT_EQ(v->series[0].points[0].at, absl::FromUnixMillis(1700000000500));
  EXPECT_EQ(v->series[0].points[0].value, 1);
  EXPECT_TRUE(std::isinf(v->series[1].points[0].value) && v->series[1].points[0].value < 0);
  // A matrix (a range-vector selector's raw samples), with their own timestamps.
  absl::StatusOr<PromQueryResult> m = ParseQueryResponse(R"({"status":"success","data":{
    "resultType":"matrix","result":[{"metric":{"le":"0.5"},"values":[[1.001,"3"],[2.002,"4"]]}]}})");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->type, PromQueryResult::Type::kMatrix);
  ASSERT_EQ(m->series[0].points.size(), 2u);
  EXPECT_EQ(m->series[0].points[1].at, absl::FromUnixMillis(2002));
  EXPECT_EQ(m->series[0].points[1].value, 4);
  // A scalar: one unlabelled series with one point.
  absl::StatusOr<PromQueryResult> s = ParseQueryResponse(
      R"({"status":"success","data":{"resultType":"scalar","result":[7,"2.5"]}})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->type, PromQueryResult::Type::kScalar);
  ASSERT_EQ(s->series.size(), 1u);
  EXPECT_TRUE(s->series[0].labels.empty());
  EXPECT_EQ(s->series[0].points[0].at, absl::FromUnixSeconds(7));
  EXPECT_EQ(s->series[0].points[0].value, 2.5);
}

TEST(ParseQueryResponseTest, RejectsBadAnswersSayingWhere) {
  struct Case {
    std::string name;  // why the body is bad
    std::string body;
    absl::StatusCode code;
    std::string mentions;
  };
  const std::vector<Case> cases = {
      {"HTML from a proxy: where JSON stops", "<html>502</html>",
       absl::StatusCode::kInvalidArgument, "not JSON at byte 1"},
      {"truncated after 26 bytes", R"({"status":"success","data")",
       absl::StatusCode::kInvalidArgument, "not JSON at byte 27"},
      {"Prometheus' own error: bad query",
       R"({"status":"error","errorType":"bad_data","error":"unexpected end of input"})",
       absl::StatusCode::kInvalidArgument, "unexpected end of input"},
      {"Prometheus' own error: execution",
       R"({"status":"error","errorType":"execution","error":"oom"})",
       absl::StatusCode::kUnavailable, "oom"},
      {"a string result, which nothing uses",
       R"({"status":"success","data":{"resultType":"string","result":[1,"x"]}})",
       absl::StatusCode::kInvalidArgument, "resultType is \"string\""},
      {"no result", R"({"status":"success","data":{"resultType":"vector"}})",
       absl::StatusCode::kInvalidArgument, "data.result"},
      {"a vector element without value",
       R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}})",
       absl::StatusCode::kInvalidArgument, "result[0].value is missing"},
      {"a vector value that is not a pair",
       R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}})",
       absl::StatusCode::kInvalidArgument, "result[0].value is not [time"},
      {"the third element's value is not a number",
       R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1"]},{"value":[1,"1"]},{"value":[1,"one"]}]}})",
       absl::StatusCode::kInvalidArgument, "result[2].value has a bad value \"one\""},
      {"matrix points out of order",
       R"({"status":"success","data":{"resultType":"matrix","result":[{"values":[[2,"1"],[2,"1"]]}]}})",
       absl::StatusCode::kInvalidArgument, "result[0].values[1] is not after"},
      {"a scalar that is not a pair",
       R"({"status":"success","data":{"resultType":"scalar","result":"7"}})",
       absl::StatusCode::kInvalidArgument, "data.result is not [time"},
      {"a label that is not a string",
       R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":7},"value":[1,"1"]}]}})",
       absl::StatusCode::kInvalidArgument, "result[0].metric.pod"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const absl::Status s = ParseQueryResponse(c.body).status();
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), c.mentions)) << s;
  }
}

TEST(PromTimestampTest, MillisecondPrecision) {
  EXPECT_EQ(PromTimestamp(absl::FromUnixMillis(1700000000123)), "1700000000.123");
  EXPECT_EQ(PromTimestamp(absl::FromUnixSeconds(5)), "5.000");
}

TEST(PrometheusClientTest, UnreachableServerIsUnavailableAndNamesTheUrl) {
  // Port 1 on loopback: nothing listens there, the connection is refused at once.
  PrometheusClient client("http://127.0.0.1:1", {absl::Seconds(5)});
  const absl::Status s = client
                             .QueryRange({"up", absl::FromUnixSeconds(0), absl::FromUnixSeconds(60),
                                          absl::Seconds(15)})
                             .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "http://127.0.0.1:1")) << s;
}

TEST(PrometheusClientTest, InstantQueryToAnUnreachableServerIsUnavailable) {
  PrometheusClient client("http://127.0.0.1:1", {absl::Seconds(5)});
  const absl::Status s = client.Query({"up", absl::FromUnixSeconds(60)}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "http://127.0.0.1:1")) << s;
}

TEST(PrometheusClientTest, MalformedUrlIsAnError) {
  PrometheusClient client("not a url", {absl::Seconds(5)});
  const absl::Status s = client
                             .QueryRange({"up", absl::FromUnixSeconds(0), absl::FromUnixSeconds(60),
                                          absl::Seconds(15)})
                             .status();
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "not a url")) << s;
}

}  // namespace
}  // namespace twinscale::metrics
