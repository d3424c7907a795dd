// LiveFleet: see live_fleet.h.
//
// Locking: one mutex guards the simulated cluster and everything the HTTP handlers read (faults,
// parked requests, the set of serving pods). The listeners themselves are opened and closed only
// by the clock thread (and by Start / Stop while that thread is not running), never under the
// mutex: closing a listener waits for its handlers, which take the mutex.
#include "tests/e2e/live_fleet.h"

#include <cpprest/http_listener.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "controller/replay/simulated_cluster.h"
#include "simulator/model/vllm_metrics.h"
#include "simulator/profiles/profile_loader.h"
#include "simulator/workload/generators.h"
#include "simulator/workload/trace_reader.h"
#include "tests/util/prometheus_server.h"

namespace twinscale::e2e {
namespace {

using web::http::http_request;
using web::http::status_code;
using web::http::status_codes;
using Listener = web::http::experimental::listener::http_listener;

constexpr char kTextFormat[] = "text/plain; version=0.0.4; charset=utf-8";

// A page that starts like vLLM's and breaks on line 3 (a label set that is never closed).
constexpr char kGarbage[] =
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"m\" 1.0\n";

// Replies, observing the reply's task (a client that went away must not leave an unobserved
// exception for pplx to report).
void Reply(http_request request, status_code code, const std::string& body,
           const std::string& content_type = "text/plain; charset=utf-8") {
  try {
    request.reply(code, body, content_type).then([](pplx::task<void> t) {
      try {
        t.get();
      } catch (...) {
      }
    });
  } catch (...) {
  }
}

bool Serves(sim::ReplicaPhase phase) {
  return phase == sim::ReplicaPhase::kReady || phase == sim::ReplicaPhase::kDraining;
}

}  // namespace

class LiveFleet::Impl {
 public:
  Impl(LiveFleetOptions options, const Clock* clock)
      : options_(std::move(options)), clock_(clock != nullptr ? *clock : real_clock_) {}

  ~Impl() { Stop(); }

