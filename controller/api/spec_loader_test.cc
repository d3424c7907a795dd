// Tests of the InferenceAutoscaler loader: every shipped sample loads; a minimal manifest gets the
// schema's defaults (written out by hand below, from the CRD, not captured from the loader); the
// C++ initializers in spec.h agree with them; durations parse; multi-document files and Lists; and
// a table of bad manifests, each saying why it is bad and which field (and line) the error must
// name. Tests run from the repo root (ts_cc_test), so deploy/ is found by relative path.
#include "controller/api/spec_loader.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "controller/api/scaling_rules.h"
#include "controller/api/spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace twinscale::api {
namespace {

using ::testing::HasSubstr;

constexpr char kSamplesDir[] = "deploy/samples";
constexpr char kCrdPath[] = "deploy/crds/twinscale.io_inferenceautoscalers.yaml";

// A manifest with the required fields and `spec_lines` appended to spec (indented by two spaces
// each). Line numbers: spec_lines start on line 8.
std::string Manifest(std::string_view spec_lines) {
  std::string out =
      "apiVersion: twinscale.io/v1alpha1\n"                                 // 1
      "kind: InferenceAutoscaler\n"                                         // 2
      "metadata:\n"                                                         // 3
      "  name: test\n"                                                      // 4
      "spec:\n"                                                             // 5
      "  targetRef: {apiVersion: apps/v1, kind: Deployment, name: vllm}\n"  // 6
      "  model: {profile: llama-3.1-8b-h100-sxm-tp1}\n";                    // 7
  if (!spec_lines.empty()) {
    out += "  " + absl::StrReplaceAll(std::string(spec_lines), {{"\n", "\n  "}});
    while (!out.empty() && out.back() == ' ') out.pop_back();
    if (out.back() != '\n') out += '\n';
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void ExpectRules(const ScalingRules& got, const ScalingRules& want) {
  EXPECT_EQ(got.stabilization_window, want.stabilization_window);
  EXPECT_EQ(got.select, want.select);
  ASSERT_EQ(got.policies.size(), want.policies.size());
  for (size_t i = 0; i < want.policies.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("policy ", i));
    EXPECT_EQ(got.policies[i].type, want.policies[i].type);
    EXPECT_EQ(got.policies[i].value, want.policies[i].value);
    EXPECT_EQ(got.policies[i].period, want.policies[i].period);
  }
}

// ---- Samples ---------------------------------------------------------------------------------

TEST(SpecLoaderSamples, EverySampleLoads) {
  int files = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(kSamplesDir);
       it != std::filesystem::recursive_directory_iterator(); ++it) {
    const std::filesystem::directory_entry& entry = *it;
    // plan/ holds `twinscale plan`'s review files, not manifests (manifests_test reads them).
    if (entry.is_directory() && entry.path().filename() == "plan") {
      it.disable_recursion_pending();
      continue;
    }
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".yaml" && entry.path().extension() != ".yml") continue;
    SCOPED_TRACE(path);
    absl::StatusOr<std::vector<InferenceAutoscaler>> all =
        ParseInferenceAutoscalers(ReadFile(path), path);
    ASSERT_TRUE(all.ok()) << all.status();
    // Beside the samples, vllm-*.yaml are the vLLM servers they target (no InferenceAutoscaler;
    // tests/packaging/manifests_test.cc checks them against the samples).
    const bool server = absl::StartsWith(entry.path().filename().string(), "vllm-");
    EXPECT_EQ(all->empty(), server) << (server ? "a vLLM server file with an InferenceAutoscaler"
                                               : "a sample with no InferenceAutoscaler");
    if (!server) ++files;
  }
  EXPECT_GE(files, 2);
}

TEST(SpecLoaderSamples, Llama8bH100) {
  absl::StatusOr<InferenceAutoscaler> ias =
      LoadInferenceAutoscalerFile("deploy/samples/llama-3.1-8b-h100.yaml");
  ASSERT_TRUE(ias.ok()) << ias.status();
  EXPECT_EQ(ias->metadata.name, "llama-3-1-8b");
  EXPECT_EQ(ias->metadata.namespace_, "llm");
  EXPECT_EQ(ias->metadata.labels.at("app.kubernetes.io/name"), "llama-3-1-8b");
  EXPECT_EQ(ias->spec.target_ref.api_version, "apps/v1");
  EXPECT_EQ(ias->spec.target_ref.kind, "Deployment");
  EXPECT_EQ(ias->spec.target_ref.name, "vllm-llama-3-1-8b");
  EXPECT_EQ(ias->spec.mode, Mode::kRecommend);
  EXPECT_EQ(ias->spec.min_replicas, 1);
  EXPECT_EQ(ias->spec.max_replicas, 48);
  EXPECT_EQ(ias->spec.model.profile, "llama-3.1-8b-h100-sxm-tp1");
  EXPECT_EQ(ias->spec.slo.ttft.threshold, absl::Milliseconds(500));
  EXPECT_EQ(ias->spec.slo.ttft.percentile, 90);
  EXPECT_EQ(ias->spec.metrics.source, MetricsSourceKind::kPods);
}

TEST(SpecLoaderSamples, LongPrompts) {
  absl::StatusOr<InferenceAutoscaler> ias =
      LoadInferenceAutoscalerFile("deploy/samples/long-prompts.yaml");
  ASSERT_TRUE(ias.ok()) << ias.status();
  const InferenceAutoscalerSpec& s = ias->spec;
  EXPECT_EQ(s.mode, Mode::kDirect);
  EXPECT_EQ(s.routing, Routing::kPrefixAware);
  EXPECT_EQ(s.slo.ttft.threshold, absl::Milliseconds(250));
  EXPECT_EQ(s.slo.ttft.per_prompt_token, absl::Microseconds(100));
  // 250 ms + 0.1 ms x 1000 tokens; 250 ms + 0.1 ms x 32768 tokens = 3526.8 ms.
  EXPECT_EQ(s.slo.ttft.TargetFor(1000), absl::Milliseconds(350));
  EXPECT_EQ(s.slo.ttft.TargetFor(32768), absl::Microseconds(3526800));
  ASSERT_TRUE(s.slo.itl.has_value());
  EXPECT_EQ(s.slo.itl->threshold, absl::Milliseconds(100));
  EXPECT_EQ(s.slo.itl->percentile, 90);  // defaulted inside the itl object
  EXPECT_EQ(s.model.max_num_batched_tokens, 8192);
  EXPECT_FALSE(s.model.max_num_seqs.has_value());
  // scaleDown: two fields given, the rest defaulted.
  EXPECT_EQ(s.scale_down.rules.stabilization_window, absl::Seconds(600));
  EXPECT_EQ(s.scale_down.safety_margin, 0.7);
  EXPECT_TRUE(s.scale_down.rules.policies.empty());  // twinscale's own rate
  EXPECT_EQ(s.limits.kv_cache_utilization, 0.9);
  EXPECT_EQ(s.limits.queue_depth_per_replica, 4);
  EXPECT_EQ(s.warmup.expected, absl::Minutes(4));
  EXPECT_TRUE(s.admission.enabled);
  EXPECT_EQ(s.metrics.source, MetricsSourceKind::kPrometheus);
  ASSERT_TRUE(s.metrics.prometheus.has_value());
  EXPECT_EQ(s.metrics.prometheus->url, "http://prometheus.monitoring:9090");
  EXPECT_EQ(s.metrics.prometheus->label_matchers.at("job"), "vllm-llama-3-1-8b-long");
  EXPECT_EQ(s.metrics.prometheus->label_matchers.at("namespace"), "llm");
}

