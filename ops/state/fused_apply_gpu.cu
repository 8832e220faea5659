// The fused optimizer updates on a GPU (ops/state/fused_apply.hpp): the N
// members' updates are checked and their buffers chosen at once, under all
// their variables' locks (VariableAccess::UpdateManyAndAnswer, copy on write
// as for one Apply*, ops/state/variable_ops_gpu.cu), and computed by one
// multi-tensor launch (more when the members do not fit one launch's
// arguments: ops/state/multi_tensor_plan.hpp), where the unfused nodes
// launched one kernel each. The per-element formulas are the Apply* kernels'
// (ops/state/apply_formulas.hpp). A member whose update is refused fails the
// node; the others are launched all the same (as the CPU kernel, and as
// separate nodes would be).
#include <cstring>

#include "actorflow/core/exception_status.hpp"
#include "actorflow/ops/gpu/gpu_kernel.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/state/apply_formulas.hpp"
#include "actorflow/ops/state/fused_apply.hpp"
#include "actorflow/ops/state/multi_tensor_plan.hpp"
#include "actorflow/ops/state/variable_access.hpp"
#include "actorflow/ops/state/variable_ops.hpp"

namespace actorflow {
namespace {

constexpr int kFusedThreads = 512;

// One launch's arguments (kernel parameters: under 4 KB).
struct MultiArgs {
  const float* src[3][kMaxLaunchMembers];  // each variable slot's values (read)
  float* dst[3][kMaxLaunchMembers];        // the buffers written (the same when in place)
  const float* grad[kMaxLaunchMembers];
  int64_t n[kMaxLaunchMembers];
  uint8_t block_member[kMaxLaunchBlocks];
  int32_t block_chunk[kMaxLaunchBlocks];
};
static_assert(sizeof(MultiArgs) + 8 * sizeof(void*) < 4096, "kernel parameters are limited to 4 KB");

// The scalar arguments (device memory), in VarUpdateKind's order without the gradient.
struct Scalars {
  const float* p[6];
  bool nesterov;
};

template <VarUpdateKind K>
__global__ void __launch_bounds__(kFusedThreads) MultiApplyKernel(MultiArgs a, Scalars s) {
  const int m = a.block_member[blockIdx.x];
  const int64_t begin = static_cast<int64_t>(a.block_chunk[blockIdx.x]) * kMultiTensorChunk;
  const int64_t end = min(begin + kMultiTensorChunk, a.n[m]);
  const float* g = a.grad[m];
  if (K == VarUpdateKind::kGradientDescent) {
    const float alpha = *s.p[0];
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      float v = a.src[0][m][i];
      apply::GradientDescent(v, alpha, g[i]);
      a.dst[0][m][i] = v;
    }
  } else if (K == VarUpdateKind::kMomentum) {
    const float lr = *s.p[0], mo = *s.p[1];
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      float v = a.src[0][m][i], accum = a.src[1][m][i];
      apply::Momentum(v, accum, lr, g[i], mo, s.nesterov);
      a.dst[0][m][i] = v;
      a.dst[1][m][i] = accum;
    }
  } else if (K == VarUpdateKind::kAdam) {
    const float alpha = apply::AdamAlpha(*s.p[2], *s.p[0], *s.p[1]);
    const float b1 = *s.p[3], b2 = *s.p[4], eps = *s.p[5];
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      float v = a.src[0][m][i], mm = a.src[1][m][i], vv = a.src[2][m][i];
      apply::Adam(v, mm, vv, alpha, b1, b2, eps, g[i], s.nesterov);
      a.dst[0][m][i] = v;
      a.dst[1][m][i] = mm;
      a.dst[2][m][i] = vv;
    }
  } else if (K == VarUpdateKind::kAdagrad) {
    const float lr = *s.p[0];
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      float v = a.src[0][m][i], accum = a.src[1][m][i];
      apply::Adagrad(v, accum, lr, g[i]);
      a.dst[0][m][i] = v;
      a.dst[1][m][i] = accum;
    }
  } else if (K == VarUpdateKind::kRMSProp) {
    const float lr = *s.p[0], rho = *s.p[1], mo = *s.p[2], eps = *s.p[3];
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      float v = a.src[0][m][i], ms = a.src[1][m][i], mom = a.src[2][m][i];
      apply::RMSProp(v, ms, mom, lr, rho, mo, eps, g[i]);
      a.dst[0][m][i] = v;
      a.dst[1][m][i] = ms;
      a.dst[2][m][i] = mom;
    }
  }
}

