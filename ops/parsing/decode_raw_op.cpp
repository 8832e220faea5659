// DecodeRaw: reinterprets the bytes of each string of `bytes` as a vector of
// out_type, little- or big-endian (little_endian; one-byte types are copied
// as they are). Output shape: bytes' shape + [length / sizeof(out_type)].
// TensorFlow's definition and checks (decode_raw_op.cc): all strings must be
// of one length, a multiple of the element size (InvalidArgument otherwise);
// empty strings, or no strings, give a last dimension of 0. The op allows
// TensorFlow's out_types; kernels exist for the real and integer ones and bool
// (any non-zero byte is true).
#include <algorithm>
#include <cstring>
#include <string>

#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

Status DecodeRawShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  if (in.unknown_rank()) {
    c->set_output(0, PartialTensorShape::Unknown());
    return Status::OK();
  }
  std::vector<int64_t> dims = in.dim_sizes();
  dims.push_back(-1);  // the length of the strings: known when the graph runs
  c->set_output(0, PartialTensorShape(std::move(dims)));
  return Status::OK();
}

AF_REGISTER_OP("DecodeRaw")
    .Input("bytes: string")
    .Output("output: out_type")
    .Attr("out_type: {half, float, double, int32, uint16, uint8, int16, int8, int64, complex64, complex128, bool, "
          "bfloat16}")
    .Attr("little_endian: bool = true")
    .SetShapeFn(DecodeRawShape)
    .Doc("Reinterprets the bytes of strings as vectors of numbers.");
AF_REGISTER_NO_GRADIENT("DecodeRaw");

bool HostIsLittleEndian() {
  const uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

class DecodeRawOp : public OpKernel {
 public:
  explicit DecodeRawOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    c->SetStatus(c->GetAttr("out_type", &out_type_));
    c->SetStatus(c->GetAttr("little_endian", &little_endian_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const std::string* strings = in.data<std::string>();
    const int64_t n = in.NumElements();
    const size_t size = n > 0 ? strings[0].size() : 0;
    for (int64_t i = 1; i < n; ++i)
      AF_REQUIRES(ctx, strings[i].size() == size,
                  errors::InvalidArgument("DecodeRaw requires input strings to all be the same size, but element ", i,
                                          " has size ", strings[i].size(), " != ", size));
    const size_t elem = DataTypeSize(out_type_);
    AF_REQUIRES(ctx, size % elem == 0,
                errors::InvalidArgument("Input to DecodeRaw has length ", size, " that is not a multiple of ", elem,
                                        ", the size of ", DataTypeString(out_type_)));
    TensorShape shape = in.shape();
    shape.AddDim(static_cast<int64_t>(size / elem));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    auto* dst = static_cast<char*>(out->raw_data());
    const bool swap = elem > 1 && little_endian_ != HostIsLittleEndian();
    for (int64_t i = 0; i < n; ++i, dst += size) {
      const char* src = strings[i].data();
      if (!swap) {
        std::memcpy(dst, src, size);
      } else {
        for (size_t e = 0; e < size; e += elem) std::reverse_copy(src + e, src + e + elem, dst + e);
      }
    }
    if (out_type_ == DT_BOOL) {  // a bool holds 0 or 1 only
      bool* b = out->data<bool>();
      const auto* bytes = reinterpret_cast<const unsigned char*>(out->raw_data());
      for (int64_t i = 0; i < out->NumElements(); ++i) b[i] = bytes[i] != 0;
    }
  }

 private:
  DataType out_type_ = DT_INVALID;
  bool little_endian_ = true;
};
AF_REGISTER_KERNEL(KernelDefBuilder("DecodeRaw")
                       .Device(DEVICE_CPU)
                       .TypeConstraint("out_type", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT16, DT_UINT8, DT_INT16,
                                                    DT_INT8, DT_INT64, DT_BOOL}),
                   DecodeRawOp);

}  // namespace
}  // namespace actorflow
