// Random streams for the twin: std::mt19937_64 behind a small facade, one stream per stochastic
// component, each derived from (seed, run, stream) so adding a component never shifts another's
// draws. The standard library's distributions differ between implementations, so all sampling goes
// through the project's own samplers (samplers.h) on top of Uniform01(); results are identical on
// every platform for a given seed. Not thread-safe: one Rng per component per run.
#ifndef TWINSCALE_SIMULATOR_CORE_RNG_H_
#define TWINSCALE_SIMULATOR_CORE_RNG_H_

#include <cstdint>
#include <random>

namespace twinscale::sim {

// Well-known stream ids; a component that needs several streams adds an index.
enum class Stream : uint64_t {
  kArrivals = 1,
  kPromptLengths = 2,
  kOutputLengths = 3,
  kRouter = 4,
  kLifecycle = 5,
  kTraceJitter = 6,
  kRateScale = 7,
  kStepNoise = 8,
  kRateCurve = 9,
  kPlanScenario = 10,  // twinscale plan's scenarios (controller/plan/scenario.h)
  kPrefixReuse = 11,   // the twin's assumed prefix hits (controller/twin/fleet_arrival_source.h)
};

// SplitMix64 finalizer: a bijective mix used to derive independent seeds.
constexpr uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr uint64_t DeriveSeed(uint64_t seed, uint64_t run, uint64_t stream) {
  return Mix64(Mix64(Mix64(seed) ^ run) ^ (stream * 0xd1b54a32d192ed03ULL));
}

// 128-bit product for Lemire's method (a GCC/Clang extension; marked so -Wpedantic accepts it).
__extension__ typedef unsigned __int128 Uint128;

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  Rng(uint64_t seed, uint64_t run, Stream stream, uint64_t index = 0)
      : engine_(DeriveSeed(seed, run, static_cast<uint64_t>(stream) * 1000003ULL + index)) {}

  uint64_t NextU64() { return engine_(); }
  // Uniform on [0, 1) with 53 random bits.
  double Uniform01() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Uniform on (0, 1]: safe under log().
  double UniformOpen0() { return 1.0 - Uniform01(); }
  // Uniform integer in [0, n), n > 0, without modulo bias (Lemire's method).
  uint64_t UniformInt(uint64_t n) {
    Uint128 m = static_cast<Uint128>(engine_()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<Uint128>(engine_()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace twinscale::sim

#endif  // TWINSCALE_SIMULATOR_CORE_RNG_H_
