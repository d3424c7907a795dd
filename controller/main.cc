// twinscale: one binary, subcommands. Flags and wiring only; each subcommand lives in
// controller/cli.
//
//   twinscale controller [flags] the Kubernetes operator (watch, decide, scale, status)
//   twinscale simulate [flags]   run the fleet simulator (the twin); capacity search
//   twinscale replay [flags]     dry run of policies against a trace (cost, SLO attainment)
//   twinscale version            print the version
//   twinscale <subcommand> --help
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "controller/cli/common_flags.h"
#include "controller/cli/controller_command.h"
#include "controller/cli/replay_command.h"
#include "controller/cli/simulate_command.h"

namespace {

constexpr char kVersion[] = "0.1.0";

struct Subcommand {
  const char* name;
  const char* summary;
  const char* usage;
  const char* flags_file;  // source file defining its flags ("" for none)
  int (*run)();
};

int RunVersion() {
  std::printf("twinscale %s\n", kVersion);
  return 0;
}

const Subcommand kSubcommands[] = {
    {"controller", "the Kubernetes operator: watch InferenceAutoscalers, decide, scale, report",
     twinscale::cli::kControllerUsage, twinscale::cli::kControllerFlagsFile,
     twinscale::cli::RunControllerCommand},
    {"simulate", "run the fleet simulator (the twin); --find-replicas for capacity questions",
     twinscale::cli::kSimulateUsage, twinscale::cli::kSimulateFlagsFile,
     twinscale::cli::RunSimulate},
    {"replay", "dry run: replay a trace against policies and baselines; cost and SLO attainment",
     twinscale::cli::kReplayUsage, twinscale::cli::kReplayFlagsFile,
     twinscale::cli::RunReplayCommand},
    {"version", "print the version", "twinscale version: print the version.\n", "", RunVersion},
};

void PrintTopUsage() {
  std::printf(
      "twinscale: a digital-twin autoscaler for LLM inference fleets on Kubernetes.\n\n"
      "Usage: twinscale <subcommand> [flags]\n\nSubcommands:\n");
  for (const Subcommand& s : kSubcommands) std::printf("  %-10s %s\n", s.name, s.summary);
  std::printf("\nRun 'twinscale <subcommand> --help' for its flags.\n");
}

// A subcommand's flags: those defined in its own file, plus the shared ones (common_flags.cc).
bool FlagBelongsTo(const absl::CommandLineFlag& flag, const Subcommand& sub) {
  if (sub.flags_file[0] == '\0') return false;
  return absl::EndsWith(flag.Filename(), sub.flags_file) ||
         absl::EndsWith(flag.Filename(), twinscale::cli::kCommonFlagsFile);
}

// Flag names are written with dashes on the command line (--max-num-seqs); abseil's are
// underscored. Both spellings are accepted.
std::string Underscored(std::string_view arg) {
  std::string s(arg);
  const size_t eq = s.find('=');
  for (size_t i = 0; i < std::min(eq, s.size()); ++i) {
    if (s[i] == '-' && i >= 2) s[i] = '_';
  }
  return s;
}

void PrintSubcommandHelp(const Subcommand& sub) {
  std::printf("%s\nFlags:\n", sub.usage);
  std::vector<absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (FlagBelongsTo(*flag, sub)) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(), [](auto* a, auto* b) { return a->Name() < b->Name(); });
  for (const absl::CommandLineFlag* f : flags) {
    std::printf("  --%s (default: %s)\n      %s\n",
                absl::StrReplaceAll(f->Name(), {{"_", "-"}}).c_str(),
                f->DefaultValue().empty() ? "\"\"" : f->DefaultValue().c_str(), f->Help().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("twinscale <subcommand> [flags]; twinscale --help");
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    PrintTopUsage();
    return argc < 2 ? 2 : 0;
  }
  const Subcommand* sub = nullptr;
  for (const Subcommand& s : kSubcommands) {
    if (argv[1] == std::string_view(s.name)) sub = &s;
  }
  if (sub == nullptr) {
    std::fprintf(stderr, "twinscale: unknown subcommand \"%s\"\n\n", argv[1]);
    PrintTopUsage();
    return 2;
  }
  // argv for abseil: program name + the subcommand's flags. Reject flags of other subcommands.
  std::vector<std::string> args = {argv[0]};
  for (int i = 2; i < argc; ++i) {
    const absl::string_view a = argv[i];
    if (a == "--help" || a == "-h" || a == "--helpfull") {
      PrintSubcommandHelp(*sub);
      return 0;
    }
    std::string arg = absl::StartsWith(a, "--") ? Underscored(std::string(a)) : std::string(a);
    if (absl::StartsWith(arg, "--")) {
      std::string name =
          arg.substr(2, arg.find('=') == std::string::npos ? std::string::npos : arg.find('=') - 2);
      // Boolean negation: --no-flag (--no_flag) and abseil's own --noflag.
      if (absl::FindCommandLineFlag(name) == nullptr) {
        if (absl::StartsWith(name, "no_") && absl::FindCommandLineFlag(name.substr(3)) != nullptr) {
          name = name.substr(3);
          arg = absl::StrCat("--no", name);
        } else if (absl::StartsWith(name, "no") &&
                   absl::FindCommandLineFlag(name.substr(2)) != nullptr) {
          name = name.substr(2);
        }
      }
      const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
      if (flag == nullptr || !FlagBelongsTo(*flag, *sub)) {
        std::fprintf(stderr, "twinscale %s: unknown flag --%s (see 'twinscale %s --help')\n",
                     sub->name, absl::StrReplaceAll(name, {{"_", "-"}}).c_str(), sub->name);
        return 2;
      }
    }
    args.push_back(std::move(arg));
  }
  // Repeatable flags (--policy a --policy b) reach the subcommand as one newline-joined value.
  const char* const kRepeatable[] = {"--policy"};
  for (const char* rep : kRepeatable) {
    std::vector<std::string> values, rest;
    for (size_t i = 0; i < args.size(); ++i) {
      if (i > 0 && args[i] == rep && i + 1 < args.size()) {
        values.push_back(args[++i]);
      } else if (i > 0 && absl::StartsWith(args[i], absl::StrCat(rep, "="))) {
        values.push_back(args[i].substr(std::strlen(rep) + 1));
      } else {
        rest.push_back(args[i]);
      }
    }
    if (values.size() > 1) {
      std::string joined;
      for (const std::string& v : values) absl::StrAppend(&joined, joined.empty() ? "" : "\n", v);
      rest.push_back(absl::StrCat(rep, "=", joined));
      args = std::move(rest);
    }
  }
  std::vector<char*> cargs;
  for (std::string& s : args) cargs.push_back(s.data());
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(cargs.size()), cargs.data());
  if (positional.size() > 1) {
    std::fprintf(stderr, "twinscale %s: unexpected argument \"%s\"\n", sub->name, positional[1]);
    return 2;
  }
  return sub->run();
}
