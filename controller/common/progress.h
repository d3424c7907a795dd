// A one-line progress bar on the terminal (elapsed wall time, simulated time, ETA) for runs longer
// than a second; silent when stderr is not a terminal (CI logs, pipes) unless forced.
// Not thread-safe: one per run, driven from the run's thread.
#ifndef TWINSCALE_CONTROLLER_COMMON_PROGRESS_H_
#define TWINSCALE_CONTROLLER_COMMON_PROGRESS_H_

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "controller/common/clock.h"

namespace twinscale {

enum class ProgressMode { kAuto, kAlways, kNever };

// One run of several in sequence (replay's policies, one after another): the line starts
// "policy 3 of 17:" and its ETA is the whole sequence's, from the time since the first run
// started and the share of all runs done (each run counted as an equal share).
struct ProgressStage {
  int index = 0;  // 0-based
  int count = 1;
  absl::Time started;  // when the sequence's first run started
  std::string noun = "policy";
};

class ProgressBar {
 public:
  // `total` is the simulated span expected (zero when unknown: no ETA).
  ProgressBar(const Clock& clock, std::string label, absl::Duration total, ProgressMode mode,
              std::optional<ProgressStage> stage = std::nullopt);
  ~ProgressBar();
  // Reports that the run has reached simulated time `done`.
  void Update(absl::Duration done);
  // Clears the line (if anything was drawn).
  void Finish();

 private:
  const Clock& clock_;
  std::string label_;
  absl::Duration total_;
  std::optional<ProgressStage> stage_;
  bool enabled_;
  absl::Time start_;
  absl::Time last_draw_;
  bool drawn_ = false;
};

}  // namespace twinscale

#endif  // TWINSCALE_CONTROLLER_COMMON_PROGRESS_H_
