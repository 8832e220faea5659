// CollectiveReduce's arithmetic (ops/collective_access.hpp's
// CollectiveReduction) from TensorFlow's names: merge_op Add, Mul, Min or Max,
// final_op Id or Div. Each is computed by the functor of the kernel of the same
// op (Add, Mul, Minimum, Maximum, Div: ops/math/cwise_arithmetic.hpp) through
// ApplyBinary, so a collective's arithmetic is the kernels' arithmetic: int32
// and int64 sums and products wrap in two's complement (INT32_MAX + 1 ==
// INT32_MIN on every rank), Div of integers truncates toward zero, floats
// round as the kernels round.
//
// Contract: float, double, int32 and int64 (CollectiveReduce's T); anything
// else is refused by Accepts. Unknown names are InvalidArgument naming the node.
#pragma once

#include <memory>
#include <string>

#include "actorflow/core/status.hpp"
#include "actorflow/ops/collective_access.hpp"

namespace actorflow {

/// The reduction for merge_op and final_op, as CollectiveReduce's attrs name
/// them; `node` names the op in errors.
Status NewCollectiveReduction(const std::string& node, const std::string& merge_op, const std::string& final_op,
                              std::shared_ptr<const CollectiveReduction>* out);

}  // namespace actorflow
