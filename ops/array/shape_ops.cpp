// Identity, StopGradient, Reshape, Shape, Size, Rank, ExpandDims, Squeeze: ops
// that read or change only a tensor's shape. Outputs share their input's buffer
// (no copy), so these kernels are cheap and run inline.
#include <limits>
#include <set>

#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

/// "[2, -1, 3]" for error messages.
std::string JoinDims(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

// ---------------------------------------------------------------------------
// Identity

AF_REGISTER_OP("Identity")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Returns a tensor with the same shape and contents as the input.");

class IdentityOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Identity").Device(DEVICE_CPU), IdentityOp);

// Identity for the forward pass; stops gradients (registered as not
// differentiable in array_grad.cpp), so what it computes is a constant to them.
AF_REGISTER_OP("StopGradient")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Returns the input; gradients do not flow through it.");
AF_REGISTER_KERNEL(KernelDefBuilder("StopGradient").Device(DEVICE_CPU), IdentityOp);

// ---------------------------------------------------------------------------
// Reshape

// With a 0 among the sizes, the -1 of an empty input could be anything (as TensorFlow).
constexpr char kCannotInferEmpty[] =
    "Reshape cannot infer the missing input size for an empty tensor unless all specified input sizes are non-zero";

/// Validates the requested sizes: at most one -1, others >= 0, no overflow.
/// `shape` gets the sizes with the -1 as 1, `product` the product of the
/// positive sizes, `unknown_index` the position of the -1 (or -1).
Status ValidateReshapeSizes(const std::vector<int64_t>& sizes, TensorShape* shape, int64_t* product,
                            int* unknown_index, bool* has_zero) {
  *product = 1;
  *unknown_index = -1;
  *has_zero = false;
  std::vector<int64_t> dims;
  dims.reserve(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int64_t size = sizes[d];
    if (size == -1) {
      if (*unknown_index != -1)
        return errors::InvalidArgument("Only one input size may be -1, not both ", *unknown_index, " and ", d);
      *unknown_index = static_cast<int>(d);
      dims.push_back(1);
    } else if (size < 0) {
      return errors::InvalidArgument("Size ", d, " must be non-negative, not ", size);
    } else if (size == 0) {
      dims.push_back(0);
      *has_zero = true;
    } else {
      if (*product > std::numeric_limits<int64_t>::max() / size)
        return errors::InvalidArgument("Shape ", JoinDims(sizes), " has too many elements");
      *product *= size;
      dims.push_back(size);
    }
  }
  *shape = TensorShape(dims);
  return Status::OK();
}

Status ReshapeShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  const PartialTensorShape& sizes_shape = c->input(1);
  if (!sizes_shape.unknown_rank() && sizes_shape.dims() != 1)
    return c->Error("sizes input must be 1-D, not ", sizes_shape.DebugString());
  const Tensor* t = c->input_tensor(1);
  if (t == nullptr || !IsIndexDtype(t->dtype()) || t->dims() != 1) {
    int rank = -1;
    if (!sizes_shape.unknown_rank()) AF_RETURN_IF_ERROR(RankFromDim(c, sizes_shape.dim_size(0), "shape", &rank));
    c->set_output(0, UnknownShapeOfRank(rank));
    return Status::OK();
  }
  if (t->NumElements() > kMaxShapeRank)
    return c->Error("shape has ", t->NumElements(), " entries, more than the maximum rank ", kMaxShapeRank);
  std::vector<int64_t> sizes = TensorToInt64s(*t);
  TensorShape shape;
  int64_t product;
  int unknown_index;
  bool has_zero;
  Status s = ValidateReshapeSizes(sizes, &shape, &product, &unknown_index, &has_zero);
  if (!s.ok()) return c->Error(s.message());
  std::vector<int64_t> out = sizes;
  if (in.IsFullyDefined()) {
    TensorShape in_shape;
    in.AsTensorShape(&in_shape);
    const int64_t n = in_shape.num_elements();
    if (unknown_index != -1) {
      if (n == 0 && has_zero) return c->Error(kCannotInferEmpty);
      if (!has_zero) {
        if (n % product != 0)
          return c->Error("Cannot reshape a tensor with ", n, " elements to shape ", JoinDims(sizes),
                          " (a multiple of ", product, " elements)");
        out[unknown_index] = n / product;
      }
    } else if (shape.num_elements() != n) {
      return c->Error("Cannot reshape a tensor with ", n, " elements to shape ", JoinDims(sizes), " (",
                      shape.num_elements(), " elements)");
    }
  }
  c->set_output(0, PartialTensorShape(out));
  return Status::OK();
}

