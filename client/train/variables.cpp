#include "actorflow/client/train/variables.hpp"

#include <cmath>
#include <cstring>

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
constexpr const char* kSliceFullName = "_save_slice_info_full_name";
constexpr const char* kSliceFullShape = "_save_slice_info_full_shape";
constexpr const char* kSliceOffset = "_save_slice_info_offset";

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
  const proto::NodeDef& def = v.ref.node()->def();
  std::vector<int64_t> full, offset;
  // Kept only when it describes a part of this variable's rank that fits
  // (SetSaveSliceInfo wrote it so; anything else is not a part).
  bool part = GetNodeAttr(def, kSliceFullName, &v.save_slice.full_name).ok() && !v.save_slice.full_name.empty() &&
              GetNodeAttr(def, kSliceFullShape, &full).ok() && GetNodeAttr(def, kSliceOffset, &offset).ok() &&
              v.shape.dims() >= 1 && full.size() == offset.size() && static_cast<int>(full.size()) == v.shape.dims();
  for (size_t i = 0; part && i < full.size(); ++i)
    part = offset[i] >= 0 && full[i] >= 0 && offset[i] + v.shape.dim_size(static_cast<int>(i)) <= full[i];
  if (part) {
    v.save_slice.full_shape = TensorShape(full);
    v.save_slice.offset = offset;
  } else {
    v.save_slice = SaveSliceInfo();
  }
  return v;
}

// Glorot's fans of a shape (TensorFlow's _compute_fans).
void Fans(const TensorShape& shape, double* fan_in, double* fan_out) {
  *fan_in = *fan_out = 1;
  if (shape.dims() == 1) {
    *fan_in = *fan_out = static_cast<double>(shape.dim_size(0));
  } else if (shape.dims() >= 2) {
    double receptive = 1;
    for (int i = 0; i < shape.dims() - 2; ++i) receptive *= static_cast<double>(shape.dim_size(i));
    *fan_in = static_cast<double>(shape.dim_size(shape.dims() - 2)) * receptive;
    *fan_out = static_cast<double>(shape.dim_size(shape.dims() - 1)) * receptive;
  }
}

Output GlorotValue(const Scope& s, const TensorShape& shape, const TensorShape& fans_of, DataType dtype,
                   int64_t seed) {
  double fan_in, fan_out;
  Fans(fans_of, &fan_in, &fan_out);
  const double limit = std::sqrt(6.0 / std::max(1.0, fan_in + fan_out));
  Output u = ops::RandomUniform(s, ShapeConst(s, shape), FloatFor(dtype), seed);
  return Scaled(s, u, 2 * limit, -limit, dtype);
}

// A part's seed: the initializer's own (-1: none) mixed with where the part
// lies, so equal-shaped parts of a seeded initializer differ (TensorFlow 1.x
// draws them alike), and the same seed gives the same parts again.
int64_t PartSeed(int64_t seed, const PartitionInfo& info) {
  if (seed < 0) return seed;
  uint64_t h = static_cast<uint64_t>(seed);
  for (int64_t o : info.offset) h = (h ^ static_cast<uint64_t>(o)) * 0x100000001b3ULL;  // FNV-1a's step
  return static_cast<int64_t>(h & 0x7fffffffffffffffULL);
}