void LaunchKind(VarUpdateKind kind, cudaStream_t stream, unsigned blocks, const MultiArgs& a, const Scalars& s) {
  switch (kind) {
    case VarUpdateKind::kGradientDescent:
      MultiApplyKernel<VarUpdateKind::kGradientDescent><<<blocks, kFusedThreads, 0, stream>>>(a, s);
      break;
    case VarUpdateKind::kMomentum:
      MultiApplyKernel<VarUpdateKind::kMomentum><<<blocks, kFusedThreads, 0, stream>>>(a, s);
      break;
    case VarUpdateKind::kAdam:
      MultiApplyKernel<VarUpdateKind::kAdam><<<blocks, kFusedThreads, 0, stream>>>(a, s);
      break;
    case VarUpdateKind::kAdagrad:
      MultiApplyKernel<VarUpdateKind::kAdagrad><<<blocks, kFusedThreads, 0, stream>>>(a, s);
      break;
    case VarUpdateKind::kRMSProp:
      MultiApplyKernel<VarUpdateKind::kRMSProp><<<blocks, kFusedThreads, 0, stream>>>(a, s);
      break;
    default:
      break;
  }
}

class FusedApplyGpu : public VariableUpdateKernel {
 public:
  FusedApplyGpu(OpKernelConstruction* c, const FusedApplySpec& spec) : VariableUpdateKernel(c), spec_(spec) {
    c->SetStatus(c->GetAttr("N", &n_));
    if (c->HasAttr("use_nesterov")) c->SetStatus(c->GetAttr("use_nesterov", &use_nesterov_));
    bool update_slots = true;
    if (c->HasAttr("update_slots")) c->SetStatus(c->GetAttr("update_slots", &update_slots));
    if (!update_slots) c->SetStatus(errors::Unimplemented("ApplyAdagrad with update_slots=false"));
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    GpuDevice* gpu = GpuDeviceOf(ctx);
    std::vector<VarUpdateRequest> reqs;
    Status s = gpu ? Requests(ctx, gpu, &reqs) : ctx->status();
    if (s.ok() && !ctx->variables()) s = errors::Unavailable("no container actor holds variables on this device");
    if (!s.ok()) {
      ctx->SetStatus(s);
      done();
      return;
    }
    ctx->variables()->UpdateManyAndAnswer(
        std::move(reqs), [this, ctx, gpu, done = std::move(done)](std::vector<VarUpdateResponse>& answers) {
          // Members whose update was refused (or whose buffers are not this
          // GPU's) are left out and the first such error fails the node;
          // the others are launched all the same: a member given a new
          // buffer (copy on write) must get its values before anyone reads it.
          Status st;
          try {
            st = Launch(ctx, gpu, answers);
          } catch (...) {  // no memory for the plan: the node fails, the step ends
            st = CurrentExceptionStatus("the fused update " + name());
          }
          if (st.ok()) {
            for (int i = 0; i < n_; ++i) ctx->set_output(i, ctx->input(i));  // the references, updated
          } else {
            ctx->SetStatus(st);
          }
          done();
        });
  }

 private:
  Status Requests(OpKernelContext* ctx, GpuDevice* gpu, std::vector<VarUpdateRequest>* reqs) const {
    for (int m = 0; m < n_; ++m) {
      VarUpdateRequest r;
      r.kind = static_cast<int32_t>(spec_.kind);
      r.use_nesterov = use_nesterov_;
      r.on_device = true;
      r.capturing = gpu->capturing();
      for (int v = 0; v < spec_.num_vars; ++v) {
        const std::string* h;
        AF_RETURN_IF_ERROR(RefTensorHandle(ctx->input(FusedApplyInput(spec_, n_, v, m)), &h));
        r.handles.push_back(*h);
      }
      for (int a = 0; a < spec_.num_args; ++a) {
        const Tensor& t = ctx->input(FusedApplyInput(spec_, n_, spec_.num_vars + a, m));
        if (t.NumElements() > 0 && t.InHostMemory())
          return errors::Internal("argument ", a, " of member ", m, " of node '", name(), "' (op '", type_string(),
                                  "') on ", gpu->short_name(), " is in host memory; GPU kernels take float tensors "
                                  "in device memory");
        r.args.push_back(t);
      }
      reqs->push_back(std::move(r));
    }
    return Status::OK();
  }

