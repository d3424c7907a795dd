// LiveFleet: a simulated vLLM fleet that runs in WALL-CLOCK time and speaks HTTP, for end-to-end
// tests of the live controller's metric sources (and, later, of the whole controller against the
// fake API server).
//
// It wraps replay's SimulatedCluster (the same truth fleet `twinscale replay` uses): a background
// thread advances the simulation every `tick` to
//     fleet time = start + time_scale x (wall time elapsed while running),
// feeding it a request trace (synthetic or shipped, see the helpers below). Every replica whose
// vLLM server would answer (Ready or Draining, as in SimulatedCluster) serves its engine's
// /metrics text, rendered per request by the replica's VllmMetrics, on its OWN loopback address
//     http://127.0.0.(first_address + i):<port><path>      (i = the replica index)
// with the same port for every pod (Linux answers on every 127.0.0.N without setup). A pod that
// is starting has no listener yet (a scrape is refused, as a real pod's would be), and a pod that
// is gone loses its listener.
//
// For a test harness: Pods() lists every pod not gone with its name, IP, stage, created and ready
// times (to mirror them as Kubernetes Pods); Scale(n) changes the replica count (new pods go
// through Provisioning -> Loading -> WarmingUp for the profile's warm-up, or `warmup` when set,
// then serve); Pause() stops the fleet's clock so every page stays exactly as it is (compare two
// readers of the same moment); SetFault() makes a pod hang, answer garbage, answer 500, or serve a
// given body.
//
// Times (Pods(), Now()) are on the fleet's clock: wall time at time_scale 1 until the first pause,
// then behind wall time by the paused spans.
// Thread-safety: every public method may be called from any thread.
#ifndef TWINSCALE_TESTS_E2E_LIVE_FLEET_H_
#define TWINSCALE_TESTS_E2E_LIVE_FLEET_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/common/clock.h"
#include "controller/metrics/metrics_source.h"
#include "controller/state/cluster_view.h"
#include "simulator/model/lifecycle.h"
#include "simulator/workload/trace.h"

namespace twinscale::e2e {

struct LiveFleetOptions {
  std::string profile = "llama-3.1-8b-h100-sxm-tp1";            // an embedded deployment profile
  std::string model_name = "meta-llama/Llama-3.1-8B-Instruct";  // the model_name label
  int32_t initial_replicas = 2;  // Ready (and serving) from the start
  // Arrivals in fleet time from the start (normalised: first arrival at 0); null: an idle fleet.
  std::shared_ptr<const sim::Trace> trace;
  double time_scale = 1.0;  // simulated seconds per wall second while running; > 0
  // When set: every new pod takes exactly this long from creation to Ready (half Loading, half
  // WarmingUp, no Provisioning), instead of the profile's log-normal delays (about a minute).
  std::optional<absl::Duration> warmup;
  int32_t port = 0;            // 0: a free port, chosen at Start
  int32_t first_address = 10;  // pod i listens on 127.0.0.(first_address + i); 2..254
  std::string path = "/metrics";
  absl::Duration tick = absl::Milliseconds(50);  // how often the simulation catches up
  std::string pod_prefix = "vllm";               // pods are "<pod_prefix>-<index>"
  uint64_t seed = 1;
};

// A pod as a test harness mirrors it.
struct LivePod {
  std::string name;
  int32_t index = 0;
  std::string ip;  // 127.0.0.(first_address + index)
  int32_t port = 0;
  sim::ReplicaPhase phase = sim::ReplicaPhase::kReady;
  state::PodView::Stage stage = state::PodView::Stage::kReady;
  absl::Time created;
  absl::Time ready_since = absl::InfinitePast();  // InfinitePast unless Ready
  bool serving = false;                           // its /metrics listener is open
};

// What a pod's engine holds right now, read from the replica's VllmMetrics directly (not from its
// text): the independent side of a scrape's comparison.
struct EngineTruth {
  int64_t running = 0, waiting = 0;
  double kv_cache_usage = 0;
  int64_t prompt_tokens = 0, generation_tokens = 0, preemptions = 0;
  int64_t requests_finished = 0;  // all reasons
  int64_t ttft_count = 0;
  double ttft_sum = 0;
};

// One pod's page and its truth, taken at the same moment.
struct PodPage {
  std::string text;  // exactly what a scrape would get now (fault-free)
  EngineTruth truth;
  absl::Time at;  // fleet time
};

enum class PodFault {
  kNone,       // serve the page
  kHang,       // accept the request and never answer (until the fault is cleared or Stop)
  kGarbage,    // 200 with a body that is not the text format (an error on line 3)
  kHttp500,    // 500 Internal Server Error
  kFixedBody,  // 200 with the given body instead of the page
};

class LiveFleet {
 public:
  // Builds the fleet, opens the initial pods' listeners and starts the clock thread. `clock`
  // (the wall clock by default) must outlive the fleet. InvalidArgument for a bad option or
  // profile; Unavailable when a listener can't be opened.
  static absl::StatusOr<std::unique_ptr<LiveFleet>> Start(LiveFleetOptions options,
                                                          const Clock* clock = nullptr);
  ~LiveFleet();  // Stop()
  LiveFleet(const LiveFleet&) = delete;
  LiveFleet& operator=(const LiveFleet&) = delete;

  // Stops the clock thread, answers hung requests (503) and closes every listener. Idempotent.
  void Stop();

  std::vector<LivePod> Pods() const;
  // The serving pods as scrape targets (pod name, IP, port, path), by index.
  std::vector<metrics::PodTarget> Targets() const;
  int32_t port() const;

  // Sets the replica count (Kubernetes' spec.replicas of the target); new pods start now.
  void Scale(int32_t replicas);
  int32_t spec_replicas() const;

  // Stops / restarts the fleet's clock. While paused no request arrives or finishes and every
  // page is constant; listeners stay as they are.
  void Pause();
  void Resume();
  bool paused() const;
  absl::Time Now() const;  // the fleet's clock

  // Blocks until the clock thread has advanced the fleet (and synced listeners) at least once more
  // after the call: afterwards Pods() and the listeners reflect the fleet as of the call.
  void WaitForTick() const;

  // The pod's page and truth now; nullopt for an unknown or gone pod, or one not yet serving.
  std::optional<PodPage> Page(const std::string& pod) const;

  // Injects `fault` into `pod`'s answers from now on (`body` for kFixedBody); the pod may not
  // exist yet. Clearing a hang (kNone or any other fault) answers the requests it held with 503.
  // False when `pod` is not a name of this fleet ("<pod_prefix>-<index>").
  bool SetFault(const std::string& pod, PodFault fault, std::string body = "");
  // How many requests a kHang fault on `pod` holds right now.
  int32_t HeldRequests(const std::string& pod) const;

 private:
  class Impl;
  explicit LiveFleet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A Poisson stream of `rate_rps` requests per second over `span` with constant prompt and output
// lengths, first arrival at 0 (deterministic for a seed).
std::shared_ptr<const sim::Trace> SyntheticTrace(double rate_rps, absl::Duration span,
                                                 int32_t prompt_tokens, int32_t output_tokens,
                                                 uint64_t seed = 1);

// A shipped trace file (tests/data/traces/..., path relative to the repo root, where tests run),
// its rate scaled by `rate_scale` (sim::ScaleRate) and normalised.
absl::StatusOr<std::shared_ptr<const sim::Trace>> ShippedTrace(const std::string& path,
                                                               double rate_scale = 1.0);

}  // namespace twinscale::e2e

#endif  // TWINSCALE_TESTS_E2E_LIVE_FLEET_H_
