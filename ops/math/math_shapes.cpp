#include "actorflow/ops/math/math_shapes.hpp"

#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {

Status MatMulDims(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b, int64_t* m, int64_t* k,
                  int64_t* n) {
  if (a.dims() != 2) return errors::InvalidArgument("In[0] is not a matrix: shape ", a.shape().DebugString());
  if (b.dims() != 2) return errors::InvalidArgument("In[1] is not a matrix: shape ", b.shape().DebugString());
  *m = a.dim_size(transpose_a ? 1 : 0);
  *k = a.dim_size(transpose_a ? 0 : 1);
  const int64_t kb = b.dim_size(transpose_b ? 1 : 0);
  *n = b.dim_size(transpose_b ? 0 : 1);
  if (*k != kb)
    return errors::InvalidArgument("Matrix size-incompatible: In[0]: ", a.shape().DebugString(), ", In[1]: ",
                                   b.shape().DebugString(), transpose_a ? " (transpose_a)" : "",
                                   transpose_b ? " (transpose_b)" : "");
  return Status::OK();
}

Status ReductionDims(const Tensor& x, const Tensor& axes, bool keep_dims, std::vector<bool>* reduced,
                     TensorShape* out_shape) {
  if (axes.dims() > 1)
    return errors::InvalidArgument("reduction_indices must be a scalar or vector, got shape ",
                                   axes.shape().DebugString());
  const int rank = x.dims();
  reduced->assign(rank, false);
  for (int64_t a : TensorToInt64s(axes)) {
    if (a < -rank || a >= rank)
      return errors::InvalidArgument("Invalid reduction dimension ", a, " for input with ", rank, " dimensions");
    (*reduced)[a < 0 ? a + rank : a] = true;
  }
  *out_shape = TensorShape();
  for (int i = 0; i < rank; ++i) {
    if (!(*reduced)[i]) out_shape->AddDim(x.dim_size(i));
    else if (keep_dims) out_shape->AddDim(1);
  }
  return Status::OK();
}

Status ArgReductionDims(const Tensor& x, const Tensor& dimension, TensorShape* out_shape, int64_t* outer,
                        int64_t* len, int64_t* inner) {
  if (dimension.NumElements() != 1)
    return errors::InvalidArgument("dimension must be a scalar, got shape ", dimension.shape().DebugString());
  const int rank = x.dims();
  int64_t axis = TensorToInt64s(dimension)[0];
  if (axis < -rank || axis >= rank)
    return errors::InvalidArgument("Expected dimension in the range [", -rank, ", ", rank, "), but got ", axis);
  if (axis < 0) axis += rank;
  if (x.dim_size(static_cast<int>(axis)) <= 0)
    return errors::InvalidArgument("Reduction axis ", axis, " is empty in shape ", x.shape().DebugString());
  *out_shape = TensorShape();
  *outer = *inner = 1;
  for (int i = 0; i < rank; ++i) {
    if (i == axis) continue;
    out_shape->AddDim(x.dim_size(i));
    (i < axis ? *outer : *inner) *= x.dim_size(i);
  }
  *len = x.dim_size(static_cast<int>(axis));
  return Status::OK();
}

}  // namespace actorflow
