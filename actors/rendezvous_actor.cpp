#include "actorflow/actors/rendezvous_actor.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "actorflow/core/exception_status.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/inline_delivery.hpp"
#include "actorflow/net/protocol.hpp"
#include "actorflow/comm/tensor_transport.hpp"
#include "actorflow/net/rendezvous_key.hpp"

namespace actorflow {

namespace {

// Memory. No handler lets an exception escape (in CAF 0.17 one kills the
// actor for good, and with it every step of the process). Tensors travel by
// reference, so what can run out is the actor's own bookkeeping: a Send or
// Recv it has no memory to record aborts its step with ResourceExhausted
// naming the key, so that nothing waits for it; an answer it has no memory
// to build goes out as OutOfMemoryStatus(); deliveries it could not send are
// kept and tried again shortly (kRetryFlush).

using retry_flush_atom = caf::atom_constant<caf::atom("rv_retry")>;
constexpr auto kRetryFlush = std::chrono::milliseconds(10);

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
  // Tasks lost while this step ran (RendezvousPeerFailed): a later Recv of a
  // tensor from one of them fails at once instead of waiting for ever.
  std::vector<std::pair<std::string, Status>> lost_peers;
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
  bool retry_scheduled = false;  // a retry_flush_atom is on its way
  ComputePool* pool = nullptr;
  TensorTransport* transport = nullptr;  // null in a process that is not a cluster task
  std::string task;                      // this process's, when transport is set
  static const char* name;
};
const char* RendezvousState::name = "rendezvous_actor";

using RendezvousActor = caf::stateful_actor<RendezvousState>;


// Answers a waiter; never throws (without memory for the answer it carries
// OutOfMemoryStatus() instead, which needs none to copy).
void Answer(RendezvousActor* self, Waiter& w, int64_t step_id, Status status, Tensor value,
            bool is_dead) noexcept {
  if (w.requester) {
    try {
      self->state.outgoing[w.requester].items.push_back({step_id, w.ticket, std::move(status), std::move(value), is_dead});
      return;
    } catch (...) {
    }
    try {
      self->state.outgoing[w.requester].items.push_back({step_id, w.ticket, OutOfMemoryStatus(), Tensor(), false});
    } catch (...) {  // no memory at all: its step ends by its deadline or cancellation
    }
    return;
  }
  try {
    RendezvousRecvResponse r;
    r.status = std::move(status);
    r.value = std::move(value);
    r.is_dead = is_dead;
    w.promise.deliver(std::move(r));
    return;
  } catch (...) {
  }
  try {
    w.promise.deliver(RendezvousRecvResponse{OutOfMemoryStatus(), Tensor(), false});
  } catch (...) {
  }
}

// A delivery wakes a device actor that may have work to do in parallel with
// whoever runs here: it goes to a free worker (ComputePool::ScheduleActivation),
// not onto this worker's own queue, where a sleeping worker would not see it
// (except inline on a transport's thread: devices/inline_delivery.hpp).
// A delivery that cannot be sent (no memory for the message) stays in
// `outgoing` and is tried again after kRetryFlush. Never throws.
void Flush(RendezvousActor* self) noexcept {
  auto& st = self->state;
  if (st.outgoing.empty()) return;
  // Running on a transport's thread (a tensor from another process), the
  // device actor runs next on it too: a worker's wake-up costs more.
  caf::execution_unit* unit = st.pool && !InInlineDelivery() ? st.pool->activation_unit() : self->context();
  for (auto it = st.outgoing.begin(); it != st.outgoing.end();) {
    caf::mailbox_element_ptr element;
    try {
      // From a copy: when building the message fails, the delivery is still here to retry.
      element = caf::make_mailbox_element(self->ctrl(), caf::make_message_id(), {}, caf::make_message(it->second));
    } catch (...) {
      ++it;
      continue;
    }
    const caf::actor dest = it->first;
    it = st.outgoing.erase(it);  // first: the receiver holds the only references to the tensors
    try {
      caf::actor_cast<caf::abstract_actor*>(dest)->enqueue(std::move(element),
                                                           dest->node() == self->node() ? unit : self->context());
    } catch (...) {  // in the receiver's mailbox already, or lost with no memory to schedule it
    }
  }
  if (!st.outgoing.empty() && !st.retry_scheduled) {
    try {
      self->delayed_send(self, kRetryFlush, retry_flush_atom::value);
      st.retry_scheduled = true;
    } catch (...) {  // the next message to this actor flushes again
    }
  }
}

// The table of `step_id`, created on first use; null for a step that is over.
// Throws std::bad_alloc when a new table does not fit.
StepTable* Table(RendezvousActor* self, int64_t step_id) {
  auto& st = self->state;
  auto it = st.steps.find(step_id);
  if (it != st.steps.end()) return &it->second;
  if (st.over.count(step_id)) return nullptr;
  return &st.steps[step_id];
}

Status StepOver(int64_t step_id) noexcept {
  return Safely([&] { return errors::Cancelled("step ", step_id, " is over"); });
}

// Fails every waiter of `table` with `s` (deliveries are flushed by the caller).
void FailWaiters(RendezvousActor* self, int64_t step_id, StepTable& table, const Status& s) noexcept {
  for (auto& [key, e] : table.entries)
    if (e.waiting) Answer(self, e.waiter, step_id, s, Tensor(), false);
}

// Fails the step: its waiting Recvs are answered with `s`, its entries
// dropped, and later Recvs get `s` too (a first abort is never replaced).
void Abort(RendezvousActor* self, int64_t step_id, StepTable& table, Status s) noexcept {
  if (!table.aborted.ok()) return;
  table.aborted = std::move(s);
  FailWaiters(self, step_id, table, table.aborted);
  table.entries.clear();
}

// Throws std::bad_alloc when there is no memory for the entry (OfferSafely).
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
    Abort(self, step_id, table, Safely([&] {
            return errors::Internal("rendezvous key ", key.str(), " was sent twice in step ", step_id);
          }));
    return;
  }
  e.sent = true;
  e.value = value;
  e.is_dead = is_dead;
}

