// Cumsum, Cumprod: running sums and products along one axis, inclusive or
// exclusive (each element left out of its own result), forward or reversed.
//
// The input is seen as [outer, len, inner] around the axis; every (outer,
// inner) column is scanned along len, a contiguous run of columns at a time,
// so each step is an Eigen array operation on a row of the inner dims.
// Signed integers accumulate in their unsigned type: overflow wraps in two's
// complement (ops/math/integer_wrap.hpp).
#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/math/cwise_ops.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

Status ScanShape(InferenceContext* c) {
  const PartialTensorShape& axis = c->input(1);
  if (!axis.unknown_rank() && axis.dims() != 0) return c->Error("axis must be a scalar, not ", axis.DebugString());
  c->set_output(0, c->input(0));
  return Status::OK();
}

#define AF_SCAN_OP_DEF(NAME, DOC)                  \
  AF_REGISTER_OP(NAME)                             \
      .Input("x: T")                               \
      .Input("axis: Tidx")                         \
      .Output("out: T")                            \
      .Attr("exclusive: bool = false")             \
      .Attr("reverse: bool = false")               \
      .Attr("T: {float, double, int32, int64}")    \
      .Attr("Tidx: {int32, int64} = DT_INT32")     \
      .SetShapeFn(ScanShape)                       \
      .Doc(DOC)

AF_SCAN_OP_DEF("Cumsum", "Cumulative sum of x along axis: [a, b, c] -> [a, a + b, a + b + c].");
AF_SCAN_OP_DEF("Cumprod", "Cumulative product of x along axis: [a, b, c] -> [a, a * b, a * b * c].");

template <bool kProd>
class ScanOp : public OpKernel {
 public:
  explicit ScanOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    c->SetStatus(c->GetAttr("exclusive", &exclusive_));
    c->SetStatus(c->GetAttr("reverse", &reverse_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& axis_t = ctx->input(1);
    AF_REQUIRES(ctx, axis_t.dims() == 0,
                errors::InvalidArgument("ScanOp: axis must be a scalar, not ", axis_t.shape().DebugString()));
    AF_REQUIRES_OK(ctx, CheckIndexDtype(axis_t, "axis"));
    const int rank = x.dims();
    int64_t axis = TensorToInt64s(axis_t)[0];
    AF_REQUIRES(ctx, axis >= -rank && axis < rank,
                errors::InvalidArgument("ScanOp: Expected scan axis in the range [", -rank, ", ", rank, "), but got ",
                                        axis));
    if (axis < 0) axis += rank;
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    if (x.NumElements() == 0) return;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= x.dim_size(i);
    for (int i = static_cast<int>(axis) + 1; i < rank; ++i) inner *= x.dim_size(i);
    const int64_t len = x.dim_size(static_cast<int>(axis));
    AF_SWITCH_REAL(x.dtype(), ctx->SetStatus(detail::Unsupported(*this, x.dtype())),
                   Run<WrapT<T>>(ctx, AsWrapping(x.data<T>()), AsWrapping(out->data<T>()), outer, len, inner));
  }

 private:
  // T is the element type computed in: WrapT of the tensor's dtype.
  template <class T>
  void Run(OpKernelContext* ctx, const T* px, T* po, int64_t outer, int64_t len, int64_t inner) const {
    using In = Eigen::Map<const ArrayX<T>>;
    using Out = Eigen::Map<ArrayX<T>>;
    // Shards cover columns (o, i) in row-major order; each is cut at o's boundaries.
    ctx->device()->compute_pool()->For(outer * inner, len * detail::kCwiseCost, [&](int64_t s, int64_t e) {
      ArrayX<T> acc;
      while (s < e) {
        const int64_t o = s / inner, i0 = s % inner;
        const int64_t w = std::min(inner - i0, e - s);
        acc.setConstant(w, kProd ? T(1) : T(0));
        for (int64_t step = 0; step < len; ++step) {
          const int64_t j = reverse_ ? len - 1 - step : step;
          const int64_t off = (o * len + j) * inner + i0;
          Out dst(po + off, w);
          if (exclusive_) dst = acc;
          if (kProd) acc *= In(px + off, w);
          else acc += In(px + off, w);
          if (!exclusive_) dst = acc;
        }
        s += w;
      }
    });
  }

  bool exclusive_ = false;
  bool reverse_ = false;
};
AF_REGISTER_KERNEL(KernelDefBuilder("Cumsum").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), ScanOp<false>);
AF_REGISTER_KERNEL(KernelDefBuilder("Cumprod").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), ScanOp<true>);

}  // namespace
}  // namespace actorflow
