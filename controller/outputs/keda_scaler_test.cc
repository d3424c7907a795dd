// KEDA's external scaler over real gRPC on loopback (plaintext here; TLS in grpc_server_test.cc),
// with a client generated from proto/externalscaler.proto as KEDA's is: every RPC, the errors a
// misconfigured ScaledObject gets, "hold" on stale inputs, the streams, leadership, and the HPA
// arithmetic: for each (current, desired) the value twinscale publishes is fed through KEDA's
// conversions and the HPA's formula — written out independently below — and the HPA must land on
// the decision wherever its tolerance allows.
#include "controller/outputs/keda_scaler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "controller/outputs/grpc_server.h"
#include "proto/externalscaler.grpc.pb.h"
#include "tests/util/grpc_test_util.h"

namespace twinscale::outputs {
namespace {

using ::externalscaler::ExternalScaler;
using ::externalscaler::GetMetricSpecResponse;
using ::externalscaler::GetMetricsRequest;
using ::externalscaler::GetMetricsResponse;
using ::externalscaler::IsActiveResponse;
using ::externalscaler::ScaledObjectRef;
using ::testing::HasSubstr;
using testutil::StreamReader;

const absl::Time kT0 = absl::FromUnixSeconds(1795251600);
constexpr char kMetric[] = "twinscale-desired-replicas";

PublishedDecision Decision(int32_t desired, int32_t current, bool stale = false,
                           api::Mode mode = api::Mode::kKeda) {
  PublishedDecision d;
  d.mode = mode;
  d.desired_replicas = desired;
  d.current_replicas = current;
  d.inputs_stale = stale;
  d.decided_at = kT0;
  return d;
}

// The ScaledObjectRef KEDA sends for a ScaledObject `so` in `so_namespace` whose external trigger
// has `metadata` (KEDA passes every trigger metadata key, scalerAddress included).
ScaledObjectRef Ref(std::map<std::string, std::string> metadata,
                    const std::string& so_namespace = "llm",
                    const std::string& so = "vllm-scaledobject") {
  ScaledObjectRef ref;
  ref.set_name(so);
  ref.set_namespace_(so_namespace);
  (*ref.mutable_scalermetadata())["scalerAddress"] = "twinscale-grpc.twinscale-system.svc:9443";
  for (const auto& [k, v] : metadata) (*ref.mutable_scalermetadata())[k] = v;
  return ref;
}

// One HPA sync over KEDA's metric, written from the sources, independently of keda_metric.h:
//  - KEDA (pkg/scalers/external_scaler.go): the target is targetSizeFloat if > 0 else targetSize,
//    the value metricValueFloat if > 0 else metricValue; both become milli-quantities by
//    truncation (GetMetricTargetMili, GenerateMetricInMili: int64(v * 1000)).
//  - The HPA (replica_calculator.go, GetExternalPerPodMetricReplicas), AverageValue target:
//    ratio = usage / (target x statusReplicas); inside [1 - tol, 1 + tol] it keeps
//    statusReplicas, else ceil(usage / target).
int32_t HpaProposal(const externalscaler::MetricSpec& spec,
                    const externalscaler::MetricValue& value, int32_t status_replicas,
                    double tolerance) {
  const double target =
      spec.targetsizefloat() > 0 ? spec.targetsizefloat() : static_cast<double>(spec.targetsize());
  const double v = value.metricvaluefloat() > 0 ? value.metricvaluefloat()
                                                : static_cast<double>(value.metricvalue());
  const auto target_milli = static_cast<int64_t>(target * 1000);
  const auto usage_milli = static_cast<int64_t>(v * 1000);
  const double ratio =
      static_cast<double>(usage_milli) / (static_cast<double>(target_milli) * status_replicas);
  if (1 - tolerance <= ratio && ratio <= 1 + tolerance) return status_replicas;
  return static_cast<int32_t>(
      std::ceil(static_cast<double>(usage_milli) / static_cast<double>(target_milli)));
}

class KedaScalerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GrpcServerOptions o;
    o.address = "127.0.0.1:0";
    o.plaintext = true;
    o.shutdown_grace = absl::Seconds(1);
    server_ = std::make_unique<GrpcServer>(o, &clock_);
    server_->AddService(keda_.service(), KedaScaler::kServiceName);
    ASSERT_TRUE(server_->Start().ok());
    stub_ = ExternalScaler::NewStub(testutil::PlaintextChannel(server_->port()));
  }
  void TearDown() override { server_->Shutdown(); }

