// plan's report.html: the header, the recommendation and every cell's numbers as a plan of two
// profiles and three scenarios gives them (worked by hand below), the embedded document reads back
// as given, a canvas per chart the page's check counts, text that could end a <script> element or
// inject markup escaped, the same bytes for the same input, and the writer's errors naming the
// paths. (That the page renders in a browser is tests/integration/plan_browser_test.sh's job.)
#include "controller/plan/plan_report_html.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace twinscale::plan {
namespace {

using nlohmann::ordered_json;

constexpr char kFakeChartJs[] = "window.Chart = function () {}; /* fake Chart.js */";

struct Res {
  const char* name;
  const char* unit;
  double demand, capacity, headroom;
  const char* risk;
};

ordered_json Headroom(int planned, const char* binding, const std::vector<Res>& rows) {
  ordered_json resources = ordered_json::array();
  for (const Res& r : rows) {
    resources.push_back({{"resource", r.name},
                         {"unit", r.unit},
                         {"demand_p95", r.demand},
                         {"capacity", r.capacity},
                         {"headroom", r.headroom},
                         {"risk", r.risk}});
  }
  return {{"planned_replicas", planned}, {"binding", binding}, {"resources", resources}};
}

// Every resource okay but `binding`'s, which has `headroom` and `risk`.
ordered_json HeadroomWith(int planned, const char* binding, double headroom, const char* risk) {
  std::vector<Res> rows = {{"requests", "req/s", 41.2, 80.1, 0.486, "okay"},
                           {"prefill", "prompt tokens/s", 30000, 60000, 0.5, "okay"},
                           {"decode", "output tokens/s", 9000, 20000, 0.55, "okay"},
                           {"kv-memory", "KV tokens", 300000, 1.2e6, 0.75, "okay"},
                           {"queue", "requests", 20, 200, 0.9, "okay"}};
  for (Res& r : rows) {
    if (std::string(r.name) == binding) {
      r.headroom = headroom;
      r.risk = risk;
    }
  }
  return Headroom(planned, binding, rows);
}

struct CellIn {
  std::string scenario, profile;
  bool found;
  int replicas, fewest;
  std::vector<int> per_seed;
  double cost_1k;
  int warm;
  ordered_json headroom;
  std::string improves, worsens;
};

ordered_json CellJson(const CellIn& c) {
  return {{"scenario", c.scenario},
          {"profile", c.profile},
          {"found", c.found},
          {"replicas", c.replicas},
          {"replicas_fewest", c.fewest},
          {"replicas_per_seed", c.per_seed},
          {"attainment", {{"mean", 0.93}, {"min", 0.91}, {"max", 0.95}}},
          {"goodput_rps", 30.6},
          {"goodput_per_gpu_rps", 5.1},
          {"cost_per_hour", 15},
          {"cost_per_1k_successful", c.cost_1k},
          {"cost_per_million_output_tokens", 0.59},
          {"per_replica_rps", 6.9},
          {"warm_reserve", c.warm},
          {"headroom", c.headroom},
          {"improves", c.improves},
          {"worsens", c.worsens}};
}

ordered_json Scenario(const std::string& name, const std::string& changes, double mean_rps) {
  return {{"name", name},        {"changes", changes},           {"requests", 19800},
          {"span_s", 600},       {"mean_rps", mean_rps},         {"p95_rps", 41.2},
          {"prompt_mean", 1100}, {"prompt_computed_mean", 1100}, {"output_mean", 230}};
}

// Two profiles, h100 (recommended) and h200; three scenarios: the baseline, launch-traffic, and
// longer-prompts, where no h100 fleet within maxReplicas (128) meets the SLO.
ordered_json SamplePlan(const std::string& third = "longer-prompts") {
  ordered_json plan;
  plan["review"] = "deploy/samples/plan/capacity-review.yaml";
  plan["baseline"] = "trace conv.csv x6, first 10m";
  plan["slo"] = {{"ttft_ms", 500},
                 {"percentile", 90},
                 {"per_prompt_token_ms", 0},
                 {"itl_ms", 0},
                 {"itl_percentile", 90}};
  plan["seeds"] = {1, 2, 3};
  plan["max_replicas"] = 128;
  plan["profiles"] = ordered_json::array();
  for (const auto& [name, price] : {std::pair{"h100", 2.5}, std::pair{"h200", 3.5}}) {
    plan["profiles"].push_back({{"name", name},
                                {"deployment", std::string("llama-3.1-8b-") + name},
                                {"model", "llama-3.1-8b"},
                                {"gpu", name},
                                {"tensor_parallel", 1},
                                {"gpu_hour_price", price},
                                {"ready_after_s", 45}});
  }
  plan["scenarios"] = {Scenario("baseline", "none", 33), Scenario("launch-traffic", "rate x2", 66),
                       Scenario(third, "prompts x2", 33)};
  const std::vector<CellIn> cells = {
      {"baseline",
       "h100",
       true,
       6,
       5,
       {6, 5, 6},
       0.136,
       1,
       HeadroomWith(6, "prefill", 0.1346, "tight"),
       "",
       ""},
      {"baseline",
       "h200",
       true,
       5,
       5,
       {5, 5, 5},
       0.152,
       1,
       HeadroomWith(5, "decode", 0.31, "okay"),
       "",
       ""},
      {"launch-traffic",
       "h100",
       true,
       12,
       11,
       {12, 11, 12},
       0.137,
       2,
       HeadroomWith(6, "prefill", -0.25, "shortfall"),
       "",
       "replicas 6 -> 12 (+100%)"},
      {"launch-traffic",
       "h200",
       true,
       10,
       10,
       {10, 10, 10},
       0.153,
       2,
       HeadroomWith(5, "decode", -0.1, "shortfall"),
       "",
       "replicas 5 -> 10 (+100%)"},
      {third,
       "h100",
       false,
       128,
       128,
       {128, 128, 128},
       1.9,
       0,
       HeadroomWith(6, "kv-memory", 0.05, "memory risk"),
       "",
       "no fleet within maxReplicas"},
      {third,
       "h200",
       true,
       40,
       38,
       {40, 38, 39},
       0.51,
       3,
       HeadroomWith(5, "prefill", -2.5, "shortfall"),
       "cost per hour & <nothing>",
       "prefill"},
  };
  plan["cells"] = ordered_json::array();
  for (const CellIn& c : cells) plan["cells"].push_back(CellJson(c));
  plan["recommended_profile"] = "h100";
  return plan;
}

// The text of the #report-data element (the data has no '<', so it ends at the next "</script>").
std::string DataText(const std::string& page) {
  constexpr std::string_view kOpen = "<script type=\"application/json\" id=\"report-data\">";
  const size_t at = page.find(kOpen);
  if (at == std::string::npos) return "";
  const size_t from = at + kOpen.size();
  return page.substr(from, page.find("</script>", from) - from);
}

// Occurrences of `needle` in `s`, not overlapping.
size_t Count(std::string_view s, std::string_view needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string_view::npos; at = s.find(needle, at)) {
    ++n;
    at += needle.size();
  }
  return n;
}

