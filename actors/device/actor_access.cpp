#include "actorflow/actors/device/actor_access.hpp"

#include <caf/all.hpp>

#include <algorithm>

#include <boost/container/small_vector.hpp>

#include "actorflow/actors/container_actor.hpp"
#include "actorflow/core/exception_status.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/devices/inline_delivery.hpp"
#include "actorflow/ops/state/local_variable.hpp"
#include "actorflow/net/queue_service.hpp"
#include "actorflow/net/variable_service.hpp"

namespace actorflow {

namespace {

// Runs `fn`, the handling of an answer from another actor, as part of the
// executor's loop on the device actor's thread.
template <class Fn>
void Answered(caf::event_based_actor* self, Executor* executor, Fn&& fn) {
  Executor::RunningScope running(executor, self->context());
  executor->RunCallback(std::forward<Fn>(fn));
}

// The one round trip to another actor: `done` gets the answer on the
// executor's thread, or, when none comes, a Response whose status is
// `unanswered(error)`.
template <class Response, class Request, class Done, class Unanswered>
void Ask(caf::event_based_actor* self, Executor* executor, const caf::actor& dest, Request req, Done done,
         Unanswered unanswered) {
  self->request(dest, caf::infinite, std::move(req))
      .then([self, executor, done](Response& r) mutable { Answered(self, executor, [&] { done(r); }); },
            [self, executor, done, unanswered](caf::error& e) mutable {
              Answered(self, executor, [&] {
                Response r;
                r.status = unanswered(e);
                done(r);
              });
            });
}

Status ContainerDidNotAnswer(const caf::error& e) {
  return errors::Unavailable("the container actor did not answer: ", caf::to_string(e));
}

}  // namespace

// ---- Variables ---------------------------------------------------------------

DeviceVariableAccess::DeviceVariableAccess(caf::event_based_actor* self, Executor* executor, Device* device,
                                           caf::actor container)
    : self_(self), executor_(executor), device_(device), container_(std::move(container)) {
  local_ = container_ && container_->node() == self_->node();
}

std::shared_ptr<LocalVar> DeviceVariableAccess::CachedOne(const std::string& handle) const {
  auto it = resolved_.find(handle);
  if (it == resolved_.end()) return nullptr;
  std::shared_ptr<LocalVar> v = it->second.lock();
  if (!v || v->dropped.load(std::memory_order_relaxed)) return nullptr;
  return v;
}

bool DeviceVariableAccess::Cached(const std::vector<std::string>& handles, Resolved* out) const {
  out->clear();
  out->reserve(handles.size());
  for (const std::string& h : handles) {
    std::shared_ptr<LocalVar> v = CachedOne(h);
    if (!v) return false;
    out->push_back(std::move(v));
  }
  return true;
}

void DeviceVariableAccess::Resolve(const std::vector<std::string>& handles,
                                   std::function<void(const Status&, Resolved&)> then) {
  Resolved vars;
  if (Cached(handles, &vars)) {
    then(Status::OK(), vars);
    return;
  }
  Ask<VarResolveResponse>(
      self_, executor_, container_, VarResolveRequest{handles},
      [this, handles, then](VarResolveResponse& r) {
        if (r.status.ok() && r.vars.size() != handles.size())
          r.status = errors::Internal("the container resolved ", r.vars.size(), " variables for ", handles.size());
        if (r.status.ok()) {
          for (size_t i = 0; i < handles.size(); ++i) resolved_[handles[i]] = r.vars[i];
          if (resolved_.size() >= sweep_at_) {
            for (auto it = resolved_.begin(); it != resolved_.end();) it = it->second.expired() ? resolved_.erase(it) : ++it;
            sweep_at_ = 2 * resolved_.size() + 64;
          }
        }
        then(r.status, r.vars);
      },
      ContainerDidNotAnswer);
}

namespace {

// Variables kept alive while a read or update made at once uses them.
using HeldVars = boost::container::small_vector<std::shared_ptr<LocalVar>, 4>;

LocalVars Raw(const std::vector<std::shared_ptr<LocalVar>>& vars) {
  LocalVars out;
  out.reserve(vars.size());
  for (const auto& v : vars) out.push_back(v.get());
  return out;
}

// Elements up to which an update runs on a waiting client's thread: 12 MB of
// memory touched by a float SGD update, 28 MB by Adam's (a few hundred
// microseconds, shared with the pool's workers); larger ones go to the pool,
// leaving the device actor free meanwhile.
constexpr int64_t kClientThreadUpdateElements = 1 << 20;

// Whether an update of `req` runs on this thread at once: a small one alone
// (*shard_over null), a medium one on the thread of a client waiting for its
// step (its first turn runs there) sharded over `pool` with that thread
// taking shards beside the workers, rather than waiting idle for a worker.
// False: a large one, for the pool.
bool UpdateHere(const VarUpdateRequest& req, ComputePool* pool, ComputePool** shard_over) {
  const int64_t n = VarUpdateElements(req);
  *shard_over = nullptr;
  if (n < kInlineUpdateElements || !pool) return true;
  *shard_over = pool;
  return n <= kClientThreadUpdateElements && InClientDelivery();
}

}  // namespace

void DeviceVariableAccess::Read(VarReadRequest req, std::function<void(VarReadResponse&)> done) {
  if (!container_) {
    VarReadResponse r;
    r.status = errors::Unavailable("no container actor holds variables on ", device_->name());
    done(r);
    return;
  }
  if (!local_) {
    Ask<VarReadResponse>(self_, executor_, container_, std::move(req), std::move(done), ContainerDidNotAnswer);
    return;
  }
  const bool check_only = req.check_only;
  Resolve(req.handles, [check_only, done = std::move(done)](const Status& s, Resolved& vars) {
    VarReadResponse r;
    r.status = s.ok() ? ReadLocalVars(Raw(vars), check_only, &r.values) : s;
    done(r);
  });
}

template <class Held, class Raw>
bool DeviceVariableAccess::CachedNow(const std::string* const* handles, size_t n, Held* held, Raw* vars) const {
  for (size_t i = 0; i < n; ++i) {
    std::shared_ptr<LocalVar> v = CachedOne(*handles[i]);
    if (!v) return false;
    vars->push_back(v.get());
    held->push_back(std::move(v));
  }
  return true;
}

bool DeviceVariableAccess::ReadNow(const std::string* const* handles, size_t n, Tensor* out, Status* status) {
  if (!local_) return false;
  HeldVars held;
  LocalVars vars;
  if (!CachedNow(handles, n, &held, &vars)) return false;
  VarLocks locks(vars);
  locks.Lock();
  *status = ReadLockedVars(vars, false, out);
  return true;
}

bool DeviceVariableAccess::UpdateNow(const std::string* const* handles, size_t n, const VarUpdateRequest& req,
                                     bool use_locking, Status* status) {
  ComputePool* shard_over = nullptr;
  if (!local_ || req.on_device || !UpdateHere(req, device_->compute_pool(), &shard_over)) return false;
  HeldVars held;
  LocalVars vars;
  if (!CachedNow(handles, n, &held, &vars)) return false;
  *status = UpdateLocalVars(req, vars, use_locking, nullptr, shard_over);
  return true;
}

void DeviceVariableAccess::Update(VarUpdateRequest req, bool use_locking, std::function<void(const Status&)> done) {
  if (!local_ || req.on_device) {
    UpdateAndAnswer(std::move(req), [done = std::move(done)](VarUpdateResponse& r) { done(r.status); });
    return;
  }
  std::vector<std::string> handles = req.handles;
  ComputePool* pool = device_->compute_pool();
  Resolve(handles, [req = std::move(req), use_locking, pool, done = std::move(done)](const Status& s,
                                                                                     Resolved& vars) mutable {
    if (!s.ok()) {
      done(s);
      return;
    }
    ComputePool* shard_over = nullptr;
    if (UpdateHere(req, pool, &shard_over)) {
      done(UpdateLocalVars(req, Raw(vars), use_locking, nullptr, shard_over));
      return;
    }
    // Large: on the pool, sharded there. The job keeps the variables alive.
    try {
      pool->Schedule([req = std::move(req), vars, use_locking, pool, done]() noexcept {
        Status st;
        try {
          st = UpdateLocalVars(req, Raw(vars), use_locking, nullptr, pool);
        } catch (...) {  // Raw ran out of memory
          st = CurrentExceptionStatus(VarUpdateName(static_cast<VarUpdateKind>(req.kind)));
        }
        done(st);
      });
    } catch (...) {
      done(CurrentExceptionStatus("scheduling a variable update"));
    }
  });
}

void DeviceVariableAccess::UpdateAndAnswer(VarUpdateRequest req, std::function<void(VarUpdateResponse&)> done) {
  if (!container_) {
    VarUpdateResponse r;
    r.status = errors::Unavailable("no container actor holds variables on ", device_->name());
    done(r);
    return;
  }
  if (!local_) {
    Ask<VarUpdateResponse>(self_, executor_, container_, std::move(req), std::move(done), ContainerDidNotAnswer);
    return;
  }
  std::vector<std::string> handles = req.handles;
  Resolve(handles, [req = std::move(req), done = std::move(done)](const Status& s, Resolved& vars) {
    VarUpdateResponse r;
    if (!s.ok() || !req.on_device) {
      r.status = s.ok() ? UpdateLocalVars(req, Raw(vars), true, &r.value, nullptr) : s;
      done(r);
      return;
    }
    // A device's update: checked, and its buffers chosen (copy on write),
    // under the variables' locks, which are held until `done` has enqueued
    // the kernel writing them on the device's stream. A read of the new
    // buffer (after the locks) is enqueued behind that kernel.
    const LocalVars raw = Raw(vars);
    VarLocks locks(raw);
    locks.Lock();
    ApplyLockedAnswer(req, raw, &r, nullptr);
    done(r);
  });
}

// All requests' variables resolved at once and locked at once (address
// order, each once: VarLocks), so two fused updates of one device, or a
// fused update and a reader of another, never wait for each other in a
// cycle. A container of another process holds no device memory of this
// one: such a request is refused.
void DeviceVariableAccess::UpdateManyAndAnswer(std::vector<VarUpdateRequest> reqs,
                                               std::function<void(std::vector<VarUpdateResponse>&)> done) {
  std::vector<VarUpdateResponse> answers(reqs.size());
  if (!container_ || !local_) {
    for (auto& r : answers)
      r.status = container_ ? errors::Unimplemented("a fused update of ", device_->name(),
                                                    " names variables of another process")
                            : errors::Unavailable("no container actor holds variables on ", device_->name());
    done(answers);
    return;
  }
  std::vector<std::string> handles;
  for (const VarUpdateRequest& r : reqs) handles.insert(handles.end(), r.handles.begin(), r.handles.end());
  Resolve(handles, [reqs = std::move(reqs), answers = std::move(answers), done = std::move(done)](
                       const Status& s, Resolved& vars) mutable {
    if (!s.ok()) {
      for (auto& r : answers) r.status = s;
      done(answers);
      return;
    }
    const LocalVars raw = Raw(vars);
    VarLocks locks(raw);
    locks.Lock();
    size_t at = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
      const LocalVars mine(raw.begin() + static_cast<std::ptrdiff_t>(at),
                                        raw.begin() + static_cast<std::ptrdiff_t>(at + reqs[i].handles.size()));
      at += reqs[i].handles.size();
      if (!reqs[i].on_device) answers[i].status = errors::Internal("a fused update's request is not on_device");
      else ApplyLockedAnswer(reqs[i], mine, &answers[i], nullptr);
    }
    done(answers);
  });
}

