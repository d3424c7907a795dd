// The informer against the in-memory FakeKubeClient: list then watch, handler calls in order,
// bookmarks, resuming after a dropped stream with backoff, re-listing after the server said
// Expired (deletions during the gap delivered, as DeltaFIFO.Replace does), paging, whether the
// cache is current while list or watch fail, prompt Stop().
#include "controller/kube/informer.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "controller/kube/object_meta.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_kube_client.h"
#include "tests/fakes/recording_handler.h"
#include "tests/util/eventually.h"

namespace twinscale::kube {
namespace {

using fakes::FakeKubeClient;
using nlohmann::json;
using ::testing::ElementsAre;

json Pod(const std::string& ns, const std::string& name, const std::string& phase = "Running") {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"app", "vllm"}}}}},
          {"spec", {{"phase-hint", phase}}}};
}

using Recorder = fakes::RecordingHandler;
using testutil::Eventually;  // real time: the informer runs on its own thread

InformerOptions PodsIn(const std::string& ns) {
  InformerOptions o;
  o.resource = kPods;
  o.namespace_name = ns;
  return o;
}

TEST(InformerTest, ListsThenWatchesAndCallsHandlersInOrder) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(kPods, "ml", Pod("ml", "a")).ok());
  ASSERT_TRUE(fake.Create(kPods, "ml", Pod("ml", "b")).ok());
  ASSERT_TRUE(fake.Create(kPods, "other", Pod("other", "x")).ok());
  Informer informer(&fake, PodsIn("ml"));
  Recorder recorder;
  informer.AddHandler(&recorder);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(10)));
  EXPECT_THAT(recorder.Take(2), ElementsAre("add ml/a", "add ml/b"));
  EXPECT_EQ(informer.List().size(), 2u);
  ASSERT_TRUE(fake.WaitForOpenWatches(1, absl::Seconds(10)));

  ASSERT_TRUE(fake.Create(kPods, "ml", Pod("ml", "c")).ok());
  ASSERT_TRUE(fake.MergePatch(kPods, "ml", "a", {{"spec", {{"phase-hint", "Failed"}}}}).ok());
  ASSERT_TRUE(fake.Delete(kPods, "ml", "b").ok());
  ASSERT_TRUE(fake.Create(kPods, "other", Pod("other", "y")).ok());  // another namespace
  EXPECT_THAT(recorder.Take(3), ElementsAre("add ml/c", "update ml/a", "delete ml/b"));

  std::optional<json> a = informer.Get("ml", "a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ((*a)["spec"]["phase-hint"], "Failed");
  EXPECT_FALSE(informer.Get("ml", "b").has_value());
  EXPECT_FALSE(informer.Get("other", "y").has_value());
  // The fake's resourceVersions count from 101: a, b, x = 101..103; c 104, a's patch 105, b's
  // deletion 106, other/y 107 (not this informer's namespace, so never seen).
  EXPECT_EQ(informer.LastResourceVersion(), "106");
  informer.Stop();
  const InformerStats s = informer.stats();
  EXPECT_EQ(s.lists, 1);
  EXPECT_EQ(s.relists, 0);
  EXPECT_EQ(s.watches, 1);
  EXPECT_EQ(recorder.count(), 0u);
}

TEST(InformerTest, BookmarksMoveTheResourceVersionWithoutHandlerCalls) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(kPods, "ml", Pod("ml", "a")).ok());
  Informer informer(&fake, PodsIn("ml"));
  Recorder recorder;
  informer.AddHandler(&recorder);
  informer.Start();
  EXPECT_THAT(recorder.Take(1), ElementsAre("add ml/a"));
  ASSERT_TRUE(fake.WaitForOpenWatches(1, absl::Seconds(10)));
  // Writes elsewhere move the store's resourceVersion past anything this watch delivers.
  ASSERT_TRUE(fake.Create(kPods, "other", Pod("other", "x")).ok());
  ASSERT_TRUE(fake.Create(kPods, "other", Pod("other", "y")).ok());
  fake.SendBookmarks();
  EXPECT_TRUE(
      Eventually([&] { return informer.LastResourceVersion() == fake.resource_version(); }));
  informer.Stop();
  EXPECT_EQ(recorder.count(), 0u);
}

