// The fused optimizer updates (ops/state/fused_apply.hpp) and their CPU
// kernel: the N members' updates start side by side, each the request its
// Apply* kernel would send (VariableAccess::Update, with the node's
// use_locking), so results equal the unfused nodes' bit for bit; the node is
// done when all are.
#include <atomic>
#include <memory>
#include <mutex>

#include "actorflow/core/exception_status.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"
#include "actorflow/ops/state/fused_apply.hpp"
#include "actorflow/ops/state/variable_ops.hpp"

namespace actorflow {

namespace {

constexpr FusedApplySpec kSpecs[] = {
    {"ApplyGradientDescent", "_FusedApplyGradientDescent", VarUpdateKind::kGradientDescent, 1, 2, 1},
    {"ApplyMomentum", "_FusedApplyMomentum", VarUpdateKind::kMomentum, 2, 3, 1},
    {"ApplyAdam", "_FusedApplyAdam", VarUpdateKind::kAdam, 3, 7, 6},
    {"ApplyAdagrad", "_FusedApplyAdagrad", VarUpdateKind::kAdagrad, 2, 2, 1},
    {"ApplyRMSProp", "_FusedApplyRMSProp", VarUpdateKind::kRMSProp, 3, 5, 4},
};

}  // namespace

const FusedApplySpec* FindFusedApplySpec(const std::string& op) {
  for (const FusedApplySpec& s : kSpecs)
    if (op == s.op || op == s.fused_op) return &s;
  return nullptr;
}

bool FusedApplyPerVariable(const FusedApplySpec& spec, int input) {
  return input < spec.num_vars || input == spec.num_vars + spec.grad_arg;
}

int FusedApplyInput(const FusedApplySpec& spec, int n, int input, int member) {
  int index = 0;
  for (int i = 0; i < input; ++i) index += FusedApplyPerVariable(spec, i) ? n : 1;
  return index + (FusedApplyPerVariable(spec, input) ? member : 0);
}

namespace {

// Every output i is the shape of variable list 0's element i; every
// per-variable input must agree with it.
Status FusedShape(InferenceContext* c, const FusedApplySpec& spec) {
  const int n = c->num_outputs();
  for (int m = 0; m < n; ++m) {
    PartialTensorShape var = c->input(m);
    for (int in = 1; in < spec.num_vars + spec.num_args; ++in) {
      if (!FusedApplyPerVariable(spec, in)) continue;
      const PartialTensorShape& s = c->input(FusedApplyInput(spec, n, in, m));
      if (!var.unknown_rank() && !s.unknown_rank() && !var.IsCompatibleWith(s))
        return c->Error("member ", m, ": input ", in, " has shape ", s.DebugString(), ", the variable ",
                        var.DebugString());
      if (var.unknown_rank()) var = s;
    }
    c->set_output(m, var);
  }
  return Status::OK();
}

#define AF_FUSED_SHAPE(OP) [](InferenceContext* c) { return FusedShape(c, *FindFusedApplySpec(OP)); }

AF_REGISTER_OP("_FusedApplyGradientDescent")
    .Input("var: Ref(N * T)")
    .Input("alpha: T")
    .Input("delta: N * T")
    .Output("out: Ref(N * T)")
    .Attr("N: int >= 1")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetShapeFn(AF_FUSED_SHAPE("ApplyGradientDescent"))
    .Doc("N ApplyGradientDescent at once (graph/fuse_updates.hpp): var[i] -= alpha * delta[i].");

AF_REGISTER_OP("_FusedApplyMomentum")
    .Input("var: Ref(N * T)")
    .Input("accum: Ref(N * T)")
    .Input("lr: T")
    .Input("grad: N * T")
    .Input("momentum: T")
    .Output("out: Ref(N * T)")
    .Attr("N: int >= 1")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn(AF_FUSED_SHAPE("ApplyMomentum"))
    .Doc("N ApplyMomentum at once (graph/fuse_updates.hpp).");

AF_REGISTER_OP("_FusedApplyAdam")
    .Input("var: Ref(N * T)")
    .Input("m: Ref(N * T)")
    .Input("v: Ref(N * T)")
    .Input("beta1_power: T")
    .Input("beta2_power: T")
    .Input("lr: T")
    .Input("beta1: T")
    .Input("beta2: T")
    .Input("epsilon: T")
    .Input("grad: N * T")
    .Output("out: Ref(N * T)")
    .Attr("N: int >= 1")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetShapeFn(AF_FUSED_SHAPE("ApplyAdam"))
    .Doc("N ApplyAdam at once (graph/fuse_updates.hpp).");

AF_REGISTER_OP("_FusedApplyAdagrad")
    .Input("var: Ref(N * T)")
    .Input("accum: Ref(N * T)")
    .Input("lr: T")
    .Input("grad: N * T")
    .Output("out: Ref(N * T)")
    .Attr("N: int >= 1")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetShapeFn(AF_FUSED_SHAPE("ApplyAdagrad"))
    .Doc("N ApplyAdagrad at once (graph/fuse_updates.hpp).");

AF_REGISTER_OP("_FusedApplyRMSProp")
    .Input("var: Ref(N * T)")
    .Input("ms: Ref(N * T)")
    .Input("mom: Ref(N * T)")
    .Input("lr: T")
    .Input("rho: T")
    .Input("momentum: T")
    .Input("epsilon: T")
    .Input("grad: N * T")
    .Output("out: Ref(N * T)")
    .Attr("N: int >= 1")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetShapeFn(AF_FUSED_SHAPE("ApplyRMSProp"))
    .Doc("N ApplyRMSProp at once (graph/fuse_updates.hpp).");

// What the N updates share while they run: the first error, and how many are left.
struct FusedRun {
  explicit FusedRun(int n) : left(n) {}
  std::atomic<int> left;
  std::mutex mu;
  Status status;  // guarded by mu
};

class FusedApplyCpu : public VariableUpdateKernel {
 public:
  FusedApplyCpu(OpKernelConstruction* c, const FusedApplySpec& spec)
      : VariableUpdateKernel(c), spec_(spec), request_(UpdateRequestFromAttrs(c, spec.kind, true)) {
    c->SetStatus(c->GetAttr("N", &n_));
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    VariableAccess* access = ctx->variables();
    if (!access) {
      ctx->SetStatus(errors::Unavailable("no container actor holds variables on this device"));
      done();
      return;
    }
    std::vector<VarUpdateRequest> reqs(static_cast<size_t>(n_), request_);
    for (int m = 0; m < n_; ++m) {
      Status s = Request(ctx, m, &reqs[static_cast<size_t>(m)]);
      if (!s.ok()) {
        ctx->SetStatus(s.WithContext("member " + std::to_string(m) + " of " + name()));
        done();
        return;
      }
    }
    auto run = std::make_shared<FusedRun>(n_);
    for (int m = 0; m < n_; ++m) {
      access->Update(std::move(reqs[static_cast<size_t>(m)]), use_locking_, [this, ctx, run, done, m](const Status& s) {
        if (!s.ok()) {
          std::lock_guard<std::mutex> l(run->mu);
          if (run->status.ok()) run->status = s.WithContext("member " + std::to_string(m) + " of " + name());
        }
        if (run->left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        try {  // out of memory here fails the step; the kernel still finishes
          if (run->status.ok()) {
            for (int i = 0; i < n_; ++i) ctx->set_output(i, ctx->input(i));  // the references, updated
          } else {
            ctx->SetStatus(run->status);
          }
        } catch (...) {
          ctx->SetStatus(CurrentExceptionStatus("fused variable update"));
        }
        done();
      });
    }
  }

 private:
  // Member m's request: its variables' handles and its arguments, as its Apply* kernel's.
  Status Request(OpKernelContext* ctx, int m, VarUpdateRequest* req) const {
    for (int v = 0; v < spec_.num_vars; ++v) {
      const std::string* h;
      AF_RETURN_IF_ERROR(RefTensorHandle(ctx->input(FusedApplyInput(spec_, n_, v, m)), &h));
      req->handles.push_back(*h);
    }
    for (int a = 0; a < spec_.num_args; ++a) req->args.push_back(ctx->input(FusedApplyInput(spec_, n_, spec_.num_vars + a, m)));
    return Status::OK();
  }

  const FusedApplySpec& spec_;
  const VarUpdateRequest request_;  // kind and attrs
  int n_ = 0;
};

#define AF_FUSED_APPLY_KERNEL(OP)                                                                           \
  struct Fused##OP##Cpu : FusedApplyCpu {                                                                   \
    explicit Fused##OP##Cpu(OpKernelConstruction* c) : FusedApplyCpu(c, *FindFusedApplySpec(#OP)) {}       \
  };                                                                                                        \
  AF_REGISTER_KERNEL(KernelDefBuilder("_Fused" #OP).Device(DEVICE_CPU).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE}), \
                     Fused##OP##Cpu)

AF_FUSED_APPLY_KERNEL(ApplyGradientDescent);
AF_FUSED_APPLY_KERNEL(ApplyMomentum);
AF_FUSED_APPLY_KERNEL(ApplyAdam);
AF_FUSED_APPLY_KERNEL(ApplyAdagrad);
AF_FUSED_APPLY_KERNEL(ApplyRMSProp);

AF_REGISTER_NO_GRADIENT("_FusedApplyGradientDescent");
AF_REGISTER_NO_GRADIENT("_FusedApplyMomentum");
AF_REGISTER_NO_GRADIENT("_FusedApplyAdam");
AF_REGISTER_NO_GRADIENT("_FusedApplyAdagrad");
AF_REGISTER_NO_GRADIENT("_FusedApplyRMSProp");

}  // namespace
}  // namespace actorflow
