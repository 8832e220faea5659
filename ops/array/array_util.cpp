#include "actorflow/ops/array/array_util.hpp"

#include <algorithm>
#include <limits>

#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/ops/math/integer_wrap.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {

Status FillOutputShape(const Tensor& dims, const Tensor& value, TensorShape* shape) {
  if (dims.dims() != 1) return errors::InvalidArgument("dims must be a vector, got shape ", dims.shape().DebugString());
  if (!(value.dims() == 0 || (value.dims() == 1 && value.dim_size(0) == 1)))
    return errors::InvalidArgument("value must be a scalar, got shape ", value.shape().DebugString());
  AF_RETURN_IF_ERROR(CheckIndexDtype(dims, "dims"));
  return TensorShape::FromDims(TensorToInt64s(dims), shape);
}

Status TileOutputDims(const Tensor& input, const Tensor& multiples, std::vector<int64_t>* out_dims, bool* identity) {
  AF_RETURN_IF_ERROR(CheckIndexDtype(multiples, "multiples"));
  const int rank = input.dims();
  if (multiples.dims() != 1 || multiples.NumElements() != rank)
    return errors::InvalidArgument("Expected multiples argument to be a vector of length ", rank, " but got shape ",
                                   multiples.shape().DebugString());
  const std::vector<int64_t> m = TensorToInt64s(multiples);
  out_dims->assign(rank, 0);
  *identity = true;
  for (int i = 0; i < rank; ++i) {
    if (m[i] < 0) return errors::InvalidArgument("Expected multiples[", i, "] >= 0, but got ", m[i]);
    const int64_t d = input.dim_size(i);
    if (m[i] != 0 && d > std::numeric_limits<int64_t>::max() / m[i])
      return errors::InvalidArgument("Tiled dimension ", i, " overflows int64: ", d, " * ", m[i]);
    (*out_dims)[i] = d * m[i];
    *identity &= m[i] == 1;
  }
  return Status::OK();
}

namespace {
template <class T>
void SumRows(const T* d, T* o, int64_t n, const std::vector<int64_t>& ids, int64_t inner) {
  std::fill(o, o + n, T(0));
  for (size_t j = 0; j < ids.size(); ++j) {
    if (ids[j] < 0) continue;
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(o + ids[j] * inner, inner) +=
        Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(d + static_cast<int64_t>(j) * inner, inner);
  }
}
}  // namespace

Status SumRowsInto(const Tensor& rows, const std::vector<int64_t>& row_ids, int64_t row_len, Tensor* out) {
  Status s;
  AF_SWITCH_REAL(out->dtype(), s = errors::Unimplemented("summing rows of ", DataTypeString(out->dtype())),
                 SumRows<WrapT<T>>(AsWrapping(rows.data<T>()), AsWrapping(out->data<T>()), out->NumElements(),
                                   row_ids, row_len));
  return s;
}

}  // namespace actorflow
