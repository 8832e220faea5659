// Random ops with TensorFlow's seeds: RandomUniform, RandomStandardNormal,
// TruncatedNormal, RandomUniformInt, RandomShuffle.
//
// (seed, seed2) key a Philox stream; both zero means "pick one at random".
// Each kernel keeps a counter of blocks handed out, so successive steps get
// successive values: a fixed seed gives the same sequence every run, and two
// ops with different seeds give independent streams. Values are a function of
// the block index only, so sharding the work does not change them.
#include <atomic>
#include <limits>
#include <random>

#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/array/copy_util.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/random/philox.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

// Output shape from the constant `shape` input.
Status RandomShape(InferenceContext* c) {
  const Tensor* shape = c->input_tensor(0);
  if (!shape) {
    c->set_output(0, PartialTensorShape());
    return Status::OK();
  }
  if (shape->dims() != 1) return c->Error("shape must be a vector, got ", shape->shape().DebugString());
  // A hostile constant must not size anything: rank, signs and the element
  // count are checked as the kernel's TensorShape::FromDims does.
  if (shape->NumElements() > kMaxShapeRank)
    return c->Error("shape has ", shape->NumElements(), " entries, more than the maximum rank ", kMaxShapeRank);
  std::vector<int64_t> dims = TensorToInt64s(*shape);
  int64_t elements = 1;
  for (int64_t d : dims) {
    if (d < 0) return c->Error("shape must have dimensions >= 0, got ", shape->SummarizeValue());
    if (d != 0 && !MulDims(elements, d, &elements))
      return c->Error("shape ", shape->SummarizeValue(), " describes more than 2^63-1 elements");
  }
  c->set_output(0, PartialTensorShape(dims));
  return Status::OK();
}

AF_REGISTER_OP("RandomUniform")
    .Input("shape: T")
    .Output("output: dtype")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("dtype: {float, double}")
    .Attr("T: {int32, int64}")
    .SetIsStateful()
    .SetShapeFn(RandomShape)
    .Doc("Uniform values in [0, 1).");

AF_REGISTER_OP("RandomStandardNormal")
    .Input("shape: T")
    .Output("output: dtype")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("dtype: {float, double}")
    .Attr("T: {int32, int64}")
    .SetIsStateful()
    .SetShapeFn(RandomShape)
    .Doc("Normal values, mean 0, standard deviation 1.");

AF_REGISTER_OP("TruncatedNormal")
    .Input("shape: T")
    .Output("output: dtype")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("dtype: {float, double}")
    .Attr("T: {int32, int64}")
    .SetIsStateful()
    .SetShapeFn(RandomShape)
    .Doc("Normal values, mean 0, standard deviation 1, redrawn when more than 2 standard deviations from 0.");

AF_REGISTER_OP("RandomUniformInt")
    .Input("shape: T")
    .Input("minval: Tout")
    .Input("maxval: Tout")
    .Output("output: Tout")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("Tout: {int32, int64}")
    .Attr("T: {int32, int64}")
    .SetIsStateful()
    .SetShapeFn(RandomShape)
    .Doc("Uniform integers in [minval, maxval).");

constexpr double kOffloadOutputBytes = 128 * 1024;
// Blocks each TruncatedNormal element may draw from before giving up (each
// has two candidates; a candidate is rejected with probability 0.0455).
constexpr int64_t kTruncatedTries = 64;

enum class Dist { kUniform, kNormal, kTruncated, kUniformInt };

// The op's (seed, seed2) attrs; both zero means nondeterministic, as in
// TensorFlow: fresh seeds for this kernel.
void ReadSeeds(OpKernelConstruction* c, uint64_t* seed_out, uint64_t* seed2_out) {
  int64_t seed = 0, seed2 = 0;
  c->SetStatus(c->GetAttr("seed", &seed));
  c->SetStatus(c->GetAttr("seed2", &seed2));
  if (seed == 0 && seed2 == 0) {
    std::random_device rd;
    seed = (static_cast<int64_t>(rd()) << 32) | rd();
    seed2 = (static_cast<int64_t>(rd()) << 32) | rd();
  }
  *seed_out = static_cast<uint64_t>(seed);
  *seed2_out = static_cast<uint64_t>(seed2);
}

class RandomOp : public OpKernel {
 public:
  RandomOp(OpKernelConstruction* c, Dist dist) : OpKernel(c), dist_(dist) {
    expensive_ = true;
    ReadSeeds(c, &seed_, &seed2_);
  }

