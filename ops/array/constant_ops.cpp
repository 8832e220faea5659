// Const, Placeholder, PlaceholderWithDefault, Fill, ZerosLike, OnesLike, Range:
// ops that produce tensors from attrs, shapes or scalars.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "actorflow/core/proto/tensor.pb.h"
#include "actorflow/core/tensor_proto.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

// ---------------------------------------------------------------------------
// Helpers.

/// Writes n copies of the `esize`-byte element `elem` at `dst` (memcpy doubling).
void FillBytes(char* dst, const void* elem, size_t esize, int64_t n) {
  if (n <= 0) return;
  if (esize == 1) {
    std::memset(dst, *static_cast<const unsigned char*>(elem), static_cast<size_t>(n));
    return;
  }
  const size_t total = static_cast<size_t>(n) * esize;
  std::memcpy(dst, elem, esize);
  size_t filled = esize;
  while (filled < total) {
    const size_t chunk = std::min(filled, total - filled);
    std::memcpy(dst + filled, dst, chunk);
    filled += chunk;
  }
}

/// Fills every element of `out` with the element `elem` (a std::string* for
/// strings). The heap bytes n copies of a long string take are charged to
/// the output's budget first: ResourceExhausted, before any is made, when
/// they do not fit.
Status FillTensor(OpKernelContext* ctx, const void* elem, Tensor* out) {
  const int64_t n = out->NumElements();
  if (n == 0) return Status::OK();
  if (BaseType(out->dtype()) == DT_STRING) {
    const std::string& v = *static_cast<const std::string*>(elem);
    std::string probe;
    probe = v;  // as each element is assigned: its capacity is each copy's
    const auto each = static_cast<int64_t>(StringHeapBytes(probe));
    int64_t heap = 0;
    if (__builtin_mul_overflow(each, n, &heap)) heap = INT64_MAX;
    AF_RETURN_IF_ERROR(out->ChargeStringBytes(heap));
    std::string* po = out->data<std::string>();
    ctx->device()->compute_pool()->For(n, 8 + static_cast<int64_t>(v.size()), [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) po[i] = v;
    });
    return Status::OK();
  }
  const size_t esize = DataTypeSize(out->dtype());
  char* po = static_cast<char*>(out->raw_data());
  ctx->device()->compute_pool()->For(n, 1,
                                     [&](int64_t s, int64_t e) { FillBytes(po + s * esize, elem, esize, e - s); });
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Const

Status ConstShape(InferenceContext* c) {
  auto it = c->node().attr().find("value");
  if (it == c->node().attr().end() || it->second.value_case() != proto::AttrValue::kTensor)
    return c->Error("Const has no tensor attr 'value'");
  const auto& shape = it->second.tensor().tensor_shape();
  if (shape.dim_size() > kMaxShapeRank)
    return c->Error("attr 'value' is a tensor of rank ", shape.dim_size(), ", more than the maximum rank ",
                    kMaxShapeRank);
  c->set_output(0, PartialShapeFromProto(shape));
  return Status::OK();
}

AF_REGISTER_OP("Const")
    .Output("output: dtype")
    .Attr("value: tensor")
    .Attr("dtype: type")
    .SetShapeFn(ConstShape)
    .Doc("Returns a constant tensor.");

class ConstOp : public OpKernel {
 public:
  explicit ConstOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("value", &tensor_);
    if (!s.ok()) {
      c->SetStatus(s);
      return;
    }
    const DataType want = BaseType(c->output_types()[0]);
    if (tensor_.dtype() != want) {
      c->SetStatus(errors::InvalidArgument("Type mismatch between value (", DataTypeString(tensor_.dtype()),
                                           ") and dtype (", DataTypeString(want), ")"));
    }
  }
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, tensor_); }

 private:
  Tensor tensor_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("Const").Device(DEVICE_CPU), ConstOp);

// ---------------------------------------------------------------------------
// Placeholder, PlaceholderWithDefault

AF_REGISTER_OP("Placeholder")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape = { unknown_rank: true }")
    .SetShapeFn(shape_fns::ShapeAttr)
    .Doc("A placeholder for a value that will be fed into the computation.");

class PlaceholderOp : public OpKernel {
 public:
  explicit PlaceholderOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("shape", &expected_shape_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const std::string dtype = DataTypeString(BaseType(output_type(0)));
    if (expected_shape_.dims() > 0) {
      ctx->SetStatus(errors::InvalidArgument("You must feed a value for placeholder tensor '", name(),
                                             "' with dtype ", dtype, " and shape ",
                                             expected_shape_.DebugString()));
    } else {
      ctx->SetStatus(errors::InvalidArgument("You must feed a value for placeholder tensor '", name(),
                                             "' with dtype ", dtype));
    }
  }