  grpc::Status IsActive(const ScaledObjectRef& ref, IsActiveResponse* out) {
    grpc::ClientContext ctx;
    return stub_->IsActive(&ctx, ref, out);
  }
  grpc::Status Spec(const ScaledObjectRef& ref, GetMetricSpecResponse* out) {
    grpc::ClientContext ctx;
    return stub_->GetMetricSpec(&ctx, ref, out);
  }
  grpc::Status Metrics(const ScaledObjectRef& ref, GetMetricsResponse* out,
                       const std::string& metric = kMetric) {
    grpc::ClientContext ctx;
    GetMetricsRequest req;
    *req.mutable_scaledobjectref() = ref;
    req.set_metricname(metric);
    return stub_->GetMetrics(&ctx, req, out);
  }
  std::unique_ptr<StreamReader<IsActiveResponse>> StreamIsActive(const ScaledObjectRef& ref) {
    return std::make_unique<StreamReader<IsActiveResponse>>(
        [this, ref](grpc::ClientContext* ctx) { return stub_->StreamIsActive(ctx, ref); });
  }
  std::unique_ptr<StreamReader<GetMetricSpecResponse>> StreamMetricSpec(
      const ScaledObjectRef& ref) {
    return std::make_unique<StreamReader<GetMetricSpecResponse>>(
        [this, ref](grpc::ClientContext* ctx) { return stub_->StreamMetricSpec(ctx, ref); });
  }

  RealClock clock_;
  DecisionBoard board_;
  KedaScaler keda_{&board_};
  std::unique_ptr<GrpcServer> server_;
  std::unique_ptr<ExternalScaler::Stub> stub_;
};

TEST_F(KedaScalerTest, EveryRpcAnswersForAKedaModeTarget) {
  board_.Publish("llm", "llama", Decision(7, 4));
  const ScaledObjectRef ref = Ref({{"name", "llama"}});

  IsActiveResponse active;
  ASSERT_TRUE(IsActive(ref, &active).ok());
  EXPECT_TRUE(active.result());  // no scale-to-zero in v1alpha1

  GetMetricSpecResponse spec;
  ASSERT_TRUE(Spec(ref, &spec).ok());
  ASSERT_EQ(spec.metricspecs_size(), 1);
  EXPECT_EQ(spec.metricspecs(0).metricname(), kMetric);
  EXPECT_EQ(spec.metricspecs(0).targetsize(), 1);
  EXPECT_DOUBLE_EQ(spec.metricspecs(0).targetsizefloat(), 1.0);

  GetMetricsResponse metrics;
  ASSERT_TRUE(Metrics(ref, &metrics).ok());
  ASSERT_EQ(metrics.metricvalues_size(), 1);
  EXPECT_EQ(metrics.metricvalues(0).metricname(), kMetric);
  EXPECT_EQ(metrics.metricvalues(0).metricvalue(), 7);  // both fields set (old and new KEDA)
  EXPECT_DOUBLE_EQ(metrics.metricvalues(0).metricvaluefloat(), 7.0);
  // KEDA may send an empty metric name; it gets the same answer.
  GetMetricsResponse unnamed;
  ASSERT_TRUE(Metrics(ref, &unnamed, "").ok());
  EXPECT_DOUBLE_EQ(unnamed.metricvalues(0).metricvaluefloat(), 7.0);

  auto is_active = StreamIsActive(ref);
  auto first = is_active->Next();
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->result());
  auto spec_stream = StreamMetricSpec(ref);
  auto pushed = spec_stream->Next();
  ASSERT_TRUE(pushed.has_value());
  // KEDA's rule for StreamMetricSpec: the same as GetMetricSpec.
  EXPECT_EQ(pushed->SerializeAsString(), spec.SerializeAsString());
}

