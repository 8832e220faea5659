// Kernel launch: the one place a kernel context is filled (MakeParams), the
// one wrapper turning a kernel's exception into its Status (ComputeSafely),
// and the launch of nodes that run off the executor's thread.
#include <caf/mailbox_element.hpp>

#include "actorflow/actors/device/executor.hpp"
#include "actorflow/core/exception_status.hpp"
#include "actorflow/devices/device.hpp"

namespace actorflow {

// A node running off the host's thread: its context lives until it completes.
struct Executor::OffHostRun {
  OffHostRun() = default;
  OffHostRun(const OffHostRun&) = delete;  // ctx points at this one's params
  OffHostRun& operator=(const OffHostRun&) = delete;
  int64_t start_ns = 0;  // for step stats
  IterationState* iter = nullptr;
  bool dead = false;
  int32_t node = -1;
  int64_t step_id = 0;
  ExecutorHost::CompletionSink sink;
  OpKernelContext::Params params;
  std::vector<Tensor> outputs;
  OpKernelContext ctx{&params};  // params filled before the kernel starts
  // The completion, made when the node starts (where failing to allocate it
  // fails only the node): the kernel's end fills and delivers it without
  // allocating, so it cannot fail and leave the step waiting.
  caf::mailbox_element_ptr done_msg;
};

void Executor::ComputeSafely(OpKernel* kernel, OpKernelContext* ctx, bool async_inline) noexcept {
  try {
    if (async_inline) kernel->AsAsync()->ComputeInline(ctx);
    else kernel->Compute(ctx);
  } catch (const std::bad_alloc&) {  // what() names the bytes when a tensor did not fit
    ctx->SetStatus(CurrentExceptionStatus());
  } catch (...) {
    ctx->SetStatus(CurrentExceptionStatus("kernel threw"));
  }
}

void Executor::MakeParams(StepState* step, IterationState* iter, const NodeItem& item, Tensor* inputs,
                          Tensor* outputs, bool dead, OpKernelContext::Params* p) const {
  p->step_id = step->client_step_id;
  p->frame_id = iter->frame->id;
  p->iteration = iter->iter;
  p->parent_iterations = &iter->frame->parent_iterations;
  p->is_input_dead = dead;
  p->device = services_.device;
  p->op_kernel = item.kernel;
  p->inputs = inputs;  // stable: the step lives while this node is outstanding
  p->num_inputs = item.num_inputs;
  p->outputs = outputs;
  p->num_outputs = item.num_outputs;
  p->call_frame = step->call_frame();
  p->cancellation = step->cancellation();
  p->variables = services_.variables;
  p->rendezvous = services_.rendezvous;
  p->queues = services_.queues;
  p->collectives = services_.collectives;
  p->step_resources = step->resources();
}

void Executor::LaunchOffHost(StepState* step, IterationState* iter, int32_t node, const NodeItem& item,
                             Tensor* inputs, bool dead) {
  // Freed here if anything below throws (ExecuteNode then fails the node);
  // from the kernel's start on, `done` frees it.
  std::unique_ptr<OffHostRun> owned(new OffHostRun());
  OffHostRun* run = owned.get();
  run->outputs.resize(item.num_outputs);
  run->iter = iter;
  run->dead = dead;
  MakeParams(step, iter, item, inputs, run->outputs.data(), dead, &run->params);
  run->node = node;
  run->step_id = step->step_id();
  run->start_ns = step->collect_stats ? NowNanos() : 0;
  run->done_msg = services_.host->MakeCompletion();
  run->sink = services_.host->completion_sink();
  // Called exactly once; `run` is freed only after the completion is filled.
  // Off the executor's thread it touches neither the executor nor its host
  // (either may be gone if the host was killed): only the sink. Two pointers
  // captured: the std::function holds them without allocating.
  auto done = [this, run]() noexcept {
    const bool timed = run->start_ns != 0;
    const ExecutorHost::CompletionSink sink = run->sink;
    caf::mailbox_element_ptr msg = std::move(run->done_msg);
    KernelDone& d = msg->content().get_mutable_as<KernelDone>(0);
    d.step_id = run->step_id;
    d.node_id = run->node;
    d.status = run->ctx.status();  // shares the message: no allocation
    // A failed kernel's outputs are never used: what it allocated before it
    // failed (a Fill that ran out of memory half-way holds gigabytes) is
    // given back now, before delivering the completion needs memory.
    if (!d.status.ok()) ReleaseOutputs(run->outputs.data(), static_cast<int>(run->outputs.size()));
    d.outputs = std::move(run->outputs);
    d.start_ns = run->start_ns;
    d.end_ns = timed ? NowNanos() : 0;
    d.thread = timed ? ThisThreadId() : 0;
    d.iteration = run->iter;
    d.is_dead = run->dead;
    delete run;
    // On the executor's own thread (inside its host's handler) the result
    // goes straight to its queue of completions when that queue has room to
    // grow; otherwise, and from anywhere else, by the message made at the start.
    if (OnThisThread()) {
      try {
        completed_.push_back(std::move(d));
        return;
      } catch (...) {  // no memory to grow the queue: `d` was not moved from
      }
    }
    sink.deliver(sink.context, std::move(msg));
  };
  if (item.is_async) {
    owned.release();
    try {
      item.kernel->AsAsync()->ComputeAsync(&run->ctx, done);
    } catch (...) {  // by the AsyncOpKernel contract, one that throws has not called done
      run->ctx.SetStatus(CurrentExceptionStatus("starting the kernel"));
      done();
    }
  } else {
    OpKernel* kernel = item.kernel;
    services_.device->compute_pool()->Schedule([kernel, run, done = std::move(done)]() mutable {
      if (run->start_ns != 0) run->start_ns = NowNanos();  // when the pool started it
      ComputeSafely(kernel, &run->ctx);
      done();
    });
    owned.release();  // scheduled: the job owns it now
  }
}

// Starts a step (or, during a dry run, keeps it until the run ends); out of
// memory fails that step alone (answered), never the host.
void Executor::StartStep(std::shared_ptr<const ExecutorPlan> plan, uint64_t graph_handle, RunStepRequest& req,
                         Executor::Reply reply) noexcept {
  if (dry_run_ && !shutting_down_) {  // the device is capturing: the step starts when the dry run is over
    DeferredStart d{std::move(plan), graph_handle, std::move(req), std::move(reply)};
    try {
      deferred_.push_back(std::move(d));
      return;
    } catch (...) {  // no memory to wait: refused, as any step without memory
      RefuseStart(d.req, d.reply, OutOfMemoryStatus());
      return;
    }
  }
  int64_t id = 0;       // the step's, once it is in steps_
  bool holding = false;  // its start's hold on it (outstanding), not yet released
  try {
    StartStepOrThrow(std::move(plan), graph_handle, req, &reply, &id, &holding);
  } catch (...) {  // out of memory for the step's state: that step fails
    if (id != 0) {
      FailStepOnError(id);
      // The hold goes, or the step would never end (nor free its feeds).
      auto it = holding ? steps_.find(id) : steps_.end();
      if (it != steps_.end()) {
        try {
          NodeFinished(it->second.state.get());
        } catch (...) {  // answering it ran out of memory again: the next run's failures settle it
          FailStepOnError(id);
        }
      }
      Run();
      return;
    }
    RefuseStart(req, reply,
                CurrentExceptionStatusWith([&] { return "starting a step on " + services_.device->name(); }));
  }
}

}  // namespace actorflow