TEST(SpecLoaderSamples, EmbeddedCrdIsTheFileInDeploy) {
  // The binary validates against the CRD it was built with; a stale build would disagree.
  EXPECT_EQ(InferenceAutoscalerCrdYaml(), ReadFile(kCrdPath));
}

// ---- Defaults --------------------------------------------------------------------------------

TEST(SpecLoaderDefaults, MinimalManifestGetsTheSchemaDefaults) {
  absl::StatusOr<InferenceAutoscaler> ias =
      ParseInferenceAutoscaler(Manifest("maxReplicas: 8"), "minimal.yaml");
  ASSERT_TRUE(ias.ok()) << ias.status();
  const InferenceAutoscalerSpec& s = ias->spec;
  EXPECT_EQ(ias->metadata.name, "test");
  EXPECT_EQ(ias->metadata.namespace_, "");
  EXPECT_EQ(s.max_replicas, 8);
  // Expected values from the CRD's `default`s (docs/operations.md "Tuning the
  // InferenceAutoscaler").
  EXPECT_EQ(s.mode, Mode::kRecommend);
  EXPECT_EQ(s.min_replicas, 1);
  EXPECT_EQ(s.routing, Routing::kRandom);
  EXPECT_EQ(s.slo.ttft.threshold, absl::Milliseconds(500));
  EXPECT_EQ(s.slo.ttft.percentile, 90);
  EXPECT_EQ(s.slo.ttft.per_prompt_token, absl::ZeroDuration());
  EXPECT_EQ(s.slo.ttft.surplus_window, absl::Minutes(30));
  EXPECT_FALSE(s.slo.itl.has_value());
  EXPECT_EQ(s.slo.target.requests, 95);
  EXPECT_EQ(s.slo.target.minutes, 95);
  EXPECT_EQ(s.slo.target.window, absl::Hours(24));
  ExpectRules(s.scale_up, ScalingRules{absl::ZeroDuration(),
                                       {{ScalingPolicy::Type::kPods, 4, absl::Seconds(15)},
                                        {ScalingPolicy::Type::kPercent, 100, absl::Seconds(15)}},
                                       SelectPolicy::kMax});
  ExpectRules(s.scale_down.rules,
              ScalingRules{absl::Seconds(300), {}, SelectPolicy::kMax});  // own rate
  EXPECT_EQ(s.scale_down.safety_margin, 0.8);
  EXPECT_EQ(s.limits.queue_depth_per_replica, 4);
  EXPECT_EQ(s.limits.kv_cache_utilization, 0.85);
  EXPECT_FALSE(s.limits.enforce_on_scale_up);
  EXPECT_FALSE(s.warmup.expected.has_value());
  EXPECT_FALSE(s.admission.enabled);
  EXPECT_FALSE(s.admission.max_queue_per_replica.has_value());
  EXPECT_EQ(s.metrics.source, MetricsSourceKind::kPods);
  EXPECT_EQ(s.metrics.port, 8000);
  EXPECT_EQ(s.metrics.path, "/metrics");
  EXPECT_FALSE(s.metrics.prometheus.has_value());
  EXPECT_EQ(s.metrics.interval, absl::Seconds(15));
  EXPECT_EQ(s.metrics.stale_after, absl::Seconds(45));
  // Model overrides have no schema default: they come from the profile or the pods.
  EXPECT_FALSE(s.model.tensor_parallel.has_value());
  EXPECT_FALSE(s.model.max_num_seqs.has_value());
  EXPECT_FALSE(s.model.max_num_batched_tokens.has_value());
  EXPECT_FALSE(s.model.gpu_memory_utilization.has_value());
  EXPECT_FALSE(s.model.block_size.has_value());
}

TEST(SpecLoaderDefaults, CxxInitializersMatchTheSchema) {
  // A spec built in code must behave like a manifest that leaves every optional field out.
  absl::StatusOr<InferenceAutoscaler> ias =
      ParseInferenceAutoscaler(Manifest("maxReplicas: 1"), "minimal.yaml");
  ASSERT_TRUE(ias.ok()) << ias.status();
  const InferenceAutoscalerSpec& got = ias->spec;
  const InferenceAutoscalerSpec want;
  EXPECT_EQ(got.mode, want.mode);
  EXPECT_EQ(got.min_replicas, want.min_replicas);
  EXPECT_EQ(got.max_replicas, want.max_replicas);
  EXPECT_EQ(got.routing, want.routing);
  EXPECT_EQ(got.slo.ttft.threshold, want.slo.ttft.threshold);
  EXPECT_EQ(got.slo.ttft.percentile, want.slo.ttft.percentile);
  EXPECT_EQ(got.slo.ttft.per_prompt_token, want.slo.ttft.per_prompt_token);
  EXPECT_EQ(got.slo.ttft.surplus_window, want.slo.ttft.surplus_window);
  EXPECT_EQ(got.slo.target.requests, want.slo.target.requests);
  EXPECT_EQ(got.slo.target.minutes, want.slo.target.minutes);
  EXPECT_EQ(got.slo.target.window, want.slo.target.window);
  ExpectRules(got.scale_up, want.scale_up);
  ExpectRules(got.scale_down.rules, want.scale_down.rules);
  EXPECT_EQ(got.scale_down.safety_margin, want.scale_down.safety_margin);
  EXPECT_EQ(got.limits.queue_depth_per_replica, want.limits.queue_depth_per_replica);
  EXPECT_EQ(got.limits.kv_cache_utilization, want.limits.kv_cache_utilization);
  EXPECT_EQ(got.limits.enforce_on_scale_up, want.limits.enforce_on_scale_up);
  EXPECT_EQ(got.admission.enabled, want.admission.enabled);
  EXPECT_EQ(got.metrics.source, want.metrics.source);
  EXPECT_EQ(got.metrics.port, want.metrics.port);
  EXPECT_EQ(got.metrics.path, want.metrics.path);
  EXPECT_EQ(got.metrics.interval, want.metrics.interval);
  EXPECT_EQ(got.metrics.stale_after, want.metrics.stale_after);
  // And the shared helpers in scaling_rules.h are the schema's defaults.
  ExpectRules(got.scale_up, HpaDefaultScaleUp());
  ExpectRules(got.scale_down.rules, TwinscaleDefaultScaleDown());
}