 private:
  PartialTensorShape expected_shape_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("Placeholder").Device(DEVICE_CPU), PlaceholderOp);

Status PlaceholderWithDefaultShape(InferenceContext* c) {
  PartialTensorShape shape;
  AF_RETURN_IF_ERROR(c->GetAttr("shape", &shape));
  if (!c->input(0).IsCompatibleWith(shape))
    return c->Error("PlaceholderWithDefault: the default value's shape ", c->input(0).DebugString(),
                    " is not compatible with the shape attr ", shape.DebugString());
  c->set_output(0, shape);
  return Status::OK();
}

AF_REGISTER_OP("PlaceholderWithDefault")
    .Input("input: dtype")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape")
    .SetShapeFn(PlaceholderWithDefaultShape)
    .Doc("A placeholder op that passes through `input` when its output is not fed.");

class PlaceholderWithDefaultOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
};
AF_REGISTER_KERNEL(KernelDefBuilder("PlaceholderWithDefault").Device(DEVICE_CPU), PlaceholderWithDefaultOp);

// ---------------------------------------------------------------------------
// Fill

Status FillShape(InferenceContext* c) {
  const auto& dims_shape = c->input(0);
  if (!dims_shape.unknown_rank() && dims_shape.dims() != 1)
    return c->Error("Shape must be rank 1 but is rank ", dims_shape.dims(), " for input 'dims' of shape ",
                    dims_shape.DebugString());
  if (!c->input(1).unknown_rank() && c->input(1).dims() != 0)
    return c->Error("Shape must be rank 0 but is rank ", c->input(1).dims(), " for input 'value' of shape ",
                    c->input(1).DebugString());
  const Tensor* t = c->input_tensor(0);
  if (t != nullptr && IsIndexDtype(t->dtype()) && t->dims() == 1) {
    if (t->NumElements() > kMaxShapeRank)
      return c->Error("dims has ", t->NumElements(), " entries, more than the maximum rank ", kMaxShapeRank);
    std::vector<int64_t> dims = TensorToInt64s(*t);
    int64_t elements = 1;
    for (int64_t d : dims) {
      if (d < 0) return c->Error("Fill dimensions must be >= 0, got ", d, " in dims ", t->SummarizeValue());
      // As TensorShape::FromDims: the product of the non-zero dims must fit.
      if (d != 0 && !MulDims(elements, d, &elements))
        return c->Error("dims ", t->SummarizeValue(), " describe more than 2^63-1 elements");
    }
    c->set_output(0, PartialTensorShape(dims));
    return Status::OK();
  }
  int rank = -1;
  if (!dims_shape.unknown_rank()) AF_RETURN_IF_ERROR(RankFromDim(c, dims_shape.dim_size(0), "dims", &rank));
  c->set_output(0, UnknownShapeOfRank(rank));
  return Status::OK();
}

