// The capacity review run on the twin: see capacity_plan.h.
#include "controller/plan/capacity_plan.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "controller/common/status_macros.h"
#include "controller/metrics/prometheus_client.h"
#include "controller/plan/scenario.h"
#include "controller/plan/warm_reserve.h"
#include "controller/replay/history_trace.h"
#include "simulator/model/latency_model.h"
#include "simulator/profiles/profile_loader.h"
#include "simulator/whatif/capacity.h"
#include "simulator/whatif/simulate.h"
#include "simulator/workload/generators.h"
#include "simulator/workload/rate_curve.h"
#include "simulator/workload/trace_reader.h"

namespace twinscale::plan {
namespace {

// A review runs each (scenario, seed) trace some 10-30 times per profile: a baseline larger than
// this is refused, with the key that shortens it.
constexpr int64_t kMaxBaselineRequests = 2'000'000;
// How long after the last arrival a candidate fleet may drain: an overloaded fleet's backlog would
// otherwise be simulated to its end, the costliest runs of a search, for a verdict already clear.
constexpr absl::Duration kDrainAllowance = absl::Minutes(5);

// A path in the review: beside the review file first, then as written (the working directory).
std::string ResolvePath(const std::string& review_source, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty() || fs::path(path).is_absolute()) return path;
  const fs::path beside = fs::path(review_source).parent_path() / path;
  std::error_code ec;
  if (!fs::path(review_source).parent_path().empty() && fs::exists(beside, ec)) {
    return beside.string();
  }
  return path;
}

absl::Status Context(const absl::Status& s, absl::string_view what) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

sim::Trace Drain(sim::RequestSource& source, std::string name) {
  sim::Trace t;
  t.source = std::move(name);
  sim::RequestSpec r;
  while (source.Next(r)) t.requests.push_back(r);
  sim::NormalizeTrace(t);
  return t;
}

absl::Status CheckSize(const sim::Trace& t) {
  if (static_cast<int64_t>(t.requests.size()) > kMaxBaselineRequests) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the baseline has %d requests, more than a review runs (%d): shorten it "
                        "(baseline.trace.span, "
                        "rateCurve.span, synthetic.duration or prometheus.range)",
                        t.requests.size(), kMaxBaselineRequests));
  }
  if (t.requests.empty()) return absl::InvalidArgumentError("the baseline has no requests");
  return absl::OkStatus();
}

