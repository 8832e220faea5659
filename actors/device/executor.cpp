// The executor's loop: steps, the ready queue, propagation and failure.
// Kernel launch is in executor_launch.cpp, variable reads in executor_reads.cpp.
#include "actorflow/actors/device/executor.hpp"

#include <algorithm>
#include <string>

#include "actorflow/actors/device/propagation.hpp"
#include "actorflow/core/exception_status.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/ops/sendrecv/sendrecv_common.hpp"

namespace actorflow {

namespace {

// How long ready nodes run per call before the executor yields to its host's
// mailbox (deadlines, other steps' messages); the clock is read every
// kNodesPerClockCheck passes (nodes run, completions handled), the batch
// starting at the first reading.
constexpr auto kBatchTime = std::chrono::microseconds(500);
constexpr int kNodesPerClockCheck = 64;

// The executor whose host handler runs on this thread, if any: an
// asynchronous kernel finishing inside it (a small MatMul computed at once, a
// variable update whose answer just arrived) is handed over without a message.
thread_local const Executor* t_running_executor = nullptr;

Status NodeError(const StepState& step, int32_t node, const Status& s) {
  const OpKernel* k = step.plan().item(node).kernel;
  return Status(s.code(), "node '" + k->name() + "' (op '" + k->type_string() + "'): " + s.message());
}

// The ready queue is LIFO: _Send/_Recv nodes among those queued from
// `first_new` on go on top, so a transfer another device waits for is not
// held back behind a long chain run here.
[[gnu::noinline]] void TransfersFirst(const ExecutorPlan& plan, std::vector<TaggedNode>* ready, size_t first_new) {
  std::stable_partition(ready->begin() + static_cast<std::ptrdiff_t>(first_new), ready->end(),
                        [&](const TaggedNode& r) { return !plan.item(r.node).is_transfer; });
}

bool DerefDone(const IterationState& iter, const NodeItem& item) {
  const uint8_t* d = iter.derefed.data() + item.deref_local;
  for (int32_t k = 0; k < item.num_deref; ++k)
    if (!d[k]) return false;
  return true;
}

}  // namespace

Executor::Executor(const ExecutorServices& services) : services_(services) {}
Executor::~Executor() = default;

Executor::RunningScope::RunningScope(Executor* executor, caf::execution_unit* worker)
    : prev_(t_running_executor), handler_(worker) {
  t_running_executor = executor;
}
Executor::RunningScope::~RunningScope() { t_running_executor = prev_; }

bool Executor::OnThisThread() const { return t_running_executor == this; }

void Executor::RefuseStart(const RunStepRequest& req, const Reply& reply, const Status& s) noexcept {
  try {
    if (req.multi_partition && services_.rendezvous) services_.rendezvous->Abort(req.step_id, s);
    RunStepResponse r;
    r.status = s;
    if (reply) reply(std::move(r));
  } catch (...) {  // not even the answer fits: the client's deadline ends its wait
  }
}

void Executor::ReserveOutputs(int max_outputs) {
  if (inline_outputs_.size() < static_cast<size_t>(max_outputs)) inline_outputs_.resize(max_outputs);
}

void Executor::Answer(ActiveStep& a) {
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
  try {
    a.reply(std::move(resp));
  } catch (...) {  // not sent (no memory for the reply message): a later answer may still go
    s.replied = false;
    throw;
  }
}

void Executor::FailStep(StepState* step, const Status& s) {
  // The first error of a step that other partitions share aborts it there
  // too: their waiting Recvs fail instead of waiting for our Sends.
  if (!step->failed()) {
    if (step->multi_partition && services_.rendezvous) services_.rendezvous->Abort(step->client_step_id, s);
    if (services_.queues) services_.queues->CancelStep(step->client_step_id, s);
  }
  step->Fail(s);
  if (!step->parked.empty()) {  // a replay waiting for its _Recvs: its nodes end as a failed step's
    Unpark(step);
    if (!resume_pending_) {
      services_.host->ScheduleResume();
      resume_pending_ = true;
    }
  }
  auto it = steps_.find(step->step_id());
  if (it != steps_.end()) Answer(it->second);
}

// One node of `step` is done (ran, failed or was skipped).
void Executor::NodeFinished(StepState* step) {
  if (--step->outstanding > 0) return;
  if (!step->device_synced && !step->failed() && services_.device->SyncsAtStepEnd() &&
      step->capture_mode != CaptureMode::kDryRun) {  // a dry run executed nothing
    SyncDevice(step);
    return;
  }
  auto it = steps_.find(step->step_id());
  if (step->capture_mode != CaptureMode::kNone) CaptureStepEnded(step);
  try {
    Answer(it->second);
  } catch (...) {  // no memory for the answer's message: once more as a failure, then the step ends all the same
    step->Fail(OutOfMemoryStatus());
    try {
      Answer(it->second);
    } catch (...) {  // the client's deadline ends its wait
    }
  }
  if (services_.queues) services_.queues->StepEnded(step->client_step_id);
  // Nothing runs for the step any more: its root iteration serves the next.
  if (!it->second.plan->spare_root()) it->second.plan->spare_root() = step->TakeRoot();
  steps_.erase(it);
  // The client is woken once this actor's turn is over (WakeAfterHandler),
  // after this cleanup; with other steps' work still to run here, now.
  if (!ready_.empty() || !completed_.empty() || !read_wait_.empty()) RunKeptWakes();
  if (shutting_down_ && steps_.empty()) services_.host->Drained();
  bool due = !deferred_.empty();
  for (auto c = captures_.begin(); !due && steps_.empty() && c != captures_.end(); ++c) due = c->second->CaptureDue();
  if (!dry_run_ && due && !resume_pending_) {
    services_.host->ScheduleResume();  // a capture, or the starts that waited for one, at the next turn
    resume_pending_ = true;
  }
}

namespace {
// A string output's characters (the heap bytes of strings longer than the
// inline buffer) count against its device's budget while the tensor lives,
// for every kernel: counted here, once, unless the kernel that made the tensor
// counted them as it filled it (Fill does, before it allocates them). A
// tensor of long strings over the budget fails its node with
// ResourceExhausted, as a numeric tensor's allocation would. Limits: a buffer
// counted once is not counted again (a kernel that forwarded it and made its
// strings longer in place would be under-counted; no kernel here changes a
// tensor's strings once made), and an output whose strings all fit their
// inline buffer is scanned again at each node that outputs it (linear in its
// element count, as copying it would be).
Status ChargeStringOutput(Tensor* t) {
  const TensorBuffer* buf = t->buffer();
  if (t->dtype() != DT_STRING || buf == nullptr || buf->heap_bytes() != 0) return Status::OK();
  return t->ChargeStringBytes(StringHeapBytes(*t));
}
}  // namespace

// Hands a finished node's outputs to its consumers and queues those now
// ready (through frames and iterations: actors/device/propagation.hpp).
void Executor::Propagate(StepState* step, IterationState* iter, int32_t node, const Status& status, Tensor* outputs,
                         bool is_dead) {
  const ExecutorPlan& plan = step->plan();
  const NodeItem& item = plan.item(node);
  Tensor* inputs = iter->inputs.data() + item.input_start;
  for (int i = 0; i < item.num_inputs; ++i) inputs[i] = Tensor();  // last use of these slots
  if (!status.ok()) {
    ReleaseOutputs(outputs, item.num_outputs);  // before answering the step needs memory
    FailStep(step, NodeError(*step, node, status));
  } else if (!step->failed()) {
    for (int i = 0; i < item.num_outputs && !is_dead; ++i) {
      // A ref output carries the variable's handle (core/resource_handle.hpp).
      const DataType want = IsRefType(item.kernel->output_type(i)) ? DT_STRING : item.kernel->output_type(i);
      if (outputs[i].IsInitialized() ? outputs[i].dtype() == want
                                     : item.kind == NodeKind::kSwitch || item.is_transfer) {  // dead by design
        const Status charged = want == DT_STRING && !IsRefType(item.kernel->output_type(i))
                                   ? ChargeStringOutput(&outputs[i])
                                   : Status::OK();
        if (charged.ok()) continue;
        ReleaseOutputs(outputs, item.num_outputs);
        FailStep(step, NodeError(*step, node, charged));
        break;
      }
      FailStep(step, NodeError(*step, node,
                               errors::Internal("kernel produced ",
                                                outputs[i].IsInitialized() ? DataTypeString(outputs[i].dtype())
                                                                           : "no value",
                                                " for output ", i, ", expected ",
                                                DataTypeString(item.kernel->output_type(i)))));
      break;
    }
    if (!step->failed() && step->capture_mode != CaptureMode::kNone) CaptureSawNode(step, node, outputs);
    if (!step->failed()) {
      const size_t first_new = ready_.size();
      // A _Recv whose tensor came dead is dead as a whole (its control edges too).
      if (item.is_transfer && item.num_outputs > 0 && !outputs[0].IsInitialized()) is_dead = true;
      PropagateOutputs(step, iter, node, outputs, is_dead, &ready_);
      if (plan.has_transfers()) {
        bool transfer = false;
        for (size_t i = first_new; i < ready_.size() && !transfer; ++i)
          transfer = plan.item(ready_[i].node).is_transfer;
        if (transfer) TransfersFirst(plan, &ready_, first_new);
      }
    }
  }
  for (int i = 0; i < item.num_outputs; ++i) outputs[i] = Tensor();  // outputs nobody consumes die here
  if (!step->parked.empty() && step->failed()) Unpark(step);  // a held replay failed: its nodes end too
  NodeFinished(step);
}

[[gnu::noinline]] void Executor::SyncDevice(StepState* step) {
  step->device_synced = true;
  caf::mailbox_element_ptr msg;
  try {
    msg = services_.host->MakeCompletion();
  } catch (...) {
    FailStep(step, errors::ResourceExhausted("no memory to wait for ", services_.device->name(),
                                             " at the end of step ", step->client_step_id));
    NodeFinished(step);
    return;
  }
  ++step->outstanding;
  const ExecutorHost::CompletionSink sink = services_.host->completion_sink();
  const int64_t step_id = step->step_id();
  // The callback shares nothing with the executor: only `sink` (as a kernel's end).
  auto* owned = msg.release();
  services_.device->Sync([owned, sink, step_id](const Status& s) noexcept {
    caf::mailbox_element_ptr m(owned);
    KernelDone& d = m->content().get_mutable_as<KernelDone>(0);
    d.step_id = step_id;
    d.node_id = KernelDone::kDeviceSync;
    d.status = s;
    sink.deliver(sink.context, std::move(m));
  });
}

void Executor::KernelFinished(KernelDone& done) noexcept {
  try {
    auto it = steps_.find(done.step_id);
    if (it == steps_.end()) return;
    StepState* step = it->second.state.get();
    if (done.node_id == KernelDone::kDeviceSync) {
      if (!done.status.ok())
        FailStep(step, done.status.WithContext("the step's work on " + services_.device->name()));
      NodeFinished(step);
      return;
    }
    if (done.node_id < 0 || done.node_id >= step->plan().num_nodes() ||
        static_cast<int>(done.outputs.size()) != step->plan().item(done.node_id).num_outputs)
      return;
    if (step->collect_stats && done.start_ns != 0)
      step->RecordStats(done.node_id, step->plan().item(done.node_id).is_async ? "async" : "pool", done.start_ns,
                        done.end_ns, done.thread, done.outputs.data());
    // A completion whose delivery could not be scheduled for about a second
    // (ComputePool::RescheduleAfterFailure) ends its step: memory is exhausted,
    // and the step's tensors are what can be given back.
    if (done.status.ok() && ComputePool::InFailedScheduleRun()) {
      ReleaseOutputs(done.outputs.data(), static_cast<int>(done.outputs.size()));
      done.status = errors::ResourceExhausted("out of memory on ", services_.device->name(),
                                              ": the kernel's completion could not be scheduled for ",
                                              ComputePool::kRescheduleAttempts, " tries");
    }
    // The iteration is alive: the node kept it from finishing.
    Propagate(step, done.iteration, done.node_id, done.status, done.outputs.data(), done.is_dead);
  } catch (...) {
    FailStepOnError(done.step_id);
  }
}

void Executor::RecvNodeDone(int64_t step_id, IterationState* iter, int32_t node, int64_t start_ns,
                            const Status& status, Tensor value, bool is_dead) {
  auto it = steps_.find(step_id);
  if (it == steps_.end()) return;
  StepState* step = it->second.state.get();
  const NodeItem& item = step->plan().item(node);
  const Status checked = CheckReceived(*item.kernel, status, value, is_dead);
  Tensor* outputs = inline_outputs_.data();
  if (checked.ok() && !is_dead) outputs[0] = std::move(value);  // dead: no value
  if (step->collect_stats && start_ns != 0)
    step->RecordStats(node, "recv", start_ns, NowNanos(), ThisThreadId(), outputs);
  Propagate(step, iter, node, checked, outputs, is_dead);
}

// Out of line: keeps ExecuteNode, the executor's hot path, small.
[[gnu::noinline]] void Executor::StartRecv(StepState* step, IterationState* iter, int32_t node) {
  const int64_t start_ns = step->collect_stats ? NowNanos() : 0;
  if (!services_.rendezvous) {
    RecvNodeDone(step->step_id(), iter, node, start_ns,
                 errors::Unavailable("no rendezvous actor on ", services_.device->name()), Tensor(), false);
    return;
  }
  if (iter->frame->id == 0 && iter->iter == 0) {
    services_.rendezvous->RecvForNode(step->step_id(), step->client_step_id, iter, node, start_ns,
                                      step->plan().recv_key(node));
    return;
  }
  services_.rendezvous->RecvForNode(step->step_id(), step->client_step_id, iter, node, start_ns,
                                    step->plan().direct_recv(node).rendezvous_key_in(iter->frame->id, iter->iter));
}

// Runs one ready node whose inputs are all in place: inline, on the pool, or
// started asynchronously.
void Executor::ExecuteNode(StepState* step, IterationState* iter, int32_t node, bool dead) {
  const NodeItem& item = step->plan().item(node);
  Tensor* inputs = iter->inputs.data() + item.input_start;
  if (step->failed()) {  // skip the rest of a failed step
    for (int i = 0; i < item.num_inputs; ++i) inputs[i] = Tensor();
    NodeFinished(step);
    return;
  }
  if (dead && !item.is_transfer) {  // does not run; its outputs are dead
    if (item.is_retval) {
      // Its name is that of the fetched tensor (graph/subgraph.cpp).
      FailStep(step, NodeError(*step, node,
                               errors::InvalidArgument("the fetched tensor has no value: it is dead (it depends on "
                                                       "the side of a Switch that was not taken)")));
      NodeFinished(step);
      return;
    }
    Propagate(step, iter, node, Status::OK(), inline_outputs_.data(), true);
    return;
  }
  bool offload = item.is_async;
  bool async_inline = false;
  try {
    if (offload && item.is_direct_recv) {  // a _Recv: waits for its tensor without a thread or a kernel start
      StartRecv(step, iter, node);
      return;
    }
    if (offload && item.kernel->AsAsync()->RunsInline(inputs, item.num_inputs)) offload = false, async_inline = true;
    offload = offload || (!async_inline && item.kernel->ShouldOffload(inputs, item.num_inputs));
    if (offload) {
      LaunchOffHost(step, iter, node, item, inputs, dead);
      return;
    }
  } catch (const std::exception& e) {  // nothing was started: the node fails here
    Propagate(step, iter, node, errors::ResourceExhausted("could not start the kernel: ", e.what()),
              inline_outputs_.data());
    return;
  }
  OpKernelContext::Params p;
  MakeParams(step, iter, item, inputs, inline_outputs_.data(), dead, &p);
  OpKernelContext ctx(&p);
  if (step->collect_stats) {
    const int64_t start = NowNanos();
    ComputeSafely(item.kernel, &ctx, async_inline);
    step->RecordStats(node, "inline", start, NowNanos(), ThisThreadId(), inline_outputs_.data());
  } else {
    ComputeSafely(item.kernel, &ctx, async_inline);
  }
  Propagate(step, iter, node, ctx.status(), inline_outputs_.data(), dead);
}

namespace {
// Whether the batch whose end is `*end` is used up; the first call starts it.
bool PastBatch(std::chrono::steady_clock::time_point* end) {
  const auto now = std::chrono::steady_clock::now();
  if (*end == std::chrono::steady_clock::time_point{}) *end = now + kBatchTime;
  return now > *end;
}
}  // namespace

// Runs ready nodes until the queue is empty or the batch is used up; then
// resumes through the host, so other messages are handled in between.
void Executor::RunReady() {
  // The batch's clock starts at its first check: a short run (most steps'
  // turns) reads no clock at all.
  std::chrono::steady_clock::time_point batch_end{};
  for (int n = 1;; ++n) {
    if (ready_.empty() && completed_.empty()) {
      if (read_wait_.empty()) {
        if (services_.rendezvous) services_.rendezvous->Flush();  // the Sends and Recvs of what ran
        break;
      }
      // Drained: the waiting reads go out (a malformed handle fails its
      // node, which may make others ready).
      SendReads();
      continue;
    }
    // Every pass counts (a node run or a completion handled): a loop whose
    // kernels complete at once still yields.
    if (n % kNodesPerClockCheck == 0 && PastBatch(&batch_end)) {
      if (!resume_pending_) {
        services_.host->ScheduleResume();
        resume_pending_ = true;
      }
      if (!read_wait_.empty()) SendReads();
      if (services_.rendezvous) services_.rendezvous->Flush();
      return;
    }
    if (!completed_.empty()) {
      KernelDone done = std::move(completed_.back());
      completed_.pop_back();
      KernelFinished(done);
      continue;
    }
    const TaggedNode t = ready_.back();
    ready_.pop_back();
    const int64_t step_id = t.step->step_id();
    try {
      const NodeItem& item = t.step->plan().item(t.node);
      if (t.step->capture_mode != CaptureMode::kNone && !t.step->failed() && CaptureIntercepts(t)) continue;
      if (item.num_deref > 0 && !t.dead && !t.step->failed() && !DerefDone(*t.iter, item)) read_wait_.push_back(t);
      else ExecuteNode(t.step, t.iter, t.node, t.dead);
    } catch (...) {  // its bookkeeping ran out of memory: that step fails, the others go on
      FailStepOnError(step_id);
    }
    if (services_.rendezvous && services_.rendezvous->Due()) services_.rendezvous->Flush();
  }
}

// RunReady from a callback: an exception fails the steps, not the host.
void Executor::Run() noexcept {
  try {
    RunReady();
  } catch (...) {
    FailAllOnError();
  }
}

void Executor::Resume() noexcept {
  resume_pending_ = false;
  MaybeCapture();
  Run();
}

// Called in a catch block when the bookkeeping of one step threw (out of
// memory growing a queue or a frame): that step fails with the exception's
// Status and is answered; the others go on. A step gone already is ignored.
void Executor::FailStepOnError(int64_t step_id) noexcept {
  const Status s = CurrentExceptionStatusWith([&] { return "device " + services_.device->name(); });
  auto it = steps_.find(step_id);
  if (it == steps_.end()) return;
  try {
    FailStep(it->second.state.get(), s);
  } catch (...) {  // no memory to fail it the usual way: mark it failed and answer
    it->second.state->Fail(OutOfMemoryStatus());
    try {
      Answer(it->second);
    } catch (...) {  // not even the answer fits: the client's deadline ends its wait
    }
  }
}

// The last resort when bookkeeping itself throws (out of memory): fail every
// step rather than let the exception reach the host and drop their replies.
// Steps with kernels still running stay until those return.
// Called in a catch block; never throws.
void Executor::FailAllOnError() noexcept {
  const Status s = CurrentExceptionStatusWith([&] { return "device " + services_.device->name() + " failed"; });
  for (auto& [id, a] : steps_) {
    if (a.state->failed()) continue;
    try {
      FailStep(a.state.get(), s);
    } catch (...) {
      a.state->Fail(OutOfMemoryStatus());
      try {
        Answer(a);
      } catch (...) {  // not even the answer fits: the client's deadline ends its wait
      }
    }
  }
  // Queued nodes (and finished kernels) of failed steps are skipped or
  // settled by RunReady.
  if ((!ready_.empty() || !completed_.empty()) && !resume_pending_) {
    try {
      services_.host->ScheduleResume();
      resume_pending_ = true;
    } catch (...) {  // the next message to the host runs them
    }
  }
}

void Executor::StartStepOrThrow(std::shared_ptr<const ExecutorPlan> plan_ptr, uint64_t graph_handle,
                                RunStepRequest& req, Executor::Reply* reply, int64_t* started_id,
                                bool* holding) {
  auto refuse = [&](const Status& s) { RefuseStart(req, *reply, s); };
  if (shutting_down_) {
    refuse(errors::Cancelled("device ", services_.device->name(), " is shutting down"));
    return;
  }
  const ExecutorPlan& plan = *plan_ptr;
  if (static_cast<int>(req.args.size()) != plan.num_args()) {
    refuse(errors::InvalidArgument("step ", req.step_id, " passes ", req.args.size(), " arguments, graph takes ",
                                   plan.num_args()));
    return;
  }
  ReserveOutputs(plan.max_outputs());
  const int64_t id = next_step_id_++;
  ActiveStep active;
  active.state = std::make_unique<StepState>(id, &plan, std::move(req.args), std::move(plan.spare_root()));
  active.plan = std::move(plan_ptr);
  active.graph_handle = graph_handle;
  StepState* step = active.state.get();
  step->collect_stats = req.collect_stats;
  step->client_step_id = req.step_id;
  step->multi_partition = req.multi_partition;
  if (req.collect_stats) step->start_ns = NowNanos();
  // The reply moves in once the step is in place: a failed emplace leaves it
  // with the caller, who answers.
  ActiveStep& placed = steps_.emplace(id, std::move(active)).first->second;
  placed.reply = std::move(*reply);
  *started_id = id;
  step->outstanding = 1;  // held while the roots are queued, so an empty plan also finishes
  *holding = true;
  SetUpCapture(step, graph_handle, placed.plan);
  if (req.timeout_ms > 0) {
    const auto due = Clock::now() + std::chrono::milliseconds(req.timeout_ms);
    deadlines_.emplace(due, id);
    if (due < armed_) {
      armed_ = due;
      services_.host->ArmDeadline(std::chrono::milliseconds(req.timeout_ms));
    }
  }
  IterationState* root = &step->root();
  for (int32_t r : plan.roots()) {
    ready_.push_back({step, root, r, false});  // counted once queued: a failed push leaves no count behind
    ++step->outstanding;
    ++root->outstanding_ops;
  }
  RunReady();
  *holding = false;
  NodeFinished(step);
}

void Executor::DeadlinesDue() noexcept {
  const auto now = Clock::now();
  while (!deadlines_.empty() && deadlines_.top().first <= now) {
    const int64_t id = deadlines_.top().second;
    deadlines_.pop();
    auto it = steps_.find(id);
    if (it == steps_.end() || it->second.state->replied) continue;
    try {
      FailStep(it->second.state.get(), errors::DeadlineExceeded("step exceeded its deadline"));
    } catch (...) {
      FailStepOnError(id);
    }
  }
  armed_ = Clock::time_point::max();
  if (!deadlines_.empty()) {
    try {
      services_.host->ArmDeadline(std::chrono::duration_cast<std::chrono::nanoseconds>(deadlines_.top().first - now));
      armed_ = deadlines_.top().first;
    } catch (...) {  // out of memory for the timer: the next step with a deadline arms it again
    }
  }
}

void Executor::CancelSteps(uint64_t graph_handle, const Status& why) noexcept {
  captures_.erase(graph_handle);  // its steps keep theirs until they end
  EndDeferred(why, graph_handle);
  for (auto& [id, a] : steps_) {
    if (a.graph_handle != graph_handle || a.state->replied) continue;
    try {
      FailStep(a.state.get(), Status(why.code(), why.message() + " during step " + std::to_string(id)));
    } catch (...) {
      FailStepOnError(id);
    }
  }
}

void Executor::Shutdown(const Status& s) noexcept {
  shutting_down_ = true;
  EndDeferred(s);
  try {
    for (auto& [id, a] : steps_) {
      a.state->Fail(s);
      Unpark(a.state.get());  // a held replay's nodes end as a failed step's
      Answer(a);
    }
  } catch (...) {  // out of memory while shutting down: what was not answered ends by its client's deadline
  }
  if (steps_.empty()) services_.host->Drained();
}

}  // namespace actorflow
