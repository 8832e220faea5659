// FusedBatchNorm, FusedBatchNormV2, FusedBatchNormV3 and their gradients
// (FusedBatchNormGrad, V2, V3), TensorFlow's ops, in NHWC (channels last) on
// the CPU. Training normalizes by the batch's mean and (biased) variance and
// outputs the Bessel-corrected variance, blended into the given running
// statistics by exponential_avg_factor; inference uses the given mean and
// variance. reserve_space_1 and _2 hold the batch mean and biased variance
// that the gradient needs (reserve_space_3 of V3 is empty).
#include <cmath>
#include <vector>

#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

// y and x keep x's shape; the per-channel outputs are [C].
Status BatchNormShape(InferenceContext* c) {
  const PartialTensorShape& x = c->input(0);
  const int64_t channels = x.unknown_rank() || x.dims() < 1 ? -1 : x.dim_size(x.dims() - 1);
  c->set_output(0, x);
  for (int i = 1; i < c->num_outputs(); ++i) c->set_output(i, PartialTensorShape(std::vector<int64_t>{channels}));
  return Status::OK();
}
Status BatchNormGradShape(InferenceContext* c) {
  const PartialTensorShape& x = c->input(1);
  const int64_t channels = x.unknown_rank() || x.dims() < 1 ? -1 : x.dim_size(x.dims() - 1);
  c->set_output(0, x);
  c->set_output(1, PartialTensorShape(std::vector<int64_t>{channels}));
  c->set_output(2, PartialTensorShape(std::vector<int64_t>{channels}));
  c->set_output(3, PartialTensorShape(std::vector<int64_t>{0}));
  c->set_output(4, PartialTensorShape(std::vector<int64_t>{0}));
  return Status::OK();
}

#define AF_BN_ATTRS                                   \
  Attr("epsilon: float = 0.0001")                     \
      .Attr("exponential_avg_factor: float = 1.0")    \
      .Attr("data_format: string = 'NHWC'")           \
      .Attr("is_training: bool = true")

AF_REGISTER_OP("FusedBatchNorm")
    .Input("x: T").Input("scale: T").Input("offset: T").Input("mean: T").Input("variance: T")
    .Output("y: T").Output("batch_mean: T").Output("batch_variance: T")
    .Output("reserve_space_1: T").Output("reserve_space_2: T")
    .Attr("T: {float}").AF_BN_ATTRS.SetShapeFn(BatchNormShape)
    .Doc("Batch normalization over every dimension but the channels (the last, NHWC).");
AF_REGISTER_OP("FusedBatchNormV2")
    .Input("x: T").Input("scale: U").Input("offset: U").Input("mean: U").Input("variance: U")
    .Output("y: T").Output("batch_mean: U").Output("batch_variance: U")
    .Output("reserve_space_1: U").Output("reserve_space_2: U")
    .Attr("T: {float}").Attr("U: {float}").AF_BN_ATTRS.SetShapeFn(BatchNormShape)
    .Doc("FusedBatchNorm with the statistics' dtype U.");
AF_REGISTER_OP("FusedBatchNormV3")
    .Input("x: T").Input("scale: U").Input("offset: U").Input("mean: U").Input("variance: U")
    .Output("y: T").Output("batch_mean: U").Output("batch_variance: U")
    .Output("reserve_space_1: U").Output("reserve_space_2: U").Output("reserve_space_3: U")
    .Attr("T: {float}").Attr("U: {float}").AF_BN_ATTRS.SetShapeFn(BatchNormShape)
    .Doc("FusedBatchNormV2 with a third reserve space (empty on the CPU).");

#define AF_BN_GRAD_ATTRS                              \
  Attr("epsilon: float = 0.0001")                     \
      .Attr("data_format: string = 'NHWC'")           \
      .Attr("is_training: bool = true")

AF_REGISTER_OP("FusedBatchNormGrad")
    .Input("y_backprop: T").Input("x: T").Input("scale: T").Input("reserve_space_1: T").Input("reserve_space_2: T")
    .Output("x_backprop: T").Output("scale_backprop: T").Output("offset_backprop: T")
    .Output("reserve_space_3: T").Output("reserve_space_4: T")
    .Attr("T: {float}").AF_BN_GRAD_ATTRS.SetShapeFn(BatchNormGradShape)
    .Doc("The gradient of FusedBatchNorm.");