TEST(SpecLoaderDefaults, DefaultsFillPartialObjects) {
  struct Case {
    std::string name;
    std::string spec;
    void (*check)(const InferenceAutoscalerSpec&);
  };
  const std::vector<Case> cases = {
      {"a scaleDown with only a window keeps twinscale's own rate and the default margin",
       "maxReplicas: 8\nscaleDown: {stabilizationWindowSeconds: 60}",
       [](const InferenceAutoscalerSpec& s) {
         EXPECT_EQ(s.scale_down.rules.stabilization_window, absl::Seconds(60));
         EXPECT_TRUE(s.scale_down.rules.policies.empty());
         EXPECT_EQ(s.scale_down.safety_margin, 0.8);
       }},
      {"policies given replace the default list as a whole (atomic list)",
       "maxReplicas: 8\nscaleUp:\n  policies:\n  - {type: Pods, value: 2, periodSeconds: 30}",
       [](const InferenceAutoscalerSpec& s) {
         ASSERT_EQ(s.scale_up.policies.size(), 1u);
         EXPECT_EQ(s.scale_up.policies[0].value, 2);
         EXPECT_EQ(s.scale_up.policies[0].period, absl::Seconds(30));
         EXPECT_EQ(s.scale_up.stabilization_window, absl::ZeroDuration());
         EXPECT_EQ(s.scale_up.select, SelectPolicy::kMax);
       }},
      {"selectPolicy Disabled and Min",
       "maxReplicas: 8\nscaleUp: {selectPolicy: Min}\nscaleDown: {selectPolicy: Disabled}",
       [](const InferenceAutoscalerSpec& s) {
         EXPECT_EQ(s.scale_up.select, SelectPolicy::kMin);
         EXPECT_EQ(s.scale_down.rules.select, SelectPolicy::kDisabled);
       }},
      {"a null slo is pruned, then defaulted like a missing one (non-nullable with default {})",
       "maxReplicas: 8\nslo:",
       [](const InferenceAutoscalerSpec& s) {
         EXPECT_EQ(s.slo.ttft.threshold, absl::Milliseconds(500));
       }},
      {"a null object without a default is pruned, not an error", "maxReplicas: 8\nwarmup:",
       [](const InferenceAutoscalerSpec& s) { EXPECT_FALSE(s.warmup.expected.has_value()); }},
      {"a ttft with only perPromptToken keeps the default threshold and percentile",
       "maxReplicas: 8\nslo: {ttft: {perPromptToken: 0.1ms}}",
       [](const InferenceAutoscalerSpec& s) {
         EXPECT_EQ(s.slo.ttft.threshold, absl::Milliseconds(500));
         EXPECT_EQ(s.slo.ttft.percentile, 90);
         EXPECT_EQ(s.slo.ttft.per_prompt_token, absl::Microseconds(100));
         EXPECT_EQ(s.slo.ttft.surplus_window, absl::Minutes(30));
       }},
      {"clearlySafeWindow: 3m by default, 0s turns the early scale-in off, 90s shortens it",
       "maxReplicas: 8\nscaleDown: {safetyMargin: 0.9}",
       [](const InferenceAutoscalerSpec& s) {
         EXPECT_EQ(s.scale_down.clearly_safe_window, absl::Minutes(3));
         EXPECT_EQ(s.scale_down.safety_margin, 0.9);
       }},
      {"clearlySafeWindow 0s", "maxReplicas: 8\nscaleDown: {clearlySafeWindow: 0s}",
       [](const InferenceAutoscalerSpec& s) {
         EXPECT_EQ(s.scale_down.clearly_safe_window, absl::ZeroDuration());
         EXPECT_EQ(s.scale_down.safety_margin, 0.8);
       }},
      {"clearlySafeWindow 90s", "maxReplicas: 8\nscaleDown: {clearlySafeWindow: 90s}",
       [](const InferenceAutoscalerSpec& s) {
         EXPECT_EQ(s.scale_down.clearly_safe_window, absl::Seconds(90));
         EXPECT_EQ(s.scale_down.rules.stabilization_window, absl::Seconds(300));
       }},
      {"surplusWindow 0s turns the surplus off; 1h judges it over the last hour",
       "maxReplicas: 8\nslo: {ttft: {surplusWindow: 0s}}",
       [](const InferenceAutoscalerSpec& s) {
         EXPECT_EQ(s.slo.ttft.surplus_window, absl::ZeroDuration());
         EXPECT_EQ(s.slo.ttft.threshold, absl::Milliseconds(500));
       }},
      {"a target with only requests keeps the default minutes and window",
       "maxReplicas: 8\nslo: {target: {requests: 99}}",
       [](const InferenceAutoscalerSpec& s) {
         EXPECT_EQ(s.slo.target.requests, 99);
         EXPECT_EQ(s.slo.target.minutes, 95);
         EXPECT_EQ(s.slo.target.window, absl::Hours(24));
         EXPECT_EQ(s.slo.ttft.percentile, 90);  // the ttft objective is untouched
       }},
      {"a target with only minutes (0: the minutes are not judged)",
       "maxReplicas: 8\nslo: {target: {minutes: 0}}",
       [](const InferenceAutoscalerSpec& s) {
         EXPECT_EQ(s.slo.target.requests, 95);
         EXPECT_EQ(s.slo.target.minutes, 0);
         EXPECT_EQ(s.slo.target.window, absl::Hours(24));
       }},
      {"a target with only a window, at the 7-day maximum",
       "maxReplicas: 8\nslo: {target: {window: 168h}}",
       [](const InferenceAutoscalerSpec& s) {
         EXPECT_EQ(s.slo.target.requests, 95);
         EXPECT_EQ(s.slo.target.minutes, 95);
         EXPECT_EQ(s.slo.target.window, absl::Hours(168));
       }},
      {"a target with every field, beside a ttft objective",
       "maxReplicas: 8\nslo:\n  ttft: {percentile: 95}\n  target: {requests: 99.5, minutes: 100, "
       "window: 1h30m}",
       [](const InferenceAutoscalerSpec& s) {
         EXPECT_EQ(s.slo.target.requests, 99.5);
         EXPECT_EQ(s.slo.target.minutes, 100);
         EXPECT_EQ(s.slo.target.window, absl::Minutes(90));
         EXPECT_EQ(s.slo.ttft.percentile, 95);
       }},
      {"yes is a string where a string is expected (YAML 1.2), not true",
       "maxReplicas: 8\nmetrics: {source: Prometheus, prometheus: {url: 'http://p:9090', "
       "labelMatchers: {canary: yes}}}",
       [](const InferenceAutoscalerSpec& s) {
         ASSERT_TRUE(s.metrics.prometheus.has_value());
         EXPECT_EQ(s.metrics.prometheus->label_matchers.at("canary"), "yes");
       }},
      {"every mode and routing spelling", "maxReplicas: 8\nmode: KEDA\nrouting: LeastRequests",
       [](const InferenceAutoscalerSpec& s) {
         EXPECT_EQ(s.mode, Mode::kKeda);
         EXPECT_EQ(s.routing, Routing::kLeastRequests);
       }},
      {"model overrides are read",
       "maxReplicas: 8\nmodel: {profile: llama-3.1-70b-h100-sxm-tp4, tensorParallel: 8, "
       "maxNumSeqs: 128, gpuMemoryUtilization: 0.95, blockSize: 32, maxModelLen: 8192}",
       [](const InferenceAutoscalerSpec& s) {
         EXPECT_EQ(s.model.profile, "llama-3.1-70b-h100-sxm-tp4");
         EXPECT_EQ(s.model.tensor_parallel, 8);
         EXPECT_EQ(s.model.max_num_seqs, 128);
         EXPECT_EQ(s.model.gpu_memory_utilization, 0.95);
         EXPECT_EQ(s.model.block_size, 32);
         EXPECT_EQ(s.model.max_model_len, 8192);
       }},
      {"an integer written as 8.0 is an integer (as the API server's JSON decoder sees it)",
       "maxReplicas: 8.0", [](const InferenceAutoscalerSpec& s) { EXPECT_EQ(s.max_replicas, 8); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // Manifest() already holds a model line; the model-overrides row replaces it.
    std::string yaml = Manifest(c.spec);
    if (c.spec.find("model:") != std::string::npos) {
      yaml = absl::StrReplaceAll(yaml, {{"  model: {profile: llama-3.1-8b-h100-sxm-tp1}\n", ""}});
    }
    absl::StatusOr<InferenceAutoscaler> ias = ParseInferenceAutoscaler(yaml, "case.yaml");
    ASSERT_TRUE(ias.ok()) << ias.status();
    c.check(ias->spec);
  }
}

TEST(SpecLoaderDurations, ParsedWithAbslParseDuration) {
  struct Case {
    std::string text;
    absl::Duration want;
  };
  const std::vector<Case> cases = {
      {"500ms", absl::Milliseconds(500)},
      {"5m", absl::Minutes(5)},
      {"1h30m", absl::Minutes(90)},
      {"1.5s", absl::Milliseconds(1500)},
      {"250us", absl::Microseconds(250)},
      {"100ns", absl::Nanoseconds(100)},
      {"2h", absl::Hours(2)},
      {"1m0.5s", absl::Milliseconds(60500)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<InferenceAutoscaler> ias = ParseInferenceAutoscaler(
        Manifest(absl::StrCat("maxReplicas: 8\nwarmup: {expected: ", c.text, "}")), "d.yaml");
    ASSERT_TRUE(ias.ok()) << ias.status();
    EXPECT_EQ(ias->spec.warmup.expected, c.want);
  }
}

// ---- Documents -------------------------------------------------------------------------------

TEST(SpecLoaderDocuments, MultiDocumentFileSkipsOtherKinds) {
  const std::string yaml = absl::StrCat(
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: vllm}\nspec: {replicas: 2}\n---\n",
      absl::StrReplaceAll(Manifest("maxReplicas: 4"), {{"name: test", "name: first"}}),
      "---\napiVersion: v1\nkind: Service\nmetadata: {name: vllm}\n---\n",
      "apiVersion: example.com/v1\nkind: InferenceAutoscaler\nmetadata: {name: theirs}\n"
      "spec: {anything: goes}\n---\n",
      absl::StrReplaceAll(Manifest("maxReplicas: 6"), {{"name: test", "name: second"}}), "---\n");
  absl::StatusOr<std::vector<InferenceAutoscaler>> all = ParseInferenceAutoscalers(yaml, "m.yaml");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].metadata.name, "first");
  EXPECT_EQ((*all)[0].spec.max_replicas, 4);
  EXPECT_EQ((*all)[1].metadata.name, "second");
  EXPECT_EQ((*all)[1].spec.max_replicas, 6);

  absl::StatusOr<InferenceAutoscaler> one = ParseInferenceAutoscaler(yaml, "m.yaml");
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(one.status().message()), HasSubstr("found 2"));
}

