// Small helpers shared by the array kernels.
#pragma once

#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {

/// Whether `t` is a dtype that index inputs (shapes, axes, perms) may have.
inline bool IsIndexDtype(DataType t) { return t == DT_INT32 || t == DT_INT64; }

/// InvalidArgument unless `t` is an int32 or int64 tensor; `what` names the input.
inline Status CheckIndexDtype(const Tensor& t, const char* what) {
  if (!IsIndexDtype(t.dtype()))
    return errors::InvalidArgument(what, " must be an int32 or int64 tensor, got ", DataTypeString(t.dtype()));
  return Status::OK();
}

/// Fill's output shape: `dims` an int32/int64 vector of sizes, `value` a
/// scalar (or a one-element vector). InvalidArgument naming what is wrong.
Status FillOutputShape(const Tensor& dims, const Tensor& value, TensorShape* shape);

/// Tile's output dims: the input's times `multiples` (an int32/int64 vector of
/// the input's rank, each >= 0, no product overflowing int64); `identity` when
/// every multiple is 1.
Status TileOutputDims(const Tensor& input, const Tensor& multiples, std::vector<int64_t>* out_dims, bool* identity);

/// out = zeros, then row j of `rows` (row_len elements each) added into row
/// row_ids[j] of out; negative ids are skipped. Real dtypes (integers wrap);
/// Unimplemented for others. The ids must be in range (checked by the caller).
/// UnsortedSegmentSum and ScatterNd.
Status SumRowsInto(const Tensor& rows, const std::vector<int64_t>& row_ids, int64_t row_len, Tensor* out);

}  // namespace actorflow