// Answers at once when the tensor (or the step's error) is there, else waits.
// Throws std::bad_alloc when there is no memory for the entry, `w` then
// unanswered and intact (WantSafely).
void Want(RendezvousActor* self, int64_t step_id, const RendezvousKey& key, Waiter& w) {
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
  if (!table.lost_peers.empty()) {
    const std::string_view task = SendTaskOfKey(key.str());
    for (const auto& [lost, why] : table.lost_peers)
      if (lost == task) {
        Answer(self, w, step_id, why, Tensor(), false);
        return;
      }
  }
  Entry& e = table.entries[key];
  if (e.waiting) {
    Answer(self, w, step_id, Safely([&] {
             return errors::Internal("rendezvous key ", key.str(), " was received twice in step ", step_id);
           }),
           Tensor(), false);
    return;
  }
  e.waiting = true;
  e.waiter = std::move(w);
}

// The step of a Send or Recv the actor had no memory to record fails with
// ResourceExhausted naming the key, so that nothing of it waits for ever;
// `w` (a Recv's waiter, when not null) is answered with that.
void FailForMemory(RendezvousActor* self, int64_t step_id, const RendezvousKey& key, const char* what,
                   Waiter* w) noexcept {
  const Status s = CurrentExceptionStatusWith([&] {
    return strings::StrCat("rendezvous: no memory to hold the ", what, " of key ", key.str(), " in step ", step_id);
  });
  if (w) Answer(self, *w, step_id, s, Tensor(), false);
  try {
    if (StepTable* table = Table(self, step_id)) Abort(self, step_id, *table, s);
  } catch (...) {  // not even a table: its Recvs fail when they come, or by the step's deadline
  }
}

void OfferSafely(RendezvousActor* self, int64_t step_id, const RendezvousKey& key, const Tensor& value,
                 bool is_dead) noexcept {
  try {
    Offer(self, step_id, key, value, is_dead);
  } catch (...) {
    FailForMemory(self, step_id, key, "Send", nullptr);
  }
}

void WantSafely(RendezvousActor* self, int64_t step_id, const RendezvousKey& key, Waiter& w) noexcept {
  try {
    Want(self, step_id, key, w);
  } catch (...) {
    FailForMemory(self, step_id, key, "Recv", &w);
  }
}


// A Send for a device of another task goes there (false: it stays here).
bool RouteRemote(RendezvousActor* self, int64_t step_id, const RendezvousKey& key, const Tensor& value,
                 bool is_dead, bool truncate16) noexcept {
  auto& st = self->state;
  if (!st.transport) return false;
  try {
    // No allocation for a tensor that stays in this task.
    const std::string_view task = RecvTaskOfKey(key.str());
    if (task.empty() || task == st.task) return false;
    const Status s = st.transport->Send(std::string(task), Channel::kRendezvous, EncodeRendezvousMeta(step_id, key),
                                        value, SendFlags{is_dead, truncate16});
    if (!s.ok())
      if (StepTable* table = Table(self, step_id)) Abort(self, step_id, *table, s);
  } catch (...) {
    FailForMemory(self, step_id, key, "Send", nullptr);
  }
  return true;
}

