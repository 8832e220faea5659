// Elu, Selu, Softplus, Relu6, LeakyRelu and their backprop ops (EluGrad,
// SeluGrad, SoftplusGrad, Relu6Grad, LeakyReluGrad), with TensorFlow's op
// definitions and formulas (tensorflow/core/kernels/relu_op_functor.h,
// softplus_op.h). As in TensorFlow, EluGrad and SeluGrad take the forward
// op's outputs, the others its features.
#include <type_traits>

#include "actorflow/ops/math/cwise_ops.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

// SELU's constants (Klambauer et al., 2017), as TensorFlow writes them.
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;

#define AF_ACTIVATION_DEF(NAME, TYPES, DOC)                                                               \
  AF_REGISTER_OP(NAME).Input("features: T").Output("activations: T").Attr("T: " TYPES).SetShapeFn(       \
      shape_fns::Unchanged).Doc(DOC)
#define AF_ACTIVATION_GRAD_DEF(NAME, SECOND, TYPES, DOC)                                                  \
  AF_REGISTER_OP(NAME)                                                                                    \
      .Input("gradients: T")                                                                              \
      .Input(SECOND ": T")                                                                                \
      .Output("backprops: T")                                                                             \
      .Attr("T: " TYPES)                                                                                  \
      .SetShapeFn(shape_fns::Broadcasting)                                                                \
      .Doc(DOC)

AF_ACTIVATION_DEF("Elu", "{float, double}", "x < 0 ? exp(x) - 1 : x");
AF_ACTIVATION_DEF("Selu", "{float, double}", "scale * (x < 0 ? alpha * (exp(x) - 1) : x), scale ~ 1.0507, alpha ~ 1.6733");
AF_ACTIVATION_DEF("Softplus", "{float, double}", "log(exp(x) + 1), computed without overflow");
AF_ACTIVATION_DEF("Relu6", "{float, double, int32, int64}", "min(max(x, 0), 6)");
AF_ACTIVATION_GRAD_DEF("EluGrad", "outputs", "{float, double}",
                       "The gradient of Elu from its outputs y: gradients * (y < 0 ? y + 1 : 1).");
AF_ACTIVATION_GRAD_DEF("SeluGrad", "outputs", "{float, double}",
                       "The gradient of Selu from its outputs y: gradients * (y < 0 ? y + scale * alpha : scale).");
AF_ACTIVATION_GRAD_DEF("SoftplusGrad", "features", "{float, double}",
                       "The gradient of Softplus: gradients / (1 + exp(-features)).");
AF_ACTIVATION_GRAD_DEF("Relu6Grad", "features", "{float, double, int32, int64}",
                       "The gradient of Relu6: gradients where 0 < features < 6, else 0.");

AF_UNARY_FUNCTOR(EluF, TypeSet::kFloat, (x < T(0)).select(x.exp() - T(1), x));
AF_UNARY_FUNCTOR(SeluF, TypeSet::kFloat,
                 (x < T(0)).select(T(kSeluScale * kSeluAlpha) * (x.exp() - T(1)), T(kSeluScale) * x));
// max(x, 0) + log1p(exp(-|x|)): exp never overflows.
AF_UNARY_FUNCTOR(SoftplusF, TypeSet::kFloat, x.max(T(0)) + (-x.abs()).exp().log1p());
AF_UNARY_FUNCTOR(Relu6F, TypeSet::kReal, x.max(T(0)).min(T(6)));

// BinaryOp functors of (gradients g, outputs or features f).
#define AF_ACTIVATION_GRAD_FUNCTOR(NAME, TYPES, EXPR) AF_TYPED_BINARY_FUNCTOR(NAME, TYPES, g, f, EXPR)
AF_ACTIVATION_GRAD_FUNCTOR(EluGradF, TypeSet::kFloat, (f < T(0)).select(g * (f + T(1)), g));
AF_ACTIVATION_GRAD_FUNCTOR(SeluGradF, TypeSet::kFloat,
                           (f < T(0)).select(g * (f + T(kSeluScale * kSeluAlpha)), g * T(kSeluScale)));
AF_ACTIVATION_GRAD_FUNCTOR(SoftplusGradF, TypeSet::kFloat, g / ((-f).exp() + T(1)));
AF_ACTIVATION_GRAD_FUNCTOR(Relu6GradF, TypeSet::kReal, ((f > T(0)) && (f < T(6))).select(g, T(0)));

AF_REGISTER_KERNEL(KernelDefBuilder("Elu").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<EluF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Selu").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<SeluF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Softplus").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   UnaryOp<SoftplusF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Relu6").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), UnaryOp<Relu6F>);
AF_REGISTER_KERNEL(KernelDefBuilder("EluGrad").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   BinaryOp<EluGradF>);
AF_REGISTER_KERNEL(KernelDefBuilder("SeluGrad").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   BinaryOp<SeluGradF>);
AF_REGISTER_KERNEL(KernelDefBuilder("SoftplusGrad").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   BinaryOp<SoftplusGradF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Relu6Grad").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()),
                   BinaryOp<Relu6GradF>);

// LeakyRelu and LeakyReluGrad take their slope from an attr.
AF_REGISTER_OP("LeakyRelu")
    .Input("features: T")
    .Output("activations: T")
    .Attr("alpha: float = 0.2")
    .Attr("T: {float, double} = DT_FLOAT")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("features > 0 ? features : alpha * features");
AF_REGISTER_OP("LeakyReluGrad")
    .Input("gradients: T")
    .Input("features: T")
    .Output("backprops: T")
    .Attr("alpha: float = 0.2")
    .Attr("T: {float, double} = DT_FLOAT")
    .SetShapeFn(shape_fns::Broadcasting)
    .Doc("The gradient of LeakyRelu: features > 0 ? gradients : alpha * gradients.");

template <bool kGrad>
class LeakyReluOp : public OpKernel {
 public:
  explicit LeakyReluOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    c->SetStatus(c->GetAttr("alpha", &alpha_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(kGrad ? 1 : 0);
    if (kGrad)
      AF_REQUIRES(ctx, ctx->input(0).shape() == x.shape(),
                  errors::InvalidArgument("gradients and features must have the same shape: ",
                                          ctx->input(0).shape().DebugString(), " vs. ", x.shape().DebugString()));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &out));
    AF_SWITCH_FLOAT(x.dtype(), ctx->SetStatus(errors::Unimplemented(type_string(), " of ", DataTypeString(x.dtype()))),
                    Run<T>(ctx, out));
  }

 private:
  template <class T>
  void Run(OpKernelContext* ctx, Tensor* out) const {
    const T* g = ctx->input(0).data<T>();  // the gradients (kGrad) or the features
    const T* f = ctx->input(kGrad ? 1 : 0).data<T>();
    T* o = out->data<T>();
    const T alpha = static_cast<T>(alpha_);
    ctx->device()->compute_pool()->For(out->NumElements(), 4, [&](int64_t b, int64_t e) {
      using A = Eigen::Map<const ArrayX<T>>;
      A fs(f + b, e - b), gs(g + b, e - b);
      Eigen::Map<ArrayX<T>>(o + b, e - b) = (fs > T(0)).select(gs, gs * alpha);
    });
  }
  float alpha_ = 0.2f;
};
AF_REGISTER_KERNEL(KernelDefBuilder("LeakyRelu").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   LeakyReluOp<false>);
AF_REGISTER_KERNEL(KernelDefBuilder("LeakyReluGrad").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   LeakyReluOp<true>);

}  // namespace
}  // namespace actorflow
