// KEDA's external-scaler service over the DecisionBoard: see keda_scaler.h.
#include "controller/outputs/keda_scaler.h"

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "controller/outputs/board_stream.h"
#include "controller/outputs/grpc_status.h"
#include "controller/outputs/keda_metric.h"
#include "controller/outputs/scaler_target.h"
#include "proto/externalscaler.grpc.pb.h"

namespace twinscale::outputs {
namespace {

using externalscaler::GetMetricSpecResponse;
using externalscaler::GetMetricsRequest;
using externalscaler::GetMetricsResponse;
using externalscaler::IsActiveResponse;
using externalscaler::ScaledObjectRef;

using Target = ScalerTarget;

// The InferenceAutoscaler a ScaledObject's trigger names (scaler_target.h).
absl::StatusOr<Target> TargetOf(const ScaledObjectRef& ref) {
  const auto& md = ref.scalermetadata();
  auto lookup = [&md](const char* key) -> std::optional<std::string_view> {
    auto it = md.find(key);
    if (it == md.end()) return std::nullopt;
    return std::string_view(it->second);
  };
  return ResolveScalerTarget(lookup("name"), lookup("namespace"), ref.namespace_(), ref.name());
}

}  // namespace

class KedaScaler::Impl final : public externalscaler::ExternalScaler::CallbackService {
 public:
  Impl(DecisionBoard* board, KedaScalerOptions options)
      : board_(board), options_(std::move(options)) {}

  // The entry a request may be answered from, or the error to answer with (keda_scaler.h).
  absl::StatusOr<BoardEntry> Resolve(const Target& t) const {
    if (!board_->serving()) return absl::UnavailableError(kNotLeaderMessage);
    std::optional<BoardEntry> e = board_->Get(t.namespace_name, t.name);
    if (!e.has_value()) {
      return absl::NotFoundError(absl::StrCat(
          "no decision is published for InferenceAutoscaler ", t.namespace_name, "/", t.name,
          ": it does not exist, is not watched by this controller, or has not been decided yet "
          "(the first decision comes within one spec.metrics.interval of the controller starting "
          "or becoming leader)"));
    }
    if (e->decision.mode != api::Mode::kKeda) {
      return absl::FailedPreconditionError(
          absl::StrCat("InferenceAutoscaler ", t.namespace_name, "/", t.name, " has spec.mode ",
                       std::string(api::ModeName(e->decision.mode)),
                       ": set spec.mode: KEDA for KEDA to act on it"));
    }
    return *std::move(e);
  }
  absl::StatusOr<BoardEntry> Resolve(const ScaledObjectRef& ref) const {
    absl::StatusOr<Target> t = TargetOf(ref);
    if (!t.ok()) return t.status();
    return Resolve(*t);
  }

  void FillSpec(GetMetricSpecResponse* out) const {
    externalscaler::MetricSpec* spec = out->add_metricspecs();
    spec->set_metricname(options_.metric_name);
    const KedaMetric m = KedaMetricFor(1, 1);
    spec->set_targetsize(m.target_size);
    spec->set_targetsizefloat(m.target_size_float);
  }

  // --- unary ---
  grpc::ServerUnaryReactor* IsActive(grpc::CallbackServerContext* ctx, const ScaledObjectRef* req,
                                     IsActiveResponse* resp) override {
    grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
    absl::StatusOr<BoardEntry> e = Resolve(*req);
    if (e.ok()) resp->set_result(true);
    r->Finish(ToGrpcStatus(e.status()));
    return r;
  }

  grpc::ServerUnaryReactor* GetMetricSpec(grpc::CallbackServerContext* ctx,
                                          const ScaledObjectRef* req,
                                          GetMetricSpecResponse* resp) override {
    grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
    absl::StatusOr<BoardEntry> e = Resolve(*req);
    if (e.ok()) FillSpec(resp);
    r->Finish(ToGrpcStatus(e.status()));
    return r;
  }

