#include "actorflow/client/train/all_reduce.hpp"

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/collective_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"

namespace actorflow {

BucketPlan PlanBuckets(const std::vector<Optimizer::GradAndVar>& grads_and_vars, const AllReduceOptions& o) {
  BucketPlan plan;
  plan.text = "group " + std::to_string(o.group_key) + " of " +
              (o.group_size == 0 ? std::string("the live tasks") : std::to_string(o.group_size)) + ", bucket_bytes " +
              std::to_string(o.bucket_bytes) + (o.average ? ", mean" : ", sum") + "\n";
  size_t bytes = 0;
  for (size_t k = grads_and_vars.size(); k-- > 0;) {
    const auto& [grad, var] = grads_and_vars[k];
    if (!grad.valid()) continue;
    const size_t b = static_cast<size_t>(var.shape.num_elements()) * DataTypeSize(var.dtype);
    const bool dtype_differs =
        !plan.buckets.empty() && grads_and_vars[plan.buckets.back().front()].second.dtype != var.dtype;
    if (plan.buckets.empty() || bytes >= o.bucket_bytes || dtype_differs) {
      plan.buckets.emplace_back();
      bytes = 0;
    }
    plan.buckets.back().push_back(k);
    bytes += b;
    plan.text += "bucket " + std::to_string(plan.buckets.size() - 1) + " (instance " +
                 std::to_string(o.first_instance_key + static_cast<int64_t>(plan.buckets.size()) - 1) + "): " +
                 var.name + " " + DataTypeString(var.dtype) + var.shape.DebugString() + "\n";
  }
  return plan;
}

std::vector<Optimizer::GradAndVar> AllReduceGradients(const Scope& scope,
                                                      const std::vector<Optimizer::GradAndVar>& grads_and_vars,
                                                      const AllReduceOptions& o) {
  std::vector<Optimizer::GradAndVar> out = grads_and_vars;
  if (o.group_size == 1 || o.group_size < 0) return out;
  const BucketPlan plan = PlanBuckets(grads_and_vars, o);
  const Scope s = scope.NewSubScope("all_reduce");
  for (size_t b = 0; b < plan.buckets.size(); ++b) {
    const auto& members = plan.buckets[b];
    ops::CollectiveOptions co;
    co.group_size = o.group_size;
    co.group_key = o.group_key;
    co.instance_key = o.first_instance_key + static_cast<int64_t>(b);
    co.final_op = o.average ? "Div" : "Id";
    co.timeout_seconds = o.timeout_seconds;
    co.bucket_plan = plan.text;
    const Scope bs = s.NewSubScope("bucket_" + std::to_string(b));
    if (members.size() == 1) {  // reduced in place of a flattened copy
      out[members[0]].first = ops::CollectiveReduce(bs, grads_and_vars[members[0]].first, co);
      continue;
    }
    Tensor minus_one(DT_INT64, TensorShape{1});
    minus_one.data<int64_t>()[0] = -1;
    const Output flat_shape = ops::Const(bs, minus_one);
    std::vector<Input> flat;
    for (size_t k : members) flat.push_back(ops::Reshape(bs, grads_and_vars[k].first, flat_shape));
    Output fused = ops::Concat(bs, flat, ops::Const(bs, 0));
    Output reduced = ops::CollectiveReduce(bs, fused, co);
    int64_t offset = 0;
    for (size_t k : members) {
      const Variable& v = grads_and_vars[k].second;
      const int64_t n = v.shape.num_elements();
      Tensor begin(DT_INT64, TensorShape{1}), size(DT_INT64, TensorShape{1}), shape(DT_INT64, TensorShape{v.shape.dims()});
      begin.data<int64_t>()[0] = offset;
      size.data<int64_t>()[0] = n;
      for (int d = 0; d < v.shape.dims(); ++d) shape.data<int64_t>()[d] = v.shape.dim_size(d);
      Output piece = ops::Slice(bs, reduced, ops::Const(bs, begin), ops::Const(bs, size));
      out[k].first = ops::Reshape(bs, piece, ops::Const(bs, shape));
      offset += n;
    }
  }
  return out;
}

Operation BroadcastVariables(const Scope& scope, const std::vector<Variable>& vars, bool is_source,
                             const AllReduceOptions& o) {
  const Scope s = scope.NewSubScope("broadcast_variables");
  // The variables, one line each, on every op: a member whose model differs
  // (a joiner built from other code) gets InvalidArgument naming the first
  // differing line instead of another variable's bytes.
  std::string plan = "broadcast of group " + std::to_string(o.group_key) + ", instances from " +
                     std::to_string(o.first_instance_key) + "\n";
  for (const Variable& v : vars) plan += v.name + " " + DataTypeString(v.dtype) + v.shape.DebugString() + "\n";
  std::vector<Operation> assigns;
  for (size_t i = 0; i < vars.size(); ++i) {
    const Variable& v = vars[i];
    ops::CollectiveOptions co;
    co.group_size = o.group_size;
    co.group_key = o.group_key;
    co.instance_key = o.first_instance_key + static_cast<int64_t>(i);
    co.timeout_seconds = o.timeout_seconds;
    co.bucket_plan = plan;
    if (o.group_size == 1 || o.group_size < 0) continue;
    if (o.group_size == 0) {  // elastic: every member the same op; the group's rank 0 is the source
      assigns.push_back(ops::Assign(s, v.ref, ops::CollectiveBcastFirst(s, v.value, co)).op());
    } else if (is_source) {
      assigns.push_back(ops::CollectiveBcastSend(s, v.value, v.shape, co).op());
    } else {
      Output received = ops::CollectiveBcastRecv(s, v.dtype, v.shape, co);
      assigns.push_back(ops::Assign(s, v.ref, received).op());
    }
  }
  return s.WithControlDependencies(assigns).AddOp("NoOp", {});
}

}  // namespace actorflow
