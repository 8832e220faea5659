#include "actors/device_actor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "actors/executor_plan.hpp"
#include "actors/kernel_segment.hpp"
#include "actors/messages.hpp"
#include "actors/propagation.hpp"
#include "actors/step_state.hpp"
#include "core/exception_status.hpp"
#include "core/proto/graph.pb.h"
#include "core/resource_handle.hpp"
#include "ops/queue/queue_access.hpp"
#include "ops/sendrecv/rendezvous_access.hpp"
#include "ops/sendrecv/sendrecv_common.hpp"
#include "devices/compute_pool.hpp"
#include "devices/device.hpp"
#include "graph/graph.hpp"
#include "graph/graph_def_io.hpp"

namespace actorflow {

namespace {

// How long ready nodes run per handler invocation before the actor yields to
// its mailbox (deadlines, other steps' messages); the clock is read every
// kNodesPerClockCheck nodes.
constexpr auto kBatchTime = std::chrono::microseconds(500);
constexpr int kNodesPerClockCheck = 64;

using resume_atom = caf::atom_constant<caf::atom("af_resume")>;
using deadline_atom = caf::atom_constant<caf::atom("af_dline")>;
using queue_inbox_atom = caf::atom_constant<caf::atom("af_qinbox")>;

using Clock = std::chrono::steady_clock;

// The device actor state whose handler runs on this thread, if any: an
// asynchronous kernel finishing inside it (a small MatMul computed at once, a
// variable update whose answer just arrived) is handed over without a message.
thread_local const void* t_running_actor = nullptr;

struct ActiveStep {
  std::unique_ptr<StepState> state;
  std::shared_ptr<const ExecutorPlan> plan;  // kept alive by its steps after deregistration
  uint64_t graph_handle = 0;
  caf::response_promise promise;
};

// A node running off the actor thread: its context lives until it completes.
struct OffActorRun {
  int64_t start_ns = 0;  // for step stats
  IterationState* iter = nullptr;
  bool dead = false;
  OpKernelContext::Params params;
  std::vector<Tensor> outputs;
  std::unique_ptr<OpKernelContext> ctx;
  // The KernelDone message, made when the node starts (where failing to
  // allocate it fails only the node): the completion fills and sends it
  // without allocating, so it cannot fail and leave the step waiting.
  caf::mailbox_element_ptr done_msg;
};

// A plan being built on the compute pool: the pool job fills it, then tells
// the actor (GraphBuilt), which takes it over. Never touched by both at once.
struct PendingGraph {
  Status status;
  std::unique_ptr<ExecutorPlan> plan;
};

using DeviceActor = caf::stateful_actor<struct DeviceActorState>;

// Kernels' way to the container actor: requests from this actor, answered
// into its mailbox, so a kernel waiting for a variable holds no thread.
class DeviceVariableAccess final : public VariableAccess {
 public:
  DeviceVariableAccess(DeviceActor* self, caf::actor container) : self_(self), container_(std::move(container)) {}
  void Read(VarReadRequest req, std::function<void(VarReadResponse&)> done) override;
  void Update(VarUpdateRequest req, std::function<void(const Status&)> done) override;
  void UpdateAndAnswer(VarUpdateRequest req, std::function<void(VarUpdateResponse&)> done) override;
  bool available() const { return static_cast<bool>(container_); }

 private:
  DeviceActor* self_;
  caf::actor container_;
};

// Kernels' way to the rendezvous actor (_Send, _Recv). The Sends and Recvs
// of one drained ready queue go out as one RendezvousBatch (Flush); tensors
// for the Recvs come back in RendezvousDeliver messages, handled on this
// actor's thread. No message per transfer. A Recv waits under a ticket (an
// index into slots_, echoed by the rendezvous): a _Recv node the actor serves
// itself (DirectRecvKernel) as (step, node), other kernels with a callback.
class DeviceRendezvousAccess final : public RendezvousAccess {
 public:
  DeviceRendezvousAccess(DeviceActor* self, caf::actor rendezvous) : self_(self), rendezvous_(std::move(rendezvous)) {}
  void Send(int64_t step_id, const RendezvousKey& key, const Tensor& value, bool is_dead) override;
  void Recv(int64_t step_id, const RendezvousKey& key, RecvCallback done) override;
  /// Waits for the tensor of `node` (a DirectRecvKernel) of the actor's step
  /// `step`; when it comes, RecvNodeDone hands it on.
  void RecvForNode(StepState* step, IterationState* iter, int32_t node, const RendezvousKey& key);
  void Abort(int64_t step_id, const Status& s);
  /// Sends what the kernels asked for since the last flush.
  void Flush();
  /// Whether something has waited long enough to go out before the ready
  /// queue drains (a long inline chain must not hold a Send back).
  bool Due() const { return first_buffered_ns_ != 0 && NowNanos() - first_buffered_ns_ > kMaxBatchDelayNs; }
  /// Hands delivered tensors (or errors) to the Recvs waiting for them.
  void Deliver(RendezvousDeliver& d);

 private:
  struct Slot {
    RecvCallback callback;  // a kernel's Recv; empty for a node served directly
    int64_t step_id = 0;    // the actor's step of a node served directly
    IterationState* iter = nullptr;
    int32_t node = -1;
    int64_t start_ns = 0;   // when it began waiting, for step stats
    bool used = false;
  };
  uint64_t Want(int64_t client_step_id, const RendezvousKey& key, Slot slot);

  DeviceActor* self_;
  caf::actor rendezvous_;
  static constexpr int64_t kMaxBatchDelayNs = 30'000;
  RendezvousBatch out_;
  int64_t first_buffered_ns_ = 0;  // when out_ got its first item; 0 while it is empty
  std::vector<Slot> slots_;        // by ticket
  std::vector<uint64_t> free_slots_;
};

// Kernels' way to queue actors. Handles resolve through the container
// actor, once (then cached); requests go to the queue actor and are answered
// into this actor's mailbox, so a waiting enqueue or dequeue holds no thread.
// A step that fails cancels what it waits for in queues (QueueCancelStep).
// A request made off the actor's thread (a reader op that finished a file on
// a pool thread) waits in an inbox that the actor empties (queue_inbox_atom).
class DeviceQueueAccess final : public QueueAccess {
 public:
  DeviceQueueAccess(DeviceActor* self, caf::actor container) : self_(self), container_(std::move(container)) {}
  void Open(const std::string& handle, const QueueSpec& spec, std::function<void(const Status&)> done) override;
  void Request(const std::string& handle, QueueRequest request, Done done) override;
  /// Sends on the requests made off the actor's thread (on the actor's thread).
  void DrainInbox();
  /// Fails the requests step `client_step_id` waits for in queues with `s`.
  void CancelStep(int64_t client_step_id, const Status& s);
  /// The step is over: forget which queues it used.
  void StepEnded(int64_t client_step_id) {
    if (step_queues_.empty() && cancelled_.empty()) return;  // the common step: no queue touched
    step_queues_.erase(client_step_id);
    cancelled_.erase(client_step_id);
  }

