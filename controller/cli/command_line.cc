// A subcommand's command line: see command_line.h.
#include "controller/cli/command_line.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>

#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"

namespace twinscale::cli {

std::string DashedName(absl::string_view flag_name) {
  return absl::StrReplaceAll(std::string(flag_name), {{"_", "-"}});
}

std::string ExpectedValueOf(const absl::CommandLineFlag& flag) {
  if (flag.IsOfType<bool>()) return "true or false";
  if (flag.IsOfType<int32_t>() || flag.IsOfType<int64_t>()) return "an integer";
  if (flag.IsOfType<uint64_t>()) return "a non-negative integer";
  if (flag.IsOfType<double>()) return "a finite number";
  if (flag.IsOfType<absl::Duration>()) return "a duration such as 30s, 5m or 1h30m";
  if (flag.IsOfType<std::vector<std::string>>()) return "a comma-separated list";
  return "a string";
}

namespace {

std::string Underscored(absl::string_view name) {
  return absl::StrReplaceAll(std::string(name), {{"-", "_"}});
}

// A parsed value abseil accepts but no run can use: NaN or an infinity.
bool NotFinite(const absl::CommandLineFlag& flag) {
  if (flag.IsOfType<double>()) {
    const auto v = flag.TryGet<double>();
    return v.has_value() && !std::isfinite(*v);
  }
  if (flag.IsOfType<absl::Duration>()) {
    const auto v = flag.TryGet<absl::Duration>();
    return v.has_value() && (*v == absl::InfiniteDuration() || *v == -absl::InfiniteDuration());
  }
  return false;
}

}  // namespace

absl::Status ParseSubcommandFlags(const std::vector<std::string>& args,
                                  const std::function<bool(const absl::CommandLineFlag&)>& belongs,
                                  const std::vector<std::string>& repeatable,
                                  absl::string_view help_hint) {
  // Values of repeatable flags, joined at the end (in the order given).
  std::map<std::string, std::vector<std::string>> repeated;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!absl::StartsWith(arg, "--") || arg == "--") {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument \"", arg, "\" (flags are written --name=value)"));
    }
    const size_t eq = arg.find('=');
    std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    std::optional<std::string> value;
    if (eq != std::string::npos) value = arg.substr(eq + 1);
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(Underscored(name));
    bool negated = false;
    if (flag == nullptr) {
      // Boolean negation: --no-flag, --no_flag and abseil's own --noflag.
      for (const absl::string_view prefix : {"no-", "no_", "no"}) {
        if (!absl::StartsWith(name, prefix)) continue;
        absl::CommandLineFlag* f =
            absl::FindCommandLineFlag(Underscored(name.substr(prefix.size())));
        if (f != nullptr && f->IsOfType<bool>()) {
          flag = f;
          negated = true;
          break;
        }
      }
    }
    if (flag == nullptr || flag->IsRetired() || !belongs(*flag)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, " (see '", help_hint, "')"));
    }
    const std::string dashed = DashedName(flag->Name());
    if (negated) {
      if (value.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " takes no value (it sets --", dashed, "=false)"));
      }
      value = "false";
    } else if (!value.has_value()) {
      if (flag->IsOfType<bool>()) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--", dashed, " needs a value: ", ExpectedValueOf(*flag)));
      }
    }
    if (std::find(repeatable.begin(), repeatable.end(), dashed) != repeatable.end()) {
      repeated[std::string(flag->Name())].push_back(*value);
      continue;
    }
    std::string error;
    if (!flag->ParseFrom(*value, &error) || NotFinite(*flag)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", dashed, ": \"", *value, "\" is not valid: want ", ExpectedValueOf(*flag)));
    }
  }
  for (const auto& [name, values] : repeated) {
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    std::string error;
    if (!flag->ParseFrom(absl::StrJoin(values, "\n"), &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", DashedName(name), ": ", error.empty() ? "not valid" : error));
    }
  }
  return absl::OkStatus();
}

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kResourceExhausted:
      return 2;
    default:
      return 1;
  }
}

int Finish(absl::string_view subcommand, const absl::Status& status) {
  if (status.ok()) return 0;
  std::cerr << "twinscale " << subcommand << ": " << status.message() << "\n";
  return ExitCodeFor(status);
}

}  // namespace twinscale::cli