bool Has(const std::string& page, const std::string& want) {
  return page.find(want) != std::string::npos;
}

TEST(PlanReportHtmlTest, HeaderNamesTheReviewBaselineSloAndSeeds) {
  const std::string page = PlanReportHtml(SamplePlan(), kFakeChartJs);
  for (const char* want :
       {"<!DOCTYPE html>",
        "<title>twinscale plan: deploy/samples/plan/capacity-review.yaml</title>",
        "<h1>Capacity review: deploy/samples/plan/capacity-review.yaml</h1>",
        "trace conv.csv x6, first 10m", "<dt>SLO</dt><dd>TTFT p90 &le; 500 ms</dd>",
        "<dt>seeds</dt><dd>1, 2, 3</dd>", "<dt>maxReplicas</dt><dd>128</dd>",
        "id=\"render-status\" data-ok=\"false\"", kFakeChartJs}) {
    EXPECT_TRUE(Has(page, want)) << want;
  }
  // No wall time in the document: no fact for it.
  EXPECT_FALSE(Has(page, "<dt>run</dt>"));
}

TEST(PlanReportHtmlTest, SloWithEveryTermAndWallTime) {
  ordered_json plan = SamplePlan();
  plan["slo"]["per_prompt_token_ms"] = 0.25;
  plan["slo"]["itl_ms"] = 40;
  plan["slo"]["itl_percentile"] = 95;
  plan["wall_seconds"] = 12.34;
  const std::string page = PlanReportHtml(plan, kFakeChartJs);
  EXPECT_TRUE(Has(page, "TTFT p90 &le; 500 ms + 0.25 ms per prompt token, ITL p95 &le; 40 ms"));
  EXPECT_TRUE(Has(page, "<dt>run</dt><dd>12.3 s</dd>"));
}

