// Static shape inference: an op's shape function computes the (partial) shapes
// of a node's outputs from those of its inputs, and the values of inputs that
// are constants. The graph builder runs it on every node it adds, so a
// MatMul of [2,3] by [4,5] fails when the graph is built, naming the node.
//
// Shapes and constant values come from GraphDefs that may be hostile, so a
// shape function never sizes anything by an unchecked number: a rank taken
// from a dimension ("paddings of shape [n, 2]" means rank n) goes through
// RankFromDim (at most kMaxShapeRank), dims are combined with overflow checks
// (AddDims, MulDims), and an overflowing or impossible result is an
// InvalidArgument naming the node, never a wrapped number. Only small
// constants are handed to shape functions (ConstValueForShapeFn), and
// RunShapeFn turns an exception escaping a shape function into a Status.
#pragma once

#include <functional>
#include <vector>

#include "actorflow/core/proto/node_def.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/core/tensor_shape.hpp"
#include "actorflow/ops/attrs.hpp"

namespace actorflow {

class InferenceContext {
 public:
  InferenceContext(const proto::NodeDef* node, std::vector<PartialTensorShape> inputs,
                   std::vector<const Tensor*> input_tensors, int num_outputs)
      : node_(node), inputs_(std::move(inputs)), input_tensors_(std::move(input_tensors)), outputs_(num_outputs) {}

  const proto::NodeDef& node() const { return *node_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const PartialTensorShape& input(int i) const { return inputs_[i]; }
  /// The value of input i when it is a constant, else nullptr.
  const Tensor* input_tensor(int i) const { return i < static_cast<int>(input_tensors_.size()) ? input_tensors_[i] : nullptr; }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  void set_output(int i, PartialTensorShape s) { outputs_[i] = std::move(s); }
  const PartialTensorShape& output(int i) const { return outputs_[i]; }
  const std::vector<PartialTensorShape>& outputs() const { return outputs_; }
  template <class T>
  Status GetAttr(const std::string& name, T* v) const {
    return GetNodeAttr(*node_, name, v);
  }
  /// InvalidArgument prefixed with the node's name and op.
  template <class... Args>
  Status Error(const Args&... args) const {
    return errors::InvalidArgument("node '", node_->name(), "' (op '", node_->op(), "'): ", args...);
  }

 private:
  const proto::NodeDef* node_;
  std::vector<PartialTensorShape> inputs_;
  std::vector<const Tensor*> input_tensors_;
  std::vector<PartialTensorShape> outputs_;
};

/// The most elements a constant may have for shape functions to see its value
/// (index tensors: shapes, axes, paddings, multiples, perms have <= 2 * rank).
constexpr int64_t kMaxShapeFnConstElements = int64_t{1} << 16;

/// The rank that a vector of `dim` entries (or a [dim, k] matrix) describes:
/// -1 for an unknown dim, else `dim`; InvalidArgument from `c` naming `what`
/// when it exceeds kMaxShapeRank.
Status RankFromDim(const InferenceContext* c, int64_t dim, const char* what, int* rank);
/// A shape of `rank` unknown dims; unknown rank for rank < 0. Expects rank <=
/// kMaxShapeRank (from a known shape or RankFromDim).
PartialTensorShape UnknownShapeOfRank(int rank);
/// a + b and a * b of dims >= 0; false when the result overflows int64.
bool AddDims(int64_t a, int64_t b, int64_t* out);
bool MulDims(int64_t a, int64_t b, int64_t* out);
/// The value of a Const node for shape functions: false (no value) unless its
/// "value" attr is a tensor of a known shape with at most
/// kMaxShapeFnConstElements elements that parses, so a Const declaring a huge
/// shape is never materialised just to infer shapes.
bool ConstValueForShapeFn(const proto::NodeDef& const_node, Tensor* out);
/// Runs `fn` on `c`; an exception it throws becomes a Status naming the node
/// (std::bad_alloc ResourceExhausted, anything else InvalidArgument).
Status RunShapeFn(const std::function<Status(InferenceContext*)>& fn, InferenceContext* c);

/// numpy broadcasting of two partial shapes; false when known dims conflict.
bool BroadcastShapes(const PartialTensorShape& a, const PartialTensorShape& b, PartialTensorShape* out);
/// The most specific shape compatible with both; false when they conflict.
bool MergeShapes(const PartialTensorShape& a, const PartialTensorShape& b, PartialTensorShape* out);
/// Reads an int32/int64 tensor as int64 values (axes, shapes, perms).
std::vector<int64_t> TensorToInt64s(const Tensor& t);

namespace shape_fns {
Status Unknown(InferenceContext* c);             // every output unknown
Status Scalar(InferenceContext* c);              // every output a scalar
Status Unchanged(InferenceContext* c);           // output 0 = input 0
Status ShapeAttr(InferenceContext* c);           // output 0 = the node's "shape" attr
Status Broadcasting(InferenceContext* c);        // output 0 = broadcast(input 0, input 1)
Status Reduction(InferenceContext* c);           // input 0 reduced over input 1 with keep_dims
Status MatMul(InferenceContext* c);
Status Vector(InferenceContext* c);              // output 0 a vector of unknown length
}  // namespace shape_fns

}  // namespace actorflow
