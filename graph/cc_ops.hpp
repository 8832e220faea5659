// Typed builder functions for actorflow's ops: ops::MatMul(scope, a, b), ...
// Each adds one node to the scope's graph and returns its Output(s); constants
// may be passed wherever an Input is taken. See graph/builder.hpp.
#pragma once

#include "graph/builder.hpp"

namespace actorflow {
namespace ops {

Output Const(const Scope& s, const Input::Initializer& value);
Output Placeholder(const Scope& s, DataType dtype, const PartialTensorShape& shape = PartialTensorShape());
Output PlaceholderWithDefault(const Scope& s, Input input, const PartialTensorShape& shape);
Output Identity(const Scope& s, Input x);
Operation NoOp(const Scope& s);
/// Fails the step with InvalidArgument when `condition` is false.
Operation Assert(const Scope& s, Input condition, const std::vector<Output>& data, int64_t summarize = 3);

// Element-wise math (numpy broadcasting for binary ops).
Output Add(const Scope& s, Input x, Input y);
Output AddV2(const Scope& s, Input x, Input y);
Output Sub(const Scope& s, Input x, Input y);
Output Mul(const Scope& s, Input x, Input y);
Output RealDiv(const Scope& s, Input x, Input y);
Output Div(const Scope& s, Input x, Input y);  // RealDiv
Output Maximum(const Scope& s, Input x, Input y);
Output Minimum(const Scope& s, Input x, Input y);
Output Pow(const Scope& s, Input x, Input y);
Output Neg(const Scope& s, Input x);
Output Abs(const Scope& s, Input x);
Output Exp(const Scope& s, Input x);
Output Log(const Scope& s, Input x);
Output Square(const Scope& s, Input x);
Output Sqrt(const Scope& s, Input x);
Output Rsqrt(const Scope& s, Input x);
Output Tanh(const Scope& s, Input x);
Output Sigmoid(const Scope& s, Input x);
Output Cast(const Scope& s, Input x, DataType dst);

// Comparison and logic.
Output Equal(const Scope& s, Input x, Input y);
Output NotEqual(const Scope& s, Input x, Input y);
Output Less(const Scope& s, Input x, Input y);
Output LessEqual(const Scope& s, Input x, Input y);
Output Greater(const Scope& s, Input x, Input y);
Output GreaterEqual(const Scope& s, Input x, Input y);
Output LogicalAnd(const Scope& s, Input x, Input y);
Output LogicalOr(const Scope& s, Input x, Input y);
Output LogicalNot(const Scope& s, Input x);
Output Select(const Scope& s, Input condition, Input t, Input e);

// Linear algebra and neural-network ops.
Output MatMul(const Scope& s, Input a, Input b, bool transpose_a = false, bool transpose_b = false);
Output BiasAdd(const Scope& s, Input value, Input bias, const std::string& data_format = "NHWC");
Output Relu(const Scope& s, Input x);
Output Softmax(const Scope& s, Input logits);
Output LogSoftmax(const Scope& s, Input logits);
struct XentOutputs {
  Output loss;
  Output backprop;
};
XentOutputs SoftmaxCrossEntropyWithLogits(const Scope& s, Input features, Input labels);
XentOutputs SparseSoftmaxCrossEntropyWithLogits(const Scope& s, Input features, Input labels);

// Reductions over `axis` (a scalar or a vector of axes).
Output Sum(const Scope& s, Input x, Input axis, bool keep_dims = false);
Output Mean(const Scope& s, Input x, Input axis, bool keep_dims = false);
Output Max(const Scope& s, Input x, Input axis, bool keep_dims = false);
Output Min(const Scope& s, Input x, Input axis, bool keep_dims = false);
Output Prod(const Scope& s, Input x, Input axis, bool keep_dims = false);
Output ArgMax(const Scope& s, Input x, Input dimension, DataType output_type = DT_INT64);
Output ArgMin(const Scope& s, Input x, Input dimension, DataType output_type = DT_INT64);

// Shapes and arrays.
Output Reshape(const Scope& s, Input x, Input shape);
Output Shape(const Scope& s, Input x, DataType out_type = DT_INT32);
Output Size(const Scope& s, Input x, DataType out_type = DT_INT32);
Output Rank(const Scope& s, Input x);
Output ExpandDims(const Scope& s, Input x, Input dim);
Output Squeeze(const Scope& s, Input x, const std::vector<int64_t>& axis = {});
Output Fill(const Scope& s, Input dims, Input value);
Output ZerosLike(const Scope& s, Input x);
Output OnesLike(const Scope& s, Input x);
Output Range(const Scope& s, Input start, Input limit, Input delta);
Output Concat(const Scope& s, const std::vector<Input>& values, Input axis);  // ConcatV2
std::vector<Output> Split(const Scope& s, Input axis, Input value, int64_t num_split);
Output Stack(const Scope& s, const std::vector<Input>& values, int64_t axis = 0);  // Pack
Output Slice(const Scope& s, Input x, Input begin, Input size);
Output Transpose(const Scope& s, Input x, Input perm);

}  // namespace ops
}  // namespace actorflow
