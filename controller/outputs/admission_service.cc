// The admission API over the DecisionBoard: see admission_service.h and
// proto/twinscale/v1alpha1/admission.proto.
#include "controller/outputs/admission_service.h"

#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "controller/outputs/board_stream.h"
#include "controller/outputs/grpc_status.h"
#include "controller/outputs/object_names.h"
#include "proto/twinscale/v1alpha1/admission.grpc.pb.h"

namespace twinscale::outputs {
namespace {

namespace pb = ::twinscale::v1alpha1;

void FillLimits(const BoardEntry& e, pb::AdmissionLimits* out) {
  out->mutable_target()->set_namespace_(e.namespace_name);
  out->mutable_target()->set_name(e.name);
  const policy::AdmissionAdvice& a = e.decision.admission;
  out->set_active(a.active);
  if (a.active) {
    out->set_max_arrival_rate(a.max_arrival_rate);
    out->set_max_queue_per_replica(a.max_queue_per_replica);
  }
  out->set_inputs_stale(e.decision.inputs_stale);
  const int64_t nanos = absl::ToUnixNanos(e.decision.decided_at);
  int64_t seconds = nanos / 1000000000;
  int64_t rest = nanos % 1000000000;
  if (rest < 0) {  // Timestamp's nanos are never negative
    rest += 1000000000;
    --seconds;
  }
  out->mutable_decided_at()->set_seconds(seconds);
  out->mutable_decided_at()->set_nanos(static_cast<int32_t>(rest));
  out->set_version(e.version);
}

// What a watcher is told about: a change of anything else (a new decision with the same limits)
// sends nothing.
using LimitsSignature = std::tuple<bool, double, int32_t, bool>;
LimitsSignature SignatureOf(const BoardEntry& e) {
  const policy::AdmissionAdvice& a = e.decision.admission;
  return {a.active, a.active ? a.max_arrival_rate : 0.0, a.active ? a.max_queue_per_replica : 0,
          e.decision.inputs_stale};
}

absl::Status CheckServing(const DecisionBoard& board) {
  return board.serving() ? absl::OkStatus() : absl::UnavailableError(kNotLeaderMessage);
}

// One watch: the matching targets' limits, then their changes (admission.proto).
class Watch final : public BoardStream<pb::AdmissionLimitsEvent> {
 public:
  Watch(DecisionBoard* board, const pb::WatchAdmissionLimitsRequest& req)
      : BoardStream(board), namespace_(req.namespace_()), name_(req.name()) {
    absl::Status s = absl::OkStatus();
    if (!name_.empty() && namespace_.empty()) {
      s = absl::InvalidArgumentError("namespace: required when name is set");
    } else if (!namespace_.empty()) {
      s = ValidateNamespaceName(namespace_, "namespace");
    }
    if (s.ok() && !name_.empty()) s = ValidateObjectName(name_, "name");
    if (!s.ok()) {
      FinishNow(ToGrpcStatus(s));
      return;
    }
    Begin();
  }

 private:
  bool Matches(std::string_view ns, std::string_view name) const {
    return (namespace_.empty() || ns == namespace_) && (name_.empty() || name == name_);
  }

  bool Changed(std::string_view key) override {
    if (key.empty()) {
      rescan_ = true;
      return true;
    }
    const size_t slash = key.find('/');
    if (slash == std::string_view::npos) return false;
    const std::string_view ns = key.substr(0, slash), name = key.substr(slash + 1);
    if (!Matches(ns, name)) return false;
    pending_.emplace(std::string(ns), std::string(name));
    return true;
  }