TEST(PlanReportHtmlTest, RecommendationGivesTheBaselineReplicasAndCost) {
  const std::string page = PlanReportHtml(SamplePlan(), kFakeChartJs);
  EXPECT_TRUE(Has(page,
                  "<p class=\"recommend\">Recommended: <b>h100</b>: <b>6 replicas</b> at the "
                  "baseline (and 1 warm in reserve), <b>0.136</b> per 1,000 successful "
                  "requests.</p>"));
}

TEST(PlanReportHtmlTest, RecommendationWhenTheBaselineHasNoFleet) {
  ordered_json plan = SamplePlan();
  plan["cells"][0]["found"] = false;
  std::string page = PlanReportHtml(plan, kFakeChartJs);
  EXPECT_TRUE(Has(page,
                  "Recommended: <b>h100</b>: at the baseline no fleet within maxReplicas (128) "
                  "meets the SLO."));
  plan["recommended_profile"] = "a100";
  page = PlanReportHtml(plan, kFakeChartJs);
  EXPECT_TRUE(Has(page, "Recommended: <b>a100</b>, with no cell at the baseline."));
}

TEST(PlanReportHtmlTest, TablesHoldEveryCellsNumbers) {
  const std::string page = PlanReportHtml(SamplePlan(), kFakeChartJs);
  // A table per scenario.
  for (const char* name : {"baseline", "launch-traffic", "longer-prompts"}) {
    EXPECT_EQ(Count(page, absl::StrCat("<h3>", name, "</h3>")), 2u) << name;  // cells, changes
  }
  EXPECT_EQ(Count(page, "<th>per 1k successful</th>"), 3u);
  // Baseline on h100: 6 replicas, the seeds from 5 to 6, then the cell's other numbers in order.
  EXPECT_TRUE(Has(page,
                  "h100</td><td>6 <span class=\"spread\">(5&ndash;6)</span></td><td>6, 5, 6</td>"
                  "<td>93.00%</td><td>91.00%&ndash;95.00%</td><td>30.6</td><td>5.1</td><td>15</td>"
                  "<td>0.136</td><td>0.59</td><td>6.9</td><td>1</td><td>prefill</td></tr>"));
  // Seeds that agree: no spread.
  EXPECT_TRUE(Has(page, "h200</td><td>5</td><td>5, 5, 5</td>"));
  // No h100 fleet for longer prompts: no replica count, the words instead.
  EXPECT_TRUE(Has(page, "h100</td><td>none within maxReplicas (128)</td><td>128, 128, 128</td>"));
  EXPECT_FALSE(Has(page, "<td>128 <span"));
  // Each row's swatch carries its profile's index for the script's colours.
  EXPECT_EQ(Count(page, "data-profile=\"0\""), 3u);
  EXPECT_EQ(Count(page, "data-profile=\"1\""), 3u);
}

TEST(PlanReportHtmlTest, HeadroomOfTheRecommendedProfilePerScenario) {
  const std::string page = PlanReportHtml(SamplePlan(), kFakeChartJs);
  // The threshold the page marks, from resource_headroom.h (20%).
  EXPECT_TRUE(Has(page, "<section id=\"headroom\" data-tight-below=\"20\">"));
  EXPECT_TRUE(Has(page, "<h2>Headroom per resource: h100</h2>"));
  EXPECT_TRUE(Has(page,
                  "<figcaption>baseline</figcaption><p class=\"caption\">at 6 replicas; "
                  "binding: prefill</p>"));
  EXPECT_TRUE(Has(page, "binding: kv-memory</p>"));
  // Baseline, requests: 41.2 of 80.1 req/s, headroom 0.486 = 48.6%.
  EXPECT_TRUE(Has(page,
                  "<tr><td class=\"name\">requests</td><td>41.2</td><td>80.1</td>"
                  "<td>req/s</td><td>48.6%</td><td><span class=\"badge okay\">okay</span>"));
  // The binding resource marked, its risk in its colour: 13.46% is tight, -25% a shortfall.
  EXPECT_TRUE(Has(page,
                  "prefill <span class=\"binding\">binding</span></td><td>30000</td>"
                  "<td>60000</td><td>prompt tokens/s</td><td>13.5%</td><td><span "
                  "class=\"badge tight\">tight</span>"));
  // Large numbers whole: 300000 of 1.2e6 KV tokens, 75% headroom.
  EXPECT_TRUE(Has(page,
                  "<tr><td class=\"name\">kv-memory</td><td>300000</td><td>1200000</td>"
                  "<td>KV tokens</td><td>75.0%</td>"));
  EXPECT_TRUE(Has(page, "<td>-25.0%</td><td><span class=\"badge shortfall\">shortfall</span>"));
  EXPECT_TRUE(Has(page, "<td>5.0%</td><td><span class=\"badge memory-risk\">memory risk</span>"));
  // h200's headroom is there too, folded: one per scenario.
  EXPECT_EQ(Count(page, "<details><summary>headroom on h200 at 5 replicas</summary>"), 3u);
  EXPECT_EQ(Count(page, "<details><summary>headroom on h100"), 0u);
  // Six tables of five resources: one binding mark each.
  EXPECT_EQ(Count(page, "<span class=\"binding\">binding</span>"), 6u);
}

