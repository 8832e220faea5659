// StringJoin and AsString, TensorFlow's string ops: inputs joined element by
// element with a separator (scalars broadcast), and numbers and bools
// formatted as strings with printf's rules, as TensorFlow formats them
// (precision, scientific or shortest notation, width and fill). Also
// ShardedFilename and ShardedFilespec, the names of a sharded checkpoint's
// files ("model-00001-of-00004", "model-?????-of-00004").
#include <cstdio>
#include <string>

#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

AF_REGISTER_OP("StringJoin")
    .Input("inputs: N * string")
    .Output("output: string")
    .Attr("N: int >= 1")
    .Attr("separator: string = ''")
    .SetShapeFn([](InferenceContext* c) {
      PartialTensorShape out = PartialTensorShape::Scalar();
      for (int i = 0; i < c->num_inputs(); ++i) {
        const PartialTensorShape& in = c->input(i);
        if (in.unknown_rank()) return (c->set_output(0, PartialTensorShape()), Status::OK());
        if (in.dims() > 0) out = in;
      }
      c->set_output(0, out);
      return Status::OK();
    })
    .Doc("inputs[0][i] + separator + inputs[1][i] + ...; scalar inputs join every element.");

class StringJoinOp : public OpKernel {
 public:
  explicit StringJoinOp(OpKernelConstruction* c) : OpKernel(c) { c->SetStatus(c->GetAttr("separator", &sep_)); }
  void Compute(OpKernelContext* ctx) override {
    const Tensor* shaped = nullptr;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& in = ctx->input(i);
      if (in.dims() == 0) continue;
      if (shaped == nullptr) shaped = &in;
      AF_REQUIRES(ctx, in.shape() == shaped->shape(),
                  errors::InvalidArgument("Input shapes do not match: ", shaped->shape().DebugString(), " vs. ",
                                          in.shape().DebugString()));
    }
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shaped ? shaped->shape() : TensorShape{}, &out));
    for (int64_t e = 0; e < out->NumElements(); ++e) {
      std::string& s = out->data<std::string>()[e];
      for (int i = 0; i < ctx->num_inputs(); ++i) {
        const Tensor& in = ctx->input(i);
        if (i > 0) s += sep_;
        s += in.data<std::string>()[in.dims() == 0 ? 0 : e];
      }
    }
  }

 private:
  std::string sep_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("StringJoin").Device(DEVICE_CPU), StringJoinOp);

