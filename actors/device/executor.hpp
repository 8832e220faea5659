// Executor: runs the steps of registered plans on one Device (TensorFlow's
// Executor, with its Executor::Args as ExecutorServices).
//
// It owns the state of every step in flight and one ready queue for all of
// them. A step starts from its plan's root nodes; ready nodes run in a loop:
// cheap kernels inline, expensive kernels with large inputs on the device's
// compute pool, asynchronous kernels started and left to call back. A node
// that ran elsewhere comes back as a KernelDone, handed to the host's thread.
// There is no message per node. A node taking a variable's value through a
// ref edge first reads it from the container (one request per step for all
// nodes waiting when the queue drains), then runs.
//
// The executor reaches the outside only through ExecutorServices: the
// variable, rendezvous and queue access its kernels use, and an ExecutorHost
// that resumes it later, arms deadline timers and brings completions back to
// its thread. The device actor (actors/device/device_actor.cpp) is such a
// host; tests/executor_test.cpp drives an executor without one.
//
// Threading: every member is called on the host's thread (one at a time),
// inside a RunningScope; kernels on the pool touch only their own node's
// input slots and outputs. A kernel error or a deadline ends only its own
// step: the reply goes out at once, and the step's state is dropped when its
// last running kernel returns. Nothing here throws out of a public member:
// out of memory in bookkeeping fails the step (or the steps) it concerns.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/fwd.hpp>
#include <caf/mailbox_element.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "actorflow/actors/device/executor_plan.hpp"
#include "actorflow/actors/device/step_state.hpp"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/inline_delivery.hpp"
#include "actorflow/net/worker_service.hpp"
#include "actorflow/ops/queue/queue_access.hpp"
#include "actorflow/ops/sendrecv/rendezvous_access.hpp"
#include "actorflow/ops/state/variable_access.hpp"

namespace actorflow {

class CollectiveAccess;
class Device;
class Executor;

/// A kernel that ran off the executor's thread (on the pool, or
/// asynchronously) finished. Private to one process: it carries a pointer.
struct KernelDone {
  /// node_id of the completion of Device::Sync at a step's end.
  static constexpr int32_t kDeviceSync = -2;
  int64_t step_id = 0;  // the executor's id of the step
  int32_t node_id = 0;
  Status status;
  std::vector<Tensor> outputs;
  int64_t start_ns = 0;  // steady clock, for step stats
  int64_t end_ns = 0;
  uint64_t thread = 0;
  IterationState* iteration = nullptr;  // kept alive by the node
  bool is_dead = false;
};

/// What the executor needs from whoever runs it.
class ExecutorHost {
 public:
  virtual ~ExecutorHost() = default;
  /// "Resume me later": call Executor::Resume from the host's loop, after
  /// what already waits there (the executor yields every ~0.5 ms).
  virtual void ScheduleResume() = 0;
  /// Call Executor::DeadlinesDue after `delay`.
  virtual void ArmDeadline(std::chrono::nanoseconds delay) = 0;
  /// A message holding a KernelDone, made before a kernel starts off the
  /// host's thread, so that delivering its completion cannot fail for memory.
  virtual caf::mailbox_element_ptr MakeCompletion() = 0;
  /// How a completion made by MakeCompletion reaches the host's thread, which
  /// calls Executor::KernelFinished with it: `deliver(context, message)`, from
  /// any thread, never throwing. Taken when a kernel starts and used when it
  /// ends, without touching the host or the executor then: `context` must
  /// outlive every kernel (the device actor's is its compute pool; the
  /// message's sender keeps the actor itself alive).
  struct CompletionSink {
    void (*deliver)(void* context, caf::mailbox_element_ptr done) noexcept = nullptr;
    void* context = nullptr;
  };
  virtual CompletionSink completion_sink() = 0;
  /// The last step ended after Executor::Shutdown.
  virtual void Drained() noexcept = 0;
};

/// Rendezvous access as the executor uses it: Sends and Recvs are batched
/// until Flush; a _Recv node it serves itself waits without a kernel start.
class ExecutorRendezvous : public RendezvousAccess {
 public:
  /// Waits for the tensor of `key` for `node` of step `step` (the executor's
  /// id) in `iter`; when it comes, calls Executor::RecvNodeDone.
  virtual void RecvForNode(int64_t step, int64_t client_step_id, IterationState* iter, int32_t node,
                           int64_t start_ns, const RendezvousKey& key) = 0;
  /// Fails the step's Recvs everywhere (the step's other partitions too).
  virtual void Abort(int64_t client_step_id, const Status& s) = 0;
  /// Sends what the kernels asked for since the last flush.
  virtual void Flush() = 0;
  /// Whether something has waited long enough to go out before the ready
  /// queue drains (a long inline chain must not hold a Send back).
  bool Due() const { return first_buffered_ns_ != 0 && NowNanos() - first_buffered_ns_ > kMaxBatchDelayNs; }

