// The twin's roofline step model against engine steps measured on a real H200
// (tests/data/calibration/; its README says what was measured and how it differs from vLLM).
//  - The H200 profiles' GEMM efficiency (roofline mfu) is derived here: the mfu at which the
//    roofline best reproduces the GEMM-bound prefill steps must be the profiles' value.
//  - Every measured step is held to a band of twin / measured for its kind of step. The
//    measurement is slower than vLLM in known ways (unfused small kernels, FlashAttention-2,
//    SDPA decode without split-KV), so most bands allow the twin to be faster, each by as much as
//    its reason explains; the rows the README calls unrepresentative are listed with the reason and
//    held to no band.
//  - The bands catch a GEMM efficiency 15% off the fitted one.
// Twin times are GPU time: the profile with no per-step CPU overhead and no all-reduce, neither
// of which the measurement has. The test prints every row and each kind's worst error
// (docs/calibration.md shows them).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "simulator/model/deployment.h"
#include "simulator/model/latency_model.h"
#include "simulator/profiles/profile_loader.h"

namespace twinscale::sim {
namespace {

// ---- the measured data ------------------------------------------------------------------------

// Where the copies of the measurements live (set by tests/calibration/CMakeLists.txt).
constexpr char kDataDir[] = TWINSCALE_CALIBRATION_DIR;

// The two measured models and the deployment profiles that describe them.
struct MeasuredModel {
  const char* data_name;        // `model` in h200_step_times.json
  const char* components_file;  // its parts timed apart
  const char* deployment;       // the embedded profile the twin runs
  const char* label;            // for the printed table
};
constexpr MeasuredModel kModels[] = {
    {"llama-3.1-8b", "h200_components.json", "llama-3.1-8b-h200-tp1", "8B"},
    {"llama-3.1-70b-tp4-rank", "h200_components_70b_tp4.json", "llama-3.1-70b-h200-tp4", "70B/TP4"},
};

// One whole step of h200_step_times.json: B decodes at L tokens of context, one chunk of C
// tokens after P tokens of prefix.
struct Step {
  const MeasuredModel* model;
  std::string tag;
  int64_t b, l, c, p;
  double ms;
};

// One row of a components file's `gemm` list: every GEMM of a forward pass for `tokens` tokens.
struct GemmPass {
  const MeasuredModel* model;
  int64_t tokens;
  double ms;
};

// The FlashAttention-2 rate of one prefill-attention shape (no prefix) timed apart.
struct AttentionRate {
  int64_t c;
  double tflops;
};

absl::StatusOr<nlohmann::json> ReadJson(const char* file) {
  const std::string path = absl::StrCat(kDataDir, "/", file);
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, ": not JSON"));
  return j;
}

struct CalibrationData {
  std::vector<Step> steps;
  std::vector<GemmPass> gemms;
  std::map<std::string, std::vector<AttentionRate>> fa2;  // by data_name
};

absl::StatusOr<CalibrationData> LoadData() {
  CalibrationData data;
  absl::StatusOr<nlohmann::json> steps = ReadJson("h200_step_times.json");
  if (!steps.ok()) return steps.status();
  for (const nlohmann::json& r : (*steps)["runs"]) {
    if (r.contains("error")) continue;  // a shape the GPU refused: no time to compare
    const std::string name = r.value("model", "");
    const auto* m = std::find_if(std::begin(kModels), std::end(kModels),
                                 [&](const MeasuredModel& k) { return k.data_name == name; });
    if (m == std::end(kModels)) return absl::InvalidArgumentError("unknown model " + name);
    data.steps.push_back({m, r.value("tag", ""), r.value("B", int64_t{0}), r.value("L", int64_t{0}),
                          r.value("C", int64_t{0}), r.value("P", int64_t{0}),
                          r.value("step_ms", 0.0)});
  }
  for (const MeasuredModel& m : kModels) {
    absl::StatusOr<nlohmann::json> comp = ReadJson(m.components_file);
    if (!comp.ok()) return comp.status();
    for (const nlohmann::json& g : (*comp)["gemm"]) {
      data.gemms.push_back({&m, g.value("tokens", int64_t{0}), g.value("ms", 0.0)});
    }
    for (const nlohmann::json& a : (*comp)["prefill_attention"]) {
      if (a.value("P", int64_t{-1}) == 0 && a.contains("flash_tflops")) {
        data.fa2[m.data_name].push_back({a.value("C", int64_t{0}), a.value("flash_tflops", 0.0)});
      }
    }
  }
  if (data.steps.empty() || data.gemms.empty()) return absl::InvalidArgumentError("no rows");
  return data;
}

