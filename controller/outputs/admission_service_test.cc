// The admission API over real gRPC on loopback, with a client generated from
// proto/twinscale/v1alpha1/admission.proto: Get, List and Watch, what a watcher is told and when
// (only limit changes, deletions, a SYNCED marker after the initial state), the errors, and
// leadership.
#include "controller/outputs/admission_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "controller/outputs/grpc_server.h"
#include "proto/twinscale/v1alpha1/admission.grpc.pb.h"
#include "tests/util/grpc_test_util.h"

namespace twinscale::outputs {
namespace {

namespace pb = ::twinscale::v1alpha1;
using ::testing::HasSubstr;
using testutil::StreamReader;

const absl::Time kT0 = absl::FromUnixSeconds(1795251600) + absl::Milliseconds(250);

PublishedDecision Decision(int32_t desired, int32_t current, policy::AdmissionAdvice admission = {},
                           bool stale = false) {
  PublishedDecision d;
  d.mode = api::Mode::kRecommend;  // any mode is served
  d.desired_replicas = desired;
  d.current_replicas = current;
  d.admission = admission;
  d.inputs_stale = stale;
  d.decided_at = kT0;
  return d;
}

class AdmissionServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GrpcServerOptions o;
    o.address = "127.0.0.1:0";
    o.plaintext = true;
    o.shutdown_grace = absl::Seconds(1);
    server_ = std::make_unique<GrpcServer>(o, &clock_);
    server_->AddService(admission_.service(), AdmissionService::kServiceName);
    ASSERT_TRUE(server_->Start().ok());
    stub_ = pb::AdmissionService::NewStub(testutil::PlaintextChannel(server_->port()));
  }
  void TearDown() override { server_->Shutdown(); }

  grpc::Status Get(const std::string& ns, const std::string& name, pb::AdmissionLimits* out) {
    grpc::ClientContext ctx;
    pb::GetAdmissionLimitsRequest req;
    req.mutable_target()->set_namespace_(ns);
    req.mutable_target()->set_name(name);
    return stub_->GetAdmissionLimits(&ctx, req, out);
  }
  grpc::Status List(const std::string& ns, pb::ListAdmissionLimitsResponse* out) {
    grpc::ClientContext ctx;
    pb::ListAdmissionLimitsRequest req;
    req.set_namespace_(ns);
    return stub_->ListAdmissionLimits(&ctx, req, out);
  }
  std::unique_ptr<StreamReader<pb::AdmissionLimitsEvent>> Watch(const std::string& ns = "",
                                                                const std::string& name = "") {
    pb::WatchAdmissionLimitsRequest req;
    req.set_namespace_(ns);
    req.set_name(name);
    return std::make_unique<StreamReader<pb::AdmissionLimitsEvent>>(
        [this, req](grpc::ClientContext* ctx) { return stub_->WatchAdmissionLimits(ctx, req); });
  }
  // The next event's "TYPE target" (e.g. "UPDATED llm/a"), or "none".
  static std::string Describe(const std::optional<pb::AdmissionLimitsEvent>& e) {
    if (!e.has_value()) return "none";
    std::string type = pb::AdmissionLimitsEvent::Type_Name(e->type()).substr(5);  // "TYPE_"
    if (e->type() == pb::AdmissionLimitsEvent::TYPE_SYNCED) return type;
    return type + " " + e->limits().target().namespace_() + "/" + e->limits().target().name();
  }

  RealClock clock_;
  DecisionBoard board_;
  AdmissionService admission_{&board_};
  std::unique_ptr<GrpcServer> server_;
  std::unique_ptr<pb::AdmissionService::Stub> stub_;
};

TEST_F(AdmissionServiceTest, GetReturnsTheLimitsFieldByField) {
  board_.Publish("llm", "llama", Decision(16, 12, {true, 42.5, 4}));
  pb::AdmissionLimits l;
  ASSERT_TRUE(Get("llm", "llama", &l).ok());
  EXPECT_EQ(l.target().namespace_(), "llm");
  EXPECT_EQ(l.target().name(), "llama");
  EXPECT_TRUE(l.active());
  EXPECT_DOUBLE_EQ(l.max_arrival_rate(), 42.5);
  EXPECT_EQ(l.max_queue_per_replica(), 4);
  EXPECT_FALSE(l.inputs_stale());
  EXPECT_EQ(l.decided_at().seconds(), 1795251600);
  EXPECT_EQ(l.decided_at().nanos(), 250000000);
  EXPECT_EQ(l.version(), 1u);

  // Inactive limits: admit everything, the numbers are zero.
  board_.Publish("llm", "calm", Decision(3, 3, {false, 0, 0}, /*stale=*/true));
  pb::AdmissionLimits calm;
  ASSERT_TRUE(Get("llm", "calm", &calm).ok());
  EXPECT_FALSE(calm.active());
  EXPECT_EQ(calm.max_arrival_rate(), 0);
  EXPECT_EQ(calm.max_queue_per_replica(), 0);
  EXPECT_TRUE(calm.inputs_stale());
  EXPECT_EQ(calm.version(), 2u);
}

TEST_F(AdmissionServiceTest, GetErrorsNameTheField) {
  pb::AdmissionLimits l;
  grpc::Status s = Get("", "llama", &l);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("target.namespace"));
  s = Get("llm", "", &l);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("target.name"));
  s = Get("llm", "Llama", &l);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("target.name"));
  s = Get("llm", "nope", &l);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("llm/nope"));
}

