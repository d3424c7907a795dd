// The Grafana dashboard (charts/twinscale/dashboards/twinscale.json) queries only what is really
// exported: every metric a panel or variable query names is one the controller registers
// (controller/reconcile/controller_metrics.cc, rendered by controller/common/metrics_registry) or
// one a vLLM server exports (the twin's vLLM exposition, simulator/model/vllm_metrics.cc, and the
// real vLLM text in tests/data/fixtures/); every label a selector matches on or an aggregation
// groups by exists on those metrics (or is one Prometheus adds when it scrapes a pod); and the
// dashboard is well formed (unique panel ids, a datasource and a description on every panel, the
// variables it uses defined). The known names come from the code, not from a list kept by hand.
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "controller/common/metrics_registry.h"
#include "controller/reconcile/controller_metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "simulator/model/vllm_metrics.h"

namespace twinscale::packaging {
namespace {

constexpr char kDashboard[] = "charts/twinscale/dashboards/twinscale.json";
constexpr char kVllmFixture[] = "tests/data/fixtures/vllm_metrics_excerpts.txt";

// Labels Prometheus adds to every series it scrapes from a pod (kubernetes_sd relabelling).
const std::set<std::string> kTargetLabels = {"instance", "job", "namespace", "pod"};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// name -> label names, from a Prometheus text page: every sample line, and every TYPE line (a
// family without series yet still names its metric; a histogram's _bucket/_sum/_count too).
void CollectExposition(absl::string_view page, std::map<std::string, std::set<std::string>>& out) {
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    if (absl::StartsWith(line, "# TYPE ")) {
      std::vector<absl::string_view> parts = absl::StrSplit(line.substr(7), ' ');
      if (parts.size() != 2) continue;
      const std::string name(parts[0]);
      out[name];
      if (parts[1] == "histogram") {
        out[name + "_bucket"].insert("le");
        out[name + "_sum"];
        out[name + "_count"];
      }
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const size_t brace = line.find('{');
    const size_t space = line.find(' ');
    const std::string name(line.substr(0, std::min(brace, space)));
    std::set<std::string>& labels = out[name];
    if (brace != absl::string_view::npos && brace < space) {
      const absl::string_view inner = line.substr(brace + 1, line.find('}') - brace - 1);
      for (absl::string_view kv : absl::StrSplit(inner, ',', absl::SkipEmpty())) {
        labels.insert(std::string(kv.substr(0, kv.find('='))));
      }
    }
  }
}

// What the code exports: the controller's registry, the twin's vLLM page, the real vLLM excerpt.
std::map<std::string, std::set<std::string>> ExportedMetrics() {
  std::map<std::string, std::set<std::string>> out;
  MetricsRegistry registry;
  absl::StatusOr<reconcile::ControllerMetrics> m = reconcile::ControllerMetrics::Register(registry);
  EXPECT_TRUE(m.ok()) << m.status();
  if (m.ok()) {
    CollectExposition(registry.Render(), out);
    // Families without series print no labels: take them from the families themselves.
    auto labels = [&](const auto* family, std::initializer_list<const char*> suffixes) {
      for (const char* suffix : suffixes) {
        for (const std::string& l : family->label_names()) out[family->name() + suffix].insert(l);
      }
    };
    labels(m->reconciles, {""});
    labels(m->reconcile_seconds, {"_bucket", "_sum", "_count"});
    labels(m->decisions, {""});
    labels(m->scale_writes, {""});
    labels(m->errors, {""});
    labels(m->desired_replicas, {""});
    labels(m->current_replicas, {""});
    labels(m->prediction_error, {""});
    labels(m->stale_pods, {""});
    labels(m->is_leader, {""});
  }
  sim::VllmMetrics vllm(sim::VllmMetricsOptions{});
  vllm.SetScheduler(3, 2, 0.4);
  vllm.ObserveTtft(0.12);
  CollectExposition(vllm.Render(), out);
  const std::string fixture = Slurp(kVllmFixture);
  EXPECT_FALSE(fixture.empty()) << kVllmFixture;
  CollectExposition(fixture, out);
  return out;
}

// ---- A small PromQL scanner: which metrics a query selects, which labels it names ------------

struct QueryNames {
  std::map<std::string, std::set<std::string>> selectors;  // metric -> labels in its {matchers}
  std::set<std::string> grouping;  // labels in by/without/on/ignoring/group_left/group_right
};

bool IdentStart(char c) { return absl::ascii_isalpha(c) || c == '_' || c == ':'; }
bool IdentChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == ':'; }

const std::set<std::string> kKeywords = {
    "and", "or",       "unless",     "bool",        "offset", "by", "without",
    "on",  "ignoring", "group_left", "group_right", "inf",    "nan"};
// Aggregation operators: followed by "(" or by a by/without clause, never metric names.
const std::set<std::string> kAggregations = {
    "sum",   "min",          "max",     "avg",  "group",    "stddev", "stdvar",
    "count", "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"};
const std::set<std::string> kGroupingKeywords = {"by",       "without",    "on",
                                                 "ignoring", "group_left", "group_right"};

// Skips a quoted string starting at s[i]; returns the index after it.
size_t SkipString(absl::string_view s, size_t i) {
  const char quote = s[i++];
  while (i < s.size() && s[i] != quote) i += (s[i] == '\\') ? 2 : 1;
  return i + 1;
}

// The label names of the matchers in s[open+1 .. close), and the index after the close brace.
size_t ReadMatchers(absl::string_view s, size_t open, std::set<std::string>& labels) {
  size_t i = open + 1;
  while (i < s.size() && s[i] != '}') {
    if (s[i] == '"' || s[i] == '\'' || s[i] == '`') {
      i = SkipString(s, i);
    } else if (IdentStart(s[i])) {
      size_t j = i;
      while (j < s.size() && IdentChar(s[j])) ++j;
      labels.insert(std::string(s.substr(i, j - i)));
      i = j;
    } else {
      ++i;
    }
  }
  return i + 1;
}

QueryNames Scan(absl::string_view q) {
  QueryNames out;
  size_t i = 0;
  while (i < q.size()) {
    const char c = q[i];
    if (c == '"' || c == '\'' || c == '`') {
      i = SkipString(q, i);
    } else if (c == '[') {
      i = q.find(']', i) + 1;  // a range or subquery: durations and Grafana's $__rate_interval
    } else if (c == '$') {
      ++i;
      while (i < q.size() && IdentChar(q[i])) ++i;
    } else if (absl::ascii_isdigit(c) ||
               (c == '.' && i + 1 < q.size() && absl::ascii_isdigit(q[i + 1]))) {
      while (i < q.size() && (absl::ascii_isalnum(q[i]) || q[i] == '.')) ++i;  // 0.9, 15m, 1e3
    } else if (c == '{') {
      std::set<std::string> labels;
      i = ReadMatchers(q, i, labels);
      out.selectors[""].insert(labels.begin(), labels.end());  // {__name__=...}: not used here
    } else if (IdentStart(c)) {
      size_t j = i;
      while (j < q.size() && IdentChar(q[j])) ++j;
      const std::string ident(q.substr(i, j - i));
      size_t k = j;
      while (k < q.size() && q[k] == ' ') ++k;
      if (kGroupingKeywords.count(ident) && k < q.size() && q[k] == '(') {
        const size_t close = q.find(')', k);
        for (absl::string_view l : absl::StrSplit(q.substr(k + 1, close - k - 1), ',')) {
          l = absl::StripAsciiWhitespace(l);
          if (!l.empty()) out.grouping.insert(std::string(l));
        }
        i = close + 1;
      } else if (kKeywords.count(ident) || kAggregations.count(ident) ||
                 (k < q.size() && q[k] == '(')) {
        i = j;  // a keyword, or a function / aggregation name
      } else {
        std::set<std::string>& labels = out.selectors[ident];
        i = j;
        if (k < q.size() && q[k] == '{') i = ReadMatchers(q, k, labels);
      }
    } else {
      ++i;
    }
  }
  out.selectors.erase("");
  return out;
}

TEST(PromqlScan, FindsMetricsMatchersAndGroupingButNotFunctionsOrKeywords) {
  const QueryNames n = Scan(
      "histogram_quantile(0.9, sum by (le, model_name) "
      "(rate(vllm:time_to_first_token_seconds_bucket"
      "{namespace=~\"$namespace\", model_name=~\"a,b}\"}[$__rate_interval]))) "
      "and on (instance) (twinscale_leader == 1) offset 5m");
  EXPECT_EQ(n.selectors.size(), 2u);
  EXPECT_EQ(n.selectors.at("vllm:time_to_first_token_seconds_bucket"),
            (std::set<std::string>{"namespace", "model_name"}));
  EXPECT_EQ(n.selectors.at("twinscale_leader"), std::set<std::string>{});
  EXPECT_EQ(n.grouping, (std::set<std::string>{"le", "model_name", "instance"}));
}

// ---- The dashboard ---------------------------------------------------------------------------

struct Query {
  std::string where;  // panel title or variable name
  std::string expr;
};

void CollectPanels(const nlohmann::json& panels, std::vector<const nlohmann::json*>& out) {
  for (const nlohmann::json& p : panels) {
    out.push_back(&p);
    if (p.contains("panels")) CollectPanels(p["panels"], out);
  }
}

nlohmann::json LoadDashboard() {
  const std::string text = Slurp(kDashboard);
  EXPECT_FALSE(text.empty()) << kDashboard;
  return nlohmann::json::parse(text);
}

std::vector<Query> Queries(const nlohmann::json& dash) {
  std::vector<Query> out;
  std::vector<const nlohmann::json*> panels;
  CollectPanels(dash["panels"], panels);
  for (const nlohmann::json* p : panels) {
    for (const nlohmann::json& t : p->value("targets", nlohmann::json::array())) {
      out.push_back({(*p)["title"].get<std::string>(), t["expr"].get<std::string>()});
    }
  }
  for (const nlohmann::json& v : dash["templating"]["list"]) {
    if (v["type"] != "query") continue;
    // label_values(<selector>, <label>): the selector is a query; the label must exist on it.
    std::string q = v["query"].is_object() ? v["query"]["query"].get<std::string>()
                                           : v["query"].get<std::string>();
    EXPECT_TRUE(absl::StartsWith(q, "label_values(")) << q;
    q = q.substr(13, q.size() - 14);
    const size_t comma = q.rfind(',');
    const std::string label(absl::StripAsciiWhitespace(q.substr(comma + 1)));
    out.push_back({"$" + v["name"].get<std::string>(),
                   q.substr(0, comma) + " by (" + label + ")"});  // scanned as grouping
  }
  return out;
}

TEST(Dashboard, EveryQueryNamesExportedMetricsAndTheirLabels) {
  const std::map<std::string, std::set<std::string>> exported = ExportedMetrics();
  ASSERT_TRUE(exported.count("twinscale_desired_replicas"));
  ASSERT_TRUE(exported.count("vllm:num_requests_waiting"));
  std::set<std::string> used;
  const std::vector<Query> queries = Queries(LoadDashboard());
  ASSERT_GE(queries.size(), 15u);
  for (const Query& q : queries) {
    SCOPED_TRACE(q.where + ": " + q.expr);
    const QueryNames names = Scan(q.expr);
    EXPECT_FALSE(names.selectors.empty()) << "a query that selects no metric";
    std::set<std::string> available = kTargetLabels;
    for (const auto& [metric, labels] : names.selectors) {
      used.insert(metric);
      auto it = exported.find(metric);
      if (it == exported.end()) {
        ADD_FAILURE() << metric << " is exported by neither the controller nor vLLM";
        continue;
      }
      available.insert(it->second.begin(), it->second.end());
      for (const std::string& l : labels) {
        EXPECT_TRUE(it->second.count(l) || kTargetLabels.count(l))
            << metric << " has no label " << l;
      }
    }
    for (const std::string& l : names.grouping) {
      EXPECT_TRUE(available.count(l)) << "no metric of the query has the label " << l;
    }
  }
  // The three things the dashboard is for: the fleet's signals, the decisions, the prediction
  // error.
  for (const char* m : {"vllm:time_to_first_token_seconds_bucket", "vllm:kv_cache_usage_perc",
                        "vllm:num_requests_waiting", "twinscale_desired_replicas",
                        "twinscale_decisions_total", "twinscale_prediction_error_seconds"}) {
    EXPECT_TRUE(used.count(m)) << "the dashboard does not show " << m;
  }
}

TEST(Dashboard, IsWellFormed) {
  const nlohmann::json dash = LoadDashboard();
  EXPECT_EQ(dash["uid"], "twinscale");
  std::set<std::string> variables;
  for (const nlohmann::json& v : dash["templating"]["list"]) variables.insert(v["name"]);
  EXPECT_TRUE(variables.count("datasource"));
  std::vector<const nlohmann::json*> panels;
  CollectPanels(dash["panels"], panels);
  std::set<int> ids;
  for (const nlohmann::json* p : panels) {
    SCOPED_TRACE((*p)["title"].get<std::string>());
    EXPECT_TRUE(ids.insert((*p)["id"].get<int>()).second) << "duplicate panel id";
    EXPECT_TRUE(p->contains("gridPos"));
    if ((*p)["type"] == "row") continue;
    EXPECT_EQ((*p)["datasource"]["uid"], "${datasource}");
    EXPECT_FALSE((*p).value("description", "").empty()) << "say what the panel shows";
    for (const nlohmann::json& t : (*p)["targets"]) {
      // Every $variable a query uses is defined (Grafana's own $__ variables aside).
      const std::string expr = t["expr"];
      for (size_t at = expr.find('$'); at != std::string::npos; at = expr.find('$', at + 1)) {
        size_t end = at + 1;
        while (end < expr.size() && IdentChar(expr[end])) ++end;
        const std::string name = expr.substr(at + 1, end - at - 1);
        if (absl::StartsWith(name, "__")) continue;
        EXPECT_TRUE(variables.count(name)) << "undefined variable $" << name;
      }
    }
  }
}

}  // namespace
}  // namespace twinscale::packaging
