// How kernels of a device actor reach other actors: the container actor
// (variables, the directory of queues), queue actors and the rendezvous
// actor. Each access sends requests from the device actor and is answered
// into its mailbox, so a kernel waiting for an answer holds no thread; the
// answer runs on the executor's thread (Executor::RunCallback).
//
// Owned by the device actor (actors/device/device_actor.cpp), given to its
// Executor as ExecutorServices; called on the actor's thread unless a
// comment says otherwise.
#pragma once

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "actorflow/actors/device/executor.hpp"
#include "actorflow/net/rendezvous_service.hpp"

namespace actorflow {

struct LocalVar;

/// To the device actor itself: queue requests made off its thread wait in
/// DeviceQueueAccess's inbox (handled by DrainInbox).
using queue_inbox_atom = caf::atom_constant<caf::atom("af_qinbox")>;

/// Variables. When the container actor is of this process, each variable is
/// resolved once (VarResolveRequest, then cached) and read and updated
/// directly (ops/state/local_variable.hpp): a read, and an update under
/// kInlineUpdateElements, are answered before the call returns (ReadNow and
/// UpdateNow apply them with no callback at all once resolved); so is one of
/// up to 1M elements on the thread of a client waiting for its step (the
/// step's first turn runs there: ClientChannel::StartHere), that thread
/// taking shards beside the pool's workers; a larger update runs on the
/// compute pool, sharded. A GPU kernel's update
/// (on_device) is answered under the variables' locks, held until its
/// callback has enqueued the kernel that writes them. A container of another
/// process is asked by message.
class DeviceVariableAccess final : public VariableAccess {
 public:
  DeviceVariableAccess(caf::event_based_actor* self, Executor* executor, Device* device, caf::actor container);
  void Read(VarReadRequest req, std::function<void(VarReadResponse&)> done) override;
  bool ReadNow(const std::string* const* handles, size_t n, Tensor* out, Status* status) override;
  void Update(VarUpdateRequest req, bool use_locking, std::function<void(const Status&)> done) override;
  bool UpdateNow(const std::string* const* handles, size_t n, const VarUpdateRequest& req, bool use_locking,
                 Status* status) override;
  void UpdateAndAnswer(VarUpdateRequest req, std::function<void(VarUpdateResponse&)> done) override;
  void UpdateManyAndAnswer(std::vector<VarUpdateRequest> reqs,
                           std::function<void(std::vector<VarUpdateResponse>&)> done) override;
  void InspectBuffers(std::vector<std::string> handles, InspectFn fn) override;

 private:
  using Resolved = std::vector<std::shared_ptr<LocalVar>>;
  /// Calls then(status, variables of `handles`): at once when all are
  /// cached (and not dropped), else after asking the container actor.
  void Resolve(const std::vector<std::string>& handles, std::function<void(const Status&, Resolved&)> then);
  /// The variable of `handle` when cached (and not dropped), else null.
  std::shared_ptr<LocalVar> CachedOne(const std::string& handle) const;
  /// Whether every handle is cached: then `out` has their variables.
  bool Cached(const std::vector<std::string>& handles, Resolved* out) const;
  /// For a read or update made at once: whether each of the `n` handles is
  /// cached; then `held` keeps their variables alive and `vars` lists them.
  template <class Held, class Raw>
  bool CachedNow(const std::string* const* handles, size_t n, Held* held, Raw* vars) const;

