// The rotating bearer token; see token_source.h.
#include "controller/kube/token_source.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "controller/kube/cluster_config.h"

namespace twinscale::kube {

TokenSource::TokenSource(std::string fixed_token, std::string token_file, const Clock* clock,
                         absl::Duration refresh_period)
    : fixed_token_(std::move(fixed_token)),
      token_file_(std::move(token_file)),
      clock_(clock),
      refresh_period_(refresh_period) {}

absl::StatusOr<std::string> TokenSource::Token() {
  if (token_file_.empty()) return fixed_token_;
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_->Now();
  absl::Status read_error;
  // Until one read succeeds every call tries again (the file may be about to appear).
  if (!read_once_ || now - last_attempt_ >= refresh_period_) {
    last_attempt_ = now;
    absl::StatusOr<std::string> text = ReadFileToString(token_file_);
    const std::string token =
        text.ok() ? std::string(absl::StripAsciiWhitespace(*text)) : std::string();
    if (!token.empty()) {
      file_token_ = token;
      read_once_ = true;
    } else {
      read_error =
          text.ok()
              ? absl::FailedPreconditionError(absl::StrCat("token file ", token_file_, " is empty"))
              : text.status();
    }
  }
  if (read_once_) return file_token_;
  if (!fixed_token_.empty()) return fixed_token_;
  return absl::FailedPreconditionError(absl::StrCat("no bearer token: ", read_error.message()));
}

void TokenSource::Invalidate() {
  absl::MutexLock lock(&mu_);
  last_attempt_ = absl::InfinitePast();
}

}  // namespace twinscale::kube
