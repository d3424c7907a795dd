// report.html: every policy on the page, the reference lines' values, no external resources, the
// embedded JSON reads back with the numbers given, text that could end a <script> element or
// inject markup is escaped, and the writer's errors name the paths. (That the page renders in a
// browser is tests/integration/report_browser_test.sh's job.)
#include "controller/replay/report_html.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace twinscale::replay {
namespace {

constexpr char kFakeChartJs[] = "window.Chart = function () {}; /* fake Chart.js */";

ReplayResult Result(std::string policy, double gpu_hours, double attainment) {
  ReplayResult r;
  ReplaySummary& s = r.summary;
  s.policy = policy;
  s.family = PolicyFamily(policy);
  s.gpu_hours = gpu_hours;
  s.attainment = attainment;
  s.minute_share = attainment;
  s.requests = 1000;
  s.served = 1000;
  s.minutes_with_traffic = 2;
  s.minutes_meeting_slo = attainment >= 0.95 ? 2 : 1;
  // Three decisions 15 s apart: 2 -> 3 replicas at 30 s.
  for (int i = 1; i <= 3; ++i) {
    TimelineRow row;
    row.time = absl::Seconds(15 * i);
    row.interval = absl::Seconds(15);
    row.arrivals = 30;
    row.arrival_rps = 2;
    row.prompt_tokens_per_s = 1000;
    row.output_tokens_per_s = 200;
    row.desired = i < 2 ? 2 : 3;
    row.ready = 2;
    row.warming = i < 2 ? 0 : 1;
    row.waiting = 4 * i;
    row.kv_mean = 0.125 * i;
    if (i != 2) row.ttft_p90_ms = 100.04 * i;
    row.rejected = i == 3 ? 6 : 0;
    row.reason = i == 2 ? "ScaleUp: p90 above the SLO" : "";
    r.timeline.push_back(row);
  }
  return r;
}

struct Fixture {
  ReportHeader header;
  std::vector<ReplayResult> results;
  std::vector<ReplaySummary> summaries;
  OracleResult oracle;
};

Fixture Sample() {
  Fixture f;
  f.header.trace = "conv.csv x10";
  f.header.requests = 1000;
  f.header.span_seconds = 45;
  f.header.deployment = "llama-3.1-8b-h100-sxm-tp1";
  f.header.truth = "efficiency+routing";
  f.header.seed = 7;
  f.header.target.requests = 0.93;
  f.results = {Result("twinscale:llama", 6.958, 0.9689), Result("keda-queue-2", 6.944, 0.9353),
               Result("keda-queue-5", 33.592, 0.7951), Result("hpa-kv-0.7", 5.451, 0.6094),
               Result("static-8", 7.787, 0.98)};
  for (const ReplayResult& r : f.results) f.summaries.push_back(r.summary);
  f.oracle.gpu_hours = 5.3;
  f.oracle.max_replicas = 7;
  f.oracle.minutes = {{.replicas = 5}, {.replicas = 7}};
  return f;
}

std::string Page(const Fixture& f, const OracleResult* oracle) {
  return ReportHtml(f.header, f.summaries, oracle, f.results, kFakeChartJs);
}

// The text of the <script type="application/json" id="report-data"> element.
std::string DataText(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"report-data\">";
  const size_t begin = page.find(open);
  if (begin == std::string::npos) return "";
  const size_t start = begin + open.size();
  const size_t end = page.find("</script>", start);
  if (end == std::string::npos) return "";
  return page.substr(start, end - start);
}

size_t Count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

TEST(ReportHtmlTest, TheTwinsChartCaptionSplitsItsErrorByTheArrivals) {
  Fixture f = Sample();
  TwinError e;
  e.decisions = 30;
  e.attainment_bias_points = 1.08;
  e.attainment_mae_points = 2.2;
  e.rate_as_forecast = {14, 0.17, 1.27};
  e.rate_above_forecast = {8, 4.78, 5.03};
  e.rate_below_forecast = {8, -0.84, 1.14};
  f.summaries.front().twin_error = e;
  f.results.front().summary.twin_error = e;
  const std::string page = Page(f, &f.oracle);
  EXPECT_NE(page.find("<br>twinscale:llama: bias +1.1 points, MAE 2.2 over 30 decisions; where the "
                      "arrivals came as forecast, +0.2 and 1.3 over 14; above the forecast, +4.8 "
                      "and 5.0 over 8; below it, -0.8 and 1.1 over 8</p>"),
            std::string::npos);
  EXPECT_EQ(page.find("<br>keda-queue-2:"), std::string::npos);  // no twin, no line
}

TEST(ReportHtmlTest, PageNamesEveryPolicyInTheTableAndTheHeader) {
  const Fixture f = Sample();
  const std::string page = Page(f, &f.oracle);
  for (const ReplaySummary& s : f.summaries) {
    EXPECT_NE(page.find(absl::StrCat("</span>", s.policy, "</td>")), std::string::npos) << s.policy;
  }
  for (const char* want : {"<!DOCTYPE html>",
                           "conv.csv x10",
                           "1000 requests over 45 s",
                           "llama-3.1-8b-h100-sxm-tp1",
                           "TTFT p90 &le; 500 ms",
                           "efficiency+routing",
                           "<dd>7</dd>",
                           "6.958",
                           "96.89%",
                           "keda-queue</b>: none of 2 meets it",
                           "<b>5.300 GPU-h</b>, at most 7 replicas",
                           "<canvas id=\"chart-scatter\"",
                           "<canvas id=\"chart-replicas\"",
                           "<canvas id=\"chart-ttft\"",
                           "<canvas id=\"chart-kv\"",
                           "<canvas id=\"chart-queue\"",
                           "<canvas id=\"chart-rejected\"",
                           "<canvas id=\"chart-traffic\"",
                           "id=\"render-status\"",
                           kFakeChartJs}) {
    EXPECT_NE(page.find(want), std::string::npos) << want;
  }
  // The truth's perturbations: two on, three off.
  EXPECT_EQ(Count(page, "<span class=\"badge on\">on</span>"), 2u);
  EXPECT_EQ(Count(page, "<span class=\"badge off\">off</span>"), 3u);
  // Met / missed as the terminal table says (target 93% of requests and 95% of minutes).
  // keda-queue-2 has 93.53% of requests but 93.53% of minutes too: missed.
  EXPECT_EQ(Count(page, "<span class=\"badge met\">met</span>"), 2u);
  EXPECT_EQ(Count(page, "<span class=\"badge missed\">missed</span>"), 3u);
  // Not asked: neither the sentence nor the header's fact (the page's script names it, unused).
  EXPECT_EQ(page.find("Zero-lag oracle for the target"), std::string::npos);
  EXPECT_EQ(page.find("<dt>oracle for the target</dt>"), std::string::npos);
}

TEST(ReportHtmlTest, PageNamesTheShareOracleReachedOrNot) {
  Fixture f = Sample();
  f.oracle.for_share = ShareOracle{0.95, true, 0.9504, 6.1, 9, std::nullopt};
  std::string page = Page(f, &f.oracle);
  for (const char* want : {"95% of all requests within the SLO): <b>6.100 GPU-h</b>, at most 9",
                           "<dt>oracle for the target</dt>"}) {
    EXPECT_NE(page.find(want), std::string::npos) << want;
  }
  f.oracle.for_share->late = LateFollower{2, true, 1, 6.9, 0.955, 1.0};
  page = Page(f, &f.oracle);
  EXPECT_NE(page.find("The same fleet 2 minutes late (a perfect forecast, replicas Ready after the "
                      "warm-up) needs 1 replica more to meet the target: <b>6.900 GPU-h</b>"),
            std::string::npos);
  f.oracle.for_share->late = LateFollower{2, false, 8, 9.9, 0.93, 0.9};
  page = Page(f, &f.oracle);
  EXPECT_NE(page.find("misses the target even with 8 replicas more"), std::string::npos);
  f.oracle.for_share = ShareOracle{0.95, false, 0.6868, 0, 48, std::nullopt};
  page = Page(f, &f.oracle);
  EXPECT_NE(page.find("out of reach, 48 replicas every minute bring 68.68% of requests"),
            std::string::npos);
  EXPECT_EQ(page.find("<dt>oracle for the target</dt>"), std::string::npos);
}

TEST(ReportHtmlTest, EmbeddedJsonParsesBackWithTheNumbersTheChartsNeed) {
  const Fixture f = Sample();
  const nlohmann::json j = nlohmann::json::parse(DataText(Page(f, &f.oracle)));
  ASSERT_EQ(j["policies"].size(), 5u);
  for (size_t i = 0; i < f.summaries.size(); ++i) {
    EXPECT_EQ(j["policies"][i]["policy"], f.summaries[i].policy);
    EXPECT_EQ(j["timelines"][i]["policy"], f.summaries[i].policy);
  }
  EXPECT_EQ(j["policies"][0]["gpu_hours"], 6.958);
  // The attainment target line (percent) and the oracle's vertical line.
  EXPECT_EQ(j["config"]["target_percent"]["requests"], 93.0);
  EXPECT_EQ(j["config"]["target"]["requests"], 0.93);
  EXPECT_EQ(j["config"]["slo"]["ttft_ms"], 500.0);
  EXPECT_EQ(j["oracle"]["gpu_hours"], 5.3);
  EXPECT_EQ(j["oracle_minutes"], nlohmann::json::array({5, 7}));
  const nlohmann::json& t = j["timelines"][1];
  EXPECT_EQ(t["t"], nlohmann::json::array({15.0, 30.0, 45.0}));
  EXPECT_EQ(t["ready"], nlohmann::json::array({2, 2, 2}));
  EXPECT_EQ(t["warming"], nlohmann::json::array({0, 1, 1}));
  EXPECT_EQ(t["kv"], nlohmann::json::array({0.125, 0.25, 0.375}));
  // p90 rounded to 0.1 ms; none in the second interval.
  EXPECT_EQ(t["ttft_p90_ms"], nlohmann::json::parse("[100.0, null, 300.1]"));
  EXPECT_EQ(t["rejected_rps"], nlohmann::json::array({0.0, 0.0, 0.4}));  // 6 in 15 s
  ASSERT_EQ(t["events"].size(), 1u);
  EXPECT_EQ(t["events"][0]["t"], 30.0);
  EXPECT_EQ(t["events"][0]["from"], 2);
  EXPECT_EQ(t["events"][0]["to"], 3);
  EXPECT_EQ(t["events"][0]["reason"], "ScaleUp: p90 above the SLO");
  EXPECT_EQ(j["traffic"]["arrival_rps"], nlohmann::json::array({2.0, 2.0, 2.0}));
  EXPECT_EQ(j["traffic"]["prompt_tokens_per_s"], nlohmann::json::array({1000.0, 1000.0, 1000.0}));
}

TEST(ReportHtmlTest, WithoutAnOracleTheDataSaysSoAndThePageToo) {
  const Fixture f = Sample();
  const std::string page = Page(f, nullptr);
  const nlohmann::json j = nlohmann::json::parse(DataText(page));
  EXPECT_TRUE(j["oracle"].is_null());
  EXPECT_TRUE(j["oracle_minutes"].empty());
  EXPECT_NE(page.find("oracle was not computed"), std::string::npos);
}

TEST(ReportHtmlTest, NoExternalResources) {
  const Fixture f = Sample();
  const std::string page = Page(f, &f.oracle);
  const std::regex external(R"re((src|href)\s*=\s*["']?\s*(https?:)?//)re", std::regex::icase);
  EXPECT_FALSE(std::regex_search(page, external));
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
}

TEST(ReportHtmlTest, TextThatCouldEndTheScriptOrInjectMarkupIsEscaped) {
  Fixture f = Sample();
  const std::string evil = "</script><script>alert(1)</script><!-- & \"x\"";
  f.results[0].summary.policy = evil;
  f.results[0].timeline[1].reason = "</SCRIPT> <b>reason</b>";
  f.summaries[0].policy = evil;
  f.header.trace = "<img src=x onerror=alert(2)>";
  // A library that has "</script" in a string must not end its element either.
  const std::string chartjs = "var s = '</script>'; var c = '<!-- x';";
  const std::string page = ReportHtml(f.header, f.summaries, &f.oracle, f.results, chartjs);
  // Only the page's own three elements end: the data, Chart.js and the page's script.
  EXPECT_EQ(Count(page, "</script>"), 3u);
  EXPECT_EQ(page.find("</SCRIPT>"), std::string::npos);
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("<b>reason"), std::string::npos);
  EXPECT_NE(page.find("&lt;/script&gt;&lt;script&gt;alert(1)"), std::string::npos);
  EXPECT_NE(page.find("&lt;img src=x onerror=alert(2)&gt;"), std::string::npos);
  EXPECT_NE(page.find("var s = '<\\/script>'; var c = '<\\!-- x';"), std::string::npos);
  // The data still reads back exactly.
  const nlohmann::json j = nlohmann::json::parse(DataText(page));
  EXPECT_EQ(j["policies"][0]["policy"], evil);
  EXPECT_EQ(j["timelines"][0]["policy"], evil);
  EXPECT_EQ(j["timelines"][0]["events"][0]["reason"], "</SCRIPT> <b>reason</b>");
  EXPECT_EQ(j["config"]["trace"], "<img src=x onerror=alert(2)>");
}

TEST(ReportHtmlTest, SameInputsGiveTheSameBytes) {
  const Fixture f = Sample();
  EXPECT_EQ(Page(f, &f.oracle), Page(f, &f.oracle));
}

TEST(ReportHtmlTest, MissingChartJsIsNotFoundNamingThePathAndNothingIsWritten) {
  const Fixture f = Sample();
  const std::string dir = ::testing::TempDir() + "/report_html_missing";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir + "/report.html");
  const std::string missing = dir + "/no-such-chart.min.js";
  const absl::Status s = WriteReportHtml(dir, f.header, f.summaries, &f.oracle, f.results, missing);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find(missing), std::string::npos) << s;
  EXPECT_NE(s.message().find("libjs-chart.js"), std::string::npos) << s;
  EXPECT_NE(s.message().find("--chartjs"), std::string::npos) << s;
  EXPECT_FALSE(std::filesystem::exists(dir + "/report.html"));
}

TEST(ReportHtmlTest, WritesThePageWithTheGivenChartJsInlined) {
  const Fixture f = Sample();
  const std::string dir = ::testing::TempDir() + "/report_html_write";
  std::filesystem::create_directories(dir);
  const std::string chartjs_path = dir + "/chart.js";
  { std::ofstream(chartjs_path) << kFakeChartJs; }
  ASSERT_TRUE(WriteReportHtml(dir, f.header, f.summaries, &f.oracle, f.results, chartjs_path).ok());
  std::ifstream in(dir + "/report.html");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), Page(f, &f.oracle));
  // A directory that does not exist: the error names the page's path.
  const absl::Status s =
      WriteReportHtml(dir + "/nope", f.header, f.summaries, &f.oracle, f.results, chartjs_path);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(s.message().find(dir + "/nope/report.html"), std::string::npos) << s;
}

}  // namespace
}  // namespace twinscale::replay