// What `Draw(seed)` draws from: the files read (and Prometheus asked) once.
class BaselineSource {
 public:
  static absl::StatusOr<BaselineSource> Open(const Review& review, absl::Time now) {
    BaselineSource b;
    b.review_ = &review;
    const Baseline& base = review.baseline;
    switch (base.kind) {
      case Baseline::Kind::kTrace: {
        const TraceBaseline& tb = base.trace;
        const std::string path = ResolvePath(review.source, tb.path);
        sim::TraceReadOptions ro;
        absl::StatusOr<sim::TraceFormat> format = sim::ParseTraceFormat(tb.format);
        if (!format.ok()) return Context(format.status(), "baseline.trace.format");
        ro.format = *format;
        absl::StatusOr<sim::Trace> t = sim::ReadTraceFile(path, ro);
        if (!t.ok()) return Context(t.status(), "baseline.trace");
        b.trace_ = *std::move(t);
        b.description_ = absl::StrCat("trace ", tb.path);
        break;
      }
      case Baseline::Kind::kRateCurve: {
        const RateCurveBaseline& rc = base.rate_curve;
        absl::StatusOr<sim::RecordedRateCurve> curve =
            sim::ReadRateCurveFile(ResolvePath(review.source, rc.path));
        if (!curve.ok()) return Context(curve.status(), "baseline.rateCurve.path");
        absl::StatusOr<sim::Trace> lengths =
            sim::ReadTraceFile(ResolvePath(review.source, rc.lengths_from), {});
        if (!lengths.ok()) return Context(lengths.status(), "baseline.rateCurve.lengthsFrom");
        sim::RateCurvePlay play;
        play.start = sim::SimDuration::FromAbsl(rc.start);
        play.span = sim::SimDuration::FromAbsl(rc.span);
        play.time_scale = rc.time_scale;
        play.peak_rate = rc.peak_rate;
        absl::StatusOr<sim::PlayedCurve> played = sim::PlanRateCurve(*curve, play);
        if (!played.ok()) return Context(played.status(), "baseline.rateCurve");
        const double expected = played->Expected(0, played->span_seconds());
        if (expected > static_cast<double>(kMaxBaselineRequests)) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "baseline.rateCurve: about %.0f requests, more than a review runs (%d): shorten its "
              "span",
              expected, kMaxBaselineRequests));
        }
        b.played_ = *std::move(played);
        b.lengths_ = *std::move(lengths);
        b.description_ =
            absl::StrCat("rate curve ", rc.path, " with lengths from ", rc.lengths_from);
        break;
      }
      case Baseline::Kind::kPrometheus: {
        const PrometheusBaseline& pb = base.prometheus;
        replay::HistoryQueryOptions q;
        q.selector = pb.selector;
        q.range = pb.range;
        q.step = pb.step;
        if (pb.end == "now") {
          q.end = now;
        } else {
          std::string err;
          if (!absl::ParseTime(absl::RFC3339_full, pb.end, &q.end, &err)) {
            return absl::InvalidArgumentError(absl::StrCat("baseline.prometheus.end: ", err));
          }
        }
        if (absl::Status s = replay::ValidateHistoryQuery(q); !s.ok()) {
          return Context(s, "baseline.prometheus");
        }
        metrics::PrometheusClient client(pb.url);
        absl::StatusOr<replay::FleetHistory> h = replay::FetchFleetHistory(
            [&client](const metrics::RangeQuery& rq) { return client.QueryRange(rq); }, q);
        if (!h.ok()) return Context(h.status(), absl::StrCat("baseline.prometheus ", pb.url));
        b.history_ = *std::move(h);
        b.description_ = absl::StrCat("Prometheus ", pb.url, " ", pb.selector, " over ",
                                      absl::FormatDuration(pb.range));
        break;
      }
      case Baseline::Kind::kSynthetic: {
        const SyntheticBaseline& sb = base.synthetic;
        const double expected = sb.rate * absl::ToDoubleSeconds(sb.duration);
        if (expected > static_cast<double>(kMaxBaselineRequests)) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "baseline.synthetic: rate x duration is %.0f requests, more than a review runs "
              "(%d): shorten its duration",
              expected, kMaxBaselineRequests));
        }
        b.description_ = absl::StrFormat(
            "synthetic: %g req/s for %s (arrival CV %g), prompts %g tokens on average, outputs %g",
            sb.rate, absl::FormatDuration(sb.duration), sb.arrival_cv, sb.prompt.mean,
            sb.output.mean);
        break;
      }
    }
    return b;
  }

  absl::StatusOr<sim::Trace> Draw(uint64_t seed) const {
    const Baseline& base = review_->baseline;
    sim::Trace t;
    switch (base.kind) {
      case Baseline::Kind::kTrace: {
        const TraceBaseline& tb = base.trace;
        t = trace_;
        if (tb.time_scale != 1) {
          absl::StatusOr<sim::Trace> scaled = sim::ScaleTime(t, tb.time_scale);
          if (!scaled.ok()) return Context(scaled.status(), "baseline.trace.timeScale");
          t = *std::move(scaled);
        }
        if (static_cast<double>(t.requests.size()) * tb.rate_scale >
            static_cast<double>(kMaxBaselineRequests) * 4) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "baseline.trace: %d requests x rateScale %g is more than a review runs: shorten it "
              "with span",
              t.requests.size(), tb.rate_scale));
        }
        if (tb.span > absl::ZeroDuration() && !t.requests.empty()) {
          const sim::SimTime end = t.requests.front().arrival + sim::SimDuration::FromAbsl(tb.span);
          std::erase_if(t.requests, [end](const sim::RequestSpec& r) { return r.arrival >= end; });
        }
        if (tb.rate_scale != 1) {
          absl::StatusOr<sim::Trace> scaled = sim::ScaleRate(t, tb.rate_scale, seed);
          if (!scaled.ok()) return Context(scaled.status(), "baseline.trace.rateScale");
          t = *std::move(scaled);
        }
        sim::NormalizeTrace(t);
        break;
      }
      case Baseline::Kind::kRateCurve: {
        absl::StatusOr<sim::Trace> g =
            sim::GenerateRateCurveTrace(played_, lengths_, seed, description_);
        if (!g.ok()) return Context(g.status(), "baseline.rateCurve");
        t = *std::move(g);
        sim::NormalizeTrace(t);
        break;
      }
      case Baseline::Kind::kPrometheus: {
        replay::SynthesisOptions so;
        so.seed = seed;
        so.max_requests = kMaxBaselineRequests;
        absl::StatusOr<replay::HistoryTrace> h = replay::SynthesizeTrace(history_, so);
        if (!h.ok()) return Context(h.status(), "baseline.prometheus");
        t = std::move(h->trace);
        break;
      }
      case Baseline::Kind::kSynthetic: {
        const SyntheticBaseline& sb = base.synthetic;
        sim::SyntheticWorkloadSpec spec;
        spec.arrival = sb.arrival_cv == 1 ? sim::ArrivalKind::kPoisson : sim::ArrivalKind::kGamma;
        spec.cv = sb.arrival_cv;
        spec.rate.kind = sim::RateCurve::Kind::kConstant;
        spec.rate.rate = sb.rate;
        spec.prompt = sb.prompt;
        spec.output = sb.output;
        spec.duration = sim::SimDuration::FromAbsl(sb.duration);
        spec.seed = seed;
        if (absl::Status s = sim::ValidateSyntheticWorkload(spec); !s.ok()) {
          return Context(s, "baseline.synthetic");
        }
        std::unique_ptr<sim::RequestSource> source = sim::MakeSyntheticSource(spec);
        t = Drain(*source, description_);
        break;
      }
    }
    t.source = description_;
    if (absl::Status s = CheckSize(t); !s.ok()) return s;
    return t;
  }

  const std::string& description() const { return description_; }

 private:
  const Review* review_ = nullptr;
  std::string description_;
  sim::Trace trace_;
  sim::PlayedCurve played_;
  sim::Trace lengths_;
  replay::FleetHistory history_;
};

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double ReadyAfterSeconds(const sim::DeploymentSpec& d) {
  return (d.lifecycle.provisioning.median + d.lifecycle.loading.median +
          d.lifecycle.warming_up.median)
      .seconds();
}

