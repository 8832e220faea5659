// The meaning of a StridedSlice (TensorFlow's ValidateStridedSliceOp,
// tensorflow/core/util/strided_slice_op.cc): begin, end and strides with
// their five masks (Python's x[1:-1:2, ..., tf.newaxis, 3]) resolved against
// an input shape into one canonical begin and stride per input dimension, the
// shape that walk produces (processing_shape, one dim per input dim) and the
// output's (final_shape: new axes inserted, shrunk axes removed).
//
// Used by StridedSlice and StridedSliceGrad (strided_slice_ops.cpp) and their
// shape functions; with unknown input dims (-1) or unknown begin/end/strides
// the shapes it gives have -1 where they cannot be known.
#pragma once

#include <cstdint>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {

struct StridedSliceMasks {
  int64_t begin = 0, end = 0, ellipsis = 0, new_axis = 0, shrink_axis = 0;
};

struct StridedSliceSpec {
  std::vector<int64_t> begin, stride;         // canonical, per input dim (valid only when known)
  std::vector<int64_t> processing_shape;      // per input dim; -1 unknown
  std::vector<int64_t> final_shape;           // the output's; -1 unknown
  bool is_identity = true;                    // every dim taken whole, stride 1
  bool known = true;                          // begin, end and strides were given
};

/// Resolves the slice for an input of rank input_dims.size(), whose dims may
/// be -1 (unknown); `begin`, `end`, `strides` are null when unknown (then only
/// their length, the masks and the rank are used: one of them must be given).
/// InvalidArgument naming the problem: sizes that differ, a zero stride,
/// an index out of range on a shrunk axis, more than one ellipsis.
Status ResolveStridedSlice(const std::vector<int64_t>& input_dims, const Tensor* begin, const Tensor* end,
                           const Tensor* strides, const StridedSliceMasks& masks, StridedSliceSpec* spec);

}  // namespace actorflow
