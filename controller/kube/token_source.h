// The bearer token for API requests. A token file is re-read at most `refresh_period` after the
// last read (default one minute), because projected service-account tokens rotate (the kubelet
// rewrites the file well before the old token expires); time is measured on the injected Clock.
// If a re-read fails, the last token that read successfully keeps being used (and, before any read
// succeeds, the fixed token), as client-go does.
//
// The token is a secret: no message from this class contains it.
// Thread-safety: Token() and Invalidate() may be called from any thread.
#ifndef TWINSCALE_CONTROLLER_KUBE_TOKEN_SOURCE_H_
#define TWINSCALE_CONTROLLER_KUBE_TOKEN_SOURCE_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"

namespace twinscale::kube {

class TokenSource {
 public:
  // `fixed_token` and/or `token_file` may be empty (both empty: no bearer authentication).
  // `clock` must outlive this object.
  TokenSource(std::string fixed_token, std::string token_file, const Clock* clock,
              absl::Duration refresh_period = absl::Minutes(1));

  // The token to send ("" when none is configured). FailedPrecondition (naming the file, never
  // the token) only when a token file is configured, has never been read and there is no fixed
  // token to fall back on.
  absl::StatusOr<std::string> Token() ABSL_LOCKS_EXCLUDED(mu_);

  // Makes the next Token() re-read the file (after a 401: the token may just have rotated).
  void Invalidate() ABSL_LOCKS_EXCLUDED(mu_);

  bool HasFile() const { return !token_file_.empty(); }

 private:
  const std::string fixed_token_;
  const std::string token_file_;
  const Clock* const clock_;
  const absl::Duration refresh_period_;

  absl::Mutex mu_;
  std::string file_token_ ABSL_GUARDED_BY(mu_);  // last successful read
  bool read_once_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time last_attempt_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace twinscale::kube

#endif  // TWINSCALE_CONTROLLER_KUBE_TOKEN_SOURCE_H_