// The block of `t` at `offset` with shape `part` (which fits: checked by the caller).
Tensor Block(const Tensor& t, const std::vector<int64_t>& offset, const TensorShape& part) {
  Tensor out(t.dtype(), part);
  const int d = t.dims();
  if (d == 0 || part.num_elements() == 0) return d == 0 ? t : out;
  const bool is_string = t.dtype() == DT_STRING;
  const size_t elem = is_string ? 0 : DataTypeSize(t.dtype());
  std::vector<int64_t> stride(d, 1);  // of t, in elements
  for (int i = d - 2; i >= 0; --i) stride[i] = stride[i + 1] * t.dim_size(i + 1);
  const int64_t row = part.dim_size(d - 1);
  std::vector<int64_t> idx(d, 0);  // over part's dims 0..d-2
  for (int64_t dst = 0; dst < part.num_elements(); dst += row) {
    int64_t src = offset[d - 1];
    for (int i = 0; i < d - 1; ++i) src += (offset[i] + idx[i]) * stride[i];
    if (is_string) {
      for (int64_t k = 0; k < row; ++k) out.data<std::string>()[dst + k] = t.data<std::string>()[src + k];
    } else {
      std::memcpy(static_cast<char*>(out.raw_data()) + dst * elem,
                  static_cast<const char*>(t.raw_data()) + src * elem, static_cast<size_t>(row) * elem);
    }
    for (int i = d - 2; i >= 0; --i) {
      if (++idx[i] < part.dim_size(i)) break;
      idx[i] = 0;
    }
  }
  return out;
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
  auto whole = [value](const Scope& s, const TensorShape& shape, DataType dtype) -> Output {
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
  // A part of a partitioned variable: its block of the whole value.
  auto part = [value, whole](const Scope& s, const TensorShape& shape, DataType dtype,
                             const PartitionInfo& info) -> Output {
    if (value.dims() == 0) return whole(s, shape, dtype);
    if (value.shape() != info.full_shape) {
      s.UpdateStatus(errors::InvalidArgument("initial value has shape ", value.shape().DebugString(),
                                             ", the partitioned variable ", info.full_shape.DebugString()));
      return Output();
    }
    if (value.dtype() != dtype) return whole(s, shape, dtype);  // the dtype error
    bool fits = shape.dims() == value.dims() && static_cast<int>(info.offset.size()) == value.dims();
    for (int d = 0; fits && d < value.dims(); ++d)
      fits = info.offset[d] >= 0 && info.offset[d] + shape.dim_size(d) <= value.dim_size(d);
    if (!fits) {
      s.UpdateStatus(errors::InvalidArgument("a part of shape ", shape.DebugString(), " does not fit in the initial value ",
                                             value.shape().DebugString(), " at its offset"));
      return Output();
    }
    return ops::Const(s, Block(value, info.offset, shape));
  };
  return VariableInitializer(whole, part);
}
VariableInitializer GlorotUniform(int64_t seed) {
  // A part's limit is the whole variable's (its fans), as TensorFlow's.
  return VariableInitializer(
      [seed](const Scope& s, const TensorShape& shape, DataType dtype) {
        return GlorotValue(s, shape, shape, dtype, seed);
      },
      [seed](const Scope& s, const TensorShape& shape, DataType dtype, const PartitionInfo& info) {
        return GlorotValue(s, shape, info.full_shape, dtype, PartSeed(seed, info));
      });
}
namespace {
// A seeded draw, whole or per part (PartSeed).
VariableInitializer Seeded(std::function<Output(const Scope&, const TensorShape&, DataType, int64_t seed)> draw,
                           int64_t seed) {
  return VariableInitializer(
      [draw, seed](const Scope& s, const TensorShape& shape, DataType dtype) { return draw(s, shape, dtype, seed); },
      [draw, seed](const Scope& s, const TensorShape& shape, DataType dtype, const PartitionInfo& info) {
        return draw(s, shape, dtype, PartSeed(seed, info));
      });
}
}  // namespace
VariableInitializer RandomUniform(double minval, double maxval, int64_t seed) {
  return Seeded(
      [=](const Scope& s, const TensorShape& shape, DataType dtype, int64_t sd) {
        return Scaled(s, ops::RandomUniform(s, ShapeConst(s, shape), FloatFor(dtype), sd), maxval - minval, minval,
                      dtype);
      },
      seed);
}
VariableInitializer RandomNormal(double mean, double stddev, int64_t seed) {
  return Seeded(
      [=](const Scope& s, const TensorShape& shape, DataType dtype, int64_t sd) {
        return Scaled(s, ops::RandomStandardNormal(s, ShapeConst(s, shape), FloatFor(dtype), sd), stddev, mean, dtype);
      },
      seed);
}
VariableInitializer TruncatedNormal(double mean, double stddev, int64_t seed) {
  return Seeded(
      [=](const Scope& s, const TensorShape& shape, DataType dtype, int64_t sd) {
        return Scaled(s, ops::TruncatedNormal(s, ShapeConst(s, shape), FloatFor(dtype), sd), stddev, mean, dtype);
      },
      seed);
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

void SetSaveSliceInfo(const Scope& scope, Variable* var, const SaveSliceInfo& info) {
  if (!var || !var->valid()) return;
  bool fits = !info.full_name.empty() && var->shape.dims() >= 1 && info.full_shape.dims() == var->shape.dims() &&
              static_cast<int>(info.offset.size()) == var->shape.dims();
  for (int i = 0; fits && i < var->shape.dims(); ++i)
    fits = info.offset[i] >= 0 && info.offset[i] + var->shape.dim_size(i) <= info.full_shape.dim_size(i);
  if (!fits) {
    std::string offset;
    for (int64_t o : info.offset) offset += (offset.empty() ? "" : ",") + std::to_string(o);
    scope.UpdateStatus(errors::InvalidArgument("variable ", var->name, " of shape ", var->shape.DebugString(),
                                               " at offset [", offset, "] is not a part of '", info.full_name,
                                               "' of shape ", info.full_shape.DebugString()));
    return;
  }
  auto* attrs = var->ref.node()->mutable_def()->mutable_attr();
  std::vector<int64_t> full;
  for (int i = 0; i < info.full_shape.dims(); ++i) full.push_back(info.full_shape.dim_size(i));
  (*attrs)[kSliceFullName] = AttrString(info.full_name);
  (*attrs)[kSliceFullShape] = AttrIntList(full);
  (*attrs)[kSliceOffset] = AttrIntList(info.offset);
  var->save_slice = info;
}

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
