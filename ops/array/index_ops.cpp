// BroadcastGradientArgs, ReducedShape, InvertPermutation, ConcatOffset,
// ListDiff: small integer ops on shapes, axes and permutations. Gradient graphs
// use them to compute, while the step runs, how a gradient is reduced, tiled,
// sliced or transposed back to the shape of an op's input.
#include <limits>
#include <unordered_set>
#include <vector>

#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

/// Writes `values` into output i as a vector of the output's index dtype;
/// InvalidArgument when a value does not fit an int32 output.
Status OutputIndexVector(OpKernelContext* ctx, int i, const std::vector<int64_t>& values) {
  const bool is32 = BaseType(ctx->expected_output_dtype(i)) == DT_INT32;
  for (int64_t v : values) {
    if (is32 && (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()))
      return errors::InvalidArgument(ctx->op_kernel().type_string(), ": output ", i, " value ", v,
                                     " does not fit in int32");
  }
  Tensor* out;
  AF_RETURN_IF_ERROR(ctx->allocate_output(i, TensorShape{static_cast<int64_t>(values.size())}, &out));
  for (size_t k = 0; k < values.size(); ++k) {
    if (is32) out->data<int32_t>()[k] = static_cast<int32_t>(values[k]);
    else out->data<int64_t>()[k] = values[k];
  }
  return Status::OK();
}

/// InvalidArgument unless `t` is an int32/int64 vector (`what` names it).
Status CheckIndexVector(const Tensor& t, const char* what) {
  AF_RETURN_IF_ERROR(CheckIndexDtype(t, what));
  if (t.dims() != 1) return errors::InvalidArgument(what, " must be a vector, got shape ", t.shape().DebugString());
  return Status::OK();
}

std::string JoinInts(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

Status VectorsOfUnknownLength(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, PartialTensorShape(std::vector<int64_t>{-1}));
  return Status::OK();
}

// ---------------------------------------------------------------------------
// BroadcastGradientArgs

AF_REGISTER_OP("BroadcastGradientArgs")
    .Input("s0: T")
    .Input("s1: T")
    .Output("r0: T")
    .Output("r1: T")
    .Attr("T: {int32, int64} = DT_INT32")
    .SetShapeFn(VectorsOfUnknownLength)
    .Doc("For a binary op broadcasting inputs of shapes s0 and s1: the axes of its output along which each input "
         "was broadcast, which its gradient is summed over.");

class BroadcastGradientArgsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    AF_REQUIRES_OK(ctx, CheckIndexVector(ctx->input(0), "s0"));
    AF_REQUIRES_OK(ctx, CheckIndexVector(ctx->input(1), "s1"));
    const std::vector<int64_t> s0 = TensorToInt64s(ctx->input(0));
    const std::vector<int64_t> s1 = TensorToInt64s(ctx->input(1));
    const size_t rank = std::max(s0.size(), s1.size());
    std::vector<int64_t> r0, r1;
    for (size_t i = 0; i < rank; ++i) {  // dims aligned from the right, 1 where a shape is shorter
      const int64_t d0 = i + s0.size() >= rank ? s0[i + s0.size() - rank] : 1;
      const int64_t d1 = i + s1.size() >= rank ? s1[i + s1.size() - rank] : 1;
      AF_REQUIRES(ctx, d0 >= 0 && d1 >= 0,
                  errors::InvalidArgument("Shapes must have non-negative dims: ", JoinInts(s0), " vs. ", JoinInts(s1)));
      const int64_t axis = static_cast<int64_t>(i);
      if (d0 == d1) {
        if (d0 == 1) {  // summing over a dim of 1 changes nothing, but the gradient keeps the output's rank
          r0.push_back(axis);
          r1.push_back(axis);
        }
      } else if (d0 == 1) {
        r0.push_back(axis);
      } else if (d1 == 1) {
        r1.push_back(axis);
      } else {
        ctx->SetStatus(errors::InvalidArgument("Incompatible shapes: ", JoinInts(s0), " vs. ", JoinInts(s1)));
        return;
      }
    }
    AF_REQUIRES_OK(ctx, OutputIndexVector(ctx, 0, r0));
    AF_REQUIRES_OK(ctx, OutputIndexVector(ctx, 1, r1));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("BroadcastGradientArgs").Device(DEVICE_CPU), BroadcastGradientArgsOp);

