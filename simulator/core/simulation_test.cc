// The event kernel: (time, sequence) order with FIFO ties, RunUntil bounds, Stop.
#include "simulator/core/simulation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace twinscale::sim {
namespace {

struct Recorder : EventHandler {
  std::vector<std::pair<int64_t, uint64_t>> fired;
  Simulation* sim = nullptr;
  void OnEvent(uint64_t tag, SimTime now) override {
    fired.push_back({now.nanos(), tag});
    if (tag == 99) sim->Stop();
    if (tag == 7) sim->ScheduleAfter(SimDuration::Zero(), this, 8);  // same instant, after
  }
};

TEST(SimTimeTest, RoundingToNanosIsLlrounds) {
  // Halves away from zero, and the values next to them, as std::llround rounds them.
  for (const double x : {0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994,
                         -0.49999999999999994, 4503599627370495.5, -4503599627370495.5,
                         4503599627370497.0, 9.2e18, -9.2e18, 1e-300, 123456789.49999999}) {
    EXPECT_EQ(RoundToNanos(x), std::llround(x)) << x;
  }
  // Times the models produce: nanoseconds from picoseconds to days, either sign.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-3, 14), unit(0, 1);
  for (int i = 0; i < 200000; ++i) {
    const double magnitude = std::pow(10.0, exponent(rng));
    const double x = (unit(rng) < 0.5 ? -1 : 1) * magnitude;
    ASSERT_EQ(RoundToNanos(x), std::llround(x)) << x;
    const double half = std::floor(magnitude) + 0.5;  // an exact half
    ASSERT_EQ(RoundToNanos(half), std::llround(half)) << half;
  }
}

TEST(SimulationTest, FiresInTimeOrderAndFifoOnTies) {
  Simulation sim;
  Recorder r;
  r.sim = &sim;
  sim.Schedule(SimTime::FromNanos(30), &r, 1);
  sim.Schedule(SimTime::FromNanos(10), &r, 2);
  sim.Schedule(SimTime::FromNanos(30), &r, 3);
  sim.Schedule(SimTime::FromNanos(10), &r, 7);
  sim.Schedule(SimTime::FromNanos(10), &r, 4);
  sim.Run();
  const std::vector<std::pair<int64_t, uint64_t>> want = {{10, 2}, {10, 7}, {10, 4},
                                                          {10, 8}, {30, 1}, {30, 3}};
  EXPECT_EQ(r.fired, want);
  EXPECT_EQ(sim.Now().nanos(), 30);
}

TEST(SimulationTest, RunUntilIsInclusiveAndAdvancesTheClock) {
  Simulation sim;
  Recorder r;
  r.sim = &sim;
  sim.Schedule(SimTime::FromNanos(100), &r, 1);
  sim.Schedule(SimTime::FromNanos(200), &r, 2);
  EXPECT_EQ(sim.RunUntil(SimTime::FromNanos(100)), 1);
  EXPECT_EQ(sim.Now().nanos(), 100);
  EXPECT_EQ(sim.RunUntil(SimTime::FromNanos(150)), 0);
  EXPECT_EQ(sim.Now().nanos(), 150);
  EXPECT_EQ(sim.NextEventTime().nanos(), 200);
}

TEST(SimulationTest, StopEndsTheRun) {
  Simulation sim;
  Recorder r;
  r.sim = &sim;
  sim.Schedule(SimTime::FromNanos(1), &r, 99);
  sim.Schedule(SimTime::FromNanos(2), &r, 1);
  sim.Run();
  EXPECT_EQ(r.fired.size(), 1u);
  EXPECT_FALSE(sim.Empty());
}

// ScheduleAsIf (coalesced engine steps): among events at the same time, an event scheduled "as if"
// at instant S fires after those scheduled before S and before those scheduled after S, whenever it
// was really scheduled; CurrentEvent reports where the firing event sits; Horizon is RunUntil's.
TEST(SimulationTest, ScheduleAsIfOrdersTiesByTheInstantGiven) {
  struct Handler : EventHandler {
    Simulation* sim = nullptr;
    std::vector<uint64_t> fired;
    std::vector<Simulation::Position> positions;
    std::vector<int64_t> horizons;
    void OnEvent(uint64_t tag, SimTime now) override {
      fired.push_back(tag);
      positions.push_back(sim->CurrentEvent());
      horizons.push_back(sim->Horizon().nanos());
      if (tag == 10) sim->Schedule(SimTime::FromNanos(100), this, 3);  // scheduled at 20
    }
  };
  Simulation sim;
  Handler h;
  h.sim = &sim;
  sim.Schedule(SimTime::FromNanos(100), &h, 1);                              // at 0
  sim.Schedule(SimTime::FromNanos(20), &h, 10);                              // at 0
  sim.ScheduleAsIf(SimTime::FromNanos(100), SimTime::FromNanos(50), &h, 2);  // as if at 50
  sim.Schedule(SimTime::FromNanos(100), &h, 5, Simulation::Band::kLate);     // late band
  EXPECT_FALSE(sim.CurrentEvent().in_event);
  EXPECT_EQ(sim.Horizon().nanos(), 0);
  sim.RunUntil(SimTime::FromNanos(100));
  const std::vector<uint64_t> want = {10, 1, 3, 2, 5};
  EXPECT_EQ(h.fired, want);
  ASSERT_EQ(h.positions.size(), 5u);
  EXPECT_EQ(h.positions[3].scheduled_at.nanos(), 50);
  EXPECT_EQ(h.positions[2].scheduled_at.nanos(), 20);
  EXPECT_TRUE(h.positions[3].in_event);
  EXPECT_FALSE(h.positions[3].late);
  EXPECT_TRUE(h.positions[4].late);
  for (int64_t horizon : h.horizons) EXPECT_EQ(horizon, 100);
  EXPECT_FALSE(sim.CurrentEvent().in_event);
  EXPECT_EQ(sim.Horizon().nanos(), 100);  // Now() after RunUntil
}

TEST(SimulationDeathTest, SchedulingInThePastAborts) {
  Simulation sim;
  Recorder r;
  r.sim = &sim;
  sim.Schedule(SimTime::FromNanos(10), &r, 1);
  sim.Run();
  EXPECT_DEATH(sim.Schedule(SimTime::FromNanos(5), &r, 1), "in the past");
}

}  // namespace
}  // namespace twinscale::sim
