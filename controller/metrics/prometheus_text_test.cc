// Tests of the Prometheus text-format parser: grammar tables (good inputs with the exact families
// they must produce; bad inputs with why they are bad and the line the error must name), escapes,
// special values, timestamps, family grouping, and the real vLLM text in
// tests/data/fixtures/vllm_metrics_excerpts.txt (tests run from the repo root).
#include "controller/metrics/prometheus_text.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/vllm_fixture.h"

namespace twinscale::metrics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Labels = std::vector<std::pair<std::string, std::string>>;

struct WantSample {
  std::string name;
  Labels labels;
  double value;
  std::optional<int64_t> timestamp_ms = std::nullopt;
};

struct WantFamily {
  std::string name;
  MetricType type;
  std::string help;
  std::vector<WantSample> samples;
};

void ExpectSameValue(double got, double want) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << got;
  } else {
    EXPECT_EQ(got, want);  // exact: every expected value below is exactly representable or parsed
  }
}

void ExpectExposition(const Exposition& got, const std::vector<WantFamily>& want) {
  ASSERT_EQ(got.families.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const MetricFamily& f = got.families[i];
    SCOPED_TRACE(absl::StrCat("family ", i, " ", want[i].name));
    EXPECT_EQ(f.name, want[i].name);
    EXPECT_EQ(f.type, want[i].type);
    EXPECT_EQ(f.help, want[i].help);
    ASSERT_EQ(f.samples.size(), want[i].samples.size());
    for (size_t j = 0; j < f.samples.size(); ++j) {
      SCOPED_TRACE(absl::StrCat("sample ", j));
      EXPECT_EQ(f.samples[j].name, want[i].samples[j].name);
      EXPECT_EQ(f.samples[j].labels, want[i].samples[j].labels);
      ExpectSameValue(f.samples[j].value, want[i].samples[j].value);
      EXPECT_EQ(f.samples[j].timestamp_ms, want[i].samples[j].timestamp_ms);
    }
  }
}

struct GoodCase {
  std::string name;
  std::string text;
  std::vector<WantFamily> want;
};

class GoodInputTest : public testing::TestWithParam<GoodCase> {};

TEST_P(GoodInputTest, ParsesToTheExpectedFamilies) {
  const GoodCase& c = GetParam();
  absl::StatusOr<Exposition> got = ParsePrometheusText(c.text);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectExposition(*got, c.want);
}

constexpr auto kU = MetricType::kUntyped;
constexpr auto kC = MetricType::kCounter;
constexpr auto kG = MetricType::kGauge;
constexpr auto kH = MetricType::kHistogram;
constexpr auto kS = MetricType::kSummary;

