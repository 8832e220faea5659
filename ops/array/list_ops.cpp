// ShapeN and IdentityN: Shape and Identity over lists of tensors, as
// TensorFlow graphs use them (gradients of Concat take ShapeN; IdentityN
// passes several tensors through one node).
#include <limits>

#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

AF_REGISTER_OP("ShapeN")
    .Input("input: N * T")
    .Output("output: N * out_type")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      for (int i = 0; i < c->num_outputs(); ++i) {
        const PartialTensorShape& in = c->input(i);
        c->set_output(i, PartialTensorShape(std::vector<int64_t>{in.unknown_rank() ? -1 : in.dims()}));
      }
      return Status::OK();
    })
    .Doc("The shapes of N tensors, as 1-D integer tensors.");

class ShapeNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const TensorShape& shape = ctx->input(i).shape();
      Tensor* out;
      AF_REQUIRES_OK(ctx, ctx->allocate_output(i, TensorShape{shape.dims()}, &out));
      for (int d = 0; d < shape.dims(); ++d) {
        if (BaseType(out->dtype()) == DT_INT64) {
          out->data<int64_t>()[d] = shape.dim_size(d);
          continue;
        }
        AF_REQUIRES(ctx, shape.dim_size(d) <= std::numeric_limits<int32_t>::max(),
                    errors::InvalidArgument("ShapeN output type is 32-bit but dim ", d, " of input ", i, " is ",
                                            shape.dim_size(d)));
        out->data<int32_t>()[d] = static_cast<int32_t>(shape.dim_size(d));
      }
    }
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ShapeN").Device(DEVICE_CPU), ShapeNOp);

AF_REGISTER_OP("IdentityN")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: list(type) >= 1")
    .SetShapeFn([](InferenceContext* c) {
      for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, c->input(i));
      return Status::OK();
    })
    .Doc("Its inputs, unchanged: output i is input i.");

class IdentityNOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < ctx->num_inputs(); ++i) ctx->set_output(i, ctx->input(i));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("IdentityN").Device(DEVICE_CPU), IdentityNOp);

}  // namespace
}  // namespace actorflow
