// Input checks and output shapes that a math op's kernels share across
// devices (the CPU kernels and the CUDA ones in *_gpu.{cu,cpp}), so every
// device reports bad input with the same words.
#pragma once

#include <cstdint>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/core/tensor_shape.hpp"

namespace actorflow {

/// MatMul of a and b, each optionally transposed: InvalidArgument unless both
/// are matrices with matching inner dimensions; else [m, k] x [k, n].
Status MatMulDims(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b, int64_t* m, int64_t* k,
                  int64_t* n);

/// A reduction of x over `axes` (a scalar or vector of int32/int64):
/// which dimensions are reduced and the output shape (reduced dims kept as 1
/// with keep_dims). InvalidArgument for a bad axes shape or an axis out of range.
Status ReductionDims(const Tensor& x, const Tensor& axes, bool keep_dims, std::vector<bool>* reduced,
                     TensorShape* out_shape);

/// ArgMax/ArgMin of x along `dimension` (a one-element int32/int64 tensor):
/// x seen as [outer, len, inner] with len the reduced axis, and the output
/// shape (x's without it). InvalidArgument for a bad or empty axis.
Status ArgReductionDims(const Tensor& x, const Tensor& dimension, TensorShape* out_shape, int64_t* outer,
                        int64_t* len, int64_t* inner);

}  // namespace actorflow