INSTANTIATE_TEST_SUITE_P(
    Grammar, GoodInputTest,
    testing::ValuesIn(std::vector<GoodCase>{
        {"empty input has no families", "", {}},
        {"only comments and blank lines",
         "# just a comment\n\n   \n#\n# == annotation\n# ----\n",
         {}},
        {"gauge with help and type",
         "# HELP up Whether the target is up.\n# TYPE up gauge\nup 1\n",
         {{"up", kG, "Whether the target is up.", {{"up", {}, 1}}}}},
        {"TYPE before HELP is the same family",
         "# TYPE up gauge\n# HELP up Up.\nup 0\n",
         {{"up", kG, "Up.", {{"up", {}, 0}}}}},
        {"metric names with colons and label order kept as written",
         "vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 8.0\n",
         {{"vllm:num_requests_running",
           kU,
           "",
           {{"vllm:num_requests_running", {{"model_name", "m"}, {"engine", "0"}}, 8}}}}},
        {"label value escapes: backslash, quote, newline",
         R"(x{a="back\\slash",b="say \"hi\"",c="two\nlines"} 1)",
         {{"x",
           kU,
           "",
           {{"x", {{"a", "back\\slash"}, {"b", "say \"hi\""}, {"c", "two\nlines"}}, 1}}}}},
        {"label values may hold braces, commas, equals, hashes and UTF-8",
         "x{a=\"}{,=# \xC3\xA9\"} 1\n",
         {{"x", kU, "", {{"x", {{"a", "}{,=# \xC3\xA9"}}, 1}}}}},
        {"empty label set and empty label value",
         "x{} 1\ny{a=\"\"} 2\n",
         {{"x", kU, "", {{"x", {}, 1}}}, {"y", kU, "", {{"y", {{"a", ""}}, 2}}}}},
        {"trailing comma in a label set",
         "x{a=\"1\",} 1\n",
         {{"x", kU, "", {{"x", {{"a", "1"}}, 1}}}}},
        {"blanks around label tokens and before the brace",
         "x { a = \"1\" ,\tb=\"2\" } 3\n",
         {{"x", kU, "", {{"x", {{"a", "1"}, {"b", "2"}}, 3}}}}},
        {"special values NaN, +Inf, -Inf in any case",
         "a NaN\nb +Inf\nc -Inf\nd inf\ne nan\nf -infinity\n",
         {{"a", kU, "", {{"a", {}, kNaN}}},
          {"b", kU, "", {{"b", {}, kInf}}},
          {"c", kU, "", {{"c", {}, -kInf}}},
          {"d", kU, "", {{"d", {}, kInf}}},
          {"e", kU, "", {{"e", {}, kNaN}}},
          {"f", kU, "", {{"f", {}, -kInf}}}}},
        {"decimal number forms",
         "a 1\nb -0.5\nc .5\nd 1.\ne 1E-3\nf +3\ng 1.7537953269352946e+09\nh 6.3046928e+08\n"
         "i 1.2345e+015\n",
         {{"a", kU, "", {{"a", {}, 1}}},
          {"b", kU, "", {{"b", {}, -0.5}}},
          {"c", kU, "", {{"c", {}, 0.5}}},
          {"d", kU, "", {{"d", {}, 1}}},
          {"e", kU, "", {{"e", {}, 0.001}}},
          {"f", kU, "", {{"f", {}, 3}}},
          {"g", kU, "", {{"g", {}, 1753795326.9352946}}},
          {"h", kU, "", {{"h", {}, 630469280}}},
          {"i", kU, "", {{"i", {}, 1.2345e15}}}}},
        {"timestamps, positive and negative",
         "a 1 1700000000000\nb{x=\"y\"} 2 -5\nc 3 +7\n",
         {{"a", kU, "", {{"a", {}, 1, 1700000000000}}},
          {"b", kU, "", {{"b", {{"x", "y"}}, 2, -5}}},
          {"c", kU, "", {{"c", {}, 3, 7}}}}},
        {"tabs, leading and trailing whitespace",
         "  \t# TYPE a gauge\t \n\ta\t4  \t\n  b{c=\"d\"}   5   6  \n",
         {{"a", kG, "", {{"a", {}, 4}}}, {"b", kU, "", {{"b", {{"c", "d"}}, 5, 6}}}}},
        {"CRLF line ends and no final newline",
         "# HELP a A.\r\n# TYPE a counter\r\na 1\r\n\r\nb 2",
         {{"a", kC, "A.", {{"a", {}, 1}}}, {"b", kU, "", {{"b", {}, 2}}}}},
        {"HELP escapes and empty HELP",
         "# HELP a one\\\\two\\nthree\n# HELP b\nb 1\n",
         {{"a", kU, "one\\two\nthree", {}}, {"b", kU, "", {{"b", {}, 1}}}}},
        {"a value right after the closing brace",
         "x{a=\"1\"}7\n",
         {{"x", kU, "", {{"x", {{"a", "1"}}, 7}}}}},
        {"histogram groups _bucket, _count, _sum and _created",
         "# HELP h H.\n# TYPE h histogram\n"
         "h_bucket{le=\"0.5\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 2\nh_sum 1.25\nh_created 1e9\n",
         {{"h",
           kH,
           "H.",
           {{"h_bucket", {{"le", "0.5"}}, 1},
            {"h_bucket", {{"le", "+Inf"}}, 2},
            {"h_count", {}, 2},
            {"h_sum", {}, 1.25},
            {"h_created", {}, 1e9}}}}},
        {"counter declared without suffix groups _total and _created",
         "# TYPE c counter\nc_total 3\nc_created 1e9\n",
         {{"c", kC, "", {{"c_total", {}, 3}, {"c_created", {}, 1e9}}}}},
        {"prometheus_client layout: counter family c_total and a separate c_created gauge",
         "# HELP c_total C.\n# TYPE c_total counter\nc_total 3\n"
         "# HELP c_created C.\n# TYPE c_created gauge\nc_created 1e9\n",
         {{"c_total", kC, "C.", {{"c_total", {}, 3}}},
          {"c_created", kG, "C.", {{"c_created", {}, 1e9}}}}},
        {"summary groups quantiles, _sum and _count",
         "# TYPE s summary\ns{quantile=\"0.5\"} 0.1\ns_sum 3\ns_count 9\n",
         {{"s",
           kS,
           "",
           {{"s", {{"quantile", "0.5"}}, 0.1}, {"s_sum", {}, 3}, {"s_count", {}, 9}}}}},
        {"a sample not covered by the last TYPE is its own untyped family",
         "# TYPE g gauge\ng 1\ng_total 2\nother 3\nother 4\n",
         {{"g", kG, "", {{"g", {}, 1}}},
          {"g_total", kU, "", {{"g_total", {}, 2}}},
          {"other", kU, "", {{"other", {}, 3}, {"other", {}, 4}}}}},
        {"undeclared bucket samples form one untyped family",
         "x_bucket{le=\"1.0\"} 1\nx_bucket{le=\"+Inf\"} 1\n",
         {{"x_bucket",
           kU,
           "",
           {{"x_bucket", {{"le", "1.0"}}, 1}, {"x_bucket", {{"le", "+Inf"}}, 1}}}}},
        {"samples of a family that reappear later join it",
         "# TYPE h histogram\nh_count 1\n# TYPE g gauge\ng 2\nh_sum 3\ng 4\n",
         {{"h", kH, "", {{"h_count", {}, 1}, {"h_sum", {}, 3}}},
          {"g", kG, "", {{"g", {}, 2}, {"g", {}, 4}}}}},
        {"a declared family without samples is kept",
         "# HELP lonely L.\n# TYPE lonely gauge\n",
         {{"lonely", kG, "L.", {}}}},
        {"HELP after the family's samples is allowed",
         "x 1\n# HELP x X.\n",
         {{"x", kU, "X.", {{"x", {}, 1}}}}},
        {"magnitudes below the smallest subnormal read as zero, as in Go",
         "a 1e-400\nb -1e-400\nc 4.9e-324\nd 0.00001e-320\n",
         {{"a", kU, "", {{"a", {}, 0}}},
          {"b", kU, "", {{"b", {}, 0}}},
          {"c", kU, "", {{"c", {}, 4.9e-324}}},
          {"d", kU, "", {{"d", {}, 0}}}}},
        {"TYPE without a type declares nothing, as in Go",
         "# TYPE x \n# TYPE x gauge\nx 1\n",
         {{"x", kG, "", {{"x", {}, 1}}}}},
        {"declared histogram tolerates a bucket without le and a bare sample, as Go does",
         "# TYPE h histogram\nh_bucket{a=\"b\"} 1\nh 2\n",
         {{"h", kH, "", {{"h_bucket", {{"a", "b"}}, 1}, {"h", {}, 2}}}}},
        {"le of an untyped series is just a label",
         "x{le=\"not a number\"} 1\n",
         {{"x", kU, "", {{"x", {{"le", "not a number"}}, 1}}}}},
        {"type words in any case",
         "# TYPE a GAUGE\na 1\n# TYPE b Untyped\nb 2\n",
         {{"a", kG, "", {{"a", {}, 1}}}, {"b", kU, "", {{"b", {}, 2}}}}},
        {"\"#\" comments with HELP-like words are ignored",
         "# HELPER text\n#HELP\n# TYPE\n# some TYPE words\nx 1\n",
         {{"x", kU, "", {{"x", {}, 1}}}}},
    }),
    [](const testing::TestParamInfo<GoodCase>& info) {
      std::string s;
      for (char ch : info.param.name)
        s.push_back(std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_');
      return s;
    });

