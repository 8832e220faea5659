#include "actorflow/client/ops/stack_ops.hpp"

#include "actorflow/ops/attrs.hpp"

namespace actorflow {
namespace ops {

namespace {
Output First(const Operation& op) { return op.node() ? Output(op.node(), 0) : Output(); }
}  // namespace

Output Stack(const Scope& s, DataType elem_type, Input max_size, const std::string& stack_name) {
  return First(s.AddOp("StackV2", {{s.AsOutput(max_size)}},
                       {{"elem_type", AttrType(elem_type)}, {"stack_name", AttrString(stack_name)}}));
}

Output StackPush(const Scope& s, Input handle, Input elem, bool swap_memory) {
  return First(s.AddOp("StackPushV2", {{s.AsOutput(handle)}, {s.AsOutput(elem)}},
                       {{"swap_memory", AttrBool(swap_memory)}}));
}

Output StackPop(const Scope& s, Input handle, DataType elem_type) {
  return First(s.AddOp("StackPopV2", {{s.AsOutput(handle)}}, {{"elem_type", AttrType(elem_type)}}));
}

Operation StackClose(const Scope& s, Input handle) { return s.AddOp("StackCloseV2", {{s.AsOutput(handle)}}); }

}  // namespace ops
}  // namespace actorflow