// ---- the twin -----------------------------------------------------------------------------------

DeploymentSpec Profile(std::string_view name) {
  static const auto* const kRegistry = [] {
    absl::StatusOr<ProfileRegistry> r = ProfileRegistry::LoadEmbedded();
    EXPECT_TRUE(r.ok()) << r.status();
    return new ProfileRegistry(r.ok() ? *std::move(r) : ProfileRegistry());
  }();
  absl::StatusOr<DeploymentSpec> d = kRegistry->Resolve(name, {});
  EXPECT_TRUE(d.ok()) << name << ": " << d.status();
  return d.ok() ? *d : DeploymentSpec();
}

// The profile as the measurement ran it: GPU time only, one TP rank with no all-reduce.
DeploymentSpec GpuTimeOnly(DeploymentSpec d) {
  d.roofline.per_step_overhead_us = 0;
  d.roofline.allreduce_latency_us = 0;
  d.gpu.interconnect_bandwidth = std::numeric_limits<double>::infinity();  // no all-reduce bytes
  return d;
}

BatchShape ShapeOf(const Step& s) {
  BatchShape shape;
  shape.decode_seqs = s.b;
  shape.decode_context_tokens = s.b * s.l;
  shape.prefill_seqs = s.c > 0 ? 1 : 0;
  shape.prefill_tokens = s.c;
  shape.prefill_context_tokens = s.p;
  shape.prefill_attention_pairs =
      static_cast<double>(s.c) * (static_cast<double>(s.p) + (static_cast<double>(s.c) + 1) / 2);
  return shape;
}

double TwinMs(const DeploymentSpec& d, const BatchShape& shape) {
  return MakeLatencyModel(d)->StepTime(shape).millis();
}

// ---- kinds of step, their bands and the rows left out -------------------------------------------

enum class Kind {
  kDecode,
  kPrefillChunk,
  kSmallPrefillChunk,
  kPrefillAfterPrefix,
  kMixed,
  kWeightRead
};

struct Band {
  Kind kind;
  std::string_view name;
  double lo, hi;  // allowed twin / measured
  std::string_view why;
};

constexpr Band kBands[] = {
    {Kind::kDecode, "decode", 0.55, 1.05,
     "the twin may be up to 45% faster: the measured step runs norms, RoPE and residual adds as "
     "separate kernels (about 2 ms of a small 8B step, 2.5x that over the 70B's 80 layers), its "
     "decode attention is SDPA without split-KV, a 70B row counts the LM head 8 times, and the "
     "roofline's max() meets the weight-read floor exactly where GEMMs of 128-256 rows still run "
     "above it; slower than the measurement by at most its noise"},
    {Kind::kPrefillChunk, "prefill chunk", 0.80, 1.10,
     "the rows the GEMM efficiency is fitted to: a single efficiency cannot follow cuBLAS from 512 "
     "rows (610 TFLOP/s) to 2048 and more (670), and the twin's FlashAttention-3 takes less than "
     "the measured FlashAttention-2, so the twin is up to 20% faster on short chunks and up to 10% "
     "slower on long ones"},
    {Kind::kSmallPrefillChunk, "prefill chunk < 512", 0.45, 1.05,
     "a 128-token chunk is not GEMM-bound: its GEMMs take 1.4x the weight read (timed apart) where "
     "the roofline's max() says 1x, and the unfused small kernels weigh as in a small decode step"},
    {Kind::kPrefillAfterPrefix, "prefill after prefix", 0.60, 1.05,
     "attention dominates a chunk after a long prefix, and the measurement ran FlashAttention-2 "
     "(320-342 TFLOP/s timed apart) where the twin assumes vLLM's FlashAttention-3 at 60% of peak: "
     "the twin is faster, the more so the longer the prefix"},
    {Kind::kMixed, "mixed", 0.55, 1.05,
     "a chunk plus decodes: the decodes bring the decode rows' biases, the chunk FlashAttention-2"},
    {Kind::kWeightRead, "GEMMs alone, 1-64 rows", 0.95, 1.15,
     "weight-read bound: the twin reads its whole parameter count, embedding table included (7% of "
     "the 8B's bytes, which a forward pass only gathers from), at 80% of 4.8 TB/s where the GEMMs "
     "read at 76-79%"},
};