  grpc::ServerUnaryReactor* GetMetrics(grpc::CallbackServerContext* ctx,
                                       const GetMetricsRequest* req,
                                       GetMetricsResponse* resp) override {
    grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
    absl::StatusOr<BoardEntry> e = Resolve(req->scaledobjectref());
    if (e.ok() && !req->metricname().empty() && req->metricname() != options_.metric_name) {
      e = absl::NotFoundError(absl::StrCat("metric \"", req->metricname(),
                                           "\" is not served: twinscale publishes \"",
                                           options_.metric_name, "\""));
    }
    if (e.ok()) {
      const KedaMetric m =
          KedaMetricFor(e->decision.published_replicas(), e->decision.current_replicas);
      externalscaler::MetricValue* v = resp->add_metricvalues();
      v->set_metricname(options_.metric_name);
      v->set_metricvalue(m.metric_value);
      v->set_metricvaluefloat(m.metric_value_float);
    }
    r->Finish(ToGrpcStatus(e.status()));
    return r;
  }

  // --- streams ---
  // One target's answer, pushed when it changes; the stream ends when the target can't be
  // answered any more. `Answer` fills the message from a resolved entry.
  template <typename Response>
  class TargetStream final : public BoardStream<Response> {
   public:
    using Fill = void (*)(const Impl&, const BoardEntry&, Response*);
    TargetStream(const Impl* impl, const ScaledObjectRef& ref, Fill fill)
        : BoardStream<Response>(impl->board_), impl_(impl), fill_(fill) {
      absl::StatusOr<Target> t = TargetOf(ref);
      if (!t.ok()) {
        this->FinishNow(ToGrpcStatus(t.status()));
        return;
      }
      target_ = *std::move(t);
      key_ = DecisionBoard::Key(target_.namespace_name, target_.name);
      this->Begin();
    }

   private:
    bool Changed(std::string_view key) override { return key.empty() || key == key_; }
    typename BoardStream<Response>::Action Next(Response* out, grpc::Status* status) override {
      using Action = typename BoardStream<Response>::Action;
      absl::StatusOr<BoardEntry> e = impl_->Resolve(target_);
      if (!e.ok()) {
        *status = ToGrpcStatus(e.status());
        return Action::kFinish;
      }
      Response answer;
      fill_(*impl_, *e, &answer);
      const std::string bytes = answer.SerializeAsString();
      if (last_sent_.has_value() && *last_sent_ == bytes) return Action::kWait;
      last_sent_ = bytes;
      *out = std::move(answer);
      return Action::kWrite;
    }

    const Impl* impl_;
    Fill fill_;
    Target target_;
    std::string key_;
    std::optional<std::string> last_sent_;  // the serialized last message
  };

  grpc::ServerWriteReactor<IsActiveResponse>* StreamIsActive(grpc::CallbackServerContext* ctx,
                                                             const ScaledObjectRef* req) override {
    return new TargetStream<IsActiveResponse>(
        this, *req, [](const Impl&, const BoardEntry&, IsActiveResponse* out) {
          out->set_result(true);  // no scale-to-zero in v1alpha1
        });
  }

  grpc::ServerWriteReactor<GetMetricSpecResponse>* StreamMetricSpec(
      grpc::CallbackServerContext* ctx, const ScaledObjectRef* req) override {
    return new TargetStream<GetMetricSpecResponse>(
        this, *req, [](const Impl& impl, const BoardEntry&, GetMetricSpecResponse* out) {
          impl.FillSpec(out);
        });
  }

 private:
  DecisionBoard* const board_;
  const KedaScalerOptions options_;
};

KedaScaler::KedaScaler(DecisionBoard* board, KedaScalerOptions options)
    : impl_(std::make_unique<Impl>(board, std::move(options))) {}
KedaScaler::~KedaScaler() = default;
grpc::Service* KedaScaler::service() { return impl_.get(); }

}  // namespace twinscale::outputs