 protected:
  static constexpr int64_t kMaxBatchDelayNs = 30'000;
  int64_t first_buffered_ns_ = 0;  // when the batch got its first item; 0 while it is empty
};

/// Queue access as the executor uses it: requests of a failed step are cancelled.
class ExecutorQueues : public QueueAccess {
 public:
  /// Fails the requests step `client_step_id` waits for in queues with `s`.
  virtual void CancelStep(int64_t client_step_id, const Status& s) = 0;
  /// The step is over: forget which queues it used.
  virtual void StepEnded(int64_t client_step_id) = 0;
};

/// The outside world as the executor and its kernels reach it (TensorFlow's
/// Executor::Args). Any access may be null: kernels needing it then fail.
struct ExecutorServices {
  Device* device = nullptr;
  ExecutorHost* host = nullptr;
  VariableAccess* variables = nullptr;
  ExecutorRendezvous* rendezvous = nullptr;
  ExecutorQueues* queues = nullptr;
  CollectiveAccess* collectives = nullptr;  // the process's
};

class Executor {
 public:
  using Reply = std::function<void(RunStepResponse&&)>;

  explicit Executor(const ExecutorServices& services);
  ~Executor();
  /// Replaces the services (before the first step: accesses that need the
  /// executor's address are made after it).
  void set_services(const ExecutorServices& services) { services_ = services; }
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Marks this thread as running the executor's host handler, so kernels
  /// finishing inside it hand over their results without a message.
  /// `worker`: the host's CAF execution unit, if any.
  class RunningScope {
   public:
    RunningScope(Executor* executor, caf::execution_unit* worker);
    ~RunningScope();
    RunningScope(const RunningScope&) = delete;
    RunningScope& operator=(const RunningScope&) = delete;

   private:
    const Executor* prev_;
    ComputePool::ActorHandlerScope handler_;  // the handler's first pool job runs next on its worker
    WakeAfterHandlerScope wakes_;  // clients the handler answers are woken after its turn
  };
  /// Whether this thread is inside a RunningScope of this executor.
  bool OnThisThread() const;

  /// Starts a step of `plan` (registered as `graph_handle`) with the
  /// request's arguments; `reply` answers it, once. Out of memory fails that
  /// step alone.
  void StartStep(std::shared_ptr<const ExecutorPlan> plan, uint64_t graph_handle, RunStepRequest& req,
                 Reply reply) noexcept;
  /// A completion the host brought back (ExecutorHost::DeliverCompletion).
  void KernelFinished(KernelDone& done) noexcept;
  /// Runs what is ready (after KernelFinished, or anything else that queued nodes).
  void Run() noexcept;
  /// Runs what is ready when the host resumes the executor (ExecutorHost::ScheduleResume).
  void Resume() noexcept;
  /// Fails the steps whose deadline has passed (ExecutorHost::ArmDeadline).
  void DeadlinesDue() noexcept;
  /// The tensor (or error) for a _Recv node the rendezvous served directly
  /// (ExecutorRendezvous::RecvForNode), checked as its kernel would.
  void RecvNodeDone(int64_t step, IterationState* iter, int32_t node, int64_t start_ns, const Status& status,
                    Tensor value, bool is_dead);
  /// Runs `fn`, a kernel's callback for an answer from another actor, then
  /// what became ready; an exception fails the steps, never the host.
  template <class Fn>
  void RunCallback(Fn&& fn) noexcept {
    try {
      fn();
    } catch (...) {
      FailAllOnError();
    }
    Run();
  }
  /// Fails the unanswered steps of `graph_handle` (it is being deregistered)
  /// with `why`'s code and message, then " during step <id>".
  void CancelSteps(uint64_t graph_handle, const Status& why) noexcept;
  /// Answers every step with `s` at once; from now on, when the last running
  /// kernel returned, the host's Drained is called (at once if idle).
  void Shutdown(const Status& s) noexcept;
  /// Makes room for the outputs of a plan's nodes run inline.
  void ReserveOutputs(int max_outputs);
  bool idle() const { return steps_.empty(); }

 private:
  struct ActiveStep {
    std::unique_ptr<StepState> state;
    std::shared_ptr<const ExecutorPlan> plan;  // kept alive by its steps after deregistration
    uint64_t graph_handle = 0;
    Executor::Reply reply;
  };
  struct OffHostRun;
  using Clock = std::chrono::steady_clock;
  // Answers a step that will not start (or run) with `s`, aborting it at the
  // rendezvous first when other partitions share it (they may wait in Recvs
  // for its Sends). A reply that fails is left to the client's deadline.
  void RefuseStart(const RunStepRequest& req, const Reply& reply, const Status& s) noexcept;

