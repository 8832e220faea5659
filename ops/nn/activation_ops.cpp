// Relu, ReluGrad, BiasAdd, BiasAddGrad, Softmax, LogSoftmax.
// On signed integers BiasAdd and BiasAddGrad compute in the unsigned type, so
// their sums wrap in two's complement (ops/math/integer_wrap.hpp).
#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/math/cwise_ops.hpp"
#include "actorflow/ops/math/integer_wrap.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

AF_REGISTER_OP("Relu")
    .Input("features: T")
    .Output("activations: T")
    .Attr("T: {float, double, int32, int64}")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("max(features, 0)");
AF_UNARY_FUNCTOR(ReluF, TypeSet::kReal, x.max(T(0)));
AF_REGISTER_KERNEL(KernelDefBuilder("Relu").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), UnaryOp<ReluF>);

AF_REGISTER_OP("ReluGrad")
    .Input("gradients: T")
    .Input("features: T")
    .Output("backprops: T")
    .Attr("T: {float, double, int32, int64}")
    .SetShapeFn(shape_fns::Broadcasting)
    .Doc("gradients * (features > 0): the gradient of Relu.");
struct ReluGradF {
  static constexpr TypeSet kTypes = TypeSet::kReal;
  template <class T>
  using Out = T;
  template <class O, class G, class F>
  static void Run(O&& o, const G& gradients, const F& features) {
    using T = typename std::decay_t<G>::Scalar;
    o = (features > T(0)).select(gradients, T(0));
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("ReluGrad").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()),
                   BinaryOp<ReluGradF>);

// BiasAdd's and BiasAddGrad's data_format: true for NCHW, false for NHWC.
bool IsNchw(OpKernelConstruction* c) {
  std::string fmt;
  c->SetStatus(c->GetAttr("data_format", &fmt));
  if (fmt != "NHWC" && fmt != "NCHW") c->SetStatus(errors::InvalidArgument("Invalid data_format '", fmt, "'"));
  return fmt == "NCHW";
}

AF_REGISTER_OP("BiasAdd")
    .Input("value: T")
    .Input("bias: T")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64}")
    .Attr("data_format: string = 'NHWC'")
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("value + bias, bias added along the channel dimension (last for NHWC, second for NCHW).");

class BiasAddOp : public OpKernel {
 public:
  explicit BiasAddOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    nchw_ = IsNchw(c);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& v = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    AF_REQUIRES(ctx, v.dims() >= 2, errors::InvalidArgument("Input tensor must be at least 2D: ", v.shape().DebugString()));
    AF_REQUIRES(ctx, bias.dims() == 1, errors::InvalidArgument("Biases must be 1D: ", bias.shape().DebugString()));
    const int channel_dim = nchw_ ? 1 : v.dims() - 1;
    const int64_t c = v.dim_size(channel_dim);
    AF_REQUIRES(ctx, bias.dim_size(0) == c,
                errors::InvalidArgument("Must provide as many biases as the channel dimension of the input tensor: ",
                                        bias.shape().DebugString(), " vs. ", v.shape().DebugString()));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, v.shape(), &out));
    int64_t inner = 1;
    for (int i = channel_dim + 1; i < v.dims(); ++i) inner *= v.dim_size(i);
    const int64_t outer = c == 0 ? 0 : v.NumElements() / (c * inner);
    AF_SWITCH_REAL(v.dtype(), ctx->SetStatus(errors::Unimplemented("BiasAdd on ", DataTypeString(v.dtype()))),
                   Run<WrapT<T>>(ctx, AsWrapping(v.data<T>()), AsWrapping(bias.data<T>()), AsWrapping(out->data<T>()),
                                 outer, c, inner));
  }

 private:
  template <class T>
  static void Run(OpKernelContext* ctx, const T* pv, const T* pb, T* po, int64_t outer, int64_t c, int64_t inner) {
    using A = Eigen::Map<const ArrayX<T>>;
    ctx->device()->compute_pool()->ParallelFor(outer, c * inner, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        if (inner == 1) {
          Eigen::Map<ArrayX<T>>(po + o * c, c) = A(pv + o * c, c) + A(pb, c);
        } else {
          for (int64_t ch = 0; ch < c; ++ch) {
            const int64_t off = (o * c + ch) * inner;
            Eigen::Map<ArrayX<T>>(po + off, inner) = A(pv + off, inner) + pb[ch];
          }
        }
      }
    });
  }
  bool nchw_ = false;
};
AF_REGISTER_KERNEL(KernelDefBuilder("BiasAdd").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BiasAddOp);

Status BiasAddGradShape(InferenceContext* c) {
  std::string fmt;
  AF_RETURN_IF_ERROR(c->GetAttr("data_format", &fmt));
  const PartialTensorShape& in = c->input(0);
  if (in.unknown_rank()) {
    c->set_output(0, PartialTensorShape(std::vector<int64_t>{-1}));
    return Status::OK();
  }
  if (in.dims() < 2) return c->Error("Input tensor must be at least 2D: ", in.DebugString());
  const int channel_dim = fmt == "NCHW" ? 1 : in.dims() - 1;
  c->set_output(0, PartialTensorShape(std::vector<int64_t>{in.dim_size(channel_dim)}));
  return Status::OK();
}

