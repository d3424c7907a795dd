// Tests for trace transforms, replay and summary, on small hand-built traces whose results can be
// worked out by hand (in the comments).
#include "simulator/workload/trace.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace twinscale::sim {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

// n requests one second apart from t = 0; request i has prompt i + 1 and output n - i, so the
// lengths identify the original request.
Trace UniformTrace(int n) {
  Trace t;
  t.source = "uniform";
  for (int i = 0; i < n; ++i) {
    RequestSpec r;
    r.id = static_cast<uint64_t>(i);
    r.arrival = SimTime::FromNanos(i * kSecond);
    r.prompt_tokens = i + 1;
    r.output_tokens = n - i;
    r.prefix_hashes = {static_cast<uint64_t>(i), 7};
    t.requests.push_back(r);
  }
  return t;
}

void ExpectNormalised(const Trace& t) {
  for (size_t i = 0; i < t.requests.size(); ++i) {
    EXPECT_EQ(t.requests[i].id, i);
    if (i > 0) {
      EXPECT_GE(t.requests[i].arrival, t.requests[i - 1].arrival);
    }
  }
}

TEST(NormalizeTrace, SortsStablyShiftsToZeroAndRenumbers) {
  Trace t;
  auto add = [&](int64_t ns, int32_t prompt) {
    RequestSpec r;
    r.id = 99;
    r.arrival = SimTime::FromNanos(ns);
    r.prompt_tokens = prompt;
    t.requests.push_back(r);
  };
  add(500, 1);
  add(300, 2);
  add(500, 3);  // ties with the first: stays after it
  add(300, 4);
  NormalizeTrace(t);
  // Sorted: 300 (2), 300 (4), 500 (1), 500 (3); shifted by 300.
  ASSERT_EQ(t.requests.size(), 4u);
  const int64_t want_ns[] = {0, 0, 200, 200};
  const int32_t want_prompt[] = {2, 4, 1, 3};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(t.requests[i].arrival.nanos(), want_ns[i]);
    EXPECT_EQ(t.requests[i].prompt_tokens, want_prompt[i]);
    EXPECT_EQ(t.requests[i].id, i);
  }
}

// ---- ScaleRate ------------------------------------------------------------------------------

TEST(ScaleRate, SpreadModeThreeCopiesTripleTheRequestsOverTheSameSpan) {
  const Trace in = UniformTrace(1000);  // span 999 s
  absl::StatusOr<Trace> out =
      ScaleRate(in, 3, 17, RateScaleOptions{.mode = RateScaleMode::kSpread});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->requests.size(), 3000u);
  ExpectNormalised(*out);
  // Copy 0 is unshifted, so the span is exactly the input's: [0, 999 s].
  EXPECT_EQ(out->requests.front().arrival.nanos(), 0);
  EXPECT_EQ(out->requests.back().arrival.nanos(), 999 * kSecond);

  // Each original request appears three times, never twice at the same instant (the lengths
  // identify the original request). Copy 0 keeps its prefix ids ({i, 7} for prompt i + 1); each
  // other copy has ids of its own, shared with no other copy's: the three copies of a request
  // carry three different first ids, and the id 7 that every request of the input shares becomes
  // one id per copy (three in all), still shared within its copy.
  std::map<int32_t, int> copies;
  std::map<int32_t, std::set<uint64_t>> first_ids;
  std::set<uint64_t> shared_ids, all_first_ids;
  std::set<std::tuple<int64_t, int32_t, int32_t>> seen;
  int unchanged = 0;
  for (const RequestSpec& r : out->requests) {
    ++copies[r.prompt_tokens];
    EXPECT_TRUE(seen.insert({r.arrival.nanos(), r.prompt_tokens, r.output_tokens}).second)
        << "request with prompt " << r.prompt_tokens << " twice at " << r.arrival.nanos();
    ASSERT_EQ(r.prefix_hashes.size(), 2u);
    first_ids[r.prompt_tokens].insert(r.prefix_hashes[0]);
    all_first_ids.insert(r.prefix_hashes[0]);
    shared_ids.insert(r.prefix_hashes[1]);
    if (r.prefix_hashes[0] == static_cast<uint64_t>(r.prompt_tokens - 1) &&
        r.prefix_hashes[1] == 7) {
      ++unchanged;
    }
  }
  ASSERT_EQ(copies.size(), 1000u);
  for (const auto& [prompt, n] : copies) EXPECT_EQ(n, 3) << prompt;
  EXPECT_EQ(unchanged, 1000);  // copy 0
  for (const auto& [prompt, ids] : first_ids) EXPECT_EQ(ids.size(), 3u) << prompt;
  EXPECT_EQ(all_first_ids.size(), 3000u);
  EXPECT_EQ(shared_ids.size(), 3u);

  // Each copy is the 1 s grid rotated on a circle of 999 s + 1 ns, so every 100 s window holds
  // 100 points of each copy, or 101 where the wrap puts two points 1 ns apart: 297..303 in all.
  std::vector<int> window(10, 0);
  for (const RequestSpec& r : out->requests) {
    ++window[static_cast<size_t>(std::min<int64_t>(9, r.arrival.nanos() / (100 * kSecond)))];
  }
  for (int w = 0; w < 10; ++w) {
    EXPECT_GE(window[static_cast<size_t>(w)], 297) << "window " << w;
    EXPECT_LE(window[static_cast<size_t>(w)], 303) << "window " << w;
  }
}