AF_REGISTER_OP("FusedBatchNormGradV2")
    .Input("y_backprop: T").Input("x: T").Input("scale: float").Input("reserve_space_1: U").Input("reserve_space_2: U")
    .Output("x_backprop: T").Output("scale_backprop: U").Output("offset_backprop: U")
    .Output("reserve_space_3: U").Output("reserve_space_4: U")
    .Attr("T: {float}").Attr("U: {float}").AF_BN_GRAD_ATTRS.SetShapeFn(BatchNormGradShape)
    .Doc("The gradient of FusedBatchNormV2.");
AF_REGISTER_OP("FusedBatchNormGradV3")
    .Input("y_backprop: T").Input("x: T").Input("scale: float").Input("reserve_space_1: U").Input("reserve_space_2: U")
    .Input("reserve_space_3: U")
    .Output("x_backprop: T").Output("scale_backprop: U").Output("offset_backprop: U")
    .Output("reserve_space_4: U").Output("reserve_space_5: U")
    .Attr("T: {float}").Attr("U: {float}").AF_BN_GRAD_ATTRS.SetShapeFn(BatchNormGradShape)
    .Doc("The gradient of FusedBatchNormV3.");

Status ReadCommon(OpKernelConstruction* c, float* epsilon, bool* training) {
  std::string format;
  AF_RETURN_IF_ERROR(c->GetAttr("epsilon", epsilon));
  AF_RETURN_IF_ERROR(c->GetAttr("is_training", training));
  AF_RETURN_IF_ERROR(c->GetAttr("data_format", &format));
  if (format != "NHWC") return errors::Unimplemented("FusedBatchNorm with data_format ", format, " (NHWC only)");
  return Status::OK();
}

using Rows = Eigen::Map<const Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
using RowsOut = Eigen::Map<Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
using Vec = Eigen::Map<const Eigen::Array<float, 1, Eigen::Dynamic>>;

