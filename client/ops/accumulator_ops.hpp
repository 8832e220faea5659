// Builders of the gradient accumulator ops (TensorFlow's
// ConditionalAccumulator and the Accumulator* ops; ops/queue/accumulator_ops.cpp):
// the barrier of synchronous data-parallel training.
//
//   Output acc = ops::ConditionalAccumulator(ps, DT_FLOAT, {784, 256}, {"", "w/grad_accum"});
//   ops::AccumulatorApplyGradient(worker, acc, local_step, grad_w);      // each worker
//   Output mean = ops::AccumulatorTakeGradient(ps, acc, 2, DT_FLOAT);     // the chief: waits for 2
#pragma once

#include <string>

#include "actorflow/client/builder.hpp"

namespace actorflow {
namespace ops {

/// How an accumulator is declared; shared_name "" makes it the node's own.
struct AccumulatorOptions {
  std::string container;
  std::string shared_name;
  std::string reduction_type = "MEAN";  // or "SUM"
};

/// The accumulator's handle (a Ref(string): ops on it run where it lives).
Output ConditionalAccumulator(const Scope& s, DataType dtype, const PartialTensorShape& shape,
                              const AccumulatorOptions& o = {});
Operation AccumulatorApplyGradient(const Scope& s, Input handle, Input local_step, Input gradient);
/// Waits until `num_required` gradients are in; their mean (or sum).
Output AccumulatorTakeGradient(const Scope& s, Input handle, Input num_required, DataType dtype);
Output AccumulatorNumAccumulated(const Scope& s, Input handle);
/// An actorflow op: the stale gradients (int64) the accumulator has dropped since it was made.
Output AccumulatorNumDropped(const Scope& s, Input handle);
Operation AccumulatorSetGlobalStep(const Scope& s, Input handle, Input new_global_step);

}  // namespace ops
}  // namespace actorflow