TEST(ScaleRate, FractionalPartThinsOneMoreCopy) {
  // k = 2.5 on 1,000 requests: 2,000 from the whole copies plus Binomial(1000, 0.5) (standard
  // deviation 15.8) from the thinned one.
  const Trace in = UniformTrace(1000);
  absl::StatusOr<Trace> out = ScaleRate(in, 2.5, 5);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(static_cast<double>(out->requests.size()), 2500, 5 * 15.8);
  ExpectNormalised(*out);
  EXPECT_EQ(out->requests.back().arrival.nanos(), 999 * kSecond);
  std::set<std::tuple<int64_t, int32_t>> seen;
  for (const RequestSpec& r : out->requests) {
    EXPECT_TRUE(seen.insert({r.arrival.nanos(), r.prompt_tokens}).second);
  }
}

TEST(ScaleRate, BelowOneJustThinsInPlace) {
  // k = 0.5 on 10,000 requests: Binomial(10000, 0.5), standard deviation 50; survivors keep their
  // original arrival (request i at i seconds, prompt i + 1).
  const Trace in = UniformTrace(10'000);
  absl::StatusOr<Trace> out = ScaleRate(in, 0.5, 5);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(static_cast<double>(out->requests.size()), 5000, 5 * 50);
  ExpectNormalised(*out);
  for (const RequestSpec& r : out->requests) {
    EXPECT_EQ(r.arrival.nanos(), (r.prompt_tokens - 1) * kSecond);
  }
}

TEST(ScaleRate, OneIsTheIdentity) {
  const Trace in = UniformTrace(50);
  absl::StatusOr<Trace> out = ScaleRate(in, 1, 5);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->requests.size(), in.requests.size());
  for (size_t i = 0; i < in.requests.size(); ++i) {
    EXPECT_EQ(out->requests[i].id, in.requests[i].id);
    EXPECT_EQ(out->requests[i].arrival, in.requests[i].arrival);
    EXPECT_EQ(out->requests[i].prompt_tokens, in.requests[i].prompt_tokens);
  }
}