class FusedBatchNormOp : public OpKernel {
 public:
  explicit FusedBatchNormOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    c->SetStatus(ReadCommon(c, &epsilon_, &training_));
    c->SetStatus(c->GetAttr("exponential_avg_factor", &avg_factor_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    AF_REQUIRES(ctx, x.dims() == 4, errors::InvalidArgument("x must be 4-dimensional, got ", x.shape().DebugString()));
    const int64_t c = x.dim_size(3), n = x.NumElements() / std::max<int64_t>(c, 1);
    for (int i = 1; i < 5; ++i) {
      const Tensor& t = ctx->input(i);
      const bool empty_stat = training_ && i >= 3 && t.NumElements() == 0;  // no running statistics yet
      AF_REQUIRES(ctx, empty_stat || (t.dims() == 1 && t.dim_size(0) == c),
                  errors::InvalidArgument(i == 1 ? "scale" : i == 2 ? "offset" : i == 3 ? "mean" : "variance",
                                          " must have shape [", c, "], got ", t.shape().DebugString()));
    }
    Tensor* y;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
    std::vector<Tensor*> stats(static_cast<size_t>(ctx->num_outputs()), nullptr);
    for (int i = 1; i < ctx->num_outputs(); ++i)
      AF_REQUIRES_OK(ctx, ctx->allocate_output(i, TensorShape{i == 5 ? 0 : c}, &stats[i]));
    if (c == 0) return;
    const Rows xs(x.data<float>(), n, c);
    const Vec scale(ctx->input(1).data<float>(), c), offset(ctx->input(2).data<float>(), c);
    Eigen::Array<float, 1, Eigen::Dynamic> mean(c), var(c);
    if (training_) {
      mean = n > 0 ? (xs.colwise().sum() / float(n)).eval() : Eigen::Array<float, 1, Eigen::Dynamic>::Zero(c);
      var = n > 0 ? ((xs.rowwise() - mean).square().colwise().sum() / float(n)).eval()
                  : Eigen::Array<float, 1, Eigen::Dynamic>::Zero(c);
    } else {
      mean = Vec(ctx->input(3).data<float>(), c);
      var = Vec(ctx->input(4).data<float>(), c);
    }
    const Eigen::Array<float, 1, Eigen::Dynamic> k = scale * (var + epsilon_).rsqrt();
    RowsOut(y->data<float>(), n, c) = (xs.rowwise() - mean).rowwise() * k;
    RowsOut(y->data<float>(), n, c).rowwise() += offset;
    Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>> batch_mean(stats[1]->data<float>(), c),
        batch_var(stats[2]->data<float>(), c);
    if (training_) {
      const float corrected = n > 1 ? float(n) / float(n - 1) : 1.f;
      if (avg_factor_ == 1.f || ctx->input(3).NumElements() == 0) {
        batch_mean = mean;
        batch_var = var * corrected;
      } else {  // running statistics blended with the batch's
        batch_mean = (1.f - avg_factor_) * Vec(ctx->input(3).data<float>(), c) + avg_factor_ * mean;
        batch_var = (1.f - avg_factor_) * Vec(ctx->input(4).data<float>(), c) + avg_factor_ * var * corrected;
      }
    } else {
      batch_mean = mean;
      batch_var = var;
    }
    Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>>(stats[3]->data<float>(), c) = mean;
    Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>>(stats[4]->data<float>(), c) = var;
  }

 private:
  float epsilon_ = 1e-4f, avg_factor_ = 1.f;
  bool training_ = true;
};
AF_REGISTER_KERNEL(KernelDefBuilder("FusedBatchNorm").Device(DEVICE_CPU), FusedBatchNormOp);
AF_REGISTER_KERNEL(KernelDefBuilder("FusedBatchNormV2").Device(DEVICE_CPU), FusedBatchNormOp);
AF_REGISTER_KERNEL(KernelDefBuilder("FusedBatchNormV3").Device(DEVICE_CPU), FusedBatchNormOp);

class FusedBatchNormGradOp : public OpKernel {
 public:
  explicit FusedBatchNormGradOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    c->SetStatus(ReadCommon(c, &epsilon_, &training_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    AF_REQUIRES(ctx, x.dims() == 4 && dy.shape() == x.shape(),
                errors::InvalidArgument("x and y_backprop must be 4-dimensional and alike, got ", x.shape().DebugString(),
                                        " and ", dy.shape().DebugString()));
    const int64_t c = x.dim_size(3), n = x.NumElements() / std::max<int64_t>(c, 1);
    for (int i = 2; i < 5; ++i)
      AF_REQUIRES(ctx, ctx->input(i).dims() == 1 && ctx->input(i).dim_size(0) == c,
                  errors::InvalidArgument("scale, reserve_space_1 and reserve_space_2 must have shape [", c, "]"));
    Tensor *dx, *dscale, *doffset, *r4, *r5;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &dx));
    AF_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape{c}, &dscale));
    AF_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape{c}, &doffset));
    AF_REQUIRES_OK(ctx, ctx->allocate_output(3, TensorShape{0}, &r4));
    AF_REQUIRES_OK(ctx, ctx->allocate_output(4, TensorShape{0}, &r5));
    if (c == 0) return;
    const Rows xs(x.data<float>(), n, c), g(dy.data<float>(), n, c);
    const Vec scale(ctx->input(2).data<float>(), c), mean(ctx->input(3).data<float>(), c),
        var(ctx->input(4).data<float>(), c);
    const Eigen::Array<float, 1, Eigen::Dynamic> inv_std = (var + epsilon_).rsqrt();
    const Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> x_hat =
        (xs.rowwise() - mean).rowwise() * inv_std;
    const Eigen::Array<float, 1, Eigen::Dynamic> sum_dy = g.colwise().sum(), sum_dy_xhat = (g * x_hat).colwise().sum();
    Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>>(doffset->data<float>(), c) = sum_dy;
    Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>>(dscale->data<float>(), c) = sum_dy_xhat;
    RowsOut out(dx->data<float>(), n, c);
    if (training_ && n > 0) {
      // dx = scale * inv_std * (dy - mean(dy) - x_hat * mean(dy * x_hat))
      out = (g.rowwise() - sum_dy / float(n)) - x_hat.rowwise() * (sum_dy_xhat / float(n));
      out.rowwise() *= scale * inv_std;
    } else {
      out = g.rowwise() * (scale * inv_std);
    }
  }

 private:
  float epsilon_ = 1e-4f;
  bool training_ = true;
};
AF_REGISTER_KERNEL(KernelDefBuilder("FusedBatchNormGrad").Device(DEVICE_CPU), FusedBatchNormGradOp);
AF_REGISTER_KERNEL(KernelDefBuilder("FusedBatchNormGradV2").Device(DEVICE_CPU), FusedBatchNormGradOp);
AF_REGISTER_KERNEL(KernelDefBuilder("FusedBatchNormGradV3").Device(DEVICE_CPU), FusedBatchNormGradOp);

}  // namespace
}  // namespace actorflow
