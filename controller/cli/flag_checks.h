// Range checks of flag values, run by each subcommand before any work: a value outside its range
// is InvalidArgument with one line naming the flag, what it takes and what it got, e.g.
// "--max-num-seqs must be >= 0 (0: the profile's), got -1". The caller exits 2.
#ifndef TWINSCALE_CONTROLLER_CLI_FLAG_CHECKS_H_
#define TWINSCALE_CONTROLLER_CLI_FLAG_CHECKS_H_

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "controller/cli/command_line.h"

namespace twinscale::cli {

// The first failed check of a list, or Ok: `return FirstError({AtLeast(...), ...});`.
inline absl::Status FirstError(std::initializer_list<absl::Status> checks) {
  for (const absl::Status& s : checks) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

namespace flag_checks_internal {
template <typename T>
std::string Show(const T& v) {
  if constexpr (std::is_same_v<T, absl::Duration>) {
    return absl::FormatDuration(v);
  } else {
    return absl::StrCat(v);
  }
}
template <typename T>
std::string Name(const absl::Flag<T>& flag) {
  return absl::StrCat("--", DashedName(absl::GetFlagReflectionHandle(flag).Name()));
}
inline std::string Note(absl::string_view note) {
  return note.empty() ? "" : absl::StrCat(" (", note, ")");
}
}  // namespace flag_checks_internal

// value >= min. `note` says what a special value means, e.g. "0: the profile's".
template <typename T>
absl::Status AtLeast(const absl::Flag<T>& flag, T min, absl::string_view note = "") {
  using namespace flag_checks_internal;
  const T v = absl::GetFlag(flag);
  if (v >= min) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(Name(flag), " must be >= ", Show(min), Note(note), ", got ", Show(v)));
}

// value > min.
template <typename T>
absl::Status Above(const absl::Flag<T>& flag, T min, absl::string_view note = "") {
  using namespace flag_checks_internal;
  const T v = absl::GetFlag(flag);
  if (v > min) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(Name(flag), " must be > ", Show(min), Note(note), ", got ", Show(v)));
}

// min <= value <= max.
template <typename T>
absl::Status Within(const absl::Flag<T>& flag, T min, T max, absl::string_view note = "") {
  using namespace flag_checks_internal;
  const T v = absl::GetFlag(flag);
  if (v >= min && v <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(Name(flag), " must be in [", Show(min), ", ",
                                                 Show(max), "]", Note(note), ", got ", Show(v)));
}

// value is one of `allowed`.
inline absl::Status OneOf(const absl::Flag<std::string>& flag,
                          const std::vector<std::string>& allowed) {
  const std::string v = absl::GetFlag(flag);
  for (const std::string& a : allowed) {
    if (v == a) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(flag_checks_internal::Name(flag), ": \"", v,
                                                 "\" is not one of ",
                                                 absl::StrJoin(allowed, ", ")));
}

}  // namespace twinscale::cli

#endif  // TWINSCALE_CONTROLLER_CLI_FLAG_CHECKS_H_
