#include "actors/rendezvous_actor.hpp"

#include <caf/all.hpp>

#include <map>
#include <string>
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "actors/messages.hpp"
#include "devices/compute_pool.hpp"

namespace actorflow {

namespace {

// Who waits for a key: a request (RendezvousRecv) or a device actor that asked
// in a RendezvousBatch and is answered by RendezvousDeliver.
struct Waiter {
  caf::response_promise promise;  // valid for a request
  caf::actor requester;           // valid for a batch
  uint64_t ticket = 0;            // the batch's, for its RendezvousDeliver item
};

struct Entry {
  bool sent = false;
  Tensor value;
  bool is_dead = false;
  bool waiting = false;
  Waiter waiter;
};

struct StepTable {
  Status aborted;  // OK while the step runs
  std::unordered_map<RendezvousKey, Entry, RendezvousKeyHash> entries;
};

struct RendezvousState {
  std::unordered_map<int64_t, StepTable> steps;
  // Steps declared over (StepDone), most recent last, so that a message
  // arriving late for one (from a partition its client stopped waiting for)
  // does not recreate its table, which nothing would ever drop again.
  // Bounded: the oldest are forgotten.
  std::unordered_set<int64_t> over;
  std::deque<int64_t> over_order;
  static constexpr size_t kRememberOver = 1 << 16;
  // Deliveries to batch waiters made by the current handler, sent at its end
  // (one message per device actor, however many tensors).
  std::map<caf::actor, RendezvousDeliver> outgoing;
  ComputePool* pool = nullptr;
  static const char* name;
};
const char* RendezvousState::name = "rendezvous_actor";

using RendezvousActor = caf::stateful_actor<RendezvousState>;

void Answer(RendezvousActor* self, Waiter& w, int64_t step_id, Status status, Tensor value,
            bool is_dead) {
  if (w.requester) {
    self->state.outgoing[w.requester].items.push_back({step_id, w.ticket, std::move(status), std::move(value), is_dead});
    return;
  }
  RendezvousRecvResponse r;
  r.status = std::move(status);
  r.value = std::move(value);
  r.is_dead = is_dead;
  w.promise.deliver(std::move(r));
}

// A delivery wakes a device actor that may have work to do in parallel with
// whoever runs here: it goes to a free worker (ComputePool::ScheduleActivation),
// not onto this worker's own queue, where a sleeping worker would not see it.
void Flush(RendezvousActor* self) {
  caf::execution_unit* unit = self->state.pool ? self->state.pool->activation_unit() : self->context();
  for (auto& [dest, deliver] : self->state.outgoing) {
    auto* receiver = caf::actor_cast<caf::abstract_actor*>(dest);
    receiver->enqueue(caf::make_mailbox_element(self->ctrl(), caf::make_message_id(), {},
                                                caf::make_message(std::move(deliver))),
                      dest->node() == self->node() ? unit : self->context());
  }
  self->state.outgoing.clear();
}

// The table of `step_id`, created on first use; null for a step that is over.
StepTable* Table(RendezvousActor* self, int64_t step_id) {
  auto& st = self->state;
  auto it = st.steps.find(step_id);
  if (it != st.steps.end()) return &it->second;
  if (st.over.count(step_id)) return nullptr;
  return &st.steps[step_id];
}

Status StepOver(int64_t step_id) { return errors::Cancelled("step ", step_id, " is over"); }

// Fails every waiter of `table` with `s` (deliveries are flushed by the caller).
void FailWaiters(RendezvousActor* self, int64_t step_id, StepTable& table, const Status& s) {
  for (auto& [key, e] : table.entries)
    if (e.waiting) Answer(self, e.waiter, step_id, s, Tensor(), false);
}

// Fails the step: its waiting Recvs are answered with `s`, its entries
// dropped, and later Recvs get `s` too (a first abort is never replaced).
void Abort(RendezvousActor* self, int64_t step_id, StepTable& table, Status s) {
  if (!table.aborted.ok()) return;
  table.aborted = std::move(s);
  FailWaiters(self, step_id, table, table.aborted);
  table.entries.clear();
}

void Offer(RendezvousActor* self, int64_t step_id, const RendezvousKey& key, const Tensor& value, bool is_dead) {
  StepTable* found = Table(self, step_id);
  if (!found) return;  // the step is over: nobody will take it
  StepTable& table = *found;
  if (!table.aborted.ok()) return;  // the step is failing: nobody will take it
  auto it = table.entries.find(key);
  if (it != table.entries.end() && it->second.waiting) {
    Answer(self, it->second.waiter, step_id, Status::OK(), value, is_dead);
    table.entries.erase(it);
    return;
  }
  Entry& e = table.entries[key];
  if (e.sent) {
    // A second Send under one key is a bug in the partitioning: the step
    // fails, and every Recv of it (now or later) learns why.
    Abort(self, step_id, table, errors::Internal("rendezvous key ", key.str(), " was sent twice in step ", step_id));
    return;
  }
  e.sent = true;
  e.value = value;
  e.is_dead = is_dead;
}

// Answers at once when the tensor (or the step's error) is there, else waits.
void Want(RendezvousActor* self, int64_t step_id, const RendezvousKey& key, Waiter w) {
  StepTable* found = Table(self, step_id);
  if (!found) {
    Answer(self, w, step_id, StepOver(step_id), Tensor(), false);
    return;
  }
  StepTable& table = *found;
  if (!table.aborted.ok()) {
    Answer(self, w, step_id, table.aborted, Tensor(), false);
    return;
  }
  auto it = table.entries.find(key);
  if (it != table.entries.end() && it->second.sent) {
    Answer(self, w, step_id, Status::OK(), std::move(it->second.value), it->second.is_dead);
    table.entries.erase(it);
    return;
  }
  Entry& e = table.entries[key];
  if (e.waiting) {
    Answer(self, w, step_id, errors::Internal("rendezvous key ", key.str(), " was received twice in step ", step_id),
           Tensor(), false);
    return;
  }
  e.waiting = true;
  e.waiter = std::move(w);
}


}  // namespace

caf::actor SpawnRendezvousActor(caf::actor_system& sys, ComputePool* pool) {
  return sys.spawn([pool](RendezvousActor* self) -> caf::behavior {
    self->state.pool = pool;
    // On exit, answer every waiting Recv: its step could never end otherwise.
    self->set_exit_handler([self](const caf::exit_msg& msg) {
      for (auto& [id, table] : self->state.steps)
        FailWaiters(self, id, table, errors::Cancelled("the rendezvous actor is shutting down"));
      Flush(self);
      self->state.steps.clear();
      self->quit(msg.reason);
    });
    return {
        [self](const RendezvousSend& s) { Offer(self, s.step_id, s.key, s.value, s.is_dead); Flush(self); },
        [self](const RendezvousRecv& r) -> caf::result<RendezvousRecvResponse> {
          Waiter w;
          w.promise = self->make_response_promise();
          auto promise = w.promise;
          Want(self, r.step_id, r.key, std::move(w));
          return promise;
        },
        [self](const RendezvousBatch& b) {
          caf::actor requester = caf::actor_cast<caf::actor>(self->current_sender());
          for (const auto& s : b.sends) Offer(self, s.step_id, s.key, s.value, s.is_dead);
          for (const auto& r : b.recvs) {
            Waiter w;
            w.requester = requester;
            w.ticket = r.ticket;
            Want(self, r.step_id, r.key, std::move(w));
          }
          Flush(self);
        },
        [self](const RendezvousAbort& a) {
          if (StepTable* table = Table(self, a.step_id))
            Abort(self, a.step_id, *table,
                  a.status.ok() ? errors::Cancelled("step ", a.step_id, " was aborted") : a.status);
          Flush(self);
        },
        [self](const RendezvousStepDone& d) {
          auto& st = self->state;
          if (!st.over.insert(d.step_id).second) return;
          st.over_order.push_back(d.step_id);
          if (st.over_order.size() > RendezvousState::kRememberOver) {
            st.over.erase(st.over_order.front());
            st.over_order.pop_front();
          }
          auto it = st.steps.find(d.step_id);
          if (it == st.steps.end()) return;
          // Nothing should wait now; if something does, it must not hang.
          FailWaiters(self, d.step_id, it->second, StepOver(d.step_id));
          st.steps.erase(it);
          Flush(self);
        },
    };
  });
}

}  // namespace actorflow