  absl::Status Init() {
    if (!(options_.time_scale > 0)) {
      return absl::InvalidArgumentError("live fleet: time_scale must be > 0");
    }
    if (options_.first_address < 2 || options_.first_address > 254) {
      return absl::InvalidArgumentError("live fleet: first_address must be in 2..254");
    }
    if (options_.initial_replicas < 0 ||
        options_.first_address + options_.initial_replicas - 1 > 254) {
      return absl::InvalidArgumentError("live fleet: too many replicas for 127.0.0.N addresses");
    }
    if (options_.port == 0) options_.port = testutil::FreePort();
    absl::StatusOr<sim::ProfileRegistry> profiles = sim::ProfileRegistry::LoadEmbedded();
    if (!profiles.ok()) return profiles.status();
    absl::StatusOr<sim::DeploymentSpec> d = profiles->Resolve(options_.profile, {});
    if (!d.ok()) return d.status();
    if (options_.warmup.has_value()) {
      const sim::SimDuration total = sim::SimDuration::FromAbsl(*options_.warmup);
      const sim::SimDuration half = sim::SimDuration::FromAbsl(*options_.warmup / 2);
      d->lifecycle.provisioning = {sim::SimDuration::Zero(), 1.0};
      d->lifecycle.loading = {half, 1.0};
      d->lifecycle.warming_up = {total - half, 1.0};
    }
    replay::ClusterOptions co;
    co.fleet.deployment = *d;
    co.fleet.initial_replicas = options_.initial_replicas;
    co.fleet.model_name = options_.model_name;
    co.fleet.seed = options_.seed;
    co.pod_prefix = options_.pod_prefix;
    co.start = clock_.Now();
    // Pages are rendered per request here: the cluster's own scrape grid is pushed out of reach.
    co.scrape_interval = absl::Hours(24 * 365);
    co.scrape_retention = absl::Seconds(1);
    {
      absl::MutexLock lock(&mu_);
      cluster_ = std::make_unique<replay::SimulatedCluster>(co, options_.trace);
      wall_anchor_ = co.start;
      fleet_anchor_ = co.start;
    }
    if (absl::Status s = SyncListeners(/*strict=*/true); !s.ok()) {
      CloseAll();
      return s;
    }
    thread_ = std::thread([this] { Run(); });
    return absl::OkStatus();
  }

  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      if (stopped_) return;
      stopped_ = true;
      wake_.SignalAll();
      ticked_.SignalAll();
    }
    if (thread_.joinable()) thread_.join();
    CloseAll();
  }

  std::vector<LivePod> Pods() const {
    absl::MutexLock lock(&mu_);
    std::vector<LivePod> pods;
    if (cluster_ == nullptr) return pods;
    for (const sim::ReplicaView& r : cluster_->fleet().Replicas()) {
      if (r.phase == sim::ReplicaPhase::kGone) continue;
      LivePod p;
      p.name = PodName(r.index);
      p.index = r.index;
      p.ip = Ip(r.index);
      p.port = options_.port;
      p.phase = r.phase;
      p.stage = replay::StageOf(r.phase);
      p.created = cluster_->ToAbsl(r.created);
      if (r.phase == sim::ReplicaPhase::kReady) p.ready_since = cluster_->ToAbsl(r.phase_since);
      p.serving = serving_.count(r.index) > 0;
      pods.push_back(std::move(p));
    }
    return pods;
  }

  int32_t port() const { return options_.port; }
  const LiveFleetOptions& options() const { return options_; }

  void Scale(int32_t replicas) {
    absl::MutexLock lock(&mu_);
    AdvanceLocked();
    cluster_->Scale(replicas);
  }

  int32_t spec_replicas() const {
    absl::MutexLock lock(&mu_);
    return cluster_->spec_replicas();
  }

  void Pause() {
    absl::MutexLock lock(&mu_);
    if (paused_) return;
    AdvanceLocked();
    paused_ = true;
  }

  void Resume() {
    absl::MutexLock lock(&mu_);
    if (!paused_) return;
    paused_ = false;
    wall_anchor_ = clock_.Now();
    fleet_anchor_ = cluster_->Now();
  }

  bool paused() const {
    absl::MutexLock lock(&mu_);
    return paused_;
  }

  absl::Time Now() const {
    absl::MutexLock lock(&mu_);
    return cluster_->Now();
  }

  void WaitForTick() const {
    absl::MutexLock lock(&mu_);
    // A tick in progress may have advanced before this call: wait for the one after it.
    const int64_t want = ticks_ + 2;
    while (ticks_ < want && !stopped_) ticked_.Wait(&mu_);
  }

  std::optional<PodPage> Page(const std::string& pod) const {
    const std::optional<int32_t> index = IndexOf(pod);
    if (!index.has_value()) return std::nullopt;
    absl::MutexLock lock(&mu_);
    if (serving_.count(*index) == 0) return std::nullopt;
    const sim::Replica& r = cluster_->fleet().replica(*index);
    const sim::VllmMetrics& m = r.metrics();
    PodPage page;
    page.text = m.Render();
    page.at = cluster_->Now();
    EngineTruth& t = page.truth;
    t.running = m.running();
    t.waiting = m.waiting();
    t.kv_cache_usage = m.kv_cache_usage();
    t.prompt_tokens = m.prompt_tokens();
    t.generation_tokens = m.generation_tokens();
    t.preemptions = m.preemptions();
    using Reason = sim::VllmMetrics::Finished::Reason;
    t.requests_finished = m.requests_finished(Reason::kStop) +
                          m.requests_finished(Reason::kLength) +
                          m.requests_finished(Reason::kAbort);
    const sim::VllmHistogramView ttft = m.histogram(sim::VllmHistogram::kTimeToFirstToken);
    t.ttft_count = ttft.count;
    t.ttft_sum = ttft.sum;
    return page;
  }

  int32_t HeldRequests(const std::string& pod) const {
    const std::optional<int32_t> index = IndexOf(pod);
    if (!index.has_value()) return 0;
    absl::MutexLock lock(&mu_);
    const auto it = parked_.find(*index);
    return it == parked_.end() ? 0 : static_cast<int32_t>(it->second.size());
  }

  bool SetFault(const std::string& pod, PodFault fault, std::string body) {
    const std::optional<int32_t> index = IndexOf(pod);
    if (!index.has_value()) return false;
    std::vector<http_request> released;
    {
      absl::MutexLock lock(&mu_);
      faults_[*index] = Fault{fault, std::move(body)};
      if (fault != PodFault::kHang) {
        auto it = parked_.find(*index);
        if (it != parked_.end()) {
          released = std::move(it->second);
          parked_.erase(it);
        }
      }
    }
    for (http_request& r : released) Reply(r, status_codes::ServiceUnavailable, "released\n");
    return true;
  }

 private:
  struct Fault {
    PodFault kind = PodFault::kNone;
    std::string body;
  };

  std::string PodName(int32_t index) const { return absl::StrCat(options_.pod_prefix, "-", index); }
  std::string Ip(int32_t index) const {
    return absl::StrCat("127.0.0.", options_.first_address + index);
  }
  bool Addressable(int32_t index) const { return options_.first_address + index <= 254; }

  // "<prefix>-<index>" -> index.
  std::optional<int32_t> IndexOf(const std::string& pod) const {
    const std::string prefix = options_.pod_prefix + "-";
    if (pod.rfind(prefix, 0) != 0) return std::nullopt;
    int32_t index = 0;
    if (!absl::SimpleAtoi(pod.substr(prefix.size()), &index) || index < 0) return std::nullopt;
    return index;
  }

  // Runs the fleet up to the fleet time that corresponds to the wall clock now.
  void AdvanceLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (paused_) return;
    const absl::Time target = fleet_anchor_ + (clock_.Now() - wall_anchor_) * options_.time_scale;
    if (target > cluster_->Now()) cluster_->AdvanceTo(target);
  }

  void Run() {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (stopped_) return;
        wake_.WaitWithTimeout(&mu_, options_.tick);
        if (stopped_) return;
        AdvanceLocked();
      }
      (void)SyncListeners(/*strict=*/false);
      absl::MutexLock lock(&mu_);
      ++ticks_;
      ticked_.SignalAll();
    }
  }

  // Opens a listener for every pod that serves and has none, and closes those of pods that no
  // longer serve. `strict`: fail on the first listener that can't open (at Start); otherwise it
  // is retried next tick.
  absl::Status SyncListeners(bool strict) {
    std::set<int32_t> want;
    {
      absl::MutexLock lock(&mu_);
      for (const sim::ReplicaView& r : cluster_->fleet().Replicas()) {
        if (Serves(r.phase) && Addressable(r.index)) want.insert(r.index);
      }
    }
    for (int32_t i : want) {
      if (listeners_.count(i) > 0) continue;
      const std::string url = absl::StrCat("http://", Ip(i), ":", options_.port, "/");
      try {
        auto l = std::make_unique<Listener>(web::uri(url));
        l->support([this, i](http_request request) { Handle(i, std::move(request)); });
        l->open().wait();
        listeners_[i] = std::move(l);
      } catch (const std::exception& e) {
        if (strict) {
          return absl::UnavailableError(
              absl::StrCat("live fleet: can't listen on ", url, ": ", e.what()));
        }
        continue;
      }
      absl::MutexLock lock(&mu_);
      serving_.insert(i);
    }
    std::vector<int32_t> gone;
    for (const auto& [i, l] : listeners_) {
      if (want.count(i) == 0) gone.push_back(i);
    }
    for (int32_t i : gone) Close(i);
    return absl::OkStatus();
  }

  void Close(int32_t i) {
    std::vector<http_request> parked;
    {
      absl::MutexLock lock(&mu_);
      serving_.erase(i);
      auto it = parked_.find(i);
      if (it != parked_.end()) {
        parked = std::move(it->second);
        parked_.erase(it);
      }
    }
    // A listener closes only once its requests are answered: each reply is waited for, since a
    // close racing a queued reply drops the connection before the status line is written.
    for (http_request& r : parked) {
      try {
        r.reply(status_codes::ServiceUnavailable, "pod going away\n", "text/plain; charset=utf-8")
            .wait();
      } catch (...) {
      }
    }
    auto it = listeners_.find(i);
    if (it == listeners_.end()) return;
    try {
      it->second->close().wait();
    } catch (...) {
    }
    listeners_.erase(it);
  }

  void CloseAll() {
    std::vector<int32_t> all;
    for (const auto& [i, l] : listeners_) all.push_back(i);
    for (int32_t i : all) Close(i);
  }

  void Handle(int32_t i, http_request request) {
    if (request.relative_uri().path() != options_.path) {
      Reply(std::move(request), status_codes::NotFound, "not found\n");
      return;
    }
    status_code code = status_codes::OK;
    std::string body;
    std::string type = kTextFormat;
    {
      absl::MutexLock lock(&mu_);
      const auto f = faults_.find(i);
      const PodFault fault = f == faults_.end() ? PodFault::kNone : f->second.kind;
      switch (fault) {
        case PodFault::kHang:
          // Parked only while the listener stays: Close answers what is parked, and a request
          // parked after that would keep the listener from closing.
          if (!stopped_ && serving_.count(i) > 0) {
            parked_[i].push_back(std::move(request));
            return;
          }
          code = status_codes::ServiceUnavailable;
          body = "going away\n";
          break;
        case PodFault::kGarbage:
          body = kGarbage;
          break;
        case PodFault::kHttp500:
          code = status_codes::InternalError;
          body = "Internal Server Error\n";
          type = "text/plain; charset=utf-8";
          break;
        case PodFault::kFixedBody:
          body = f->second.body;
          break;
        case PodFault::kNone:
          if (serving_.count(i) == 0) {
            code = status_codes::ServiceUnavailable;
            body = "not serving\n";
          } else {
            body = cluster_->fleet().replica(i).metrics().Render();
          }
          break;
      }
    }
    Reply(std::move(request), code, body, type);
  }

  LiveFleetOptions options_;
  RealClock real_clock_;
  const Clock& clock_;

  mutable absl::Mutex mu_;
  mutable absl::CondVar wake_;    // Stop wakes the clock thread
  mutable absl::CondVar ticked_;  // the clock thread finished a tick
  std::unique_ptr<replay::SimulatedCluster> cluster_ ABSL_GUARDED_BY(mu_);
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time wall_anchor_ ABSL_GUARDED_BY(mu_);   // wall time of the last (re)start
  absl::Time fleet_anchor_ ABSL_GUARDED_BY(mu_);  // fleet time then
  int64_t ticks_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<int32_t> serving_ ABSL_GUARDED_BY(mu_);
  std::map<int32_t, Fault> faults_ ABSL_GUARDED_BY(mu_);
  std::map<int32_t, std::vector<http_request>> parked_ ABSL_GUARDED_BY(mu_);  // hung requests

  // Touched only by the clock thread, or by Init / Stop while it isn't running.
  std::map<int32_t, std::unique_ptr<Listener>> listeners_;
  std::thread thread_;
};