TEST(SpecLoaderDocuments, NoInferenceAutoscaler) {
  absl::StatusOr<std::vector<InferenceAutoscaler>> all = ParseInferenceAutoscalers(
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: vllm}\n", "d.yaml");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(all->empty());
  EXPECT_TRUE(ParseInferenceAutoscalers("", "empty.yaml").value().empty());
  absl::StatusOr<InferenceAutoscaler> one = ParseInferenceAutoscaler("", "empty.yaml");
  ASSERT_FALSE(one.ok());
  EXPECT_THAT(std::string(one.status().message()), HasSubstr("found 0"));
  // The CRD itself is a file of another kind.
  EXPECT_TRUE(ParseInferenceAutoscalers(InferenceAutoscalerCrdYaml(), kCrdPath).value().empty());
}

TEST(SpecLoaderDocuments, ListOfItemsAsKubectlGetWritesIt) {
  const std::string yaml =
      "apiVersion: v1\n"
      "kind: List\n"
      "items:\n"
      "- apiVersion: twinscale.io/v1alpha1\n"
      "  kind: InferenceAutoscaler\n"
      "  metadata:\n"
      "    name: a\n"
      "    namespace: llm\n"
      "    uid: 0b6a6a52-8a3e-4a4e-9d59-6b1e4f7bd5d1\n"
      "    generation: 3\n"
      "    resourceVersion: \"81234\"\n"
      "    creationTimestamp: \"2025-01-02T03:04:05Z\"\n"
      "    annotations: {note: hello}\n"
      "    managedFields: [{manager: kubectl, operation: Update}]\n"
      "  spec:\n"
      "    targetRef: {apiVersion: apps/v1, kind: Deployment, name: vllm}\n"
      "    maxReplicas: 3\n"
      "    model: {profile: llama-3.1-8b-h100-sxm-tp1}\n"
      "  status:\n"
      "    currentReplicas: 2\n"
      "    whatever: the status is ignored, as the API server ignores it on create\n";
  absl::StatusOr<std::vector<InferenceAutoscaler>> all = ParseInferenceAutoscalers(yaml, "l.yaml");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 1u);
  const ObjectMeta& m = (*all)[0].metadata;
  EXPECT_EQ(m.name, "a");
  EXPECT_EQ(m.namespace_, "llm");
  EXPECT_EQ(m.uid, "0b6a6a52-8a3e-4a4e-9d59-6b1e4f7bd5d1");
  EXPECT_EQ(m.generation, 3);
  EXPECT_EQ(m.resource_version, "81234");
  EXPECT_EQ(m.annotations.at("note"), "hello");
}

