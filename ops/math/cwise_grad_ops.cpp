// SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad, ReciprocalGrad: the backprop of
// an element-wise function computed from its output y and the incoming
// gradient dy (TensorFlow's ops of these names). Gradient graphs use them
// instead of spelling the formulas out in several nodes.
#include "actorflow/ops/math/cwise_ops.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

#define AF_CWISE_GRAD_OP_DEF(NAME, DOC) \
  AF_REGISTER_OP(NAME)                  \
      .Input("y: T")                    \
      .Input("dy: T")                   \
      .Output("z: T")                   \
      .Attr("T: {float, double}")       \
      .SetShapeFn(shape_fns::Broadcasting)   \
      .Doc(DOC)

AF_CWISE_GRAD_OP_DEF("SigmoidGrad", "dy * y * (1 - y), where y = sigmoid(x): the gradient of sigmoid.");
AF_CWISE_GRAD_OP_DEF("TanhGrad", "dy * (1 - y * y), where y = tanh(x): the gradient of tanh.");
AF_CWISE_GRAD_OP_DEF("SqrtGrad", "dy * 0.5 / y, where y = sqrt(x): the gradient of sqrt.");
AF_CWISE_GRAD_OP_DEF("RsqrtGrad", "dy * -0.5 * y^3, where y = rsqrt(x): the gradient of rsqrt.");
AF_CWISE_GRAD_OP_DEF("ReciprocalGrad", "-dy * y * y, where y = 1 / x: the gradient of reciprocal.");

// BinaryOp functors of (y, dy).
#define AF_CWISE_GRAD_FUNCTOR(NAME, EXPR) AF_TYPED_BINARY_FUNCTOR(NAME, TypeSet::kFloat, y, dy, EXPR)

AF_CWISE_GRAD_FUNCTOR(SigmoidGradF, dy * y * (T(1) - y));
AF_CWISE_GRAD_FUNCTOR(TanhGradF, dy * (T(1) - y * y));
AF_CWISE_GRAD_FUNCTOR(SqrtGradF, dy * T(0.5) / y);
AF_CWISE_GRAD_FUNCTOR(RsqrtGradF, dy * T(-0.5) * y * y * y);
AF_CWISE_GRAD_FUNCTOR(ReciprocalGradF, -dy * y * y);

AF_REGISTER_KERNEL(KernelDefBuilder("SigmoidGrad").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   BinaryOp<SigmoidGradF>);
AF_REGISTER_KERNEL(KernelDefBuilder("TanhGrad").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   BinaryOp<TanhGradF>);
AF_REGISTER_KERNEL(KernelDefBuilder("SqrtGrad").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   BinaryOp<SqrtGradF>);
AF_REGISTER_KERNEL(KernelDefBuilder("RsqrtGrad").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   BinaryOp<RsqrtGradF>);
AF_REGISTER_KERNEL(KernelDefBuilder("ReciprocalGrad").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   BinaryOp<ReciprocalGradF>);

}  // namespace
}  // namespace actorflow
