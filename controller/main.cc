// twinscale: one binary, subcommands. Flags and wiring only; each subcommand lives in
// controller/cli.
//
//   twinscale controller [flags] the Kubernetes operator (watch, decide, scale, status)
//   twinscale simulate [flags]   run the fleet simulator (the twin); capacity search
//   twinscale replay [flags]     dry run of policies against a trace (cost, SLO attainment)
//   twinscale plan [flags]       a capacity review: scenarios x profiles on the twin
//   twinscale profiles [flags]   list the deployment profiles, or print one
//   twinscale version            print the version (also --version)
//   twinscale help <subcommand>  its flags (also twinscale <subcommand> --help)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controller/cli/command_line.h"
#include "controller/cli/common_flags.h"
#include "controller/cli/controller_command.h"
#include "controller/cli/plan_command.h"
#include "controller/cli/profiles_command.h"
#include "controller/cli/replay_command.h"
#include "controller/cli/simulate_command.h"

namespace {

constexpr char kVersion[] = "0.1.0";

struct Subcommand {
  const char* name;
  const char* summary;
  const char* usage;
  const char* flags_file;  // source file defining its flags ("" for none)
  bool common_flags;       // also takes the shared flags of common_flags.cc
  int (*run)();
  // Flags defined in other subcommands' files that it takes too, space-separated ("" for none).
  const char* borrowed_flags;
};

int RunVersion() {
  std::printf("twinscale %s\n", kVersion);
  return 0;
}

const Subcommand kSubcommands[] = {
    {"controller", "the Kubernetes operator: watch InferenceAutoscalers, decide, scale, report",
     twinscale::cli::kControllerUsage, twinscale::cli::kControllerFlagsFile, false,
     twinscale::cli::RunControllerCommand, ""},
    {"simulate", "run the fleet simulator (the twin); --find-replicas for capacity questions",
     twinscale::cli::kSimulateUsage, twinscale::cli::kSimulateFlagsFile, true,
     twinscale::cli::RunSimulate, ""},
    {"replay", "dry run: replay a trace against policies and baselines; cost and SLO attainment",
     twinscale::cli::kReplayUsage, twinscale::cli::kReplayFlagsFile, true,
     twinscale::cli::RunReplayCommand, ""},
    {"plan",
     "a launch-week capacity review: scenarios x deployment profiles on the twin; replicas, "
     "cost, warm reserve, headroom per resource",
     twinscale::cli::kPlanUsage, twinscale::cli::kPlanFlagsFile, false,
     twinscale::cli::RunPlanCommand, twinscale::cli::kPlanBorrowedFlags},
    {"profiles",
     "list the deployment profiles (model, GPU, engine limits, warm-up) and the YAML "
     "of one",
     twinscale::cli::kProfilesUsage, twinscale::cli::kProfilesFlagsFile, false,
     twinscale::cli::RunProfilesCommand, ""},
    {"version", "print the version", "twinscale version: print the version.\n", "", false,
     RunVersion, ""},
};

void PrintTopUsage() {
  std::printf(
      "twinscale: a digital-twin autoscaler for LLM inference fleets on Kubernetes.\n\n"
      "Usage: twinscale <subcommand> [flags]\n\nSubcommands:\n");
  for (const Subcommand& s : kSubcommands) std::printf("  %-10s %s\n", s.name, s.summary);
  std::printf(
      "\nRun 'twinscale help <subcommand>' (or 'twinscale <subcommand> --help') for its flags; "
      "'twinscale --version' for the version.\n");
}

const Subcommand* FindSubcommand(std::string_view name) {
  for (const Subcommand& s : kSubcommands) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

// A subcommand's flags: those defined in its own file, plus the shared ones (common_flags.cc)
// where it takes them.
bool FlagBelongsTo(const absl::CommandLineFlag& flag, const Subcommand& sub) {
  for (absl::string_view borrowed : absl::StrSplit(sub.borrowed_flags, ' ', absl::SkipEmpty())) {
    if (flag.Name() == borrowed) return true;
  }
  if (sub.flags_file[0] == '\0') return false;
  return absl::EndsWith(flag.Filename(), sub.flags_file) ||
         (sub.common_flags && absl::EndsWith(flag.Filename(), twinscale::cli::kCommonFlagsFile));
}

void PrintSubcommandHelp(const Subcommand& sub) {
  std::printf("%s", sub.usage);
  std::vector<absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (FlagBelongsTo(*flag, sub)) flags.push_back(flag);
  }
  if (flags.empty()) return;
  std::printf("\nFlags:\n");
  std::sort(flags.begin(), flags.end(), [](auto* a, auto* b) { return a->Name() < b->Name(); });
  for (const absl::CommandLineFlag* f : flags) {
    std::printf("  --%s (default: %s)\n      %s\n", twinscale::cli::DashedName(f->Name()).c_str(),
                f->DefaultValue().empty() ? "\"\"" : f->DefaultValue().c_str(), f->Help().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("twinscale <subcommand> [flags]; twinscale --help");
  const std::string_view first = argc < 2 ? "" : argv[1];
  if (argc < 2 || first == "--help" || first == "-h") {
    PrintTopUsage();
    return argc < 2 ? 2 : 0;
  }
  if (first == "--version") return RunVersion();
  if (first == "help") {
    if (argc == 2) {
      PrintTopUsage();
      return 0;
    }
    const Subcommand* sub = FindSubcommand(argv[2]);
    if (sub == nullptr) {
      std::fprintf(stderr, "twinscale help: unknown subcommand \"%s\" (see 'twinscale --help')\n",
                   argv[2]);
      return 2;
    }
    if (argc > 3) {
      std::fprintf(stderr, "twinscale help: one subcommand at a time, got \"%s\" after \"%s\"\n",
                   argv[3], argv[2]);
      return 2;
    }
    PrintSubcommandHelp(*sub);
    return 0;
  }
  const Subcommand* sub = FindSubcommand(first);
  if (sub == nullptr) {
    std::fprintf(stderr, "twinscale: unknown subcommand \"%s\" (see 'twinscale --help')\n",
                 argv[1]);
    return 2;
  }
  std::vector<std::string> args;
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h" || a == "--helpfull") {
      PrintSubcommandHelp(*sub);
      return 0;
    }
    args.emplace_back(a);
  }
  const absl::Status parsed = twinscale::cli::ParseSubcommandFlags(
      args, [sub](const absl::CommandLineFlag& f) { return FlagBelongsTo(f, *sub); },
      /*repeatable=*/{"policy"}, absl::StrCat("twinscale ", sub->name, " --help"));
  if (!parsed.ok()) {
    std::fprintf(stderr, "twinscale %s: %s\n", sub->name, std::string(parsed.message()).c_str());
    return 2;
  }
  return sub->run();
}
