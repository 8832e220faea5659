// Typed builder functions for actorflow's ops: ops::MatMul(scope, a, b), ...
// Each adds one node to the scope's graph and returns its Output(s); constants
// may be passed wherever an Input is taken. See client/builder.hpp.
#pragma once

#include "actorflow/client/builder.hpp"

namespace actorflow {
namespace ops {

Output Const(const Scope& s, const Input::Initializer& value);
Output Placeholder(const Scope& s, DataType dtype, const PartialTensorShape& shape = PartialTensorShape());
Output PlaceholderWithDefault(const Scope& s, Input input, const PartialTensorShape& shape);
Output Identity(const Scope& s, Input x);
/// Identity whose output gradients treat as a constant: no gradient flows through it.
Output StopGradient(const Scope& s, Input x);
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
Output FloorDiv(const Scope& s, Input x, Input y);
Output FloorMod(const Scope& s, Input x, Input y);
Output Maximum(const Scope& s, Input x, Input y);
Output Minimum(const Scope& s, Input x, Input y);
Output Pow(const Scope& s, Input x, Input y);
Output Neg(const Scope& s, Input x);
Output Abs(const Scope& s, Input x);
Output Sign(const Scope& s, Input x);
Output Exp(const Scope& s, Input x);
Output Log(const Scope& s, Input x);
Output Square(const Scope& s, Input x);
Output Sqrt(const Scope& s, Input x);
Output Rsqrt(const Scope& s, Input x);
Output Reciprocal(const Scope& s, Input x);
Output Tanh(const Scope& s, Input x);
Output Sigmoid(const Scope& s, Input x);
Output Log1p(const Scope& s, Input x);
Output Expm1(const Scope& s, Input x);
Output Floor(const Scope& s, Input x);
Output Ceil(const Scope& s, Input x);
/// Half to even, as TensorFlow's Round.
Output Round(const Scope& s, Input x);
Output Sin(const Scope& s, Input x);
Output Cos(const Scope& s, Input x);
Output Erf(const Scope& s, Input x);
/// (x - y)^2, broadcasting.
Output SquaredDifference(const Scope& s, Input x, Input y);
/// x / y, and 0 where y is 0.
Output DivNoNan(const Scope& s, Input x, Input y);
Output Cast(const Scope& s, Input x, DataType dst);
/// Element-wise sum of tensors of one shape.
Output AddN(const Scope& s, const std::vector<Input>& inputs);
/// Running sum / product along `axis`; `exclusive` leaves each element out of its own result.
Output Cumsum(const Scope& s, Input x, Input axis, bool exclusive = false, bool reverse = false);
Output Cumprod(const Scope& s, Input x, Input axis, bool exclusive = false, bool reverse = false);

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
Output Relu6(const Scope& s, Input x);
Output Elu(const Scope& s, Input x);
Output Selu(const Scope& s, Input x);
Output Softplus(const Scope& s, Input x);
Output LeakyRelu(const Scope& s, Input x, float alpha = 0.2f);
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

// Backprops of element-wise functions from their output y (features for
// Relu) and the incoming gradient dy, and of BiasAdd's bias.
Output ReluGrad(const Scope& s, Input gradients, Input features);
Output Relu6Grad(const Scope& s, Input gradients, Input features);
Output EluGrad(const Scope& s, Input gradients, Input outputs);
Output SeluGrad(const Scope& s, Input gradients, Input outputs);
Output SoftplusGrad(const Scope& s, Input gradients, Input features);
Output LeakyReluGrad(const Scope& s, Input gradients, Input features, float alpha = 0.2f);
Output SigmoidGrad(const Scope& s, Input y, Input dy);
Output TanhGrad(const Scope& s, Input y, Input dy);
Output SqrtGrad(const Scope& s, Input y, Input dy);
Output RsqrtGrad(const Scope& s, Input y, Input dy);
Output ReciprocalGrad(const Scope& s, Input y, Input dy);
Output BiasAddGrad(const Scope& s, Input out_backprop, const std::string& data_format = "NHWC");

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
std::vector<Output> Unstack(const Scope& s, Input value, int64_t num, int64_t axis = 0);  // Unpack
Output Slice(const Scope& s, Input x, Input begin, Input size);
/// Slices of params along `axis` at `indices` (GatherV2; Gather is axis 0).
Output GatherV2(const Scope& s, Input params, Input indices, Input axis);
Output Gather(const Scope& s, Input params, Input indices);
/// Slices of params addressed by the rows of indices ([..., K]).
Output GatherNd(const Scope& s, Input params, Input indices);
/// Zeros of `shape` plus the slices of updates at the rows of indices.
Output ScatterNd(const Scope& s, Input indices, Input updates, Input shape);
/// Rows of data summed into num_segments segments by segment_ids (negative ids dropped).
Output UnsortedSegmentSum(const Scope& s, Input data, Input segment_ids, Input num_segments);
/// merged[indices[m][i]] = data[m][i]: the rows of several tensors interleaved.
Output DynamicStitch(const Scope& s, const std::vector<Input>& indices, const std::vector<Input>& data);
/// Python's slicing, x[begin:end:strides] per dimension; the masks as TensorFlow's StridedSlice takes them.
struct StridedSliceAttrs {
  int64_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_axis_mask = 0;
};
Output StridedSlice(const Scope& s, Input x, Input begin, Input end, Input strides,
                    const StridedSliceAttrs& attrs = {});
/// Zeros of `shape` with dy where StridedSlice with these arguments took its elements.
Output StridedSliceGrad(const Scope& s, Input shape, Input begin, Input end, Input strides, Input dy,
                        const StridedSliceAttrs& attrs = {});
Output Transpose(const Scope& s, Input x, Input perm);
Output Tile(const Scope& s, Input x, Input multiples);
/// Zero padding: paddings is [rank, 2], (before, after) per dimension.
Output Pad(const Scope& s, Input x, Input paddings);

// Index math on shapes, axes and permutations (what gradients are built from).
struct BroadcastGradientArgsOutputs {
  Output r0;
  Output r1;
};
BroadcastGradientArgsOutputs BroadcastGradientArgs(const Scope& s, Input s0, Input s1);
/// input_shape with the dims in `axes` set to 1 (a keep_dims reduction's shape).
Output ReducedShape(const Scope& s, Input input_shape, Input axes);
Output InvertPermutation(const Scope& s, Input x);
std::vector<Output> ConcatOffset(const Scope& s, Input concat_dim, const std::vector<Input>& shapes);
struct ListDiffOutputs {
  Output out;
  Output idx;
};
ListDiffOutputs ListDiff(const Scope& s, Input x, Input y, DataType out_idx = DT_INT32);

// List ops, one-hot encoding, logical reductions, Where, Unique, top-k, L2Loss.
/// The shapes of several tensors (ShapeN).
std::vector<Output> ShapeN(const Scope& s, const std::vector<Input>& inputs, DataType out_type = DT_INT32);
/// Its inputs, passed through one node (IdentityN).
std::vector<Output> IdentityN(const Scope& s, const std::vector<Input>& inputs);
/// indices expanded along a new axis of `depth` elements (-1: last).
Output OneHot(const Scope& s, Input indices, Input depth, Input on_value, Input off_value, int64_t axis = -1);
/// Logical AND / OR of a bool tensor over axes.
Output All(const Scope& s, Input x, Input axis, bool keep_dims = false);
Output Any(const Scope& s, Input x, Input axis, bool keep_dims = false);
/// The coordinates of the true (non-zero) elements: int64 [count, rank].
Output Where(const Scope& s, Input x);
struct UniqueOutputs {
  Output y;    // the distinct elements, in order of first appearance
  Output idx;  // each element's index in y
};
UniqueOutputs Unique(const Scope& s, Input x, DataType out_idx = DT_INT32);
struct TopKOutputs {
  Output values;
  Output indices;
};
/// The k largest entries of each row (last dimension), largest first (TopKV2).
TopKOutputs TopK(const Scope& s, Input x, Input k);
/// Whether each target is among the k largest predictions of its row (InTopKV2).
Output InTopK(const Scope& s, Input predictions, Input targets, Input k);
/// sum(t^2) / 2.
Output L2Loss(const Scope& s, Input t);

// Summaries for TensorBoard: scalar string tensors holding serialized Summary protos.
Output ScalarSummary(const Scope& s, Input tags, Input values);
Output HistogramSummary(const Scope& s, Input tag, Input values);
Output MergeSummary(const Scope& s, const std::vector<Input>& inputs);

/// Zero-pads the spatial dims of `input` by `paddings` ([M, 2]) and moves block_shape tiles into the batch.
Output SpaceToBatchND(const Scope& s, Input input, Input block_shape, Input paddings);
/// The inverse of SpaceToBatchND, cropping by `crops` ([M, 2]).
Output BatchToSpaceND(const Scope& s, Input input, Input block_shape, Input crops);

// Convolution and pooling, NHWC: strides and ksize as [1, h, w, 1], padding "SAME" or "VALID"
// (convolutions: or "EXPLICIT", with explicit_paddings [0, 0, top, bottom, left, right, 0, 0]).
Output Conv2D(const Scope& s, Input input, Input filter, const std::vector<int64_t>& strides,
              const std::string& padding, const std::vector<int64_t>& explicit_paddings = {});
Output Conv2DBackpropInput(const Scope& s, Input input_sizes, Input filter, Input out_backprop,
                           const std::vector<int64_t>& strides, const std::string& padding,
                           const std::vector<int64_t>& explicit_paddings = {});
Output Conv2DBackpropFilter(const Scope& s, Input input, Input filter_sizes, Input out_backprop,
                            const std::vector<int64_t>& strides, const std::string& padding,
                            const std::vector<int64_t>& explicit_paddings = {});
Output MaxPool(const Scope& s, Input x, const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
               const std::string& padding);
Output AvgPool(const Scope& s, Input x, const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
               const std::string& padding);
Output MaxPoolGrad(const Scope& s, Input orig_input, Input orig_output, Input grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, const std::string& padding);
Output MaxPoolGradGrad(const Scope& s, Input orig_input, Input orig_output, Input grad,
                       const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                       const std::string& padding);
Output AvgPoolGrad(const Scope& s, Input orig_input_shape, Input grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, const std::string& padding);

// Strings: inputs joined element by element; numbers and bools formatted.
Output StringJoin(const Scope& s, const std::vector<Input>& inputs, const std::string& separator = "");
struct AsStringAttrs {
  int64_t precision = -1, width = -1;
  bool scientific = false, shortest = false;
  std::string fill;
};
Output AsString(const Scope& s, Input x, const AsStringAttrs& attrs = {});

// Batch normalization, NHWC (FusedBatchNormV3).
struct FusedBatchNormAttrs {
  float epsilon = 0.0001f;
  float exponential_avg_factor = 1.f;
  bool is_training = true;
};
struct FusedBatchNormOutputs {
  Output y, batch_mean, batch_variance, reserve_space_1, reserve_space_2, reserve_space_3;
};
FusedBatchNormOutputs FusedBatchNorm(const Scope& s, Input x, Input scale, Input offset, Input mean, Input variance,
                                     const FusedBatchNormAttrs& attrs = {});

}  // namespace ops
}  // namespace actorflow