 private:
  void Send(const caf::actor& queue, QueueRequest request, Done done);

  DeviceActor* self_;
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
  std::vector<Posted> inbox_;   // guarded by inbox_mu_
  bool inbox_signalled_ = false;  // guarded by inbox_mu_: a queue_inbox_atom is on its way
};

struct DeviceActorState {
  Device* device = nullptr;
  std::unique_ptr<DeviceVariableAccess> variables;
  std::unique_ptr<DeviceRendezvousAccess> rendezvous;
  std::unique_ptr<DeviceQueueAccess> queues;
  uint64_t next_graph_handle = 1;
  int64_t next_step_id = 1;
  struct Registration {
    std::shared_ptr<PendingGraph> pending;
    caf::response_promise promise;
  };
  std::unordered_map<uint64_t, Registration> registrations;  // by the handle they will get
  std::unordered_map<uint64_t, std::shared_ptr<const ExecutorPlan>> graphs;
  std::unordered_map<std::string, std::shared_ptr<KernelSegment>> segments;  // by session handle
  std::unordered_set<std::string> closed_sessions;  // a late registration must not recreate their segment
  std::unordered_map<int64_t, ActiveStep> steps;
  using Ready = TaggedNode;
  std::vector<Ready> ready;             // LIFO: depth-first keeps fewer tensors alive
  std::vector<Ready> read_wait;         // ready but for their variables: read in one batch per step (SendReads)
  std::vector<Tensor> inline_outputs;   // scratch outputs of the node running inline; sized at registration
  bool resume_pending = false;          // a resume_atom to ourselves is in the mailbox
  std::vector<KernelDone> completed;    // kernels that finished on this actor's thread, not yet propagated
  // Step deadlines, earliest first. CAF 0.17 cannot cancel a delayed message,
  // so one timer is kept armed for the earliest deadline instead of one per
  // step; entries of steps that ended are skipped when they come due.
  using Deadline = std::pair<Clock::time_point, int64_t>;
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<Deadline>> deadlines;
  Clock::time_point armed = Clock::time_point::max();  // due time of the earliest pending timer
  bool shutting_down = false;           // exit received: draining running kernels, then quit
  caf::error exit_reason;
  static const char* name;
};
const char* DeviceActorState::name = "device_actor";


RunStepResponse FailedResponse(Status s) {
  RunStepResponse r;
  r.status = std::move(s);
  return r;
}

Status NodeError(const StepState& step, int32_t node, const Status& s) {
  const OpKernel* k = step.plan().item(node).kernel;
  return Status(s.code(), "node '" + k->name() + "' (op '" + k->type_string() + "'): " + s.message());
}

void Reply(ActiveStep& a) {
  StepState& s = *a.state;
  if (s.replied) return;
  s.replied = true;
  RunStepResponse resp;
  resp.status = s.status();
  if (resp.status.ok()) {
    auto& retvals = s.call_frame()->retvals;
    for (size_t i = 0; i < retvals.size(); ++i) {
      if (!retvals[i].IsInitialized()) {
        resp.status = errors::Internal("step ", s.step_id(), " ended without a value for result ", i);
        break;
      }
    }
    if (resp.status.ok()) resp.retvals = std::move(retvals);
  }
  resp.stats = std::move(s.stats);
  a.promise.deliver(std::move(resp));
}

void FailStep(DeviceActor* self, StepState* step, const Status& s) {
  // The first error of a step that other partitions share aborts it there
  // too: their waiting Recvs fail instead of waiting for our Sends.
  if (step->multi_partition && !step->failed()) self->state.rendezvous->Abort(step->client_step_id, s);
  if (!step->failed()) self->state.queues->CancelStep(step->client_step_id, s);
  step->Fail(s);
  auto it = self->state.steps.find(step->step_id());
  if (it != self->state.steps.end()) Reply(it->second);
}

// One node of `step` is done (ran, failed or was skipped).
void NodeFinished(DeviceActor* self, StepState* step) {
  if (--step->outstanding > 0) return;
  auto& st = self->state;
  auto it = st.steps.find(step->step_id());
  Reply(it->second);
  st.queues->StepEnded(step->client_step_id);
  st.steps.erase(it);
  if (st.shutting_down && st.steps.empty()) self->quit(st.exit_reason);
}

// Runs a kernel, turning an escaping exception into the node's Status: an
// exception must never reach CAF (it would kill the actor and all its steps).
// `async_inline`: an asynchronous kernel whose RunsInline said yes.
void ComputeSafely(OpKernel* kernel, OpKernelContext* ctx, bool async_inline = false) noexcept {
  try {
    if (async_inline) kernel->AsAsync()->ComputeInline(ctx);
    else kernel->Compute(ctx);
  } catch (const std::bad_alloc&) {  // what() names the bytes when a tensor did not fit
    ctx->SetStatus(CurrentExceptionStatus());
  } catch (...) {
    ctx->SetStatus(CurrentExceptionStatus("kernel threw"));
  }
}

// The ready queue is LIFO: _Send/_Recv nodes among those queued from
// `first_new` on go on top, so a transfer another device waits for is not
// held back behind a long chain run here.
[[gnu::noinline]] void TransfersFirst(const ExecutorPlan& plan, std::vector<DeviceActorState::Ready>* ready,
                                      size_t first_new) {
  std::stable_partition(ready->begin() + static_cast<std::ptrdiff_t>(first_new), ready->end(),
                        [&](const DeviceActorState::Ready& r) { return !plan.item(r.node).is_transfer; });
}

// Hands a finished node's outputs to its consumers and queues those now
// ready (through frames and iterations: actors/propagation.hpp).
void Propagate(DeviceActor* self, StepState* step, IterationState* iter, int32_t node, const Status& status,
               Tensor* outputs, bool is_dead = false) {
  const ExecutorPlan& plan = step->plan();
  const NodeItem& item = plan.item(node);
  Tensor* inputs = iter->inputs.data() + item.input_start;
  for (int i = 0; i < item.num_inputs; ++i) inputs[i] = Tensor();  // last use of these slots
  if (!status.ok()) {
    FailStep(self, step, NodeError(*step, node, status));
  } else if (!step->failed()) {
    for (int i = 0; i < item.num_outputs && !is_dead; ++i) {
      // A ref output carries the variable's handle (core/resource_handle.hpp).
      const DataType want = IsRefType(item.kernel->output_type(i)) ? DT_STRING : item.kernel->output_type(i);
      if (outputs[i].IsInitialized() ? outputs[i].dtype() == want
                                     : item.kind == NodeKind::kSwitch || item.is_transfer)  // dead by design
        continue;
      FailStep(self, step,
               NodeError(*step, node,
                         errors::Internal("kernel produced ",
                                          outputs[i].IsInitialized() ? DataTypeString(outputs[i].dtype()) : "no value",
                                          " for output ", i, ", expected ", DataTypeString(item.kernel->output_type(i)))));
      break;
    }
    if (!step->failed()) {
      auto& ready = self->state.ready;
      const size_t first_new = ready.size();
      // A _Recv whose tensor came dead is dead as a whole (its control edges too).
      if (item.is_transfer && item.num_outputs > 0 && !outputs[0].IsInitialized()) is_dead = true;
      PropagateOutputs(step, iter, node, outputs, is_dead, &ready);
      if (plan.has_transfers()) {
        bool transfer = false;
        for (size_t i = first_new; i < ready.size() && !transfer; ++i) transfer = plan.item(ready[i].node).is_transfer;
        if (transfer) TransfersFirst(plan, &ready, first_new);
      }
    }
  }
  for (int i = 0; i < item.num_outputs; ++i) outputs[i] = Tensor();  // outputs nobody consumes die here
  NodeFinished(self, step);
}

void LaunchOffActor(DeviceActor* self, StepState* step, IterationState* iter, int32_t node, const NodeItem& item,
                    Tensor* inputs, bool dead) {
  // Freed here if anything below throws (ExecuteNode then fails the node);
  // from the kernel's start on, `done` frees it.
  std::unique_ptr<OffActorRun> owned(new OffActorRun());
  OffActorRun* run = owned.get();
  run->outputs.resize(item.num_outputs);
  run->iter = iter;
  run->dead = dead;
  auto& p = run->params;
  p.step_id = step->client_step_id;
  p.frame_id = iter->frame->id;
  p.iteration = iter->iter;
  p.parent_iterations = &iter->frame->parent_iterations;
  p.is_input_dead = dead;
  p.device = self->state.device;
  p.op_kernel = item.kernel;
  p.inputs = inputs;  // stable: the step lives while this node is outstanding
  p.num_inputs = item.num_inputs;
  p.outputs = run->outputs.data();
  p.num_outputs = item.num_outputs;
  p.call_frame = step->call_frame();
  p.cancellation = step->cancellation();
  p.variables = self->state.variables.get();
  p.rendezvous = self->state.rendezvous.get();
  p.queues = self->state.queues.get();
  p.step_resources = step->resources();
  run->ctx = std::make_unique<OpKernelContext>(&run->params);
  caf::actor me = caf::actor_cast<caf::actor>(self);
  const int64_t step_id = step->step_id();
  // Sent as from the actor itself: KernelDone is accepted from no one else.
  // Called exactly once; `run` is freed only after the message is out.
  run->start_ns = step->collect_stats ? NowNanos() : 0;
  run->done_msg = caf::make_mailbox_element(caf::actor_cast<caf::strong_actor_ptr>(me), caf::make_message_id(), {},
                                            KernelDone{});
  DeviceActorState* state = &self->state;
  ComputePool* pool = state->device->compute_pool();
  auto done = [run, me, step_id, node, state, pool]() noexcept {
    const bool timed = run->start_ns != 0;
    caf::mailbox_element_ptr msg = std::move(run->done_msg);
    KernelDone& d = msg->content().get_mutable_as<KernelDone>(0);
    d.step_id = step_id;
    d.node_id = node;
    d.status = run->ctx->status();  // shares the message: no allocation
    d.outputs = std::move(run->outputs);
    d.start_ns = run->start_ns;
    d.end_ns = timed ? NowNanos() : 0;
    d.thread = timed ? ThisThreadId() : 0;
    d.iteration = reinterpret_cast<uint64_t>(run->iter);
    d.is_dead = run->dead;
    delete run;
    // On the actor's own thread (inside one of its handlers) the result goes
    // straight to its queue of completions when that queue has room to grow;
    // otherwise, and from anywhere else, by the message made at the start.
    if (t_running_actor == state) {
      try {
        state->completed.push_back(std::move(d));
        return;
      } catch (...) {  // no memory to grow the queue: `d` was not moved from
      }
    }
    caf::abstract_actor* dest = caf::actor_cast<caf::abstract_actor*>(me);
    try {
      dest->enqueue(std::move(msg), pool->delivery_unit());
    } catch (...) {
      // In the mailbox already (pushing allocates nothing); making the actor
      // runnable threw for memory: it must still run.
      pool->RescheduleAfterFailure(dynamic_cast<caf::resumable*>(dest));
    }
  };
  if (item.is_async) {
    owned.release();
    try {
      item.kernel->AsAsync()->ComputeAsync(run->ctx.get(), done);
    } catch (...) {  // by the AsyncOpKernel contract, one that throws has not called done
      run->ctx->SetStatus(CurrentExceptionStatus("starting the kernel"));
      done();
    }
  } else {
    OpKernel* kernel = item.kernel;
    self->state.device->compute_pool()->Schedule([kernel, run, done = std::move(done)]() mutable {
      if (run->start_ns != 0) run->start_ns = NowNanos();  // when the pool started it
      ComputeSafely(kernel, run->ctx.get());
      done();
    });
    owned.release();  // scheduled: the job owns it now
  }
}

// Marks this thread as running `self`'s handler (see t_running_actor).
class RunningScope {
 public:
  explicit RunningScope(DeviceActor* self) : prev_(t_running_actor), handler_(self->context()) {
    t_running_actor = &self->state;
  }
  ~RunningScope() { t_running_actor = prev_; }
  RunningScope(const RunningScope&) = delete;
  RunningScope& operator=(const RunningScope&) = delete;