struct BadCase {
  std::string name;  // why the input is bad
  std::string text;
  int line;             // the 1-based line the error must name
  std::string message;  // a fragment the message must contain
};

class BadInputTest : public testing::TestWithParam<BadCase> {};

TEST_P(BadInputTest, FailsNamingTheLine) {
  const BadCase& c = GetParam();
  absl::StatusOr<Exposition> got = ParsePrometheusText(c.text);
  ASSERT_FALSE(got.ok()) << "parsed, but " << c.name;
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(got.status().message());
  EXPECT_TRUE(absl::StartsWith(msg, absl::StrCat("line ", c.line, ": "))) << msg;
  EXPECT_THAT(msg, testing::HasSubstr(c.message));
}

INSTANTIATE_TEST_SUITE_P(
    Grammar, BadInputTest,
    testing::ValuesIn(std::vector<BadCase>{
        {"metric name starts with a digit", "1abc 1\n", 1, "invalid metric name"},
        {"metric name has a dot", "ok 1\nfoo.bar 1\n", 2, "invalid character '.'"},
        {"sample has no value", "# TYPE x gauge\nx\n", 2, "missing value"},
        {"labelled sample has no value", "x{a=\"b\"}\n", 1, "missing value"},
        {"value is not a number", "x abc\n", 1, "bad number 'abc'"},
        {"value has two dots", "x 1.2.3\n", 1, "bad number"},
        {"hexadecimal values are not accepted", "x 0x10\n", 1, "bad number"},
        {"NaN with a payload is not a number", "x nan(1)\n", 1, "bad number"},
        {"a sign alone is not a number", "x -\n", 1, "bad number"},
        {"double sign", "x +-1\n", 1, "bad number"},
        {"value overflows a double", "x 1e999\n", 1, "bad number"},
        {"label name starts with a digit", "x{1a=\"b\"} 1\n", 1, "invalid label name"},
        {"label name has a colon", "x{a:b=\"c\"} 1\n", 1, "expected '='"},
        {"label value not quoted", "x{a=b} 1\n", 1, "must be in double quotes"},
        {"label value single-quoted", "x{a='b'} 1\n", 1, "must be in double quotes"},
        {"label value never closed", "ok 1\nx{a=\"b} 1\n", 2, "unterminated value"},
        {"label value ends in a backslash", "x{a=\"b\\", 1, "unterminated value"},
        {"unknown escape in a label value", "x{a=\"\\t\"} 1\n", 1, "invalid escape"},
        {"label set never closed", "x{a=\"b\" 1\n", 1, "expected ',' or '}'"},
        {"label set cut off", "x{a=\"b\",\n", 1, "missing '}'"},
        {"two commas between labels", "x{a=\"b\",,c=\"d\"} 1\n", 1, "invalid label name"},
        {"duplicate label name", "x{a=\"1\",b=\"2\",a=\"3\"} 1\n", 1, "duplicate label 'a'"},
        {"reserved label name", "x{__name__=\"y\"} 1\n", 1, "reserved"},
        {"label value not UTF-8", "x{a=\"\xC3\x28\"} 1\n", 1, "not valid UTF-8"},
        {"overlong UTF-8 in a label value", "x{a=\"\xC0\xAF\"} 1\n", 1, "not valid UTF-8"},
        {"second TYPE line for one family", "# TYPE x gauge\n# HELP x X.\n# TYPE x gauge\nx 1\n", 3,
         "second TYPE line for 'x'"},
        {"TYPE line after the family's samples", "x 1\n# TYPE x gauge\n", 2, "after its samples"},
        {"second HELP line for one family", "# HELP x a\n# HELP x b\n", 2, "second HELP"},
        {"unknown type word", "# TYPE x bogus\n", 1, "unknown metric type 'bogus'"},
        {"text after the type", "# TYPE x gauge extra\n", 1, "after the type"},
        {"invalid metric name in TYPE", "# TYPE 0x gauge\n", 1, "invalid metric name '0x'"},
        {"invalid metric name in HELP", "# HELP x{} help\n", 1, "invalid metric name"},
        {"unknown escape in HELP", "# HELP x tab\\there\n", 1, "invalid escape"},
        {"HELP ends in a backslash", "# HELP x trailing\\\n", 1, "lone backslash"},
        {"text after the timestamp", "x 1 2 3\n", 1, "after the timestamp"},
        {"timestamp is not an integer", "x 1 1.5\n", 1, "bad timestamp '1.5'"},
        {"timestamp overflows int64", "x 1 99999999999999999999\n", 1, "bad timestamp"},
        {"histogram bucket with a non-numeric le", "# TYPE h histogram\nh_bucket{le=\"x\"} 1\n", 2,
         "in label 'le'"},
        {"summary quantile not a number", "# TYPE s summary\ns{quantile=\"p99\"} 1\n", 2,
         "in label 'quantile'"},
        {"CRLF lines are still counted", "a 1\r\nb 2\r\nc{\r\n", 3, "missing '}'"},
    }),
    [](const testing::TestParamInfo<BadCase>& info) {
      std::string s;
      for (char ch : info.param.name)
        s.push_back(std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_');
      return s;
    });

TEST(PrometheusTextTest, ErrorQuotesLongTokensShortAndEscaped) {
  const std::string garbage = "x " + std::string(5000, 'z') + "\x01";
  absl::StatusOr<Exposition> got = ParsePrometheusText(garbage);
  ASSERT_FALSE(got.ok());
  EXPECT_LT(got.status().message().size(), 200u) << got.status();
  EXPECT_THAT(std::string(got.status().message()), testing::HasSubstr("..."));
}

TEST(PrometheusTextTest, SampleLabelLookup) {
  absl::StatusOr<Exposition> got = ParsePrometheusText("x{a=\"1\",b=\"\"} 1\n");
  ASSERT_TRUE(got.ok()) << got.status();
  const Sample& s = got->families[0].samples[0];
  EXPECT_EQ(s.Label("a"), "1");
  EXPECT_EQ(s.Label("b"), "");
  EXPECT_TRUE(s.HasLabel("b"));
  EXPECT_EQ(s.Label("c"), "");
  EXPECT_FALSE(s.HasLabel("c"));
  EXPECT_EQ(got->Find("x"), &got->families[0]);
  EXPECT_EQ(got->Find("y"), nullptr);
}

TEST(PrometheusTextTest, ManyLabelsDuplicateIsFound) {
  // Past the small-set fast path: the sort-based check.
  std::string text = "x{";
  for (int i = 0; i < 100; ++i) absl::StrAppend(&text, "l", i, "=\"v\",");
  absl::StrAppend(&text, "l42=\"again\"} 1\n");
  absl::StatusOr<Exposition> got = ParsePrometheusText(text);
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()), testing::HasSubstr("duplicate label 'l42'"));
}

