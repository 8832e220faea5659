// SoftmaxCrossEntropyWithLogits and SparseSoftmaxCrossEntropyWithLogits:
// per-example loss and its gradient (backprop) with respect to the logits.
#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/ops/math/cwise_ops.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

Status XentShape(InferenceContext* c) {
  const auto& f = c->input(0);
  if (f.unknown_rank() || f.dims() != 2) {
    c->set_output(0, PartialTensorShape(std::vector<int64_t>{-1}));
    c->set_output(1, PartialTensorShape(std::vector<int64_t>{-1, -1}));
    return Status::OK();
  }
  c->set_output(0, PartialTensorShape(std::vector<int64_t>{f.dim_size(0)}));
  c->set_output(1, f);
  return Status::OK();
}

AF_REGISTER_OP("SoftmaxCrossEntropyWithLogits")
    .Input("features: T")
    .Input("labels: T")
    .Output("loss: T")
    .Output("backprop: T")
    .Attr("T: {float, double}")
    .SetShapeFn(XentShape)
    .Doc("Cross entropy of softmax(features) against the label distributions, per row.");

AF_REGISTER_OP("SparseSoftmaxCrossEntropyWithLogits")
    .Input("features: T")
    .Input("labels: Tlabels")
    .Output("loss: T")
    .Output("backprop: T")
    .Attr("T: {float, double}")
    .Attr("Tlabels: {int32, int64} = DT_INT64")
    .SetShapeFn(XentShape)
    .Doc("Cross entropy of softmax(features) against class indices, per row.");

// Softmax of each row of logits [rows, cols] into backprop, and each row's
// log-sum-exp into lse. The exponentials run over the whole block at once
// (vectorized across rows: a row of 10 classes alone would leave most of a
// vector register empty and take the scalar tail).
template <class T>
void SoftmaxRows(const T* logits, T* backprop, T* lse, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    Eigen::Map<const ArrayX<T>> in(logits + r * cols, cols);
    const T m = in.maxCoeff();
    lse[r] = m;
    Eigen::Map<ArrayX<T>>(backprop + r * cols, cols) = in - m;
  }
  Eigen::Map<ArrayX<T>> all(backprop, rows * cols);
  all = all.exp();
  for (int64_t r = 0; r < rows; ++r) {
    Eigen::Map<ArrayX<T>> bp(backprop + r * cols, cols);
    const T sum = bp.sum();
    bp /= sum;
    lse[r] += std::log(sum);  // log(sum(exp(logits)))
  }
}

class XentOp : public OpKernel {
 public:
  explicit XentOp(OpKernelConstruction* c) : OpKernel(c) { expensive_ = true; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& f = ctx->input(0);
    const Tensor& l = ctx->input(1);
    AF_REQUIRES(ctx, f.dims() == 2, errors::InvalidArgument("logits must be 2-dimensional, got ", f.shape().DebugString()));
    AF_REQUIRES(ctx, f.shape() == l.shape(),
                errors::InvalidArgument("logits and labels must be same size: logits_size=", f.shape().DebugString(),
                                        " labels_size=", l.shape().DebugString()));
    Tensor *loss, *bp;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{f.dim_size(0)}, &loss));
    AF_REQUIRES_OK(ctx, ctx->allocate_output(1, f.shape(), &bp));
    AF_SWITCH_FLOAT(f.dtype(), ctx->SetStatus(errors::Unimplemented(DataTypeString(f.dtype()))),
                    Run<T>(f, l, loss, bp));
  }

 private:
  template <class T>
  static void Run(const Tensor& f, const Tensor& l, Tensor* loss, Tensor* bp) {
    const int64_t rows = f.dim_size(0), cols = f.dim_size(1);
    T* lse = loss->data<T>();
    if (cols > 0) SoftmaxRows(f.data<T>(), bp->data<T>(), lse, rows, cols);
    for (int64_t r = 0; r < rows; ++r) {
      const T* x = f.data<T>() + r * cols;
      const T* y = l.data<T>() + r * cols;
      T* g = bp->data<T>() + r * cols;
      const T row_lse = cols > 0 ? lse[r] : T(0);
      Eigen::Map<const ArrayX<T>> X(x, cols), Y(y, cols);
      loss->data<T>()[r] = (Y * (row_lse - X)).sum();
      Eigen::Map<ArrayX<T>>(g, cols) -= Y;
    }
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("SoftmaxCrossEntropyWithLogits").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
                   XentOp);

class SparseXentOp : public OpKernel {
 public:
  explicit SparseXentOp(OpKernelConstruction* c) : OpKernel(c) { expensive_ = true; }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& f = ctx->input(0);
    const Tensor& l = ctx->input(1);
    AF_REQUIRES(ctx, f.dims() == 2, errors::InvalidArgument("logits must be 2-D, but got shape ", f.shape().DebugString()));
    AF_REQUIRES(ctx, l.dims() == 1 && l.dim_size(0) == f.dim_size(0),
                errors::InvalidArgument("logits and labels must have the same first dimension, got logits shape ",
                                        f.shape().DebugString(), " and labels shape ", l.shape().DebugString()));
    const int64_t cols = f.dim_size(1);
    const std::vector<int64_t> labels = TensorToInt64s(l);
    for (size_t i = 0; i < labels.size(); ++i) {
      AF_REQUIRES(ctx, labels[i] >= 0 && labels[i] < cols,
                  errors::InvalidArgument("Received a label value of ", labels[i], " which is outside the valid range of [0, ",
                                          cols, "). Label values: ", l.SummarizeValue(20)));
    }
    Tensor *loss, *bp;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{f.dim_size(0)}, &loss));
    AF_REQUIRES_OK(ctx, ctx->allocate_output(1, f.shape(), &bp));
    AF_SWITCH_FLOAT(f.dtype(), ctx->SetStatus(errors::Unimplemented(DataTypeString(f.dtype()))),
                    Run<T>(f, labels, loss, bp));
  }

 private:
  template <class T>
  static void Run(const Tensor& f, const std::vector<int64_t>& labels, Tensor* loss, Tensor* bp) {
    const int64_t rows = f.dim_size(0), cols = f.dim_size(1);
    T* out = loss->data<T>();
    SoftmaxRows(f.data<T>(), bp->data<T>(), out, rows, cols);  // out = log-sum-exp per row
    for (int64_t r = 0; r < rows; ++r) {
      out[r] -= f.data<T>()[r * cols + labels[r]];
      bp->data<T>()[r * cols + labels[r]] -= T(1);
    }
  }
};
AF_REGISTER_KERNEL(
    KernelDefBuilder("SparseSoftmaxCrossEntropyWithLogits").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()),
    SparseXentOp);

}  // namespace
}  // namespace actorflow