const Band& BandOf(Kind k) {
  return *std::find_if(std::begin(kBands), std::end(kBands),
                       [&](const Band& b) { return b.kind == k; });
}

Kind KindOf(const Step& s) {
  if (s.tag == "decode") return Kind::kDecode;
  if (s.tag == "mixed") return Kind::kMixed;
  if (s.tag == "prefill-after-prefix") return Kind::kPrefillAfterPrefix;
  return s.c < 512 ? Kind::kSmallPrefillChunk : Kind::kPrefillChunk;
}

// The measurement's SMs: a decode attention kernel without split-KV runs one thread block per
// (sequence, KV head), so fewer pairs than SMs leave SMs idle.
constexpr int64_t kH200Sms = 132;
constexpr int64_t kLongestContext = 4096;

// Why a step is not representative of vLLM (the README's biases), or nothing.
std::optional<std::string> Unrepresentative(const Step& s, const DeploymentSpec& d) {
  const int64_t kv_heads_per_gpu = std::max<int64_t>(1, d.model.kv_heads / d.tensor_parallel);
  if (s.tag == "decode" && s.l >= kLongestContext && s.b * kv_heads_per_gpu < kH200Sms) {
    return "small batch at long context: fewer (sequence, KV head) pairs than the 132 SMs, "
           "and SDPA without split-KV reads KV far below bandwidth there (README: B=1 at 4096 "
           "costs 1.4 ms more than at 1024, where the extra KV explains 0.1 ms); vLLM splits KV";
  }
  return std::nullopt;
}

// From 128 rows the GEMMs leave the weight-read floor; the profile's mfu is a whole-step figure
// that carries the step's non-GEMM per-token work, which a GEMM-only row leaves out.
constexpr int64_t kWeightReadBoundRows = 64;

// ---- the GEMM efficiency the trustworthy rows give ----------------------------------------------

// The README's most trustworthy rows: prefill chunks of 512-8192 tokens with no prefix.
bool IsFitRow(const Step& s) { return s.tag == "prefill" && s.p == 0 && s.c >= 512; }

// The FlashAttention-2 rate the measurement ran a chunk of c tokens at: the nearest chunk size
// timed apart (a 512-token chunk's attention is about 1% of its step, so the choice barely moves
// its figure).
double Fa2Tflops(const CalibrationData& data, const Step& s) {
  const std::vector<AttentionRate>& rates = data.fa2.at(s.model->data_name);
  const AttentionRate* best = &rates.front();
  for (const AttentionRate& r : rates) {
    if (std::abs(r.c - s.c) < std::abs(best->c - s.c)) best = &r;
  }
  return best->tflops;
}

// A fit row with the twin that runs it: the profile, GPU time only, its attention at the rate the
// row ran it; only mfu is left to choose.
struct FitRow {
  Step step;
  DeploymentSpec twin;
  double TwinMs(double mfu) const {
    DeploymentSpec d = twin;
    d.roofline.mfu = mfu;
    return ::twinscale::sim::TwinMs(d, ShapeOf(step));
  }
};