TEST(ScaleRate, SameSeedSameTraceDifferentSeedDifferent) {
  const Trace in = UniformTrace(500);
  absl::StatusOr<Trace> a = ScaleRate(in, 2.7, 1), b = ScaleRate(in, 2.7, 1),
                        c = ScaleRate(in, 2.7, 2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto arrivals = [](const Trace& t) {
    std::vector<int64_t> v;
    for (const RequestSpec& r : t.requests) v.push_back(r.arrival.nanos() * 7 + r.prompt_tokens);
    return v;
  };
  EXPECT_EQ(arrivals(*a), arrivals(*b));
  EXPECT_NE(arrivals(*a), arrivals(*c));
}

// A ramp: minute m (0..29) holds 10 + 4 m requests, evenly spaced inside it (request j of minute m
// at 60 m + 60 j / n_m seconds). 30 minutes, 2,040 requests.
Trace RampTrace() {
  Trace t;
  t.source = "ramp";
  for (int m = 0; m < 30; ++m) {
    const int n = 10 + 4 * m;
    for (int j = 0; j < n; ++j) {
      RequestSpec r;
      r.arrival = SimTime::FromNanos(60 * kSecond * m + 60 * kSecond * j / n);
      r.prompt_tokens = 100;
      r.output_tokens = 10;
      t.requests.push_back(r);
    }
  }
  NormalizeTrace(t);
  return t;
}

std::vector<int> PerMinute(const Trace& t) {
  std::vector<int> n(30, 0);
  for (const RequestSpec& r : t.requests) {
    ++n[static_cast<size_t>(std::min<int64_t>(29, r.arrival.nanos() / (60 * kSecond)))];
  }
  return n;
}

TEST(ScaleRate, JitterModeKeepsTheRateCurve) {
  // x40 with the default 60 s jitter. Minute m of the result should hold about 40 (10 + 4 m)
  // requests. Bound: were the minute's count Poisson with that mean, its standard deviation
  // would be sqrt(40 n_m) (20 at the first minute, 69 at the last); 4 sigma. The copies are
  // less noisy than that (each copy moves a minute's count by at most the 4-request step to the
  // neighbouring minute, and symmetric offsets cancel on a linear ramp), so the bound is loose
  // for jitter but still rejects spread, whose every minute sits near 40 x the mean 68 = 2,720.
  // The first and last minutes are excluded: the part of a copy shifted past one end re-enters
  // at the other, so they mix the two ends of the ramp.
  const Trace in = RampTrace();
  for (const uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    absl::StatusOr<Trace> out = ScaleRate(in, 40, seed);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->requests.size(), 40u * 2040u);
    const std::vector<int> n = PerMinute(*out);
    for (int m = 1; m < 29; ++m) {
      const double want = 40.0 * (10 + 4 * m);
      EXPECT_NEAR(n[static_cast<size_t>(m)], want, 4 * std::sqrt(want)) << "minute " << m;
    }
  }
  // Spread flattens the same ramp: its first interior minute is far above 40 x 14 = 560 (the
  // copies' mean is 2,720 a minute), outside the band the jitter mode meets.
  absl::StatusOr<Trace> flat =
      ScaleRate(in, 40, 1, RateScaleOptions{.mode = RateScaleMode::kSpread});
  ASSERT_TRUE(flat.ok());
  EXPECT_GT(PerMinute(*flat)[1], 560 + 4 * std::sqrt(560.0));
}

TEST(ScaleRate, JitteredCopiesWrapInsideTheSpan) {
  // A trace from 5 s to 104 s (100 requests one second apart, shifted), jitter 30 s and 60 min
  // (beyond the span, so capped at it): every arrival of every copy stays in [5 s, 104 s], the
  // input's own first and last arrivals.
  Trace in = UniformTrace(100);
  for (RequestSpec& r : in.requests) r.arrival = r.arrival + SimDuration::Seconds(5);
  for (const int64_t jitter_s : {30, 3600}) {
    SCOPED_TRACE(jitter_s);
    absl::StatusOr<Trace> out =
        ScaleRate(in, 7.5, 9, RateScaleOptions{.jitter = SimDuration::Seconds(jitter_s)});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNormalised(*out);
    for (const RequestSpec& r : out->requests) {
      EXPECT_GE(r.arrival.nanos(), 5 * kSecond);
      EXPECT_LE(r.arrival.nanos(), 104 * kSecond);
    }
    std::set<std::tuple<int64_t, int32_t>> seen;  // never twice at one instant
    for (const RequestSpec& r : out->requests) {
      EXPECT_TRUE(seen.insert({r.arrival.nanos(), r.prompt_tokens}).second);
    }
  }
  // With a 30 s jitter a copy's request moves by at most 30 s, or wraps to the other end: request
  // i (prompt i + 1, at 5 + i s) lands within 30 s of 5 + i, or within 30 s of it around the
  // circle of 99 s + 1 ns.
  absl::StatusOr<Trace> out =
      ScaleRate(in, 7, 9, RateScaleOptions{.jitter = SimDuration::Seconds(30)});
  ASSERT_TRUE(out.ok());
  for (const RequestSpec& r : out->requests) {
    const double moved =
        std::abs(static_cast<double>(r.arrival.nanos()) / kSecond - (5 + r.prompt_tokens - 1));
    EXPECT_TRUE(moved <= 30 || moved >= 99 - 30) << "prompt " << r.prompt_tokens;
  }
}

TEST(ScaleRate, JitterModeSameSeedSameTraceDifferentSeedDifferent) {
  const Trace in = RampTrace();
  absl::StatusOr<Trace> a = ScaleRate(in, 3.5, 4), b = ScaleRate(in, 3.5, 4),
                        c = ScaleRate(in, 3.5, 5);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto arrivals = [](const Trace& t) {
    std::vector<int64_t> v;
    for (const RequestSpec& r : t.requests) v.push_back(r.arrival.nanos());
    return v;
  };
  EXPECT_EQ(arrivals(*a), arrivals(*b));
  EXPECT_NE(arrivals(*a), arrivals(*c));
}

