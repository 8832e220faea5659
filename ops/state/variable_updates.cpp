#include "actorflow/ops/state/variable_updates.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/ops/math/integer_wrap.hpp"

namespace actorflow {

namespace {

struct Arity {
  size_t vars, args;
};

Arity ArityOf(VarUpdateKind kind) {
  switch (kind) {
    case VarUpdateKind::kAssign:
    case VarUpdateKind::kAssignAdd:
    case VarUpdateKind::kAssignSub: return {1, 1};
    case VarUpdateKind::kGradientDescent: return {1, 2};
    case VarUpdateKind::kMomentum: return {2, 3};
    case VarUpdateKind::kAdam: return {3, 7};
    case VarUpdateKind::kAdagrad: return {2, 2};
    case VarUpdateKind::kRMSProp: return {3, 5};
    case VarUpdateKind::kCountUpTo: return {1, 1};
  }
  return {0, 0};
}

Status Uninitialized(const VarSlot& v) {
  return errors::FailedPrecondition("Attempting to use uninitialized value ", v.name);
}

// The buffer to write variable v's new value into: its own when no one else
// holds it, else a fresh one (the reader keeps the old bytes).
Status Writable(VarSlot* v, Tensor* out) {
  if (v->value.RefCountIsOne() || v->value.NumElements() == 0) {
    *out = v->value;
    return Status::OK();
  }
  return Tensor::Create(nullptr, v->value.dtype(), v->value.shape(), out);
}

// On the device: the buffers the device's kernel writes, copy on write as on
// the host. A value no one else holds is updated in place; one a reader still
// holds (a step that read it, a pending read) is left to the reader and the
// variable gets a new buffer of its device's memory (never touched here), the
// kernel computing into it from the old one. `sources` gets what the kernel
// reads: the old values, in the variables' order.
Status DeviceWritable(std::vector<VarSlot*>& vars, std::vector<Tensor>* sources) {
  std::vector<Tensor> fresh(vars.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    const Tensor& v = vars[i]->value;
    if (v.RefCountIsOne() || v.NumElements() == 0) continue;
    AF_RETURN_IF_ERROR(Tensor::Create(v.buffer()->allocator(), v.dtype(), v.shape(), &fresh[i])
                           .WithContext("a new buffer for " + vars[i]->name + ", still read by a step"));
  }
  if (sources) sources->clear();
  for (size_t i = 0; i < vars.size(); ++i) {
    if (sources) sources->push_back(vars[i]->value);
    if (fresh[i].IsInitialized()) vars[i]->value = std::move(fresh[i]);
  }
  return Status::OK();
}

Status CheckSameShape(const VarSlot& v, const Tensor& t, const char* what) {
  if (v.value.shape() != t.shape())
    return errors::InvalidArgument(what, " and ", v.name, " do not have the same shape: ", t.shape().DebugString(),
                                   " vs ", v.value.shape().DebugString());
  return Status::OK();
}


Status CheckDtype(const VarSlot& v, const Tensor& t, const char* what) {
  if (t.dtype() != v.dtype)
    return errors::InvalidArgument(what, " has dtype ", DataTypeString(t.dtype()), " but ", v.name, " is ",
                                   DataTypeString(v.dtype));
  return Status::OK();
}

// Signed integers add in their unsigned type (integer_wrap.hpp): overflow
// wraps in two's complement instead of being undefined.
template <class T>
void AddOrSub(const Tensor& in, const Tensor& delta, bool add, Tensor* out) {
  using E = WrapT<T>;
  FlatArray<E> o(AsWrapping(out->data<T>()), out->NumElements());
  ConstFlatArray<E> a(AsWrapping(in.data<T>()), in.NumElements());
  ConstFlatArray<E> d(AsWrapping(delta.data<T>()), delta.NumElements());
  if (add) o = a + d;
  else o = a - d;
}

Status CheckAddSub(const VarUpdateRequest& req, const VarSlot& v) {
  if (!v.value.IsInitialized()) return Uninitialized(v);
  AF_RETURN_IF_ERROR(CheckDtype(v, req.args[0], "value"));
  return CheckSameShape(v, req.args[0], "value");
}

Status AssignAddSub(const VarUpdateRequest& req, VarSlot* v, bool add) {
  const Tensor& delta = req.args[0];
  AF_RETURN_IF_ERROR(CheckAddSub(req, *v));
  Tensor out;
  AF_RETURN_IF_ERROR(Writable(v, &out));
  switch (v->dtype) {
    case DT_FLOAT: AddOrSub<float>(v->value, delta, add, &out); break;
    case DT_DOUBLE: AddOrSub<double>(v->value, delta, add, &out); break;
    case DT_INT32: AddOrSub<int32_t>(v->value, delta, add, &out); break;
    case DT_INT64: AddOrSub<int64_t>(v->value, delta, add, &out); break;
    default:
      return errors::InvalidArgument(add ? "AssignAdd" : "AssignSub", " does not support ", DataTypeString(v->dtype));
  }
  v->value = std::move(out);
  return Status::OK();
}

Status CheckAssign(const VarUpdateRequest& req, const VarSlot* v) {
  const Tensor& value = req.args[0];
  AF_RETURN_IF_ERROR(CheckDtype(*v, value, "value"));
  if (req.validate_shape) {
    // The declared shape when fully defined, else the current value's.
    TensorShape want;
    bool known = v->shape.AsTensorShape(&want);
    if (!known && v->value.IsInitialized()) {
      want = v->value.shape();
      known = true;
    }
    if (known && want != value.shape())
      return errors::InvalidArgument("Assign requires shapes of both tensors to match. lhs shape= ",
                                     want.DebugString(), " rhs shape= ", value.shape().DebugString(), " (",
                                     v->name, ")");
    if (!known && !v->shape.IsCompatibleWith(value.shape()))
      return errors::InvalidArgument("Assign of a ", value.shape().DebugString(), " value to ", v->name,
                                     " declared ", v->shape.DebugString());
  }
  return Status::OK();
}

Status Assign(const VarUpdateRequest& req, VarSlot* v) {
  const Tensor& value = req.args[0];
  AF_RETURN_IF_ERROR(CheckAssign(req, v));
  // On the device: the value is the variable's own copy already (the GPU
  // kernel copied it into a new buffer), which it takes as it is. A reader
  // of the old value keeps the old buffer.
  if (req.on_device) {
    v->value = value;
    return Status::OK();
  }
  // The variable gets its own copy: the value's buffer may be a client's
  // feed, which the client may refill for its next step. Into the variable's
  // current buffer when no reader holds it and the shape is the same.
  if (v->value.IsInitialized() && v->value.RefCountIsOne() && v->value.shape() == value.shape() &&
      DataTypeIsPod(value.dtype())) {
    std::memcpy(v->value.raw_data(), value.raw_data(), value.TotalBytes());
    return Status::OK();
  }
  v->value = value.DeepCopy();
  return Status::OK();
}

// CountUpTo: increments a scalar int32/int64 variable below `limit`; the
// answer is the value before. At the limit: OutOfRange, nothing changes.
template <class T>
Status CountUpToTyped(VarSlot* v, int64_t limit, Tensor* answer) {
  const T before = v->value.scalar<T>();
  // T's maximum is a limit too: an int32 counter never overflows past it.
  if (static_cast<int64_t>(before) >= limit || before == std::numeric_limits<T>::max())
    return errors::OutOfRange("Reached limit of ", std::min<int64_t>(limit, std::numeric_limits<T>::max()), " (",
                              v->name, ")");
  Tensor out;
  AF_RETURN_IF_ERROR(Writable(v, &out));
  out.scalar<T>() = before + 1;
  v->value = std::move(out);
  if (answer) *answer = Tensor::Scalar<T>(before);
  return Status::OK();
}

Status CountUpTo(const VarUpdateRequest& req, VarSlot* v, Tensor* answer) {
  if (!v->value.IsInitialized()) return Uninitialized(*v);
  const Tensor& limit = req.args[0];
  if (limit.dtype() != DT_INT64 || limit.dims() != 0)
    return errors::InvalidArgument("CountUpTo: the limit must be an int64 scalar");
  if (v->value.dims() != 0)
    return errors::InvalidArgument("input is not a scalar: ", v->value.shape().DebugString(), " (", v->name, ")");
  switch (v->dtype) {
    case DT_INT32: return CountUpToTyped<int32_t>(v, limit.scalar<int64_t>(), answer);
    case DT_INT64: return CountUpToTyped<int64_t>(v, limit.scalar<int64_t>(), answer);
    default:
      return errors::InvalidArgument("CountUpTo does not support ", DataTypeString(v->dtype), " (", v->name, ")");
  }
}

// The optimizers, element-wise over flat views. `w` are the writable outputs
// (possibly the inputs themselves), `in` the current values.
template <class T>
struct Optimizers {
  static T S(const Tensor& t) { return t.scalar<T>(); }