std::vector<FitRow> FitRows(const CalibrationData& data) {
  std::vector<FitRow> rows;
  for (const Step& s : data.steps) {
    if (!IsFitRow(s)) continue;
    DeploymentSpec d = GpuTimeOnly(Profile(s.model->deployment));
    d.roofline.attention_mfu = Fa2Tflops(data, s) * 1e12 / d.gpu.peak_flops;
    rows.push_back({s, d});
  }
  return rows;
}

// The mfu that reproduces one row (the twin's time falls as mfu grows): bisection.
double RowMfu(const FitRow& row) {
  double lo = 0.2, hi = 1.0;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    if (row.TwinMs(mid) > row.step.ms) {
      lo = mid;  // the twin is too slow: more efficiency
    } else {
      hi = mid;
    }
  }
  return (lo + hi) / 2;
}

// The mfu minimising the sum over the rows of log(twin / measured)^2, on a 1e-4 grid.
double FittedMfu(const std::vector<FitRow>& rows) {
  double best_mfu = 0, best_loss = std::numeric_limits<double>::infinity();
  for (int i = 3000; i <= 9000; ++i) {
    const double mfu = i * 1e-4;
    double loss = 0;
    for (const FitRow& row : rows) {
      const double e = std::log(row.TwinMs(mfu) / row.step.ms);
      loss += e * e;
    }
    if (loss < best_loss) {
      best_loss = loss;
      best_mfu = mfu;
    }
  }
  return best_mfu;
}

// ---- comparing every row ------------------------------------------------------------------------

struct Compared {
  Kind kind;
  std::string row;  // "8B decode B=64 L=1024"
  double measured_ms, twin_ms;
  std::optional<std::string> excluded;  // why, when held to no band
  double ratio() const { return twin_ms / measured_ms; }
};

// Every step and every GEMM pass against the twin at the profiles' settings, except `mfu` when
// set (to show the bands catch a wrong one).
std::vector<Compared> CompareAll(const CalibrationData& data, std::optional<double> mfu = {}) {
  std::vector<Compared> out;
  auto twin = [&](const MeasuredModel& m) {
    DeploymentSpec d = GpuTimeOnly(Profile(m.deployment));
    if (mfu) d.roofline.mfu = *mfu;
    return d;
  };
  for (const Step& s : data.steps) {
    const DeploymentSpec d = twin(*s.model);
    std::string row = absl::StrCat(s.model->label, " ", s.tag);
    if (s.b > 0) absl::StrAppend(&row, " B=", s.b, " L=", s.l);
    if (s.c > 0) absl::StrAppend(&row, " C=", s.c);
    if (s.p > 0) absl::StrAppend(&row, " P=", s.p);
    out.push_back({KindOf(s), row, s.ms, TwinMs(d, ShapeOf(s)), Unrepresentative(s, d)});
  }
  for (const GemmPass& g : data.gemms) {
    const DeploymentSpec d = twin(*g.model);
    BatchShape shape;  // the GEMMs of T decoding rows with no KV to read
    shape.decode_seqs = g.tokens;
    Compared c{Kind::kWeightRead, absl::StrCat(g.model->label, " GEMMs alone T=", g.tokens), g.ms,
               TwinMs(d, shape), std::nullopt};
    if (g.tokens > kWeightReadBoundRows) {
      c.excluded =
          "not weight-read bound; the profile's mfu is a whole-step figure that carries "
          "the non-GEMM per-token work this row leaves out (the prefill rows check it)";
    }
    out.push_back(c);
  }
  return out;
}

bool InBand(const Compared& c) {
  const Band& b = BandOf(c.kind);
  return c.ratio() >= b.lo && c.ratio() <= b.hi;
}

// ---- the tests ----------------------------------------------------------------------------------