AF_REGISTER_OP("Reshape")
    .Input("tensor: T")
    .Input("shape: Tshape")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tshape: {int32, int64} = DT_INT32")
    .SetShapeFn(ReshapeShape)
    .Doc("Reshapes a tensor; one dimension of `shape` may be -1 (inferred).");

class ReshapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& sizes = ctx->input(1);
    AF_REQUIRES(ctx, sizes.dims() == 1,
                errors::InvalidArgument("sizes input must be 1-D, not ", sizes.shape().DebugString()));
    AF_REQUIRES_OK(ctx, CheckIndexDtype(sizes, "shape"));
    TensorShape shape;
    int64_t product;
    int unknown_index;
    bool sizes_has_zero;
    AF_REQUIRES_OK(ctx, ValidateReshapeSizes(TensorToInt64s(sizes), &shape, &product, &unknown_index,
                                             &sizes_has_zero));
    if (unknown_index != -1) {
      const int64_t input_num_elements = input.NumElements();
      AF_REQUIRES(ctx, input_num_elements != 0 || !sizes_has_zero, errors::InvalidArgument(kCannotInferEmpty));
      const int64_t missing = input_num_elements / product;
      AF_REQUIRES(ctx, product * missing == input_num_elements,
                  errors::InvalidArgument("Input to reshape is a tensor with ", input_num_elements,
                                          " values, but the requested shape requires a multiple of ", product));
      shape.set_dim(unknown_index, missing);
    }
    AF_REQUIRES(ctx, shape.num_elements() == input.NumElements(),
                errors::InvalidArgument("Input to reshape is a tensor with ", input.NumElements(),
                                        " values, but the requested shape has ", shape.num_elements()));
    ctx->set_output(0, input.Reshaped(shape));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Reshape").Device(DEVICE_CPU), ReshapeOp);

// ---------------------------------------------------------------------------
// Shape, Size, Rank

Status ShapeShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  c->set_output(0, PartialTensorShape(std::vector<int64_t>{in.unknown_rank() ? -1 : in.dims()}));
  return Status::OK();
}

AF_REGISTER_OP("Shape")
    .Input("input: T")
    .Output("output: out_type")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn(ShapeShape)
    .Doc("Returns the shape of a tensor as a 1-D integer tensor.");

AF_REGISTER_OP("Size")
    .Input("input: T")
    .Output("output: out_type")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn(shape_fns::Scalar)
    .Doc("Returns the number of elements of a tensor.");

AF_REGISTER_OP("Rank")
    .Input("input: T")
    .Output("output: int32")
    .Attr("T: type")
    .SetShapeFn(shape_fns::Scalar)
    .Doc("Returns the rank of a tensor.");

class ShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const TensorShape& shape = ctx->input(0).shape();
    const int rank = shape.dims();
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{rank}, &out));
    if (BaseType(out->dtype()) == DT_INT32) {
      int32_t* po = out->data<int32_t>();
      for (int i = 0; i < rank; ++i) {
        const int64_t d = shape.dim_size(i);
        AF_REQUIRES(ctx, d <= std::numeric_limits<int32_t>::max(),
                    errors::InvalidArgument("Shape output type is 32-bit but dim ", i, " is ", d));
        po[i] = static_cast<int32_t>(d);
      }
    } else {
      int64_t* po = out->data<int64_t>();
      for (int i = 0; i < rank; ++i) po[i] = shape.dim_size(i);
    }
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Shape").Device(DEVICE_CPU), ShapeOp);

class SizeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int64_t n = ctx->input(0).NumElements();
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{}, &out));
    if (BaseType(out->dtype()) == DT_INT32) {
      AF_REQUIRES(ctx, n <= std::numeric_limits<int32_t>::max(),
                  errors::InvalidArgument("Number of elements was larger than representable by 32-bit output type: ",
                                          n));
      out->scalar<int32_t>() = static_cast<int32_t>(n);
    } else {
      out->scalar<int64_t>() = n;
    }
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Size").Device(DEVICE_CPU), SizeOp);

class RankOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{}, &out));
    out->scalar<int32_t>() = ctx->input(0).dims();
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Rank").Device(DEVICE_CPU), RankOp);

// ---------------------------------------------------------------------------
// ExpandDims

Status ExpandDimsShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  const Tensor* t = c->input_tensor(1);
  if (in.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return Status::OK();
  }
  const int rank = in.dims();
  if (t == nullptr || !IsIndexDtype(t->dtype()) || t->NumElements() != 1) {
    c->set_output(0, PartialTensorShape(std::vector<int64_t>(rank + 1, -1)));
    return Status::OK();
  }
  int64_t dim = TensorToInt64s(*t)[0];
  if (dim < -1 - rank || dim > rank)
    return c->Error("Tried to expand dim index ", dim, " for tensor with ", rank, " dimensions.");
  if (dim < 0) dim += rank + 1;
  std::vector<int64_t> dims = in.dim_sizes();
  dims.insert(dims.begin() + dim, 1);
  c->set_output(0, PartialTensorShape(dims));
  return Status::OK();
}

