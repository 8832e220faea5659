// Builders of TensorFlow's collective ops (ops/collective/collective_ops.cpp):
// all-reduce and broadcast across the tasks of a job. Every member runs the
// same op with the same group and instance keys.
//
//   ops::CollectiveOptions o;
//   o.group_size = 2;
//   o.instance_key = 7;
//   o.final_op = "Div";
//   Output mean = ops::CollectiveReduce(s, grad, o);                                  // every member
//   o.instance_key = 8;                                                                // one key per collective
//   Output w0 = is_chief ? ops::CollectiveBcastSend(s, w, {784, 256}, o)              // the source
//                        : ops::CollectiveBcastRecv(s, DT_FLOAT, {784, 256}, o);      // the others
#pragma once

#include <string>

#include "actorflow/client/builder.hpp"

namespace actorflow {
namespace ops {

struct CollectiveOptions {
  /// 0: elastic (CollectiveReduce, CollectiveBcastFirst): the tasks of the
  /// job not known to have failed, as many as there are at each forming.
  int64_t group_size = 1;
  int64_t group_key = 1;
  int64_t instance_key = 1;
  std::string merge_op = "Add";  // Add, Mul, Min, Max (CollectiveReduce)
  std::string final_op = "Id";   // Id or Div (CollectiveReduce)
  float timeout_seconds = 0;     // 0: the executor's default (60 s)
  std::string bucket_plan;       // the all-reduce helper's plan, checked across ranks
};

Output CollectiveReduce(const Scope& s, Input input, const CollectiveOptions& o);
/// Sends `input` (of `shape`) to the group's other members; outputs it.
Output CollectiveBcastSend(const Scope& s, Input input, const TensorShape& shape, const CollectiveOptions& o);
/// The tensor the member running CollectiveBcastSend of the same instance sends.
Output CollectiveBcastRecv(const Scope& s, DataType dtype, const TensorShape& shape, const CollectiveOptions& o);
/// Every member gives `input`; each outputs rank 0's (the first task of the
/// group as it formed): a broadcast whose source is not known when the graph
/// is built (an actorflow extension, for elastic groups: group_size 0).
Output CollectiveBcastFirst(const Scope& s, Input input, const CollectiveOptions& o);

}  // namespace ops
}  // namespace actorflow
