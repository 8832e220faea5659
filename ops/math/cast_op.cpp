// Cast between numeric and bool dtypes (C++ conversion; to bool is x != 0).
//
// Every conversion is defined: floating point to an integer type truncates
// toward zero and saturates (NaN -> 0, +inf or too large -> the type's max,
// -inf or too small -> its min), where C++ leaves out-of-range values
// undefined; integer to a narrower integer type wraps (keeps the low bits);
// double to float rounds (out of range: +-inf).
#include <cmath>
#include <limits>
#include <type_traits>

#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

AF_REGISTER_OP("Cast")
    .Input("x: SrcT")
    .Output("y: DstT")
    .Attr("SrcT: type")
    .Attr("DstT: type")
    .Attr("Truncate: bool = false")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("Converts x to DstT element-wise. Floating point to integers truncates toward zero and saturates: NaN -> 0, "
         "+inf or too large -> max, -inf or too small -> min. Integers to narrower integers wrap.");

// static_cast<D>(v) for a floating-point v, saturated into D's range.
template <class D, class S>
D SaturatingCast(S v) {
  if (std::isnan(v)) return D(0);
  // lowest() is 0 or -2^digits and max() + 1 is 2^digits: both exact in S.
  constexpr S kLow = static_cast<S>(std::numeric_limits<D>::lowest());
  constexpr S kHigh = S(2) * static_cast<S>(std::numeric_limits<D>::max() / 2 + 1);
  if (v <= kLow) return std::numeric_limits<D>::lowest();
  if (v >= kHigh) return std::numeric_limits<D>::max();
  return static_cast<D>(v);
}

class CastOp : public OpKernel {
 public:
  explicit CastOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    c->SetStatus(c->GetAttr("SrcT", &src_));
    c->SetStatus(c->GetAttr("DstT", &dst_));
    if (src_ == DT_STRING || dst_ == DT_STRING)
      c->SetStatus(errors::Unimplemented("Cast from ", DataTypeString(src_), " to ", DataTypeString(dst_),
                                         " is not supported"));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    if (src_ == dst_) {
      ctx->set_output(0, x);
      return;
    }
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    const int64_t n = x.NumElements();
    bool ok = true;
    AF_SWITCH_NUMBER(src_, ok = ok && src_ == DT_BOOL, CastFrom<T>(x, out, n, &ok));
    if (src_ == DT_BOOL) CastFrom<bool>(x, out, n, &ok);
    AF_REQUIRES(ctx, ok, errors::Unimplemented("Cast from ", DataTypeString(src_), " to ", DataTypeString(dst_)));
  }

 private:
  template <class S>
  void CastFrom(const Tensor& x, Tensor* out, int64_t n, bool* ok) const {
    const S* in = x.data<S>();
    auto run = [&](auto* o) {
      using D = std::remove_pointer_t<decltype(o)>;
      if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D> && !std::is_same_v<D, bool>) {
        for (int64_t i = 0; i < n; ++i) o[i] = SaturatingCast<D>(in[i]);
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<D>(in[i]);
      }
    };
    switch (dst_) {
      case DT_FLOAT: run(out->data<float>()); break;
      case DT_DOUBLE: run(out->data<double>()); break;
      case DT_INT32: run(out->data<int32_t>()); break;
      case DT_INT64: run(out->data<int64_t>()); break;
      case DT_UINT8: run(out->data<uint8_t>()); break;
      case DT_INT16: run(out->data<int16_t>()); break;
      case DT_INT8: run(out->data<int8_t>()); break;
      case DT_UINT16: run(out->data<uint16_t>()); break;
      case DT_UINT32: run(out->data<uint32_t>()); break;
      case DT_UINT64: run(out->data<uint64_t>()); break;
      case DT_BOOL: run(out->data<bool>()); break;
      default: *ok = false;
    }
  }

  DataType src_ = DT_INVALID, dst_ = DT_INVALID;
};
AF_REGISTER_KERNEL(KernelDefBuilder("Cast").Device(DEVICE_CPU), CastOp);

}  // namespace
}  // namespace actorflow
