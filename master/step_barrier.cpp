#include "actorflow/master/step_barrier.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <utility>

#include "actorflow/net/rendezvous_service.hpp"

namespace actorflow {

bool DerivedFrom(const Status& a, const Status& b) {
  if (errors::IsCancelled(a)) return !errors::IsCancelled(b);
  const std::string& am = a.message();
  const std::string& bm = b.message();
  return a.code() == b.code() && am.size() > bm.size() && am.compare(am.size() - bm.size(), bm.size(), bm) == 0 &&
         am.find("(op '_Recv'): ") != std::string::npos;
}

StepBarrier::StepBarrier(int64_t step_id, std::vector<caf::actor> participants, SendDone send_done)
    : step_id_(step_id), participants_(std::move(participants)), send_done_(std::move(send_done)) {
  std::sort(participants_.begin(), participants_.end());
  participants_.erase(std::unique(participants_.begin(), participants_.end()), participants_.end());
}

Status StepBarrier::Finish() {
  if (pending_ != 0) return errors::Internal("step ", step_id_, " finished with ", pending_, " partitions unanswered");
  for (const caf::actor& p : participants_)
    if (!send_done_ || !send_done_(p, step_id_)) caf::anon_send(p, RendezvousStepDone{step_id_});
  return Status::OK();
}

void StepBarrier::Abort(const Status& s) {
  if (aborted_) return;
  aborted_ = true;
  for (const caf::actor& p : participants_) caf::anon_send(p, RendezvousAbort{step_id_, s});
}

void StepBarrier::FailedToStart(const Status& s) {
  if (status_.ok()) status_ = s;
  Abort(s);
}

void StepBarrier::PartitionDone(const Status& s) {
  --pending_;
  if (s.ok()) return;
  // The root cause wins over what it caused elsewhere, whichever partition
  // answers first: the Cancelled, and the _Recv errors that carry it.
  if (status_.ok() || DerivedFrom(status_, s)) status_ = s;
  // A Cancelled answer is not a cause of its own: the echo of an abort, or
  // of its process shutting down (the peer's loss then reaches the others'
  // _Recvs as Unavailable, which the step reports: retryable). A partition
  // cancelled because its session was closed under it by a master taken for
  // dead answers Aborted instead (CloseSession::master_down), and aborts.
  if (!errors::IsCancelled(s)) Abort(s);
}

}  // namespace actorflow
