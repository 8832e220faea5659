// Gradients of the control-flow primitives (ops/control/control_flow_ops.cpp).
// Enter, Exit and NextIteration are differentiated with the while loop they
// belong to (the gradient builder treats a loop as a whole,
// client/gradients/while_gradients.cpp); on their own they refuse, saying so.
#include "actorflow/client/gradients/gradients.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/control_flow_ops.hpp"

namespace actorflow {
namespace {

Status ControlFlowPrimitiveGrad(const Scope&, const Operation& op, const std::vector<Output>&, std::vector<Output>*) {
  return errors::Unimplemented("no gradient for '", op.node()->name(), "' (op '", op.node()->type_string(),
                               "'): gradients of control flow are taken through Cond and WhileLoop");
}

// A cond's Switch: the gradient of its data is that of whichever output was
// taken (the other's is dead), merged; the predicate gets none. (A loop's
// Switches are differentiated with their loop, client/gradients/while_gradients.cpp.)
Status SwitchGrad(const Scope& scope, const Operation& op, const std::vector<Output>& dy, std::vector<Output>* dx) {
  dx->push_back(ops::Merge(scope, {dy[0], dy[1]}).output);
  dx->push_back(Output());
  return scope.status();
}
AF_REGISTER_GRADIENT("Switch", SwitchGrad);
AF_REGISTER_GRADIENT("RefSwitch", SwitchGrad);

// A cond's Merge: the gradient goes back to the input that was taken
// (value_index), dead to the others.
Status MergeGrad(const Scope& scope, const Operation& op, const std::vector<Output>& dy, std::vector<Output>* dx) {
  const Output index = op.output(1);
  for (int i = 0; i < op.num_inputs(); ++i)
    dx->push_back(ops::Switch(scope, dy[0], ops::Equal(scope, index, i)).output_true);
  return scope.status();
}
AF_REGISTER_GRADIENT("Merge", MergeGrad);
AF_REGISTER_GRADIENT("RefMerge", MergeGrad);
AF_REGISTER_GRADIENT("Enter", ControlFlowPrimitiveGrad);
AF_REGISTER_GRADIENT("RefEnter", ControlFlowPrimitiveGrad);
AF_REGISTER_GRADIENT("Exit", ControlFlowPrimitiveGrad);
AF_REGISTER_GRADIENT("RefExit", ControlFlowPrimitiveGrad);
AF_REGISTER_GRADIENT("NextIteration", ControlFlowPrimitiveGrad);
AF_REGISTER_GRADIENT("RefNextIteration", ControlFlowPrimitiveGrad);

}  // namespace
}  // namespace actorflow
