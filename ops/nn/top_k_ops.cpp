// TopKV2, InTopKV2 and L2Loss, TensorFlow's ops. TopKV2 takes the k largest
// entries of each row (the last dimension), ties going to the lower index,
// sorted largest first; InTopKV2 says whether each target's prediction is
// among the k largest of its row (ties count in its favour, as TensorFlow's;
// a non-finite prediction or a target out of range is false). L2Loss is
// sum(t^2) / 2.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/math/cwise_ops.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

Status TopKShape(InferenceContext* c) {
  const PartialTensorShape& in = c->input(0);
  if (in.unknown_rank()) {
    c->set_output(0, PartialTensorShape());
    c->set_output(1, PartialTensorShape());
    return Status::OK();
  }
  if (in.dims() < 1) return c->Error("input must be at least 1-D, got ", in.DebugString());
  const Tensor* k = c->input_tensor(1);
  std::vector<int64_t> dims;
  for (int i = 0; i < in.dims(); ++i) dims.push_back(in.dim_size(i));
  dims.back() = k != nullptr && k->NumElements() == 1 ? k->data<int32_t>()[0] : -1;
  c->set_output(0, PartialTensorShape(dims));
  c->set_output(1, PartialTensorShape(dims));
  return Status::OK();
}

AF_REGISTER_OP("TopKV2")
    .Input("input: T")
    .Input("k: int32")
    .Output("values: T")
    .Output("indices: int32")
    .Attr("sorted: bool = true")
    .Attr("T: {float, double, int32, int64}")
    .SetShapeFn(TopKShape)
    .Doc("The k largest entries of each row (last dimension) and their indices; ties go to the lower index.");

class TopKOp : public OpKernel {
 public:
  explicit TopKOp(OpKernelConstruction* c) : OpKernel(c) { expensive_ = true; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& k_t = ctx->input(1);
    AF_REQUIRES(ctx, k_t.dims() == 0, errors::InvalidArgument("k must be 0-D, got shape ", k_t.shape().DebugString()));
    const int64_t k = k_t.data<int32_t>()[0];
    AF_REQUIRES(ctx, k >= 0, errors::InvalidArgument("Need k >= 0, got ", k));
    AF_REQUIRES(ctx, x.dims() >= 1, errors::InvalidArgument("input must be >= 1-D, got shape ", x.shape().DebugString()));
    const int64_t cols = x.dim_size(x.dims() - 1);
    AF_REQUIRES(ctx, cols >= k, errors::InvalidArgument("input must have at least k columns. Had ", cols, ", needed ", k));
    std::vector<int64_t> dims = x.shape().dim_sizes();
    dims.back() = k;
    TensorShape shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(dims, &shape));
    Tensor *values, *indices;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &values));
    AF_REQUIRES_OK(ctx, ctx->allocate_output(1, shape, &indices));
    if (k == 0 || values->NumElements() == 0) return;
    const int64_t rows = x.NumElements() / cols;
    AF_SWITCH_REAL(x.dtype(), ctx->SetStatus(errors::Unimplemented("TopKV2 of ", DataTypeString(x.dtype()))),
                   Run<T>(ctx, x.data<T>(), rows, cols, k, values->data<T>(), indices->data<int32_t>()));
  }

 private:
  template <class T>
  static void Run(OpKernelContext* ctx, const T* x, int64_t rows, int64_t cols, int64_t k, T* v, int32_t* ix) {
    ctx->device()->compute_pool()->For(rows, cols * 8, [&](int64_t r0, int64_t r1) {
      std::vector<int32_t> order(static_cast<size_t>(cols));
      for (int64_t r = r0; r < r1; ++r) {
        const T* row = x + r * cols;
        std::iota(order.begin(), order.end(), 0);
        // Larger first; among equals the lower index. NaN counts as the largest, as in TensorFlow.
        auto before = [row](int32_t a, int32_t b) {
          const T va = row[a], vb = row[b];
          if constexpr (std::is_floating_point_v<T>) {
            if (std::isnan(va) != std::isnan(vb)) return std::isnan(va);
          }
          return va > vb || (!(vb > va) && a < b);
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          ix[r * k + j] = order[j];
          v[r * k + j] = row[order[j]];
        }
      }
    });
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("TopKV2").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), TopKOp);

AF_REGISTER_OP("InTopKV2")
    .Input("predictions: float")
    .Input("targets: T")
    .Input("k: T")
    .Output("precision: bool")
    .Attr("T: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      const PartialTensorShape& p = c->input(0);
      c->set_output(0, PartialTensorShape(std::vector<int64_t>{p.unknown_rank() ? -1 : p.dim_size(0)}));
      return Status::OK();
    })
    .Doc("Whether targets[i] is among the k largest predictions of row i.");

class InTopKOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& p = ctx->input(0);
    const Tensor& t = ctx->input(1);
    const Tensor& k_t = ctx->input(2);
    AF_REQUIRES(ctx, p.dims() == 2, errors::InvalidArgument("predictions must be 2-dimensional"));
    AF_REQUIRES(ctx, t.dims() == 1 && t.dim_size(0) == p.dim_size(0),
                errors::InvalidArgument("First dimension of predictions ", p.dim_size(0),
                                        " must match length of targets ", t.NumElements()));
    AF_REQUIRES(ctx, k_t.NumElements() == 1, errors::InvalidArgument("k must be 0-D"));
    auto at = [](const Tensor& v, int64_t i) {
      return v.dtype() == DT_INT64 ? v.data<int64_t>()[i] : int64_t{v.data<int32_t>()[i]};
    };
    const int64_t k = at(k_t, 0), rows = p.dim_size(0), cols = p.dim_size(1);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{rows}, &out));
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = p.data<float>() + r * cols;
      const int64_t target = at(t, r);
      bool in = target >= 0 && target < cols && std::isfinite(row[target]);
      if (in) {
        int64_t larger = 0;
        for (int64_t c = 0; c < cols; ++c) larger += row[c] > row[target];
        in = larger < k;
      }
      out->data<bool>()[r] = in;
    }
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("InTopKV2").Device(DEVICE_CPU), InTopKOp);

AF_REGISTER_OP("L2Loss")
    .Input("t: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .SetShapeFn(shape_fns::Scalar)
    .Doc("sum(t ** 2) / 2");

class L2LossOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& t = ctx->input(0);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{}, &out));
    AF_SWITCH_FLOAT(t.dtype(), ctx->SetStatus(errors::Unimplemented("L2Loss of ", DataTypeString(t.dtype()))),
                    out->data<T>()[0] = Eigen::Map<const ArrayX<T>>(t.data<T>(), t.NumElements()).square().sum() / T(2));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("L2Loss").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), L2LossOp);

}  // namespace
}  // namespace actorflow
