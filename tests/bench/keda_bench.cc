// KEDA-facing gRPC under load (docs/architecture.md "Performance targets": thousands of GetMetrics
// per second, p99 under 2 ms on loopback). Prints figures; asserts nothing about speed.
//
// Set-up, all in this process: a DecisionBoard with 100 KEDA-mode InferenceAutoscalers; the
// controller's gRPC server (plaintext, 127.0.0.1, KEDA's external scaler and the admission API);
// while measuring, 200 StreamIsActive streams and 20 admission-limit watches stay open (KEDA's
// push scalers and gateways), and a publisher thread changes one target's decision and admission
// limits every 5 ms (200 changes/s, far more than 100 targets at a 15 s interval publish), so the
// watches keep receiving pushes. Clients share one channel, as KEDA's connection pool does.
//
// BM_GetMetrics/threads:N: N client threads calling GetMetrics back to back (a different target
// each call). items_per_second is the throughput. After the benchmarks, the exact p50 / p99 / max
// latency over every call of each run is printed.
//
//   build/tests/bench/keda_bench [--benchmark_min_time=3]
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "controller/common/clock.h"
#include "controller/outputs/admission_service.h"
#include "controller/outputs/decision_board.h"
#include "controller/outputs/grpc_server.h"
#include "controller/outputs/keda_scaler.h"
#include "proto/externalscaler.grpc.pb.h"
#include "proto/twinscale/v1alpha1/admission.grpc.pb.h"

