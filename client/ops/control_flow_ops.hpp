// Builder functions for the control-flow primitives (ops/control/
// control_flow_ops.cpp). Most programs use Cond and WhileLoop
// (client/ops/control_flow.hpp), which build these with TensorFlow's names.
#pragma once

#include <string>

#include "actorflow/client/builder.hpp"

namespace actorflow {
namespace ops {

struct SwitchOutputs {
  Output output_false;
  Output output_true;
};
/// `data` to output_true when `pred` is true, else to output_false; the other is dead.
SwitchOutputs Switch(const Scope& s, Input data, Input pred);
SwitchOutputs RefSwitch(const Scope& s, Input data, Input pred);

struct MergeOutputs {
  Output output;
  Output value_index;
};
/// The first live input, and its index.
MergeOutputs Merge(const Scope& s, const OutputList& inputs);

/// `data` made available in frame `frame_name` (to every iteration when `is_constant`).
Output Enter(const Scope& s, Input data, const std::string& frame_name, bool is_constant = false,
             int64_t parallel_iterations = 10);
Output RefEnter(const Scope& s, Input data, const std::string& frame_name, bool is_constant = false,
                int64_t parallel_iterations = 10);
Output Exit(const Scope& s, Input data);
Output NextIteration(const Scope& s, Input data);
Output LoopCond(const Scope& s, Input pred);
Operation ControlTrigger(const Scope& s);

}  // namespace ops
}  // namespace actorflow
