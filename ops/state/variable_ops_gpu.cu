// Variables on a GPU, float32: Assign, AssignAdd, AssignSub and the
// optimizers' ApplyGradientDescent, ApplyMomentum (Nesterov too), ApplyAdam,
// ApplyAdagrad and ApplyRMSProp. (VariableV2 and IsVariableInitialized share
// the CPU's kernels: a reference is a handle in host memory.)
//
// The container actor (actors/container_actor.hpp) still owns the variable,
// orders its updates and checks them, and a GPU variable's tensor is device
// memory. An update sends the container an on_device request
// (net/variable_service.hpp): the container checks it as it checks a host
// update (initialized, dtypes, shapes) and answers the buffers to write and
// the values to read: the variable's own buffer (in place) when no one else
// holds it, else a new buffer of the GPU's memory (copy on write, as on the
// host: a step that read the old value keeps it). The kernel computes on the
// compute stream, element by element with the formulas of
// ops/state/apply_formulas.hpp. Answers come back in the container's order
// and the kernels are enqueued as they come, so updates run on the GPU in the
// order the container applied them, each whole before the next.
//
// Assign copies the value into a new device buffer (on the stream) and hands
// it to the container, which takes it as the variable's value: a step still
// reading the old value keeps the old buffer, as on the host.
#include "actorflow/ops/gpu/elementwise.cuh"
#include "actorflow/ops/gpu/gpu_kernel.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/state/apply_formulas.hpp"
#include "actorflow/ops/state/variable_access.hpp"
#include "actorflow/ops/state/variable_ops.hpp"

namespace actorflow {
namespace {

// Each kernel reads the variables' old values (src) and writes the new ones
// (dst): the same buffers when updated in place, a new one where a reader
// held the old (copy on write). One thread reads and writes each element.
struct AddSubF {
  float sign;
  __device__ float operator()(float v, float value) const { return v + sign * value; }
};

// Plain SGD, the update most steps run: four floats per access (LaunchMap2).
struct GradientDescentF {
  const float* alpha;  // in device memory; every thread reads the same float (cached)
  __device__ float operator()(float v, float delta) const {
    apply::GradientDescent(v, *alpha, delta);
    return v;
  }
};

struct Slots {  // up to three variables: old values and new buffers
  const float* src[3];
  float* dst[3];
};

__global__ void MomentumKernel(Slots s, const float* lr, const float* grad, const float* momentum, bool nesterov,
                               int64_t n) {
  const float l = *lr, mo = *momentum;
  AF_GPU_GRID_STRIDE(i, n) {
    float v = s.src[0][i], accum = s.src[1][i];
    apply::Momentum(v, accum, l, grad[i], mo, nesterov);
    s.dst[0][i] = v;
    s.dst[1][i] = accum;
  }
}

__global__ void AdamKernel(Slots s, const float* beta1_power, const float* beta2_power, const float* lr,
                           const float* beta1, const float* beta2, const float* epsilon, const float* grad,
                           bool nesterov, int64_t n) {
  const float alpha = apply::AdamAlpha(*lr, *beta1_power, *beta2_power);
  const float b1 = *beta1, b2 = *beta2, eps = *epsilon;
  AF_GPU_GRID_STRIDE(i, n) {
    float v = s.src[0][i], m = s.src[1][i], v2 = s.src[2][i];
    apply::Adam(v, m, v2, alpha, b1, b2, eps, grad[i], nesterov);
    s.dst[0][i] = v;
    s.dst[1][i] = m;
    s.dst[2][i] = v2;
  }
}

__global__ void AdagradKernel(Slots s, const float* lr, const float* grad, int64_t n) {
  const float l = *lr;
  AF_GPU_GRID_STRIDE(i, n) {
    float v = s.src[0][i], accum = s.src[1][i];
    apply::Adagrad(v, accum, l, grad[i]);
    s.dst[0][i] = v;
    s.dst[1][i] = accum;
  }
}

__global__ void RMSPropKernel(Slots s, const float* lr, const float* rho, const float* momentum,
                              const float* epsilon, const float* grad, int64_t n) {
  const float l = *lr, r = *rho, mo = *momentum, eps = *epsilon;
  AF_GPU_GRID_STRIDE(i, n) {
    float v = s.src[0][i], ms = s.src[1][i], mom = s.src[2][i];
    apply::RMSProp(v, ms, mom, l, r, mo, eps, grad[i]);
    s.dst[0][i] = v;
    s.dst[1][i] = ms;
    s.dst[2][i] = mom;
  }
}

// Inputs: `num_vars` references, then the arguments in VarUpdateKind's order.
class GpuVariableUpdateOp : public VariableUpdateKernel {
 public:
  GpuVariableUpdateOp(OpKernelConstruction* c, VarUpdateKind kind, int num_vars)
      : VariableUpdateKernel(c), kind_(kind), num_vars_(num_vars) {
    if (c->HasAttr("use_nesterov")) c->SetStatus(c->GetAttr("use_nesterov", &use_nesterov_));
    if (c->HasAttr("validate_shape")) c->SetStatus(c->GetAttr("validate_shape", &validate_shape_));
    bool update_slots = true;
    if (c->HasAttr("update_slots")) c->SetStatus(c->GetAttr("update_slots", &update_slots));
    if (!update_slots) c->SetStatus(errors::Unimplemented("ApplyAdagrad with update_slots=false"));
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    GpuDevice* gpu = GpuDeviceOf(ctx);
    VarUpdateRequest req;
    Status s = gpu ? Request(ctx, gpu, &req) : ctx->status();
    if (s.ok() && !ctx->variables()) s = errors::Unavailable("no container actor holds variables on this device");
    if (!s.ok()) {
      ctx->SetStatus(s);
      done();
      return;
    }
    ctx->variables()->UpdateAndAnswer(std::move(req), [this, ctx, gpu, done = std::move(done)](VarUpdateResponse& r) {
      Status st = r.status;
      if (st.ok() && kind_ != VarUpdateKind::kAssign) st = Launch(ctx, gpu, r.sources, r.vars);
      if (st.ok()) ctx->set_output(0, ctx->input(0));  // the reference, to the updated value
      else ctx->SetStatus(st);
      done();
    });
  }

