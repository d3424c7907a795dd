// Eventually: see eventually.h.
#include "tests/util/eventually.h"

#include <algorithm>
#include <thread>

#include "controller/common/clock.h"

namespace twinscale::testutil {

bool Eventually(const std::function<bool()>& done, absl::Duration timeout, absl::Duration poll) {
  const RealClock clock;
  const absl::Time deadline = clock.Now() + timeout;
  while (true) {
    if (done()) return true;
    const absl::Duration left = deadline - clock.Now();
    if (left <= absl::ZeroDuration()) return false;
    std::this_thread::sleep_for(absl::ToChronoNanoseconds(std::min(poll, left)));
  }
}

}  // namespace twinscale::testutil
