// NoOp (a node that only orders others through control edges) and Assert.
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

AF_REGISTER_OP("NoOp").SetShapeFn(shape_fns::Unknown).Doc("Does nothing; useful as a target with control inputs.");

class NoOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
};
AF_REGISTER_KERNEL(KernelDefBuilder("NoOp").Device(DEVICE_CPU), NoOp);
AF_REGISTER_NO_GRADIENT("NoOp");

AF_REGISTER_OP("Assert")
    .Input("condition: bool")
    .Input("data: T")
    .Attr("T: list(type)")
    .Attr("summarize: int = 3")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown)
    .Doc("Fails the step with InvalidArgument when condition is false, printing data.");

class AssertOp : public OpKernel {
 public:
  explicit AssertOp(OpKernelConstruction* c) : OpKernel(c) { c->SetStatus(c->GetAttr("summarize", &summarize_)); }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    AF_REQUIRES(ctx, cond.dims() == 0 && cond.dtype() == DT_BOOL,
                errors::InvalidArgument("In[0] (condition) must be a bool scalar, got shape ", cond.shape().DebugString()));
    if (cond.scalar<bool>()) return;
    std::string msg = "assertion failed: ";
    for (int i = 1; i < ctx->num_inputs(); ++i) {
      msg += (i > 1 ? " " : "");
      msg += "[" + ctx->input(i).SummarizeValue(summarize_) + "]";
    }
    ctx->SetStatus(errors::InvalidArgument(msg));
  }

 private:
  int64_t summarize_ = 3;
};
AF_REGISTER_KERNEL(KernelDefBuilder("Assert").Device(DEVICE_CPU), AssertOp);
AF_REGISTER_NO_GRADIENT("Assert");

}  // namespace
}  // namespace actorflow