// One cell's twin runs: the replicas over seeds and what that fleet serves.
struct Traces {
  // [scenario][seed index]
  std::vector<std::vector<std::shared_ptr<const sim::Trace>>> by_scenario;
};

sim::SimulateOptions BaseOptions(const Review& review, const ProfileSummary& profile,
                                 const sim::Trace& trace) {
  sim::SimulateOptions o;
  o.fleet.deployment = profile.deployment;
  o.fleet.router.kind = review.router;
  o.slo.threshold = sim::SimDuration::FromAbsl(review.slo.ttft);
  o.slo.per_prompt_token = sim::SimDuration::FromAbsl(review.slo.per_prompt_token);
  o.slo.percentile = review.slo.percentile;
  o.itl_threshold = sim::SimDuration::FromAbsl(review.slo.itl);
  const sim::SimTime last = trace.requests.empty() ? sim::SimTime() : trace.requests.back().arrival;
  o.hard_stop = last + sim::SimDuration::FromAbsl(kDrainAllowance);
  return o;
}

struct Job {
  size_t scenario, profile;
};

// The fleet's replicas for one cell; fills the twin's part of `cell`.
void SizeCell(const Review& review, const std::vector<uint64_t>& seeds,
              const ProfileSummary& profile,
              const std::vector<std::shared_ptr<const sim::Trace>>& traces, int32_t start_hint,
              Cell& cell) {
  sim::CapacityQuestion q;
  q.base = BaseOptions(review, profile, *traces.front());
  q.min_replicas = 1;
  q.max_replicas = review.max_replicas;
  q.start_replicas = start_hint;
  q.itl_percentile = review.slo.itl > absl::ZeroDuration() ? review.slo.itl_percentile : 0;
  std::map<uint64_t, size_t> index;
  for (size_t i = 0; i < seeds.size(); ++i) index[seeds[i]] = i;
  absl::StatusOr<sim::SeededCapacityAnswer> a = sim::FindReplicasOverSeeds(
      q, seeds, [&](uint64_t seed) { return sim::MakeTraceSource(traces[index.at(seed)]); });
  std::vector<sim::RunSummary> at;
  if (a.ok()) {
    cell.found = true;
    cell.replicas = a->replicas;
    cell.replicas_fewest = a->fewest;
    for (const sim::CapacityAnswer& one : a->per_seed)
      cell.replicas_per_seed.push_back(one.replicas);
    at = a->at_answer;
  } else {
    // Even maxReplicas misses under some seed: what that fleet serves, for the record.
    cell.found = false;
    cell.replicas = review.max_replicas;
    cell.replicas_fewest = review.max_replicas;
    for (size_t i = 0; i < seeds.size(); ++i) {
      sim::SimulateOptions o = q.base;
      o.fleet.seed = seeds[i];
      o.fleet.initial_replicas = review.max_replicas;
      std::unique_ptr<sim::RequestSource> source = sim::MakeTraceSource(traces[i]);
      at.push_back(sim::Simulate(o, *source).summary);
      cell.replicas_per_seed.push_back(review.max_replicas);
    }
  }
  std::vector<double> attainment, goodput, output_tps, itl, queue, prefill;
  for (const sim::RunSummary& s : at) {
    attainment.push_back(s.slo_attainment);
    goodput.push_back(s.goodput_rps);
    output_tps.push_back(s.output_tokens_per_s);
    itl.push_back(s.itl_ms.mean);
    queue.push_back(s.scheduling_delay_ms.mean);
    if (s.prefill_prompt_tokens > 0) {
      prefill.push_back(s.prefill_ms.mean * static_cast<double>(s.prefill_ms.count) /
                        static_cast<double>(s.prefill_prompt_tokens));
    }
  }
  cell.prefill_ms_per_token = Mean(prefill);
  cell.itl_ms = Mean(itl);
  cell.queue_delay_ms = Mean(queue);
  cell.attainment_mean = Mean(attainment);
  cell.attainment_min = *std::min_element(attainment.begin(), attainment.end());
  cell.attainment_max = *std::max_element(attainment.begin(), attainment.end());
  cell.goodput_rps = Mean(goodput);
  const double gpus = static_cast<double>(cell.replicas) * profile.deployment.tensor_parallel;
  cell.goodput_per_gpu_rps = gpus > 0 ? cell.goodput_rps / gpus : 0;
  cell.cost_per_hour = gpus * profile.gpu_hour_price;
  const double per_second = cell.cost_per_hour / 3600;
  const double inf = std::numeric_limits<double>::infinity();
  cell.cost_per_1k_successful = cell.goodput_rps > 0 ? per_second / cell.goodput_rps * 1000 : inf;
  const double tps = Mean(output_tps);
  cell.cost_per_million_output_tokens = tps > 0 ? per_second / tps * 1e6 : inf;
}