TEST(PrometheusTextTest, MetricTypeNames) {
  EXPECT_EQ(MetricTypeName(MetricType::kUntyped), "untyped");
  EXPECT_EQ(MetricTypeName(MetricType::kCounter), "counter");
  EXPECT_EQ(MetricTypeName(MetricType::kGauge), "gauge");
  EXPECT_EQ(MetricTypeName(MetricType::kHistogram), "histogram");
  EXPECT_EQ(MetricTypeName(MetricType::kSummary), "summary");
}

// ---- The real vLLM text ------------------------------------------------------------------------

std::string ReadFixture() {
  std::string text = testutil::ReadVllmFixture();
  EXPECT_FALSE(text.empty()) << "can't read " << testutil::kVllmFixturePath
                             << " (run from the repo root)";
  return text;
}

// Source 3 of the fixture is a shell session from vLLM's docs: a "$ curl ..." line and "..."
// elisions sit between the exposition lines. They are not exposition text; drop them.
std::string DropShellAndElisions(const std::string& text) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, "$ ") || line == "...") continue;
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

TEST(VllmFixtureTest, RawFileFailsAtTheShellPromptLine) {
  const std::string text = ReadFixture();
  // Find the line by content, not by a number copied from the file.
  int want_line = 0;
  int n = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++n;
    if (absl::StartsWith(line, "$ curl")) {
      want_line = n;
      break;
    }
  }
  ASSERT_GT(want_line, 0);
  absl::StatusOr<Exposition> got = ParsePrometheusText(text);
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(absl::StartsWith(got.status().message(), absl::StrCat("line ", want_line, ": ")))
      << got.status();
}

