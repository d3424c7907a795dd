// The work queue's client-go semantics, case by case: de-duplication, no key to two workers at
// once, re-queue of a key added while processed, delayed adds on a manual clock, shutdown.
#include "controller/reconcile/work_queue.h"

#include <gtest/gtest.h>

#include <thread>

namespace twinscale::reconcile {
namespace {

TEST(WorkQueueTest, AddingTwiceQueuesOnce) {
  ManualClock clock;
  WorkQueue q(&clock);
  q.Add("ns/a");
  q.Add("ns/b");
  q.Add("ns/a");
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(*q.Get(), "ns/a");
  EXPECT_EQ(*q.Get(), "ns/b");
  EXPECT_EQ(q.GetFor(absl::Milliseconds(5)), std::nullopt);
}

TEST(WorkQueueTest, AKeyAddedWhileProcessingComesBackOnlyAfterDone) {
  ManualClock clock;
  WorkQueue q(&clock);
  q.Add("ns/a");
  ASSERT_EQ(*q.Get(), "ns/a");
  q.Add("ns/a");  // e.g. a watch event during the reconcile
  EXPECT_EQ(q.GetFor(absl::Milliseconds(5)), std::nullopt);  // not to a second worker
  q.Done("ns/a");
  EXPECT_EQ(q.GetFor(absl::Milliseconds(5)), "ns/a");
}

TEST(WorkQueueTest, DelayedKeysComeOutWhenDueInDueOrder) {
  ManualClock clock;
  WorkQueue q(&clock);
  q.AddAfter("ns/late", absl::Seconds(15));
  q.AddAfter("ns/early", absl::Seconds(5));
  EXPECT_EQ(q.GetFor(absl::Milliseconds(5)), std::nullopt);
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(q.GetFor(absl::Milliseconds(5)), "ns/early");
  clock.Advance(absl::Seconds(10));
  EXPECT_EQ(q.GetFor(absl::Milliseconds(5)), "ns/late");
  // An earlier schedule of a key wins; Add makes it due at once.
  q.AddAfter("ns/x", absl::Seconds(30));
  q.AddAfter("ns/x", absl::Seconds(10));
  clock.Advance(absl::Seconds(10));
  EXPECT_EQ(q.GetFor(absl::Milliseconds(5)), "ns/x");
  q.AddAfter("ns/y", absl::Seconds(30));
  q.Add("ns/y");
  EXPECT_EQ(q.GetFor(absl::Milliseconds(5)), "ns/y");
}

TEST(WorkQueueTest, ForgetDropsPendingWork) {
  ManualClock clock;
  WorkQueue q(&clock);
  q.Add("ns/a");
  q.AddAfter("ns/b", absl::Seconds(1));
  q.Forget("ns/a");
  q.Forget("ns/b");
  clock.Advance(absl::Seconds(2));
  EXPECT_EQ(q.GetFor(absl::Milliseconds(5)), std::nullopt);
}

TEST(WorkQueueTest, ShutDownWakesABlockedWorker) {
  RealClock clock;
  WorkQueue q(&clock);
  std::optional<std::string> got = "sentinel";
  std::thread worker([&] { got = q.Get(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  q.ShutDown();
  worker.join();
  EXPECT_EQ(got, std::nullopt);
  q.Add("ns/a");  // ignored after shutdown
  EXPECT_EQ(q.Len(), 0u);
}

}  // namespace
}  // namespace twinscale::reconcile