TEST(SpecLoaderDocuments, ErrorLinesCountFromTheStartOfTheFile) {
  // Documents are parsed one at a time; the line must still be the file's, not the document's.
  const std::string yaml = absl::StrCat(
      "# a comment\n"                                                     // 1
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: vllm}\n",  // 2-4
      "---\n",                                                            // 5
      Manifest("maxReplicas: 8\nminReplicas: 0"));                        // 6-14: minReplicas on 14
  absl::StatusOr<std::vector<InferenceAutoscaler>> got = ParseInferenceAutoscalers(yaml, "f.yaml");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr("f.yaml:14: spec.minReplicas: must be >= 1, got 0"));
  // And a syntax error in the second document.
  const std::string broken = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\na: [1,\n";
  got = ParseInferenceAutoscalers(broken, "f.yaml");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("f.yaml:6:1: YAML syntax error"));
}

TEST(SpecLoaderDocuments, DocumentEndMarkersSplitToo) {
  // "..." ends a document; what follows is another document, never silently dropped.
  const std::string yaml = absl::StrCat(Manifest("maxReplicas: 8"), "...\n# nothing more\n");
  absl::StatusOr<std::vector<InferenceAutoscaler>> got = ParseInferenceAutoscalers(yaml, "e.yaml");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), 1u);
  got = ParseInferenceAutoscalers(absl::StrCat(Manifest("maxReplicas: 8"), "...\nstray: 1\n"),
                                  "e.yaml");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr("e.yaml:10: a Kubernetes object needs string apiVersion and kind"));
  // "--- " with content on the marker line starts a document too, and a block scalar whose
  // lines merely contain dashes is not cut.
  got = ParseInferenceAutoscalers(
      absl::StrCat("--- # first\n", Manifest("maxReplicas: 8"),
                   "--- {apiVersion: v1, kind: "
                   "ConfigMap, metadata: {name: c}, data: {k: \"a\\n---b\"}}\n"),
      "e.yaml");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), 1u);
}

TEST(SpecLoaderDocuments, InputsThatHangYamlCppLoadAllReturn) {
  // yaml-cpp 0.7's LoadAll loops forever, allocating, on these (jbeder/yaml-cpp#1319, falco#3281);
  // the loader must return, with whatever verdict.
  for (const std::string& yaml :
       {std::string(",\n"),
        std::string(
            "- macro: m\n  condition:\n    (a in (\n\"x\",\n    \"y\"\n    )  )  \n    )")}) {
    SCOPED_TRACE(yaml);
    (void)ParseInferenceAutoscalers(yaml, "hang.yaml");
  }
}

TEST(SpecLoaderDocuments, MissingFileIsNotFound) {
  absl::StatusOr<InferenceAutoscaler> ias = LoadInferenceAutoscalerFile("no/such/file.yaml");
  EXPECT_EQ(ias.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(ias.status().message()), HasSubstr("no/such/file.yaml"));
}

// ---- Bad input -------------------------------------------------------------------------------

struct BadCase {
  std::string name;               // why the input is bad
  std::string yaml;               // a whole manifest
  std::vector<std::string> want;  // substrings of the error: the field path and the complaint
};