// ---------------------------------------------------------------------------
// ReducedShape

Status ReducedShapeShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  if (!in.unknown_rank() && in.dims() != 1) return c->Error("input_shape must be a vector, got ", in.DebugString());
  c->set_output(0, in.unknown_rank() ? PartialTensorShape(std::vector<int64_t>{-1}) : in);
  return Status::OK();
}

AF_REGISTER_OP("ReducedShape")
    .Input("input_shape: T")
    .Input("axes: Tidx")
    .Output("output: T")
    .Attr("T: {int32, int64} = DT_INT32")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .SetShapeFn(ReducedShapeShape)
    .Doc("The shape a reduction over `axes` (a scalar or vector; negative axes count from the end) with keep_dims "
         "gives an input of shape input_shape: input_shape with those dims set to 1. TensorFlow computes this in "
         "Python (math_ops.reduced_shape) with DynamicStitch, and so do our gradients (client/gradients/grad_helpers): "
         "kept so that graphs written before still load; not an op of TensorFlow's.");

class ReducedShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    AF_REQUIRES_OK(ctx, CheckIndexVector(ctx->input(0), "input_shape"));
    const Tensor& axes_t = ctx->input(1);
    AF_REQUIRES_OK(ctx, CheckIndexDtype(axes_t, "axes"));
    AF_REQUIRES(ctx, axes_t.dims() <= 1,
                errors::InvalidArgument("axes must be a scalar or vector, got shape ", axes_t.shape().DebugString()));
    std::vector<int64_t> shape = TensorToInt64s(ctx->input(0));
    const int64_t rank = static_cast<int64_t>(shape.size());
    for (int64_t a : TensorToInt64s(axes_t)) {
      AF_REQUIRES(ctx, a >= -rank && a < rank,
                  errors::InvalidArgument("Invalid reduction dimension ", a, " for input with ", rank, " dimensions"));
      shape[a < 0 ? a + rank : a] = 1;
    }
    AF_REQUIRES_OK(ctx, OutputIndexVector(ctx, 0, shape));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ReducedShape").Device(DEVICE_CPU), ReducedShapeOp);

// ---------------------------------------------------------------------------
// InvertPermutation

Status InvertPermutationShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  if (!in.unknown_rank() && in.dims() != 1) return c->Error("x must be a vector, got ", in.DebugString());
  c->set_output(0, in.unknown_rank() ? PartialTensorShape(std::vector<int64_t>{-1}) : in);
  return Status::OK();
}

AF_REGISTER_OP("InvertPermutation")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {int32, int64} = DT_INT32")
    .SetShapeFn(InvertPermutationShape)
    .Doc("The inverse of the permutation x: y[x[i]] = i.");

class InvertPermutationOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    AF_REQUIRES_OK(ctx, CheckIndexVector(ctx->input(0), "x"));
    const std::vector<int64_t> x = TensorToInt64s(ctx->input(0));
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<int64_t> y(x.size(), -1);
    for (int64_t i = 0; i < n; ++i) {
      AF_REQUIRES(ctx, x[i] >= 0 && x[i] < n,
                  errors::InvalidArgument("x[", i, "] = ", x[i], " is out of range [0, ", n, ")"));
      AF_REQUIRES(ctx, y[x[i]] == -1, errors::InvalidArgument(x[i], " is duplicated in the input."));
      y[x[i]] = i;
    }
    AF_REQUIRES_OK(ctx, OutputIndexVector(ctx, 0, y));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("InvertPermutation").Device(DEVICE_CPU), InvertPermutationOp);

// ---------------------------------------------------------------------------
// ConcatOffset

Status ConcatOffsetShape(InferenceContext* c) {
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, c->input(i + 1));
  return Status::OK();
}