  static void GradientDescent(const VarUpdateRequest& r, const std::vector<VarSlot*>& in, std::vector<Tensor>& w) {
    auto var = FlatArrayView<T>(w[0]);
    var = FlatArrayView<T>(in[0]->value) - FlatArrayView<T>(r.args[1]) * S(r.args[0]);
  }

  static void Momentum(const VarUpdateRequest& r, const std::vector<VarSlot*>& in, std::vector<Tensor>& w) {
    const T lr = S(r.args[0]), momentum = S(r.args[2]);
    auto grad = FlatArrayView<T>(r.args[1]);
    auto accum = FlatArrayView<T>(w[1]);
    accum = FlatArrayView<T>(in[1]->value) * momentum + grad;
    auto var = FlatArrayView<T>(w[0]);
    if (r.use_nesterov) var = FlatArrayView<T>(in[0]->value) - (grad * lr + accum * momentum * lr);
    else var = FlatArrayView<T>(in[0]->value) - accum * lr;
  }

  static void Adam(const VarUpdateRequest& r, const std::vector<VarSlot*>& in, std::vector<Tensor>& w) {
    const T beta1_power = S(r.args[0]), beta2_power = S(r.args[1]), lr = S(r.args[2]);
    const T beta1 = S(r.args[3]), beta2 = S(r.args[4]), epsilon = S(r.args[5]);
    auto grad = FlatArrayView<T>(r.args[6]);
    const T alpha = lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
    auto m = FlatArrayView<T>(w[1]);
    auto v = FlatArrayView<T>(w[2]);
    m = FlatArrayView<T>(in[1]->value) + (grad - FlatArrayView<T>(in[1]->value)) * (T(1) - beta1);
    v = FlatArrayView<T>(in[2]->value) + (grad.square() - FlatArrayView<T>(in[2]->value)) * (T(1) - beta2);
    auto var = FlatArrayView<T>(w[0]);
    if (r.use_nesterov)
      var = FlatArrayView<T>(in[0]->value) - ((grad * (T(1) - beta1) + m * beta1) * alpha) / (v.sqrt() + epsilon);
    else
      var = FlatArrayView<T>(in[0]->value) - (m * alpha) / (v.sqrt() + epsilon);
  }