std::vector<BadCase> BadCases() {
  const auto m = [](std::string_view spec_lines) { return Manifest(spec_lines); };
  return {
      {"wrong type: minReplicas quoted is a string, not an integer",
       m("maxReplicas: 8\nminReplicas: \"2\""),
       {"bad.yaml:9: spec.minReplicas: must be of type integer, got string \"2\""}},
      {"wrong type: maxReplicas is a word",
       m("maxReplicas: many"),
       {"spec.maxReplicas: must be of type integer, got string \"many\""}},
      {"wrong type: targetRef is a string",
       absl::StrReplaceAll(m("maxReplicas: 8"),
                           {{"{apiVersion: apps/v1, kind: Deployment, name: vllm}", "vllm"}}),
       {"bad.yaml:6: spec.targetRef: must be of type object, got string \"vllm\""}},
      {"enum typo in mode",
       m("maxReplicas: 8\nmode: Drect"),
       {"bad.yaml:9: spec.mode: must be one of \"Direct\", \"KEDA\", \"HPA\", \"Recommend\", got "
        "\"Drect\" (did you mean \"Direct\"?)"}},
      {"enum values are case-sensitive",
       m("maxReplicas: 8\nrouting: roundrobin"),
       {"spec.routing: must be one of", "(did you mean \"RoundRobin\"?)"}},
      {"negative minReplicas",
       m("maxReplicas: 8\nminReplicas: -1"),
       {"spec.minReplicas: must be >= 1, got -1"}},
      {"zero minReplicas: scale-to-zero is out of scope",
       m("maxReplicas: 8\nminReplicas: 0"),
       {"spec.minReplicas: must be >= 1, got 0"}},
      {"maxReplicas below minReplicas",
       m("minReplicas: 4\nmaxReplicas: 2"),
       {"bad.yaml:9: spec.maxReplicas: must be >= spec.minReplicas (4), got 2"}},
      {"typo maxReplica: unknown, and the required maxReplicas is then missing",
       m("maxReplica: 8"),
       {"bad.yaml:8: spec.maxReplica: unknown field (did you mean \"maxReplicas\"?)",
        "spec.maxReplicas: required field is missing"}},
      {"unknown nested field",
       m("maxReplicas: 8\nslo:\n  ttft:\n    treshold: 400ms"),
       {"bad.yaml:11: spec.slo.ttft.treshold: unknown field (did you mean \"threshold\"?)"}},
      {"duplicate key", m("maxReplicas: 8\nmaxReplicas: 9"), {"spec.maxReplicas: duplicate key"}},
      {"bad duration: words instead of a unit",
       m("maxReplicas: 8\nwarmup: {expected: 5 minutes}"),
       {"bad.yaml:9: spec.warmup.expected: must be a duration such as 500ms, 5m or 1h30m",
        "got \"5 minutes\""}},
      {"bad duration: a bare number has no unit",
       m("maxReplicas: 8\nslo: {ttft: {threshold: 500}}"),
       {"spec.slo.ttft.threshold: must be of type string, got integer 500 (a duration needs a "
        "unit"}},
      {"bad duration: the surplus window in words",
       m("maxReplicas: 8\nslo: {ttft: {surplusWindow: half an hour}}"),
       {"spec.slo.ttft.surplusWindow: must be a duration such as 500ms, 5m or 1h30m",
        "got \"half an hour\""}},
      {"bad duration: the clearly-safe window in words",
       m("maxReplicas: 8\nscaleDown: {clearlySafeWindow: three minutes}"),
       {"spec.scaleDown.clearlySafeWindow: must be a duration such as 500ms, 5m or 1h30m",
        "got \"three minutes\""}},
      {"bad duration: negative",
       m("maxReplicas: 8\nmetrics: {interval: -15s}"),
       {"spec.metrics.interval: must be a duration"}},
      {"percentile 0: must be above 0",
       m("maxReplicas: 8\nslo: {ttft: {percentile: 0}}"),
       {"spec.slo.ttft.percentile: must be > 0, got 0"}},
      {"percentile 101: above 100",
       m("maxReplicas: 8\nslo: {ttft: {percentile: 101}}"),
       {"spec.slo.ttft.percentile: must be <= 100, got 101"}},
      {"target requests 0: must be above 0",
       m("maxReplicas: 8\nslo: {target: {requests: 0}}"),
       {"bad.yaml:9: spec.slo.target.requests: must be > 0, got 0"}},
      {"target requests above 100",
       m("maxReplicas: 8\nslo: {target: {requests: 100.5}}"),
       {"spec.slo.target.requests: must be <= 100, got 100.5"}},
      {"target requests of the wrong type",
       m("maxReplicas: 8\nslo: {target: {requests: \"95%\"}}"),
       {"spec.slo.target.requests: must be of type number, got string \"95%\""}},
      {"target minutes negative",
       m("maxReplicas: 8\nslo: {target: {minutes: -1}}"),
       {"spec.slo.target.minutes: must be >= 0, got -1"}},
      {"target minutes above 100",
       m("maxReplicas: 8\nslo: {target: {minutes: 101}}"),
       {"spec.slo.target.minutes: must be <= 100, got 101"}},
      {"target minutes of the wrong type",
       m("maxReplicas: 8\nslo: {target: {minutes: [95]}}"),
       {"spec.slo.target.minutes: must be of type number, got a list"}},
      {"target window in words",
       m("maxReplicas: 8\nslo: {target: {window: a day}}"),
       {"bad.yaml:9: spec.slo.target.window: must be a duration such as 500ms, 5m or 1h30m",
        "got \"a day\""}},
      {"target window as a bare number",
       m("maxReplicas: 8\nslo: {target: {window: 24}}"),
       {"spec.slo.target.window: must be of type string, got integer 24 (a duration needs a "
        "unit"}},
      {"target window 0: nothing to judge over",
       m("maxReplicas: 8\nslo: {target: {window: 0s}}"),
       {"bad.yaml:9: spec.slo.target.window: must be longer than 0"}},
      {"target window beyond 7 days",
       m("maxReplicas: 8\nslo: {target: {window: 169h}}"),
       {"bad.yaml:9: spec.slo.target.window: must be at most 168h (7 days), got 169h"}},
      {"unknown field in the target",
       m("maxReplicas: 8\nslo:\n  target:\n    request: 99"),
       {"bad.yaml:11: spec.slo.target.request: unknown field (did you mean \"requests\"?)"}},
      {"policy period 0 in the second scale-down policy",
       m("maxReplicas: 8\nscaleDown:\n  policies:\n  - {type: Pods, value: 1, periodSeconds: 60}\n"
         "  - {type: Percent, value: 10, periodSeconds: 0}"),
       {"bad.yaml:12: spec.scaleDown.policies[1].periodSeconds: must be >= 1, got 0"}},
      {"policy without periodSeconds",
       m("maxReplicas: 8\nscaleUp:\n  policies:\n  - {type: Pods, value: 2}"),
       {"bad.yaml:11: spec.scaleUp.policies[0].periodSeconds: required field is missing"}},
      {"empty policy list",
       m("maxReplicas: 8\nscaleUp: {policies: []}"),
       {"spec.scaleUp.policies: must have at least 1 item, got 0"}},
      {"policy type typo",
       m("maxReplicas: 8\nscaleUp: {policies: [{type: Pod, value: 2, "
         "periodSeconds: 15}]}"),
       {"spec.scaleUp.policies[0].type: must be one of \"Pods\", \"Percent\""}},
      {"stabilization window beyond an hour",
       m("maxReplicas: 8\nscaleDown: {stabilizationWindowSeconds: 7200}"),
       {"spec.scaleDown.stabilizationWindowSeconds: must be <= 3600, got 7200"}},
      {"safety margin 0 would never scale in",
       m("maxReplicas: 8\nscaleDown: {safetyMargin: 0}"),
       {"spec.scaleDown.safetyMargin: must be > 0, got 0"}},
      {"safety margin above 1 is no margin",
       m("maxReplicas: 8\nscaleDown: {safetyMargin: 1.5}"),
       {"spec.scaleDown.safetyMargin: must be <= 1, got 1.5"}},
      {"YAML 1.1 yes is not a boolean here",
       m("maxReplicas: 8\nlimits: {enforceOnScaleUp: yes}"),
       {"spec.limits.enforceOnScaleUp: must be of type boolean, got string \"yes\" (yes/no/on/off "
        "are strings here: write true or false)"}},
      {"KV limit above 1",
       m("maxReplicas: 8\nlimits: {kvCacheUtilization: 1.2}"),
       {"spec.limits.kvCacheUtilization: must be <= 1, got 1.2"}},
      {"Prometheus source without a prometheus block",
       m("maxReplicas: 8\nmetrics: {source: "
         "Prometheus}"),
       {"bad.yaml:9: spec.metrics.prometheus.url: required when spec.metrics.source is "
        "Prometheus"}},
      {"prometheus block without its url",
       m("maxReplicas: 8\nmetrics:\n  source: Prometheus\n  prometheus: {labelMatchers: {a: b}}"),
       {"bad.yaml:11: spec.metrics.prometheus.url: required field is missing"}},
      {"prometheus url without a scheme",
       m("maxReplicas: 8\nmetrics: {prometheus: {url: 'prometheus:9090'}}"),
       {"spec.metrics.prometheus.url: must match the pattern"}},
      {"label matcher value not a string",
       m("maxReplicas: 8\nmetrics: {prometheus: {url: 'http://p', labelMatchers: {shard: 3}}}"),
       {"spec.metrics.prometheus.labelMatchers[shard]: must be of type string, got integer 3 "
        "(quote it to make it a string)"}},
      {"label matcher name invalid in PromQL",
       m("maxReplicas: 8\nmetrics: {prometheus: {url: 'http://p', labelMatchers: {app-name: x}}}"),
       {"spec.metrics.prometheus.labelMatchers[app-name]: is not a valid Prometheus label name"}},
      {"staleAfter not longer than interval: every input would always be stale",
       m("maxReplicas: 8\nmetrics: {interval: 30s, staleAfter: 30s}"),
       {"spec.metrics.staleAfter: must be longer than spec.metrics.interval (30s), got 30s"}},
      {"zero TTFT threshold can never be met",
       m("maxReplicas: 8\nslo: {ttft: {threshold: 0ms}}"),
       {"spec.slo.ttft.threshold: must be longer than 0"}},
      {"itl without its threshold",
       m("maxReplicas: 8\nslo: {itl: {percentile: 99}}"),
       {"spec.slo.itl.threshold: required field is missing"}},
      {"metrics path without the leading slash",
       m("maxReplicas: 8\nmetrics: {path: metrics}"),
       {"spec.metrics.path: must match the pattern ^/, got \"metrics\""}},
      {"port out of range",
       m("maxReplicas: 8\nmetrics: {port: 70000}"),
       {"spec.metrics.port: must be <= 65535, got 70000"}},
      {"block size vLLM doesn't offer",
       absl::StrReplaceAll(m("maxReplicas: 8"), {{"{profile: llama-3.1-8b-h100-sxm-tp1}",
                                                  "{profile: p, blockSize: 12}"}}),
       {"spec.model.blockSize: must be one of 1, 8, 16, 32, 64, 128, got 12"}},
      {"a context no request fits in",
       absl::StrReplaceAll(m("maxReplicas: 8"), {{"{profile: llama-3.1-8b-h100-sxm-tp1}",
                                                  "{profile: p, maxModelLen: 1}"}}),
       {"spec.model.maxModelLen: must be >= 2, got 1"}},
      {"maxReplicas beyond int32",
       m("maxReplicas: 3000000000"),
       {"spec.maxReplicas: must fit in a 32-bit integer, got 3000000000"}},
      {"fractional replicas",
       m("maxReplicas: 2.5"),
       {"spec.maxReplicas: must be an integer, got 2.5"}},
      {"empty target name",
       absl::StrReplaceAll(m("maxReplicas: 8"), {{"name: vllm}", "name: \"\"}"}}),
       {"bad.yaml:6: spec.targetRef.name: must not be empty"}},
      {"profile missing from model",
       absl::StrReplaceAll(m("maxReplicas: 8"), {{"{profile: llama-3.1-8b-h100-sxm-tp1}", "{}"}}),
       {"bad.yaml:7: spec.model.profile: required field is missing"}},
      {"targetRef missing",
       absl::StrReplaceAll(
           m("maxReplicas: 8"),
           {{"  targetRef: {apiVersion: apps/v1, kind: Deployment, name: vllm}\n", ""}}),
       {"bad.yaml:5: spec.targetRef: required field is missing"}},
      {"spec missing",
       "apiVersion: twinscale.io/v1alpha1\nkind: InferenceAutoscaler\n"
       "metadata: {name: x}\n",
       {"bad.yaml:1: spec: required field is missing"}},
      {"spec is a list",
       "apiVersion: twinscale.io/v1alpha1\nkind: InferenceAutoscaler\n"
       "metadata: {name: x}\nspec: [1, 2]\n",
       {"bad.yaml:4: spec: must be of type object, got a list"}},
      {"metadata without a name",
       absl::StrReplaceAll(m("maxReplicas: 8"), {{"  name: test\n", "  namespace: llm\n"}}),
       {"bad.yaml:3: metadata.name: required field is missing"}},
      {"object name not a DNS-1123 subdomain",
       absl::StrReplaceAll(m("maxReplicas: 8"), {{"name: test", "name: Bad_Name"}}),
       {"bad.yaml:4: metadata.name: must match the pattern"}},
      {"metadata typo",
       absl::StrReplaceAll(m("maxReplicas: 8"), {{"name: test",
                                                  "name: test\n"
                                                  "  namspace: llm"}}),
       {"bad.yaml:5: metadata.namspace: unknown field (did you mean \"namespace\"?)"}},
      {"label value not a string",
       absl::StrReplaceAll(m("maxReplicas: 8"),
                           {{"name: test", "name: test\n  labels: {tier: 1}"}}),
       {"metadata.labels[tier]: must be of type string, got integer 1"}},
      {"unknown top-level field",
       m("maxReplicas: 8") + "specs: {}\n",
       {"bad.yaml:9: specs: unknown field"}},
      {"a version this build doesn't serve",
       absl::StrReplaceAll(m("maxReplicas: 8"), {{"v1alpha1", "v1beta1"}}),
       {"bad.yaml:1: apiVersion: twinscale.io/v1beta1 is not served by this build"}},
      {"not an object at all", "- just\n- a list\n", {"bad.yaml:1: expected a Kubernetes object"}},
      {"an object without kind",
       "apiVersion: v1\nmetadata: {name: x}\n",
       {"needs string apiVersion and kind"}},
      {"several errors are all reported, each with its line",
       m("maxReplicas: 8\nminReplicas: 0\nmode: Auto"),
       {"bad.yaml:9: spec.minReplicas: must be >= 1, got 0",
        "bad.yaml:10: spec.mode: must be one of"}},
      {"YAML syntax error: an unterminated flow mapping",
       "apiVersion: twinscale.io/v1alpha1\nkind: InferenceAutoscaler\nmetadata:\n  name: x\n"
       "spec:\n  targetRef: {apiVersion: apps/v1, kind: Deployment\n  maxReplicas: 3\n",
       {"bad.yaml:", "YAML syntax error"}},
      {"YAML syntax error: a second colon on line 8",
       m("maxReplicas: 8: 9"),
       {"bad.yaml:8:", "YAML syntax error: illegal map value"}},
      {"alias bomb: expands past the node budget",
       "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, "
       "*c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e]\n",
       {"bad.yaml:1: document has more than 100000 nodes"}},
  };
}

