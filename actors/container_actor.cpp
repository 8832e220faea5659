#include "actorflow/actors/container_actor.hpp"

#include <caf/all.hpp>

#include <deque>
#include <map>
#include <memory>
#include <unordered_map>
#include <variant>

#include "actorflow/actors/accumulator_actor.hpp"
#include "actorflow/actors/queue_actor.hpp"
#include "actorflow/core/exception_status.hpp"
#include "actorflow/core/resource_handle.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/net/protocol.hpp"
#include "actorflow/ops/state/local_variable.hpp"

// A read or update the container actor ran on the pool has finished: to
// itself only, so not a wire type (net/protocol.hpp).
namespace actorflow {
struct VarUpdateDone {
  uint64_t id = 0;
};
}  // namespace actorflow
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorflow::VarUpdateDone)

namespace actorflow {

namespace {

struct Var {
  std::shared_ptr<LocalVar> local;  // shared with the kernels of this process
  bool busy = false;  // a request of ours runs on the pool: later ones wait (arrival order)
};

// A request that found one of its variables busy, kept until they are free.
struct Waiting {
  std::variant<VarReadRequest, VarUpdateRequest> request;
  std::vector<std::shared_ptr<Var>> vars;
  caf::response_promise promise;
};

struct ContainerState {
  ComputePool* pool = nullptr;
  // (container, shared name) -> variable. shared_ptr: a pool job keeps the
  // variable it updates alive across a ResetContainers.
  std::map<std::pair<std::string, std::string>, std::shared_ptr<Var>> vars;
  std::unordered_map<std::string, std::shared_ptr<Var>> by_handle;  // decoded handles, a cache
  std::deque<Waiting> waiting;  // in arrival order
  struct Running {
    std::vector<std::shared_ptr<Var>> vars;
    std::shared_ptr<VarUpdateResponse> response;  // filled by the pool job (an update)
    std::shared_ptr<VarReadResponse> read;        // filled by the pool job (a read)
    caf::response_promise promise;
  };
  std::unordered_map<uint64_t, Running> running;
  uint64_t next_job = 1;
  // (container, shared name) -> queue actor and how it was declared.
  struct Queue {
    caf::actor actor;
    QueueSpec spec;
  };
  std::map<std::pair<std::string, std::string>, Queue> queues;
  static const char* name;
};
const char* ContainerState::name = "container_actor";

using ContainerActor = caf::stateful_actor<ContainerState>;

// Memory. No handler and no pool job lets an exception escape (in CAF 0.17
// one kills the actor for good, and with it every variable of the process).
// A request whose memory is refused (an update's copy-on-write buffer or
// Assign's copy over the budget, a read's list of values) is answered
// ResourceExhausted naming the op, the variables and the bytes asked; the
// variables keep their values (ApplyVarUpdate changes nothing on error) and
// every other request goes on. An answer there is no memory to build goes
// out as OutOfMemoryStatus().


// Answers `rp` with `r`, or with `failed` (a response carrying
// OutOfMemoryStatus()) when there is no memory for `r`; never throws.
template <class Response>
void Reply(caf::response_promise& rp, Response r) noexcept {
  try {
    rp.deliver(std::move(r));
    return;
  } catch (...) {
  }
  try {
    Response failed{};
    failed.status = OutOfMemoryStatus();
    rp.deliver(std::move(failed));
  } catch (...) {  // nothing left to answer with
  }
}

// Answers a waiting request (a read or an update) with `s`; never throws.
template <class Request>
void Fail(Request& w, const Status& s) noexcept {
  if (std::holds_alternative<VarReadRequest>(w.request)) Reply(w.promise, VarReadResponse{s, {}});
  else Reply(w.promise, VarUpdateResponse{s, Tensor(), {}, {}});
}

// "Assign of variable v", "ApplyAdam of variables var, m, v": what an update's errors name.
std::string UpdateContext(const VarUpdateRequest& req, const std::vector<std::shared_ptr<Var>>& vars) {
  std::string out = strings::StrCat(VarUpdateName(static_cast<VarUpdateKind>(req.kind)), " of variable",
                                    vars.size() == 1 ? " " : "s ");
  for (size_t i = 0; i < vars.size(); ++i) out += (i ? ", " : "") + vars[i]->local->slot.name;
  return out;
}

LocalVars Locals(const std::vector<std::shared_ptr<Var>>& vars) {
  LocalVars out;
  out.reserve(vars.size());
  for (const auto& v : vars) out.push_back(v->local.get());
  return out;
}

std::string DisplayName(const ResourceHandle& h) {
  return h.container == kDefaultContainer ? h.name : h.DebugName();
}

bool SameDeclaration(const VarSlot& v, const ResourceHandle& h) {
  if (v.dtype != h.dtype) return false;
  if (v.shape.unknown_rank() != h.shape.unknown_rank()) return false;
  return v.shape.dim_sizes() == h.shape.dim_sizes();
}

// The variable a handle names, created (uninitialized) on first use.
Status Resolve(ContainerActor* self, const std::string& encoded, std::shared_ptr<Var>* out) {
  auto& st = self->state;
  auto hit = st.by_handle.find(encoded);
  if (hit != st.by_handle.end()) {
    *out = hit->second;
    return Status::OK();
  }
  ResourceHandle h;
  AF_RETURN_IF_ERROR(ResourceHandle::Decode(encoded, &h));
  if (!DataTypeIsSupported(h.dtype)) return errors::InvalidArgument("variable ", h.DebugName(), " has dtype ", h.dtype);
  auto& var = st.vars[{h.container, h.name}];
  if (!var) {
    var = std::make_shared<Var>();
    var->local = std::make_shared<LocalVar>();
    var->local->slot.name = DisplayName(h);
    var->local->slot.dtype = h.dtype;
    var->local->slot.shape = h.shape;
  } else if (!SameDeclaration(var->local->slot, h)) {
    return errors::InvalidArgument("Trying to share variable ", DisplayName(h), ", but specified dtype ",
                                   DataTypeString(h.dtype), " and shape ", h.shape.DebugString(), " and found dtype ",
                                   DataTypeString(var->local->slot.dtype), " and shape ",
                                   var->local->slot.shape.DebugString());
  }
  st.by_handle.emplace(encoded, var);
  *out = var;
  return Status::OK();
}

Status ResolveAll(ContainerActor* self, const std::vector<std::string>& handles,
                  std::vector<std::shared_ptr<Var>>* out) {
  out->clear();
  for (const auto& h : handles) {
    std::shared_ptr<Var> v;
    AF_RETURN_IF_ERROR(Resolve(self, h, &v));
    out->push_back(std::move(v));
  }
  return Status::OK();
}

// Reads `vars`, whose locks the caller holds.
VarReadResponse ReadLocked(const VarReadRequest& req, const std::vector<std::shared_ptr<Var>>& vars) {
  VarReadResponse resp;
  resp.status = ReadLockedVars(Locals(vars), req.check_only, &resp.values);
  return resp;
}

bool AnyBusy(const std::vector<std::shared_ptr<Var>>& vars) {
  for (const auto& v : vars)
    if (v->busy) return true;
  return false;
}

// An earlier waiting request touches one of `vars`: this one must queue too,
// or it would overtake it.
bool QueuedBefore(ContainerActor* self, const std::vector<std::shared_ptr<Var>>& vars, size_t limit) {
  auto& waiting = self->state.waiting;
  for (size_t i = 0; i < limit && i < waiting.size(); ++i)
    for (const auto& w : waiting[i].vars)
      for (const auto& v : vars)
        if (w == v) return true;
  return false;
}

// Runs `work` (a read or an update of `vars`, under their locks) on the pool
// with the variables marked busy until VarUpdateDone; then `promise` is
// answered with what it filled in.
void RunOnPool(ContainerActor* self, std::vector<std::shared_ptr<Var>> vars, caf::response_promise promise,
               std::shared_ptr<VarUpdateResponse> update, std::shared_ptr<VarReadResponse> read,
               std::function<void()> work) {
  auto& st = self->state;
  const uint64_t id = st.next_job++;
  caf::actor me = caf::actor_cast<caf::actor>(self);
  ComputePool* pool = st.pool;
  // The job always reports back, whatever happens in it. If it cannot be
  // queued (out of memory), nothing is marked busy and the caller fails it.
  auto locks = std::make_shared<VarLocks>(Locals(vars));  // made here: locking allocates nothing
  st.running.emplace(id, ContainerState::Running{vars, update, read, promise});
  try {
    // `vars` keeps the variables alive across a ResetContainers.
    pool->Schedule([me, id, pool, vars, locks, work = std::move(work)]() noexcept {
      locks->Lock();  // a kernel of this process may hold one while it computes: bounded
      work();         // answers its own errors
      locks->Unlock();
      try {
        pool->Deliver(me, me, caf::make_message(VarUpdateDone{id}));
      } catch (...) {
        try {
          caf::send_as(me, me, VarUpdateDone{id});
        } catch (...) {  // no memory for a message at all: the request's step ends by its deadline
        }
      }
    });
  } catch (...) {
    st.running.erase(id);
    throw;
  }
  for (const auto& v : vars) v->busy = true;
}

// A read by message: in the handler when the variables' locks are free,
// else on the pool.
void StartRead(ContainerActor* self, VarReadRequest req, std::vector<std::shared_ptr<Var>> vars,
               caf::response_promise promise) {
  {
    VarLocks locks(Locals(vars));
    if (locks.TryLock()) {
      VarReadResponse r = ReadLocked(req, vars);
      locks.Unlock();  // before answering: never a message sent under a variable's lock
      Reply(promise, std::move(r));
      return;
    }
  }
  auto read = std::make_shared<VarReadResponse>();
  RunOnPool(self, vars, promise, nullptr, read, [req = std::move(req), vars, read]() noexcept {
    try {
      *read = ReadLocked(req, vars);
    } catch (...) {
      read->values.clear();
      read->status = CurrentExceptionStatusWith([&] { return strings::StrCat("reading ", vars.size(), " variables"); });
    }
  });
}

// An update by message: in the handler when small (or checked only, for a
// device's kernel) and the variables' locks are free, else on the pool.
void StartUpdate(ContainerActor* self, VarUpdateRequest req, std::vector<std::shared_ptr<Var>> vars,
                 caf::response_promise promise) {
  const LocalVars locals = Locals(vars);
  {
    VarLocks locks(locals);
    if ((req.on_device || VarUpdateElements(req) < kInlineUpdateElements) && locks.TryLock()) {
      VarUpdateResponse response;
      ApplyLockedAnswer(req, locals, &response, nullptr);
      locks.Unlock();  // before answering: never a message sent under a variable's lock
      Reply(promise, std::move(response));
      return;
    }
  }
  auto response = std::make_shared<VarUpdateResponse>();
  ComputePool* pool = self->state.pool;
  try {
    RunOnPool(self, vars, promise, response, nullptr, [req, locals, response, pool]() noexcept {
      ApplyLockedAnswer(req, locals, response.get(), pool);
    });
  } catch (...) {
    Reply(promise, VarUpdateResponse{CurrentExceptionStatusWith([&] {
                                       return strings::StrCat("cannot start ", UpdateContext(req, vars));
                                     }),
                                     Tensor(), {}, {}});
  }
}

// Runs waiting requests whose variables are free, in order.
void Drain(ContainerActor* self) noexcept {
  auto& waiting = self->state.waiting;
  for (size_t i = 0; i < waiting.size();) {
    Waiting& w = waiting[i];
    if (AnyBusy(w.vars) || QueuedBefore(self, w.vars, i)) {
      ++i;
      continue;
    }
    Waiting mine = std::move(w);
    waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
    try {
      if (auto* read = std::get_if<VarReadRequest>(&mine.request)) {
        StartRead(self, std::move(*read), std::move(mine.vars), mine.promise);
      } else {
        StartUpdate(self, std::move(std::get<VarUpdateRequest>(mine.request)), std::move(mine.vars), mine.promise);
      }
    } catch (...) {  // out of memory: this request fails, the others go on
      Fail(mine, CurrentExceptionStatus("container actor"));
    }
    // An update may have made variables busy: rescan from the start.
    i = 0;
  }
}

// "queue" or "accumulator", for messages.
const char* WhatIs(const QueueSpec& spec) {
  return spec.kind == static_cast<int32_t>(QueueKind::kAccumulator) ? "accumulator" : "queue";
}

// The QueueOpenRequest handler's work: the queue (or accumulator) of `req.handle`, created if asked.
QueueOpenResponse OpenQueue(ContainerActor* self, const QueueOpenRequest& req) {
  ResourceHandle h;
  Status s = ResourceHandle::Decode(req.handle, &h);
  if (!s.ok()) return QueueOpenResponse{s, caf::actor()};
  auto& queues = self->state.queues;
  const auto key = std::make_pair(h.container, h.name);
  auto it = queues.find(key);
  if (it != queues.end()) {
    if (!req.create) return QueueOpenResponse{Status::OK(), it->second.actor};
    const std::string why = QueueSpecMismatch(it->second.spec, req.spec);
    if (!why.empty())
      return QueueOpenResponse{errors::InvalidArgument("shared ", WhatIs(it->second.spec), " '", DisplayName(h),
                                                       "' was opened with another declaration: ", why),
                               caf::actor()};
    return QueueOpenResponse{Status::OK(), it->second.actor};
  }
  if (!req.create) return QueueOpenResponse{errors::NotFound("no queue or accumulator '", DisplayName(h), "'"), caf::actor()};
  const bool accumulator = req.spec.kind == static_cast<int32_t>(QueueKind::kAccumulator);
  s = accumulator ? CheckAccumulatorSpec(req.spec, DisplayName(h)) : CheckQueueSpec(req.spec, DisplayName(h));
  if (!s.ok()) return QueueOpenResponse{s, caf::actor()};
  caf::actor q = accumulator ? SpawnAccumulatorActor(self->system(), req.spec, DisplayName(h))
                             : SpawnQueueActor(self->system(), req.spec, DisplayName(h));
  try {
    queues.emplace(key, ContainerState::Queue{q, req.spec});
  } catch (...) {  // not in the directory: nobody else would ever reach it
    self->send_exit(q, caf::exit_reason::user_shutdown);
    throw;
  }
  return QueueOpenResponse{Status::OK(), q};
}

// The ResetContainersRequest handler's work; erasing takes no memory.
int64_t ResetContainers(ContainerActor* self, const ResetContainersRequest& req) {
  // Containers named "" mean the default one, as in VariableV2.
  auto& st = self->state;
  auto named = [&](const std::string& c) {
    return std::find(req.containers.begin(), req.containers.end(), c) != req.containers.end();
  };
  auto matches = [&](const std::string& container) {
    return req.containers.empty() || named(container) || (container == kDefaultContainer && named(""));
  };
  int64_t dropped = 0;
  for (auto it = st.vars.begin(); it != st.vars.end();) {
    const bool match = matches(it->first.first);
    if (match) {
      it->second->local->dropped.store(true);  // kernels holding it resolve the name again
      it = st.vars.erase(it);
      ++dropped;
    } else {
      ++it;
    }
  }
  for (auto it = st.queues.begin(); it != st.queues.end();) {
    const bool match = matches(it->first.first);
    if (match) {
      caf::actor q = it->second.actor;
      it = st.queues.erase(it);  // first: dropped from the directory even when the exit cannot be sent
      ++dropped;
      try {
        self->send_exit(q, caf::exit_reason::user_shutdown);
      } catch (...) {  // its last handle gone, it ends anyway
      }
    } else {
      ++it;
    }
  }
  // Cached handles may name dropped variables; waiting and running
  // requests keep theirs alive and finish on them.
  st.by_handle.clear();
  return dropped;
}

}  // namespace

caf::actor SpawnContainerActor(caf::actor_system& sys, ComputePool* pool) {
  return sys.spawn([pool](ContainerActor* self) -> caf::behavior {
    self->state.pool = pool;
    // On exit, answer every request still waiting or running: a device actor
    // waiting for one would otherwise never finish its step (nor quit).
    self->set_exit_handler([self](const caf::exit_msg& msg) {
      auto& st = self->state;
      for (auto& [key, q] : st.queues) {
        try {
          self->send_exit(q.actor, msg.reason);  // they answer what waits on them
        } catch (...) {  // its last handle goes below: it ends anyway
        }
      }
      st.queues.clear();
      const Status gone = Safely([] { return errors::Cancelled("the container actor is shutting down"); });
      for (auto& w : st.waiting) Fail(w, gone);
      st.waiting.clear();
      for (auto& [id, r] : st.running) {
        if (r.read) Reply(r.promise, VarReadResponse{gone, {}});
        else Reply(r.promise, VarUpdateResponse{gone, Tensor(), {}, {}});
      }
      st.running.clear();
      self->quit(msg.reason);
    });
    // Every handler answers its request on every path and lets nothing
    // escape (see "Memory" above).
    return {
        [self](const VarReadRequest& req) {
          caf::response_promise rp;
          try {
            rp = self->make_response_promise();
            std::vector<std::shared_ptr<Var>> vars;
            Status s = ResolveAll(self, req.handles, &vars);
            if (!s.ok()) {
              Reply(rp, VarReadResponse{s, {}});
            } else if (AnyBusy(vars) || QueuedBefore(self, vars, self->state.waiting.size())) {
              self->state.waiting.push_back(Waiting{req, std::move(vars), rp});
            } else {
              StartRead(self, req, std::move(vars), rp);
            }
          } catch (...) {  // out of memory: fail the request, keep the actor
            Reply(rp, VarReadResponse{CurrentExceptionStatusWith([&] {
                                        return strings::StrCat("reading ", req.handles.size(), " variables");
                                      }),
                                      {}});
          }
        },
        [self](const VarUpdateRequest& req) {
          caf::response_promise rp;
          try {
            rp = self->make_response_promise();
            std::vector<std::shared_ptr<Var>> vars;
            Status s = ResolveAll(self, req.handles, &vars);
            for (size_t i = 0; s.ok() && i < vars.size(); ++i)
              for (size_t j = i + 1; s.ok() && j < vars.size(); ++j)
                if (vars[i] == vars[j])
                  s = errors::InvalidArgument(VarUpdateName(static_cast<VarUpdateKind>(req.kind)), " names variable ",
                                              vars[i]->local->slot.name, " twice");
            if (!s.ok()) {
              Reply(rp, VarUpdateResponse{s, Tensor(), {}, {}});
            } else if (AnyBusy(vars) || QueuedBefore(self, vars, self->state.waiting.size())) {
              self->state.waiting.push_back(Waiting{req, std::move(vars), rp});
            } else {
              StartUpdate(self, req, std::move(vars), rp);
            }
          } catch (...) {  // out of memory before the update started: fail the request, keep the actor
            Reply(rp, VarUpdateResponse{CurrentExceptionStatusWith([&] {
                                          return VarUpdateName(static_cast<VarUpdateKind>(req.kind));
                                        }),
                                        Tensor(), {}, {}});
          }
        },
        [self](const VarResolveRequest& req) {
          caf::response_promise rp;
          try {
            rp = self->make_response_promise();
            std::vector<std::shared_ptr<Var>> vars;
            VarResolveResponse r;
            r.status = ResolveAll(self, req.handles, &vars);
            if (r.status.ok())
              for (const auto& v : vars) r.vars.push_back(v->local);
            Reply(rp, std::move(r));
          } catch (...) {
            Reply(rp, VarResolveResponse{CurrentExceptionStatus("resolving variables"), {}});
          }
        },
        [self](const VarUpdateDone& done) {
          if (self->current_sender() != self->ctrl()) return;  // only our own pool jobs
          auto& st = self->state;
          auto it = st.running.find(done.id);
          if (it == st.running.end()) return;
          for (const auto& v : it->second.vars) v->busy = false;
          if (it->second.read) Reply(it->second.promise, std::move(*it->second.read));
          else Reply(it->second.promise, std::move(*it->second.response));
          st.running.erase(it);
          Drain(self);  // never throws: a waiting request that runs out of memory fails alone
        },
        [self](const QueueOpenRequest& req) {
          caf::response_promise rp;
          try {
            rp = self->make_response_promise();
            Reply(rp, OpenQueue(self, req));
          } catch (...) {
            Reply(rp, QueueOpenResponse{CurrentExceptionStatus("opening a queue"), caf::actor()});
          }
        },
        [self](const ResetContainersRequest& req) {
          caf::response_promise rp;
          try {
            rp = self->make_response_promise();
            Reply(rp, ResetContainersResponse{Status::OK(), ResetContainers(self, req)});
          } catch (...) {
            Reply(rp, ResetContainersResponse{CurrentExceptionStatus("resetting containers"), 0});
          }
        },
    };
  });
}

}  // namespace actorflow
