#include "actors/step_state.hpp"

#include "actors/executor_plan.hpp"

#include <chrono>
#include <functional>
#include <thread>

namespace actorflow {

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t ThisThreadId() { return std::hash<std::thread::id>()(std::this_thread::get_id()); }

void StepState::RecordStats(int32_t node, const char* where, int64_t start, int64_t end, uint64_t thread) {
  const OpKernel* k = plan_->item(node).kernel;
  stats.push_back({k->name(), k->type_string(), where, thread, (start - start_ns) / 1000, (end - start_ns) / 1000});
}

IterationState::IterationState(const ExecutorPlan& plan)
    : inputs(plan.total_input_slots()), pending(plan.initial_pending()), derefed(plan.num_deref_inputs(), 0) {}

StepState::StepState(int64_t step_id, const ExecutorPlan* plan, std::vector<Tensor> args)
    : step_id_(step_id), plan_(plan) {
  root_frame_.name = "";
  root_frame_.iterations.push_back(std::make_unique<IterationState>(*plan));
  root_iter_ = root_frame_.iterations[0].get();
  call_frame_.args = std::move(args);
  call_frame_.retvals.resize(plan->num_retvals());
}

void StepState::Fail(const Status& s) {
  if (status_.ok() && !s.ok()) {
    status_ = s;
    cancellation_.StartCancel();
  }
}

}  // namespace actorflow