class VllmFixtureParsed : public testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Exposition> got = ParsePrometheusText(DropShellAndElisions(ReadFixture()));
    ASSERT_TRUE(got.ok()) << got.status();
    expo_ = *std::move(got);
  }
  const MetricFamily& Family(std::string_view name) {
    const MetricFamily* f = expo_.Find(name);
    EXPECT_NE(f, nullptr) << name;
    static const MetricFamily kEmpty;
    return f != nullptr ? *f : kEmpty;
  }
  Exposition expo_;
};

TEST_F(VllmFixtureParsed, HasTheExpectedFamiliesInOrder) {
  // Read off the fixture by hand: 5 families in excerpt 1, 2 in excerpt 2, 3 in excerpt 3, the
  // undeclared bucket series of source 2, and 4 families in source 3.
  const std::vector<std::pair<std::string, MetricType>> want = {
      {"vllm:gpu_prefix_cache_queries_created", kG},
      {"vllm:gpu_prefix_cache_hits_total", kC},
      {"vllm:gpu_prefix_cache_hits_created", kG},
      {"vllm:kv_cache_usage_perc", kG},
      {"vllm:prefix_cache_queries_total", kC},
      {"vllm:request_prompt_tokens_created", kG},
      {"vllm:request_generation_tokens", kH},
      {"vllm:request_max_num_generation_tokens_created", kG},
      {"vllm:request_params_n", kH},
      {"vllm:request_params_n_created", kG},
      {"vllm:request_decode_time_seconds_bucket", kU},
      {"vllm:num_requests_running", kG},
      {"vllm:generation_tokens_total", kC},
      {"vllm:request_success_total", kC},
      {"vllm:time_to_first_token_seconds", kH},
  };
  ASSERT_EQ(expo_.families.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(expo_.families[i].name, want[i].first);
    EXPECT_EQ(expo_.families[i].type, want[i].second) << want[i].first;
  }
}

