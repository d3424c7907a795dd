// plan.json's document, the terminal table and the emitted InferenceAutoscaler, from a plan built
// by hand.
#include "controller/plan/plan_output.h"

#include <limits>
#include <string>

#include "controller/api/spec_loader.h"
#include "gtest/gtest.h"
#include "simulator/profiles/profile_loader.h"

namespace twinscale::plan {
namespace {

Cell MakeCell(int32_t scenario, int32_t profile, int32_t replicas, int32_t reserve) {
  Cell c;
  c.scenario = scenario;
  c.profile = profile;
  c.found = true;
  c.replicas = replicas;
  c.replicas_fewest = replicas - 1;
  c.replicas_per_seed = {replicas, replicas - 1};
  c.attainment_mean = 0.93;
  c.attainment_min = 0.91;
  c.attainment_max = 0.95;
  c.goodput_rps = 10.0 * replicas;
  c.goodput_per_gpu_rps = 10;
  c.cost_per_hour = 2.5 * replicas;
  c.cost_per_1k_successful = 0.0694;
  c.cost_per_million_output_tokens = 1.0 / 3;
  c.warm_reserve = reserve;
  c.headroom =
      Headroom(PerResource{10, 100, 100, 1000, 5}, PerResource{8, 50, 20, 900, 1}, replicas);
  c.improves = scenario == 0 ? "" : "nothing";
  c.worsens = scenario == 0 ? "" : "replicas needed 4 -> 9 (+125%)";
  return c;
}

PlanResult HandBuilt() {
  PlanResult p;
  p.review = "review.yaml";
  p.baseline = "synthetic";
  p.seeds = {1, 2};
  p.max_replicas = 64;
  absl::StatusOr<sim::ProfileRegistry> reg = sim::ProfileRegistry::LoadEmbedded();
  EXPECT_TRUE(reg.ok());
  ProfileSummary h100;
  h100.name = "h100";
  h100.deployment = *reg->Resolve("llama-3.1-8b-h100-sxm-tp1", {});
  h100.gpu_hour_price = 2.5;
  h100.ready_after_seconds = 45;
  p.profiles = {h100};
  ScenarioSummary base, launch;
  base.name = "baseline";
  base.changes = "none";
  launch.name = "launch </script><b>";
  launch.changes = "rate x2";
  p.scenarios = {base, launch};
  p.cells = {MakeCell(0, 0, 4, 1), MakeCell(1, 0, 9, 3)};
  return p;
}

Review ReviewFor() {
  Review r;
  r.source = "review.yaml";
  ProfileChoice c;
  c.name = "h100";
  c.profile = "llama-3.1-8b-h100-sxm-tp1";
  c.gpu_hour_price = 2.5;
  r.profiles = {c};
  return r;
}

TEST(PlanJson, CarriesEveryCellWithItsHeadroom) {
  const nlohmann::ordered_json j = PlanJson(HandBuilt(), 1.25);
  ASSERT_EQ(j["cells"].size(), 2u);
  const nlohmann::ordered_json& c = j["cells"][1];
  EXPECT_EQ(c["scenario"], "launch </script><b>");
  EXPECT_EQ(c["replicas"], 9);
  EXPECT_EQ(c["replicas_fewest"], 8);
  EXPECT_EQ(c["warm_reserve"], 3);
  EXPECT_EQ(c["headroom"]["planned_replicas"], 9);
  // Per replica 100 prefill tokens/s against 50 demanded, 9 replicas: 1 - 50 / 900.
  EXPECT_EQ(c["headroom"]["resources"][1]["resource"], "prefill");
  EXPECT_NEAR(c["headroom"]["resources"][1]["headroom"].get<double>(), 1 - 50.0 / 900, 1e-4);
  // The least headroom of prefill (94%), decode (98%), KV (900 of 9,000 tokens: 90%) and queue
  // (1 of 45: 98%): KV memory.
  EXPECT_EQ(c["headroom"]["binding"], "kv-memory");
  EXPECT_EQ(j["recommended_profile"], "h100");
  EXPECT_EQ(j["wall_seconds"], 1.25);
  EXPECT_EQ(j["profiles"][0]["tensor_parallel"], 1);
  EXPECT_FALSE(PlanJson(HandBuilt(), std::nullopt).contains("wall_seconds"));
}

TEST(PlanJson, ACostWithNothingServedIsNull) {
  PlanResult p = HandBuilt();
  p.cells[1].cost_per_1k_successful = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(PlanJson(p, std::nullopt)["cells"][1]["cost_per_1k_successful"].is_null());
}

TEST(PlanTable, ListsEveryCellAndTheLines) {
  const std::string t = PlanTable(HandBuilt());
  EXPECT_NE(t.find("baseline"), std::string::npos);
  EXPECT_NE(t.find("9 (8-9)"), std::string::npos);  // replicas with the seeds' range
  EXPECT_NE(t.find("worsens:  replicas needed 4 -> 9 (+125%)"), std::string::npos);
}

TEST(PlanPolicyYaml, TheReserveIsTheFloorAndTheLargestFleetTheCeiling) {
  absl::StatusOr<std::string> yaml = PlanPolicyYaml(HandBuilt(), 0, ReviewFor());
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  absl::StatusOr<api::InferenceAutoscaler> ia = api::ParseInferenceAutoscaler(*yaml, "emitted");
  ASSERT_TRUE(ia.ok()) << ia.status() << "\n" << *yaml;
  // Reserves 1 and 3: floor 3. Fleets 4 + 1 and 9 + 3: ceiling 12.
  EXPECT_EQ(ia->spec.min_replicas, 3);
  EXPECT_EQ(ia->spec.max_replicas, 12);
  EXPECT_EQ(ia->spec.model.profile, "llama-3.1-8b-h100-sxm-tp1");
  EXPECT_EQ(ia->spec.slo.ttft.threshold, absl::Milliseconds(500));
}

TEST(PlanPolicyYaml, AnOverriddenGpuCannotBeNamed) {
  Review r = ReviewFor();
  r.profiles[0].gpu = "a100-80g";
  absl::StatusOr<std::string> yaml = PlanPolicyYaml(HandBuilt(), 0, r);
  EXPECT_EQ(yaml.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanPolicyYaml(HandBuilt(), 5, ReviewFor()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace twinscale::plan