TEST(ScaleRate, RejectsBadJitter) {
  const Trace in = UniformTrace(10);  // spans 9 s
  struct Case {
    std::string name;
    double k;
    RateScaleOptions options;
  };
  const Case bad[] = {
      {"negative jitter", 2, RateScaleOptions{.jitter = SimDuration::Seconds(-1)}},
      {"zero jitter leaves no distinct offset for a second copy", 2,
       RateScaleOptions{.jitter = SimDuration::Zero()}},
      {"a 1 ns jitter has two offsets, too few for four copies", 4,
       RateScaleOptions{.jitter = SimDuration::Nanos(1)}},
  };
  for (const Case& c : bad) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ScaleRate(in, c.k, 1, c.options).status().code(), absl::StatusCode::kInvalidArgument);
  }
  // Zero jitter still thins (k < 1 shifts nothing), and a 1 ns jitter fits three copies (-1, +1).
  EXPECT_TRUE(ScaleRate(in, 0.5, 1, RateScaleOptions{.jitter = SimDuration::Zero()}).ok());
  EXPECT_TRUE(ScaleRate(in, 3, 1, RateScaleOptions{.jitter = SimDuration::Nanos(1)}).ok());
}

TEST(ParseRateScaleMode, NamesTheTwoModes) {
  EXPECT_EQ(*ParseRateScaleMode("jitter"), RateScaleMode::kJitter);
  EXPECT_EQ(*ParseRateScaleMode("spread"), RateScaleMode::kSpread);
  EXPECT_EQ(ParseRateScaleMode("flat").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ScaleRate, RejectsBadFactorsAndSpansTooShortToShift) {
  const Trace in = UniformTrace(10);
  struct Case {
    std::string name;
    double k;
  };
  const Case bad[] = {
      {"zero removes everything", 0}, {"negative", -1},
      {"NaN", std::nan("")},          {"infinite", std::numeric_limits<double>::infinity()},
      {"above the 1000 cap", 1000.5},
  };
  for (const Case& c : bad) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ScaleRate(in, c.k, 1).status().code(), absl::StatusCode::kInvalidArgument);
  }
  // One request spans 0 ns: a second copy would have to sit on the first.
  const Trace one = UniformTrace(1);
  EXPECT_EQ(ScaleRate(one, 2, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ScaleRate(one, 0.5, 1).ok());  // thinning needs no offset
  const absl::StatusOr<Trace> empty = ScaleRate(Trace{}, 3, 1);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->requests.empty());
}

// ---- ScaleTime ---------------------------------------------------------------------------------

Trace HandTrace() {
  Trace t;
  const int64_t ns[] = {0, 3, kSecond, 3 * kSecond};
  for (int i = 0; i < 4; ++i) {
    RequestSpec r;
    r.id = static_cast<uint64_t>(i);
    r.arrival = SimTime::FromNanos(ns[i]);
    r.prompt_tokens = 10 * (i + 1);
    r.output_tokens = i + 1;
    t.requests.push_back(r);
  }
  return t;
}

TEST(ScaleTime, MultipliesEveryTimestamp) {
  struct Case {
    std::string name;
    double f;
    std::vector<int64_t> want_ns;
  };
  const Case cases[] = {
      // 3 ns * 0.5 = 1.5 ns rounds half away from zero to 2 ns; the span 3 s halves to 1.5 s.
      {"half compresses: twice the rate", 0.5, {0, 2, kSecond / 2, 3 * kSecond / 2}},
      {"double stretches", 2, {0, 6, 2 * kSecond, 6 * kSecond}},
      {"one is the identity", 1, {0, 3, kSecond, 3 * kSecond}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<Trace> out = ScaleTime(HandTrace(), c.f);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->requests.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(out->requests[i].arrival.nanos(), c.want_ns[i]);
      EXPECT_EQ(out->requests[i].id, i);
      EXPECT_EQ(out->requests[i].prompt_tokens, static_cast<int32_t>(10 * (i + 1)));
    }
  }
}

TEST(ScaleTime, HalvingTheSpanDoublesTheMeanRate) {
  // 1,000 requests over 999 s: 1.001 req/s; f = 0.5 makes it 499.5 s and 2.002 req/s.
  absl::StatusOr<Trace> out = ScaleTime(UniformTrace(1000), 0.5);
  ASSERT_TRUE(out.ok());
  const TraceSummary s = Summarize(*out);
  EXPECT_DOUBLE_EQ(s.span_seconds, 499.5);
  EXPECT_NEAR(s.mean_rate_rps, 1000 / 499.5, 1e-12);
}