  // The loop (executor.cpp).
  void RunReady();
  void ExecuteNode(StepState* step, IterationState* iter, int32_t node, bool dead);
  void StartRecv(StepState* step, IterationState* iter, int32_t node);
  void Propagate(StepState* step, IterationState* iter, int32_t node, const Status& status, Tensor* outputs,
                 bool is_dead = false);
  void NodeFinished(StepState* step);
  /// The step's nodes have all run on a device that enqueues work
  /// (Device::SyncsAtStepEnd): finishes it once that work has run.
  void SyncDevice(StepState* step);
  /// OK unless `value`, read from the variable `ref` names, is in another
  /// device's memory (executor_reads.cpp).
  Status CheckReadable(const Tensor& value, const Tensor& ref) const;
  void FailStep(StepState* step, const Status& s);
  void FailStepOnError(int64_t step_id) noexcept;
  void FailAllOnError() noexcept;
  void Answer(ActiveStep& a);
  void StartStepOrThrow(std::shared_ptr<const ExecutorPlan> plan, uint64_t graph_handle, RunStepRequest& req,
                        Reply* reply, int64_t* started_id, bool* holding);
  // Kernel launch (executor_launch.cpp).
  /// Runs a kernel, turning an escaping exception into the node's Status: an
  /// exception must never reach the host. `async_inline`: an asynchronous
  /// kernel whose RunsInline said yes.
  static void ComputeSafely(OpKernel* kernel, OpKernelContext* ctx, bool async_inline = false) noexcept;
  void MakeParams(StepState* step, IterationState* iter, const NodeItem& item, Tensor* inputs, Tensor* outputs,
                  bool dead, OpKernelContext::Params* p) const;
  /// Frees what a failed kernel left in its `n` outputs (the slots stay, empty).
  static void ReleaseOutputs(Tensor* outputs, int n) noexcept {
    for (int i = 0; i < n; ++i) outputs[i] = Tensor();
  }
  void LaunchOffHost(StepState* step, IterationState* iter, int32_t node, const NodeItem& item, Tensor* inputs,
                     bool dead);
  // Variable reads (executor_reads.cpp).
  void SendReads();
  void SendStepReads(StepState* step, const TaggedNode* nodes, size_t num_nodes) noexcept;
  void SkipFailedNode(StepState* step, const TaggedNode& t) noexcept;
  template <class Fills, class Reading>
  void FinishStepReads(StepState* step, const Fills& fills, const Reading& reading, Status status, Tensor* values,
                       size_t num_values);
  // CUDA-graph capture (executor_capture.cpp, actors/device/step_capture.hpp).
  /// Sets how a new step of `graph_handle` runs (watched, replayed).
  void SetUpCapture(StepState* step, uint64_t graph_handle, const std::shared_ptr<const ExecutorPlan>& plan);
  /// Whether the capture took ready node `t` (parked, skipped, served); false: it runs as usual.
  bool CaptureIntercepts(const TaggedNode& t);
  /// Node `node` of a watched step finished with `outputs` (a _Recv's tensor, a variable's handle).
  void CaptureSawNode(StepState* step, int32_t node, const Tensor* outputs);
  /// The step's nodes are all done: counts it, or ends its dry run.
  void CaptureStepEnded(StepState* step) noexcept;
  /// Starts a due dry run when no step runs; then the starts that waited for it.
  void MaybeCapture() noexcept;
  void StartDryRun(uint64_t graph_handle, const std::shared_ptr<StepCapture>& capture);
  /// Steps that were started during a dry run: refused with `why`, or (OK) started.
  void EndDeferred(const Status& why, uint64_t only_handle = 0) noexcept;
  /// A replay's _Recvs are all in: replays it, or lets it run as usual.
  void DecideReplay(StepState* step);
  void Unpark(StepState* step);
  void RecordCaptureStats(StepState* step, const std::string& what);

  ExecutorServices services_;
  std::unordered_map<int64_t, ActiveStep> steps_;  // by our own id: clients' ids may collide
  int64_t next_step_id_ = 1;
  std::vector<TaggedNode> ready_;           // LIFO: depth-first keeps fewer tensors alive
  std::vector<TaggedNode> read_wait_;       // ready but for their variables: read in one batch per step
  std::vector<Tensor> inline_outputs_;      // scratch outputs of the node running inline
  std::vector<KernelDone> completed_;       // kernels that finished on this thread, not yet propagated
  bool resume_pending_ = false;             // the host will call Resume
  // Step deadlines, earliest first. One timer is kept armed for the earliest
  // (CAF 0.17 cannot cancel a delayed message); entries of steps that ended
  // are skipped when they come due.
  using Deadline = std::pair<Clock::time_point, int64_t>;
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<Deadline>> deadlines_;
  Clock::time_point armed_ = Clock::time_point::max();
  bool shutting_down_ = false;
  // Per registered partition (graph handle); a dry run holds the device, and
  // steps that start meanwhile wait in deferred_.
  std::unordered_map<uint64_t, std::shared_ptr<StepCapture>> captures_;
  bool dry_run_ = false;
  struct DryRunSetUp {  // what SetUpCapture gives the dry run's step
    std::shared_ptr<StepCapture> capture;
    std::vector<Tensor> inputs;
    CaptureArena* arena = nullptr;
  };
  DryRunSetUp* pending_dry_run_ = nullptr;
  std::vector<Tensor> placeholders_;  // by DataType: the outputs of a replay's skipped nodes
  struct DeferredStart {
    std::shared_ptr<const ExecutorPlan> plan;
    uint64_t graph_handle;
    RunStepRequest req;
    Reply reply;
  };
  std::vector<DeferredStart> deferred_;
};

}  // namespace actorflow

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorflow::KernelDone)