void DeviceVariableAccess::InspectBuffers(std::vector<std::string> handles, InspectFn fn) {
  if (!container_ || !local_) {
    fn(errors::Unimplemented("a captured step on ", device_->name(), " names variables of another process"), {}, {});
    return;
  }
  Resolve(handles, [fn = std::move(fn)](const Status& s, Resolved& vars) {
    if (!s.ok()) return fn(s, {}, {});
    const LocalVars raw = Raw(vars);
    VarLocks locks(raw);
    locks.Lock();
    std::vector<const void*> buffers;
    std::vector<bool> shared;
    for (LocalVar* v : raw) {
      const Tensor& t = v->slot.value;
      buffers.push_back(t.IsInitialized() ? t.raw_data() : nullptr);
      // One reference is the variable's own; a name given twice is not sharing.
      shared.push_back(t.IsInitialized() && !t.RefCountIsOne());
    }
    fn(Status::OK(), buffers, shared);
  });
}

// ---- Queues ------------------------------------------------------------------

void DeviceQueueAccess::Open(const std::string& handle, const QueueSpec& spec,
                             std::function<void(const Status&)> done) {
  if (!container_) {
    done(errors::Unavailable("no container actor holds queues on ", device_->name()));
    return;
  }
  Ask<QueueOpenResponse>(
      self_, executor_, container_, QueueOpenRequest{handle, spec, true},
      [this, handle, done](QueueOpenResponse& r) {
        if (r.status.ok()) actors_[handle] = r.queue;
        done(r.status);
      },
      ContainerDidNotAnswer);
}

