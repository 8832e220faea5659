// StepBarrier: joins the partitions of one step (TensorFlow's
// ExecutorBarrier). It counts the partitions started and answered, keeps the error that
// caused the others (not the Cancelled or _Recv failures it led to), aborts
// the step at every participant's rendezvous once, at the first failure, and
// tells every participant when the step is over so it drops what the step
// left. Used by one thread (the master's caller of Run).
#pragma once

#include <caf/actor.hpp>

#include <cstdint>
#include <functional>
#include <vector>

#include "actorflow/core/status.hpp"

namespace actorflow {

class StepBarrier {
 public:
  /// Tells a participant its step is over another way than a CAF message
  /// (actors/step_calls.hpp); false: it could not, the message goes.
  using SendDone = std::function<bool(const caf::actor& participant, int64_t step_id)>;
  /// `participants`: the rendezvous actors of the processes the step runs in
  /// (duplicates are dropped).
  StepBarrier(int64_t step_id, std::vector<caf::actor> participants, SendDone send_done = nullptr);
  StepBarrier(const StepBarrier&) = delete;
  StepBarrier& operator=(const StepBarrier&) = delete;

  /// A partition was started: its answer is awaited.
  void Started() { ++pending_; }
  /// A partition could not be started: the step fails with `s`, and the
  /// partitions started already stop waiting for it.
  void FailedToStart(const Status& s);
  /// One started partition answered with `s`.
  void PartitionDone(const Status& s);
  /// Partitions started and not answered yet.
  int pending() const { return pending_; }
  /// Every started partition has answered: each participant drops what the
  /// step left. Internal if some have not (a bug in the caller).
  Status Finish();
  /// The step's status: OK, or the root cause of its failure.
  const Status& status() const { return status_; }

 private:
  void Abort(const Status& s);

  int64_t step_id_;
  std::vector<caf::actor> participants_;
  SendDone send_done_;
  Status status_;
  int pending_ = 0;
  bool aborted_ = false;
};

/// Whether partition error `a` was caused by error `b` of another partition:
/// `a` is Cancelled and `b` is not, or `a` is a _Recv failing with the step's
/// abort status, which the executor wraps as "node '...' (op '_Recv'): " + b.
bool DerivedFrom(const Status& a, const Status& b);

}  // namespace actorflow