AF_REGISTER_OP("AsString")
    .Input("input: T")
    .Output("output: string")
    .Attr("T: {float, double, int8, int16, int32, int64, uint8, bool, string}")
    .Attr("precision: int = -1")
    .Attr("scientific: bool = false")
    .Attr("shortest: bool = false")
    .Attr("width: int = -1")
    .Attr("fill: string = ''")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Each element formatted as a string (printf's %f, %e or %g for floats, %d for integers).");

class AsStringOp : public OpKernel {
 public:
  explicit AsStringOp(OpKernelConstruction* c) : OpKernel(c) {
    int64_t precision = -1, width = -1;
    bool scientific = false, shortest = false;
    std::string fill;
    c->SetStatus(c->GetAttr("precision", &precision));
    c->SetStatus(c->GetAttr("scientific", &scientific));
    c->SetStatus(c->GetAttr("shortest", &shortest));
    c->SetStatus(c->GetAttr("width", &width));
    c->SetStatus(c->GetAttr("fill", &fill));
    const DataType dtype = input_type(0);
    const bool floating = dtype == DT_FLOAT || dtype == DT_DOUBLE;
    if (scientific && shortest) c->SetStatus(errors::InvalidArgument("Cannot select both scientific and shortest notation"));
    if (shortest && precision != -1) c->SetStatus(errors::InvalidArgument("Cannot specify both precision and shortest"));
    if (!floating && (scientific || shortest || precision != -1))
      c->SetStatus(errors::InvalidArgument("precision, scientific and shortest apply to floating-point inputs only"));
    if (fill.size() > 1) c->SetStatus(errors::InvalidArgument("Fill string must be one or fewer characters"));
    format_ = "%";
    if (!fill.empty()) {
      if (fill != " " && fill != "+" && fill != "-" && fill != "0" && fill != "#")
        c->SetStatus(errors::InvalidArgument("Fill argument not supported: \"", fill, "\""));
      else format_ += fill;
    }
    if (width > -1) format_ += std::to_string(width);
    if (precision > -1) format_ += "." + std::to_string(precision);
    if (floating) format_ += shortest ? "g" : scientific ? "e" : "f";
    else if (dtype == DT_STRING || dtype == DT_BOOL) format_ += "s";
    else format_ += "lld";
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    for (int64_t i = 0; i < in.NumElements(); ++i) {
      std::string& s = out->data<std::string>()[i];
      switch (in.dtype()) {
        case DT_FLOAT: s = Format(static_cast<double>(in.data<float>()[i])); break;
        case DT_DOUBLE: s = Format(in.data<double>()[i]); break;
        case DT_BOOL: s = Format(in.data<bool>()[i] ? "true" : "false"); break;
        case DT_STRING: s = Format(in.data<std::string>()[i].c_str()); break;
        case DT_INT8: s = Format(static_cast<long long>(in.data<int8_t>()[i])); break;
        case DT_INT16: s = Format(static_cast<long long>(in.data<int16_t>()[i])); break;
        case DT_INT32: s = Format(static_cast<long long>(in.data<int32_t>()[i])); break;
        case DT_INT64: s = Format(static_cast<long long>(in.data<int64_t>()[i])); break;
        case DT_UINT8: s = Format(static_cast<long long>(in.data<uint8_t>()[i])); break;
        default: ctx->SetStatus(errors::Unimplemented("AsString of ", DataTypeString(in.dtype()))); return;
      }
    }
  }

 private:
  template <class V>
  std::string Format(V v) const {
    const int n = std::snprintf(nullptr, 0, format_.c_str(), v);
    std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
    if (n > 0) std::snprintf(&s[0], s.size() + 1, format_.c_str(), v);
    return s;
  }
  std::string format_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("AsString").Device(DEVICE_CPU), AsStringOp);

AF_REGISTER_OP("ShardedFilename")
    .Input("basename: string")
    .Input("shard: int32")
    .Input("num_shards: int32")
    .Output("filename: string")
    .SetShapeFn(shape_fns::Scalar)
    .Doc("basename-SSSSS-of-NNNNN, the name of one shard's file.");
AF_REGISTER_OP("ShardedFilespec")
    .Input("basename: string")
    .Input("num_shards: int32")
    .Output("filename: string")
    .SetShapeFn(shape_fns::Scalar)
    .Doc("basename-?????-of-NNNNN, the pattern of every shard's file.");

class ShardedFilenameOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const bool spec = ctx->num_inputs() == 2;
    for (int i = 0; i < ctx->num_inputs(); ++i)
      AF_REQUIRES(ctx, ctx->input(i).NumElements() == 1,
                  errors::InvalidArgument(type_string(), " takes scalars, got input ", i, " of shape ",
                                          ctx->input(i).shape().DebugString()));
    const std::string& base = ctx->input(0).data<std::string>()[0];
    const int32_t shards = ctx->input(spec ? 1 : 2).data<int32_t>()[0];
    char suffix[64];
    if (spec) {
      std::snprintf(suffix, sizeof(suffix), "-?????-of-%05d", shards);
    } else {
      const int32_t shard = ctx->input(1).data<int32_t>()[0];
      AF_REQUIRES(ctx, shard >= 0 && shard < shards,
                  errors::InvalidArgument("shard ", shard, " is not in [0, ", shards, ")"));
      std::snprintf(suffix, sizeof(suffix), "-%05d-of-%05d", shard, shards);
    }
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{}, &out));
    out->data<std::string>()[0] = base + suffix;
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ShardedFilename").Device(DEVICE_CPU), ShardedFilenameOp);
AF_REGISTER_KERNEL(KernelDefBuilder("ShardedFilespec").Device(DEVICE_CPU), ShardedFilenameOp);

}  // namespace
}  // namespace actorflow
