// Static shape inference: an op's shape function computes the (partial) shapes
// of a node's outputs from those of its inputs, and the values of inputs that
// are constants. The graph builder runs it on every node it adds, so a
// MatMul of [2,3] by [4,5] fails when the graph is built, naming the node.
#pragma once

#include <vector>

#include "core/proto/node_def.pb.h"
#include "core/status.hpp"
#include "core/tensor.hpp"
#include "core/tensor_shape.hpp"
#include "ops/attrs.hpp"

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
Status Broadcasting(InferenceContext* c);        // output 0 = broadcast(input 0, input 1)
Status Reduction(InferenceContext* c);           // input 0 reduced over input 1 with keep_dims
Status MatMul(InferenceContext* c);
Status Vector(InferenceContext* c);              // output 0 a vector of unknown length
}  // namespace shape_fns

}  // namespace actorflow
