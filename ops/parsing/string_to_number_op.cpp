// StringToNumber: each string of `string_tensor` parsed as a number of
// out_type (float, double, int32 or int64; ops/parsing/number_parsing.hpp),
// with TensorFlow's definition. Text that is no such number is
// InvalidArgument quoting it.
#include <string>

#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/parsing/number_parsing.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

AF_REGISTER_OP("StringToNumber")
    .Input("string_tensor: string")
    .Output("output: out_type")
    .Attr("out_type: {float, double, int32, int64} = DT_FLOAT")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Converts each string to a number.");
AF_REGISTER_NO_GRADIENT("StringToNumber");

class StringToNumberOp : public OpKernel {
 public:
  explicit StringToNumberOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    c->SetStatus(c->GetAttr("out_type", &out_type_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    const std::string* strings = in.data<std::string>();
    for (int64_t i = 0; i < in.NumElements(); ++i) {
      bool ok = false;
      switch (out_type_) {
        case DT_FLOAT: ok = parsing::ParseFloat(strings[i], &out->data<float>()[i]); break;
        case DT_DOUBLE: ok = parsing::ParseDouble(strings[i], &out->data<double>()[i]); break;
        case DT_INT32: ok = parsing::ParseInt32(strings[i], &out->data<int32_t>()[i]); break;
        case DT_INT64: ok = parsing::ParseInt64(strings[i], &out->data<int64_t>()[i]); break;
        default: break;
      }
      AF_REQUIRES(ctx, ok,
                  errors::InvalidArgument("StringToNumberOp could not correctly convert string: '", strings[i],
                                          "' (element ", i, ", to ", DataTypeString(out_type_), ")"));
    }
  }

 private:
  DataType out_type_ = DT_FLOAT;
};
AF_REGISTER_KERNEL(KernelDefBuilder("StringToNumber")
                       .Device(DEVICE_CPU)
                       .TypeConstraint("out_type", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}),
                   StringToNumberOp);

}  // namespace
}  // namespace actorflow