AF_REGISTER_OP("Fill")
    .Input("dims: index_type")
    .Input("value: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("index_type: {int32, int64} = DT_INT32")
    .SetShapeFn(FillShape)
    .Doc("Creates a tensor of shape `dims` filled with the scalar `value`.");

// Output size above which Fill and Range leave the device actor's thread.
constexpr double kOffloadBytes = 128 * 1024;

class FillOp : public OpKernel {
 public:
  explicit FillOp(OpKernelConstruction* c) : OpKernel(c) { expensive_ = true; }

  // The cost is the output's: its element count is the product of `dims`.
  bool ShouldOffload(const Tensor* inputs, int) const override {
    if (!IsIndexDtype(inputs[0].dtype())) return false;  // Compute reports the error
    double elems = 1;
    for (int64_t d : TensorToInt64s(inputs[0])) elems *= static_cast<double>(std::max<int64_t>(d, 0));
    return elems * static_cast<double>(std::max<size_t>(DataTypeSize(inputs[1].dtype()), 8)) > kOffloadBytes;
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    TensorShape shape;
    AF_REQUIRES_OK(ctx, FillOutputShape(ctx->input(0), value, &shape));
    const DataType dt = BaseType(value.dtype());
    AF_REQUIRES(ctx, dt == DT_STRING || DataTypeIsPod(dt),
                errors::Unimplemented("Fill does not support dtype ", DataTypeString(dt)));
    if (dt == DT_STRING) {
      // Caps the output's string bytes at 2^34 (16 GiB): a huge shape times a
      // long value fails here rather than trying to allocate terabytes.
      constexpr int64_t kMaxStringFillBytes = int64_t{1} << 34;
      const int64_t len = static_cast<int64_t>(value.data<std::string>()->size());
      AF_REQUIRES(ctx, len == 0 || shape.num_elements() <= kMaxStringFillBytes / len,
                  errors::ResourceExhausted("Fill of shape ", shape.DebugString(), " with a string of ", len,
                                            " bytes exceeds ", kMaxStringFillBytes, " bytes"));
    }
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    AF_REQUIRES_OK(ctx, FillTensor(ctx, value.raw_data(), out));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Fill").Device(DEVICE_CPU), FillOp);

// ---------------------------------------------------------------------------
// ZerosLike, OnesLike

AF_REGISTER_OP("ZerosLike")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Returns a tensor of zeros with the same shape and type as x.");

AF_REGISTER_OP("OnesLike")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {bfloat16, half, float, double, int8, uint8, int16, uint16, int32, uint32, int64, uint64, "
          "complex64, complex128, bool}")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Returns a tensor of ones with the same shape and type as x.");

std::vector<DataType> NumberAndBoolTypes() {
  return {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64,  DT_UINT8, DT_INT16,
          DT_INT8,  DT_UINT16, DT_UINT32, DT_UINT64, DT_BOOL};
}

std::vector<DataType> ZerosLikeTypes() {
  auto v = NumberAndBoolTypes();
  v.push_back(DT_STRING);
  return v;
}

class ZerosLikeOp : public OpKernel {
 public:
  explicit ZerosLikeOp(OpKernelConstruction* c) : OpKernel(c) { expensive_ = true; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out;
    if (BaseType(x.dtype()) == DT_STRING) {
      // A fresh string tensor holds empty strings: the zero of strings.
      AF_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
      return;
    }
    AF_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &out));
    const size_t esize = DataTypeSize(out->dtype());
    char* po = static_cast<char*>(out->raw_data());
    ctx->device()->compute_pool()->For(out->NumElements(), 1, [&](int64_t s, int64_t e) {
      std::memset(po + s * esize, 0, static_cast<size_t>(e - s) * esize);
    });
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ZerosLike").Device(DEVICE_CPU).TypeConstraint("T", ZerosLikeTypes()),
                   ZerosLikeOp);

class OnesLikeOp : public OpKernel {
 public:
  explicit OnesLikeOp(OpKernelConstruction* c) : OpKernel(c) { expensive_ = true; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &out));
    const DataType dt = BaseType(x.dtype());
    if (dt == DT_BOOL) {
      const bool one = true;
      AF_REQUIRES_OK(ctx, FillTensor(ctx, &one, out));
      return;
    }
    AF_SWITCH_NUMBER(dt,
                     ctx->SetStatus(errors::Unimplemented("OnesLike does not support dtype ", DataTypeString(dt))),
                     const T one = static_cast<T>(1);
                     AF_REQUIRES_OK(ctx, FillTensor(ctx, &one, out)));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("OnesLike").Device(DEVICE_CPU).TypeConstraint("T", NumberAndBoolTypes()),
                   OnesLikeOp);

// ---------------------------------------------------------------------------
// Range

/// Checks start/limit/delta and computes the number of elements, as TensorFlow.
template <class T>
Status RangeSize(T start, T limit, T delta, int64_t* size) {
  if (!(delta != 0)) return errors::InvalidArgument("Requires delta != 0: ", delta);
  if (delta > 0) {
    if (!(start <= limit))
      return errors::InvalidArgument("Requires start <= limit when delta > 0: ", start, "/", limit);
  } else {
    if (!(start >= limit))
      return errors::InvalidArgument("Requires start >= limit when delta < 0: ", start, "/", limit);
  }
  if constexpr (std::is_integral_v<T>) {
    // |limit - start| and |delta| in unsigned arithmetic: no overflow.
    const uint64_t diff = delta > 0 ? static_cast<uint64_t>(limit) - static_cast<uint64_t>(start)
                                    : static_cast<uint64_t>(start) - static_cast<uint64_t>(limit);
    const uint64_t adelta = delta > 0 ? static_cast<uint64_t>(delta) : uint64_t{0} - static_cast<uint64_t>(delta);
    const uint64_t n = diff / adelta + (diff % adelta != 0 ? 1 : 0);
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return errors::InvalidArgument("Requires ((limit - start) / delta) <= ", std::numeric_limits<int64_t>::max());
    *size = static_cast<int64_t>(n);
  } else {
    const T n = std::ceil(std::abs((limit - start) / delta));
    // 2^63 is exactly representable; anything at or above it (and NaN) fails.
    if (!(static_cast<double>(n) < 9223372036854775808.0))
      return errors::InvalidArgument("Requires ((limit - start) / delta) <= ", std::numeric_limits<int64_t>::max());
    *size = static_cast<int64_t>(n);
  }
  return Status::OK();
}

Status RangeShape(InferenceContext* c) {
  static const char* const kNames[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    if (!c->input(i).unknown_rank() && c->input(i).dims() != 0)
      return c->Error(kNames[i], " must be a scalar, not shape ", c->input(i).DebugString());
  }
  const Tensor* ts[3] = {c->input_tensor(0), c->input_tensor(1), c->input_tensor(2)};
  if (ts[0] == nullptr || ts[1] == nullptr || ts[2] == nullptr || ts[0]->NumElements() != 1 ||
      ts[1]->NumElements() != 1 || ts[2]->NumElements() != 1 || ts[0]->dtype() != ts[1]->dtype() ||
      ts[0]->dtype() != ts[2]->dtype()) {
    c->set_output(0, PartialTensorShape(std::vector<int64_t>{-1}));
    return Status::OK();
  }
  int64_t size = -1;
  Status s;
  AF_SWITCH_REAL(ts[0]->dtype(), {},
                 s = RangeSize<T>(ts[0]->scalar<T>(), ts[1]->scalar<T>(), ts[2]->scalar<T>(), &size));
  if (!s.ok()) return c->Error(s.message());
  c->set_output(0, PartialTensorShape(std::vector<int64_t>{size}));
  return Status::OK();
}

AF_REGISTER_OP("Range")
    .Input("start: Tidx")
    .Input("limit: Tidx")
    .Input("delta: Tidx")
    .Output("output: Tidx")
    .Attr("Tidx: {float, double, int32, int64} = DT_INT32")
    .SetShapeFn(RangeShape)
    .Doc("Creates a sequence of numbers from start up to (not including) limit by increments of delta.");

class RangeOp : public OpKernel {
 public:
  explicit RangeOp(OpKernelConstruction* c) : OpKernel(c) { expensive_ = true; }

  // The cost is the output's: (limit - start) / delta elements.
  bool ShouldOffload(const Tensor* inputs, int) const override {
    double v[3];
    for (int i = 0; i < 3; ++i) {
      if (inputs[i].NumElements() != 1) return false;  // Compute reports the error
      AF_SWITCH_REAL(inputs[i].dtype(), return false, v[i] = static_cast<double>(inputs[i].data<T>()[0]));
    }
    return v[2] != 0 && std::abs((v[1] - v[0]) / v[2]) * 8 > kOffloadBytes;
  }
  void Compute(OpKernelContext* ctx) override {
    static const char* const kNames[] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; ++i) {
      const Tensor& t = ctx->input(i);
      AF_REQUIRES(ctx, t.dims() == 0,
                  errors::InvalidArgument(kNames[i], " must be a scalar, not shape ", t.shape().DebugString()));
    }
    const DataType dt = ctx->input_dtype(0);
    AF_SWITCH_REAL(dt, ctx->SetStatus(errors::Unimplemented("Range does not support dtype ", DataTypeString(dt))),
                   Run<T>(ctx));
  }

 private:
  template <class T>
  static void Run(OpKernelContext* ctx) {
    const T start = ctx->input(0).scalar<T>();
    const T limit = ctx->input(1).scalar<T>();
    const T delta = ctx->input(2).scalar<T>();
    int64_t size = 0;
    AF_REQUIRES_OK(ctx, RangeSize<T>(start, limit, delta, &size));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{size}, &out));
    T* po = out->data<T>();
    if constexpr (std::is_integral_v<T>) {
      // start + i * delta in wrapping unsigned arithmetic: every value written is
      // in range, so the result is exact and no signed overflow can occur.
      using U = std::make_unsigned_t<T>;
      ctx->device()->compute_pool()->For(size, 1, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i)
          po[i] = static_cast<T>(static_cast<U>(start) + static_cast<U>(i) * static_cast<U>(delta));
      });
    } else {
      // Accumulates like TensorFlow, so floating-point values match it exactly.
      T val = start;
      for (int64_t i = 0; i < size; ++i) {
        po[i] = val;
        val += delta;
      }
    }
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Range").Device(DEVICE_CPU), RangeOp);

}  // namespace
}  // namespace actorflow