TEST(InformerTest, RelistAfterExpiredDeliversWhatChangedDuringTheGap) {
  FakeKubeClient fake;
  for (const char* name : {"a", "b", "c"})
    ASSERT_TRUE(fake.Create(kPods, "ml", Pod("ml", name)).ok());
  InformerOptions options = PodsIn("ml");
  options.backoff = BackoffPolicy{absl::Seconds(1), absl::Seconds(30), 2.0, 0.2};
  absl::Mutex sleeps_mu;
  std::vector<absl::Duration> sleeps;
  options.sleep = [&](absl::Duration d) {
    {
      absl::MutexLock lock(&sleeps_mu);
      sleeps.push_back(d);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the real wait is not the point
  };
  Informer informer(&fake, options);
  Recorder recorder;
  informer.AddHandler(&recorder);
  informer.Start();
  EXPECT_THAT(recorder.Take(3), ElementsAre("add ml/a", "add ml/b", "add ml/c"));
  ASSERT_TRUE(fake.WaitForOpenWatches(1, absl::Seconds(10)));

  // The API server goes away: the stream drops and new watches fail.
  std::atomic<bool> down{true};
  fake.SetInterceptor([&](const FakeKubeClient::Request& r) {
    return down && r.verb == "watch" ? absl::UnavailableError("connection refused")
                                     : absl::OkStatus();
  });
  fake.DropWatches();
  ASSERT_TRUE(Eventually([&] { return informer.stats().errors >= 3; }));
  // Meanwhile: b is deleted, c changes, d appears, and the server compacts its history.
  ASSERT_TRUE(fake.Delete(kPods, "ml", "b").ok());
  ASSERT_TRUE(fake.MergePatch(kPods, "ml", "c", {{"spec", {{"phase-hint", "Failed"}}}}).ok());
  ASSERT_TRUE(fake.Create(kPods, "ml", Pod("ml", "d")).ok());
  fake.Compact();
  down = false;

  // The resumed watch is told Expired; the re-list is reconciled with the cache: a is unchanged
  // and not delivered again.
  EXPECT_THAT(recorder.Take(3), ElementsAre("delete ml/b", "update ml/c", "add ml/d"));
  ASSERT_TRUE(fake.WaitForOpenWatches(1, absl::Seconds(10)));
  informer.Stop();
  const InformerStats s = informer.stats();
  EXPECT_EQ(s.lists, 2);
  EXPECT_EQ(s.relists, 1);
  EXPECT_EQ(s.expired, 1);
  EXPECT_GE(s.watch_restarts, 3);
  EXPECT_EQ(recorder.count(), 0u);
  std::vector<std::string> keys;
  for (const json& p : informer.List()) keys.push_back(ObjectKey(p));
  EXPECT_THAT(keys, ElementsAre("ml/a", "ml/c", "ml/d"));

  // The failed watches backed off exponentially: about 1 s, then about 2 s (+-20% jitter).
  absl::MutexLock lock(&sleeps_mu);
  ASSERT_GE(sleeps.size(), 2u);
  EXPECT_GE(sleeps[0], absl::Milliseconds(800));
  EXPECT_LE(sleeps[0], absl::Milliseconds(1200));
  EXPECT_GE(sleeps[1], absl::Milliseconds(1600));
  EXPECT_LE(sleeps[1], absl::Milliseconds(2400));
}

TEST(InformerTest, ResumesFromTheLastResourceVersionAfterADroppedStream) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(kPods, "ml", Pod("ml", "a")).ok());
  InformerOptions options = PodsIn("ml");
  options.sleep = [](absl::Duration) {};
  Informer informer(&fake, options);
  Recorder recorder;
  informer.AddHandler(&recorder);
  informer.Start();
  EXPECT_THAT(recorder.Take(1), ElementsAre("add ml/a"));
  ASSERT_TRUE(fake.WaitForOpenWatches(1, absl::Seconds(10)));
  fake.DropWatches();
  ASSERT_TRUE(Eventually([&] { return informer.stats().watch_restarts >= 1; }));
  ASSERT_TRUE(fake.Create(kPods, "ml", Pod("ml", "b")).ok());
  EXPECT_THAT(recorder.Take(1), ElementsAre("add ml/b"));
  informer.Stop();
  EXPECT_EQ(informer.stats().lists, 1) << "a dropped stream resumes; it does not re-list";
}

