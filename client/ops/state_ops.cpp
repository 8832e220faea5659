#include "actorflow/client/ops/state_ops.hpp"

namespace actorflow {
namespace ops {

namespace {
Output First(const Operation& op) { return op.node() ? Output(op.node(), 0) : Output(); }
// One input arg per Input.
std::vector<OutputList> Args(const Scope& s, std::initializer_list<const Input*> in) {
  std::vector<OutputList> args;
  for (const Input* i : in) args.push_back({s.AsOutput(*i)});
  return args;
}
AttrMap Locking(bool use_locking) { return {{"use_locking", AttrBool(use_locking)}}; }
Output Random(const Scope& s, const char* op, const Input& shape, DataType dtype, int64_t op_seed) {
  int64_t seed, seed2;
  s.GetSeeds(op_seed, &seed, &seed2);
  return First(s.AddOp(op, Args(s, {&shape}),
                       {{"dtype", AttrType(dtype)}, {"seed", AttrInt(seed)}, {"seed2", AttrInt(seed2)}}));
}
}  // namespace

Output Variable(const Scope& s, const PartialTensorShape& shape, DataType dtype, const std::string& container,
                const std::string& shared_name) {
  return First(s.AddOp("VariableV2", {},
                       {{"shape", AttrShape(shape)},
                        {"dtype", AttrType(dtype)},
                        {"container", AttrString(container)},
                        {"shared_name", AttrString(shared_name)}}));
}

Output Assign(const Scope& s, Input ref, Input value, bool validate_shape, bool use_locking) {
  return First(s.AddOp("Assign", Args(s, {&ref, &value}),
                       {{"validate_shape", AttrBool(validate_shape)}, {"use_locking", AttrBool(use_locking)}}));
}
Output AssignAdd(const Scope& s, Input ref, Input value, bool use_locking) {
  return First(s.AddOp("AssignAdd", Args(s, {&ref, &value}), Locking(use_locking)));
}
Output AssignSub(const Scope& s, Input ref, Input value, bool use_locking) {
  return First(s.AddOp("AssignSub", Args(s, {&ref, &value}), Locking(use_locking)));
}
Output IsVariableInitialized(const Scope& s, Input ref) {
  Output r = s.AsOutput(ref);
  return First(s.AddOp("IsVariableInitialized", {{r}}, {{"dtype", AttrType(r.type())}}));
}
Output CountUpTo(const Scope& s, Input ref, int64_t limit) {
  return First(s.AddOp("CountUpTo", Args(s, {&ref}), {{"limit", AttrInt(limit)}}));
}

Output ApplyGradientDescent(const Scope& s, Input var, Input alpha, Input delta, bool use_locking) {
  return First(s.AddOp("ApplyGradientDescent", Args(s, {&var, &alpha, &delta}), Locking(use_locking)));
}
Output ApplyMomentum(const Scope& s, Input var, Input accum, Input lr, Input grad, Input momentum, bool use_nesterov,
                     bool use_locking) {
  AttrMap attrs = Locking(use_locking);
  attrs["use_nesterov"] = AttrBool(use_nesterov);
  return First(s.AddOp("ApplyMomentum", Args(s, {&var, &accum, &lr, &grad, &momentum}), attrs));
}
Output ApplyAdam(const Scope& s, Input var, Input m, Input v, Input beta1_power, Input beta2_power, Input lr,
                 Input beta1, Input beta2, Input epsilon, Input grad, bool use_nesterov, bool use_locking) {
  AttrMap attrs = Locking(use_locking);
  attrs["use_nesterov"] = AttrBool(use_nesterov);
  return First(s.AddOp("ApplyAdam",
                       Args(s, {&var, &m, &v, &beta1_power, &beta2_power, &lr, &beta1, &beta2, &epsilon, &grad}),
                       attrs));
}
Output ApplyAdagrad(const Scope& s, Input var, Input accum, Input lr, Input grad, bool use_locking) {
  return First(s.AddOp("ApplyAdagrad", Args(s, {&var, &accum, &lr, &grad}), Locking(use_locking)));
}
Output ApplyRMSProp(const Scope& s, Input var, Input ms, Input mom, Input lr, Input rho, Input momentum, Input epsilon,
                    Input grad, bool use_locking) {
  return First(
      s.AddOp("ApplyRMSProp", Args(s, {&var, &ms, &mom, &lr, &rho, &momentum, &epsilon, &grad}), Locking(use_locking)));
}

Output RandomUniform(const Scope& s, Input shape, DataType dtype, int64_t seed) {
  return Random(s, "RandomUniform", shape, dtype, seed);
}
Output RandomStandardNormal(const Scope& s, Input shape, DataType dtype, int64_t seed) {
  return Random(s, "RandomStandardNormal", shape, dtype, seed);
}
Output TruncatedNormal(const Scope& s, Input shape, DataType dtype, int64_t seed) {
  return Random(s, "TruncatedNormal", shape, dtype, seed);
}
Output RandomUniformInt(const Scope& s, Input shape, Input minval, Input maxval, int64_t seed) {
  int64_t seed1, seed2;
  s.GetSeeds(seed, &seed1, &seed2);
  return First(s.AddOp("RandomUniformInt", Args(s, {&shape, &minval, &maxval}),
                       {{"seed", AttrInt(seed1)}, {"seed2", AttrInt(seed2)}}));
}
Output RandomShuffle(const Scope& s, Input value, int64_t op_seed) {
  int64_t seed, seed2;
  s.GetSeeds(op_seed, &seed, &seed2);
  return First(s.AddOp("RandomShuffle", Args(s, {&value}), {{"seed", AttrInt(seed)}, {"seed2", AttrInt(seed2)}}));
}

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
