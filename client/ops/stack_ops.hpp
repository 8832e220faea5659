// Builder functions for the stack ops (ops/stack/stack_ops.cpp): a stack
// made by Stack lives as long as the step that made it, and orders what is
// pushed in loops by iteration (ops/stack/stack.hpp), so a loop's pushes pop
// in exact reverse iteration order after it, however many iterations ran in
// parallel.
//
//   auto stack = ops::Stack(root, DT_FLOAT);
//   auto pushed = ops::StackPush(root, stack, x);            // outputs x
//   auto top = ops::StackPop(root.WithControlDependencies({pushed.op()}), stack, DT_FLOAT);
#pragma once

#include <string>

#include "actorflow/client/builder.hpp"

namespace actorflow {
namespace ops {

/// A new stack of `elem_type` tensors (StackV2); `max_size` < 0: unbounded.
/// Its name is "<stack_name or node name>_<n>", n counting in the step.
Output Stack(const Scope& s, DataType elem_type, Input max_size = -1, const std::string& stack_name = "");
/// Pushes `elem` (StackPushV2) and outputs it; `swap_memory` is ignored.
Output StackPush(const Scope& s, Input handle, Input elem, bool swap_memory = false);
/// Pops the top element (StackPopV2), which must be of `elem_type`.
Output StackPop(const Scope& s, Input handle, DataType elem_type);
/// Closes the stack (StackCloseV2).
Operation StackClose(const Scope& s, Input handle);

}  // namespace ops
}  // namespace actorflow