AF_REGISTER_OP("BiasAddGrad")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64}")
    .Attr("data_format: string = 'NHWC'")
    .SetShapeFn(BiasAddGradShape)
    .Doc("The gradient of BiasAdd for the bias: out_backprop summed over every dimension but the channel one.");

class BiasAddGradOp : public OpKernel {
 public:
  explicit BiasAddGradOp(OpKernelConstruction* c) : OpKernel(c) {
    expensive_ = true;
    nchw_ = IsNchw(c);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    AF_REQUIRES(ctx, g.dims() >= 2, errors::InvalidArgument("Input tensor must be at least 2D: ", g.shape().DebugString()));
    const int channel_dim = nchw_ ? 1 : g.dims() - 1;
    const int64_t c = g.dim_size(channel_dim);
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape{c}, &out));
    // Without elements, products of the other dims may overflow: all sums are 0.
    int64_t inner = 1, outer = 1;
    if (g.NumElements() > 0) {
      for (int i = channel_dim + 1; i < g.dims(); ++i) inner *= g.dim_size(i);
      outer = g.NumElements() / (c * inner);
    } else {
      outer = 0;
    }
    AF_SWITCH_REAL(g.dtype(), ctx->SetStatus(errors::Unimplemented("BiasAddGrad on ", DataTypeString(g.dtype()))),
                   Run<WrapT<T>>(ctx, AsWrapping(g.data<T>()), AsWrapping(out->data<T>()), outer, c, inner));
  }

 private:
  // po[ch] = sum over o < outer, k < inner of pg[(o * c + ch) * inner + k].
  template <class T>
  static void Run(OpKernelContext* ctx, const T* pg, T* po, int64_t outer, int64_t c, int64_t inner) {
    if (outer == 0) {
      std::fill(po, po + c, T(0));
      return;
    }
    using Mat = Eigen::Map<const RowMajorMatrix<T>>;
    ctx->device()->compute_pool()->For(c, outer * inner, [&](int64_t c0, int64_t c1) {
      if (inner == 1) {  // [outer, c]: column sums
        Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(po + c0, c1 - c0) =
            Mat(pg, outer, c).middleCols(c0, c1 - c0).colwise().sum();
        return;
      }
      for (int64_t ch = c0; ch < c1; ++ch) {
        T sum = T(0);
        for (int64_t o = 0; o < outer; ++o) sum += Eigen::Map<const ArrayX<T>>(pg + (o * c + ch) * inner, inner).sum();
        po[ch] = sum;
      }
    });
  }
  bool nchw_ = false;
};
AF_REGISTER_KERNEL(KernelDefBuilder("BiasAddGrad").Device(DEVICE_CPU).TypeConstraint("T", RealTypes()), BiasAddGradOp);

// Softmax and LogSoftmax over the last dimension.
AF_REGISTER_OP("Softmax").Input("logits: T").Output("softmax: T").Attr("T: {float, double}")
    .SetShapeFn(shape_fns::Unchanged).Doc("exp(logits) / sum(exp(logits)) over the last dimension.");
AF_REGISTER_OP("LogSoftmax").Input("logits: T").Output("logsoftmax: T").Attr("T: {float, double}")
    .SetShapeFn(shape_fns::Unchanged).Doc("logits - log(sum(exp(logits))) over the last dimension.");

template <bool kLog>
class SoftmaxOp : public OpKernel {
 public:
  explicit SoftmaxOp(OpKernelConstruction* c) : OpKernel(c) { expensive_ = true; }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    AF_REQUIRES(ctx, x.dims() >= 1, errors::InvalidArgument("logits must have >= 1 dimension, got ", x.shape().DebugString()));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, x.shape(), &out));
    const int64_t cols = x.dim_size(x.dims() - 1);
    const int64_t rows = cols == 0 ? 0 : x.NumElements() / cols;
    AF_SWITCH_FLOAT(x.dtype(), ctx->SetStatus(errors::Unimplemented("softmax of ", DataTypeString(x.dtype()))),
                    Run<T>(ctx, x.data<T>(), out->data<T>(), rows, cols));
  }

 private:
  template <class T>
  static void Run(OpKernelContext* ctx, const T* px, T* po, int64_t rows, int64_t cols) {
    ctx->device()->compute_pool()->ParallelFor(rows, 8 * cols, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        Eigen::Map<const ArrayX<T>> in(px + r * cols, cols);
        Eigen::Map<ArrayX<T>> out(po + r * cols, cols);
        const T m = in.maxCoeff();
        if (kLog) {
          const T lse = std::log((in - m).exp().sum());
          out = in - m - lse;
        } else {
          out = (in - m).exp();
          out /= out.sum();
        }
      }
    });
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("Softmax").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), SoftmaxOp<false>);
AF_REGISTER_KERNEL(KernelDefBuilder("LogSoftmax").Device(DEVICE_CPU).TypeConstraint("T", FloatTypes()), SoftmaxOp<true>);

}  // namespace
}  // namespace actorflow