TEST_F(VllmFixtureParsed, GaugesCountersAndHelpText) {
  const MetricFamily& kv = Family("vllm:kv_cache_usage_perc");
  EXPECT_EQ(kv.help, "KV-cache usage. 1 means 100 percent usage.");
  ASSERT_EQ(kv.samples.size(), 1u);
  EXPECT_EQ(kv.samples[0].labels, (Labels{{"engine", "0"}, {"model_name", "zai-org/GLM-4.5"}}));
  EXPECT_EQ(kv.samples[0].value, 9.75010481363281e-06);

  const MetricFamily& hits = Family("vllm:gpu_prefix_cache_hits_total");
  EXPECT_EQ(hits.help,
            "GPU prefix cache hits, in terms of number of cached tokens. DEPRECATED: Use "
            "vllm:prefix_cache_hits instead.");
  ASSERT_EQ(hits.samples.size(), 1u);
  EXPECT_EQ(hits.samples[0].value, 0.0);

  const MetricFamily& created = Family("vllm:gpu_prefix_cache_queries_created");
  ASSERT_EQ(created.samples.size(), 1u);
  EXPECT_EQ(created.samples[0].value, 1753795326.9352946);

  // Excerpt 2 starts mid-scrape: a TYPE line with no HELP line.
  EXPECT_EQ(Family("vllm:request_prompt_tokens_created").help, "");

  ASSERT_EQ(Family("vllm:prefix_cache_queries_total").samples.size(), 1u);
  EXPECT_EQ(Family("vllm:prefix_cache_queries_total").samples[0].value, 32.0);
  ASSERT_EQ(Family("vllm:num_requests_running").samples.size(), 1u);
  EXPECT_EQ(Family("vllm:num_requests_running").samples[0].value, 8.0);
  ASSERT_EQ(Family("vllm:generation_tokens_total").samples.size(), 1u);
  EXPECT_EQ(Family("vllm:generation_tokens_total").samples[0].value, 27453.0);

  const MetricFamily& success = Family("vllm:request_success_total");
  ASSERT_EQ(success.samples.size(), 3u);
  EXPECT_EQ(success.samples[0].Label("finished_reason"), "stop");
  EXPECT_EQ(success.samples[0].value, 1.0);
  EXPECT_EQ(success.samples[1].Label("finished_reason"), "length");
  EXPECT_EQ(success.samples[1].value, 131.0);
  EXPECT_EQ(success.samples[2].Label("finished_reason"), "abort");
  EXPECT_EQ(success.samples[2].value, 0.0);
  EXPECT_EQ(success.samples[1].Label("model_name"), "meta-llama/Llama-3.1-8B-Instruct");
}