 private:
  // The on_device request of this run.
  Status Request(OpKernelContext* ctx, GpuDevice* gpu, VarUpdateRequest* req) {
    VarUpdateRequest& r = *req;
    r.kind = static_cast<int32_t>(kind_);
    r.use_nesterov = use_nesterov_;
    r.validate_shape = validate_shape_;
    r.on_device = true;
    r.capturing = gpu->capturing();
    AF_RETURN_IF_ERROR(Handles(ctx, num_vars_, &r.handles));
    for (int i = num_vars_; i < ctx->num_inputs(); ++i) {
      const Tensor& t = ctx->input(i);
      if (t.NumElements() > 0 && t.InHostMemory())
        return errors::Internal("input ", i, " of node '", name(), "' (op '", type_string(), "') on ",
                                gpu->short_name(), " is in host memory; GPU kernels take float tensors in device "
                                "memory");
      r.args.push_back(t);
    }
    if (kind_ != VarUpdateKind::kAssign) return Status::OK();
    // The variable's own copy of the value, made on the stream before the
    // container takes it: anything reading the variable is enqueued later.
    const Tensor& value = r.args[0];
    Tensor copy;
    AF_RETURN_IF_ERROR(gpu->Activate());
    AF_RETURN_IF_ERROR(Tensor::Create(gpu->allocator(), DT_FLOAT, value.shape(), &copy)
                           .WithContext("the new value of the variable of " + name()));
    if (value.TotalBytes() > 0)
      AF_RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(copy.raw_data(), value.raw_data(), value.TotalBytes(),
                                                    cudaMemcpyDeviceToDevice, gpu->compute_stream()),
                                    gpu->short_name() + ": copying the value of " + name()));
    r.args[0] = std::move(copy);
    return Status::OK();
  }

