// TransposeTensor: permutes the dimensions of a tensor into a preallocated
// output. Used by the Transpose op and by kernels that need a transposed copy
// (e.g. batch matmul or convolution layouts).
#pragma once

#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {

class ComputePool;

/// Writes into `out` the tensor whose dim i is dim perm[i] of `in`:
/// out[i_0, ..., i_{r-1}] = in[j] with j[perm[k]] = i_k. `out` must already be
/// allocated with `in`'s dtype and the permuted shape. Works for every POD
/// dtype (by element size) and for strings. Dimensions of size 1 are dropped and
/// dimensions that stay adjacent are merged first, so an identity permutation is
/// one copy and a rank-2 transpose uses cache-blocked tiles. InvalidArgument
/// when perm is not a permutation of 0..rank-1 or `out` does not fit.
Status TransposeTensor(const Tensor& in, const std::vector<int>& perm, Tensor* out);

/// Same, sharding the copy over `pool` when the tensor is large enough for it
/// to pay (pool may be null: runs on the calling thread).
Status TransposeTensor(const Tensor& in, const std::vector<int>& perm, Tensor* out, ComputePool* pool);

}  // namespace actorflow