TEST_F(VllmFixtureParsed, HistogramBucketsAndLabelOrder) {
  const MetricFamily& gen = Family("vllm:request_generation_tokens");
  EXPECT_EQ(gen.help, "Number of generation tokens processed.");
  const std::vector<std::string> want_le = {"1.0",   "2.0",   "5.0",   "10.0",   "20.0",  "50.0",
                                            "100.0", "200.0", "500.0", "1000.0", "2000.0"};
  const std::vector<double> want_count = {0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4};
  ASSERT_EQ(gen.samples.size(), want_le.size());
  for (size_t i = 0; i < want_le.size(); ++i) {
    EXPECT_EQ(gen.samples[i].name, "vllm:request_generation_tokens_bucket");
    // vLLM prints labels sorted: engine, le, model_name.
    EXPECT_EQ(gen.samples[i].labels,
              (Labels{{"engine", "0"}, {"le", want_le[i]}, {"model_name", "zai-org/GLM-4.5"}}));
    EXPECT_EQ(gen.samples[i].value, want_count[i]);
  }

  const MetricFamily& n = Family("vllm:request_params_n");
  ASSERT_EQ(n.samples.size(), 8u);  // 6 buckets, then _count, then _sum (prometheus_client order)
  const std::vector<std::string> n_le = {"1.0", "2.0", "5.0", "10.0", "20.0", "+Inf"};
  for (size_t i = 0; i < n_le.size(); ++i) {
    EXPECT_EQ(n.samples[i].Label("le"), n_le[i]);
    EXPECT_EQ(n.samples[i].value, 4.0);
  }
  EXPECT_EQ(n.samples[6].name, "vllm:request_params_n_count");
  EXPECT_EQ(n.samples[6].value, 4.0);
  EXPECT_EQ(n.samples[7].name, "vllm:request_params_n_sum");
  EXPECT_EQ(n.samples[7].value, 4.0);

  const MetricFamily& decode = Family("vllm:request_decode_time_seconds_bucket");
  const std::vector<std::string> decode_le = {"15.0",   "20.0",   "30.0",  "40.0",  "50.0",
                                              "60.0",   "120.0",  "240.0", "480.0", "960.0",
                                              "1920.0", "7680.0", "+Inf"};
  ASSERT_EQ(decode.samples.size(), decode_le.size());
  for (size_t i = 0; i < decode_le.size(); ++i) {
    EXPECT_EQ(decode.samples[i].Label("le"), decode_le[i]);
    EXPECT_EQ(decode.samples[i].Label("engine"), "1");
    EXPECT_EQ(decode.samples[i].Label("model_name"), "/home/jovyan/qwen3-8b");
    EXPECT_EQ(decode.samples[i].value, 1.0);
  }

  const MetricFamily& ttft = Family("vllm:time_to_first_token_seconds");
  const std::vector<std::string> ttft_le = {"0.001", "0.005", "0.01", "0.02",
                                            "0.04",  "0.06",  "0.08", "0.1"};
  const std::vector<double> ttft_count = {0, 0, 0, 13, 97, 123, 138, 140};
  ASSERT_EQ(ttft.samples.size(), ttft_le.size() + 1);
  for (size_t i = 0; i < ttft_le.size(); ++i) {
    EXPECT_EQ(ttft.samples[i].Label("le"), ttft_le[i]);
    EXPECT_EQ(ttft.samples[i].value, ttft_count[i]);
  }
  EXPECT_EQ(ttft.samples.back().name, "vllm:time_to_first_token_seconds_count");
  EXPECT_EQ(ttft.samples.back().value, 140.0);
}

}  // namespace
}  // namespace twinscale::metrics
