// Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual (-> bool) and
// LogicalAnd, LogicalOr, LogicalNot on bool tensors, broadcasting.
#include "actorflow/ops/math/cwise_ops.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

#define AF_COMPARE_OP_DEF(NAME, TYPES)         \
  AF_REGISTER_OP(NAME)                         \
      .Input("x: T")                           \
      .Input("y: T")                           \
      .Output("z: bool")                       \
      .Attr("T: " TYPES)                       \
      .SetShapeFn(shape_fns::Broadcasting)

AF_COMPARE_OP_DEF("Equal", "{float, double, int32, int64, bool}").SetIsCommutative().Doc("x == y element-wise.");
AF_COMPARE_OP_DEF("NotEqual", "{float, double, int32, int64, bool}").SetIsCommutative().Doc("x != y element-wise.");
AF_COMPARE_OP_DEF("Less", "{float, double, int32, int64}").Doc("x < y element-wise.");
AF_COMPARE_OP_DEF("LessEqual", "{float, double, int32, int64}").Doc("x <= y element-wise.");
AF_COMPARE_OP_DEF("Greater", "{float, double, int32, int64}").Doc("x > y element-wise.");
AF_COMPARE_OP_DEF("GreaterEqual", "{float, double, int32, int64}").Doc("x >= y element-wise.");

AF_BINARY_FUNCTOR(EqualF, TypeSet::kReal, bool, x == y);
AF_BINARY_FUNCTOR(NotEqualF, TypeSet::kReal, bool, x != y);
AF_BINARY_FUNCTOR(LessF, TypeSet::kReal, bool, x < y);
AF_BINARY_FUNCTOR(LessEqualF, TypeSet::kReal, bool, x <= y);
AF_BINARY_FUNCTOR(GreaterF, TypeSet::kReal, bool, x > y);
AF_BINARY_FUNCTOR(GreaterEqualF, TypeSet::kReal, bool, x >= y);
AF_BINARY_FUNCTOR(BoolEqualF, TypeSet::kBool, bool, x == y);
AF_BINARY_FUNCTOR(BoolNotEqualF, TypeSet::kBool, bool, x != y);

AF_REGISTER_KERNEL(KernelDefBuilder("Equal").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<EqualF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Equal").Device(DEVICE_CPU).TypeConstraint<bool>("T"), BinaryOp<BoolEqualF>);
AF_REGISTER_KERNEL(KernelDefBuilder("NotEqual").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<NotEqualF>);
AF_REGISTER_KERNEL(KernelDefBuilder("NotEqual").Device(DEVICE_CPU).TypeConstraint<bool>("T"), BinaryOp<BoolNotEqualF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Less").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<LessF>);
AF_REGISTER_KERNEL(KernelDefBuilder("LessEqual").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<LessEqualF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Greater").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<GreaterF>);
AF_REGISTER_KERNEL(KernelDefBuilder("GreaterEqual").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()),
                   BinaryOp<GreaterEqualF>);

AF_REGISTER_OP("LogicalAnd").Input("x: bool").Input("y: bool").Output("z: bool").SetIsCommutative()
    .SetShapeFn(shape_fns::Broadcasting).Doc("x AND y element-wise.");
AF_REGISTER_OP("LogicalOr").Input("x: bool").Input("y: bool").Output("z: bool").SetIsCommutative()
    .SetShapeFn(shape_fns::Broadcasting).Doc("x OR y element-wise.");
AF_REGISTER_OP("LogicalNot").Input("x: bool").Output("y: bool").SetShapeFn(shape_fns::Unchanged)
    .Doc("NOT x element-wise.");

AF_BINARY_FUNCTOR(AndF, TypeSet::kBool, bool, x && y);
AF_BINARY_FUNCTOR(OrF, TypeSet::kBool, bool, x || y);
AF_UNARY_FUNCTOR(NotF, TypeSet::kBool, !x);
AF_REGISTER_KERNEL(KernelDefBuilder("LogicalAnd").Device(DEVICE_CPU), BinaryOp<AndF>);
AF_REGISTER_KERNEL(KernelDefBuilder("LogicalOr").Device(DEVICE_CPU), BinaryOp<OrF>);
AF_REGISTER_KERNEL(KernelDefBuilder("LogicalNot").Device(DEVICE_CPU), UnaryOp<NotF>);

}  // namespace
}  // namespace actorflow