TEST(SpecLoaderBadInput, EachRowNamesTheField) {
  for (const BadCase& c : BadCases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::vector<InferenceAutoscaler>> got =
        ParseInferenceAutoscalers(c.yaml, "bad.yaml");
    ASSERT_FALSE(got.ok()) << "accepted:\n" << c.yaml;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    for (const std::string& want : c.want) {
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(want)) << "input:\n" << c.yaml;
    }
  }
}

TEST(SpecLoaderBadInput, SyntaxErrorLineIsOneBased) {
  // The flow mapping opened on line 6 is never closed; yaml-cpp reports where it gave up. Whatever
  // line that is, it must be 1-based and inside the document (lines 6 to 8).
  const std::string yaml =
      "apiVersion: twinscale.io/v1alpha1\nkind: InferenceAutoscaler\nmetadata:\n  name: x\n"
      "spec:\n  targetRef: {apiVersion: apps/v1, kind: Deployment\n  maxReplicas: 3\n";
  absl::StatusOr<InferenceAutoscaler> got = ParseInferenceAutoscaler(yaml, "s.yaml");
  ASSERT_FALSE(got.ok());
  const std::string message(got.status().message());
  ASSERT_EQ(message.rfind("s.yaml:", 0), 0u) << message;
  const int line = std::stoi(message.substr(7));
  EXPECT_GE(line, 6) << message;
  EXPECT_LE(line, 8) << message;
}