  bool ShouldOffload(const Tensor* inputs, int) const override {
    if (!IsIndexDtype(inputs[0].dtype()) || inputs[0].dims() != 1) return false;  // Compute reports it
    double elems = 1;
    for (int64_t d : TensorToInt64s(inputs[0])) elems *= static_cast<double>(std::max<int64_t>(d, 0));
    return elems * 8 > kOffloadOutputBytes;
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& dims = ctx->input(0);
    AF_REQUIRES(ctx, dims.dims() == 1,
                errors::InvalidArgument("shape must be a vector, got shape ", dims.shape().DebugString()));
    AF_REQUIRES_OK(ctx, CheckIndexDtype(dims, "shape"));
    TensorShape shape;
    AF_REQUIRES_OK(ctx, TensorShape::FromDims(TensorToInt64s(dims), &shape));
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    const int64_t n = out->NumElements();
    // Reserve this call's range of blocks: later calls continue the stream.
    const int64_t blocks = BlocksFor(n);
    const uint64_t base = next_block_.fetch_add(static_cast<uint64_t>(blocks), std::memory_order_relaxed);
    const random::Philox4x32 gen(seed_, seed2_);
    ComputePool* pool = ctx->device()->compute_pool();
    switch (out->dtype()) {
      case DT_FLOAT: Fill<float>(ctx, gen, base, n, out, pool); break;
      case DT_DOUBLE: Fill<double>(ctx, gen, base, n, out, pool); break;
      case DT_INT32: FillInt<int32_t>(ctx, gen, base, n, out, pool); break;
      case DT_INT64: FillInt<int64_t>(ctx, gen, base, n, out, pool); break;
      default: ctx->SetStatus(errors::InvalidArgument("unsupported dtype ", DataTypeString(out->dtype())));
    }
  }

 private:
  int64_t BlocksFor(int64_t n) const {
    switch (dist_) {
      case Dist::kUniform: return (n + 1) / 2 + 1;  // up to two values per block (float uses 2 of 4 words)
      case Dist::kNormal: return (n + 1) / 2 + 1;
      case Dist::kTruncated: return n * kTruncatedTries + 1;
      case Dist::kUniformInt: return n + 1;
    }
    return n + 1;
  }

  template <class T>
  void Fill(OpKernelContext* ctx, const random::Philox4x32& gen, uint64_t base, int64_t n, Tensor* out,
            ComputePool* pool) const {
    T* o = out->data<T>();
    const Dist dist = dist_;
    // Element i draws from block base + i/2 (two values per block), or for
    // the truncated normal from blocks base + i + k*n, k = 0, 1, ...
    pool->For(n, 50, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        if (dist == Dist::kTruncated) {
          double v = 0;
          for (int64_t k = 0; k < kTruncatedTries; ++k) {
            double z0, z1;
            random::BoxMuller(gen(base + static_cast<uint64_t>(i + k * n)), &z0, &z1);
            if (std::abs(z0) <= 2.0) { v = z0; break; }
            if (std::abs(z1) <= 2.0) { v = z1; break; }
          }
          o[i] = static_cast<T>(v);
          continue;
        }
        const auto b = gen(base + static_cast<uint64_t>(i / 2));
        const int half = static_cast<int>(i % 2);
        if (dist == Dist::kUniform) {
          if constexpr (std::is_same_v<T, float>) o[i] = random::Uint32ToFloat(b[half * 2]);
          else o[i] = static_cast<T>(random::Uint64ToDouble(b[half * 2], b[half * 2 + 1]));
        } else {
          double z0, z1;
          random::BoxMuller(b, &z0, &z1);
          o[i] = static_cast<T>(half == 0 ? z0 : z1);
        }
      }
    });
  }

  template <class T>
  void FillInt(OpKernelContext* ctx, const random::Philox4x32& gen, uint64_t base, int64_t n, Tensor* out,
               ComputePool* pool) const {
    const Tensor& minval = ctx->input(1);
    const Tensor& maxval = ctx->input(2);
    AF_REQUIRES(ctx, minval.dims() == 0 && maxval.dims() == 0,
                errors::InvalidArgument("minval and maxval must be scalars, got ", minval.shape().DebugString(),
                                        " and ", maxval.shape().DebugString()));
    const T lo = minval.scalar<T>(), hi = maxval.scalar<T>();
    AF_REQUIRES(ctx, n == 0 || lo < hi,
                errors::InvalidArgument("Need minval < maxval: ", static_cast<int64_t>(lo), " >= ",
                                        static_cast<int64_t>(hi)));
    // In unsigned arithmetic: hi - lo may exceed int64's range.
    const uint64_t range = static_cast<uint64_t>(static_cast<int64_t>(hi)) - static_cast<uint64_t>(static_cast<int64_t>(lo));
    T* o = out->data<T>();
    pool->For(n, 50, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const auto b = gen(base + static_cast<uint64_t>(i));
        const uint64_t bits = uint64_t{b[0]} << 32 | b[1];
        o[i] = static_cast<T>(static_cast<int64_t>(static_cast<uint64_t>(static_cast<int64_t>(lo)) + bits % range));
      }
    });
  }

  Dist dist_;
  uint64_t seed_ = 0, seed2_ = 0;
  // The one mutable part of the kernel: blocks of the stream already handed
  // out. Concurrent steps reserve disjoint ranges.
  mutable std::atomic<uint64_t> next_block_{0};
};

