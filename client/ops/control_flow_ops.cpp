#include "actorflow/client/ops/control_flow_ops.hpp"

namespace actorflow {
namespace ops {

namespace {
Output First(const Operation& op) { return op.node() ? op.output(0) : Output(); }

Output EnterOp(const char* op, const Scope& s, Input data, const std::string& frame_name, bool is_constant,
               int64_t parallel_iterations) {
  return First(s.AddOp(op, {{s.AsOutput(data)}},
                       {{"frame_name", AttrString(frame_name)},
                        {"is_constant", AttrBool(is_constant)},
                        {"parallel_iterations", AttrInt(parallel_iterations)}}));
}

SwitchOutputs SwitchOp(const char* op, const Scope& s, Input data, Input pred) {
  Operation sw = s.AddOp(op, {{s.AsOutput(data)}, {s.AsOutput(pred)}});
  if (!sw.node()) return {};
  return {sw.output(0), sw.output(1)};
}
}  // namespace

SwitchOutputs Switch(const Scope& s, Input data, Input pred) { return SwitchOp("Switch", s, data, pred); }
SwitchOutputs RefSwitch(const Scope& s, Input data, Input pred) { return SwitchOp("RefSwitch", s, data, pred); }

MergeOutputs Merge(const Scope& s, const OutputList& inputs) {
  Operation m = s.AddOp("Merge", {inputs});
  if (!m.node()) return {};
  return {m.output(0), m.output(1)};
}

Output Enter(const Scope& s, Input data, const std::string& frame_name, bool is_constant, int64_t parallel_iterations) {
  return EnterOp("Enter", s, data, frame_name, is_constant, parallel_iterations);
}
Output RefEnter(const Scope& s, Input data, const std::string& frame_name, bool is_constant,
                int64_t parallel_iterations) {
  return EnterOp("RefEnter", s, data, frame_name, is_constant, parallel_iterations);
}
Output Exit(const Scope& s, Input data) { return First(s.AddOp("Exit", {{s.AsOutput(data)}})); }
Output NextIteration(const Scope& s, Input data) { return First(s.AddOp("NextIteration", {{s.AsOutput(data)}})); }
Output LoopCond(const Scope& s, Input pred) { return First(s.AddOp("LoopCond", {{s.AsOutput(pred)}})); }
Operation ControlTrigger(const Scope& s) { return s.AddOp("ControlTrigger", {}); }

}  // namespace ops
}  // namespace actorflow