TEST_F(AdmissionServiceTest, ListIsSortedAndFiltersByNamespace) {
  board_.Publish("prod", "b", Decision(2, 2));
  board_.Publish("llm", "z", Decision(2, 2, {true, 10, 3}));
  board_.Publish("llm", "a", Decision(2, 2));
  pb::ListAdmissionLimitsResponse all;
  ASSERT_TRUE(List("", &all).ok());
  ASSERT_EQ(all.limits_size(), 3);
  EXPECT_EQ(all.limits(0).target().name(), "a");
  EXPECT_EQ(all.limits(1).target().name(), "z");
  EXPECT_TRUE(all.limits(1).active());
  EXPECT_EQ(all.limits(2).target().namespace_(), "prod");
  pb::ListAdmissionLimitsResponse llm;
  ASSERT_TRUE(List("llm", &llm).ok());
  EXPECT_EQ(llm.limits_size(), 2);
  pb::ListAdmissionLimitsResponse bad;
  const grpc::Status s = List("Prod", &bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("namespace"));
}

TEST_F(AdmissionServiceTest, WatchSendsTheStateThenEachChangeOfTheLimits) {
  board_.Publish("llm", "b", Decision(4, 4));
  board_.Publish("llm", "a", Decision(8, 6, {true, 20, 4}));
  auto w = Watch();
  // The current state, in order, then SYNCED.
  auto first = w->Next();
  EXPECT_EQ(Describe(first), "UPDATED llm/a");
  EXPECT_TRUE(first->limits().active());
  EXPECT_DOUBLE_EQ(first->limits().max_arrival_rate(), 20);
  EXPECT_EQ(Describe(w->Next()), "UPDATED llm/b");
  EXPECT_EQ(Describe(w->Next()), "SYNCED");

  // A new decision with the same limits is not news to a gateway.
  board_.Publish("llm", "a", Decision(9, 8, {true, 20, 4}));
  // A change of the limits is.
  board_.Publish("llm", "a", Decision(9, 8, {true, 26.5, 4}));
  auto changed = w->Next();
  EXPECT_EQ(Describe(changed), "UPDATED llm/a");
  EXPECT_DOUBLE_EQ(changed->limits().max_arrival_rate(), 26.5);
  EXPECT_EQ(changed->limits().version(), 4u);  // versions 3 and 4: both publishes changed a
  // Capacity caught up: limits go inactive.
  board_.Publish("llm", "a", Decision(9, 9, {false, 0, 0}));
  auto off = w->Next();
  EXPECT_EQ(Describe(off), "UPDATED llm/a");
  EXPECT_FALSE(off->limits().active());
  // Stale inputs are news too.
  board_.Publish("llm", "b", Decision(4, 4, {}, /*stale=*/true));
  auto stale = w->Next();
  EXPECT_EQ(Describe(stale), "UPDATED llm/b");
  EXPECT_TRUE(stale->limits().inputs_stale());
  // A deleted target, and a new one.
  board_.Remove("llm", "b");
  EXPECT_EQ(Describe(w->Next()), "DELETED llm/b");
  board_.Publish("prod", "c", Decision(1, 1));
  EXPECT_EQ(Describe(w->Next()), "UPDATED prod/c");
  EXPECT_EQ(Describe(w->Next(absl::Milliseconds(200))), "none");  // nothing else happened
}

TEST_F(AdmissionServiceTest, AFilteredWatchSeesOnlyItsTargetEvenBeforeItExists) {
  auto w = Watch("llm", "later");
  EXPECT_EQ(Describe(w->Next()), "SYNCED");  // nothing yet, and that's the complete picture
  board_.Publish("llm", "other", Decision(2, 2, {true, 5, 1}));
  board_.Publish("prod", "later", Decision(2, 2, {true, 5, 1}));
  board_.Publish("llm", "later", Decision(3, 2, {true, 7, 2}));
  auto e = w->Next();
  EXPECT_EQ(Describe(e), "UPDATED llm/later");
  EXPECT_EQ(e->limits().max_queue_per_replica(), 2);
  EXPECT_EQ(Describe(w->Next(absl::Milliseconds(200))), "none");

  auto ns = Watch("prod");
  EXPECT_EQ(Describe(ns->Next()), "UPDATED prod/later");
  EXPECT_EQ(Describe(ns->Next()), "SYNCED");
}

TEST_F(AdmissionServiceTest, ABadWatchIsRefusedNamingTheField) {
  auto no_ns = Watch("", "llama");
  auto end = no_ns->Finished();
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(end->error_message(), HasSubstr("namespace"));
  auto bad_name = Watch("llm", "Llama");
  auto end2 = bad_name->Finished();
  ASSERT_TRUE(end2.has_value());
  EXPECT_EQ(end2->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(end2->error_message(), HasSubstr("name"));
}

TEST_F(AdmissionServiceTest, AFollowerAnswersUnavailableAndEndsWatches) {
  board_.Publish("llm", "a", Decision(2, 2, {true, 5, 1}));
  auto w = Watch();
  EXPECT_EQ(Describe(w->Next()), "UPDATED llm/a");
  EXPECT_EQ(Describe(w->Next()), "SYNCED");
  board_.SetServing(false);
  auto end = w->Finished();
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(end->error_message(), HasSubstr("not the leader"));
  pb::AdmissionLimits l;
  EXPECT_EQ(Get("llm", "a", &l).error_code(), grpc::StatusCode::UNAVAILABLE);
  pb::ListAdmissionLimitsResponse all;
  EXPECT_EQ(List("", &all).error_code(), grpc::StatusCode::UNAVAILABLE);
  auto late = Watch();
  auto late_end = late->Finished();
  ASSERT_TRUE(late_end.has_value());
  EXPECT_EQ(late_end->error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace twinscale::outputs