AF_REGISTER_OP("ExpandDims")
    .Input("input: T")
    .Input("dim: Tdim")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tdim: {int32, int64} = DT_INT32")
    .SetShapeFn(ExpandDimsShape)
    .Doc("Inserts a dimension of 1 at index `dim` of the input's shape.");

class ExpandDimsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& dim_t = ctx->input(1);
    AF_REQUIRES(ctx, dim_t.NumElements() == 1,
                errors::InvalidArgument("'dim' must be a tensor with a single value, got shape ",
                                        dim_t.shape().DebugString()));
    AF_REQUIRES_OK(ctx, CheckIndexDtype(dim_t, "dim"));
    int64_t dim = TensorToInt64s(dim_t)[0];
    const int rank = input.dims();
    AF_REQUIRES(ctx, dim >= -1 - rank && dim <= rank,
                errors::InvalidArgument("Tried to expand dim index ", dim, " for tensor with ", rank,
                                        " dimensions."));
    if (dim < 0) dim += rank + 1;
    TensorShape shape = input.shape();
    shape.InsertDim(static_cast<int>(dim), 1);
    ctx->set_output(0, input.Reshaped(shape));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ExpandDims").Device(DEVICE_CPU), ExpandDimsOp);

// ---------------------------------------------------------------------------
// Squeeze

Status SqueezeShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  std::vector<int64_t> squeeze_dims;
  AF_RETURN_IF_ERROR(c->GetAttr("squeeze_dims", &squeeze_dims));
  if (in.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    return Status::OK();
  }
  const int rank = in.dims();
  std::set<int64_t> wrapped;
  for (int64_t d : squeeze_dims) {
    if (d < -rank || d >= rank)
      return c->Error("Tried to squeeze dim index ", d, " for tensor with ", rank, " dimensions.");
    wrapped.insert(d < 0 ? d + rank : d);
  }
  std::vector<int64_t> out;
  for (int i = 0; i < rank; ++i) {
    const int64_t d = in.dim_size(i);
    if (!wrapped.empty()) {
      if (wrapped.count(i)) {
        if (d >= 0 && d != 1)
          return c->Error("Can not squeeze dim[", i, "], expected a dimension of 1, got ", d, " for input of shape ",
                          in.DebugString());
      } else {
        out.push_back(d);
      }
    } else {
      if (d < 0) {  // may or may not be squeezed: the rank is unknown
        c->set_output(0, PartialTensorShape());
        return Status::OK();
      }
      if (d != 1) out.push_back(d);
    }
  }
  c->set_output(0, PartialTensorShape(out));
  return Status::OK();
}

AF_REGISTER_OP("Squeeze")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("squeeze_dims: list(int) >= 0 = []")
    .SetShapeFn(SqueezeShape)
    .Doc("Removes dimensions of size 1 (all of them, or those in squeeze_dims).");

class SqueezeOp : public OpKernel {
 public:
  explicit SqueezeOp(OpKernelConstruction* c) : OpKernel(c) {
    Status s = c->GetAttr("squeeze_dims", &squeeze_dims_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const int rank = input.dims();
    std::set<int64_t> wrapped;
    for (int64_t d : squeeze_dims_) {
      AF_REQUIRES(ctx, d >= -rank && d < rank,
                  errors::InvalidArgument("Tried to squeeze dim index ", d, " for tensor with ", rank,
                                          " dimensions."));
      wrapped.insert(d < 0 ? d + rank : d);
    }
    std::vector<int64_t> new_shape;
    for (int i = 0; i < rank; ++i) {
      const int64_t d = input.dim_size(i);
      if (!wrapped.empty()) {
        if (wrapped.count(i)) {
          AF_REQUIRES(ctx, d == 1,
                      errors::InvalidArgument("Can not squeeze dim[", i, "], expected a dimension of 1, got ", d,
                                              " for input of shape ", input.shape().DebugString()));
        } else {
          new_shape.push_back(d);
        }
      } else if (d != 1) {
        new_shape.push_back(d);
      }
    }
    ctx->set_output(0, input.Reshaped(TensorShape(new_shape)));
  }

 private:
  std::vector<int64_t> squeeze_dims_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("Squeeze").Device(DEVICE_CPU), SqueezeOp);

}  // namespace
}  // namespace actorflow