TEST(ScaleTime, RejectsBadFactors) {
  struct Case {
    std::string name;
    double f;
  };
  const Case bad[] = {
      {"zero collapses the trace", 0},
      {"negative reverses time", -0.5},
      {"NaN", std::nan("")},
      {"infinite", std::numeric_limits<double>::infinity()},
      {"3 s x 1e10 overflows int64 ns", 1e10},
  };
  for (const Case& c : bad) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ScaleTime(HandTrace(), c.f).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

// ---- Replay ------------------------------------------------------------------------------------

TEST(TraceSource, ReplaysInOrderReusingTheCallersBuffer) {
  auto trace = std::make_shared<Trace>(UniformTrace(5));
  trace->requests[0].prefix_hashes = {1, 2, 3, 4, 5};
  std::unique_ptr<RequestSource> source = MakeTraceSource(trace);
  RequestSpec r;
  ASSERT_TRUE(source->Next(r));
  EXPECT_EQ(r.prefix_hashes, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  const uint64_t* buffer = r.prefix_hashes.data();
  for (uint64_t i = 1; i < 5; ++i) {
    ASSERT_TRUE(source->Next(r));
    EXPECT_EQ(r.id, i);
    EXPECT_EQ(r.arrival.nanos(), static_cast<int64_t>(i) * kSecond);
    EXPECT_EQ(r.prefix_hashes, (std::vector<uint64_t>{i, 7}));
    EXPECT_EQ(r.prefix_hashes.data(), buffer) << "replay should not reallocate";
  }
  EXPECT_FALSE(source->Next(r));
  EXPECT_FALSE(source->Next(r));
  std::unique_ptr<RequestSource> none = MakeTraceSource(nullptr);
  EXPECT_FALSE(none->Next(r));
}

// ---- Summary -----------------------------------------------------------------------------------

TEST(Summarize, WorkedByHand) {
  // 150 requests 0.4 s apart in the first minute (0 .. 59.6 s), then 50 requests 2.4 s apart from
  // 60 s (60 .. 177.6 s). Prompts 1..200; outputs 10, except two of 1,000.
  //   span 177.6 s; mean rate 200 / 177.6 = 1.126126 req/s; peak minute 150 / 60 = 2.5 req/s;
  //   prompt mean 100.5, p99 = the ceil(0.99*200) = 198th smallest = 198;
  //   output mean (198*10 + 2*1000) / 200 = 19.9, p99 = 198th smallest = 10.
  Trace t;
  for (int i = 0; i < 200; ++i) {
    RequestSpec r;
    r.id = static_cast<uint64_t>(i);
    r.arrival = i < 150 ? SimTime::FromNanos(i * 400'000'000LL)
                        : SimTime::FromNanos(60 * kSecond + (i - 150) * 2'400'000'000LL);
    r.prompt_tokens = i + 1;
    r.output_tokens = (i == 3 || i == 170) ? 1000 : 10;
    t.requests.push_back(r);
  }
  const TraceSummary s = Summarize(t);
  EXPECT_EQ(s.requests, 200);
  EXPECT_DOUBLE_EQ(s.span_seconds, 177.6);
  EXPECT_NEAR(s.mean_rate_rps, 1.126126, 1e-6);
  EXPECT_DOUBLE_EQ(s.peak_minute_rps, 2.5);
  EXPECT_DOUBLE_EQ(s.prompt_mean, 100.5);
  EXPECT_EQ(s.prompt_p99, 198);
  EXPECT_DOUBLE_EQ(s.output_mean, 19.9);
  EXPECT_EQ(s.output_p99, 10);
}

TEST(Summarize, EmptyAndSingleRequest) {
  const TraceSummary empty = Summarize(Trace{});
  EXPECT_EQ(empty.requests, 0);
  EXPECT_EQ(empty.span_seconds, 0);
  EXPECT_EQ(empty.prompt_p99, 0);
  const TraceSummary one = Summarize(UniformTrace(1));
  EXPECT_EQ(one.requests, 1);
  EXPECT_EQ(one.span_seconds, 0);
  EXPECT_EQ(one.mean_rate_rps, 0);  // undefined over a zero span: reported as 0
  EXPECT_DOUBLE_EQ(one.peak_minute_rps, 1.0 / 60);
  EXPECT_EQ(one.prompt_p99, 1);
}

}  // namespace
}  // namespace twinscale::sim