double UnreachableShare(const Slo& slo, const sim::DeploymentSpec& d, const sim::Trace& trace) {
  if (trace.requests.empty()) return 0;
  const std::unique_ptr<sim::LatencyModel> model = sim::MakeLatencyModel(d);
  int64_t unreachable = 0;
  for (const sim::RequestSpec& r : trace.requests) {
    const absl::Duration target = slo.ttft + slo.per_prompt_token * r.prompt_tokens;
    if (sim::UnloadedTtft(*model, d.engine, r.prompt_tokens).nanos() >
        absl::ToInt64Nanoseconds(target)) {
      ++unreachable;
    }
  }
  return static_cast<double>(unreachable) / static_cast<double>(trace.requests.size());
}

absl::Duration TtftTarget(const Slo& slo, double prompt_mean) {
  return slo.ttft + slo.per_prompt_token * prompt_mean;
}

// What a scenario improves and worsens against the baseline: of the figures a review pays for
// (replicas, costs, goodput per GPU, warm reserve) the one that moved most, relatively, that way;
// of the resources' headroom at the planned fleet, the one that moved most, in points, that way
// (each headroom clamped to [-100%, 100%] first, so a resource hopelessly short does not outshout
// the rest). One line each, "nothing" where nothing moved more than the noise of seeds.
constexpr double kNoise = 0.02;          // 2% of a figure
constexpr double kHeadroomNoise = 0.03;  // 3 points of headroom

struct Figure {
  std::string name;
  double base, now;
  bool higher_is_better;
};

std::string HeadroomText(double h) {
  return h < -1 ? std::string("below -100%") : absl::StrFormat("%.0f%%", 100 * h);
}