absl::StatusOr<std::unique_ptr<LiveFleet>> LiveFleet::Start(LiveFleetOptions options,
                                                            const Clock* clock) {
  auto impl = std::make_unique<Impl>(std::move(options), clock);
  if (absl::Status s = impl->Init(); !s.ok()) return s;
  return std::unique_ptr<LiveFleet>(new LiveFleet(std::move(impl)));
}

LiveFleet::LiveFleet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LiveFleet::~LiveFleet() { Stop(); }
void LiveFleet::Stop() { impl_->Stop(); }
std::vector<LivePod> LiveFleet::Pods() const { return impl_->Pods(); }

std::vector<metrics::PodTarget> LiveFleet::Targets() const {
  std::vector<metrics::PodTarget> targets;
  for (const LivePod& p : impl_->Pods()) {
    if (p.serving) targets.push_back({p.name, p.ip, p.port, impl_->options().path});
  }
  return targets;
}

int32_t LiveFleet::port() const { return impl_->port(); }
void LiveFleet::Scale(int32_t replicas) { impl_->Scale(replicas); }
int32_t LiveFleet::spec_replicas() const { return impl_->spec_replicas(); }
void LiveFleet::Pause() { impl_->Pause(); }
void LiveFleet::Resume() { impl_->Resume(); }
bool LiveFleet::paused() const { return impl_->paused(); }
absl::Time LiveFleet::Now() const { return impl_->Now(); }
void LiveFleet::WaitForTick() const { impl_->WaitForTick(); }
std::optional<PodPage> LiveFleet::Page(const std::string& pod) const { return impl_->Page(pod); }
int32_t LiveFleet::HeldRequests(const std::string& pod) const { return impl_->HeldRequests(pod); }
bool LiveFleet::SetFault(const std::string& pod, PodFault fault, std::string body) {
  return impl_->SetFault(pod, fault, std::move(body));
}

