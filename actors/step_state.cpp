#include "actors/step_state.hpp"

#include "actors/executor_plan.hpp"

namespace actorflow {

IterationState::IterationState(const ExecutorPlan& plan)
    : inputs(plan.total_input_slots()), pending(plan.initial_pending()) {}

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
