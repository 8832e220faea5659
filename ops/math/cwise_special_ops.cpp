// Log1p, Expm1, Floor, Ceil, Round, Sin, Cos, Erf, SquaredDifference and
// DivNoNan: the element-wise functions real TensorFlow graphs use beyond the
// basic ones (ops/math/cwise_unary_ops.cpp, cwise_arithmetic_ops.cpp), with
// TensorFlow's op definitions. Round rounds half to even, as TensorFlow
// does (np.round); on integers it is the identity. DivNoNan is 0 wherever
// the divisor is 0, even for 0/0 and inf/0.
#include <cmath>
#include <type_traits>

#include "actorflow/ops/math/cwise_ops.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

AF_UNARY_OP_DEF("Log1p", "{float, double}", "log(1 + x), accurate for small x.");
AF_UNARY_OP_DEF("Expm1", "{float, double}", "exp(x) - 1, accurate for small x.");
AF_UNARY_OP_DEF("Floor", "{float, double}", "The largest integer not greater than x.");
AF_UNARY_OP_DEF("Ceil", "{float, double}", "The smallest integer not less than x.");
AF_UNARY_OP_DEF("Round", "{float, double, int32, int64}",
                "x rounded to the nearest integer, half to even; integers are unchanged.");
AF_UNARY_OP_DEF("Sin", "{float, double}", "sin(x)");
AF_UNARY_OP_DEF("Cos", "{float, double}", "cos(x)");
AF_UNARY_OP_DEF("Erf", "{float, double}", "The Gauss error function of x.");

AF_UNARY_FUNCTOR(Log1pF, TypeSet::kFloat, x.log1p());
AF_UNARY_FUNCTOR(Expm1F, TypeSet::kFloat, x.expm1());
AF_UNARY_FUNCTOR(FloorF, TypeSet::kFloat, x.floor());
AF_UNARY_FUNCTOR(CeilF, TypeSet::kFloat, x.ceil());
AF_UNARY_FUNCTOR(SinF, TypeSet::kFloat, x.sin());
AF_UNARY_FUNCTOR(CosF, TypeSet::kFloat, x.cos());
AF_UNARY_FUNCTOR(ErfF, TypeSet::kFloat, x.unaryExpr([](T v) { return std::erf(v); }));
struct RoundF {
  static constexpr TypeSet kTypes = TypeSet::kReal;
  template <class O, class X>
  static void Run(O&& o, const X& x) {
    using T = typename std::decay_t<X>::Scalar;
    if constexpr (std::is_integral_v<T>) o = x;
    else o = x.unaryExpr([](T v) { return std::nearbyint(v); });  // the default mode: half to even
  }
};

AF_REGISTER_KERNEL(KernelDefBuilder("Log1p").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<Log1pF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Expm1").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<Expm1F>);
AF_REGISTER_KERNEL(KernelDefBuilder("Floor").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<FloorF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Ceil").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<CeilF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Round").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), UnaryOp<RoundF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Sin").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<SinF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Cos").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<CosF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Erf").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), UnaryOp<ErfF>);

AF_BINARY_OP_DEF("SquaredDifference", "{float, double, int32, int64}")
    .SetIsCommutative()
    .Doc("(x - y) * (x - y), broadcasting; integers wrap in two's complement.");
AF_BINARY_OP_DEF("DivNoNan", "{float, double}").Doc("x / y, broadcasting, and 0 wherever y is 0.");

AF_WRAPPING_BINARY_FUNCTOR(SquaredDifferenceF, TypeSet::kReal, (x - y).square());
AF_TYPED_BINARY_FUNCTOR(DivNoNanF, TypeSet::kFloat, x, y, (y == T(0)).select(T(0), x / y));

AF_REGISTER_KERNEL(KernelDefBuilder("SquaredDifference").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()),
                   BinaryOp<SquaredDifferenceF>);
AF_REGISTER_KERNEL(KernelDefBuilder("DivNoNan").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   BinaryOp<DivNoNanF>);

}  // namespace
}  // namespace actorflow