  caf::event_based_actor* self_;
  Executor* executor_;
  Device* device_;
  caf::actor container_;
  bool local_ = false;  // the container actor is of this process
  // By encoded handle. Weak: a variable the container actor drops
  // (ResetContainers) goes when no kernel is using it.
  std::unordered_map<std::string, std::weak_ptr<LocalVar>> resolved_;
  size_t sweep_at_ = 64;  // entries at which expired ones are erased
};

/// Tensors between partitions (_Send, _Recv). The Sends and Recvs of one
/// drained ready queue go out as one RendezvousBatch (Flush); tensors for the
/// Recvs come back in RendezvousDeliver messages, handled on the actor's
/// thread. No message per transfer. A Recv waits under a ticket (an index
/// into slots_, echoed by the rendezvous): a _Recv node the executor serves
/// itself as (step, node), other kernels with a callback.
class DeviceRendezvousAccess final : public ExecutorRendezvous {
 public:
  DeviceRendezvousAccess(caf::event_based_actor* self, Executor* executor, Device* device, caf::actor rendezvous)
      : self_(self), executor_(executor), device_(device), rendezvous_(std::move(rendezvous)) {}
  void Send(int64_t step_id, const RendezvousKey& key, const Tensor& value, bool is_dead,
            bool truncate16 = false) override;
  void Recv(int64_t step_id, const RendezvousKey& key, RecvCallback done) override;
  void RecvForNode(int64_t step, int64_t client_step_id, IterationState* iter, int32_t node, int64_t start_ns,
                   const RendezvousKey& key) override;
  void Abort(int64_t client_step_id, const Status& s) override;
  void Flush() override;
  /// Hands delivered tensors (or errors) to the Recvs waiting for them.
  void Deliver(RendezvousDeliver& d);

 private:
  struct Slot {
    RecvCallback callback;  // a kernel's Recv; empty for a node served directly
    int64_t step_id = 0;    // the executor's step of a node served directly
    IterationState* iter = nullptr;
    int32_t node = -1;
    int64_t start_ns = 0;   // when it began waiting, for step stats
    bool used = false;
  };
  uint64_t Want(int64_t client_step_id, const RendezvousKey& key, Slot slot);

  caf::event_based_actor* self_;
  Executor* executor_;
  Device* device_;
  caf::actor rendezvous_;
  RendezvousBatch out_;
  std::vector<Slot> slots_;  // by ticket
  std::vector<uint64_t> free_slots_;
};

/// Queue actors. Handles resolve through the container actor, once (then
/// cached); requests go to the queue actor. A step that fails cancels what it
/// waits for in queues (QueueCancelStep). A request made off the actor's
/// thread (a reader op that finished a file on a pool thread) waits in an
/// inbox that the actor empties (queue_inbox_atom).
class DeviceQueueAccess final : public ExecutorQueues {
 public:
  DeviceQueueAccess(caf::event_based_actor* self, Executor* executor, Device* device, caf::actor container)
      : self_(self), executor_(executor), device_(device), container_(std::move(container)) {}
  void Open(const std::string& handle, const QueueSpec& spec, std::function<void(const Status&)> done) override;
  /// Any thread (see QueueAccess::Request).
  void Request(const std::string& handle, QueueRequest request, Done done) override;
  void CancelStep(int64_t client_step_id, const Status& s) override;
  void StepEnded(int64_t client_step_id) override {
    if (step_queues_.empty() && cancelled_.empty()) return;  // the common step: no queue touched
    step_queues_.erase(client_step_id);
    cancelled_.erase(client_step_id);
  }
  /// Sends on the requests made off the actor's thread.
  void DrainInbox();

 private:
  void Send(const caf::actor& queue, QueueRequest request, Done done);

  caf::event_based_actor* self_;
  Executor* executor_;
  Device* device_;
  caf::actor container_;
  std::unordered_map<std::string, caf::actor> actors_;                // by encoded handle
  std::unordered_map<int64_t, std::vector<caf::actor>> step_queues_;  // queues a running step has asked
  std::unordered_map<int64_t, Status> cancelled_;  // failed steps: a request they still make fails at once
  struct Posted {
    std::string handle;
    QueueRequest request;
    Done done;
  };
  std::mutex inbox_mu_;
  std::vector<Posted> inbox_;     // guarded by inbox_mu_
  bool inbox_signalled_ = false;  // guarded by inbox_mu_: a queue_inbox_atom is on its way
};

}  // namespace actorflow
