// Eventually: polls a condition in real time until it holds or a timeout passes. The one
// poll-until-true helper of the tests, for what genuinely happens on other threads or in other
// processes (servers, watches, child processes); timing logic that a Clock drives belongs on a
// ManualClock instead (controller/common/clock.h).
#ifndef TWINSCALE_TESTS_UTIL_EVENTUALLY_H_
#define TWINSCALE_TESTS_UTIL_EVENTUALLY_H_

#include <functional>

#include "absl/time/time.h"

namespace twinscale::testutil {

// Calls `done` at once and then every `poll` until it returns true (true) or `timeout` has passed
// since the call began (false); the last call comes at the deadline.
bool Eventually(const std::function<bool()>& done, absl::Duration timeout = absl::Seconds(10),
                absl::Duration poll = absl::Milliseconds(10));

}  // namespace twinscale::testutil

#endif  // TWINSCALE_TESTS_UTIL_EVENTUALLY_H_