std::string ChangeLine(const Cell& base, const Cell& cell, bool better) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Figure> figures = {
      {"replicas needed", base.found ? static_cast<double>(base.replicas) : inf,
       cell.found ? static_cast<double>(cell.replicas) : inf, false},
      {"cost per 1,000 successful requests", base.cost_per_1k_successful,
       cell.cost_per_1k_successful, false},
      {"cost per million output tokens", base.cost_per_million_output_tokens,
       cell.cost_per_million_output_tokens, false},
      {"goodput per GPU (req/s)", base.goodput_per_gpu_rps, cell.goodput_per_gpu_rps, true},
      {"warm reserve", static_cast<double>(base.warm_reserve),
       static_cast<double>(cell.warm_reserve), false},
  };
  std::vector<std::string> parts;
  double most = kNoise;
  std::string figure;
  for (const Figure& f : figures) {
    if (!std::isfinite(f.base) || !std::isfinite(f.now)) continue;
    // Relative to the baseline; from zero (a warm reserve of none), a step of one counts as 100%.
    const double change =
        f.base > 0 ? f.now / f.base - 1 : (f.now > f.base ? 1.0 : (f.now < f.base ? -1.0 : 0.0));
    const double gain = f.higher_is_better ? change : -change;
    if ((better ? gain : -gain) > most) {
      most = better ? gain : -gain;
      figure = f.base > 0 ? absl::StrFormat("%s %.4g -> %.4g (%+.0f%%)", f.name, f.base, f.now,
                                            100 * change)
                          : absl::StrFormat("%s %.4g -> %.4g", f.name, f.base, f.now);
    }
  }
  if (!figure.empty()) parts.push_back(figure);
  double moved = kHeadroomNoise;
  std::string resource;
  for (size_t i = 0; i < cell.headroom.rows.size() && i < base.headroom.rows.size(); ++i) {
    const ResourceHeadroom& now = cell.headroom.rows[i];
    if (now.resource == Resource::kRequests) continue;
    const double b = std::clamp(base.headroom.rows[i].headroom, -1.0, 1.0);
    const double n = std::clamp(now.headroom, -1.0, 1.0);
    if ((better ? n - b : b - n) > moved) {
      moved = better ? n - b : b - n;
      resource = absl::StrFormat(
          "%s headroom at %d replicas %s -> %s (%s)", std::string(ResourceName(now.resource)),
          cell.headroom.planned_replicas, HeadroomText(base.headroom.rows[i].headroom),
          HeadroomText(now.headroom), std::string(RiskName(now.risk)));
    }
  }
  if (!resource.empty()) parts.push_back(resource);
  return parts.empty() ? "nothing" : absl::StrJoin(parts, "; ");
}

void CompareWithBaseline(const Cell& base, Cell& cell, double slo_percentile) {
  cell.improves = ChangeLine(base, cell, true);
  cell.worsens = ChangeLine(base, cell, false);
  if (!cell.searched) {
    cell.worsens = absl::StrFormat(
        "out of reach: %.1f%% of requests miss their TTFT target even alone on an idle replica "
        "(the SLO allows %.1f%%)",
        100 * cell.unreachable_share, 100 - slo_percentile);
  } else if (!cell.found && base.found) {
    cell.worsens = absl::StrCat("no fleet up to maxReplicas meets the SLO; ", cell.worsens);
  }
}

