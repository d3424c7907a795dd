// `twinscale profiles`: see profiles_command.h.
#include "controller/cli/profiles_command.h"

#include <cstdio>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "controller/cli/command_line.h"
#include "controller/cli/deployment_json.h"
#include "controller/common/status_macros.h"
#include "simulator/model/deployment.h"
#include "simulator/profiles/profile_loader.h"

ABSL_FLAG(std::string, show, "",
          "Print this deployment profile whole, resolved (model, GPU, engine, latency model, "
          "lifecycle, and the derived KV capacity), as JSON.");

namespace twinscale::cli {

const char kProfilesUsage[] =
    "twinscale profiles: the deployment profiles built in (simulate --profile, replay's "
    "spec.model.profile).\n"
    "\n"
    "Examples:\n"
    "  twinscale profiles\n"
    "  twinscale profiles --show llama-3.1-8b-h200-tp1\n";
const char kProfilesFlagsFile[] = "profiles_command.cc";

namespace {

absl::Status Run() {
  TS_ASSIGN_OR_RETURN(const sim::ProfileRegistry registry, sim::ProfileRegistry::LoadEmbedded());
  const std::string show = absl::GetFlag(FLAGS_show);
  if (!show.empty()) {
    TS_ASSIGN_OR_RETURN(const sim::DeploymentSpec d, registry.Resolve(show, {}));
    std::cout << DeploymentToJson(d).dump(2) << "\n";
    return absl::OkStatus();
  }
  std::printf("%-30s %-14s %-10s %2s %8s %9s %10s %-9s %s\n", "PROFILE", "MODEL", "GPU", "TP",
              "MAX SEQS", "BATCH TOK", "KV TOKENS", "LATENCY", "READY AFTER (median)");
  for (const std::string& name : registry.Names("deployments")) {
    TS_ASSIGN_OR_RETURN(const sim::DeploymentSpec d, registry.Resolve(name, {}));
    const sim::LifecycleSpec& l = d.lifecycle;
    const double ready_s =
        (l.provisioning.median + l.loading.median + l.warming_up.median).seconds();
    std::printf("%-30s %-14s %-10s %2d %8d %9d %10lld %-9s %.0f s\n", name.c_str(),
                d.model.name.c_str(), d.gpu.name.c_str(), d.tensor_parallel, d.engine.max_num_seqs,
                d.engine.max_num_batched_tokens, static_cast<long long>(sim::KvCapacityTokens(d)),
                std::string(sim::LatencyModelKindName(d.latency_model)).c_str(), ready_s);
  }
  std::printf(
      "\nREADY AFTER: provisioning + loading + warm-up, the medians the twin draws around. "
      "'twinscale profiles --show NAME' prints one whole.\n");
  return absl::OkStatus();
}

}  // namespace

int RunProfilesCommand() { return Finish("profiles", Run()); }

}  // namespace twinscale::cli
