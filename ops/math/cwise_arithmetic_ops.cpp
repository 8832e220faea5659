// Add, AddV2, Sub, Mul, RealDiv, Div, FloorDiv, FloorMod, Maximum, Minimum,
// Pow: numpy-broadcasting binary arithmetic.
//
// Integer semantics are defined on every input: Add, Sub and Mul wrap in two's
// complement; Div, FloorDiv and FloorMod refuse a zero divisor (InvalidArgument)
// and wrap lowest() / -1 to lowest() (remainder 0).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "actorflow/ops/math/cwise_arithmetic.hpp"
#include "actorflow/ops/math/cwise_ops.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

#define AF_REAL "{float, double, int32, int64}"
#define AF_FLOAT "{float, double}"

AF_BINARY_OP_DEF("Add", "{float, double, int32, int64, string}").Doc("x + y, broadcasting.");
AF_BINARY_OP_DEF("AddV2", AF_REAL).SetIsCommutative().Doc("x + y, broadcasting.");
AF_BINARY_OP_DEF("Sub", AF_REAL).Doc("x - y, broadcasting.");
AF_BINARY_OP_DEF("Mul", AF_REAL).SetIsCommutative().Doc("x * y, broadcasting.");
AF_BINARY_OP_DEF("RealDiv", AF_FLOAT).Doc("x / y for real x and y, broadcasting.");
AF_BINARY_OP_DEF("Div", AF_REAL)
    .Doc("x / y, broadcasting; integer division truncates toward zero, refuses a zero divisor (InvalidArgument) and "
         "wraps INT_MIN / -1 to INT_MIN.");
AF_BINARY_OP_DEF("FloorDiv", AF_REAL).Doc("floor(x / y), broadcasting (Python's //).");
AF_BINARY_OP_DEF("FloorMod", AF_REAL).Doc("x - floor(x / y) * y, broadcasting: the remainder has y's sign (Python's %).");
AF_BINARY_OP_DEF("Maximum", AF_REAL).SetIsCommutative().Doc("max(x, y), broadcasting.");
AF_BINARY_OP_DEF("Minimum", AF_REAL).SetIsCommutative().Doc("min(x, y), broadcasting.");
AF_BINARY_OP_DEF("Pow", AF_FLOAT).Doc("x ** y, broadcasting.");

using namespace cwise;

/// A BinaryOp whose integer divisor must not contain a zero.
template <class F>
class IntegerDivisionOp : public BinaryOp<F> {
 public:
  using BinaryOp<F>::BinaryOp;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& y = ctx->input(1);
    bool has_zero = false;
    if (ctx->input(0).NumElements() == 0) {  // nothing is divided
    } else if (y.dtype() == DT_INT32) has_zero = HasZero(y.data<int32_t>(), y.NumElements());
    else if (y.dtype() == DT_INT64) has_zero = HasZero(y.data<int64_t>(), y.NumElements());
    AF_REQUIRES(ctx, !has_zero, errors::InvalidArgument("Integer division by zero in ", this->type_string()));
    BinaryOp<F>::Compute(ctx);
  }

 private:
  template <class T>
  static bool HasZero(const T* p, int64_t n) {
    return std::find(p, p + n, T(0)) != p + n;
  }
};

const std::vector<DataType> kIntTypes = {DT_INT32, DT_INT64};

AF_REGISTER_KERNEL(KernelDefBuilder("Add").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<AddF>);
AF_REGISTER_KERNEL(KernelDefBuilder("AddV2").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<AddF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Sub").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<SubF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Mul").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BinaryOp<MulF>);
AF_REGISTER_KERNEL(KernelDefBuilder("RealDiv").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), BinaryOp<DivF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Div").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), BinaryOp<DivF>);
AF_REGISTER_KERNEL(KernelDefBuilder("Div").Device(DEVICE_CPU).TypeConstraint("T", kIntTypes), IntegerDivisionOp<IntDivF>);
AF_REGISTER_KERNEL(KernelDefBuilder("FloorDiv").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   BinaryOp<FloorDivF>);
AF_REGISTER_KERNEL(KernelDefBuilder("FloorDiv").Device(DEVICE_CPU).TypeConstraint("T", kIntTypes),
                   IntegerDivisionOp<FloorDivF>);
AF_REGISTER_KERNEL(KernelDefBuilder("FloorMod").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   BinaryOp<FloorModF>);
AF_REGISTER_KERNEL(KernelDefBuilder("FloorMod").Device(DEVICE_CPU).TypeConstraint("T", kIntTypes),
                   IntegerDivisionOp<FloorModF>);
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