  Action Next(pb::AdmissionLimitsEvent* out, grpc::Status* status) override {
    if (rescan_) {
      // Everything may have changed: look at every target we know of or have told about.
      rescan_ = false;
      for (const BoardEntry& e : board()->List(namespace_)) {
        if (Matches(e.namespace_name, e.name)) pending_.emplace(e.namespace_name, e.name);
      }
      for (const auto& [id, sig] : sent_) pending_.insert(id);
    }
    while (!pending_.empty()) {
      const std::pair<std::string, std::string> id = *pending_.begin();
      pending_.erase(pending_.begin());
      std::optional<BoardEntry> e = board()->Get(id.first, id.second);
      auto sent = sent_.find(id);
      if (e.has_value()) {
        const LimitsSignature sig = SignatureOf(*e);
        if (sent != sent_.end() && sent->second == sig) continue;
        sent_[id] = sig;
        out->Clear();
        out->set_type(pb::AdmissionLimitsEvent::TYPE_UPDATED);
        FillLimits(*e, out->mutable_limits());
        return Action::kWrite;
      }
      if (sent == sent_.end()) continue;
      sent_.erase(sent);
      out->Clear();
      out->set_type(pb::AdmissionLimitsEvent::TYPE_DELETED);
      out->mutable_limits()->mutable_target()->set_namespace_(id.first);
      out->mutable_limits()->mutable_target()->set_name(id.second);
      return Action::kWrite;
    }
    if (!synced_) {
      synced_ = true;
      out->Clear();
      out->set_type(pb::AdmissionLimitsEvent::TYPE_SYNCED);
      return Action::kWrite;
    }
    return Action::kWait;
  }

  const std::string namespace_;
  const std::string name_;
  bool rescan_ = false;
  bool synced_ = false;
  std::set<std::pair<std::string, std::string>> pending_;  // targets to look at, in order
  std::map<std::pair<std::string, std::string>, LimitsSignature> sent_;  // what the client holds
};

}  // namespace

class AdmissionService::Impl final : public pb::AdmissionService::CallbackService {
 public:
  explicit Impl(DecisionBoard* board) : board_(board) {}

  grpc::ServerUnaryReactor* GetAdmissionLimits(grpc::CallbackServerContext* ctx,
                                               const pb::GetAdmissionLimitsRequest* req,
                                               pb::AdmissionLimits* resp) override {
    grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
    r->Finish(ToGrpcStatus(Get(*req, resp)));
    return r;
  }

  grpc::ServerUnaryReactor* ListAdmissionLimits(grpc::CallbackServerContext* ctx,
                                                const pb::ListAdmissionLimitsRequest* req,
                                                pb::ListAdmissionLimitsResponse* resp) override {
    grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
    absl::Status s = req->namespace_().empty()
                         ? absl::OkStatus()
                         : ValidateNamespaceName(req->namespace_(), "namespace");
    if (s.ok()) s = CheckServing(*board_);
    if (s.ok()) {
      for (const BoardEntry& e : board_->List(req->namespace_())) FillLimits(e, resp->add_limits());
    }
    r->Finish(ToGrpcStatus(s));
    return r;
  }

  grpc::ServerWriteReactor<pb::AdmissionLimitsEvent>* WatchAdmissionLimits(
      grpc::CallbackServerContext* ctx, const pb::WatchAdmissionLimitsRequest* req) override {
    return new Watch(board_, *req);
  }

 private:
  absl::Status Get(const pb::GetAdmissionLimitsRequest& req, pb::AdmissionLimits* resp) const {
    if (absl::Status s = ValidateNamespaceName(req.target().namespace_(), "target.namespace");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = ValidateObjectName(req.target().name(), "target.name"); !s.ok()) return s;
    if (absl::Status s = CheckServing(*board_); !s.ok()) return s;
    std::optional<BoardEntry> e = board_->Get(req.target().namespace_(), req.target().name());
    if (!e.has_value()) {
      return absl::NotFoundError(absl::StrCat(
          "no decision is published for InferenceAutoscaler ", req.target().namespace_(), "/",
          req.target().name(),
          ": it does not exist, is not watched by this controller, or has not been decided yet"));
    }
    FillLimits(*e, resp);
    return absl::OkStatus();
  }

  DecisionBoard* const board_;
};

AdmissionService::AdmissionService(DecisionBoard* board) : impl_(std::make_unique<Impl>(board)) {}
AdmissionService::~AdmissionService() = default;
grpc::Service* AdmissionService::service() { return impl_.get(); }

}  // namespace twinscale::outputs