TEST(PlanReportHtmlTest, ImprovesAndWorsensPerScenario) {
  const std::string page = PlanReportHtml(SamplePlan(), kFakeChartJs);
  EXPECT_TRUE(Has(page,
                  "<li><b>h100</b><br><span class=\"worse\">worsens</span> replicas 6 -&gt; "
                  "12 (+100%)</li>"));
  EXPECT_TRUE(Has(page,
                  "<li><b>h200</b><br><span class=\"better\">improves</span> cost per hour "
                  "&amp; &lt;nothing&gt;<br><span class=\"worse\">worsens</span> "
                  "prefill</li>"));
  // The baseline changes nothing against itself.
  EXPECT_EQ(Count(page, "No change against the baseline."), 1u);
}

TEST(PlanReportHtmlTest, EmbeddedDocumentReadsBackAsGiven) {
  const ordered_json plan = SamplePlan();
  const std::string page = PlanReportHtml(plan, kFakeChartJs);
  EXPECT_EQ(ordered_json::parse(DataText(page)), plan);
}

TEST(PlanReportHtmlTest, ACanvasPerChartTheCheckCounts) {
  // The script draws two charts and one per scenario; the render check counts the charts drawn,
  // and every canvas must be one of them.
  for (size_t scenarios : {3u, 1u, 0u}) {
    SCOPED_TRACE(scenarios);
    ordered_json plan = SamplePlan();
    plan["scenarios"].erase(plan["scenarios"].begin() + scenarios, plan["scenarios"].end());
    const std::string page = PlanReportHtml(plan, kFakeChartJs);
    EXPECT_EQ(Count(page, "<canvas "), 2 + scenarios);
    EXPECT_TRUE(Has(page, "<canvas id=\"chart-replicas\""));
    EXPECT_TRUE(Has(page, "<canvas id=\"chart-cost\""));
    for (size_t k = 0; k < scenarios; ++k) {
      EXPECT_TRUE(Has(page, absl::StrCat("<canvas id=\"chart-headroom-", k, "\""))) << k;
    }
    EXPECT_FALSE(Has(page, absl::StrCat("chart-headroom-", scenarios, "\"")));
  }
  // The script pushes each chart it draws and reports their number.
  const std::string page = PlanReportHtml(SamplePlan(), kFakeChartJs);
  EXPECT_EQ(Count(page, "charts.push(new Chart(document.getElementById('chart-"), 3u);
  EXPECT_TRUE(Has(page, "'rendered ' + charts.length + ' charts'"));
}

TEST(PlanReportHtmlTest, HostileNamesCannotEndTheScriptOrInjectMarkup) {
  const std::string evil = "</script><b>x</b>";
  ordered_json plan = SamplePlan(evil);
  plan["review"] = "<img src=x onerror=alert(1)>";
  plan["profiles"][1]["name"] = "</SCRIPT><!--";
  for (ordered_json& c : plan["cells"]) {
    if (c["profile"] == "h200") c["profile"] = "</SCRIPT><!--";
  }
  const std::string chartjs = "var s = '</script>'; var c = '<!-- x';";
  const std::string page = PlanReportHtml(plan, chartjs);
  // Only the page's own three elements end: the data, Chart.js and the page's script.
  EXPECT_EQ(Count(page, "</script>"), 3u);
  EXPECT_FALSE(Has(page, "</SCRIPT>"));
  EXPECT_FALSE(Has(page, "<!--"));
  EXPECT_FALSE(Has(page, "<b>x</b>"));
  EXPECT_FALSE(Has(page, "<img"));
  // The names are on the page as text, in headings and table rows.
  EXPECT_EQ(Count(page, "<h3>&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;</h3>"), 2u);
  EXPECT_TRUE(Has(page, "<figcaption>&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;</figcaption>"));
  EXPECT_TRUE(
      Has(page, "aria-label=\"headroom per resource, &lt;/script&gt;&lt;b&gt;x&lt;/b&gt;\""));
  EXPECT_TRUE(Has(page, "<h1>Capacity review: &lt;img src=x onerror=alert(1)&gt;</h1>"));
  EXPECT_TRUE(Has(page, "</span>&lt;/SCRIPT&gt;&lt;!--</td>"));
  EXPECT_TRUE(Has(page, "var s = '<\\/script>'; var c = '<\\!-- x';"));
  // And in the data, with every '<' as \u003c, reading back exactly.
  EXPECT_TRUE(Has(DataText(page), "\\u003c/script>\\u003cb>x\\u003c/b>"));
  EXPECT_EQ(ordered_json::parse(DataText(page)), plan);
}

