// Add, AddV2, Sub, Mul, RealDiv, Maximum, Minimum, Pow: numpy-broadcasting
// binary arithmetic.
#include "ops/math/cwise_ops.hpp"
#include "ops/op_registry.hpp"
#include "ops/shape_inference.hpp"

namespace actorflow {
namespace {

#define AF_BINARY_OP_DEF(NAME, TYPES)          \
  AF_REGISTER_OP(NAME)                         \
      .Input("x: T")                           \
      .Input("y: T")                           \
      .Output("z: T")                          \
      .Attr("T: " TYPES)                       \
      .SetShapeFn(shape_fns::Broadcasting)

#define AF_REAL "{float, double, int32, int64}"
#define AF_FLOAT "{float, double}"

AF_BINARY_OP_DEF("Add", "{float, double, int32, int64, string}").Doc("x + y, broadcasting.");
AF_BINARY_OP_DEF("AddV2", AF_REAL).SetIsCommutative().Doc("x + y, broadcasting.");
AF_BINARY_OP_DEF("Sub", AF_REAL).Doc("x - y, broadcasting.");
AF_BINARY_OP_DEF("Mul", AF_REAL).SetIsCommutative().Doc("x * y, broadcasting.");
AF_BINARY_OP_DEF("RealDiv", AF_FLOAT).Doc("x / y for real x and y, broadcasting.");
AF_BINARY_OP_DEF("Maximum", AF_REAL).SetIsCommutative().Doc("max(x, y), broadcasting.");
AF_BINARY_OP_DEF("Minimum", AF_REAL).SetIsCommutative().Doc("min(x, y), broadcasting.");
AF_BINARY_OP_DEF("Pow", AF_FLOAT).Doc("x ** y, broadcasting.");

AF_BINARY_FUNCTOR(AddF, TypeSet::kReal, T, x + y);
AF_BINARY_FUNCTOR(SubF, TypeSet::kReal, T, x - y);
AF_BINARY_FUNCTOR(MulF, TypeSet::kReal, T, x * y);
AF_BINARY_FUNCTOR(DivF, TypeSet::kFloat, T, x / y);
AF_BINARY_FUNCTOR(MaxF, TypeSet::kReal, T, x.max(y));
AF_BINARY_FUNCTOR(MinF, TypeSet::kReal, T, x.min(y));
AF_BINARY_FUNCTOR(PowF, TypeSet::kFloat, T, Eigen::pow(x, y));

AF_REGISTER_KERNEL(KernelDefBuilder("Add").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<AddF>);
AF_REGISTER_KERNEL(KernelDefBuilder("AddV2").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<AddF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Sub").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<SubF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Mul").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<MulF>);
AF_REGISTER_KERNEL(KernelDefBuilder("RealDiv").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), BinaryOp<DivF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Maximum").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<MaxF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Minimum").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<MinF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Pow").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), BinaryOp<PowF>);

// Add on strings concatenates (TensorFlow's string Add), same shapes or a scalar.
class StringAddOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    BCast bc(a.shape(), b.shape());
    AF_REQUIRES(ctx, bc.valid(), bc.IncompatibleError(a.shape(), b.shape()));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, bc.output_shape(), &out));
    const auto* pa = a.data<std::string>();
    const auto* pb = b.data<std::string>();
    auto* po = out->data<std::string>();
    ForEachBroadcastRow(bc, [&](int64_t o, int64_t ao, int64_t as, int64_t bo, int64_t bs, int64_t len) {
      for (int64_t i = 0; i < len; ++i) po[o + i] = pa[ao + i * as] + pb[bo + i * bs];
    });
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Add").Device(DEVICE_CPU).TypeConstraint<std::string>("T"), StringAddOp);

}  // namespace
}  // namespace actorflow