TEST(RooflineCalibration, H200GemmEfficiencyIsTheFitToTheGemmBoundPrefillSteps) {
  absl::StatusOr<CalibrationData> data = LoadData();
  ASSERT_TRUE(data.ok()) << data.status();
  std::printf(
      "GEMM efficiency (mfu) reproducing each GEMM-bound prefill step on the H200, its\n"
      "attention at the FlashAttention-2 rate timed apart, no CPU or all-reduce time:\n");
  const std::vector<FitRow> rows = FitRows(*data);
  for (const FitRow& row : rows) {
    const double mfu = RowMfu(row);
    std::printf("  %-8s C=%-5lld %8.2f ms  FA2 %5.1f TFLOP/s  mfu %.3f\n", row.step.model->label,
                static_cast<long long>(row.step.c), row.step.ms,
                row.twin.roofline.attention_mfu * row.twin.gpu.peak_flops / 1e12, mfu);
  }
  EXPECT_EQ(rows.size(), 6u);  // 512, 2048 and 8192 tokens for each model
  const double fitted = FittedMfu(rows);
  std::printf("least-squares fit over the %zu rows (log of twin / measured): mfu %.4f\n",
              rows.size(), fitted);
  for (const MeasuredModel& m : kModels) {
    SCOPED_TRACE(m.deployment);
    EXPECT_NEAR(Profile(m.deployment).roofline.mfu, fitted, 0.005);  // two decimals
  }
}

TEST(RooflineCalibration, EveryMeasuredStepIsWithinItsKindsBand) {
  absl::StatusOr<CalibrationData> data = LoadData();
  ASSERT_TRUE(data.ok()) << data.status();
  const std::vector<Compared> all = CompareAll(*data);
  std::printf("%-42s %11s %11s %8s\n", "row (H200)", "measured ms", "twin ms", "twin/meas");
  for (const Compared& c : all) {
    std::printf("%-42s %11.3f %11.3f %8.3f%s\n", c.row.c_str(), c.measured_ms, c.twin_ms, c.ratio(),
                c.excluded ? "  (excluded)" : "");
  }
  for (const Band& b : kBands) {
    int n = 0;
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    const Compared* worst = nullptr;
    for (const Compared& c : all) {
      if (c.kind != b.kind || c.excluded) continue;
      ++n;
      lo = std::min(lo, c.ratio());
      hi = std::max(hi, c.ratio());
      if (!worst || std::abs(c.ratio() - 1) > std::abs(worst->ratio() - 1)) worst = &c;
      EXPECT_TRUE(InBand(c)) << c.row << ": twin " << c.twin_ms << " ms, measured " << c.measured_ms
                             << " ms, twin/measured " << c.ratio() << " outside [" << b.lo << ", "
                             << b.hi << "] (" << b.why << ")";
    }
    ASSERT_GT(n, 0) << b.name;
    std::printf("%-24s %2d rows  twin/measured %.3f-%.3f  band [%.2f, %.2f]  worst %+.1f%% (%s)\n",
                std::string(b.name).c_str(), n, lo, hi, b.lo, b.hi, 100 * (worst->ratio() - 1),
                worst->row.c_str());
  }
  std::map<std::string, std::vector<std::string>> excluded;  // reason -> rows
  for (const Compared& c : all) {
    if (c.excluded) excluded[*c.excluded].push_back(c.row);
  }
  for (const auto& [why, rows] : excluded) {
    std::printf("excluded, %s: %s\n", absl::StrJoin(rows, "; ").c_str(), why.c_str());
  }
}

TEST(RooflineCalibration, TheBandsCatchAGemmEfficiencyFifteenPercentOff) {
  absl::StatusOr<CalibrationData> data = LoadData();
  ASSERT_TRUE(data.ok()) << data.status();
  const double profile_mfu = Profile(kModels[0].deployment).roofline.mfu;
  for (const double mfu : {profile_mfu * 0.85, profile_mfu * 1.15}) {
    SCOPED_TRACE(absl::StrCat("mfu ", mfu));
    std::vector<std::string> outside;
    for (const Compared& c : CompareAll(*data, mfu)) {
      if (!c.excluded && !InBand(c)) outside.push_back(c.row);
    }
    std::printf("at mfu %.3f, outside their band: %s\n", mfu,
                outside.empty() ? "none" : absl::StrJoin(outside, "; ").c_str());
    EXPECT_FALSE(outside.empty());
  }
}

}  // namespace
}  // namespace twinscale::sim
