// The scale-in victim rule: hand-worked rankings.
#include "controller/policy/scale_in_victims.h"

#include <gtest/gtest.h>

namespace twinscale::policy {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
using Stage = state::PodView::Stage;

TEST(ChooseScaleInVictimsTest, UnreadyNewestFirstThenLeastLoaded) {
  const absl::Time t = kT0;
  std::vector<VictimCandidate> pods = {
      {"ready-busy", true, t, 20.0},
      {"ready-idle", true, t, 1.0},
      {"ready-unread", true, t, std::nullopt},
      {"starting-old", false, t, std::nullopt},
      {"starting-new", false, t + absl::Minutes(1), std::nullopt},
  };
  EXPECT_EQ(ChooseScaleInVictims(pods, 3),
            (std::vector<std::string>{"starting-new", "starting-old", "ready-idle"}));
  EXPECT_EQ(ChooseScaleInVictims(pods, 5).back(), "ready-unread");
  EXPECT_EQ(ChooseScaleInVictims(pods, 9).size(), 5u);
  EXPECT_TRUE(ChooseScaleInVictims(pods, 0).empty());
}

TEST(ChooseScaleInVictimsTest, EquallyLoadedReadyPodsGoNewestFirst) {
  // Three idle Ready pods: the ReplicaSet would remove the newest of equals, so the mark goes there
  // too, whatever the names say.
  const std::vector<VictimCandidate> pods = {
      {"a-oldest", true, kT0, 0.0},
      {"b-newest", true, kT0 + absl::Minutes(9), 0.0},
      {"c-middle", true, kT0 + absl::Minutes(5), 0.0},
  };
  EXPECT_EQ(ChooseScaleInVictims(pods, 2), (std::vector<std::string>{"b-newest", "c-middle"}));
}

TEST(VictimCandidatesOfViewTest, LeavesTerminatingPodsOutAndReadsInFlightFromScrapes) {
  // At 12:00: a Ready pod created 5 min ago running 3 and waiting 1 on one engine and running 2
  // on another (6 in flight); a Ready pod never scraped; a loading pod; a terminating one.
  state::ClusterView view;
  view.now = kT0;
  state::PodView read;
  read.name = "read";
  read.stage = Stage::kReady;
  read.age = absl::Minutes(5);
  read.scrape_ok = true;
  metrics::EngineObservation e1;
  e1.running = 3;
  e1.waiting = 1;
  metrics::EngineObservation e2;
  e2.running = 2;
  read.observation.engines = {e1, e2};
  state::PodView unread = read;
  unread.name = "unread";
  unread.scrape_ok = false;
  state::PodView loading = unread;
  loading.name = "loading";
  loading.stage = Stage::kLoading;
  loading.age = absl::Minutes(1);
  state::PodView going = read;
  going.name = "going";
  going.stage = Stage::kTerminating;
  view.pods = {read, unread, loading, going};
  const std::vector<VictimCandidate> got = VictimCandidatesOf(view);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].name, "read");
  EXPECT_TRUE(got[0].ready);
  EXPECT_EQ(got[0].created, kT0 - absl::Minutes(5));
  EXPECT_EQ(got[0].in_flight, 6.0);
  EXPECT_EQ(got[1].in_flight, std::nullopt);
  EXPECT_FALSE(got[2].ready);
  // Scaling in by two takes the loading pod, then the read one (6 in flight, known) before the
  // unread one, whose load is unknown.
  EXPECT_EQ(ChooseScaleInVictims(got, 2), (std::vector<std::string>{"loading", "read"}));
}

}  // namespace
}  // namespace twinscale::policy
