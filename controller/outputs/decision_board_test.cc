// The DecisionBoard's contract: what a publish, a repeat publish, a removal and a leadership flip
// do to the entries, the version and the listeners, and that Unsubscribe really stops a listener.
#include "controller/outputs/decision_board.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace twinscale::outputs {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1795251600);

PublishedDecision Decision(int32_t desired, int32_t current, bool stale = false) {
  PublishedDecision d;
  d.mode = api::Mode::kKeda;
  d.desired_replicas = desired;
  d.current_replicas = current;
  d.inputs_stale = stale;
  d.decided_at = kT0;
  return d;
}

TEST(DecisionBoardTest, PublishedReplicasHoldAtTheCurrentCountWhileInputsAreStale) {
  EXPECT_EQ(Decision(7, 4).published_replicas(), 7);
  EXPECT_EQ(Decision(7, 4, /*stale=*/true).published_replicas(), 4);
  EXPECT_EQ(Decision(1, 4, /*stale=*/true).published_replicas(), 4);  // never the scale-in
}

TEST(DecisionBoardTest, PublishGetAndListInNamespaceThenNameOrder) {
  DecisionBoard board;
  board.Publish("b", "x", Decision(2, 2));
  board.Publish("a-b", "y", Decision(3, 3));  // "a-b/y" < "a/z" as strings, but "a" < "a-b"
  board.Publish("a", "z", Decision(4, 4));
  board.Publish("a", "m", Decision(5, 5));
  std::vector<std::string> keys;
  for (const BoardEntry& e : board.List()) keys.push_back(e.namespace_name + "/" + e.name);
  EXPECT_EQ(keys, (std::vector<std::string>{"a/m", "a/z", "a-b/y", "b/x"}));
  ASSERT_EQ(board.List("a").size(), 2u);
  EXPECT_EQ(board.List("a")[1].name, "z");
  auto e = board.Get("a-b", "y");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->decision.desired_replicas, 3);
  EXPECT_FALSE(board.Get("a", "y").has_value());
}

TEST(DecisionBoardTest, VersionCountsChangesAndARepeatedDecisionIsNotAChange) {
  DecisionBoard board;
  std::vector<std::string> hints;
  board.Subscribe([&](std::string_view key) { hints.emplace_back(key); });
  EXPECT_EQ(board.version(), 0u);
  board.Publish("llm", "a", Decision(3, 3));
  EXPECT_EQ(board.version(), 1u);
  EXPECT_EQ(board.Get("llm", "a")->version, 1u);
  // The same decision a pass later: only decided_at moves.
  PublishedDecision later = Decision(3, 3);
  later.decided_at = kT0 + absl::Seconds(15);
  board.Publish("llm", "a", later);
  EXPECT_EQ(board.version(), 1u);
  EXPECT_EQ(board.Get("llm", "a")->decision.decided_at, kT0 + absl::Seconds(15));
  // A new count, staleness, or admission limit is a change.
  board.Publish("llm", "a", Decision(4, 3));
  board.Publish("llm", "a", Decision(4, 3, /*stale=*/true));
  PublishedDecision limited = Decision(4, 3, true);
  limited.admission = {true, 12.5, 4};
  board.Publish("llm", "a", limited);
  EXPECT_EQ(board.version(), 4u);
  EXPECT_EQ(board.Get("llm", "a")->version, 4u);
  board.Remove("llm", "a");
  board.Remove("llm", "a");  // unknown: nothing happens
  EXPECT_EQ(board.version(), 5u);
  // One hint per change: the first publish, three changes, the removal.
  EXPECT_EQ(hints, std::vector<std::string>(5, "llm/a"));
}

TEST(DecisionBoardTest, AFollowerServesNothingAndANewTermStartsEmpty) {
  DecisionBoard board;
  std::vector<std::string> hints;
  board.Subscribe([&](std::string_view key) { hints.emplace_back(key); });
  EXPECT_TRUE(board.serving());
  board.Publish("llm", "a", Decision(3, 3));
  board.SetServing(false);
  EXPECT_FALSE(board.serving());
  EXPECT_TRUE(board.List().empty());  // the earlier term's decisions are gone
  board.SetServing(false);            // no change, no hint
  board.SetServing(true);
  EXPECT_TRUE(board.serving());
  EXPECT_TRUE(board.List().empty());
  EXPECT_EQ(hints, (std::vector<std::string>{"llm/a", "", ""}));
}

TEST(DecisionBoardTest, UnsubscribeWaitsOutARunningListenerAndStopsFurtherCalls) {
  DecisionBoard board;
  std::atomic<int> calls{0};
  std::atomic<bool> in_listener{false};
  const auto id = board.Subscribe([&](std::string_view) {
    in_listener = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ++calls;
    in_listener = false;
  });
  std::thread publisher([&] { board.Publish("llm", "a", Decision(2, 2)); });
  while (!in_listener.load()) std::this_thread::yield();
  board.Unsubscribe(id);
  // Unsubscribe returned: the running call has finished...
  EXPECT_FALSE(in_listener.load());
  EXPECT_EQ(calls.load(), 1);
  publisher.join();
  // ...and no new one starts.
  board.Publish("llm", "a", Decision(3, 2));
  EXPECT_EQ(calls.load(), 1);
}

TEST(DecisionBoardTest, ListenersMayReadTheBoardAndSeeTheChange) {
  DecisionBoard board;
  std::vector<int32_t> seen;
  board.Subscribe([&](std::string_view key) {
    if (auto e = board.Get("llm", "a")) seen.push_back(e->decision.desired_replicas);
  });
  board.Publish("llm", "a", Decision(2, 2));
  board.Publish("llm", "a", Decision(5, 2));
  EXPECT_EQ(seen, (std::vector<int32_t>{2, 5}));
}

}  // namespace
}  // namespace twinscale::outputs