TEST(InferenceAutoscalerObjectTest, TheDocumentBecomesTheObjectWithTypedScalarsAndNoStatus) {
  // Beside a Deployment, in a file with two documents; quoted and unquoted scalars keep the types
  // the loader gives them; status is dropped as on create.
  const std::string yaml = R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm}
---
apiVersion: twinscale.io/v1alpha1
kind: InferenceAutoscaler
metadata:
  name: llama
  namespace: llm
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: vllm}
  minReplicas: 2
  maxReplicas: 8
  model: {profile: llama-3.1-8b-h100-sxm-tp1}
  scaleDown: {safetyMargin: 0.75}
  metrics: {interval: 15s}
status: {desiredReplicas: 3}
)";
  absl::StatusOr<nlohmann::json> o = InferenceAutoscalerObject(yaml, "two.yaml");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ((*o)["kind"], "InferenceAutoscaler");
  EXPECT_EQ((*o)["metadata"]["namespace"], "llm");
  EXPECT_TRUE((*o)["spec"]["minReplicas"].is_number_integer());
  EXPECT_EQ((*o)["spec"]["maxReplicas"], 8);
  EXPECT_DOUBLE_EQ((*o)["spec"]["scaleDown"]["safetyMargin"].get<double>(), 0.75);
  EXPECT_EQ((*o)["spec"]["metrics"]["interval"], "15s");
  EXPECT_FALSE(o->contains("status"));
  // The object loads back as the same spec.
  absl::StatusOr<InferenceAutoscaler> again = ParseInferenceAutoscaler(o->dump(), "object");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->spec.min_replicas, 2);
  EXPECT_EQ(again->spec.metrics.interval, absl::Seconds(15));
}

TEST(InferenceAutoscalerObjectTest, RefusesTextThatIsNotUtf8) {
  // The loader reads the bytes as YAML; an object is JSON, whose strings must be UTF-8.
  const std::string yaml = std::string(
                               "apiVersion: twinscale.io/v1alpha1\nkind: InferenceAutoscaler\n"
                               "metadata: {name: x}\nspec:\n  targetRef: {apiVersion: apps/v1, "
                               "kind: Deployment, name: \"w") +
                           "\xff" + "\"}\n  maxReplicas: 4\n  model: {profile: p}\n";
  ASSERT_TRUE(ParseInferenceAutoscaler(yaml, "x.yaml").ok());
  absl::StatusOr<nlohmann::json> o = InferenceAutoscalerObject(yaml, "x.yaml");
  ASSERT_FALSE(o.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(o.status()));
  EXPECT_THAT(o.status().message(), HasSubstr("not valid UTF-8"));
}

TEST(InferenceAutoscalerObjectTest, RefusesWhatTheLoaderRefusesWithItsError) {
  absl::StatusOr<nlohmann::json> o = InferenceAutoscalerObject(
      "apiVersion: twinscale.io/v1alpha1\nkind: InferenceAutoscaler\nmetadata: {name: x}\n"
      "spec: {maxReplicas: 0}\n",
      "bad.yaml");
  ASSERT_FALSE(o.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(o.status()));
  EXPECT_THAT(o.status().message(), HasSubstr("bad.yaml:"));
}

}  // namespace
}  // namespace twinscale::api