namespace twinscale::outputs {
namespace {

constexpr int kTargets = 100;
constexpr int kIsActiveStreams = 200;
constexpr int kWatches = 20;

std::string TargetName(int i) { return "llm-" + std::to_string(i); }

PublishedDecision DecisionFor(int i, int step) {
  PublishedDecision d;
  d.mode = api::Mode::kKeda;
  d.current_replicas = 4 + i % 8;
  d.desired_replicas = d.current_replicas + (step % 3) - 1;
  d.admission = {step % 2 == 0, 10.0 + step % 17, 4};
  return d;
}

// A stream kept open by its own thread, reading whatever is pushed.
template <typename Response>
struct OpenStream {
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReader<Response>> reader;
  std::thread thread;
  std::atomic<int64_t>* received;
  void Start(std::unique_ptr<grpc::ClientReader<Response>> r, std::atomic<int64_t>* count) {
    reader = std::move(r);
    received = count;
    thread = std::thread([this] {
      Response msg;
      while (reader->Read(&msg)) ++*received;
      reader->Finish();
    });
  }
  void Stop() {
    ctx.TryCancel();
    thread.join();
  }
};

class Fixture {
 public:
  Fixture() {
    for (int i = 0; i < kTargets; ++i) board_.Publish("bench", TargetName(i), DecisionFor(i, 0));
    GrpcServerOptions o;
    o.address = "127.0.0.1:0";
    o.plaintext = true;
    o.shutdown_grace = absl::Seconds(2);
    server_ = std::make_unique<GrpcServer>(o, &clock_);
    server_->AddService(keda_.service(), KedaScaler::kServiceName);
    server_->AddService(admission_.service(), AdmissionService::kServiceName);
    if (absl::Status s = server_->Start(); !s.ok()) {
      std::fprintf(stderr, "cannot start the server: %s\n", s.ToString().c_str());
      std::abort();
    }
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                   grpc::InsecureChannelCredentials());
    stub_ = externalscaler::ExternalScaler::NewStub(channel_);
    auto admission_stub = twinscale::v1alpha1::AdmissionService::NewStub(channel_);
    for (int i = 0; i < kIsActiveStreams; ++i) {
      auto s = std::make_unique<OpenStream<externalscaler::IsActiveResponse>>();
      s->Start(stub_->StreamIsActive(&s->ctx, Ref(i % kTargets)), &stream_messages_);
      actives_.push_back(std::move(s));
    }
    for (int i = 0; i < kWatches; ++i) {
      auto s = std::make_unique<OpenStream<twinscale::v1alpha1::AdmissionLimitsEvent>>();
      s->Start(admission_stub->WatchAdmissionLimits(
                   &s->ctx, twinscale::v1alpha1::WatchAdmissionLimitsRequest()),
               &stream_messages_);
      watches_.push_back(std::move(s));
    }
    publisher_ = std::thread([this] {
      int step = 0;
      while (!stop_.load()) {
        ++step;
        board_.Publish("bench", TargetName(step % kTargets), DecisionFor(step % kTargets, step));
        ++publishes_;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  ~Fixture() {
    stop_ = true;
    publisher_.join();
    for (auto& s : actives_) s->Stop();
    for (auto& s : watches_) s->Stop();
    server_->Shutdown();
  }

  static externalscaler::ScaledObjectRef Ref(int i) {
    externalscaler::ScaledObjectRef ref;
    ref.set_name("so-" + std::to_string(i));
    ref.set_namespace_("bench");
    (*ref.mutable_scalermetadata())["scalerAddress"] = "twinscale:9443";
    (*ref.mutable_scalermetadata())["name"] = TargetName(i);
    return ref;
  }

  externalscaler::ExternalScaler::Stub& stub() { return *stub_; }
  int64_t stream_messages() const { return stream_messages_.load(); }
  int64_t publishes() const { return publishes_.load(); }

 private:
  RealClock clock_;
  DecisionBoard board_;
  KedaScaler keda_{&board_};
  AdmissionService admission_{&board_};
  std::unique_ptr<GrpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<externalscaler::ExternalScaler::Stub> stub_;
  std::vector<std::unique_ptr<OpenStream<externalscaler::IsActiveResponse>>> actives_;
  std::vector<std::unique_ptr<OpenStream<twinscale::v1alpha1::AdmissionLimitsEvent>>> watches_;
  std::atomic<int64_t> stream_messages_{0};
  std::atomic<int64_t> publishes_{0};
  std::atomic<bool> stop_{false};
  std::thread publisher_;
};

Fixture* g_fixture = nullptr;

// Every call's latency (microseconds) per run, keyed by the run's name.
std::mutex g_samples_mu;
std::map<std::string, std::vector<double>> g_samples;

void BM_GetMetrics(benchmark::State& state) {
  std::vector<double> latencies_us;
  latencies_us.reserve(1 << 20);
  std::vector<externalscaler::GetMetricsRequest> requests(kTargets);
  for (int i = 0; i < kTargets; ++i) {
    *requests[i].mutable_scaledobjectref() = Fixture::Ref(i);
    requests[i].set_metricname("twinscale-desired-replicas");
  }
  int i = state.thread_index();
  int64_t errors = 0;
  for (auto _ : state) {
    externalscaler::GetMetricsResponse resp;
    grpc::ClientContext ctx;
    const auto start = std::chrono::steady_clock::now();
    const grpc::Status s = g_fixture->stub().GetMetrics(&ctx, requests[i++ % kTargets], &resp);
    const auto end = std::chrono::steady_clock::now();
    if (!s.ok()) ++errors;
    latencies_us.push_back(std::chrono::duration<double, std::micro>(end - start).count());
    benchmark::DoNotOptimize(resp);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["errors"] = benchmark::Counter(static_cast<double>(errors));
  std::lock_guard<std::mutex> lock(g_samples_mu);
  auto& all = g_samples["BM_GetMetrics/threads:" + std::to_string(state.threads())];
  all.insert(all.end(), latencies_us.begin(), latencies_us.end());
}
BENCHMARK(BM_GetMetrics)->UseRealTime()->Threads(1)->Threads(2)->Threads(4)->Threads(8);

double Percentile(std::vector<double>& v, double p) {
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

}  // namespace
}  // namespace twinscale::outputs

int main(int argc, char** argv) {
  using namespace twinscale::outputs;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  g_fixture = new Fixture();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // streams open, first pushes
  const int64_t messages_before = g_fixture->stream_messages();
  const int64_t publishes_before = g_fixture->publishes();
  const auto start = std::chrono::steady_clock::now();
  benchmark::RunSpecifiedBenchmarks();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "\nWhile measuring: %d StreamIsActive streams and %d admission watches open; "
      "%.0f decision changes/s published, %.0f stream messages/s pushed.\n",
      kIsActiveStreams, kWatches, (g_fixture->publishes() - publishes_before) / seconds,
      (g_fixture->stream_messages() - messages_before) / seconds);
  std::printf("%-32s %10s %10s %10s %10s\n", "GetMetrics latency (all calls)", "calls", "p50 us",
              "p99 us", "max us");
  for (auto& [name, v] : g_samples) {
    if (v.empty()) continue;
    const double p50 = Percentile(v, 0.50), p99 = Percentile(v, 0.99);
    const double max = *std::max_element(v.begin(), v.end());
    std::printf("%-32s %10zu %10.0f %10.0f %10.0f\n", name.c_str(), v.size(), p50, p99, max);
  }
  delete g_fixture;
  benchmark::Shutdown();
  return 0;
}
