// Progress bar: see progress.h.
#include "controller/common/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_format.h"

namespace twinscale {

ProgressBar::ProgressBar(const Clock& clock, std::string label, absl::Duration total,
                         ProgressMode mode, std::optional<ProgressStage> stage)
    : clock_(clock),
      label_(std::move(label)),
      total_(total),
      stage_(std::move(stage)),
      enabled_(mode == ProgressMode::kAlways ||
               (mode == ProgressMode::kAuto && isatty(STDERR_FILENO) != 0)),
      start_(clock.Now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(absl::Duration done) {
  if (!enabled_) return;
  const absl::Time now = clock_.Now();
  const absl::Duration elapsed = now - start_;
  // Only runs longer than a second get a bar, redrawn at most 10 times a second.
  if (elapsed < absl::Seconds(1) || now - last_draw_ < absl::Milliseconds(100)) return;
  last_draw_ = now;
  std::string line = "\r";
  if (stage_)
    absl::StrAppendFormat(&line, "%s %d of %d: ", stage_->noun, stage_->index + 1, stage_->count);
  if (total_ > absl::ZeroDuration()) {
    const double frac = std::clamp(absl::FDivDuration(done, total_), 0.0, 1.0);
    const int width = 30;
    const int filled = static_cast<int>(frac * width);
    absl::StrAppendFormat(&line, "%s [%s%s] %3.0f%%  sim %.0fs/%.0fs  elapsed %.1fs  ", label_,
                          std::string(filled, '#'), std::string(width - filled, '.'), frac * 100,
                          absl::ToDoubleSeconds(done), absl::ToDoubleSeconds(total_),
                          absl::ToDoubleSeconds(elapsed));
    if (stage_ && stage_->count > 1) {
      const double all = (stage_->index + frac) / stage_->count;
      const double all_elapsed = absl::ToDoubleSeconds(now - stage_->started);
      absl::StrAppendFormat(&line, "ETA %.1fs for all %d ",
                            all > 0 ? all_elapsed * (1 - all) / all : 0, stage_->count);
    } else {
      absl::StrAppendFormat(&line, "ETA %.1fs ",
                            frac > 0 ? absl::ToDoubleSeconds(elapsed) * (1 - frac) / frac : 0);
    }
  } else {
    absl::StrAppendFormat(&line, "%s  sim %.0fs  elapsed %.1fs ", label_,
                          absl::ToDoubleSeconds(done), absl::ToDoubleSeconds(elapsed));
  }
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (!drawn_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace twinscale
