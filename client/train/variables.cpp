#include "actorflow/client/train/variables.hpp"

#include <cmath>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/ops/attrs.hpp"

namespace actorflow {

namespace {
// Parallel collections: entry i of each describes variable i.
struct Collections {
  const char* refs;
  const char* reads;
  const char* inits;
};
constexpr Collections kGlobal = {"variables", "variables/read", "variables/initializer"};
constexpr Collections kLocal = {"local_variables", "local_variables/read", "local_variables/initializer"};
constexpr const char* kRefs = kGlobal.refs;
constexpr const char* kTrainable = "trainable_variables";
constexpr const char* kGlobalStep = "global_step";

Output Scalar(const Scope& s, double v, DataType dtype) {
  switch (dtype) {
    case DT_FLOAT: return ops::Const(s, static_cast<float>(v));
    case DT_DOUBLE: return ops::Const(s, v);
    case DT_INT32: return ops::Const(s, static_cast<int>(v));
    case DT_INT64: return ops::Const(s, static_cast<int64_t>(v));
    default:
      s.UpdateStatus(errors::InvalidArgument("no numeric initializer for dtype ", DataTypeString(dtype)));
      return Output();
  }
}

Output ShapeConst(const Scope& s, const TensorShape& shape) {
  Tensor t(DT_INT64, TensorShape{shape.dims()});
  for (int i = 0; i < shape.dims(); ++i) t.data<int64_t>()[i] = shape.dim_size(i);
  return ops::Const(s, t);
}

// Random floats scaled: value = raw * scale + offset, cast to dtype.
Output Scaled(const Scope& s, Output raw, double scale, double offset, DataType dtype) {
  const DataType f = dtype == DT_DOUBLE ? DT_DOUBLE : DT_FLOAT;
  Output v = ops::Add(s, ops::Mul(s, raw, Scalar(s, scale, f)), Scalar(s, offset, f));
  return dtype == f ? v : ops::Cast(s, v, dtype);
}

DataType FloatFor(DataType dtype) { return dtype == DT_DOUBLE ? DT_DOUBLE : DT_FLOAT; }

Variable Lookup(const Scope& scope, size_t i, const Collections& c = kGlobal) {
  const auto refs = scope.GetCollection(c.refs);
  const auto reads = scope.GetCollection(c.reads);
  const auto inits = scope.GetCollection(c.inits);
  Variable v;
  v.ref = refs[i];
  v.value = reads[i];
  v.initializer = inits[i];
  v.name = v.ref.node()->name();
  v.dtype = v.ref.type();
  PartialTensorShape shape;
  if (GetNodeAttr(v.ref.node()->def(), "shape", &shape).ok()) shape.AsTensorShape(&v.shape);
  return v;
}
}  // namespace

namespace init {
VariableInitializer Zeros() { return Constant(0.0); }
VariableInitializer Ones() { return Constant(1.0); }
VariableInitializer Constant(double value) {
  return [value](const Scope& s, const TensorShape& shape, DataType dtype) {
    return ops::Fill(s, ShapeConst(s, shape), Scalar(s, value, dtype));
  };
}
VariableInitializer Constant(const Tensor& value) {
  return [value](const Scope& s, const TensorShape& shape, DataType dtype) -> Output {
    if (value.dtype() != dtype) {
      s.UpdateStatus(errors::InvalidArgument("initial value has dtype ", DataTypeString(value.dtype()),
                                             ", the variable ", DataTypeString(dtype)));
      return Output();
    }
    if (value.dims() == 0) return ops::Fill(s, ShapeConst(s, shape), ops::Const(s, value));
    if (value.shape() != shape) {
      s.UpdateStatus(errors::InvalidArgument("initial value has shape ", value.shape().DebugString(),
                                             ", the variable ", shape.DebugString()));
      return Output();
    }
    return ops::Const(s, value);
  };
}
VariableInitializer GlorotUniform(int64_t seed) {
  return [seed](const Scope& s, const TensorShape& shape, DataType dtype) {
    double fan_in = 1, fan_out = 1;
    if (shape.dims() == 1) {
      fan_in = fan_out = static_cast<double>(shape.dim_size(0));
    } else if (shape.dims() >= 2) {
      double receptive = 1;
      for (int i = 0; i < shape.dims() - 2; ++i) receptive *= static_cast<double>(shape.dim_size(i));
      fan_in = static_cast<double>(shape.dim_size(shape.dims() - 2)) * receptive;
      fan_out = static_cast<double>(shape.dim_size(shape.dims() - 1)) * receptive;
    }
    const double limit = std::sqrt(6.0 / std::max(1.0, fan_in + fan_out));
    Output u = ops::RandomUniform(s, ShapeConst(s, shape), FloatFor(dtype), seed);
    return Scaled(s, u, 2 * limit, -limit, dtype);
  };
}
VariableInitializer RandomUniform(double minval, double maxval, int64_t seed) {
  return [=](const Scope& s, const TensorShape& shape, DataType dtype) {
    Output u = ops::RandomUniform(s, ShapeConst(s, shape), FloatFor(dtype), seed);
    return Scaled(s, u, maxval - minval, minval, dtype);
  };
}
VariableInitializer RandomNormal(double mean, double stddev, int64_t seed) {
  return [=](const Scope& s, const TensorShape& shape, DataType dtype) {
    Output z = ops::RandomStandardNormal(s, ShapeConst(s, shape), FloatFor(dtype), seed);
    return Scaled(s, z, stddev, mean, dtype);
  };
}
VariableInitializer TruncatedNormal(double mean, double stddev, int64_t seed) {
  return [=](const Scope& s, const TensorShape& shape, DataType dtype) {
    Output z = ops::TruncatedNormal(s, ShapeConst(s, shape), FloatFor(dtype), seed);
    return Scaled(s, z, stddev, mean, dtype);
  };
}
}  // namespace init

namespace {
Variable AddVariable(const Scope& scope, const std::string& name, const TensorShape& shape, DataType dtype,
                     const VariableInitializer& initializer, const std::string& container,
                     const std::string& shared_name, const Collections& collections) {
  Variable v;
  v.dtype = dtype;
  v.shape = shape;
  v.ref = ops::Variable(scope.WithOpName(name), PartialTensorShape(shape), dtype, container, shared_name);
  if (!v.ref.valid()) return Variable();
  v.name = v.ref.node()->name();
  Scope under = scope.NewSubScope(name);
  Output initial = initializer(under.NewSubScope("Initializer"), shape, dtype);
  if (!initial.valid()) {
    if (scope.ok()) scope.UpdateStatus(errors::InvalidArgument("no initial value for variable ", v.name));
    return Variable();
  }
  v.initializer = ops::Assign(under.WithOpName("Assign"), v.ref, initial);
  v.value = ops::Identity(under.WithOpName("read"), v.ref);
  if (!v.initializer.valid() || !v.value.valid()) return Variable();
  // The read runs with the variable (TensorFlow colocates it so too): its
  // consumers elsewhere get the value from there, once per device.
  // Colocation wins over the scope's device function (tf.colocate_with does too).
  (*v.value.node()->mutable_def()->mutable_attr())["_class"] = AttrStringList({"loc:@" + v.name});
  v.value.node()->mutable_def()->set_device(v.ref.node()->requested_device());
  scope.AddToCollection(collections.refs, v.ref);
  scope.AddToCollection(collections.reads, v.value);
  scope.AddToCollection(collections.inits, v.initializer);
  return v;
}

Operation InitializerOf(const Scope& scope, const Collections& c, const char* name) {
  std::vector<Operation> deps;
  for (const Output& i : scope.GetCollection(c.inits)) deps.push_back(i.op());
  Scope s = scope.WithControlDependencies(deps);
  return ops::NoOp(s.has_op_name() ? s : s.WithOpName(name));
}
}  // namespace

Variable NewVariable(const Scope& scope, const std::string& name, const TensorShape& shape, DataType dtype,
                     const VariableInitializer& initializer, bool trainable, const std::string& container,
                     const std::string& shared_name) {
  Variable v = AddVariable(scope, name, shape, dtype, initializer, container, shared_name, kGlobal);
  if (v.valid() && trainable) scope.AddToCollection(kTrainable, v.ref);
  return v;
}

Variable NewLocalVariable(const Scope& scope, const std::string& name, const TensorShape& shape, DataType dtype,
                          const VariableInitializer& initializer) {
  return AddVariable(scope, name, shape, dtype, initializer, "", "", kLocal);
}

std::vector<Variable> GlobalVariables(const Scope& scope) {
  std::vector<Variable> out;
  const size_t n = scope.GetCollection(kRefs).size();
  for (size_t i = 0; i < n; ++i) out.push_back(Lookup(scope, i));
  return out;
}

std::vector<Variable> TrainableVariables(const Scope& scope) {
  const auto refs = scope.GetCollection(kRefs);
  std::vector<Variable> out;
  for (const Output& t : scope.GetCollection(kTrainable))
    for (size_t i = 0; i < refs.size(); ++i)
      if (refs[i].node() == t.node()) out.push_back(Lookup(scope, i));
  return out;
}

std::vector<Variable> LocalVariables(const Scope& scope) {
  std::vector<Variable> out;
  const size_t n = scope.GetCollection(kLocal.refs).size();
  for (size_t i = 0; i < n; ++i) out.push_back(Lookup(scope, i, kLocal));
  return out;
}

Operation GlobalVariablesInitializer(const Scope& scope) { return InitializerOf(scope, kGlobal, "init"); }

Operation LocalVariablesInitializer(const Scope& scope) { return InitializerOf(scope, kLocal, "init_local"); }

Output ReadVariableNow(const Scope& scope, const Variable& var) {
  Operation op = scope.AddOp("Identity", {{var.ref}}, {{"T", AttrType(var.dtype)}});
  return op.node() ? Output(op.node(), 0) : Output();
}

Variable GetOrCreateGlobalStep(const Scope& scope) {
  const auto existing = scope.GetCollection(kGlobalStep);
  if (!existing.empty()) {
    const auto refs = scope.GetCollection(kRefs);
    for (size_t i = 0; i < refs.size(); ++i)
      if (refs[i].node() == existing[0].node()) return Lookup(scope, i);
  }
  // At the root of the graph, whatever name scope the caller is in.
  Variable step = NewVariable(scope, "global_step", TensorShape{}, DT_INT64, init::Zeros(), /*trainable=*/false);
  if (step.valid()) scope.AddToCollection(kGlobalStep, step.ref);
  return step;
}

}  // namespace actorflow
