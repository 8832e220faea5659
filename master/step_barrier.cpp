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
  // Every failure aborts (once): a Cancelled one too. Most are the echo of
  // an abort already sent (a no-op then), but a partition its own process
  // cancelled (its session closed there: the master was taken for dead
  // while it was stopped) is a cause in its own right, and the others may
  // be waiting for its tensors: a chief SIGSTOPped past the peer timeout
  // waited 120 s for its own partition's _Recv.
  Abort(s);
}

}  // namespace actorflow
