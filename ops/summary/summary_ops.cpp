// ScalarSummary, HistogramSummary, MergeSummary and TensorSummaryV2,
// TensorFlow's summary ops: each outputs a scalar string holding a
// serialized Summary (core/proto/summary.proto) that an events file carries
// to TensorBoard (core/io/events_writer.hpp), with TensorFlow's checks and
// messages: tags and values of one shape, no NaN or infinity in a histogram,
// no tag twice in a merge.
#include <cmath>
#include <set>
#include <string>

#include "actorflow/core/proto/summary.pb.h"
#include "actorflow/core/tensor_proto.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"
#include "actorflow/ops/summary/histogram.hpp"

namespace actorflow {
namespace {

AF_REGISTER_OP("ScalarSummary")
    .Input("tags: string")
    .Input("values: T")
    .Output("summary: string")
    .Attr("T: {float, double, int32, int64, uint8, int8, int16, uint16, uint32, uint64}")
    .SetShapeFn(shape_fns::Scalar)
    .Doc("A Summary with one simple_value per element of values, tagged by the element of tags at its place.");
AF_REGISTER_OP("HistogramSummary")
    .Input("tag: string")
    .Input("values: T")
    .Output("summary: string")
    .Attr("T: {float, double, int32, int64, uint8, int8, int16, uint16, uint32, uint64} = DT_FLOAT")
    .SetShapeFn(shape_fns::Scalar)
    .Doc("A Summary with the histogram of values under tag.");
AF_REGISTER_OP("MergeSummary")
    .Input("inputs: N * string")
    .Output("summary: string")
    .Attr("N: int >= 1")
    .SetShapeFn(shape_fns::Scalar)
    .Doc("The values of several serialized Summaries in one; a tag may appear once.");
AF_REGISTER_OP("TensorSummaryV2")
    .Input("tag: string")
    .Input("tensor: T")
    .Input("serialized_summary_metadata: string")
    .Output("summary: string")
    .Attr("T: type")
    .SetShapeFn(shape_fns::Scalar)
    .Doc("A Summary holding the tensor under tag, with the given SummaryMetadata (TensorBoard's plugins).");

// The elements of a numeric tensor as doubles.
bool AsDoubles(const Tensor& t, std::vector<double>* out) {
  out->resize(static_cast<size_t>(t.NumElements()));
  bool ok = true;
  AF_SWITCH_NUMBER(t.dtype(), ok = false,
                   for (int64_t i = 0; i < t.NumElements(); ++i)(*out)[i] = static_cast<double>(t.data<T>()[i]));
  return ok;
}

void Emit(OpKernelContext* ctx, const proto::Summary& summary) {
  Tensor* out;
  AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{}, &out));
  if (!summary.SerializeToString(&out->data<std::string>()[0]))
    ctx->SetStatus(errors::Internal("cannot serialize the summary of node '", ctx->op_kernel().name(), "'"));
}

class ScalarSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& tags = ctx->input(0);
    const Tensor& values = ctx->input(1);
    if (!(tags.shape() == values.shape())) {
      std::string which;
      if (tags.NumElements() == 1) which = " (tag '" + tags.data<std::string>()[0] + "')";
      ctx->SetStatus(errors::InvalidArgument("tags and values not the same shape: ", tags.shape().DebugString(),
                                             " != ", values.shape().DebugString(), which));
      return;
    }
    std::vector<double> v;
    AF_REQUIRES(ctx, AsDoubles(values, &v),
                errors::Unimplemented("ScalarSummary of ", DataTypeString(values.dtype())));
    proto::Summary s;
    for (int64_t i = 0; i < tags.NumElements(); ++i) {
      proto::Summary::Value* value = s.add_value();
      value->set_tag(tags.data<std::string>()[i]);
      value->set_simple_value(static_cast<float>(v[i]));
    }
    Emit(ctx, s);
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ScalarSummary").Device(DEVICE_CPU), ScalarSummaryOp);

class HistogramSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& tag = ctx->input(0);
    AF_REQUIRES(ctx, tag.dims() == 0, errors::InvalidArgument("tags must be scalar"));
    std::vector<double> v;
    AF_REQUIRES(ctx, AsDoubles(ctx->input(1), &v),
                errors::Unimplemented("HistogramSummary of ", DataTypeString(ctx->input(1).dtype())));
    Histogram histogram;
    for (double x : v) {
      AF_REQUIRES(ctx, !std::isnan(x), errors::InvalidArgument("Nan in summary histogram for: ", name()));
      AF_REQUIRES(ctx, !std::isinf(x), errors::InvalidArgument("Infinity in summary histogram for: ", name()));
      histogram.Add(x);
    }
    proto::Summary s;
    proto::Summary::Value* value = s.add_value();
    value->set_tag(tag.data<std::string>()[0]);
    histogram.EncodeToProto(value->mutable_histo());
    Emit(ctx, s);
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("HistogramSummary").Device(DEVICE_CPU), HistogramSummaryOp);

class MergeSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    proto::Summary merged;
    std::set<std::string> tags;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& in = ctx->input(i);
      for (int64_t j = 0; j < in.NumElements(); ++j) {
        proto::Summary s;
        AF_REQUIRES(ctx, s.ParseFromString(in.data<std::string>()[j]),
                    errors::InvalidArgument("Could not parse one of the summary inputs"));
        for (const proto::Summary::Value& value : s.value()) {
          AF_REQUIRES(ctx, value.tag().empty() || tags.insert(value.tag()).second,
                      errors::InvalidArgument("Duplicate tag ", value.tag(), " found in summary inputs"));
          *merged.add_value() = value;
        }
      }
    }
    Emit(ctx, merged);
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("MergeSummary").Device(DEVICE_CPU), MergeSummaryOp);

class TensorSummaryV2Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& tag = ctx->input(0);
    const Tensor& metadata = ctx->input(2);
    AF_REQUIRES(ctx, tag.dims() == 0, errors::InvalidArgument("tag must be scalar"));
    AF_REQUIRES(ctx, metadata.dims() == 0, errors::InvalidArgument("serialized_summary_metadata must be scalar"));
    proto::Summary s;
    proto::Summary::Value* value = s.add_value();
    value->set_tag(tag.data<std::string>()[0]);
    AF_REQUIRES(ctx, value->mutable_metadata()->ParseFromString(metadata.data<std::string>()[0]),
                errors::InvalidArgument("serialized_summary_metadata is not a SummaryMetadata"));
    TensorToProto(ctx->input(1), value->mutable_tensor());
    Emit(ctx, s);
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("TensorSummaryV2").Device(DEVICE_CPU), TensorSummaryV2Op);

}  // namespace
}  // namespace actorflow