struct RandomUniformOp : RandomOp {
  explicit RandomUniformOp(OpKernelConstruction* c) : RandomOp(c, Dist::kUniform) {}
};
struct RandomStandardNormalOp : RandomOp {
  explicit RandomStandardNormalOp(OpKernelConstruction* c) : RandomOp(c, Dist::kNormal) {}
};
struct TruncatedNormalOp : RandomOp {
  explicit TruncatedNormalOp(OpKernelConstruction* c) : RandomOp(c, Dist::kTruncated) {}
};
struct RandomUniformIntOp : RandomOp {
  explicit RandomUniformIntOp(OpKernelConstruction* c) : RandomOp(c, Dist::kUniformInt) {}
};
AF_REGISTER_KERNEL(KernelDefBuilder("RandomUniform").Device(DEVICE_CPU), RandomUniformOp);
AF_REGISTER_KERNEL(KernelDefBuilder("RandomStandardNormal").Device(DEVICE_CPU), RandomStandardNormalOp);
AF_REGISTER_KERNEL(KernelDefBuilder("TruncatedNormal").Device(DEVICE_CPU), TruncatedNormalOp);
AF_REGISTER_KERNEL(KernelDefBuilder("RandomUniformInt").Device(DEVICE_CPU), RandomUniformIntOp);

AF_REGISTER_OP("RandomShuffle")
    .Input("value: T")
    .Output("output: T")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("T: type")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unchanged)
    .Doc("value with its rows (dimension 0) in a random order.");

// Fisher-Yates over the rows, one Philox block per swap; each call reserves
// its blocks of the stream as RandomOp does, so a fixed seed gives the same
// sequence of permutations.
class RandomShuffleOp : public OpKernel {
 public:
  explicit RandomShuffleOp(OpKernelConstruction* c) : OpKernel(c) {
    ReadSeeds(c, &seed_, &seed2_);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    const int64_t rows = value.dims() == 0 ? 1 : value.dim_size(0);
    if (rows <= 1) {
      ctx->set_output(0, value);
      return;
    }
    ElemCopier cp;
    AF_REQUIRES_OK(ctx, ElemCopier::For(value.dtype(), name(), &cp));
    const uint64_t base = next_block_.fetch_add(static_cast<uint64_t>(rows), std::memory_order_relaxed);
    const random::Philox4x32 gen(seed_, seed2_);
    std::vector<int64_t> perm(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) perm[static_cast<size_t>(i)] = i;
    for (int64_t i = rows - 1; i > 0; --i) {
      const auto b = gen(base + static_cast<uint64_t>(i));
      const uint64_t bits = uint64_t{b[0]} << 32 | b[1];
      std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(bits % static_cast<uint64_t>(i + 1))]);
    }
    Tensor* out;
    AF_REQUIRES_OK(ctx, ctx->allocate_output(0, value.shape(), &out));
    const int64_t row_elems = value.NumElements() / rows;
    for (int64_t i = 0; i < rows; ++i)
      cp.Copy(cp.At(out->raw_data(), i * row_elems), cp.At(value.raw_data(), perm[static_cast<size_t>(i)] * row_elems),
              row_elems);
  }

 private:
  uint64_t seed_ = 0, seed2_ = 0;
  mutable std::atomic<uint64_t> next_block_{0};  // as RandomOp's
};
AF_REGISTER_KERNEL(KernelDefBuilder("RandomShuffle").Device(DEVICE_CPU), RandomShuffleOp);

// State changes and random draws have no gradient.
AF_REGISTER_NO_GRADIENT("RandomUniform");
AF_REGISTER_NO_GRADIENT("RandomStandardNormal");
AF_REGISTER_NO_GRADIENT("TruncatedNormal");
AF_REGISTER_NO_GRADIENT("RandomUniformInt");
AF_REGISTER_NO_GRADIENT("RandomShuffle");

}  // namespace
}  // namespace actorflow