void DeviceQueueAccess::Request(const std::string& handle, QueueRequest request, Done done) {
  if (!executor_->OnThisThread()) {  // from a pool thread: the actor sends it on
    bool signal = false;
    {
      std::lock_guard<std::mutex> lock(inbox_mu_);
      inbox_.push_back(Posted{handle, std::move(request), std::move(done)});
      signal = !inbox_signalled_;
      inbox_signalled_ = true;
    }
    if (signal) {
      // The actor is alive: the step of the kernel asking is still running on it.
      caf::actor me = caf::actor_cast<caf::actor>(self_);
      device_->compute_pool()->Deliver(me, me, caf::make_message(queue_inbox_atom::value));
    }
    return;
  }
  auto it = actors_.find(handle);
  if (it != actors_.end()) {
    Send(it->second, std::move(request), std::move(done));
    return;
  }
  if (!container_) {
    QueueResponse r;
    r.status = errors::Unavailable("no container actor holds queues on ", device_->name());
    done(r);
    return;
  }
  // Opened by another session or device: look it up, then send.
  Ask<QueueOpenResponse>(
      self_, executor_, container_, QueueOpenRequest{handle, QueueSpec(), false},
      [this, handle, request, done](QueueOpenResponse& r) mutable {
        if (!r.status.ok()) {
          QueueResponse failed;
          failed.status = r.status;
          done(failed);
          return;
        }
        actors_[handle] = r.queue;
        Send(r.queue, std::move(request), std::move(done));
      },
      ContainerDidNotAnswer);
}

