// The CLI's first hour for a new user, through the real binary: every bad input of the table exits
// 2 with one line naming the flag or file and what is allowed, before any work (a run refused as
// too large, an unwritable --out); what it accepts with a warning (rows out of time order, a
// request no replica can serve); --version and help; each subcommand's help listing its own
// flags only; replay's default trace found from another directory; `twinscale profiles`.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "tests/util/shell.h"
#include "tests/util/temp_dir.h"

namespace {

using Result = twinscale::testutil::ShellResult;

Result Sh(const std::string& cmd) { return twinscale::testutil::RunShell(cmd); }

Result RunTwinscale(const std::string& args) {
  return Sh(std::string(TWINSCALE_BINARY) + " " + args);
}

TEST(CliBadInputTest, EveryBadInputExitsTwoWithOneLineNamingIt) {
  const twinscale::testutil::TempDir scratch("twinscale_cli_bad_input");
  const std::string tiny =
      scratch.Write("tiny.csv",
                    "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
                    "2023-11-16 18:15:47.0000000,100,10\n");
  const std::string a_file = scratch.Write("a_file", "x");
  // 2 GiB of nothing (a sparse file): refused by its size, before a byte is read.
  const std::string huge = scratch.File("huge.csv");
  std::filesystem::resize_file(scratch.Write("huge.csv", ""), 2ull << 30);
  const std::string on_tiny = " --trace " + tiny;
  // A review whose fourth line is out of range, and one whose baseline is far too large.
  const std::string bad_review = scratch.Write(
      "bad_review.yaml",
      "kind: CapacityReview\nbaseline:\n  synthetic:\n    rate: -3\n    duration: 1m\n"
      "    prompt: {mean: 100}\n    output: {mean: 10}\nprofiles:\n"
      "  - {profile: llama-3.1-8b-h100-sxm-tp1, gpuHourPrice: 2}\n");
  const std::string huge_review = scratch.Write(
      "huge_review.yaml",
      "kind: CapacityReview\nbaseline:\n  synthetic:\n    rate: 100000\n    duration: 10h\n"
      "    prompt: {mean: 100}\n    output: {mean: 10}\nprofiles:\n"
      "  - {profile: llama-3.1-8b-h100-sxm-tp1, gpuHourPrice: 2}\n");
  // A review that asks --emit-policy for a profile with its GPU overridden.
  const std::string a100_review = scratch.Write(
      "a100_review.yaml",
      "kind: CapacityReview\nbaseline:\n  synthetic: {rate: 1, duration: 1m}\nprofiles:\n"
      "  - {profile: llama-3.1-8b-h100-sxm-tp1, gpu: a100-80g, gpuHourPrice: 2, name: a100}\n"
      "emitProfile: a100\n");
  const struct {
    std::string name, args, want;
  } cases[] = {
      // Numbers out of range, named with what is allowed.
      {"a negative SLO", "simulate --rate 1 --num-requests 10 --slo-ttft-ms -5",
       "--slo-ttft-ms must be >= 0"},
      {"a negative per-token allowance",
       "simulate --rate 1 --num-requests 10 --slo-ttft-per-prompt-token-ms -0.5",
       "--slo-ttft-per-prompt-token-ms must be >= 0"},
      {"a negative engine limit", "simulate --rate 1 --num-requests 2 --max-num-seqs -1",
       "--max-num-seqs must be >= 0 (0: the profile's), got -1"},
      {"a negative noise", "simulate --rate 1 --num-requests 2 --step-noise-cv -1",
       "--step-noise-cv must be >= 0"},
      {"a memory fraction over 1", "simulate --rate 1 --num-requests 2 --gpu-memory-utilization 2",
       "--gpu-memory-utilization must be in [0, 1]"},
      {"no replicas", "simulate --rate 1 --num-requests 2 --replicas 0", "--replicas must be >= 1"},
      {"a negative start", "replay --initial-replicas -3" + on_tiny,
       "--initial-replicas must be >= 0"},
      {"a negative pre-roll", "replay --pre-roll=-1s" + on_tiny, "--pre-roll must be >= 0"},
      {"a zero time scale", "simulate --trace " + tiny + " --time-scale 0",
       "--time-scale must be > 0"},
      {"no workers", "controller --workers 0", "--workers must be in [1, 64], got 0"},
      {"a port out of range", "controller --ops-port 70000", "--ops-port must be in [0, 65535]"},
      {"a renew deadline past the lease", "controller --renew-deadline 20s",
       "--renew-deadline (20s) must be shorter than --lease-duration (15s)"},
      {"an unknown log level", "controller --log-level verbose",
       "--log-level: \"verbose\" is not one of debug, info, warning, error"},
      {"an unknown progress mode (simulate)", "simulate --progress sometimes",
       "--progress: \"sometimes\" is not one of auto, always, never"},
      {"an unknown progress mode (replay)", "replay --progress sometimes" + on_tiny,
       "--progress: \"sometimes\" is not one of auto, always, never"},
      {"a capacity flag without the search", "simulate --rate 1 --num-requests 2 --seeds 2",
       "--seeds needs --find-replicas"},
      {"no seeds", "simulate --rate 1 --duration 1m --find-replicas --seeds 0",
       "--seeds must be in [1, 20]"},
      {"a negative headroom", "simulate --rate 1 --duration 1m --find-replicas --headroom=-0.1",
       "--headroom must be in [0, 10]"},
      {"a negative memory limit", "replay --memory-limit-gib -1" + on_tiny,
       "--memory-limit-gib must be >= 0"},
      // Values the flag library cannot read, and words that are not flags.
      {"not a number", "simulate --num-requests abc",
       "--num-requests: \"abc\" is not valid: want an integer"},
      {"not finite", "simulate --rate nan --num-requests 3",
       "--rate: \"nan\" is not valid: want a finite number"},
      {"not a duration", "simulate --rate 1 --duration 5", "want a duration such as 30s"},
      {"a value missing", "simulate --rate", "--rate needs a value: a finite number"},
      {"a stray word", "simulate --rate 5 stray", "unexpected argument \"stray\""},
      {"another subcommand's flag", "controller --trace x.csv",
       "unknown flag --trace (see 'twinscale controller --help')"},
      {"a typo", "simulate --rate 1 --num-request 10", "unknown flag --num-request"},
      {"help for no such subcommand", "help nope", "unknown subcommand \"nope\""},
      // A synthetic workload without its rate is that, not "no workload".
      {"a count without a rate", "simulate --rate 0 --num-requests 100",
       "--rate must be > 0 for a synthetic workload"},
      // Files that are not there.
      {"a missing trace (simulate)", "simulate --trace /nonexistent.csv", "/nonexistent.csv"},
      {"a missing trace (replay)", "replay --policy static:2 --trace /nonexistent.csv",
       "/nonexistent.csv"},
      {"a missing manifest", "replay --policy /nonexistent.yaml" + on_tiny, "/nonexistent.yaml"},
      {"an unknown profile", "profiles --show nope", "unknown deployment profile \"nope\""},
      // The capacity review.
      {"a review not given", "plan", "--review FILE is required"},
      {"a missing review", "plan --review /nonexistent.yaml", "/nonexistent.yaml"},
      {"a review value out of range", "plan --review " + bad_review,
       bad_review + ":4: baseline.synthetic.rate: must be"},
      {"a review's baseline too large", "plan --review " + huge_review, "more than a review runs"},
      {"an unknown plan output", "plan --review " + bad_review + " --output xml",
       "--output: want table or json"},
      {"plan threads below zero", "plan --review " + bad_review + " --threads=-1",
       "--threads must be >= 0"},
      {"plan --out under a missing root", "plan --review " + bad_review + " --out /proc/nope/out",
       "--out /proc/nope/out: cannot create the directory"},
      {"a simulate flag given to plan", "plan --review " + bad_review + " --rate 3",
       "unknown flag --rate"},
      {"a policy for a profile no InferenceAutoscaler can name",
       "plan --review " + a100_review + " --emit-policy " + scratch.File("p.yaml"),
       "--emit-policy: emitProfile a100 overrides its model or GPU"},
      // Runs too large for the machine, refused before they start, with the flag that raises
      // the limit.
      {"ten thousand replicas on two requests",
       "replay --policy static:10000 --memory-limit-gib 6" + on_tiny, "--memory-limit-gib"},
      {"a hundred thousand replicas", "replay --policy static:100000" + on_tiny,
       "--memory-limit-gib"},
      {"a trillion requests", "simulate --rate 10 --num-requests 1000000000000",
       "--memory-limit-gib"},
      {"a thousand years", "simulate --rate 10 --duration 8760000h", "--memory-limit-gib"},
      {"a trace scaled a million times", "replay --policy static:4 --rate-scale 1000000",
       "--memory-limit-gib"},
      {"a trace file larger than the memory allows",
       "simulate --trace " + huge + " --memory-limit-gib 1",
       "reading " + huge + ", 2048.0 MiB of text"},
      {"a run longer than its time limit",
       "simulate --rate 1000 --num-requests 100000000 --memory-limit-gib 1000 --time-limit 10s",
       "--time-limit"},
      // Outputs that cannot be written, found before the first simulated second.
      {"--out under a missing root", "replay --policy static:2 --out /proc/nope/out" + on_tiny,
       "--out /proc/nope/out: cannot create the directory"},
      {"--out is a file", "replay --policy static:2 --out " + a_file + on_tiny,
       "cannot create the directory"},
      {"--emit-policy cannot be written",
       "simulate --rate 1 --duration 1m --find-replicas --emit-policy /proc/nope/x.yaml",
       "--emit-policy /proc/nope/x.yaml: cannot write it"},
      {"--emit-policy of a deployment no profile names",
       "simulate --rate 1 --duration 1m --find-replicas --gpu h200 --emit-policy " +
           scratch.File("x.yaml"),
       "--emit-policy: an InferenceAutoscaler names a built-in --profile and cannot carry --gpu"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name + ": " + c.args);
    const Result r = RunTwinscale(c.args);  // stderr is a pipe: no progress bar
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(c.want), std::string::npos) << r.out;
    // One line: no table, no partial output before it.
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
}

TEST(CliWarningsTest, RowsOutOfOrderAndARequestNoReplicaServesAreSaidAndTheRunGoesOn) {
  const twinscale::testutil::TempDir scratch("twinscale_cli_warnings");
  // Line 3 goes back in time; line 4 asks for a 10M-token prompt (Llama-3.1-8B serves 131,072).
  const std::string trace =
      scratch.Write("t.csv",
                    "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:47.0,300,30\n"
                    "2023-11-16 18:15:46.0,300,30\n2023-11-16 18:15:48.0,10000000,10\n");
  const Result r = RunTwinscale("simulate --trace " + trace + " --progress never");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: " + trace +
                       ": 1 row is timestamped earlier than the row before (the first at line 3)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("warning: " + trace + ": 1 request is longer than the 131072 tokens"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("rejected 1"), std::string::npos) << r.out;
  const Result replay = RunTwinscale("replay --policy static:1 --oracle=false --trace " + trace +
                                     " --progress never");
  ASSERT_EQ(replay.exit_code, 0) << replay.out;
  EXPECT_NE(replay.out.find("twinscale replay: warning: " + trace + ": 1 row is"),
            std::string::npos)
      << replay.out;
}

TEST(CliEdgesTest, VersionAndHelpInEveryForm) {
  const Result v = RunTwinscale("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out, RunTwinscale("version").out);
  EXPECT_EQ(v.out.rfind("twinscale ", 0), 0u) << v.out;
  const Result help = RunTwinscale("help simulate");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out, RunTwinscale("simulate --help").out);
  EXPECT_NE(help.out.find("--find-replicas"), std::string::npos);
  const Result top = RunTwinscale("help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("profiles"), std::string::npos) << top.out;
}

TEST(CliEdgesTest, EachSubcommandsHelpListsItsOwnFlagsOnly) {
  const Result controller = RunTwinscale("controller --help");
  ASSERT_EQ(controller.exit_code, 0);
  for (const char* own : {"--workers", "--kubeconfig", "--keda-addr"}) {
    EXPECT_NE(controller.out.find(own), std::string::npos) << own;
  }
  for (const char* other :
       {"--trace", "--rate-scale", "--seed ", "--policy", "--find-replicas", "--progress"}) {
    EXPECT_EQ(controller.out.find(other), std::string::npos) << other;
  }
  const Result simulate = RunTwinscale("simulate --help");
  EXPECT_NE(simulate.out.find("--trace"), std::string::npos);
  EXPECT_EQ(simulate.out.find("--workers"), std::string::npos);
  EXPECT_EQ(simulate.out.find("--policy"), std::string::npos);
  const Result replay = RunTwinscale("replay --help");
  EXPECT_NE(replay.out.find("--policy"), std::string::npos);
  EXPECT_EQ(replay.out.find("--find-replicas"), std::string::npos);
  // plan: its own flags and the output flags it shares with simulate and replay, no others.
  const Result plan = RunTwinscale("plan --help");
  for (const char* own : {"--review", "--threads", "--output", "--out ", "--emit-policy",
                          "--chartjs", "--memory-limit-gib"}) {
    EXPECT_NE(plan.out.find(own), std::string::npos) << own;
  }
  for (const char* other :
       {"--trace", "--rate-scale", "--policy", "--find-replicas", "--workers"}) {
    EXPECT_EQ(plan.out.find(other), std::string::npos) << other;
  }
}

TEST(PlanCliTest, TheShippedReviewRunsEndToEnd) {
  // The documented example (deploy/samples/plan/capacity-review.yaml: seven scenarios, two
  // profiles, three seeds) through the binary, from the repository root: plan.json, report.html and
  // the InferenceAutoscaler, which replay then loads as a policy (the loader every manifest meets).
  const twinscale::testutil::TempDir scratch("twinscale_plan_cli");
  const std::string out = scratch.File("out"), policy = scratch.File("policy.yaml");
  const Result r =
      Sh("cd " + std::string(TWINSCALE_SOURCE_DIR) + " && " + std::string(TWINSCALE_BINARY) +
         " plan --review deploy/samples/plan/capacity-review.yaml --output json --out " + out +
         " --emit-policy " + policy + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["scenarios"].size(), 8u);  // the baseline and seven
  ASSERT_EQ(j["profiles"].size(), 3u);
  ASSERT_EQ(j["cells"].size(), 24u);
  for (const nlohmann::json& c : j["cells"]) {
    EXPECT_EQ(c["headroom"]["resources"].size(), 5u);
    // Every fleet found meets the SLO under every seed; on the A100 the longer prompts and the
    // long-context cohort are out of reach within maxReplicas.
    if (c["found"].get<bool>()) {
      EXPECT_GE(c["attainment"]["min"].get<double>(), 0.9) << c.dump();
    } else {
      EXPECT_EQ(c["profile"], "llama-3.1-8b-a100-80g-tp1") << c.dump();
    }
  }
  // Twice the traffic needs more replicas than the baseline on each profile; a cache miss on a
  // trace without prefix ids needs the same.
  auto cell = [&](const std::string& scenario, const std::string& profile) {
    for (const nlohmann::json& c : j["cells"]) {
      if (c["scenario"] == scenario && c["profile"] == profile) return c;
    }
    return nlohmann::json();
  };
  for (const nlohmann::json& p : j["profiles"]) {
    const std::string name = p["name"];
    ASSERT_TRUE(cell("baseline", name)["found"].get<bool>()) << name;
    EXPECT_GT(cell("launch-traffic", name)["replicas"].get<int>(),
              cell("baseline", name)["replicas"].get<int>());
    EXPECT_EQ(cell("cache-miss", name)["replicas"], cell("baseline", name)["replicas"]);
    EXPECT_GT(cell("launch-burst", name)["warm_reserve"].get<int>(),
              cell("baseline", name)["warm_reserve"].get<int>());
  }
  EXPECT_TRUE(std::filesystem::exists(out + "/plan.json"));
  EXPECT_TRUE(std::filesystem::exists(out + "/report.html") ||
              !std::filesystem::exists("/usr/share/javascript/chart.js/chart.min.js"));
  const Result loaded =
      RunTwinscale("replay --policy " + policy + " --trace " + std::string(TWINSCALE_SOURCE_DIR) +
                   "/tests/data/traces/AzureLLMInferenceTrace_conv.csv "
                   "--rate-scale 0.05 --oracle=false --progress never");
  EXPECT_EQ(loaded.exit_code, 0) << loaded.out;
}

TEST(CliEdgesTest, ReplayFindsItsDefaultTraceFromAnotherDirectory) {
  const twinscale::testutil::TempDir elsewhere("twinscale_cli_cwd");
  const Result r = Sh("cd " + elsewhere.path() + " && " + TWINSCALE_BINARY +
                      " replay --policy static:3 --oracle=false --pre-roll 0s --progress never");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("AzureLLMInferenceTrace_conv.csv x1, 19366 requests"), std::string::npos)
      << r.out;
}

// `cmake --install` puts the binary in bin/ and what replay reads by default in share/twinscale,
// at the paths the binary looks for them (controller/cli/shipped_data.h).
TEST(CliEdgesTest, AnInstallCarriesTheDefaultFilesWhereTheBinaryLooks) {
  const twinscale::testutil::TempDir prefix("twinscale_install");
  const Result install = Sh("cmake --install " + std::string(TWINSCALE_BUILD_DIR) + " --prefix " +
                            prefix.path() + " > /dev/null");
  ASSERT_EQ(install.exit_code, 0) << install.out;
  for (const char* file : {"share/twinscale/deploy/samples/llama-3.1-8b-h100.yaml",
                           "share/twinscale/tests/data/traces/AzureLLMInferenceTrace_conv.csv"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(prefix.File(file))) << file;
  }
  const Result v = Sh(prefix.File("bin/twinscale") + " --version");
  EXPECT_EQ(v.exit_code, 0) << v.out;
}

TEST(ProfilesCliTest, ListsEveryShippedDeploymentProfileAndShowsOne) {
  const Result r = RunTwinscale("profiles");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  int listed = 0;
  for (const auto& f : std::filesystem::directory_iterator("simulator/profiles/deployments")) {
    const std::string name = f.path().stem().string();
    EXPECT_NE(r.out.find("\n" + name + " "), std::string::npos) << name << "\n" << r.out;
    ++listed;
  }
  EXPECT_GE(listed, 7);
  // The 8B on an H100 as docs/architecture.md works it out: 452,400 KV tokens; ready after the
  // medians 0 + 20 + 25 s.
  EXPECT_NE(r.out.find("llama-3.1-8b-h100-sxm-tp1      llama-3.1-8b   h100-sxm    1     1024      "
                       "8192     452400 roofline  45 s"),
            std::string::npos)
      << r.out;
  const Result show = RunTwinscale("profiles --show llama-3.1-8b-h200-tp1");
  ASSERT_EQ(show.exit_code, 0) << show.out;
  const nlohmann::json j = nlohmann::json::parse(show.out);
  EXPECT_EQ(j["name"], "llama-3.1-8b-h200-tp1");
  EXPECT_EQ(j["gpu"]["name"], "h200");
}

}  // namespace