TEST(InformerTest, ListsPageByPage) {
  FakeKubeClient fake;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(fake.Create(kPods, "ml", Pod("ml", absl::StrCat("p", i))).ok());
  }
  InformerOptions options = PodsIn("ml");
  options.page_size = 2;
  Informer informer(&fake, options);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(10)));
  EXPECT_EQ(informer.List("ml").size(), 5u);
  informer.Stop();
  int lists = 0;
  for (const auto& r : fake.requests()) lists += r.verb == "list";
  EXPECT_EQ(lists, 3) << "5 objects in pages of 2";
}

// Current() tells a caller whether the cache may be missing changes: not while list and watch
// work; yes from a failure until the server answers again (an event, or a watch that stays open a
// second — the informer's clock says how long, a manual one here).
TEST(InformerTest, IsCurrentUnlessItsListOrWatchKeepsFailing) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(kPods, "ml", Pod("ml", "a")).ok());
  ManualClock clock(absl::FromUnixSeconds(1'800'000'000));
  std::atomic<bool> refuse{false};
  fake.SetInterceptor([&](const FakeKubeClient::Request& r) {
    return r.verb == "watch" && refuse.load() ? absl::UnavailableError("connection refused")
                                              : absl::OkStatus();
  });
  InformerOptions options = PodsIn("ml");
  options.clock = &clock;
  options.sleep = [](absl::Duration) { std::this_thread::sleep_for(std::chrono::milliseconds(5)); };
  Informer informer(&fake, options);
  EXPECT_FALSE(informer.Current()) << "not listed yet";
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(10)));
  EXPECT_TRUE(informer.Current());

  // The watch breaks and can't come back: the cache may be missing changes.
  ASSERT_TRUE(fake.WaitForOpenWatches(1, absl::Seconds(10)));
  refuse = true;
  fake.DropWatches();
  ASSERT_TRUE(Eventually([&] { return !informer.Current(); }));
  ASSERT_TRUE(Eventually([&] { return informer.stats().errors >= 3; }));
  EXPECT_FALSE(informer.Current()) << "retries that fail don't make it current";

  // The watch opens again: current once it has stayed open a second, by the informer's clock.
  refuse = false;
  ASSERT_TRUE(fake.WaitForOpenWatches(1, absl::Seconds(10)));
  EXPECT_FALSE(informer.Current()) << "a watch that just opened has proven nothing yet";
  clock.Advance(absl::Seconds(2));
  EXPECT_TRUE(informer.Current());

  // Broken again; this time an event on the resumed watch shows the server is back.
  refuse = true;
  fake.DropWatches();
  ASSERT_TRUE(Eventually([&] { return !informer.Current(); }));
  refuse = false;
  ASSERT_TRUE(fake.WaitForOpenWatches(1, absl::Seconds(10)));
  ASSERT_TRUE(fake.Create(kPods, "ml", Pod("ml", "b")).ok());
  EXPECT_TRUE(Eventually([&] { return informer.Current(); }));
  EXPECT_TRUE(informer.Get("ml", "b").has_value());
  informer.Stop();
}

TEST(InformerTest, StopInterruptsAnOpenWatchAndABackoffWait) {
  FakeKubeClient fake;
  {
    Informer informer(&fake, PodsIn("ml"));  // a 5-minute watch
    informer.Start();
    ASSERT_TRUE(fake.WaitForOpenWatches(1, absl::Seconds(10)));
    informer.Stop();
    EXPECT_EQ(fake.open_watches(), 0);
  }
  // A list that keeps failing, with an hour of backoff and the default (real) sleep.
  fake.SetInterceptor(
      [](const FakeKubeClient::Request&) { return absl::UnavailableError("down"); });
  InformerOptions options = PodsIn("ml");
  options.backoff.initial = absl::Hours(1);
  options.backoff.max = absl::Hours(1);
  Informer informer(&fake, options);
  informer.Start();
  ASSERT_TRUE(Eventually([&] { return informer.stats().errors >= 1; }));
  informer.Stop();  // would take an hour if the wait ignored Stop()
  EXPECT_FALSE(informer.HasSynced());
  EXPECT_EQ(informer.stats().last_error, "down");
}

}  // namespace
}  // namespace twinscale::kube
