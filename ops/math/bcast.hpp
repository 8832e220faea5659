// BCast: numpy broadcasting of two shapes, collapsed to the fewest dimensions.
//
// Adjacent dimensions that broadcast the same way are merged, so [8,1,3,4] op
// [3,4] becomes [8,12] op [1,12]; kernels then loop over rows and apply Eigen
// array expressions to contiguous runs.
#pragma once

#include <cstdint>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor_shape.hpp"

namespace actorflow {

class BCast {
 public:
  BCast(const TensorShape& a, const TensorShape& b);

  bool valid() const { return valid_; }
  const TensorShape& output_shape() const { return output_; }
  bool same_shape() const { return same_shape_; }
  /// Collapsed dims of the output, and per-input strides in elements (0 where
  /// that input is broadcast along the dim).
  const std::vector<int64_t>& dims() const { return dims_; }
  const std::vector<int64_t>& a_strides() const { return a_strides_; }
  const std::vector<int64_t>& b_strides() const { return b_strides_; }
  Status IncompatibleError(const TensorShape& a, const TensorShape& b) const {
    return errors::InvalidArgument("Incompatible shapes: ", a.DebugString(), " vs. ", b.DebugString());
  }

 private:
  bool valid_ = true;
  bool same_shape_ = false;
  TensorShape output_;
  std::vector<int64_t> dims_, a_strides_, b_strides_;
};

/// Number of innermost runs (rows) of the broadcast output.
inline int64_t BroadcastRows(const BCast& bc) {
  int64_t outer = 1;
  for (size_t i = 0; i + 1 < bc.dims().size(); ++i) outer *= bc.dims()[i];
  return outer;
}

/// Calls row(out_offset, a_offset, a_inner_stride, b_offset, b_inner_stride, n)
/// for the innermost runs [row_begin, row_end) of the broadcast output.
template <class RowFn>
void ForEachBroadcastRow(const BCast& bc, int64_t row_begin, int64_t row_end, RowFn row) {
  const auto& dims = bc.dims();
  const int rank = static_cast<int>(dims.size());
  if (rank == 0) {
    row(0, 0, 0, 0, 0, 1);
    return;
  }
  const int64_t inner = dims[rank - 1];
  const int64_t as = bc.a_strides()[rank - 1], bs = bc.b_strides()[rank - 1];
  // The odometer of the outer dims, started at row_begin.
  std::vector<int64_t> idx(rank > 1 ? rank - 1 : 0, 0);
  int64_t a_off = 0, b_off = 0;
  {
    int64_t r = row_begin;
    for (int d = rank - 2; d >= 0; --d) {
      idx[d] = r % dims[d];
      r /= dims[d];
      a_off += idx[d] * bc.a_strides()[d];
      b_off += idx[d] * bc.b_strides()[d];
    }
  }
  for (int64_t r = row_begin; r < row_end; ++r) {
    row(r * inner, a_off, as, b_off, bs, inner);
    for (int d = rank - 2; d >= 0; --d) {  // advance the outer index like an odometer
      a_off += bc.a_strides()[d];
      b_off += bc.b_strides()[d];
      if (++idx[d] < dims[d]) break;
      a_off -= bc.a_strides()[d] * dims[d];
      b_off -= bc.b_strides()[d] * dims[d];
      idx[d] = 0;
    }
  }
}

/// All rows.
template <class RowFn>
void ForEachBroadcastRow(const BCast& bc, RowFn row) {
  ForEachBroadcastRow(bc, 0, BroadcastRows(bc), row);
}

}  // namespace actorflow