TEST_F(KedaScalerTest, TheNamespaceDefaultsToTheScaledObjectsOwn) {
  board_.Publish("llm", "llama", Decision(3, 3));
  board_.Publish("shared", "llama", Decision(9, 9));
  GetMetricsResponse m;
  ASSERT_TRUE(Metrics(Ref({{"name", "llama"}}, "llm"), &m).ok());
  EXPECT_EQ(m.metricvalues(0).metricvalue(), 3);
  GetMetricsResponse other;
  ASSERT_TRUE(Metrics(Ref({{"name", "llama"}, {"namespace", "shared"}}, "llm"), &other).ok());
  EXPECT_EQ(other.metricvalues(0).metricvalue(), 9);
}

TEST_F(KedaScalerTest, BadMetadataIsInvalidArgumentNamingTheKey) {
  board_.Publish("llm", "llama", Decision(3, 3));
  struct Case {
    std::string why;
    ScaledObjectRef ref;
    std::string key;  // the key the message must name
  };
  const Case cases[] = {
      {"no name", Ref({}), "scalerMetadata.name"},
      {"an empty name", Ref({{"name", ""}}), "scalerMetadata.name"},
      {"no namespace anywhere", Ref({{"name", "llama"}}, ""), "scalerMetadata.namespace"},
      {"a name no object can have", Ref({{"name", "Llama_8B"}}), "scalerMetadata.name"},
      {"a namespace no namespace can have", Ref({{"name", "llama"}, {"namespace", "LLM"}}),
       "scalerMetadata.namespace"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    IsActiveResponse a;
    const grpc::Status s1 = IsActive(c.ref, &a);
    EXPECT_EQ(s1.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s1.error_message(), HasSubstr(c.key));
    GetMetricSpecResponse spec;
    EXPECT_EQ(Spec(c.ref, &spec).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    GetMetricsResponse m;
    const grpc::Status s3 = Metrics(c.ref, &m);
    EXPECT_EQ(s3.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s3.error_message(), HasSubstr(c.key));
    auto stream = StreamIsActive(c.ref);
    auto end = stream->Finished();
    ASSERT_TRUE(end.has_value());
    EXPECT_EQ(end->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(end->error_message(), HasSubstr(c.key));
    auto spec_stream = StreamMetricSpec(c.ref);
    auto spec_end = spec_stream->Finished();
    ASSERT_TRUE(spec_end.has_value());
    EXPECT_EQ(spec_end->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
}

TEST_F(KedaScalerTest, AnUnknownTargetIsNotFoundAndAnotherModeIsAFailedPrecondition) {
  const ScaledObjectRef unknown = Ref({{"name", "nope"}});
  IsActiveResponse a;
  grpc::Status s = IsActive(unknown, &a);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("llm/nope"));
  GetMetricsResponse m;
  EXPECT_EQ(Metrics(unknown, &m).error_code(), grpc::StatusCode::NOT_FOUND);
  GetMetricSpecResponse spec;
  EXPECT_EQ(Spec(unknown, &spec).error_code(), grpc::StatusCode::NOT_FOUND);

  // Recommend is a dry run: KEDA must not act on it.
  board_.Publish("llm", "dry", Decision(5, 3, false, api::Mode::kRecommend));
  s = Metrics(Ref({{"name", "dry"}}), &m);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("Recommend"));
  EXPECT_THAT(s.error_message(), HasSubstr("spec.mode: KEDA"));

  // A metric name twinscale doesn't publish.
  board_.Publish("llm", "llama", Decision(3, 3));
  s = Metrics(Ref({{"name", "llama"}}), &m, "vllm-num-requests-waiting");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr(kMetric));
}

TEST_F(KedaScalerTest, StaleInputsHoldAtTheCurrentCountNeverZero) {
  const ScaledObjectRef ref = Ref({{"name", "llama"}});
  // The policy would scale in to 1, but its inputs are stale: publish the current 6.
  board_.Publish("llm", "llama", Decision(1, 6, /*stale=*/true));
  GetMetricsResponse m;
  ASSERT_TRUE(Metrics(ref, &m).ok());
  EXPECT_EQ(m.metricvalues(0).metricvalue(), 6);
  EXPECT_DOUBLE_EQ(m.metricvalues(0).metricvaluefloat(), 6.0);
  IsActiveResponse a;
  ASSERT_TRUE(IsActive(ref, &a).ok());
  EXPECT_TRUE(a.result());
  // Nor a scale-up decided on stale inputs.
  board_.Publish("llm", "llama", Decision(12, 6, /*stale=*/true));
  ASSERT_TRUE(Metrics(ref, &m).ok());
  EXPECT_EQ(m.metricvalues(0).metricvalue(), 6);
  // Fresh again: the decision is published.
  board_.Publish("llm", "llama", Decision(12, 6));
  ASSERT_TRUE(Metrics(ref, &m).ok());
  EXPECT_EQ(m.metricvalues(0).metricvalue(), 12);
}

// The README's table ("KEDA mode: the arithmetic"), checked end to end.
TEST_F(KedaScalerTest, KedasHpaLandsOnTheDecisionWhereverItsToleranceAllows) {
  struct Case {
    std::string name;
    int32_t current, desired;
    bool stale;
    int32_t want_default_tolerance;  // the HPA's proposal with the default 10% tolerance
    int32_t want_zero_tolerance;     // with behavior.scaleUp/scaleDown.tolerance: 0
  };
  const Case cases[] = {
      {"hold: ratio exactly 1", 10, 10, false, 10, 10},
      {"20 -> 21: ratio 1.05 is inside the band, the HPA holds (the trap)", 20, 21, false, 20, 21},
      {"10 -> 11: ratio 1.1 is on the band's edge (inclusive), holds", 10, 11, false, 10, 11},
      {"10 -> 12: ratio 1.2 lands", 10, 12, false, 12, 12},
      {"1 -> 48: lands in one proposal", 1, 48, false, 48, 48},
      {"10 -> 9: 8.002 / 10 = 0.8002 lands (publishing 9 would hold)", 10, 9, false, 9, 9},
      {"19 -> 18: 17.002 / 19 = 0.895 lands", 19, 18, false, 18, 18},
      {"20 -> 19: 18.002 / 20 = 0.9001 is inside the band, holds", 20, 19, false, 20, 19},
      {"30 -> 15: lands", 30, 15, false, 15, 15},
      {"5 -> 1: 0.002 lands on one, never zero", 5, 1, false, 1, 1},
      {"stale, decision 3 from 12: holds at 12", 12, 3, true, 12, 12},
      {"stale, decision 12 from 6: holds at 6", 6, 12, true, 6, 6},
  };
  const ScaledObjectRef ref = Ref({{"name", "llama"}});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    board_.Publish("llm", "llama", Decision(c.desired, c.current, c.stale));
    GetMetricSpecResponse spec;
    GetMetricsResponse m;
    ASSERT_TRUE(Spec(ref, &spec).ok());
    ASSERT_TRUE(Metrics(ref, &m).ok());
    ASSERT_EQ(spec.metricspecs_size(), 1);
    ASSERT_EQ(m.metricvalues_size(), 1);
    EXPECT_EQ(HpaProposal(spec.metricspecs(0), m.metricvalues(0), c.current, 0.1),
              c.want_default_tolerance);
    EXPECT_EQ(HpaProposal(spec.metricspecs(0), m.metricvalues(0), c.current, 0.0),
              c.want_zero_tolerance);
    // A KEDA that reads only the integer fields: the same proposal without a tolerance.
    externalscaler::MetricSpec int_spec = spec.metricspecs(0);
    int_spec.set_targetsizefloat(0);
    externalscaler::MetricValue int_value = m.metricvalues(0);
    int_value.set_metricvaluefloat(0);
    EXPECT_EQ(HpaProposal(int_spec, int_value, c.current, 0.0), c.want_zero_tolerance);
  }
  // Why the scale-down value is not simply the count: 10 -> 9 published as 9 sits on the band's
  // edge and the HPA holds at 10.
  externalscaler::MetricSpec one;
  one.set_targetsize(1);
  one.set_targetsizefloat(1);
  externalscaler::MetricValue naive;
  naive.set_metricvalue(9);
  naive.set_metricvaluefloat(9);
  EXPECT_EQ(HpaProposal(one, naive, 10, 0.1), 10);
}

TEST_F(KedaScalerTest, AFollowerAnswersUnavailableAndClosesItsStreams) {
  board_.Publish("llm", "llama", Decision(4, 4));
  const ScaledObjectRef ref = Ref({{"name", "llama"}});
  auto is_active = StreamIsActive(ref);
  auto spec_stream = StreamMetricSpec(ref);
  ASSERT_TRUE(is_active->Next().has_value());
  ASSERT_TRUE(spec_stream->Next().has_value());

  board_.SetServing(false);  // lost the Lease
  auto end1 = is_active->Finished();
  ASSERT_TRUE(end1.has_value());
  EXPECT_EQ(end1->error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(end1->error_message(), HasSubstr("not the leader"));
  auto end2 = spec_stream->Finished();
  ASSERT_TRUE(end2.has_value());
  EXPECT_EQ(end2->error_code(), grpc::StatusCode::UNAVAILABLE);

  IsActiveResponse a;
  grpc::Status s = IsActive(ref, &a);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("not the leader"));
  GetMetricsResponse m;
  EXPECT_EQ(Metrics(ref, &m).error_code(), grpc::StatusCode::UNAVAILABLE);
  GetMetricSpecResponse spec;
  EXPECT_EQ(Spec(ref, &spec).error_code(), grpc::StatusCode::UNAVAILABLE);
  auto late = StreamIsActive(ref);
  auto late_end = late->Finished();
  ASSERT_TRUE(late_end.has_value());
  EXPECT_EQ(late_end->error_code(), grpc::StatusCode::UNAVAILABLE);

  // Leading again: nothing is served until a pass publishes (NOT_FOUND), then it is.
  board_.SetServing(true);
  EXPECT_EQ(Metrics(ref, &m).error_code(), grpc::StatusCode::NOT_FOUND);
  board_.Publish("llm", "llama", Decision(5, 4));
  ASSERT_TRUE(Metrics(ref, &m).ok());
  EXPECT_EQ(m.metricvalues(0).metricvalue(), 5);
}

TEST_F(KedaScalerTest, StreamsStayQuietWhileTheAnswerHoldsAndEndWhenTheTargetStopsBeingServed) {
  board_.Publish("llm", "llama", Decision(4, 4));
  board_.Publish("llm", "other", Decision(2, 2));
  const ScaledObjectRef ref = Ref({{"name", "llama"}});
  auto is_active = StreamIsActive(ref);
  auto spec_stream = StreamMetricSpec(ref);
  ASSERT_TRUE(is_active->Next().has_value());
  ASSERT_TRUE(spec_stream->Next().has_value());
  // New decisions change GetMetrics, not IsActive's answer or the metric spec: no pushes.
  board_.Publish("llm", "llama", Decision(9, 4));
  board_.Publish("llm", "llama", Decision(9, 9, /*stale=*/true));
  board_.Publish("llm", "other", Decision(3, 2));
  EXPECT_FALSE(is_active->Next(absl::Milliseconds(300)).has_value());
  EXPECT_FALSE(spec_stream->Next(absl::Milliseconds(1)).has_value());

  // The InferenceAutoscaler is switched to Direct: KEDA must stop acting on it.
  board_.Publish("llm", "llama", Decision(9, 9, false, api::Mode::kDirect));
  auto end = is_active->Finished();
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  auto spec_end = spec_stream->Finished();
  ASSERT_TRUE(spec_end.has_value());
  EXPECT_EQ(spec_end->error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  // Deleted: NOT_FOUND ends the stream of the other target.
  auto other = StreamIsActive(Ref({{"name", "other"}}));
  ASSERT_TRUE(other->Next().has_value());
  board_.Remove("llm", "other");
  auto gone = other->Finished();
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(KedaScalerTest, AClientThatCancelsEndsItsStream) {
  board_.Publish("llm", "llama", Decision(4, 4));
  auto stream = StreamIsActive(Ref({{"name", "llama"}}));
  ASSERT_TRUE(stream->Next().has_value());
  stream->Cancel();
  auto end = stream->Finished();
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::CANCELLED);
  // The server keeps serving others (the cancelled reactor cleaned up after itself).
  board_.Publish("llm", "llama", Decision(5, 4));
  GetMetricsResponse m;
  ASSERT_TRUE(Metrics(Ref({{"name", "llama"}}), &m).ok());
}

}  // namespace
}  // namespace twinscale::outputs