  static void Adagrad(const VarUpdateRequest& r, const std::vector<VarSlot*>& in, std::vector<Tensor>& w) {
    const T lr = S(r.args[0]);
    auto grad = FlatArrayView<T>(r.args[1]);
    auto accum = FlatArrayView<T>(w[1]);
    accum = FlatArrayView<T>(in[1]->value) + grad.square();
    auto var = FlatArrayView<T>(w[0]);
    var = FlatArrayView<T>(in[0]->value) - grad * lr * accum.rsqrt();
  }

  static void RMSProp(const VarUpdateRequest& r, const std::vector<VarSlot*>& in, std::vector<Tensor>& w) {
    const T lr = S(r.args[0]), rho = S(r.args[1]), momentum = S(r.args[2]), epsilon = S(r.args[3]);
    auto grad = FlatArrayView<T>(r.args[4]);
    auto ms = FlatArrayView<T>(w[1]);
    ms = FlatArrayView<T>(in[1]->value) + (grad.square() - FlatArrayView<T>(in[1]->value)) * (T(1) - rho);
    auto mom = FlatArrayView<T>(w[2]);
    mom = FlatArrayView<T>(in[2]->value) * momentum + (grad * lr) / (ms + epsilon).sqrt();
    auto var = FlatArrayView<T>(w[0]);
    var = FlatArrayView<T>(in[0]->value) - mom;
  }
};

// Apply*: validation common to all optimizers, then the formula.
Status ApplyOptimizer(const VarUpdateRequest& req, std::vector<VarSlot*>& vars, std::vector<Tensor>* sources) {
  const auto kind = static_cast<VarUpdateKind>(req.kind);
  const char* op = VarUpdateName(kind);
  for (VarSlot* v : vars) {
    if (!v->value.IsInitialized()) return Uninitialized(*v);
    if (v->dtype != DT_FLOAT && v->dtype != DT_DOUBLE)
      return errors::InvalidArgument(op, " does not support ", DataTypeString(v->dtype), " (", v->name, ")");
    if (v->dtype != vars[0]->dtype || v->value.shape() != vars[0]->value.shape())
      return errors::InvalidArgument(op, ": ", v->name, " (", DataTypeString(v->dtype), " ",
                                     v->value.shape().DebugString(), ") does not match ", vars[0]->name, " (",
                                     DataTypeString(vars[0]->dtype), " ", vars[0]->value.shape().DebugString(), ")");
  }
  // Every argument has the variable's dtype; the gradient (or delta) has its
  // shape and the rest are scalars.
  const size_t grad_index = kind == VarUpdateKind::kGradientDescent ? 1
                            : kind == VarUpdateKind::kMomentum      ? 1
                            : kind == VarUpdateKind::kAdam          ? 6
                            : kind == VarUpdateKind::kAdagrad       ? 1
                                                                    : 4;
  for (size_t i = 0; i < req.args.size(); ++i) {
    const char* what = i == grad_index ? (kind == VarUpdateKind::kGradientDescent ? "delta" : "grad") : "argument";
    AF_RETURN_IF_ERROR(CheckDtype(*vars[0], req.args[i], what));
    if (i == grad_index) {
      AF_RETURN_IF_ERROR(CheckSameShape(*vars[0], req.args[i], what));
    } else if (req.args[i].dims() != 0) {
      return errors::InvalidArgument(op, ": argument ", i, " is not a scalar: ", req.args[i].shape().DebugString());
    }
  }
  if (req.on_device) return DeviceWritable(vars, sources);  // the device's kernel computes
  std::vector<Tensor> w(vars.size());
  for (size_t i = 0; i < vars.size(); ++i) AF_RETURN_IF_ERROR(Writable(vars[i], &w[i]));
  auto run = [&](auto tag) {
    using T = decltype(tag);
    switch (kind) {
      case VarUpdateKind::kGradientDescent: Optimizers<T>::GradientDescent(req, vars, w); break;
      case VarUpdateKind::kMomentum: Optimizers<T>::Momentum(req, vars, w); break;
      case VarUpdateKind::kAdam: Optimizers<T>::Adam(req, vars, w); break;
      case VarUpdateKind::kAdagrad: Optimizers<T>::Adagrad(req, vars, w); break;
      case VarUpdateKind::kRMSProp: Optimizers<T>::RMSProp(req, vars, w); break;
      default: break;
    }
  };
  if (vars[0]->dtype == DT_FLOAT) run(float{});
  else run(double{});
  for (size_t i = 0; i < vars.size(); ++i) vars[i]->value = std::move(w[i]);
  return Status::OK();
}

// Host updates touch host memory only; a variable whose value is in device
// memory (placed on a GPU) is updated by its device's kernels (on_device),
// which the container only checks and answers with the variables' tensors.
Status CheckMemory(const VarUpdateRequest& req, const std::vector<VarSlot*>& vars) {
  const auto kind = static_cast<VarUpdateKind>(req.kind);
  const char* op = VarUpdateName(kind);
  if (req.on_device) {
    if (kind == VarUpdateKind::kCountUpTo)
      return errors::InvalidArgument(op, " of ", vars[0]->name, " has no device kernel");
    if (kind == VarUpdateKind::kAssign) {
      if (req.args[0].InHostMemory() && req.args[0].NumElements() > 0)
        return errors::Internal(op, " of ", vars[0]->name, " on a device with a value in host memory");
      return Status::OK();
    }
    for (const VarSlot* v : vars)
      if (v->value.IsInitialized() && v->value.InHostMemory() && v->value.NumElements() > 0)
        return errors::FailedPrecondition(op, ": variable ", v->name,
                                          " holds its value in host memory, but the update runs on a device; "
                                          "place the variable and its updates on the same device");
    return Status::OK();
  }
  for (const VarSlot* v : vars)
    if (v->value.IsInitialized() && !v->value.InHostMemory())
      return errors::FailedPrecondition(op, ": variable ", v->name,
                                        " holds its value in device memory (it was placed on a GPU); place its "
                                        "updates on that device (they are colocated with it unless asked otherwise)");
  for (size_t i = 0; i < req.args.size(); ++i)
    if (!req.args[i].InHostMemory())
      return errors::Internal(op, " of ", vars[0]->name, ": argument ", i, " is in device memory");
  return Status::OK();
}

}  // namespace

Status ApplyVarUpdate(const VarUpdateRequest& req, std::vector<VarSlot*>& vars, Tensor* answer,
                      std::vector<Tensor>* sources) {
  if (req.kind < 0 || req.kind > static_cast<int32_t>(VarUpdateKind::kCountUpTo))
    return errors::InvalidArgument("unknown variable update ", req.kind);
  const auto kind = static_cast<VarUpdateKind>(req.kind);
  const Arity arity = ArityOf(kind);
  if (vars.size() != arity.vars || req.args.size() != arity.args)
    return errors::InvalidArgument(VarUpdateName(kind), " takes ", arity.vars, " variables and ", arity.args,
                                   " arguments, got ", vars.size(), " and ", req.args.size());
  for (const Tensor& a : req.args)
    if (!a.IsInitialized()) return errors::InvalidArgument(VarUpdateName(kind), ": an argument has no value");
  AF_RETURN_IF_ERROR(CheckMemory(req, vars));
  switch (kind) {
    case VarUpdateKind::kAssign: return Assign(req, vars[0]);
    case VarUpdateKind::kAssignAdd:
    case VarUpdateKind::kAssignSub:
      if (req.on_device) {
        AF_RETURN_IF_ERROR(CheckAddSub(req, *vars[0]));
        return DeviceWritable(vars, sources);
      }
      return AssignAddSub(req, vars[0], kind == VarUpdateKind::kAssignAdd);
    case VarUpdateKind::kCountUpTo: return CountUpTo(req, vars[0], answer);
    default: return ApplyOptimizer(req, vars, sources);
  }
}

int64_t VarUpdateSize(const VarUpdateRequest& req, const std::vector<VarSlot*>& vars) {
  int64_t n = 0;
  for (const VarSlot* v : vars) n = std::max(n, v->value.NumElements());
  for (const Tensor& a : req.args) n = std::max(n, a.NumElements());
  return n;
}

}  // namespace actorflow