// Every step waiting for a tensor from `task` fails with `s`; the other steps
// running now fail so if they later wait for one.
void PeerFailed(RendezvousActor* self, const std::string& task, const Status& s) noexcept {
  try {
    for (auto& [id, table] : self->state.steps) {
      bool waits = false;
      for (auto& [key, e] : table.entries) {
        if (e.waiting && SendTaskOfKey(key.str()) == task) {
          waits = true;
          break;
        }
      }
      if (waits) Abort(self, id, table, s);
      else table.lost_peers.emplace_back(task, s);
    }
  } catch (...) {  // no memory to parse keys: the steps end by their master's abort or deadline
  }
}

}  // namespace

caf::actor SpawnRendezvousActor(caf::actor_system& sys, ComputePool* pool, TensorTransport* transport,
                                std::string task) {
  return sys.spawn([pool, transport, task](RendezvousActor* self) -> caf::behavior {
    self->state.pool = pool;
    self->state.transport = transport;
    self->state.task = task;
    // On exit, answer every waiting Recv: its step could never end otherwise.
    self->set_exit_handler([self](const caf::exit_msg& msg) {
      const Status gone = Safely([] { return errors::Cancelled("the rendezvous actor is shutting down"); });
      for (auto& [id, table] : self->state.steps) FailWaiters(self, id, table, gone);
      Flush(self);
      self->state.steps.clear();
      self->quit(msg.reason);
    });
    return {
        [self](const RendezvousSend& s) {
          if (!RouteRemote(self, s.step_id, s.key, s.value, s.is_dead, s.truncate16))
            OfferSafely(self, s.step_id, s.key, s.value, s.is_dead);
          Flush(self);
        },
        [self](const RendezvousRecv& r) {
          Waiter w;
          try {
            w.promise = self->make_response_promise();
          } catch (...) {  // no promise to answer with
            return;
          }
          WantSafely(self, r.step_id, r.key, w);
          Flush(self);
        },
        [self](const RendezvousBatch& b) {
          caf::actor requester = caf::actor_cast<caf::actor>(self->current_sender());
          for (const auto& s : b.sends)
            if (!RouteRemote(self, s.step_id, s.key, s.value, s.is_dead, s.truncate16))
              OfferSafely(self, s.step_id, s.key, s.value, s.is_dead);
          for (const auto& r : b.recvs) {
            Waiter w;
            w.requester = requester;
            w.ticket = r.ticket;
            WantSafely(self, r.step_id, r.key, w);
          }
          Flush(self);
        },
        [self](const RendezvousAbort& a) {
          try {
            if (StepTable* table = Table(self, a.step_id))
              Abort(self, a.step_id, *table,
                    a.status.ok() ? Safely([&] { return errors::Cancelled("step ", a.step_id, " was aborted"); })
                                  : a.status);
          } catch (...) {  // no memory for the step's table: it has nothing waiting yet
          }
          Flush(self);
        },
        [self](const RendezvousStepDone& d) {
          auto& st = self->state;
          bool remembered = false;
          try {
            if (!st.over.insert(d.step_id).second) return;
            remembered = true;
          } catch (...) {  // not remembered as over: a late message may recreate its table (dropped by none)
          }
          if (remembered) {
            try {
              st.over_order.push_back(d.step_id);
            } catch (...) {
              st.over.erase(d.step_id);  // forgotten at once rather than never
            }
            if (st.over_order.size() > RendezvousState::kRememberOver) {
              st.over.erase(st.over_order.front());
              st.over_order.pop_front();
            }
          }
          auto it = st.steps.find(d.step_id);
          if (it == st.steps.end()) return;
          // Nothing should wait now; if something does, it must not hang.
          FailWaiters(self, d.step_id, it->second, StepOver(d.step_id));
          st.steps.erase(it);
          Flush(self);
        },
        [self](const RendezvousPeerFailed& f) {
          PeerFailed(self, f.task, f.status);
          Flush(self);
        },
        [self](retry_flush_atom) {
          self->state.retry_scheduled = false;
          Flush(self);
        },
    };
  });
}

}  // namespace actorflow
