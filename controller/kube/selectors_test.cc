// Label and field selectors against the semantics the Kubernetes documentation gives
// (concepts/overview/working-with-objects/labels, field-selectors): equality and set-based
// requirements, absent labels matching != and notin, the canonical string a Scale reports, and
// errors naming where a bad selector goes wrong.
#include "controller/kube/selectors.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace twinscale::kube {
namespace {

using nlohmann::json;

TEST(LabelSelectorTest, MatchesLikeTheDocumentation) {
  struct Case {
    std::string name;
    std::string selector;
    json labels;
    bool want;
  };
  const json web = {{"app", "web"}, {"tier", "frontend"}, {"env", "prod"}};
  const std::vector<Case> cases = {
      {"empty selects everything", "", web, true},
      {"empty selects objects without labels", "", nullptr, true},
      {"equality", "app=web", web, true},
      {"double equals is equality", "app==web", web, true},
      {"equality on another value", "app=db", web, false},
      {"equality needs the label", "owner=me", web, false},
      {"inequality", "app!=db", web, true},
      {"inequality matches an absent label", "owner!=me", web, true},
      {"inequality on the same value", "app!=web", web, false},
      {"in", "tier in (frontend, backend)", web, true},
      {"in needs the label", "owner in (me)", web, false},
      {"notin", "env notin (dev,test)", web, true},
      {"notin matches an absent label", "owner notin (me)", web, true},
      {"notin with the value", "env notin (prod)", web, false},
      {"exists", "tier", web, true},
      {"exists, absent", "owner", web, false},
      {"does not exist", "!owner", web, true},
      {"does not exist, present", "!tier", web, false},
      {"all of a conjunction", "app=web,tier!=backend,env in (prod,staging),!owner,tier", web,
       true},
      {"one failing term fails the conjunction", "app=web,tier!=frontend", web, false},
      {"spaces around tokens", "  app = web ,  env  in  ( prod )  ", web, true},
      {"greater than", "replicas>3", {{"replicas", "4"}}, true},
      {"greater than, equal", "replicas>4", {{"replicas", "4"}}, false},
      {"less than", "replicas<10", {{"replicas", "4"}}, true},
      {"greater than needs an integer label", "replicas>3", {{"replicas", "four"}}, false},
      {"empty value", "app=", {{"app", ""}}, true},
      {"an empty set holds the empty value", "app in ()", {{"app", ""}}, true},
      {"an empty set, another value", "app in ()", web, false},
      {"prefixed key",
       "app.kubernetes.io/name=twinscale",
       {{"app.kubernetes.io/name", "twinscale"}},
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto s = LabelSelector::Parse(c.selector);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->Matches(c.labels), c.want);
  }
}

TEST(LabelSelectorTest, PrintsRequirementsSortedByKey) {
  // What a Deployment's /scale reports: requirements sorted by key, set values sorted.
  auto s = LabelSelector::Parse("tier in (web,api), app=llm, !canary, zone notin (b,a), gpu");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->String(), "app=llm,!canary,gpu,tier in (api,web),zone notin (a,b)");
}

TEST(LabelSelectorTest, ConvertsALabelSelectorObject) {
  const json selector = {{"matchLabels", {{"app", "vllm"}, {"model", "llama"}}},
                         {"matchExpressions",
                          {{{"key", "tier"}, {"operator", "In"}, {"values", {"serve", "batch"}}},
                           {{"key", "canary"}, {"operator", "DoesNotExist"}}}}};
  auto s = LabelSelector::FromLabelSelectorJson(selector);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->String(), "app=vllm,!canary,model=llama,tier in (batch,serve)");
  EXPECT_TRUE(s->Matches({{"app", "vllm"}, {"model", "llama"}, {"tier", "serve"}}));
  EXPECT_FALSE(
      s->Matches({{"app", "vllm"}, {"model", "llama"}, {"tier", "serve"}, {"canary", "true"}}));

  auto empty = LabelSelector::FromLabelSelectorJson(json::object());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->String(), "");

  auto bad = LabelSelector::FromLabelSelectorJson(
      {{"matchExpressions", {{{"key", "a"}, {"operator", "Equals"}, {"values", {"b"}}}}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "matchExpressions[0].operator"))
      << bad.status();
}

TEST(LabelSelectorTest, RejectsBadSelectorsNamingThePlace) {
  struct Case {
    std::string why;
    std::string selector;
    std::string mentions;  // part of the message, with the 0-based offset
  };
  const std::vector<Case> cases = {
      {"in needs parentheses", "tier in web", "at 8: expected '(' after 'in'"},
      {"a trailing comma leaves a requirement missing", "app=web,", "at 8: expected a requirement"},
      {"two values without a comma", "app=web db", "at 8: expected ',' or the end"},
      {"a key starting with a dash", "-app=web", "invalid label key \"-app\""},
      {"a value with a space-free but illegal character", "app=we$b", "invalid label value"},
      {"a value longer than 63 characters", "app=" + std::string(64, 'a'), "invalid label value"},
      {"a non-integer comparison", "replicas>many", "must be an integer"},
      {"an operator without a key", "=web", "at 0: expected '!', a label key or the end"},
      {"an unclosed set", "tier in (a,b", "expected ',' or ')'"},
      {"a bang before nothing", "!", "at 1: expected a label key after '!'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    auto s = LabelSelector::Parse(c.selector);
    ASSERT_FALSE(s.ok()) << c.selector;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(s.status().message(), c.mentions)) << s.status();
  }
}

TEST(FieldSelectorTest, MatchesFieldsByPath) {
  const json pod = {{"metadata", {{"name", "web-0"}, {"namespace", "default"}}},
                    {"spec", {{"nodeName", "gpu-1"}, {"hostNetwork", false}}},
                    {"status", {{"phase", "Running"}}}};
  struct Case {
    std::string selector;
    bool want;
  };
  const std::vector<Case> cases = {
      {"", true},
      {"metadata.name=web-0", true},
      {"metadata.name==web-0", true},
      {"metadata.name=web-1", false},
      {"metadata.name!=web-1,status.phase=Running", true},
      {"status.phase!=Running", false},
      {"spec.nodeName=", false},
      {"spec.schedulerName=", true},  // a missing field is the empty string
      {"spec.hostNetwork=false", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.selector);
    auto s = FieldSelector::Parse(c.selector);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->Matches(pod), c.want);
  }
}

TEST(FieldSelectorTest, UnescapesValuesAndRejectsTermsWithoutAnOperator) {
  auto s = FieldSelector::Parse(R"(metadata.name=a\,b\=c)");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->requirements().size(), 1u);
  EXPECT_EQ(s->requirements()[0].value, "a,b=c");

  auto bad = FieldSelector::Parse("metadata.name=a,status.phase");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "at 16: can't understand 'status.phase'"))
      << bad.status();
}

}  // namespace
}  // namespace twinscale::kube