AF_REGISTER_OP("ConcatOffset")
    .Input("concat_dim: int32")
    .Input("shape: N * int32")
    .Output("offset: N * int32")
    .Attr("N: int >= 2")
    .SetShapeFn(ConcatOffsetShape)
    .Doc("Where each of N inputs of the given shapes starts in their concatenation along concat_dim (negative "
         "counts from the end): zeros but for concat_dim, the sum of the earlier inputs' sizes along it.");

class ConcatOffsetOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dim_t = ctx->input(0);
    AF_REQUIRES(ctx, dim_t.NumElements() == 1,
                errors::InvalidArgument("Concat dim tensor should be a scalar integer, but got shape ",
                                        dim_t.shape().DebugString()));
    const int n = ctx->num_inputs() - 1;
    AF_REQUIRES_OK(ctx, CheckIndexVector(ctx->input(1), "shape"));
    const std::vector<int64_t> first = TensorToInt64s(ctx->input(1));
    const int64_t rank = static_cast<int64_t>(first.size());
    int64_t dim = TensorToInt64s(dim_t)[0];
    AF_REQUIRES(ctx, dim >= -rank && dim < rank,
                errors::InvalidArgument("Concat dim is out of range: ", dim, " vs. ", rank));
    if (dim < 0) dim += rank;
    int64_t offset = 0;
    for (int i = 0; i < n; ++i) {
      AF_REQUIRES_OK(ctx, CheckIndexVector(ctx->input(i + 1), "shape"));
      const std::vector<int64_t> shape = TensorToInt64s(ctx->input(i + 1));
      AF_REQUIRES(ctx, static_cast<int64_t>(shape.size()) == rank,
                  errors::InvalidArgument("input ", i, " should contain ", rank, " elements, but got ", shape.size()));
      std::vector<int64_t> out(rank, 0);
      for (int64_t j = 0; j < rank; ++j) {
        if (j == dim) continue;
        AF_REQUIRES(ctx, shape[j] == first[j],
                    errors::InvalidArgument("input[", i, ",", j, "] mismatch: ", shape[j], " vs. ", first[j]));
      }
      out[dim] = offset;
      offset += shape[dim];
      AF_REQUIRES_OK(ctx, OutputIndexVector(ctx, i, out));
    }
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ConcatOffset").Device(DEVICE_CPU), ConcatOffsetOp);

// ---------------------------------------------------------------------------
// ListDiff

AF_REGISTER_OP("ListDiff")
    .Input("x: T")
    .Input("y: T")
    .Output("out: T")
    .Output("idx: out_idx")
    .Attr("T: type")
    .Attr("out_idx: {int32, int64} = DT_INT32")
    .SetShapeFn(VectorsOfUnknownLength)
    .Doc("The values of the vector x that are not in the vector y, in x's order, and their indices in x.");

class ListDiffOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    AF_REQUIRES(ctx, x.dims() == 1 && y.dims() == 1,
                errors::InvalidArgument("x and y must be vectors, got shapes ", x.shape().DebugString(), " and ",
                                        y.shape().DebugString()));
    AF_SWITCH_REAL(x.dtype(), ctx->SetStatus(errors::Unimplemented("ListDiff of ", DataTypeString(x.dtype()))),
                   Run<T>(ctx, x, y));
  }

 private:
  template <class T>
  static void Run(OpKernelContext* ctx, const Tensor& x, const Tensor& y) {
    const T* px = x.data<T>();
    const std::unordered_set<T> drop(y.data<T>(), y.data<T>() + y.NumElements());
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < x.NumElements(); ++i)
      if (!drop.count(px[i])) keep.push_back(i);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{static_cast<int64_t>(keep.size())}, &out));
    for (size_t k = 0; k < keep.size(); ++k) out->data<T>()[k] = px[keep[k]];
    AF_REQUIRES_OK(ctx, OutputIndexVector(ctx, 1, keep));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ListDiff").Device(DEVICE_CPU).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE, DT_INT32,
                                                                                        DT_INT64}),
                   ListDiffOp);

}  // namespace
}  // namespace actorflow
