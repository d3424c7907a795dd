// The server-streaming machinery the KEDA scaler and the admission API share: a gRPC callback-API
// write reactor (in gRPC 1.51 a synchronous stream handler waiting on a condition variable can
// hang Server::Shutdown) driven by DecisionBoard change hints. Internal to controller/outputs (it
// includes gRPC headers); not for other folders.
//
// A stream subscribes to the board when it begins. On every hint it asks the derived class what
// to do next (Next: write a message, wait, or finish with a status), with at most one write in
// flight; a hint that arrives during a write is looked at when the write completes, so a slow
// client gets the latest state, never a queue. It finishes:
//   - UNAVAILABLE as soon as the board stops serving (this replica lost leadership), so clients
//     re-connect to the leader;
//   - with the status Next returns (a target deleted: NOT_FOUND, ...);
//   - CANCELLED when the client cancels, a write fails, or the server shuts down (Server::Shutdown
//     cancels open calls at its deadline; OnCancel finishes at once, so shutdown never hangs).
// OnDone unsubscribes (waiting out a running hint) and deletes the reactor.
//
// Thread-safety: hints arrive on publishers' threads, completions on gRPC's; everything the
// derived class overrides runs with the reactor's mutex held, so it needs no locking of its own,
// but it must not block (read the board, build a message, return).
#ifndef TWINSCALE_CONTROLLER_OUTPUTS_BOARD_STREAM_H_
#define TWINSCALE_CONTROLLER_OUTPUTS_BOARD_STREAM_H_

#include <grpcpp/grpcpp.h>

#include <optional>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "controller/outputs/decision_board.h"

namespace twinscale::outputs {

// What a follower answers on every call of every twinscale gRPC service.
inline constexpr char kNotLeaderMessage[] =
    "this twinscale controller replica is not the leader (it does not hold the Lease): only the "
    "leader serves decisions; retry, the Service routes to the leader";

template <typename Response>
class BoardStream : public grpc::ServerWriteReactor<Response> {
 public:
  explicit BoardStream(DecisionBoard* board) : board_(board) {}

 protected:
  enum class Action { kWait, kWrite, kFinish };

  // A hint that `key` changed ("" = anything may have). Record what Next needs; return whether
  // the stream should look at the board now.
  virtual bool Changed(std::string_view key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
  // What to do now: kWrite with *out filled, kFinish with *status set, or kWait. Called only while
  // the board serves and no write is in flight.
  virtual Action Next(Response* out, grpc::Status* status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;

  // Call exactly one of these, at the end of the derived constructor. Begin subscribes and sends
  // what is due at once; FinishNow ends a stream whose request was refused.
  void Begin() {
    const DecisionBoard::SubscriptionId id = board_->Subscribe([this](std::string_view key) {
      absl::MutexLock lock(&mu_);
      if (!begun_ || finished_) return;
      if (Changed(key)) Pump();
    });
    absl::MutexLock lock(&mu_);
    subscription_ = id;
    begun_ = true;
    Changed("");
    Pump();
  }
  void FinishNow(grpc::Status status) {
    absl::MutexLock lock(&mu_);
    FinishLocked(std::move(status));
  }

  DecisionBoard* board() const { return board_; }
  absl::Mutex mu_;

 private:
  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (finished_) return;
    if (!ok) {
      FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the stream is closed"));
    } else if (finish_after_write_.has_value()) {
      FinishLocked(*finish_after_write_);
    } else {
      Pump();
    }
  }

  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    grpc::Status cancelled(grpc::StatusCode::CANCELLED, "cancelled");
    if (writing_) {
      finish_after_write_ = cancelled;  // OnWriteDone(false) comes next
    } else {
      FinishLocked(cancelled);
    }
  }

  void OnDone() override {
    // After this no hint runs (Unsubscribe waits out one in progress), so deleting is safe.
    if (subscription_.has_value()) board_->Unsubscribe(*subscription_);
    delete this;
  }

  void Pump() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || writing_) return;
    if (!board_->serving()) {
      FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, kNotLeaderMessage));
      return;
    }
    grpc::Status status;
    switch (Next(&buffer_, &status)) {
      case Action::kWait:
        return;
      case Action::kWrite:
        writing_ = true;
        // gRPC runs OnWriteDone on its own threads, never inline: safe under mu_.
        this->StartWrite(&buffer_);
        return;
      case Action::kFinish:
        FinishLocked(std::move(status));
        return;
    }
  }

  void FinishLocked(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    finished_ = true;
    // OnDone is scheduled on gRPC's executor, never run inline: safe under mu_.
    this->Finish(std::move(status));
  }

  DecisionBoard* const board_;
  bool begun_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> finish_after_write_ ABSL_GUARDED_BY(mu_);
  Response buffer_ ABSL_GUARDED_BY(mu_);
  // Set once in Begin, before gRPC can call OnDone (which needs Finish first).
  std::optional<DecisionBoard::SubscriptionId> subscription_;
};

}  // namespace twinscale::outputs

#endif  // TWINSCALE_CONTROLLER_OUTPUTS_BOARD_STREAM_H_
