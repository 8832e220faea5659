// Neg, Abs, Sign, Exp, Log, Square, Sqrt, Rsqrt, Reciprocal, Tanh, Sigmoid:
// element-wise math that reuses the input's buffer when it is the input's last
// use. On integers Neg, Abs and Square wrap in two's complement.
#include <type_traits>

#include "actorflow/ops/math/cwise_ops.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

AF_UNARY_OP_DEF("Neg", "{float, double, int32, int64}", "-x; integers wrap (-INT_MIN == INT_MIN).");
AF_UNARY_OP_DEF("Abs", "{float, double, int32, int64}", "|x|; integers wrap (|INT_MIN| == INT_MIN).");
AF_UNARY_OP_DEF("Sign", "{float, double, int32, int64}", "-1, 0 or 1 as x is negative, zero or positive");
AF_UNARY_OP_DEF("Square", "{float, double, int32, int64}", "x * x; integers wrap in two's complement.");
AF_UNARY_OP_DEF("Exp", "{float, double}", "e ** x");
AF_UNARY_OP_DEF("Log", "{float, double}", "natural logarithm of x");
AF_UNARY_OP_DEF("Sqrt", "{float, double}", "square root of x");
AF_UNARY_OP_DEF("Rsqrt", "{float, double}", "1 / sqrt(x)");
AF_UNARY_OP_DEF("Reciprocal", "{float, double}", "1 / x");
AF_UNARY_OP_DEF("Tanh", "{float, double}", "hyperbolic tangent of x");
AF_UNARY_OP_DEF("Sigmoid", "{float, double}", "1 / (1 + exp(-x))");

// Signed integers wrap in two's complement: Neg(INT32_MIN) == INT32_MIN,
// Square(65536) == 0 in int32.
AF_WRAPPING_UNARY_FUNCTOR(NegF, TypeSet::kReal, -x);
AF_WRAPPING_UNARY_FUNCTOR(SquareF, TypeSet::kReal, x.square());
// |x|; Abs(INT32_MIN) == INT32_MIN (wrapping) where std::abs is undefined.
struct AbsF {
  static constexpr TypeSet kTypes = TypeSet::kReal;
  template <class O, class X>
  static void Run(O&& o, const X& x) {
    using T = typename std::decay_t<X>::Scalar;
    if constexpr (std::is_integral_v<T>) o = x.unaryExpr([](T v) { return WrappingAbs(v); });
    else o = x.abs();
  }
};
AF_UNARY_FUNCTOR(SignF, TypeSet::kReal, x.sign());
AF_UNARY_FUNCTOR(ExpF, TypeSet::kFloat, x.exp());
AF_UNARY_FUNCTOR(LogF, TypeSet::kFloat, x.log());
AF_UNARY_FUNCTOR(SqrtF, TypeSet::kFloat, x.sqrt());
AF_UNARY_FUNCTOR(RsqrtF, TypeSet::kFloat, x.rsqrt());
AF_UNARY_FUNCTOR(ReciprocalF, TypeSet::kFloat, x.inverse());
AF_UNARY_FUNCTOR(TanhF, TypeSet::kFloat, x.tanh());
AF_UNARY_FUNCTOR(SigmoidF, TypeSet::kFloat, x.logistic());

AF_REGISTER_KERNEL(KernelDefBuilder("Neg").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), UnaryOp<NegF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Abs").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), UnaryOp<AbsF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Sign").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), UnaryOp<SignF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Square").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), UnaryOp<SquareF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Exp").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<ExpF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Log").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<LogF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Sqrt").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<SqrtF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Rsqrt").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<RsqrtF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Reciprocal").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   UnaryOp<ReciprocalF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Tanh").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<TanhF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Sigmoid").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<SigmoidF>);

}  // namespace
}  // namespace actorflow