// Runs `work(job)` for every job on `threads` threads.
void RunJobs(const std::vector<Job>& jobs, int threads,
             const std::function<void(const Job&)>& work) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) work(jobs[i]);
  };
  const int n = std::clamp<int>(threads, 1, static_cast<int>(std::max<size_t>(1, jobs.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

}  // namespace

absl::StatusOr<sim::Trace> BaselineTrace(const Review& review, uint64_t seed, absl::Time now) {
  TS_ASSIGN_OR_RETURN(BaselineSource source, BaselineSource::Open(review, now));
  return source.Draw(seed);
}

absl::StatusOr<PlanResult> RunPlan(const Review& review, const PlanOptions& options) {
  PlanResult plan;
  plan.review = review.source;
  plan.slo = review.slo;
  plan.max_replicas = review.max_replicas;
  for (int32_t i = 0; i < review.seeds; ++i) plan.seeds.push_back(review.seed + i);

  // The profiles.
  TS_ASSIGN_OR_RETURN(sim::ProfileRegistry registry, sim::ProfileRegistry::LoadEmbedded());
  for (size_t i = 0; i < review.profiles.size(); ++i) {
    const ProfileChoice& c = review.profiles[i];
    sim::DeploymentOverrides o;
    o.model = c.model;
    o.gpu = c.gpu;
    o.tensor_parallel = c.tensor_parallel;
    absl::StatusOr<sim::DeploymentSpec> d = registry.Resolve(c.profile, o);
    if (!d.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(review.source, ":", c.line, ": profiles[", i, "]: ", d.status().message()));
    }
    plan.profiles.push_back(ProfileSummary{.name = c.name,
                                           .deployment = *d,
                                           .gpu_hour_price = c.gpu_hour_price,
                                           .ready_after_seconds = ReadyAfterSeconds(*d)});
  }

  // The traces: one per (scenario, seed), the baseline first.
  TS_ASSIGN_OR_RETURN(BaselineSource source, BaselineSource::Open(review, options.now));
  plan.baseline = source.description();
  std::vector<Scenario> scenarios;
  scenarios.push_back(Scenario{.name = "baseline",
                               .line = 0,
                               .rate = 1,
                               .prompt_length = 1,
                               .output_length = 1,
                               .long_context = std::nullopt,
                               .retry_spike = std::nullopt,
                               .prefix_cache_miss = false,
                               .burst = std::nullopt});
  scenarios.insert(scenarios.end(), review.scenarios.begin(), review.scenarios.end());
  Traces traces;
  traces.by_scenario.resize(scenarios.size());
  for (uint64_t seed : plan.seeds) {
    TS_ASSIGN_OR_RETURN(sim::Trace base, source.Draw(seed));
    if (seed == plan.seeds.front() && options.check_size) {
      const double n = static_cast<double>(base.requests.size());
      const double span = sim::Summarize(base).span_seconds;
      double total = 0;
      for (const Scenario& s : scenarios) total += EstimatedRequests(s, n, span);
      TS_RETURN_IF_ERROR(
          options.check_size(total * static_cast<double>(plan.seeds.size()), plan.profiles));
    }
    for (size_t s = 0; s < scenarios.size(); ++s) {
      absl::StatusOr<sim::Trace> t =
          s == 0 ? absl::StatusOr<sim::Trace>(base) : ApplyScenario(base, scenarios[s], seed);
      if (!t.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(review.source, ":", scenarios[s].line, ": ", t.status().message()));
      }
      if (s > 0) t->source = absl::StrCat(base.source, ", scenario ", scenarios[s].name);
      traces.by_scenario[s].push_back(std::make_shared<const sim::Trace>(*std::move(t)));
    }
  }
  for (size_t s = 0; s < scenarios.size(); ++s) {
    const sim::Trace& t = *traces.by_scenario[s].front();
    ScenarioSummary sum;
    sum.name = scenarios[s].name;
    sum.changes = DescribeChanges(scenarios[s]);
    sum.requests = static_cast<int64_t>(t.requests.size());
    const sim::TraceSummary ts = sim::Summarize(t);
    sum.span_seconds = ts.span_seconds;
    sum.mean_rps = ts.mean_rate_rps;
    sum.p95_rps = NearestRankP95(WindowRates(t, kDemandWindow));
    sum.mix = MixOf(t);
    plan.scenarios.push_back(std::move(sum));
  }

  // The cells: the baseline's first (the others read its answer), then the rest.
  const size_t np = plan.profiles.size();
  plan.cells.resize(scenarios.size() * np);
  for (size_t s = 0; s < scenarios.size(); ++s) {
    for (size_t p = 0; p < np; ++p) {
      plan.cells[s * np + p].scenario = static_cast<int32_t>(s);
      plan.cells[s * np + p].profile = static_cast<int32_t>(p);
    }
  }
  std::mutex mu;
  auto capacity_of = [&](size_t s, size_t p) {
    const ProfileSummary& profile = plan.profiles[p];
    const WorkloadMix& mix = plan.scenarios[s].mix;
    return ReplicaCapacity(profile.deployment, mix, TtftTarget(review.slo, mix.prompt_mean));
  };
  auto work = [&](const Job& job) {
    const ProfileSummary& profile = plan.profiles[job.profile];
    Cell& cell = plan.cells[job.scenario * np + job.profile];
    const std::vector<std::shared_ptr<const sim::Trace>>& ts = traces.by_scenario[job.scenario];
    const PerResource cap = capacity_of(job.scenario, job.profile);
    // The search starts at the arithmetic capacity's answer for the p95 minute: an upper bound on
    // what a replica serves, so the start rarely meets and the search doubles from near the answer.
    const int32_t hint = static_cast<int32_t>(
        std::ceil(plan.scenarios[job.scenario].p95_rps /
                  std::max(1e-9, cap[static_cast<size_t>(Resource::kRequests)])));
    cell.unreachable_share = UnreachableShare(review.slo, profile.deployment, *ts.front());
    if (cell.unreachable_share > 1 - review.slo.percentile / 100 + 1e-12) {
      // No fleet meets the SLO: say so rather than simulate the largest ones to find it out.
      cell.searched = false;
      cell.found = false;
      cell.replicas = cell.replicas_fewest = review.max_replicas;
      cell.attainment_mean = cell.attainment_min = cell.attainment_max = 1 - cell.unreachable_share;
      cell.cost_per_1k_successful = cell.cost_per_million_output_tokens =
          std::numeric_limits<double>::infinity();
      cell.cost_per_hour = static_cast<double>(review.max_replicas) *
                           profile.deployment.tensor_parallel * profile.gpu_hour_price;
    } else {
      SizeCell(review, plan.seeds, profile, ts, std::max(1, hint), cell);
    }

    const Cell& base = plan.cells[job.profile];  // the baseline's (done before any other)
    const int32_t planned = review.planned_replicas > 0 ? review.planned_replicas : base.replicas;
    // The demand at the pace the baseline is served at its answer on this profile, one yardstick
    // for every scenario: a scenario's own answer may be a fleet many times larger, whose short
    // token gaps would make its longer requests look lighter on memory than the baseline's.
    const DemandInputs served{.itl_seconds = base.itl_ms / 1000,
                              .prefill_seconds_per_token = base.prefill_ms_per_token / 1000,
                              .queue_delay_seconds = base.queue_delay_ms / 1000};
    cell.headroom = Headroom(cap, ResourceDemand(*ts.front(), served), planned);

    const PerResource base_cap = capacity_of(0, job.profile);
    const size_t req = static_cast<size_t>(Resource::kRequests);
    const double per_replica =
        plan.scenarios[0].p95_rps / std::max(1, base.replicas) * cap[req] / base_cap[req];
    cell.per_replica_rps = per_replica;
    const absl::Duration lag = absl::Seconds(profile.ready_after_seconds);
    for (const std::shared_ptr<const sim::Trace>& t : ts) {
      const WarmReserve w =
          WarmReserveFor(WindowRates(*t, kDemandWindow), kDemandWindow, lag, per_replica);
      cell.warm_reserve = std::max(cell.warm_reserve, w.replicas);
    }
    if (options.on_cell) {
      std::lock_guard<std::mutex> lock(mu);
      options.on_cell(cell);
    }
  };
  std::vector<Job> first, rest;
  for (size_t p = 0; p < np; ++p) first.push_back({0, p});
  for (size_t s = 1; s < scenarios.size(); ++s) {
    for (size_t p = 0; p < np; ++p) rest.push_back({s, p});
  }
  // The heaviest scenarios first (tokens to simulate), so the threads finish together.
  auto weight = [&](const Job& j) {
    const ScenarioSummary& s = plan.scenarios[j.scenario];
    return static_cast<double>(s.requests) * (s.mix.prompt_mean + s.mix.output_mean);
  };
  std::stable_sort(rest.begin(), rest.end(),
                   [&](const Job& a, const Job& b) { return weight(a) > weight(b); });
  RunJobs(first, options.threads, work);
  RunJobs(rest, options.threads, work);

  for (size_t s = 1; s < scenarios.size(); ++s) {
    for (size_t p = 0; p < np; ++p) {
      CompareWithBaseline(plan.cells[p], plan.cells[s * np + p], review.slo.percentile);
    }
  }
  double cheapest = std::numeric_limits<double>::infinity();
  for (size_t p = 0; p < np; ++p) {
    const Cell& c = plan.cells[p];
    if (c.found && c.cost_per_1k_successful < cheapest) {
      cheapest = c.cost_per_1k_successful;
      plan.recommended_profile = static_cast<int32_t>(p);
    }
  }
  return plan;
}

}  // namespace twinscale::plan
