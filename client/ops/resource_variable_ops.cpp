#include "client/ops/resource_variable_ops.hpp"

#include "ops/attrs.hpp"

namespace actorflow {
namespace ops {
namespace {
Output First(const Operation& op) { return op.node() ? Output(op.node(), 0) : Output(); }
std::vector<OutputList> Args(const Scope& s, std::initializer_list<const Input*> in) {
  std::vector<OutputList> args;
  for (const Input* i : in) args.push_back({s.AsOutput(*i)});
  return args;
}
}  // namespace

Output VarHandleOp(const Scope& s, DataType dtype, const PartialTensorShape& shape, const std::string& container,
                   const std::string& shared_name) {
  return First(s.AddOp("VarHandleOp", {},
                       {{"dtype", AttrType(dtype)},
                        {"shape", AttrShape(shape)},
                        {"container", AttrString(container)},
                        {"shared_name", AttrString(shared_name)}}));
}
Output ReadVariableOp(const Scope& s, Input resource, DataType dtype) {
  return First(s.AddOp("ReadVariableOp", Args(s, {&resource}), {{"dtype", AttrType(dtype)}}));
}
Output VarIsInitializedOp(const Scope& s, Input resource) {
  return First(s.AddOp("VarIsInitializedOp", Args(s, {&resource})));
}
Output ResourceGather(const Scope& s, Input resource, Input indices, DataType dtype) {
  return First(s.AddOp("ResourceGather", Args(s, {&resource, &indices}), {{"dtype", AttrType(dtype)}}));
}
Operation AssignVariableOp(const Scope& s, Input resource, Input value) {
  return s.AddOp("AssignVariableOp", Args(s, {&resource, &value}));
}
Operation AssignAddVariableOp(const Scope& s, Input resource, Input value) {
  return s.AddOp("AssignAddVariableOp", Args(s, {&resource, &value}));
}
Operation AssignSubVariableOp(const Scope& s, Input resource, Input value) {
  return s.AddOp("AssignSubVariableOp", Args(s, {&resource, &value}));
}
Operation ResourceApplyGradientDescent(const Scope& s, Input var, Input alpha, Input delta) {
  return s.AddOp("ResourceApplyGradientDescent", Args(s, {&var, &alpha, &delta}));
}
Operation ResourceApplyMomentum(const Scope& s, Input var, Input accum, Input lr, Input grad, Input momentum,
                                bool use_nesterov) {
  return s.AddOp("ResourceApplyMomentum", Args(s, {&var, &accum, &lr, &grad, &momentum}),
                 {{"use_nesterov", AttrBool(use_nesterov)}});
}
Operation ResourceApplyAdam(const Scope& s, Input var, Input m, Input v, Input beta1_power, Input beta2_power,
                            Input lr, Input beta1, Input beta2, Input epsilon, Input grad, bool use_nesterov) {
  return s.AddOp("ResourceApplyAdam",
                 Args(s, {&var, &m, &v, &beta1_power, &beta2_power, &lr, &beta1, &beta2, &epsilon, &grad}),
                 {{"use_nesterov", AttrBool(use_nesterov)}});
}

}  // namespace ops
}  // namespace actorflow