std::shared_ptr<const sim::Trace> SyntheticTrace(double rate_rps, absl::Duration span,
                                                 int32_t prompt_tokens, int32_t output_tokens,
                                                 uint64_t seed) {
  sim::SyntheticWorkloadSpec spec;
  spec.rate.rate = rate_rps;
  spec.prompt.mean = prompt_tokens;
  spec.output.mean = output_tokens;
  spec.duration = sim::SimDuration::FromAbsl(span);
  spec.seed = seed;
  auto trace = std::make_shared<sim::Trace>();
  trace->source = absl::StrCat("synthetic Poisson ", rate_rps, " req/s");
  std::unique_ptr<sim::RequestSource> source = sim::MakeSyntheticSource(spec);
  if (source != nullptr) {
    sim::RequestSpec r;
    while (source->Next(r)) trace->requests.push_back(r);
  }
  if (!trace->requests.empty()) sim::NormalizeTrace(*trace);
  return trace;
}

absl::StatusOr<std::shared_ptr<const sim::Trace>> ShippedTrace(const std::string& path,
                                                               double rate_scale) {
  absl::StatusOr<sim::Trace> t = sim::ReadTraceFile(path, sim::TraceReadOptions{});
  if (!t.ok()) return t.status();
  if (rate_scale != 1.0) {
    absl::StatusOr<sim::Trace> scaled = sim::ScaleRate(*t, rate_scale, 1);
    if (!scaled.ok()) return scaled.status();
    t = std::move(scaled);
  }
  sim::NormalizeTrace(*t);
  return std::make_shared<const sim::Trace>(*std::move(t));
}

}  // namespace twinscale::e2e