  // Enqueues the updates of the members the container answered from their
  // sources into the buffers it chose, in as few launches as the plan
  // needs; returns the first member's error (after launching the others).
  Status Launch(OpKernelContext* ctx, GpuDevice* gpu, std::vector<VarUpdateResponse>& answers) const {
    Status first_error;
    auto fail = [&](int m, const Status& s) {
      if (first_error.ok()) first_error = s.WithContext("member " + std::to_string(m) + " of " + name());
    };
    std::vector<int64_t> sizes(static_cast<size_t>(n_), 0);  // 0: not launched
    std::vector<std::vector<const void*>> writes(static_cast<size_t>(n_)), reads(static_cast<size_t>(n_));
    for (int m = 0; m < n_; ++m) {
      VarUpdateResponse& r = answers[static_cast<size_t>(m)];
      if (!r.status.ok()) {
        fail(m, r.status);
        continue;
      }
      if (static_cast<int>(r.vars.size()) != spec_.num_vars || r.sources.size() != r.vars.size()) {
        fail(m, errors::Internal("the container answered ", r.vars.size(), " variables, not ", spec_.num_vars));
        continue;
      }
      const int64_t n = r.vars[0].NumElements();
      const Tensor& grad = ctx->input(FusedApplyInput(spec_, n_, spec_.num_vars + spec_.grad_arg, m));
      bool ok = grad.NumElements() == n;
      if (!ok) fail(m, errors::InvalidArgument("its gradient has ", grad.NumElements(), " elements, its variable ", n));
      for (int v = 0; v < spec_.num_vars && ok; ++v) {
        for (const Tensor* t : {&r.sources[static_cast<size_t>(v)], &r.vars[static_cast<size_t>(v)]}) {
          if (t->dtype() != DT_FLOAT || t->NumElements() != n ||
              (n > 0 && (t->InHostMemory() || t->buffer()->allocator() != gpu->home_allocator()))) {
            fail(m, errors::FailedPrecondition("a variable it updates is not float32 in the memory of ",
                                               gpu->short_name(), " (placed on another device by another graph?)"));
            ok = false;
            break;
          }
        }
      }
      if (!ok) continue;
      for (int v = 0; v < spec_.num_vars; ++v) {
        writes[static_cast<size_t>(m)].push_back(r.vars[static_cast<size_t>(v)].raw_data());
        reads[static_cast<size_t>(m)].push_back(r.sources[static_cast<size_t>(v)].raw_data());
      }
      sizes[static_cast<size_t>(m)] = n;
    }
    AF_RETURN_IF_ERROR(LaunchPlan(ctx, gpu, answers, PlanMultiTensorLaunches(sizes, writes, reads), sizes));
    return first_error;
  }

  Status LaunchPlan(OpKernelContext* ctx, GpuDevice* gpu, std::vector<VarUpdateResponse>& answers,
                    const std::vector<MultiTensorLaunch>& plan, const std::vector<int64_t>& sizes) const {
    if (plan.empty()) return Status::OK();
    AF_RETURN_IF_ERROR(gpu->Activate());
    Scalars scalars{};
    scalars.nesterov = use_nesterov_;
    for (int a = 0, k = 0; a < spec_.num_args; ++a)
      if (a != spec_.grad_arg) scalars.p[k++] = ctx->input(FusedApplyInput(spec_, n_, spec_.num_vars + a, 0)).data<float>();
    for (const MultiTensorLaunch& launch : plan) {
      MultiArgs args;
      std::memset(&args, 0, sizeof(args));
      for (size_t j = 0; j < launch.members.size(); ++j) {
        const int m = launch.members[j];
        VarUpdateResponse& r = answers[static_cast<size_t>(m)];
        for (int v = 0; v < spec_.num_vars; ++v) {
          args.src[v][j] = r.sources[static_cast<size_t>(v)].data<float>();
          args.dst[v][j] = r.vars[static_cast<size_t>(v)].data<float>();
        }
        args.grad[j] = ctx->input(FusedApplyInput(spec_, n_, spec_.num_vars + spec_.grad_arg, m)).data<float>();
        args.n[j] = sizes[static_cast<size_t>(m)];
      }
      std::memcpy(args.block_member, launch.block_member.data(), launch.block_member.size());
      std::memcpy(args.block_chunk, launch.block_chunk.data(), launch.block_chunk.size() * sizeof(int32_t));
      LaunchKind(spec_.kind, gpu->compute_stream(), static_cast<unsigned>(launch.block_member.size()), args, scalars);
      AF_RETURN_IF_ERROR(LaunchStatus(*this));
    }
    return Status::OK();
  }

  const FusedApplySpec& spec_;
  int n_ = 0;
  bool use_nesterov_ = false;
};

#define AF_FUSED_GPU_KERNEL(OP)                                                                         \
  struct FusedGpu##OP : FusedApplyGpu {                                                                 \
    explicit FusedGpu##OP(OpKernelConstruction* c) : FusedApplyGpu(c, *FindFusedApplySpec(#OP)) {}      \
  };                                                                                                    \
  AF_REGISTER_KERNEL(KernelDefBuilder("_Fused" #OP).Device(DEVICE_GPU).TypeConstraint<float>("T"), FusedGpu##OP)

AF_FUSED_GPU_KERNEL(ApplyGradientDescent);
AF_FUSED_GPU_KERNEL(ApplyMomentum);
AF_FUSED_GPU_KERNEL(ApplyAdam);
AF_FUSED_GPU_KERNEL(ApplyAdagrad);
AF_FUSED_GPU_KERNEL(ApplyRMSProp);

}  // namespace
}  // namespace actorflow