void DeviceQueueAccess::Send(const caf::actor& queue, QueueRequest request, Done done) {
  auto cancelled = cancelled_.find(request.step_id);
  if (cancelled != cancelled_.end()) {
    QueueResponse failed;
    failed.status = cancelled->second;
    done(failed);
    return;
  }
  auto& used = step_queues_[request.step_id];
  if (std::find(used.begin(), used.end(), queue) == used.end()) used.push_back(queue);
  Ask<QueueResponse>(self_, executor_, queue, std::move(request), std::move(done),
                     [](const caf::error& e) { return errors::Cancelled("the queue is gone: ", caf::to_string(e)); });
}

void DeviceQueueAccess::DrainInbox() {
  std::vector<Posted> posted;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    posted.swap(inbox_);
    inbox_signalled_ = false;
  }
  for (Posted& p : posted) Request(p.handle, std::move(p.request), std::move(p.done));
}

void DeviceQueueAccess::CancelStep(int64_t client_step_id, const Status& s) {
  cancelled_.emplace(client_step_id, s);
  auto it = step_queues_.find(client_step_id);
  if (it == step_queues_.end()) return;
  for (const caf::actor& q : it->second) self_->send(q, QueueCancelStep{client_step_id, s});
}

// ---- Rendezvous --------------------------------------------------------------