TEST(PlanReportHtmlTest, NoExternalResources) {
  const std::string page = PlanReportHtml(SamplePlan(), kFakeChartJs);
  const std::regex external(R"re((src|href)\s*=\s*["']?\s*(https?:)?//)re", std::regex::icase);
  EXPECT_FALSE(std::regex_search(page, external));
  EXPECT_FALSE(Has(page, "http://"));
  EXPECT_FALSE(Has(page, "https://"));
  EXPECT_FALSE(Has(page, "<link"));
  EXPECT_FALSE(Has(page, "<script src"));
}

TEST(PlanReportHtmlTest, SameInputGivesTheSameBytes) {
  const std::string page = PlanReportHtml(SamplePlan(), kFakeChartJs);
  EXPECT_EQ(page, PlanReportHtml(SamplePlan(), kFakeChartJs));
  // And a different input different ones (the comparison can fail).
  ordered_json plan = SamplePlan();
  plan["cells"][0]["replicas"] = 7;
  EXPECT_NE(page, PlanReportHtml(plan, kFakeChartJs));
}

TEST(PlanReportHtmlTest, WithoutChartJsThePageReportsItMissing) {
  const std::string page = PlanReportHtml(SamplePlan(), "");
  // Nothing is inlined, so `Chart` is undefined and the page's check says so in #render-status.
  EXPECT_TRUE(Has(page, "<script>\n\n</script>"));
  EXPECT_FALSE(Has(page, kFakeChartJs));
  EXPECT_TRUE(Has(page,
                  "if (typeof Chart === 'undefined') throw new Error('Chart.js is missing "
                  "from the page');"));
  EXPECT_TRUE(Has(page, "<span id=\"render-status\" data-ok=\"false\">not run</span>"));
}

TEST(PlanReportHtmlTest, DocumentsMissingFieldsStillGiveAPage) {
  for (const ordered_json& plan : {ordered_json(), ordered_json::array(), ordered_json::object(),
                                   ordered_json{{"scenarios", 3}, {"cells", "x"}}}) {
    SCOPED_TRACE(plan.dump());
    const std::string page = PlanReportHtml(plan, kFakeChartJs);
    EXPECT_TRUE(Has(page, "</html>\n"));
    EXPECT_EQ(Count(page, "<canvas "), 2u);
    EXPECT_TRUE(Has(page, "Recommended: <b></b>, with no cell at the baseline."));
  }
}

TEST(PlanReportHtmlTest, WritesThePageWithTheGivenChartJsInlined) {
  const std::string dir = ::testing::TempDir() + "/plan_report_html_write";
  std::filesystem::create_directories(dir);
  const std::string chartjs_path = dir + "/chart.js";
  { std::ofstream(chartjs_path) << kFakeChartJs; }
  const ordered_json plan = SamplePlan();
  ASSERT_TRUE(WritePlanReportHtml(dir, plan, chartjs_path).ok());
  std::ifstream in(dir + "/report.html");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), PlanReportHtml(plan, kFakeChartJs));
  // A directory that does not exist: the error names the page's path.
  const absl::Status s = WritePlanReportHtml(dir + "/nope", plan, chartjs_path);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_TRUE(Has(std::string(s.message()), dir + "/nope/report.html")) << s;
}

TEST(PlanReportHtmlTest, MissingChartJsIsNotFoundNamingThePathAndNothingIsWritten) {
  const std::string dir = ::testing::TempDir() + "/plan_report_html_missing";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir + "/report.html");
  const std::string missing = dir + "/no-such-chart.min.js";
  const absl::Status s = WritePlanReportHtml(dir, SamplePlan(), missing);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_TRUE(Has(std::string(s.message()), missing)) << s;
  EXPECT_TRUE(Has(std::string(s.message()), "libjs-chart.js")) << s;
  EXPECT_FALSE(std::filesystem::exists(dir + "/report.html"));
}

}  // namespace
}  // namespace twinscale::plan