 private:
  const void* prev_;
  ComputePool::ActorHandlerScope handler_;  // the handler's first pool job runs next on its worker
};

// A kernel that ran off the actor's loop has finished: record it and hand
// its outputs on.
void KernelFinished(DeviceActor* self, KernelDone& done) {
  auto it = self->state.steps.find(done.step_id);
  if (it == self->state.steps.end()) return;
  StepState* step = it->second.state.get();
  if (done.node_id < 0 || done.node_id >= step->plan().num_nodes() ||
      static_cast<int>(done.outputs.size()) != step->plan().item(done.node_id).num_outputs)
    return;
  if (step->collect_stats && done.start_ns != 0)
    step->RecordStats(done.node_id, step->plan().item(done.node_id).is_async ? "async" : "pool", done.start_ns,
                      done.end_ns, done.thread, done.outputs.data());
  // The iteration is alive: the node kept it from finishing.
  auto* iter = reinterpret_cast<IterationState*>(done.iteration);
  Propagate(self, step, iter, done.node_id, done.status, done.outputs.data(), done.is_dead);
}

// The tensor (or error) for _Recv node `node` of the actor's step `step_id`,
// served directly (DeviceRendezvousAccess::RecvForNode): checked as the
// kernel would, then handed to the node's consumers.
void RecvNodeDone(DeviceActor* self, int64_t step_id, IterationState* iter, int32_t node, int64_t start_ns,
                  const Status& status, Tensor value, bool is_dead) {
  auto& st = self->state;
  auto it = st.steps.find(step_id);
  if (it == st.steps.end()) return;
  StepState* step = it->second.state.get();
  const NodeItem& item = step->plan().item(node);
  const Status checked = CheckReceived(*item.kernel, status, value, is_dead);
  Tensor* outputs = st.inline_outputs.data();
  if (checked.ok() && !is_dead) outputs[0] = std::move(value);  // dead: no value
  if (step->collect_stats && start_ns != 0)
    step->RecordStats(node, "recv", start_ns, NowNanos(), ThisThreadId(), outputs);
  Propagate(self, step, iter, node, checked, outputs, is_dead);
}

// Out of line: keeps ExecuteNode, the executor's hot path, small.
[[gnu::noinline]] void StartRecv(DeviceActor* self, StepState* step, IterationState* iter, int32_t node) {
  const RendezvousKey& key = step->plan().recv_key(node);
  if (iter->frame->id == 0 && iter->iter == 0) {
    self->state.rendezvous->RecvForNode(step, iter, node, key);
    return;
  }
  self->state.rendezvous->RecvForNode(step, iter, node,
                                      step->plan().direct_recv(node).rendezvous_key_in(iter->frame->id, iter->iter));
}

// Runs one ready node whose inputs are all in place: inline, on the pool, or
// started asynchronously.
void ExecuteNode(DeviceActor* self, StepState* step, IterationState* iter, int32_t node, bool dead) {
  auto& st = self->state;
  const NodeItem& item = step->plan().item(node);
  Tensor* inputs = iter->inputs.data() + item.input_start;
  if (step->failed()) {  // skip the rest of a failed step
    for (int i = 0; i < item.num_inputs; ++i) inputs[i] = Tensor();
    NodeFinished(self, step);
    return;
  }
  if (dead && !item.is_transfer) {  // does not run; its outputs are dead
    if (item.is_retval) {
      // Its name is that of the fetched tensor (graph/subgraph.cpp).
      FailStep(self, step,
               NodeError(*step, node,
                         errors::InvalidArgument("the fetched tensor has no value: it is dead (it depends on "
                                                 "the side of a Switch that was not taken)")));
      NodeFinished(self, step);
      return;
    }
    Propagate(self, step, iter, node, Status::OK(), st.inline_outputs.data(), true);
    return;
  }
  bool offload = item.is_async;
  bool async_inline = false;
  try {
    if (offload && item.is_direct_recv) {  // a _Recv: waits for its tensor without a thread or a kernel start
      StartRecv(self, step, iter, node);
      return;
    }
    if (offload && item.kernel->AsAsync()->RunsInline(inputs, item.num_inputs)) offload = false, async_inline = true;
    offload = offload || (!async_inline && item.kernel->ShouldOffload(inputs, item.num_inputs));
    if (offload) {
      LaunchOffActor(self, step, iter, node, item, inputs, dead);
      return;
    }
  } catch (const std::exception& e) {  // nothing was started: the node fails here
    Propagate(self, step, iter, node, errors::ResourceExhausted("could not start the kernel: ", e.what()),
              st.inline_outputs.data());
    return;
  }
  OpKernelContext::Params p;
  p.step_id = step->client_step_id;
  p.frame_id = iter->frame->id;
  p.iteration = iter->iter;
  p.parent_iterations = &iter->frame->parent_iterations;
  p.is_input_dead = dead;
  p.device = st.device;
  p.op_kernel = item.kernel;
  p.inputs = inputs;
  p.num_inputs = item.num_inputs;
  p.outputs = st.inline_outputs.data();
  p.num_outputs = item.num_outputs;
  p.call_frame = step->call_frame();
  p.cancellation = step->cancellation();
  p.variables = st.variables.get();
  p.rendezvous = st.rendezvous.get();
  p.queues = st.queues.get();
  p.step_resources = step->resources();
  OpKernelContext ctx(&p);
  if (step->collect_stats) {
    const int64_t start = NowNanos();
    ComputeSafely(item.kernel, &ctx, async_inline);
    step->RecordStats(node, "inline", start, NowNanos(), ThisThreadId(), st.inline_outputs.data());
  } else {
    ComputeSafely(item.kernel, &ctx, async_inline);
  }
  Propagate(self, step, iter, node, ctx.status(), st.inline_outputs.data(), dead);
}

void RunReady(DeviceActor* self);
void FailAllOnError(DeviceActor* self) noexcept;
void RunReadySafely(DeviceActor* self) noexcept;

// The Status of the exception being handled, naming the device (call it in a
// catch block).
Status DeviceExceptionStatus(const DeviceActorState& st, const char* what) noexcept {
  return CurrentExceptionStatusWith([&] { return "device " + st.device->name() + what; });
}

// Called in a catch block when the bookkeeping of one step threw (out of
// memory growing a queue or a frame): that step fails with the exception's
// Status and is answered; the others go on. A step gone already is ignored.
void FailStepOnError(DeviceActor* self, int64_t step_id) noexcept {
  auto& st = self->state;
  const Status s = DeviceExceptionStatus(st, "");
  auto it = st.steps.find(step_id);
  if (it == st.steps.end()) return;
  try {
    FailStep(self, it->second.state.get(), s);
  } catch (...) {  // no memory to fail it the usual way: mark it failed and answer
    it->second.state->Fail(OutOfMemoryStatus());
    try {
      Reply(it->second);
    } catch (...) {  // not even the answer fits: the client's deadline ends its wait
    }
  }
}

// Variable reads. A ready node with inputs taken by value from ref edges
// (deref inputs) first reads those variables from the container actor, so it
// sees their values as of now, after everything it depends on. Such nodes
// wait in `read_wait` until the ready queue is drained; then each step's
// waiting nodes read in one request: one container round trip per batch
// rather than one per node.

bool DerefDone(const IterationState& iter, const NodeItem& item) {
  const uint8_t* d = iter.derefed.data() + item.deref_local;
  for (int32_t k = 0; k < item.num_deref; ++k)
    if (!d[k]) return false;
  return true;
}

// Sends one read for `nodes` (ready, of one live step). A node whose handle
// is malformed fails alone; nodes of a step that failed meanwhile are skipped.
void SendStepReads(DeviceActor* self, StepState* step, const std::vector<TaggedNode>& nodes) {
  auto& st = self->state;
  const ExecutorPlan& plan = step->plan();
  struct Fill {
    IterationState* iter;  // alive while its reading node is outstanding
    int32_t slot;          // input slot in the iteration
    int32_t deref;         // index into the iteration's deref flags
  };
  VarReadRequest req;
  std::vector<Fill> fills;  // per handle of the request
  std::vector<TaggedNode> reading;
  for (const TaggedNode& t : nodes) {
    if (step->failed()) {
      ExecuteNode(self, step, t.iter, t.node, t.dead);  // skips it; `step` may end with the last one
      continue;
    }
    const NodeItem& item = plan.item(t.node);
    IterationState& iter = *t.iter;
    Status bad;
    const size_t first = req.handles.size();
    for (int32_t k = 0; k < item.num_deref && bad.ok(); ++k) {
      if (iter.derefed[item.deref_local + k]) continue;
      const std::string* handle = nullptr;
      const int32_t slot = item.input_start + plan.deref_inputs(item)[k];
      if (item.kind == NodeKind::kMerge && !iter.inputs[slot].IsInitialized()) {
        iter.derefed[item.deref_local + k] = 1;  // a merge input that did not come: nothing to read
        continue;
      }
      bad = RefTensorHandle(iter.inputs[slot], &handle);
      if (bad.ok()) {
        req.handles.push_back(*handle);
        fills.push_back({t.iter, slot, item.deref_local + k});
      }
    }
    if (!bad.ok()) {
      req.handles.resize(first);
      fills.resize(first);
      Propagate(self, step, t.iter, t.node, bad, st.inline_outputs.data());
      continue;
    }
    reading.push_back(t);
  }
  if (reading.empty()) return;  // `step` may be gone
  const int64_t step_id = step->step_id();
  st.variables->Read(std::move(req), [self, step_id, fills = std::move(fills),
                                      reading = std::move(reading)](VarReadResponse& r) {
    auto it = self->state.steps.find(step_id);
    if (it == self->state.steps.end()) return;  // cannot happen: the reading nodes keep their step
    StepState* step = it->second.state.get();
    if (r.status.ok() && r.values.size() != fills.size())
      r.status = errors::Internal("container answered ", r.values.size(), " values for ", fills.size());
    if (!r.status.ok()) {
      // The first fails the step; the others, still outstanding, are skipped.
      Propagate(self, step, reading[0].iter, reading[0].node, r.status, self->state.inline_outputs.data());
      for (size_t i = 1; i < reading.size(); ++i) self->state.ready.push_back(reading[i]);
      return;
    }
    for (size_t i = 0; i < fills.size(); ++i) {
      fills[i].iter->inputs[fills[i].slot] = std::move(r.values[i]);
      fills[i].iter->derefed[fills[i].deref] = 1;
    }
    // Still outstanding, they run (or are skipped) from the queue.
    for (const TaggedNode& t : reading) self->state.ready.push_back(t);
  });
}

// Sends the reads of every node in `read_wait`, one request per step.
void SendReads(DeviceActor* self) {
  auto& st = self->state;
  std::vector<DeviceActorState::Ready> waiting;
  waiting.swap(st.read_wait);
  std::vector<TaggedNode> nodes;
  for (size_t i = 0; i < waiting.size(); ++i) {
    StepState* step = waiting[i].step;
    if (!step) continue;  // taken with an earlier step's batch
    nodes.clear();
    for (size_t j = i; j < waiting.size(); ++j) {
      if (waiting[j].step != step) continue;
      nodes.push_back(waiting[j]);
      waiting[j].step = nullptr;
    }
    SendStepReads(self, step, nodes);
  }
}

// Runs ready nodes until the queue is empty or the batch is used up; then
// resumes through the mailbox, so other messages are handled in between.
void RunReady(DeviceActor* self) {
  auto& st = self->state;
  const auto batch_end = std::chrono::steady_clock::now() + kBatchTime;
  for (int n = 1;; ++n) {
    if (st.ready.empty() && st.completed.empty()) {
      if (st.read_wait.empty()) {
        st.rendezvous->Flush();  // the Sends and Recvs of what ran
        break;
      }
      // Drained: the waiting reads go out (a malformed handle fails its
      // node, which may make others ready).
      SendReads(self);
      continue;
    }
    if (!st.completed.empty()) {
      KernelDone done = std::move(st.completed.back());
      st.completed.pop_back();
      try {
        KernelFinished(self, done);
      } catch (...) {
        FailStepOnError(self, done.step_id);
      }
      continue;
    }
    if (n % kNodesPerClockCheck == 0 && std::chrono::steady_clock::now() > batch_end) {
      if (!st.resume_pending) {
        st.resume_pending = true;
        self->send(self, resume_atom::value);
      }
      if (!st.read_wait.empty()) SendReads(self);
      st.rendezvous->Flush();
      return;
    }
    const TaggedNode t = st.ready.back();
    st.ready.pop_back();
    const int64_t step_id = t.step->step_id();
    try {
      const NodeItem& item = t.step->plan().item(t.node);
      if (item.num_deref > 0 && !t.dead && !t.step->failed() && !DerefDone(*t.iter, item)) st.read_wait.push_back(t);
      else ExecuteNode(self, t.step, t.iter, t.node, t.dead);
    } catch (...) {  // its bookkeeping ran out of memory: that step fails, the others go on
      FailStepOnError(self, step_id);
    }
    if (st.rendezvous->Due()) st.rendezvous->Flush();
  }
}

// RunReady from a callback: an exception fails the steps, not the actor.
void RunReadySafely(DeviceActor* self) noexcept {
  try {
    RunReady(self);
  } catch (...) {
    FailAllOnError(self);
  }
}

// Runs a kernel's callback for a container answer inside the actor's
// handler: finished kernels are handed over directly, an exception fails the
// steps (not the actor), and what became ready runs.
template <class Fn>
void OnContainerAnswer(DeviceActor* self, Fn&& fn) {
  RunningScope running(self);
  try {
    fn();
  } catch (...) {
    FailAllOnError(self);
  }
  RunReadySafely(self);
}

Status ContainerDidNotAnswer(const caf::error& e) {
  return errors::Unavailable("the container actor did not answer: ", caf::to_string(e));
}

void DeviceVariableAccess::Read(VarReadRequest req, std::function<void(VarReadResponse&)> done) {
  DeviceActor* self = self_;
  if (!container_) {
    VarReadResponse r;
    r.status = errors::Unavailable("no container actor holds variables on ", self->state.device->name());
    done(r);
    return;
  }
  self->request(container_, caf::infinite, std::move(req))
      .then([self, done](VarReadResponse& r) { OnContainerAnswer(self, [&] { done(r); }); },
            [self, done](caf::error& e) {
              OnContainerAnswer(self, [&] {
                VarReadResponse r;
                r.status = ContainerDidNotAnswer(e);
                done(r);
              });
            });
}

void DeviceVariableAccess::Update(VarUpdateRequest req, std::function<void(const Status&)> done) {
  UpdateAndAnswer(std::move(req), [done = std::move(done)](VarUpdateResponse& r) { done(r.status); });
}

void DeviceVariableAccess::UpdateAndAnswer(VarUpdateRequest req, std::function<void(VarUpdateResponse&)> done) {
  DeviceActor* self = self_;
  if (!container_) {
    VarUpdateResponse r;
    r.status = errors::Unavailable("no container actor holds variables on ", self->state.device->name());
    done(r);
    return;
  }
  self->request(container_, caf::infinite, std::move(req))
      .then([self, done](VarUpdateResponse& r) { OnContainerAnswer(self, [&] { done(r); }); },
            [self, done](caf::error& e) {
              OnContainerAnswer(self, [&] {
                VarUpdateResponse r;
                r.status = ContainerDidNotAnswer(e);
                done(r);
              });
            });
}

void DeviceQueueAccess::Open(const std::string& handle, const QueueSpec& spec,
                             std::function<void(const Status&)> done) {
  DeviceActor* self = self_;
  if (!container_) {
    done(errors::Unavailable("no container actor holds queues on ", self->state.device->name()));
    return;
  }
  self->request(container_, caf::infinite, QueueOpenRequest{handle, spec, true})
      .then(
          [this, self, handle, done](QueueOpenResponse& r) {
            OnContainerAnswer(self, [&] {
              if (r.status.ok()) actors_[handle] = r.queue;
              done(r.status);
            });
          },
          [self, done](caf::error& e) { OnContainerAnswer(self, [&] { done(ContainerDidNotAnswer(e)); }); });
}

void DeviceQueueAccess::Request(const std::string& handle, QueueRequest request, Done done) {
  DeviceActor* self = self_;
  if (t_running_actor != &self->state) {  // from a pool thread: the actor sends it on
    bool signal = false;
    {
      std::lock_guard<std::mutex> lock(inbox_mu_);
      inbox_.push_back(Posted{handle, std::move(request), std::move(done)});
      signal = !inbox_signalled_;
      inbox_signalled_ = true;
    }
    if (signal) {
      // The actor is alive: the step of the kernel asking is still running on it.
      caf::actor me = caf::actor_cast<caf::actor>(self);
      self->state.device->compute_pool()->Deliver(me, me, caf::make_message(queue_inbox_atom::value));
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
    r.status = errors::Unavailable("no container actor holds queues on ", self->state.device->name());
    done(r);
    return;
  }
  // Opened by another session or device: look it up, then send.
  self->request(container_, caf::infinite, QueueOpenRequest{handle, QueueSpec(), false})
      .then(
          [this, self, handle, request, done](QueueOpenResponse& r) mutable {
            OnContainerAnswer(self, [&] {
              if (!r.status.ok()) {
                QueueResponse failed;
                failed.status = r.status;
                done(failed);
                return;
              }
              actors_[handle] = r.queue;
              Send(r.queue, std::move(request), std::move(done));
            });
          },
          [self, done](caf::error& e) {
            OnContainerAnswer(self, [&] {
              QueueResponse failed;
              failed.status = ContainerDidNotAnswer(e);
              done(failed);
            });
          });
}

void DeviceQueueAccess::Send(const caf::actor& queue, QueueRequest request, Done done) {
  DeviceActor* self = self_;
  auto cancelled = cancelled_.find(request.step_id);
  if (cancelled != cancelled_.end()) {
    QueueResponse failed;
    failed.status = cancelled->second;
    done(failed);
    return;
  }
  auto& used = step_queues_[request.step_id];
  if (std::find(used.begin(), used.end(), queue) == used.end()) used.push_back(queue);
  self->request(queue, caf::infinite, std::move(request))
      .then([self, done](QueueResponse& r) { OnContainerAnswer(self, [&] { done(r); }); },
            [self, done](caf::error& e) {
              OnContainerAnswer(self, [&] {
                QueueResponse failed;
                failed.status = errors::Cancelled("the queue is gone: ", caf::to_string(e));
                done(failed);
              });
            });
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

// On the actor's thread a Send joins the next batch; from elsewhere (a GPU
// _Send hands its tensor over from a pool thread once the device-to-host copy
// is done) it goes at once as its own message (RendezvousAccess::Send is
// thread-safe).
void DeviceRendezvousAccess::Send(int64_t step_id, const RendezvousKey& key, const Tensor& value, bool is_dead) {
  if (t_running_actor != &self_->state) {  // a GPU _Send finishing on a pool thread
    if (rendezvous_) caf::anon_send(rendezvous_, RendezvousSend{step_id, key, value, is_dead});
    return;
  }
  if (first_buffered_ns_ == 0) first_buffered_ns_ = NowNanos();
  out_.sends.push_back({step_id, key, value, is_dead});
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
    done(errors::Unavailable("no rendezvous actor on ", self_->state.device->name()), Tensor(), false);
    return;
  }
  Slot slot;
  slot.callback = std::move(done);
  Want(step_id, key, std::move(slot));
}

void DeviceRendezvousAccess::RecvForNode(StepState* step, IterationState* iter, int32_t node, const RendezvousKey& key) {
  Slot slot;
  slot.step_id = step->step_id();
  slot.iter = iter;
  slot.node = node;
  slot.start_ns = step->collect_stats ? NowNanos() : 0;
  if (!rendezvous_) {
    RecvNodeDone(self_, slot.step_id, iter, node, slot.start_ns,
                 errors::Unavailable("no rendezvous actor on ", self_->state.device->name()), Tensor(), false);
    return;
  }
  Want(step->client_step_id, key, std::move(slot));
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
    else RecvNodeDone(self_, slot.step_id, slot.iter, slot.node, slot.start_ns, item.status, std::move(item.value),
                      item.is_dead);
  }
}

void DeviceRendezvousAccess::Abort(int64_t step_id, const Status& s) {
  Flush();  // what the step sent so far goes first
  if (rendezvous_) self_->send(rendezvous_, RendezvousAbort{step_id, s});
}

void StartStepOrThrow(DeviceActor* self, RunStepRequest& req, caf::response_promise& rp, int64_t* started_id);

// Starts a step; out of memory fails that step alone (answered), never the actor.
void StartStep(DeviceActor* self, RunStepRequest& req) noexcept {
  auto& st = self->state;
  auto rp = self->make_response_promise();
  int64_t id = 0;  // the step's, once it is in st.steps
  try {
    StartStepOrThrow(self, req, rp, &id);
  } catch (...) {  // out of memory for the step's state: that step fails
    if (id != 0) {
      FailStepOnError(self, id);
      RunReadySafely(self);
      return;
    }
    try {
      const Status s = CurrentExceptionStatus("starting a step on " + st.device->name());
      if (req.multi_partition) st.rendezvous->Abort(req.step_id, s);
      rp.deliver(FailedResponse(s));
    } catch (...) {  // not even the answer fits: the client's deadline ends its wait
    }
  }
}

void StartStepOrThrow(DeviceActor* self, RunStepRequest& req, caf::response_promise& rp, int64_t* started_id) {
  auto& st = self->state;
  // A step refused before it starts is aborted at the rendezvous too, as a
  // failing one is: other partitions may wait in Recvs for its Sends.
  auto refuse = [&](const Status& s) {
    if (req.multi_partition) st.rendezvous->Abort(req.step_id, s);
    rp.deliver(FailedResponse(s));
  };
  if (st.shutting_down) {
    refuse(errors::Cancelled("device ", st.device->name(), " is shutting down"));
    return;
  }
  auto g = st.graphs.find(req.graph_handle);
  if (g == st.graphs.end()) {
    // Handles only grow: one we gave out and no longer hold was deregistered.
    const bool dropped = req.graph_handle < st.next_graph_handle && !st.registrations.count(req.graph_handle);
    refuse(dropped ? errors::Cancelled("graph ", req.graph_handle, " was deregistered (session closed)")
                   : errors::NotFound("graph handle ", req.graph_handle, " is not registered on ", st.device->name()));
    return;
  }
  const ExecutorPlan& plan = *g->second;
  if (static_cast<int>(req.args.size()) != plan.num_args()) {
    refuse(errors::InvalidArgument("step ", req.step_id, " passes ", req.args.size(), " arguments, graph takes ",
                                   plan.num_args()));
    return;
  }
  // Steps are keyed by an id of our own: clients' ids may collide.
  const int64_t id = st.next_step_id++;
  ActiveStep active;
  active.state = std::make_unique<StepState>(id, &plan, std::move(req.args));
  active.plan = g->second;
  active.graph_handle = req.graph_handle;
  active.promise = std::move(rp);
  StepState* step = active.state.get();
  step->collect_stats = req.collect_stats;
  step->client_step_id = req.step_id;
  step->multi_partition = req.multi_partition;
  if (req.collect_stats) step->start_ns = NowNanos();
  st.steps.emplace(id, std::move(active));
  *started_id = id;
  if (req.timeout_ms > 0) {
    const auto due = Clock::now() + std::chrono::milliseconds(req.timeout_ms);
    st.deadlines.emplace(due, id);
    if (due < st.armed) {
      st.armed = due;
      self->delayed_send(self, std::chrono::milliseconds(req.timeout_ms), deadline_atom::value);
    }
  }
  step->outstanding = 1;  // held while the roots are queued, so an empty plan also finishes
  IterationState* root = &step->root();
  for (int32_t r : plan.roots()) {
    st.ready.push_back({step, root, r, false});  // counted once queued: a failed push leaves no count behind
    ++step->outstanding;
    ++root->outstanding_ops;
  }
  RunReady(self);
  NodeFinished(self, step);
}

// The last resort when bookkeeping itself throws (out of memory): fail every
// step rather than let the exception kill the actor and drop their replies.
// Steps with kernels still running stay until those return.
// Called in a catch block; never throws.
void FailAllOnError(DeviceActor* self) noexcept {
  auto& st = self->state;
  const Status s = DeviceExceptionStatus(st, " failed");
  for (auto& [id, a] : st.steps) {
    if (a.state->failed()) continue;
    try {
      FailStep(self, a.state.get(), s);
    } catch (...) {
      a.state->Fail(OutOfMemoryStatus());
      try {
        Reply(a);
      } catch (...) {  // not even the answer fits: the client's deadline ends its wait
      }
    }
  }
  // Queued nodes (and finished kernels) of failed steps are skipped or
  // settled by RunReady.
  if ((!st.ready.empty() || !st.completed.empty()) && !st.resume_pending) {
    try {
      self->send(self, resume_atom::value);
      st.resume_pending = true;
    } catch (...) {  // the next message to this actor runs them
    }
  }
}

Status BuildPlanOrThrow(const std::string& graph_def, Device* device, KernelSegment* segment,
                        std::unique_ptr<ExecutorPlan>* plan) {
  proto::GraphDef def;
  if (!def.ParseFromString(graph_def)) return errors::InvalidArgument("cannot parse the GraphDef sent to ", device->name());
  Graph g;
  AF_RETURN_IF_ERROR(ImportGraphDef(def, &g));
  return ExecutorPlan::Build(g, device, plan, segment);
}

// Never throws: the registration must always be answered.
Status BuildPlan(const std::string& graph_def, Device* device, KernelSegment* segment,
                 std::unique_ptr<ExecutorPlan>* plan) noexcept {
  try {
    return BuildPlanOrThrow(graph_def, device, segment, plan);
  } catch (const std::bad_alloc&) {
    return errors::ResourceExhausted("out of memory building the kernels of a graph on ", device->name());
  } catch (const std::exception& e) {
    return errors::Internal("building the kernels of a graph on ", device->name(), " threw: ", e.what());
  }
}

caf::behavior DeviceActorBehavior(DeviceActor* self, Device* device, caf::actor container, caf::actor rendezvous) {
  self->state.device = device;
  self->state.queues = std::make_unique<DeviceQueueAccess>(self, container);
  self->state.variables = std::make_unique<DeviceVariableAccess>(self, std::move(container));
  self->state.rendezvous = std::make_unique<DeviceRendezvousAccess>(self, std::move(rendezvous));
  // On exit: answer every step at once, then stay until kernels still running
  // on the pool have returned (they read the steps' state), then quit.
  self->set_exit_handler([self](const caf::exit_msg& msg) {
    auto& st = self->state;
    st.shutting_down = true;
    st.exit_reason = msg.reason;
    try {
      for (auto& [id, a] : st.steps) {
        a.state->Fail(errors::Cancelled("device ", st.device->name(), " shut down"));
        Reply(a);
      }
      for (auto& [handle, reg] : st.registrations)
        reg.promise.deliver(RegisterGraphResponse{errors::Cancelled("device ", st.device->name(), " shut down"), 0});
    } catch (...) {  // out of memory while shutting down: what was not answered ends by its client's deadline
    }
    st.registrations.clear();
    if (st.steps.empty()) self->quit(msg.reason);
  });
  return {
      // Parsing a GraphDef and building kernels (decoding constants) can take
      // long: it runs on the pool, so steps of other graphs go on meanwhile.
      [self](RegisterGraphRequest& req) {
        auto& st = self->state;
        auto rp = self->make_response_promise();
        if (st.shutting_down) {
          rp.deliver(RegisterGraphResponse{errors::Cancelled("device ", st.device->name(), " is shutting down"), 0});
          return;
        }
        const uint64_t handle = st.next_graph_handle++;
        try {
          auto pending = std::make_shared<PendingGraph>();
          caf::actor me = caf::actor_cast<caf::actor>(self);
          // Made here, so the pool job's report cannot fail for memory and
          // leave the registration unanswered.
          auto built = std::make_shared<caf::mailbox_element_ptr>(caf::make_mailbox_element(
              caf::actor_cast<caf::strong_actor_ptr>(me), caf::make_message_id(), {}, GraphBuilt{handle}));
          std::shared_ptr<KernelSegment> segment;
          if (!req.session_handle.empty() && !st.closed_sessions.count(req.session_handle)) {
            auto& seg = st.segments[req.session_handle];
            if (!seg) seg = std::make_shared<KernelSegment>();
            segment = seg;
          }
          ComputePool* pool = st.device->compute_pool();
          pool->Schedule([pending, me, built, pool, device = st.device, segment, def = std::move(req.graph_def)] {
            pending->status = BuildPlan(def, device, segment.get(), &pending->plan);
            caf::abstract_actor* dest = caf::actor_cast<caf::abstract_actor*>(me);
            try {
              dest->enqueue(std::move(*built), pool->delivery_unit());
            } catch (...) {  // in the mailbox; scheduling the actor threw for memory
              pool->RescheduleAfterFailure(dynamic_cast<caf::resumable*>(dest));
            }
          });
          // Its GraphBuilt is handled after this handler returns.
          st.registrations.emplace(handle, DeviceActorState::Registration{pending, rp});
        } catch (...) {
          st.registrations.erase(handle);
          try {
            rp.deliver(RegisterGraphResponse{CurrentExceptionStatus("registering a graph on " + st.device->name()), 0});
          } catch (...) {  // not even the answer fits: the client's deadline ends its wait
          }
        }
      },
      [self](GraphBuilt& built) {
        auto& st = self->state;
        if (self->current_sender() != self->ctrl()) return;  // only our own pool jobs report here
        auto it = st.registrations.find(built.graph_handle);
        if (it == st.registrations.end()) return;
        auto reg = std::move(it->second);
        st.registrations.erase(it);
        if (!reg.pending->status.ok() || st.shutting_down) {
          Status s = st.shutting_down ? errors::Cancelled("device ", st.device->name(), " is shutting down")
                                      : reg.pending->status;
          reg.promise.deliver(RegisterGraphResponse{s, 0});
          return;
        }
        try {
          auto& plan = reg.pending->plan;
          if (st.inline_outputs.size() < static_cast<size_t>(plan->max_outputs()))
            st.inline_outputs.resize(plan->max_outputs());
          st.graphs.emplace(built.graph_handle, std::shared_ptr<const ExecutorPlan>(std::move(plan)));
          reg.promise.deliver(RegisterGraphResponse{Status::OK(), built.graph_handle});
        } catch (...) {
          st.graphs.erase(built.graph_handle);
          try {
            reg.promise.deliver(
                RegisterGraphResponse{CurrentExceptionStatus("registering a graph on " + st.device->name()), 0});
          } catch (...) {  // not even the answer fits: the client's deadline ends its wait
          }
        }
      },
      [self](RunStepRequest& req) {
        RunningScope running(self);
        StartStep(self, req);
      },
      [self](KernelDone& done) {
        if (self->current_sender() != self->ctrl()) return;  // only our own kernels report here
        RunningScope running(self);
        try {
          KernelFinished(self, done);
          RunReady(self);
        } catch (...) {
          FailAllOnError(self);
        }
      },
      [self](resume_atom) {
        RunningScope running(self);
        self->state.resume_pending = false;
        try {
          RunReady(self);
        } catch (...) {
          FailAllOnError(self);
        }
      },
      [self](queue_inbox_atom) {
        if (self->current_sender() != self->ctrl()) return;
        RunningScope running(self);
        try {
          self->state.queues->DrainInbox();
        } catch (...) {
          FailAllOnError(self);
        }
        RunReadySafely(self);
      },
      [self](deadline_atom) {
        if (self->current_sender() != self->ctrl()) return;
        auto& st = self->state;
        const auto now = Clock::now();
        while (!st.deadlines.empty() && st.deadlines.top().first <= now) {
          const int64_t id = st.deadlines.top().second;
          st.deadlines.pop();
          auto it = st.steps.find(id);
          if (it != st.steps.end() && !it->second.state->replied)
            FailStep(self, it->second.state.get(), errors::DeadlineExceeded("step exceeded its deadline"));
        }
        st.armed = Clock::time_point::max();
        if (!st.deadlines.empty()) {
          try {
            const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(st.deadlines.top().first - now);
            self->delayed_send(self, wait, deadline_atom::value);
            st.armed = st.deadlines.top().first;
          } catch (...) {  // out of memory for the timer: the next step with a deadline arms it again
          }
        }
      },
      [self](RendezvousDeliver& d) {
        RunningScope running(self);
        try {
          self->state.rendezvous->Deliver(d);
        } catch (...) {
          FailAllOnError(self);
        }
        RunReadySafely(self);
      },
      [self](const CloseSession& c) {
        self->state.segments.erase(c.session_handle);
        try {
          self->state.closed_sessions.insert(c.session_handle);
        } catch (...) {  // out of memory: a late registration of that session may build a segment it never uses
        }
      },
      [self](DeregisterGraph& d) {
        for (auto& [id, a] : self->state.steps) {
          if (a.graph_handle != d.graph_handle || a.state->replied) continue;
          try {
            FailStep(self, a.state.get(), errors::Cancelled("graph deregistered (session closed) during step ", id));
          } catch (...) {
            FailStepOnError(self, id);
          }
        }
        self->state.graphs.erase(d.graph_handle);
      },
  };
}

}  // namespace

caf::actor SpawnDeviceActor(caf::actor_system& sys, Device* device, caf::actor container, caf::actor rendezvous) {
  return sys.spawn([device, container, rendezvous](DeviceActor* self) {
    return DeviceActorBehavior(self, device, container, rendezvous);
  });
}

}  // namespace actorflow
