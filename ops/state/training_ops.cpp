// The optimizers' update ops (TensorFlow's training_ops): each names its
// variables (ref inputs) and arguments, and the container actor applies the
// formula in place (ops/state/variable_updates.cpp). The output is the
// variable's reference, after the update.
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"
#include "actorflow/ops/state/variable_ops.hpp"

namespace actorflow {
namespace {

// Output shape: the variable's; every slot and the gradient must match it.
Status ApplyShape(InferenceContext* c, std::vector<int> same_as_var) {
  PartialTensorShape var = c->input(0);
  for (int i : same_as_var) {
    const PartialTensorShape& s = c->input(i);
    if (!var.unknown_rank() && !s.unknown_rank() && !var.IsCompatibleWith(s))
      return c->Error("input ", i, " has shape ", s.DebugString(), ", the variable ", var.DebugString());
    if (var.unknown_rank()) var = s;
  }
  c->set_output(0, var);
  return Status::OK();
}

AF_REGISTER_OP("ApplyGradientDescent")
    .Input("var: Ref(T)")
    .Input("alpha: T")
    .Input("delta: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {2}); })
    .Doc("var -= alpha * delta.");

AF_REGISTER_OP("ApplyMomentum")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Input("momentum: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {1, 3}); })
    .Doc("accum = accum * momentum + grad; var -= lr * accum (Nesterov: var -= lr * grad + lr * momentum * accum).");

AF_REGISTER_OP("ApplyAdam")
    .Input("var: Ref(T)")
    .Input("m: Ref(T)")
    .Input("v: Ref(T)")
    .Input("beta1_power: T")
    .Input("beta2_power: T")
    .Input("lr: T")
    .Input("beta1: T")
    .Input("beta2: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {1, 2, 9}); })
    .Doc("Adam: lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m, v moving averages; var -= lr_t * m / (sqrt(v) + eps).");

AF_REGISTER_OP("ApplyAdagrad")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {1, 3}); })
    .Doc("accum += grad^2; var -= lr * grad / sqrt(accum).");

AF_REGISTER_OP("ApplyRMSProp")
    .Input("var: Ref(T)")
    .Input("ms: Ref(T)")
    .Input("mom: Ref(T)")
    .Input("lr: T")
    .Input("rho: T")
    .Input("momentum: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {1, 2, 7}); })
    .Doc("ms = rho * ms + (1 - rho) * grad^2; mom = momentum * mom + lr * grad / sqrt(ms + eps); var -= mom.");

// Inputs: `num_vars` references, then the arguments in VarUpdateKind's order.
class ApplyOp : public VariableUpdateKernel {
 public:
  ApplyOp(OpKernelConstruction* c, VarUpdateKind kind, int num_vars)
      : VariableUpdateKernel(c), request_(UpdateRequestFromAttrs(c, kind, true)), num_vars_(num_vars) {}
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    VarUpdateRequest req = request_;
    req.args.reserve(static_cast<size_t>(ctx->num_inputs() - num_vars_));
    for (int i = num_vars_; i < ctx->num_inputs(); ++i) req.args.push_back(ctx->input(i));
    Status s = Start(ctx, num_vars_, std::move(req), done);
    if (!s.ok()) {
      ctx->SetStatus(s);
      done();
    }
  }

 private:
  const VarUpdateRequest request_;  // kind and attrs; handles and args per run
  int num_vars_;
};

#define AF_APPLY_KERNEL(OP, KIND, VARS)                                                 \
  struct OP##Kernel : ApplyOp {                                                         \
    explicit OP##Kernel(OpKernelConstruction* c) : ApplyOp(c, VarUpdateKind::KIND, VARS) {} \
  };                                                                                    \
  AF_REGISTER_KERNEL(KernelDefBuilder(#OP).Device(DEVICE_CPU).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE}), OP##Kernel)

AF_APPLY_KERNEL(ApplyGradientDescent, kGradientDescent, 1);
AF_APPLY_KERNEL(ApplyMomentum, kMomentum, 2);
AF_APPLY_KERNEL(ApplyAdam, kAdam, 3);
AF_APPLY_KERNEL(ApplyAdagrad, kAdagrad, 2);
AF_APPLY_KERNEL(ApplyRMSProp, kRMSProp, 3);

// State changes and random draws have no gradient.
AF_REGISTER_NO_GRADIENT("ApplyGradientDescent");
AF_REGISTER_NO_GRADIENT("ApplyMomentum");
AF_REGISTER_NO_GRADIENT("ApplyAdam");
AF_REGISTER_NO_GRADIENT("ApplyAdagrad");
AF_REGISTER_NO_GRADIENT("ApplyRMSProp");

}  // namespace
}  // namespace actorflow