  // Enqueues the update of the variables from `src` (their values) into
  // `dst` (the container's answer) with the node's arguments (inputs
  // num_vars_...).
  Status Launch(OpKernelContext* ctx, GpuDevice* gpu, const std::vector<Tensor>& src, std::vector<Tensor>& dst) {
    if (static_cast<int>(dst.size()) != num_vars_ || src.size() != dst.size())
      return errors::Internal(name(), ": the container answered ", dst.size(), " variables, not ", num_vars_);
    const int64_t n = dst[0].NumElements();
    Slots slots{};
    for (int i = 0; i < num_vars_; ++i) {
      for (const Tensor* t : std::initializer_list<const Tensor*>{&src[i], &dst[i]}) {
        // Only this GPU's memory: a variable another graph placed elsewhere is not ours to touch.
        if (t->dtype() != DT_FLOAT || t->NumElements() != n ||
            (n > 0 && (t->InHostMemory() || t->buffer()->allocator() != gpu->home_allocator())))
          return errors::FailedPrecondition(name(), ": a variable it updates is not float32 in the memory of ",
                                            gpu->short_name(), " (placed on another device by another graph?)");
      }
      slots.src[i] = src[i].data<float>();
      slots.dst[i] = dst[i].data<float>();
    }
    if (n == 0) return Status::OK();
    AF_RETURN_IF_ERROR(gpu->Activate());
    auto arg = [&](int i) { return ctx->input(num_vars_ + i).data<float>(); };
    const unsigned blocks = GpuBlocks(n);
    cudaStream_t stream = gpu->compute_stream();
    switch (kind_) {
      case VarUpdateKind::kAssignAdd:
      case VarUpdateKind::kAssignSub:
        LaunchMap2(stream, slots.src[0], arg(0), slots.dst[0], n,
                   AddSubF{kind_ == VarUpdateKind::kAssignAdd ? 1.f : -1.f});
        break;
      case VarUpdateKind::kGradientDescent:
        LaunchMap2(stream, slots.src[0], arg(1), slots.dst[0], n, GradientDescentF{arg(0)});
        break;
      case VarUpdateKind::kMomentum:
        MomentumKernel<<<blocks, kGpuThreads, 0, stream>>>(slots, arg(0), arg(1), arg(2), use_nesterov_, n);
        break;
      case VarUpdateKind::kAdam:
        AdamKernel<<<blocks, kGpuThreads, 0, stream>>>(slots, arg(0), arg(1), arg(2), arg(3), arg(4), arg(5), arg(6),
                                                       use_nesterov_, n);
        break;
      case VarUpdateKind::kAdagrad:
        AdagradKernel<<<blocks, kGpuThreads, 0, stream>>>(slots, arg(0), arg(1), n);
        break;
      case VarUpdateKind::kRMSProp:
        RMSPropKernel<<<blocks, kGpuThreads, 0, stream>>>(slots, arg(0), arg(1), arg(2), arg(3), arg(4), n);
        break;
      default:
        return errors::Internal(name(), ": no GPU kernel for ", VarUpdateName(kind_));
    }
    return LaunchStatus(*this);
  }

  const VarUpdateKind kind_;
  const int num_vars_;
  bool use_nesterov_ = false;
  bool validate_shape_ = true;
};

#define AF_GPU_VARIABLE_KERNEL(OP, KIND, VARS)                                                    \
  struct Gpu##OP##Kernel : GpuVariableUpdateOp {                                                  \
    explicit Gpu##OP##Kernel(OpKernelConstruction* c) : GpuVariableUpdateOp(c, VarUpdateKind::KIND, VARS) {} \
  };                                                                                              \
  AF_REGISTER_KERNEL(KernelDefBuilder(#OP).Device(DEVICE_GPU).TypeConstraint<float>("T"), Gpu##OP##Kernel)

AF_GPU_VARIABLE_KERNEL(Assign, kAssign, 1);
AF_GPU_VARIABLE_KERNEL(AssignAdd, kAssignAdd, 1);
AF_GPU_VARIABLE_KERNEL(AssignSub, kAssignSub, 1);
AF_GPU_VARIABLE_KERNEL(ApplyGradientDescent, kGradientDescent, 1);
AF_GPU_VARIABLE_KERNEL(ApplyMomentum, kMomentum, 2);
AF_GPU_VARIABLE_KERNEL(ApplyAdam, kAdam, 3);
AF_GPU_VARIABLE_KERNEL(ApplyAdagrad, kAdagrad, 2);
AF_GPU_VARIABLE_KERNEL(ApplyRMSProp, kRMSProp, 3);

}  // namespace
}  // namespace actorflow
