#include "actors/rendezvous_actor.hpp"

#include <caf/all.hpp>

#include <string>
#include <unordered_map>

#include "actors/messages.hpp"

namespace actorflow {

namespace {

struct Entry {
  bool sent = false;
  Tensor value;
  bool is_dead = false;
  bool waiting = false;
  caf::response_promise waiter;
};

struct StepTable {
  Status aborted;  // OK while the step runs
  std::unordered_map<std::string, Entry> entries;
};

struct RendezvousState {
  std::unordered_map<int64_t, StepTable> steps;
  static const char* name;
};
const char* RendezvousState::name = "rendezvous_actor";

using RendezvousActor = caf::stateful_actor<RendezvousState>;

RendezvousRecvResponse Failed(Status s) {
  RendezvousRecvResponse r;
  r.status = std::move(s);
  return r;
}

// Fails the step: its waiting Recvs are answered with `s`, its entries
// dropped, and later Recvs get `s` too (a first abort is never replaced).
void Abort(StepTable* table, Status s) {
  if (!table->aborted.ok()) return;
  table->aborted = std::move(s);
  for (auto& [key, e] : table->entries)
    if (e.waiting) e.waiter.deliver(Failed(table->aborted));
  table->entries.clear();
}

}  // namespace

caf::actor SpawnRendezvousActor(caf::actor_system& sys) {
  return sys.spawn([](RendezvousActor* self) -> caf::behavior {
    // On exit, answer every waiting Recv: its step could never end otherwise.
    self->set_exit_handler([self](const caf::exit_msg& msg) {
      for (auto& [id, table] : self->state.steps)
        for (auto& [key, e] : table.entries)
          if (e.waiting) e.waiter.deliver(Failed(errors::Cancelled("the rendezvous actor is shutting down")));
      self->state.steps.clear();
      self->quit(msg.reason);
    });
    return {
        [self](const RendezvousSend& s) {
          StepTable& table = self->state.steps[s.step_id];
          if (!table.aborted.ok()) return;  // the step is failing: nobody will take it
          Entry& e = table.entries[s.key];
          if (e.sent) {
            // A second Send under one key is a bug in the partitioning: the
            // step fails, and every Recv of it (now or later) learns why.
            Abort(&table, errors::Internal("rendezvous key ", s.key, " was sent twice in step ", s.step_id));
            return;
          }
          if (e.waiting) {
            RendezvousRecvResponse r;
            r.value = s.value;
            r.is_dead = s.is_dead;
            e.waiter.deliver(std::move(r));
            table.entries.erase(s.key);
            return;
          }
          e.sent = true;
          e.value = s.value;
          e.is_dead = s.is_dead;
        },
        [self](const RendezvousRecv& r) -> caf::result<RendezvousRecvResponse> {
          StepTable& table = self->state.steps[r.step_id];
          if (!table.aborted.ok()) return Failed(table.aborted);
          auto it = table.entries.find(r.key);
          if (it != table.entries.end() && it->second.sent) {
            RendezvousRecvResponse resp;
            resp.value = std::move(it->second.value);
            resp.is_dead = it->second.is_dead;
            table.entries.erase(it);
            return resp;
          }
          Entry& e = table.entries[r.key];
          if (e.waiting) return Failed(errors::Internal("rendezvous key ", r.key, " was received twice in step ",
                                                       r.step_id));
          e.waiting = true;
          e.waiter = self->make_response_promise();
          return e.waiter;
        },
        [self](const RendezvousAbort& a) {
          Abort(&self->state.steps[a.step_id],
                a.status.ok() ? errors::Cancelled("step ", a.step_id, " was aborted") : a.status);
        },
        [self](const RendezvousStepDone& d) {
          auto it = self->state.steps.find(d.step_id);
          if (it == self->state.steps.end()) return;
          // Nothing should wait now; if something does, it must not hang.
          for (auto& [key, e] : it->second.entries)
            if (e.waiting) e.waiter.deliver(Failed(errors::Cancelled("step ", d.step_id, " is over")));
          self->state.steps.erase(it);
        },
    };
  });
}

}  // namespace actorflow
