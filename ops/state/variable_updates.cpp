#include "actorflow/ops/state/variable_updates.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/devices/inline_delivery.hpp"
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

// The argument holding the gradient (or delta) of an optimizer's update.
size_t GradIndex(VarUpdateKind kind) {
  switch (kind) {
    case VarUpdateKind::kAdam: return 6;
    case VarUpdateKind::kRMSProp: return 4;
    default: return 1;  // GradientDescent's delta; Momentum's, Adagrad's grad
  }
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
Status DeviceWritable(VarSlots& vars, std::vector<Tensor>* sources, bool capturing) {
  std::vector<Tensor> fresh(vars.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    const Tensor& v = vars[i]->value;
    if (v.RefCountIsOne() || v.NumElements() == 0) continue;
    if (capturing)
      return errors::FailedPrecondition(vars[i]->name, " is read by another step: its buffer would change (copy on ",
                                        "write), which a captured step cannot follow");
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

// Elements a shard of an update works through at a time: every pass of a
// formula over a chunk stays in the core's cache, so an update reads and
// writes each byte of memory once whatever the number of passes.
constexpr int64_t kChunk = 2048;

// Runs fn(begin, end) over [0, n): sharded over `pool` when given and worth
// it (from a pool job, or on the thread of a client waiting for its step,
// which takes shards too), else on this thread alone.
template <class Fn>
void Shard(ComputePool* pool, int64_t n, int64_t cost_per_element, Fn&& fn) {
  if (pool && InClientDelivery()) {
    pool->ParallelFor(n, cost_per_element, fn);
  } else if (pool) {
    pool->For(n, cost_per_element, fn);  // splits from a pool job only
  } else if (n > 0) {
    fn(int64_t{0}, n);
  }
}

// Signed integers add in their unsigned type (integer_wrap.hpp): overflow
// wraps in two's complement instead of being undefined.
template <class T>
void AddOrSubRange(const T* in, const T* delta, bool add, T* out, int64_t b, int64_t e) {
  using E = WrapT<T>;
  FlatArray<E> o(AsWrapping(out) + b, e - b);
  ConstFlatArray<E> a(AsWrapping(const_cast<T*>(in)) + b, e - b);
  ConstFlatArray<E> d(AsWrapping(const_cast<T*>(delta)) + b, e - b);
  if (add) o = a + d;
  else o = a - d;
}

template <class T>
void AddOrSub(const T* in, const T* delta, bool add, T* out, int64_t n, ComputePool* pool) {
  Shard(pool, n, 2, [&](int64_t b, int64_t e) { AddOrSubRange<T>(in, delta, add, out, b, e); });
}

void AddOrSubTyped(DataType dtype, const void* in, const void* delta, bool add, void* out, int64_t n,
                   ComputePool* pool) {
  switch (dtype) {
    case DT_FLOAT: AddOrSub(static_cast<const float*>(in), static_cast<const float*>(delta), add, static_cast<float*>(out), n, pool); break;
    case DT_DOUBLE: AddOrSub(static_cast<const double*>(in), static_cast<const double*>(delta), add, static_cast<double*>(out), n, pool); break;
    case DT_INT32: AddOrSub(static_cast<const int32_t*>(in), static_cast<const int32_t*>(delta), add, static_cast<int32_t*>(out), n, pool); break;
    case DT_INT64: AddOrSub(static_cast<const int64_t*>(in), static_cast<const int64_t*>(delta), add, static_cast<int64_t*>(out), n, pool); break;
    default: break;  // refused by CheckAddSub
  }
}

Status CheckAddSub(const VarUpdateRequest& req, const VarSlot& v) {
  if (!v.value.IsInitialized()) return Uninitialized(v);
  if (v.dtype != DT_FLOAT && v.dtype != DT_DOUBLE && v.dtype != DT_INT32 && v.dtype != DT_INT64)
    return errors::InvalidArgument(VarUpdateName(static_cast<VarUpdateKind>(req.kind)), " does not support ",
                                   DataTypeString(v.dtype), " (", v.name, ")");
  AF_RETURN_IF_ERROR(CheckDtype(v, req.args[0], "value"));
  return CheckSameShape(v, req.args[0], "value");
}

Status AssignAddSub(const VarUpdateRequest& req, VarSlot* v, bool add, ComputePool* pool) {
  const Tensor& delta = req.args[0];
  AF_RETURN_IF_ERROR(CheckAddSub(req, *v));
  Tensor out;
  AF_RETURN_IF_ERROR(Writable(v, &out));
  AddOrSubTyped(v->dtype, v->value.raw_data(), delta.raw_data(), add, out.raw_data(), out.NumElements(), pool);
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
    if (req.capturing && v->value.buffer() != value.buffer())
      return errors::FailedPrecondition("Assign gives ", v->name, " a new buffer, which a captured step cannot "
                                        "follow");
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

// The optimizers, element-wise over [b, e) of flat buffers, a chunk at a time
// (kChunk). `w` are the buffers written (the inputs themselves when in
// place), `in` the current values, `grad` the gradient (or delta); scalars
// come from the request.
template <class T>
struct Optimizers {
  using A = FlatArray<T>;
  using C = ConstFlatArray<T>;
  static T S(const Tensor& t) { return t.scalar<T>(); }

  static void GradientDescent(const VarUpdateRequest& r, T* const* w, const T* const* in, const T* grad, int64_t b,
                              int64_t e) {
    const T alpha = S(r.args[0]);
    A(w[0] + b, e - b) = C(in[0] + b, e - b) - C(grad + b, e - b) * alpha;
  }

  static void Momentum(const VarUpdateRequest& r, T* const* w, const T* const* in, const T* grad_all, int64_t b,
                       int64_t e) {
    const T lr = S(r.args[0]), momentum = S(r.args[2]);
    for (int64_t c = b; c < e; c += kChunk) {
      const int64_t n = std::min(kChunk, e - c);
      C grad(grad_all + c, n);
      A accum(w[1] + c, n);
      accum = C(in[1] + c, n) * momentum + grad;
      if (r.use_nesterov) A(w[0] + c, n) = C(in[0] + c, n) - (grad * lr + accum * momentum * lr);
      else A(w[0] + c, n) = C(in[0] + c, n) - accum * lr;
    }
  }

  static void Adam(const VarUpdateRequest& r, T* const* w, const T* const* in, const T* grad_all, int64_t b,
                   int64_t e) {
    const T beta1_power = S(r.args[0]), beta2_power = S(r.args[1]), lr = S(r.args[2]);
    const T beta1 = S(r.args[3]), beta2 = S(r.args[4]), epsilon = S(r.args[5]);
    const T alpha = lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
    for (int64_t c = b; c < e; c += kChunk) {
      const int64_t n = std::min(kChunk, e - c);
      C grad(grad_all + c, n);
      A m(w[1] + c, n), v(w[2] + c, n);
      m = C(in[1] + c, n) + (grad - C(in[1] + c, n)) * (T(1) - beta1);
      v = C(in[2] + c, n) + (grad.square() - C(in[2] + c, n)) * (T(1) - beta2);
      if (r.use_nesterov)
        A(w[0] + c, n) = C(in[0] + c, n) - ((grad * (T(1) - beta1) + m * beta1) * alpha) / (v.sqrt() + epsilon);
      else
        A(w[0] + c, n) = C(in[0] + c, n) - (m * alpha) / (v.sqrt() + epsilon);
    }
  }

  static void Adagrad(const VarUpdateRequest& r, T* const* w, const T* const* in, const T* grad_all, int64_t b,
                      int64_t e) {
    const T lr = S(r.args[0]);
    for (int64_t c = b; c < e; c += kChunk) {
      const int64_t n = std::min(kChunk, e - c);
      C grad(grad_all + c, n);
      A accum(w[1] + c, n);
      accum = C(in[1] + c, n) + grad.square();
      A(w[0] + c, n) = C(in[0] + c, n) - grad * lr * accum.rsqrt();
    }
  }

  static void RMSProp(const VarUpdateRequest& r, T* const* w, const T* const* in, const T* grad_all, int64_t b,
                      int64_t e) {
    const T lr = S(r.args[0]), rho = S(r.args[1]), momentum = S(r.args[2]), epsilon = S(r.args[3]);
    for (int64_t c = b; c < e; c += kChunk) {
      const int64_t n = std::min(kChunk, e - c);
      C grad(grad_all + c, n);
      A ms(w[1] + c, n), mom(w[2] + c, n);
      ms = C(in[1] + c, n) + (grad.square() - C(in[1] + c, n)) * (T(1) - rho);
      mom = C(in[2] + c, n) * momentum + (grad * lr) / (ms + epsilon).sqrt();
      A(w[0] + c, n) = C(in[0] + c, n) - mom;
    }
  }

  // ≈ cycles per element, for sharding.
  static int64_t Cost(VarUpdateKind kind) {
    switch (kind) {
      case VarUpdateKind::kGradientDescent: return 3;
      case VarUpdateKind::kMomentum: return 6;
      case VarUpdateKind::kAdagrad: return 12;
      default: return 20;  // Adam, RMSProp: square roots and divisions
    }
  }

  static void Run(const VarUpdateRequest& r, T* const* w, const T* const* in, int64_t n, ComputePool* pool) {
    const auto kind = static_cast<VarUpdateKind>(r.kind);
    const T* grad = r.args[GradIndex(kind)].template data<T>();
    Shard(pool, n, Cost(kind), [&](int64_t b, int64_t e) {
      switch (kind) {
        case VarUpdateKind::kGradientDescent: GradientDescent(r, w, in, grad, b, e); break;
        case VarUpdateKind::kMomentum: Momentum(r, w, in, grad, b, e); break;
        case VarUpdateKind::kAdam: Adam(r, w, in, grad, b, e); break;
        case VarUpdateKind::kAdagrad: Adagrad(r, w, in, grad, b, e); break;
        case VarUpdateKind::kRMSProp: RMSProp(r, w, in, grad, b, e); break;
        default: break;
      }
    });
  }
};

// Runs an optimizer's formula over n elements of `dtype` (float or double).
void RunOptimizer(const VarUpdateRequest& req, DataType dtype, void* const* w, const void* const* in, int64_t n,
                  ComputePool* pool) {
  if (dtype == DT_FLOAT) {
    float* wf[3] = {};
    const float* inf[3] = {};
    for (int i = 0; i < 3; ++i) wf[i] = static_cast<float*>(w[i]), inf[i] = static_cast<const float*>(in[i]);
    Optimizers<float>::Run(req, wf, inf, n, pool);
  } else {
    double* wd[3] = {};
    const double* ind[3] = {};
    for (int i = 0; i < 3; ++i) wd[i] = static_cast<double*>(w[i]), ind[i] = static_cast<const double*>(in[i]);
    Optimizers<double>::Run(req, wd, ind, n, pool);
  }
}

// Apply*: validation common to all optimizers; changes nothing.
Status CheckOptimizer(const VarUpdateRequest& req, const VarSlots& vars) {
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
  const size_t grad_index = GradIndex(kind);
  for (size_t i = 0; i < req.args.size(); ++i) {
    const char* what = i == grad_index ? (kind == VarUpdateKind::kGradientDescent ? "delta" : "grad") : "argument";
    AF_RETURN_IF_ERROR(CheckDtype(*vars[0], req.args[i], what));
    if (i == grad_index) {
      AF_RETURN_IF_ERROR(CheckSameShape(*vars[0], req.args[i], what));
    } else if (req.args[i].dims() != 0) {
      return errors::InvalidArgument(op, ": argument ", i, " is not a scalar: ", req.args[i].shape().DebugString());
    }
  }
  return Status::OK();
}

// Apply*: the checks, then the formula (sharded over `pool` when given).
Status ApplyOptimizer(const VarUpdateRequest& req, VarSlots& vars, std::vector<Tensor>* sources,
                      ComputePool* pool) {
  AF_RETURN_IF_ERROR(CheckOptimizer(req, vars));
  if (req.on_device) return DeviceWritable(vars, sources, req.capturing);  // the device's kernel computes
  Tensor w[3];  // CheckRequest: an optimizer names at most 3 variables
  for (size_t i = 0; i < vars.size(); ++i) AF_RETURN_IF_ERROR(Writable(vars[i], &w[i]));
  void* wp[3] = {};
  const void* inp[3] = {};
  for (size_t i = 0; i < vars.size(); ++i) wp[i] = w[i].raw_data(), inp[i] = vars[i]->value.raw_data();
  RunOptimizer(req, vars[0]->dtype, wp, inp, vars[0]->value.NumElements(), pool);
  for (size_t i = 0; i < vars.size(); ++i) vars[i]->value = std::move(w[i]);
  return Status::OK();
}

// Host updates touch host memory only; a variable whose value is in device
// memory (placed on a GPU) is updated by its device's kernels (on_device),
// which the container only checks and answers with the variables' tensors.
Status CheckMemory(const VarUpdateRequest& req, const VarSlots& vars) {
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

// What every update checks first: its kind, arity, arguments and memory.
Status CheckRequest(const VarUpdateRequest& req, const VarSlots& vars) {
  if (req.kind < 0 || req.kind > static_cast<int32_t>(VarUpdateKind::kCountUpTo))
    return errors::InvalidArgument("unknown variable update ", req.kind);
  const auto kind = static_cast<VarUpdateKind>(req.kind);
  const Arity arity = ArityOf(kind);
  if (vars.size() != arity.vars || req.args.size() != arity.args)
    return errors::InvalidArgument(VarUpdateName(kind), " takes ", arity.vars, " variables and ", arity.args,
                                   " arguments, got ", vars.size(), " and ", req.args.size());
  for (const Tensor& a : req.args)
    if (!a.IsInitialized()) return errors::InvalidArgument(VarUpdateName(kind), ": an argument has no value");
  return CheckMemory(req, vars);
}

}  // namespace

Status ApplyVarUpdate(const VarUpdateRequest& req, VarSlots& vars, Tensor* answer,
                      std::vector<Tensor>* sources, ComputePool* pool) {
  AF_RETURN_IF_ERROR(CheckRequest(req, vars));
  const auto kind = static_cast<VarUpdateKind>(req.kind);
  switch (kind) {
    case VarUpdateKind::kAssign: return Assign(req, vars[0]);
    case VarUpdateKind::kAssignAdd:
    case VarUpdateKind::kAssignSub:
      if (req.on_device) {
        AF_RETURN_IF_ERROR(CheckAddSub(req, *vars[0]));
        return DeviceWritable(vars, sources, req.capturing);
      }
      return AssignAddSub(req, vars[0], kind == VarUpdateKind::kAssignAdd, pool);
    case VarUpdateKind::kCountUpTo: return CountUpTo(req, vars[0], answer);
    default: return ApplyOptimizer(req, vars, sources, pool);
  }
}

bool MayRace(VarUpdateKind kind) {
  return kind != VarUpdateKind::kAssign && kind != VarUpdateKind::kCountUpTo;
}

Status CheckVarUpdate(const VarUpdateRequest& req, const VarSlots& vars) {
  AF_RETURN_IF_ERROR(CheckRequest(req, vars));
  const auto kind = static_cast<VarUpdateKind>(req.kind);
  if (!MayRace(kind) || req.on_device)
    return errors::Internal(VarUpdateName(kind), " is always applied whole (ApplyVarUpdate)");
  if (kind == VarUpdateKind::kAssignAdd || kind == VarUpdateKind::kAssignSub) return CheckAddSub(req, *vars[0]);
  return CheckOptimizer(req, vars);
}

void ComputeVarUpdateInPlace(const VarUpdateRequest& req, DataType dtype, void* const* data, int64_t n,
                             ComputePool* pool) {
  const auto kind = static_cast<VarUpdateKind>(req.kind);
  if (kind == VarUpdateKind::kAssignAdd || kind == VarUpdateKind::kAssignSub) {
    AddOrSubTyped(dtype, data[0], req.args[0].raw_data(), kind == VarUpdateKind::kAssignAdd, data[0], n, pool);
    return;
  }
  const void* in[3] = {data[0], data[1], data[2]};
  RunOptimizer(req, dtype, data, in, n, pool);
}

int64_t VarUpdateElements(const VarUpdateRequest& req) {
  int64_t n = 0;
  for (const Tensor& a : req.args) n = std::max(n, a.NumElements());
  return n;
}

}  // namespace actorflow