// On the actor's thread a Send joins the next batch; from elsewhere (a GPU
// _Send hands its tensor over from a pool thread once the device-to-host copy
// is done) it goes at once as its own message (RendezvousAccess::Send is
// thread-safe).
void DeviceRendezvousAccess::Send(int64_t step_id, const RendezvousKey& key, const Tensor& value, bool is_dead,
                                  bool truncate16) {
  if (!executor_->OnThisThread()) {  // a GPU _Send finishing on a pool thread
    if (rendezvous_) caf::anon_send(rendezvous_, RendezvousSend{step_id, key, value, is_dead, truncate16});
    return;
  }
  if (first_buffered_ns_ == 0) first_buffered_ns_ = NowNanos();
  out_.sends.push_back({step_id, key, value, is_dead, truncate16});
}

uint64_t DeviceRendezvousAccess::Want(int64_t client_step_id, const RendezvousKey& key, Slot slot) {
  uint64_t ticket;
  if (!free_slots_.empty()) {
    ticket = free_slots_.back();
    free_slots_.pop_back();
  } else {
    ticket = slots_.size();
    slots_.emplace_back();
  }
  slot.used = true;
  slots_[ticket] = std::move(slot);
  if (first_buffered_ns_ == 0) first_buffered_ns_ = NowNanos();
  out_.recvs.push_back({client_step_id, key, ticket});
  return ticket;
}

void DeviceRendezvousAccess::Recv(int64_t step_id, const RendezvousKey& key, RecvCallback done) {
  if (!rendezvous_) {
    done(errors::Unavailable("no rendezvous actor on ", device_->name()), Tensor(), false);
    return;
  }
  Slot slot;
  slot.callback = std::move(done);
  Want(step_id, key, std::move(slot));
}

void DeviceRendezvousAccess::RecvForNode(int64_t step, int64_t client_step_id, IterationState* iter, int32_t node,
                                         int64_t start_ns, const RendezvousKey& key) {
  if (!rendezvous_) {
    executor_->RecvNodeDone(step, iter, node, start_ns, errors::Unavailable("no rendezvous actor on ", device_->name()),
                            Tensor(), false);
    return;
  }
  Slot slot;
  slot.step_id = step;
  slot.iter = iter;
  slot.node = node;
  slot.start_ns = start_ns;
  Want(client_step_id, key, std::move(slot));
}

void DeviceRendezvousAccess::Flush() {
  if (first_buffered_ns_ == 0) return;
  if (rendezvous_) self_->send(rendezvous_, std::move(out_));
  out_ = RendezvousBatch();
  first_buffered_ns_ = 0;
}

void DeviceRendezvousAccess::Deliver(RendezvousDeliver& d) {
  for (auto& item : d.items) {
    if (item.ticket >= slots_.size() || !slots_[item.ticket].used) continue;  // not ours (or answered already)
    Slot slot = std::move(slots_[item.ticket]);
    slots_[item.ticket] = Slot();
    free_slots_.push_back(item.ticket);
    if (slot.callback) slot.callback(item.status, std::move(item.value), item.is_dead);
    else executor_->RecvNodeDone(slot.step_id, slot.iter, slot.node, slot.start_ns, item.status,
                                 std::move(item.value), item.is_dead);
  }
}

void DeviceRendezvousAccess::Abort(int64_t client_step_id, const Status& s) {
  Flush();  // what the step sent so far goes first
  if (rendezvous_) self_->send(rendezvous_, RendezvousAbort{client_step_id, s});
}

}  // namespace actorflow
