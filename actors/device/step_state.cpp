#include "actorflow/actors/device/step_state.hpp"

#include "actorflow/actors/device/executor_plan.hpp"
#include "actorflow/devices/device.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

namespace actorflow {

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t ThisThreadId() { return std::hash<std::thread::id>()(std::this_thread::get_id()); }

namespace {

NodeOutputStats OutputStats(const Tensor& t) {
  NodeOutputStats out;
  if (!t.IsInitialized()) return out;
  out.dtype = t.dtype();
  out.shape = t.shape().dim_sizes();
  if (BaseType(t.dtype()) == DT_STRING) {
    for (int64_t i = 0; i < t.NumElements(); ++i) out.bytes += static_cast<int64_t>(t.data<std::string>()[i].size());
  } else {
    out.bytes = static_cast<int64_t>(t.TotalBytes());
  }
  return out;
}

}  // namespace

void StepState::RecordStats(int32_t node, const char* where, int64_t start, int64_t end, uint64_t thread,
                            const Tensor* outputs) {
  const NodeItem& item = plan_->item(node);
  NodeExecStats s;
  s.node = item.kernel->name();
  s.op = item.kernel->type_string();
  s.where = where;
  s.thread = thread;
  s.start_us = (start - start_ns) / 1000;
  s.end_us = (end - start_ns) / 1000;
  if (plan_->device()) s.device = plan_->device()->name();
  s.all_start_us = start / 1000;
  s.outputs.reserve(item.num_outputs);
  for (int i = 0; i < item.num_outputs; ++i) s.outputs.push_back(OutputStats(outputs[i]));
  stats.push_back(std::move(s));
}

IterationState::IterationState(const FrameInfo& info, bool control_flow, FrameState* f, int64_t i)
    : inputs(static_cast<size_t>(info.total_input_slots)),
      pending(info.initial_pending),
      dead_count(control_flow ? static_cast<size_t>(info.num_nodes) : 0, 0),
      derefed(static_cast<size_t>(info.num_deref), 0),
      frame(f),
      iter(i) {}

void IterationState::Reset(const FrameInfo& info, int64_t i) {
  for (Tensor& t : inputs) t = Tensor();  // what no node consumed (a merge's unused input, dead edges)
  std::copy(info.initial_pending.begin(), info.initial_pending.end(), pending.begin());
  std::fill(dead_count.begin(), dead_count.end(), 0);
  std::fill(derefed.begin(), derefed.end(), 0);
  iter = i;
  outstanding_ops = 0;
  outstanding_frame_count = 0;
}

StepState::StepState(int64_t step_id, const ExecutorPlan* plan, std::vector<Tensor> args,
                     std::unique_ptr<IterationState> recycled)
    : step_id_(step_id), plan_(plan) {
  root_frame_.info = &plan->frame(0);
  if (recycled) {
    recycled->Reset(plan->frame(0), 0);
    recycled->frame = &root_frame_;
    root_frame_.iterations.push_back(std::move(recycled));
  } else {
    // Dead tensors come with control flow, and through _Recvs from a partition that has it.
    root_frame_.iterations.push_back(std::make_unique<IterationState>(
        plan->frame(0), plan->has_control_flow() || plan->has_transfers(), &root_frame_, 0));
  }
  root_iter_ = root_frame_.iterations[0].get();
  call_frame_.args = std::move(args);
  call_frame_.retvals.resize(plan->num_retvals());
}

std::unique_ptr<IterationState> StepState::TakeRoot() {
  if (!frames.empty() || root_frame_.iterations.empty()) return nullptr;
  // What no node consumed (a failed step's inputs of nodes that never ran, a
  // merge's unused input, dead edges) goes now, with the step, not when the
  // plan next runs.
  for (Tensor& t : root_frame_.iterations[0]->inputs) t = Tensor();
  root_iter_ = nullptr;
  return std::move(root_frame_.iterations[0]);
}

void StepState::Fail(const Status& s) {
  if (status_.ok() && !s.ok()) {
    status_ = s;
    cancellation_.StartCancel();
  }
}

}  // namespace actorflow
