// Where and Unique, TensorFlow's ops: the coordinates of the true (non-zero)
// elements of a tensor, row-major; and the distinct elements of a vector in
// the order they first appear, with each element's index among them.
#include <unordered_map>

#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

AF_REGISTER_OP("Where")
    .Input("input: T")
    .Output("index: int64")
    .Attr("T: {bool, float, double, int32, int64} = DT_BOOL")
    .SetShapeFn([](InferenceContext* c) {
      const PartialTensorShape& in = c->input(0);
      c->set_output(0, PartialTensorShape(std::vector<int64_t>{-1, in.unknown_rank() ? -1 : in.dims()}));
      return Status::OK();
    })
    .Doc("The coordinates of the true (non-zero) elements, one row each, in row-major order: [count, rank].");

class WhereOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    std::vector<bool> on(static_cast<size_t>(x.NumElements()));
    int64_t count = 0;
    AF_SWITCH_ALL(x.dtype(), ctx->SetStatus(errors::Unimplemented("Where of ", DataTypeString(x.dtype()))),
                  for (int64_t i = 0; i < x.NumElements(); ++i) count += (on[i] = NonZero(x.data<T>()[i])));
    if (!ctx->status().ok()) return;
    const int rank = x.dims();
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{count, rank}, &out));
    int64_t* o = out->data<int64_t>();
    std::vector<int64_t> idx(rank, 0);
    for (int64_t e = 0; e < x.NumElements(); ++e) {
      if (on[e]) o = std::copy(idx.begin(), idx.end(), o);
      for (int i = rank - 1; i >= 0; --i) {
        if (++idx[i] < x.dim_size(i)) break;
        idx[i] = 0;
      }
    }
  }

 private:
  template <class T>
  static bool NonZero(const T& v) {
    if constexpr (std::is_same_v<T, std::string>) return !v.empty();
    else return v != T(0);
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Where").Device(DEVICE_CPU), WhereOp);

AF_REGISTER_OP("Unique")
    .Input("x: T")
    .Output("y: T")
    .Output("idx: out_idx")
    .Attr("T: type")
    .Attr("out_idx: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, PartialTensorShape(std::vector<int64_t>{-1}));
      c->set_output(1, c->input(0));
      return Status::OK();
    })
    .Doc("The distinct elements of a vector in order of first appearance (y), and each element's index in y (idx).");

class UniqueOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    AF_REQUIRES(ctx, x.dims() == 1, errors::InvalidArgument("unique expects a 1D vector, got ", x.shape().DebugString()));
    AF_SWITCH_ALL(x.dtype(), ctx->SetStatus(errors::Unimplemented("Unique of ", DataTypeString(x.dtype()))),
                  Run<T>(ctx, x));
  }

 private:
  template <class T>
  void Run(OpKernelContext* ctx, const Tensor& x) {
    const int64_t n = x.NumElements();
    std::unordered_map<T, int64_t> first;
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::vector<const T*> distinct;
    for (int64_t i = 0; i < n; ++i) {
      const T& v = x.data<T>()[i];
      auto [it, added] = first.emplace(v, static_cast<int64_t>(distinct.size()));
      if (added) distinct.push_back(&v);
      idx[i] = it->second;
    }
    Tensor* y;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{static_cast<int64_t>(distinct.size())}, &y));
    for (size_t j = 0; j < distinct.size(); ++j) y->data<T>()[j] = *distinct[j];
    Tensor* out_idx;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape{n}, &out_idx));
    for (int64_t i = 0; i < n; ++i) {
      if (BaseType(out_idx->dtype()) == DT_INT64) out_idx->data<int64_t>()[i] = idx[i];
      else out_idx->data<int32_t>()[i] = static_cast<int32_t>(idx[i]);
    }
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Unique").Device(DEVICE_CPU), UniqueOp);

}  // namespace
}  // namespace actorflow
