#include "actorflow/client/ops/cc_ops.hpp"

namespace actorflow {
namespace ops {

namespace {
Output First(const Operation& op) { return op.node() ? Output(op.node(), 0) : Output(); }
Output Unary(const Scope& s, const char* op, const Input& x) { return First(s.AddOp(op, {{s.AsOutput(x)}})); }
Output Binary(const Scope& s, const char* op, const Input& x, const Input& y) {
  return First(s.AddOp(op, {{s.AsOutput(x)}, {s.AsOutput(y)}}));
}
Output Reduce(const Scope& s, const char* op, const Input& x, const Input& axis, bool keep_dims) {
  return First(s.AddOp(op, {{s.AsOutput(x)}, {s.AsOutput(axis)}}, {{"keep_dims", AttrBool(keep_dims)}}));
}
std::vector<Output> AllOutputs(const Operation& op) {
  std::vector<Output> out;
  for (int i = 0; i < op.num_outputs(); ++i) out.push_back(op.output(i));
  return out;
}
OutputList AsOutputs(const Scope& s, const std::vector<Input>& in) {
  OutputList out;
  for (const auto& i : in) out.push_back(s.AsOutput(i));
  return out;
}
}  // namespace

Output Const(const Scope& s, const Input::Initializer& value) {
  if (!value.status.ok()) {
    s.UpdateStatus(value.status);
    return Output();
  }
  return First(s.AddOp("Const", {}, {{"value", AttrTensor(value.tensor)}, {"dtype", AttrType(value.tensor.dtype())}}));
}

Output Placeholder(const Scope& s, DataType dtype, const PartialTensorShape& shape) {
  return First(s.AddOp("Placeholder", {}, {{"dtype", AttrType(dtype)}, {"shape", AttrShape(shape)}}));
}
Output PlaceholderWithDefault(const Scope& s, Input input, const PartialTensorShape& shape) {
  return First(s.AddOp("PlaceholderWithDefault", {{s.AsOutput(input)}}, {{"shape", AttrShape(shape)}}));
}
Output Identity(const Scope& s, Input x) { return Unary(s, "Identity", x); }
Output StopGradient(const Scope& s, Input x) { return Unary(s, "StopGradient", x); }
Operation NoOp(const Scope& s) { return s.AddOp("NoOp", {}); }
Operation Assert(const Scope& s, Input condition, const std::vector<Output>& data, int64_t summarize) {
  return s.AddOp("Assert", {{s.AsOutput(condition)}, data}, {{"summarize", AttrInt(summarize)}});
}

Output Add(const Scope& s, Input x, Input y) { return Binary(s, "Add", x, y); }
Output AddV2(const Scope& s, Input x, Input y) { return Binary(s, "AddV2", x, y); }
Output Sub(const Scope& s, Input x, Input y) { return Binary(s, "Sub", x, y); }
Output Mul(const Scope& s, Input x, Input y) { return Binary(s, "Mul", x, y); }
Output RealDiv(const Scope& s, Input x, Input y) { return Binary(s, "RealDiv", x, y); }
Output Div(const Scope& s, Input x, Input y) { return Binary(s, "RealDiv", x, y); }
Output FloorDiv(const Scope& s, Input x, Input y) { return Binary(s, "FloorDiv", x, y); }
Output FloorMod(const Scope& s, Input x, Input y) { return Binary(s, "FloorMod", x, y); }
Output Maximum(const Scope& s, Input x, Input y) { return Binary(s, "Maximum", x, y); }
Output Minimum(const Scope& s, Input x, Input y) { return Binary(s, "Minimum", x, y); }
Output Pow(const Scope& s, Input x, Input y) { return Binary(s, "Pow", x, y); }
Output Neg(const Scope& s, Input x) { return Unary(s, "Neg", x); }
Output Log1p(const Scope& s, Input x) { return Unary(s, "Log1p", x); }
Output Expm1(const Scope& s, Input x) { return Unary(s, "Expm1", x); }
Output Floor(const Scope& s, Input x) { return Unary(s, "Floor", x); }
Output Ceil(const Scope& s, Input x) { return Unary(s, "Ceil", x); }
Output Round(const Scope& s, Input x) { return Unary(s, "Round", x); }
Output Sin(const Scope& s, Input x) { return Unary(s, "Sin", x); }
Output Cos(const Scope& s, Input x) { return Unary(s, "Cos", x); }
Output Erf(const Scope& s, Input x) { return Unary(s, "Erf", x); }
Output SquaredDifference(const Scope& s, Input x, Input y) { return Binary(s, "SquaredDifference", x, y); }
Output DivNoNan(const Scope& s, Input x, Input y) { return Binary(s, "DivNoNan", x, y); }
Output Relu6(const Scope& s, Input x) { return Unary(s, "Relu6", x); }
Output Elu(const Scope& s, Input x) { return Unary(s, "Elu", x); }
Output Selu(const Scope& s, Input x) { return Unary(s, "Selu", x); }
Output Softplus(const Scope& s, Input x) { return Unary(s, "Softplus", x); }
Output LeakyRelu(const Scope& s, Input x, float alpha) {
  return First(s.AddOp("LeakyRelu", {{s.AsOutput(x)}}, {{"alpha", AttrFloat(alpha)}}));
}
Output Relu6Grad(const Scope& s, Input g, Input f) { return Binary(s, "Relu6Grad", g, f); }
Output EluGrad(const Scope& s, Input g, Input y) { return Binary(s, "EluGrad", g, y); }
Output SeluGrad(const Scope& s, Input g, Input y) { return Binary(s, "SeluGrad", g, y); }
Output SoftplusGrad(const Scope& s, Input g, Input f) { return Binary(s, "SoftplusGrad", g, f); }
Output LeakyReluGrad(const Scope& s, Input g, Input f, float alpha) {
  return First(s.AddOp("LeakyReluGrad", {{s.AsOutput(g)}, {s.AsOutput(f)}}, {{"alpha", AttrFloat(alpha)}}));
}
Output Abs(const Scope& s, Input x) { return Unary(s, "Abs", x); }
Output Sign(const Scope& s, Input x) { return Unary(s, "Sign", x); }
Output Exp(const Scope& s, Input x) { return Unary(s, "Exp", x); }
Output Log(const Scope& s, Input x) { return Unary(s, "Log", x); }
Output Square(const Scope& s, Input x) { return Unary(s, "Square", x); }
Output Sqrt(const Scope& s, Input x) { return Unary(s, "Sqrt", x); }
Output Rsqrt(const Scope& s, Input x) { return Unary(s, "Rsqrt", x); }
Output Reciprocal(const Scope& s, Input x) { return Unary(s, "Reciprocal", x); }
Output Tanh(const Scope& s, Input x) { return Unary(s, "Tanh", x); }
Output Sigmoid(const Scope& s, Input x) { return Unary(s, "Sigmoid", x); }
Output Cast(const Scope& s, Input x, DataType dst) {
  return First(s.AddOp("Cast", {{s.AsOutput(x)}}, {{"DstT", AttrType(dst)}}));
}
Output AddN(const Scope& s, const std::vector<Input>& inputs) { return First(s.AddOp("AddN", {AsOutputs(s, inputs)})); }
Output Cumsum(const Scope& s, Input x, Input axis, bool exclusive, bool reverse) {
  return First(s.AddOp("Cumsum", {{s.AsOutput(x)}, {s.AsOutput(axis)}},
                       {{"exclusive", AttrBool(exclusive)}, {"reverse", AttrBool(reverse)}}));
}
Output Cumprod(const Scope& s, Input x, Input axis, bool exclusive, bool reverse) {
  return First(s.AddOp("Cumprod", {{s.AsOutput(x)}, {s.AsOutput(axis)}},
                       {{"exclusive", AttrBool(exclusive)}, {"reverse", AttrBool(reverse)}}));
}

Output Equal(const Scope& s, Input x, Input y) { return Binary(s, "Equal", x, y); }
Output NotEqual(const Scope& s, Input x, Input y) { return Binary(s, "NotEqual", x, y); }
Output Less(const Scope& s, Input x, Input y) { return Binary(s, "Less", x, y); }
Output LessEqual(const Scope& s, Input x, Input y) { return Binary(s, "LessEqual", x, y); }
Output Greater(const Scope& s, Input x, Input y) { return Binary(s, "Greater", x, y); }
Output GreaterEqual(const Scope& s, Input x, Input y) { return Binary(s, "GreaterEqual", x, y); }
Output LogicalAnd(const Scope& s, Input x, Input y) { return Binary(s, "LogicalAnd", x, y); }
Output LogicalOr(const Scope& s, Input x, Input y) { return Binary(s, "LogicalOr", x, y); }
Output LogicalNot(const Scope& s, Input x) { return Unary(s, "LogicalNot", x); }
Output Select(const Scope& s, Input condition, Input t, Input e) {
  return First(s.AddOp("Select", {{s.AsOutput(condition)}, {s.AsOutput(t)}, {s.AsOutput(e)}}));
}

Output MatMul(const Scope& s, Input a, Input b, bool transpose_a, bool transpose_b) {
  return First(s.AddOp("MatMul", {{s.AsOutput(a)}, {s.AsOutput(b)}},
                       {{"transpose_a", AttrBool(transpose_a)}, {"transpose_b", AttrBool(transpose_b)}}));
}
Output BiasAdd(const Scope& s, Input value, Input bias, const std::string& data_format) {
  return First(s.AddOp("BiasAdd", {{s.AsOutput(value)}, {s.AsOutput(bias)}}, {{"data_format", AttrString(data_format)}}));
}
Output Relu(const Scope& s, Input x) { return Unary(s, "Relu", x); }
Output ReluGrad(const Scope& s, Input gradients, Input features) {
  return Binary(s, "ReluGrad", gradients, features);
}
Output SigmoidGrad(const Scope& s, Input y, Input dy) { return Binary(s, "SigmoidGrad", y, dy); }
Output TanhGrad(const Scope& s, Input y, Input dy) { return Binary(s, "TanhGrad", y, dy); }
Output SqrtGrad(const Scope& s, Input y, Input dy) { return Binary(s, "SqrtGrad", y, dy); }
Output RsqrtGrad(const Scope& s, Input y, Input dy) { return Binary(s, "RsqrtGrad", y, dy); }
Output ReciprocalGrad(const Scope& s, Input y, Input dy) { return Binary(s, "ReciprocalGrad", y, dy); }
Output BiasAddGrad(const Scope& s, Input out_backprop, const std::string& data_format) {
  return First(s.AddOp("BiasAddGrad", {{s.AsOutput(out_backprop)}}, {{"data_format", AttrString(data_format)}}));
}
Output Softmax(const Scope& s, Input logits) { return Unary(s, "Softmax", logits); }
Output LogSoftmax(const Scope& s, Input logits) { return Unary(s, "LogSoftmax", logits); }
XentOutputs SoftmaxCrossEntropyWithLogits(const Scope& s, Input features, Input labels) {
  Operation op = s.AddOp("SoftmaxCrossEntropyWithLogits", {{s.AsOutput(features)}, {s.AsOutput(labels)}});
  if (!op.node()) return {};
  return {op.output(0), op.output(1)};
}
XentOutputs SparseSoftmaxCrossEntropyWithLogits(const Scope& s, Input features, Input labels) {
  Operation op = s.AddOp("SparseSoftmaxCrossEntropyWithLogits", {{s.AsOutput(features)}, {s.AsOutput(labels)}});
  if (!op.node()) return {};
  return {op.output(0), op.output(1)};
}

Output Sum(const Scope& s, Input x, Input axis, bool keep_dims) { return Reduce(s, "Sum", x, axis, keep_dims); }
Output Mean(const Scope& s, Input x, Input axis, bool keep_dims) { return Reduce(s, "Mean", x, axis, keep_dims); }
Output Max(const Scope& s, Input x, Input axis, bool keep_dims) { return Reduce(s, "Max", x, axis, keep_dims); }
Output Min(const Scope& s, Input x, Input axis, bool keep_dims) { return Reduce(s, "Min", x, axis, keep_dims); }
Output Prod(const Scope& s, Input x, Input axis, bool keep_dims) { return Reduce(s, "Prod", x, axis, keep_dims); }
Output ArgMax(const Scope& s, Input x, Input dimension, DataType output_type) {
  return First(s.AddOp("ArgMax", {{s.AsOutput(x)}, {s.AsOutput(dimension)}}, {{"output_type", AttrType(output_type)}}));
}
Output ArgMin(const Scope& s, Input x, Input dimension, DataType output_type) {
  return First(s.AddOp("ArgMin", {{s.AsOutput(x)}, {s.AsOutput(dimension)}}, {{"output_type", AttrType(output_type)}}));
}

Output Reshape(const Scope& s, Input x, Input shape) { return Binary(s, "Reshape", x, shape); }
Output Shape(const Scope& s, Input x, DataType out_type) {
  return First(s.AddOp("Shape", {{s.AsOutput(x)}}, {{"out_type", AttrType(out_type)}}));
}
Output Size(const Scope& s, Input x, DataType out_type) {
  return First(s.AddOp("Size", {{s.AsOutput(x)}}, {{"out_type", AttrType(out_type)}}));
}
Output Rank(const Scope& s, Input x) { return Unary(s, "Rank", x); }
Output ExpandDims(const Scope& s, Input x, Input dim) { return Binary(s, "ExpandDims", x, dim); }
Output Squeeze(const Scope& s, Input x, const std::vector<int64_t>& axis) {
  return First(s.AddOp("Squeeze", {{s.AsOutput(x)}}, {{"squeeze_dims", AttrIntList(axis)}}));
}
Output Fill(const Scope& s, Input dims, Input value) { return Binary(s, "Fill", dims, value); }
Output ZerosLike(const Scope& s, Input x) { return Unary(s, "ZerosLike", x); }
Output OnesLike(const Scope& s, Input x) { return Unary(s, "OnesLike", x); }
Output Range(const Scope& s, Input start, Input limit, Input delta) {
  return First(s.AddOp("Range", {{s.AsOutput(start)}, {s.AsOutput(limit)}, {s.AsOutput(delta)}}));
}
Output Concat(const Scope& s, const std::vector<Input>& values, Input axis) {
  return First(s.AddOp("ConcatV2", {AsOutputs(s, values), {s.AsOutput(axis)}}));
}
std::vector<Output> Split(const Scope& s, Input axis, Input value, int64_t num_split) {
  return AllOutputs(s.AddOp("Split", {{s.AsOutput(axis)}, {s.AsOutput(value)}}, {{"num_split", AttrInt(num_split)}}));
}
Output Stack(const Scope& s, const std::vector<Input>& values, int64_t axis) {
  return First(s.AddOp("Pack", {AsOutputs(s, values)}, {{"axis", AttrInt(axis)}}));
}
std::vector<Output> Unstack(const Scope& s, Input value, int64_t num, int64_t axis) {
  return AllOutputs(s.AddOp("Unpack", {{s.AsOutput(value)}}, {{"num", AttrInt(num)}, {"axis", AttrInt(axis)}}));
}
Output Slice(const Scope& s, Input x, Input begin, Input size) {
  return First(s.AddOp("Slice", {{s.AsOutput(x)}, {s.AsOutput(begin)}, {s.AsOutput(size)}}));
}
Output GatherV2(const Scope& s, Input params, Input indices, Input axis) {
  return First(s.AddOp("GatherV2", {{s.AsOutput(params)}, {s.AsOutput(indices)}, {s.AsOutput(axis)}}));
}
Output Gather(const Scope& s, Input params, Input indices) { return Binary(s, "Gather", params, indices); }
Output GatherNd(const Scope& s, Input params, Input indices) { return Binary(s, "GatherNd", params, indices); }
Output ScatterNd(const Scope& s, Input indices, Input updates, Input shape) {
  return First(s.AddOp("ScatterNd", {{s.AsOutput(indices)}, {s.AsOutput(updates)}, {s.AsOutput(shape)}}));
}
Output UnsortedSegmentSum(const Scope& s, Input data, Input segment_ids, Input num_segments) {
  return First(s.AddOp("UnsortedSegmentSum",
                       {{s.AsOutput(data)}, {s.AsOutput(segment_ids)}, {s.AsOutput(num_segments)}}));
}
Output DynamicStitch(const Scope& s, const std::vector<Input>& indices, const std::vector<Input>& data) {
  return First(s.AddOp("DynamicStitch", {AsOutputs(s, indices), AsOutputs(s, data)}));
}
namespace {
AttrMap MaskAttrs(const StridedSliceAttrs& a) {
  return {{"begin_mask", AttrInt(a.begin_mask)},
          {"end_mask", AttrInt(a.end_mask)},
          {"ellipsis_mask", AttrInt(a.ellipsis_mask)},
          {"new_axis_mask", AttrInt(a.new_axis_mask)},
          {"shrink_axis_mask", AttrInt(a.shrink_axis_mask)}};
}
}  // namespace
Output StridedSlice(const Scope& s, Input x, Input begin, Input end, Input strides, const StridedSliceAttrs& attrs) {
  return First(s.AddOp("StridedSlice", {{s.AsOutput(x)}, {s.AsOutput(begin)}, {s.AsOutput(end)}, {s.AsOutput(strides)}},
                       MaskAttrs(attrs)));
}
Output StridedSliceGrad(const Scope& s, Input shape, Input begin, Input end, Input strides, Input dy,
                        const StridedSliceAttrs& attrs) {
  return First(s.AddOp("StridedSliceGrad",
                       {{s.AsOutput(shape)}, {s.AsOutput(begin)}, {s.AsOutput(end)}, {s.AsOutput(strides)},
                        {s.AsOutput(dy)}},
                       MaskAttrs(attrs)));
}
Output Transpose(const Scope& s, Input x, Input perm) { return Binary(s, "Transpose", x, perm); }
Output Tile(const Scope& s, Input x, Input multiples) { return Binary(s, "Tile", x, multiples); }
Output Pad(const Scope& s, Input x, Input paddings) { return Binary(s, "Pad", x, paddings); }

BroadcastGradientArgsOutputs BroadcastGradientArgs(const Scope& s, Input s0, Input s1) {
  Operation op = s.AddOp("BroadcastGradientArgs", {{s.AsOutput(s0)}, {s.AsOutput(s1)}});
  if (!op.node()) return {};
  return {op.output(0), op.output(1)};
}
Output SpaceToBatchND(const Scope& s, Input input, Input block_shape, Input paddings) {
  return First(s.AddOp("SpaceToBatchND", {{s.AsOutput(input)}, {s.AsOutput(block_shape)}, {s.AsOutput(paddings)}}));
}
Output BatchToSpaceND(const Scope& s, Input input, Input block_shape, Input crops) {
  return First(s.AddOp("BatchToSpaceND", {{s.AsOutput(input)}, {s.AsOutput(block_shape)}, {s.AsOutput(crops)}}));
}
Output ReducedShape(const Scope& s, Input input_shape, Input axes) { return Binary(s, "ReducedShape", input_shape, axes); }
Output InvertPermutation(const Scope& s, Input x) { return Unary(s, "InvertPermutation", x); }
std::vector<Output> ConcatOffset(const Scope& s, Input concat_dim, const std::vector<Input>& shapes) {
  return AllOutputs(s.AddOp("ConcatOffset", {{s.AsOutput(concat_dim)}, AsOutputs(s, shapes)}));
}
ListDiffOutputs ListDiff(const Scope& s, Input x, Input y, DataType out_idx) {
  Operation op = s.AddOp("ListDiff", {{s.AsOutput(x)}, {s.AsOutput(y)}}, {{"out_idx", AttrType(out_idx)}});
  if (!op.node()) return {};
  return {op.output(0), op.output(1)};
}

std::vector<Output> ShapeN(const Scope& s, const std::vector<Input>& inputs, DataType out_type) {
  return AllOutputs(s.AddOp("ShapeN", {AsOutputs(s, inputs)}, {{"out_type", AttrType(out_type)}}));
}
std::vector<Output> IdentityN(const Scope& s, const std::vector<Input>& inputs) {
  return AllOutputs(s.AddOp("IdentityN", {AsOutputs(s, inputs)}));
}
Output OneHot(const Scope& s, Input indices, Input depth, Input on_value, Input off_value, int64_t axis) {
  return First(s.AddOp("OneHot",
                       {{s.AsOutput(indices)}, {s.AsOutput(depth)}, {s.AsOutput(on_value)}, {s.AsOutput(off_value)}},
                       {{"axis", AttrInt(axis)}}));
}
Output All(const Scope& s, Input x, Input axis, bool keep_dims) {
  return First(s.AddOp("All", {{s.AsOutput(x)}, {s.AsOutput(axis)}}, {{"keep_dims", AttrBool(keep_dims)}}));
}
Output Any(const Scope& s, Input x, Input axis, bool keep_dims) {
  return First(s.AddOp("Any", {{s.AsOutput(x)}, {s.AsOutput(axis)}}, {{"keep_dims", AttrBool(keep_dims)}}));
}
Output Where(const Scope& s, Input x) { return First(s.AddOp("Where", {{s.AsOutput(x)}})); }
UniqueOutputs Unique(const Scope& s, Input x, DataType out_idx) {
  Operation op = s.AddOp("Unique", {{s.AsOutput(x)}}, {{"out_idx", AttrType(out_idx)}});
  if (!op.node()) return {};
  return {op.output(0), op.output(1)};
}
TopKOutputs TopK(const Scope& s, Input x, Input k) {
  Operation op = s.AddOp("TopKV2", {{s.AsOutput(x)}, {s.AsOutput(k)}});
  if (!op.node()) return {};
  return {op.output(0), op.output(1)};
}
Output InTopK(const Scope& s, Input predictions, Input targets, Input k) {
  return First(s.AddOp("InTopKV2", {{s.AsOutput(predictions)}, {s.AsOutput(targets)}, {s.AsOutput(k)}}));
}
Output L2Loss(const Scope& s, Input t) { return First(s.AddOp("L2Loss", {{s.AsOutput(t)}})); }

Output ScalarSummary(const Scope& s, Input tags, Input values) { return Binary(s, "ScalarSummary", tags, values); }
Output HistogramSummary(const Scope& s, Input tag, Input values) { return Binary(s, "HistogramSummary", tag, values); }
Output MergeSummary(const Scope& s, const std::vector<Input>& inputs) {
  return First(s.AddOp("MergeSummary", {AsOutputs(s, inputs)}));
}

namespace {
AttrMap ConvAttrs(const std::vector<int64_t>& strides, const std::string& padding,
                  const std::vector<int64_t>& explicit_paddings) {
  AttrMap a = {{"strides", AttrIntList(strides)}, {"padding", AttrString(padding)}};
  if (!explicit_paddings.empty()) a["explicit_paddings"] = AttrIntList(explicit_paddings);
  return a;
}
AttrMap PoolAttrs(const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides, const std::string& padding) {
  return {{"ksize", AttrIntList(ksize)}, {"strides", AttrIntList(strides)}, {"padding", AttrString(padding)}};
}
}  // namespace
Output Conv2D(const Scope& s, Input input, Input filter, const std::vector<int64_t>& strides,
              const std::string& padding, const std::vector<int64_t>& explicit_paddings) {
  return First(s.AddOp("Conv2D", {{s.AsOutput(input)}, {s.AsOutput(filter)}},
                       ConvAttrs(strides, padding, explicit_paddings)));
}
Output Conv2DBackpropInput(const Scope& s, Input input_sizes, Input filter, Input out_backprop,
                           const std::vector<int64_t>& strides, const std::string& padding,
                           const std::vector<int64_t>& explicit_paddings) {
  return First(s.AddOp("Conv2DBackpropInput", {{s.AsOutput(input_sizes)}, {s.AsOutput(filter)}, {s.AsOutput(out_backprop)}},
                       ConvAttrs(strides, padding, explicit_paddings)));
}
Output Conv2DBackpropFilter(const Scope& s, Input input, Input filter_sizes, Input out_backprop,
                            const std::vector<int64_t>& strides, const std::string& padding,
                            const std::vector<int64_t>& explicit_paddings) {
  return First(s.AddOp("Conv2DBackpropFilter", {{s.AsOutput(input)}, {s.AsOutput(filter_sizes)}, {s.AsOutput(out_backprop)}},
                       ConvAttrs(strides, padding, explicit_paddings)));
}
Output MaxPool(const Scope& s, Input x, const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
               const std::string& padding) {
  return First(s.AddOp("MaxPool", {{s.AsOutput(x)}}, PoolAttrs(ksize, strides, padding)));
}
Output AvgPool(const Scope& s, Input x, const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
               const std::string& padding) {
  return First(s.AddOp("AvgPool", {{s.AsOutput(x)}}, PoolAttrs(ksize, strides, padding)));
}
Output MaxPoolGrad(const Scope& s, Input orig_input, Input orig_output, Input grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, const std::string& padding) {
  return First(s.AddOp("MaxPoolGrad", {{s.AsOutput(orig_input)}, {s.AsOutput(orig_output)}, {s.AsOutput(grad)}},
                       PoolAttrs(ksize, strides, padding)));
}
Output MaxPoolGradGrad(const Scope& s, Input orig_input, Input orig_output, Input grad,
                       const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                       const std::string& padding) {
  return First(s.AddOp("MaxPoolGradGrad", {{s.AsOutput(orig_input)}, {s.AsOutput(orig_output)}, {s.AsOutput(grad)}},
                       PoolAttrs(ksize, strides, padding)));
}
Output AvgPoolGrad(const Scope& s, Input orig_input_shape, Input grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, const std::string& padding) {
  return First(s.AddOp("AvgPoolGrad", {{s.AsOutput(orig_input_shape)}, {s.AsOutput(grad)}},
                       PoolAttrs(ksize, strides, padding)));
}

Output StringJoin(const Scope& s, const std::vector<Input>& inputs, const std::string& separator) {
  return First(s.AddOp("StringJoin", {AsOutputs(s, inputs)}, {{"separator", AttrString(separator)}}));
}
Output AsString(const Scope& s, Input x, const AsStringAttrs& a) {
  return First(s.AddOp("AsString", {{s.AsOutput(x)}},
                       {{"precision", AttrInt(a.precision)}, {"width", AttrInt(a.width)},
                        {"scientific", AttrBool(a.scientific)}, {"shortest", AttrBool(a.shortest)},
                        {"fill", AttrString(a.fill)}}));
}

FusedBatchNormOutputs FusedBatchNorm(const Scope& s, Input x, Input scale, Input offset, Input mean, Input variance,
                                     const FusedBatchNormAttrs& a) {
  Operation op = s.AddOp("FusedBatchNormV3",
                         {{s.AsOutput(x)}, {s.AsOutput(scale)}, {s.AsOutput(offset)}, {s.AsOutput(mean)}, {s.AsOutput(variance)}},
                         {{"epsilon", AttrFloat(a.epsilon)},
                          {"exponential_avg_factor", AttrFloat(a.exponential_avg_factor)},
                          {"is_training", AttrBool(a.is_training)}});
  if (!op.node()) return {};
  return {op.output(0), op.output(1), op.output(2), op.output(3), op.output(4), op.output(5)};
}

}  // namespace ops
}  // namespace actorflow
