// Variables with TensorFlow 1.x's ref semantics: VariableV2 outputs a
// reference to a variable held by the container actor; Assign, AssignAdd and
// AssignSub change it there and output the same reference; any op taking the
// reference by value (Identity, MatMul, a fetch) reads the variable when it
// runs. IsVariableInitialized asks without reading; CountUpTo increments a
// counter variable up to a limit (the epoch counter of input producers).
#include "actorflow/core/exception_status.hpp"
#include "actorflow/core/resource_handle.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"
#include "actorflow/ops/state/variable_ops.hpp"
#include "actorflow/ops/state/variable_access.hpp"

namespace actorflow {

bool UseLockingAttr(OpKernelConstruction* c) {
  bool use_locking = true;
  if (c->HasAttr("use_locking")) c->SetStatus(c->GetAttr("use_locking", &use_locking));
  return use_locking;
}

VariableUpdateKernel::VariableUpdateKernel(OpKernelConstruction* c) : AsyncOpKernel(c), use_locking_(UseLockingAttr(c)) {}

Status VariableUpdateKernel::Start(OpKernelContext* ctx, int num_refs, VarUpdateRequest req, DoneCallback done) const {
  const std::string* handles[3];  // in the inputs; an update names at most 3 variables
  if (num_refs < 1 || num_refs > 3) return errors::Internal("an update of ", num_refs, " variables");
  for (int i = 0; i < num_refs; ++i) AF_RETURN_IF_ERROR(RefTensorHandle(ctx->input(i), &handles[i]));
  VariableAccess* vars = ctx->variables();
  if (!vars) return errors::Unavailable("no container actor holds variables on this device");
  UpdateVariables(vars, handles, static_cast<size_t>(num_refs), std::move(req), use_locking_,
                  [ctx, done = std::move(done)](const Status& s) {
                    try {  // out of memory here fails the step; the kernel still finishes
                      if (s.ok()) ctx->set_output(0, ctx->input(0));  // the reference, now to the updated value
                      else ctx->SetStatus(s);
                    } catch (...) {
                      ctx->SetStatus(CurrentExceptionStatus("variable update"));
                    }
                    done();
                  });
  return Status::OK();
}

ResourceHandle DeclaredVariableHandle(OpKernelConstruction* c) {
  ResourceHandle h;
  if (c->device()) h.device = c->device()->name();
  c->SetStatus(c->GetAttr("container", &h.container));
  c->SetStatus(c->GetAttr("shared_name", &h.name));
  c->SetStatus(c->GetAttr("dtype", &h.dtype));
  c->SetStatus(c->GetAttr("shape", &h.shape));
  if (h.container.empty()) h.container = kDefaultContainer;
  if (h.name.empty()) h.name = c->def().name();
  return h;
}

VarUpdateRequest UpdateRequestFromAttrs(OpKernelConstruction* c, VarUpdateKind kind, bool validate_shape) {
  VarUpdateRequest req;
  req.kind = static_cast<int32_t>(kind);
  req.validate_shape = validate_shape;
  if (c->HasAttr("use_nesterov")) c->SetStatus(c->GetAttr("use_nesterov", &req.use_nesterov));
  if (c->HasAttr("validate_shape")) c->SetStatus(c->GetAttr("validate_shape", &req.validate_shape));
  bool update_slots = true;
  if (c->HasAttr("update_slots")) c->SetStatus(c->GetAttr("update_slots", &update_slots));
  if (!update_slots) c->SetStatus(errors::Unimplemented(c->def().op(), " with update_slots=false"));
  return req;
}

Status VariableUpdateKernel::Handles(OpKernelContext* ctx, int n, std::vector<std::string>* out) {
  out->reserve(out->size() + static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const std::string* h;
    AF_RETURN_IF_ERROR(RefTensorHandle(ctx->input(i), &h));
    out->push_back(*h);
  }
  return Status::OK();
}

namespace {

AF_REGISTER_OP("VariableV2")
    .Output("ref: Ref(dtype)")
    .Attr("shape: shape")
    .Attr("dtype: type")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ShapeAttr)
    .Doc("A reference to the variable (container, shared_name or the node's name), held by the container actor.");

class VariableV2Op : public OpKernel {
 public:
  explicit VariableV2Op(OpKernelConstruction* c) : OpKernel(c) {
    ref_ = MakeRefTensor(DeclaredVariableHandle(c));  // built once, shared by every step
  }
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ref_); }

 private:
  Tensor ref_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("VariableV2").Device(DEVICE_CPU), VariableV2Op);
// On a GPU: the reference is the same handle in host memory; a float32
// variable's value lives in device memory (ops/state/variable_ops_gpu.cu).
AF_REGISTER_KERNEL(KernelDefBuilder("VariableV2").Device(DEVICE_GPU).TypeConstraint<float>("dtype"), VariableV2Op);

// Assign's output has the value's shape when validate_shape is false.
Status AssignShape(InferenceContext* c) {
  bool validate = true;
  AF_RETURN_IF_ERROR(c->GetAttr("validate_shape", &validate));
  if (!validate) {
    c->set_output(0, c->input(1));
    return Status::OK();
  }
  const PartialTensorShape& ref = c->input(0);
  const PartialTensorShape& value = c->input(1);
  if (!ref.unknown_rank() && !value.unknown_rank() && !ref.IsCompatibleWith(value))
    return c->Error("Assign requires shapes of both tensors to match. lhs shape= ", ref.DebugString(),
                    " rhs shape= ", value.DebugString());
  c->set_output(0, ref.unknown_rank() ? value : ref);
  return Status::OK();
}

Status SameShapes(InferenceContext* c) {
  const PartialTensorShape& ref = c->input(0);
  const PartialTensorShape& value = c->input(1);
  if (!ref.unknown_rank() && !value.unknown_rank() && !ref.IsCompatibleWith(value))
    return c->Error("shapes of the variable ", ref.DebugString(), " and the value ", value.DebugString(),
                    " differ");
  c->set_output(0, ref);
  return Status::OK();
}

AF_REGISTER_OP("Assign")
    .Input("ref: Ref(T)")
    .Input("value: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: type")
    .Attr("validate_shape: bool = true")
    .Attr("use_locking: bool = true")
    .SetAllowsUninitializedInput()
    .SetShapeFn(AssignShape)
    .Doc("Sets the variable to value, always whole (use_locking=false is taken as true).");

AF_REGISTER_OP("AssignAdd")
    .Input("ref: Ref(T)")
    .Input("value: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: {float, double, int32, int64}")
    .Attr("use_locking: bool = false")
    .SetShapeFn(SameShapes)
    .Doc("Adds value to the variable; with use_locking=false it may race other updates of the variable.");

AF_REGISTER_OP("AssignSub")
    .Input("ref: Ref(T)")
    .Input("value: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: {float, double, int32, int64}")
    .Attr("use_locking: bool = false")
    .SetShapeFn(SameShapes)
    .Doc("Subtracts value from the variable; with use_locking=false it may race other updates of the variable.");

class AssignOp : public VariableUpdateKernel {
 public:
  AssignOp(OpKernelConstruction* c, VarUpdateKind kind) : VariableUpdateKernel(c), kind_(kind) {
    if (c->HasAttr("validate_shape")) c->SetStatus(c->GetAttr("validate_shape", &validate_shape_));
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    VarUpdateRequest req;
    req.kind = static_cast<int32_t>(kind_);
    req.validate_shape = validate_shape_;
    req.args.push_back(ctx->input(1));
    Status s = Start(ctx, 1, std::move(req), done);
    if (!s.ok()) {
      ctx->SetStatus(s);
      done();
    }
  }

 private:
  VarUpdateKind kind_;
  bool validate_shape_ = true;
};

struct AssignKernel : AssignOp {
  explicit AssignKernel(OpKernelConstruction* c) : AssignOp(c, VarUpdateKind::kAssign) {}
};
struct AssignAddKernel : AssignOp {
  explicit AssignAddKernel(OpKernelConstruction* c) : AssignOp(c, VarUpdateKind::kAssignAdd) {}
};
struct AssignSubKernel : AssignOp {
  explicit AssignSubKernel(OpKernelConstruction* c) : AssignOp(c, VarUpdateKind::kAssignSub) {}
};
AF_REGISTER_KERNEL(KernelDefBuilder("Assign").Device(DEVICE_CPU), AssignKernel);
AF_REGISTER_KERNEL(KernelDefBuilder("AssignAdd").Device(DEVICE_CPU), AssignAddKernel);
AF_REGISTER_KERNEL(KernelDefBuilder("AssignSub").Device(DEVICE_CPU), AssignSubKernel);

AF_REGISTER_OP("IsVariableInitialized")
    .Input("ref: Ref(dtype)")
    .Output("is_initialized: bool")
    .Attr("dtype: type")
    .SetAllowsUninitializedInput()
    .SetShapeFn(shape_fns::Scalar)
    .Doc("Whether the variable has a value.");

class IsVariableInitializedOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const std::string* handle;
    Status s = RefTensorHandle(ctx->input(0), &handle);
    if (s.ok() && !ctx->variables()) s = errors::Unavailable("no container actor holds variables on this device");
    if (!s.ok()) {
      ctx->SetStatus(s);
      done();
      return;
    }
    VarReadRequest req;
    req.handles.push_back(*handle);
    req.check_only = true;
    ctx->variables()->Read(std::move(req), [this, ctx, done = std::move(done)](VarReadResponse& r) {
      try {  // out of memory here fails the step; the kernel still finishes
        if (r.status.ok() && r.values.size() == 1) ctx->set_output(0, std::move(r.values[0]));
        else ctx->SetStatus(r.status.ok() ? errors::Internal("no answer for the variable") : r.status);
      } catch (...) {
        ctx->SetStatus(CurrentExceptionStatus(name()));
      }
      done();
    });
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("IsVariableInitialized").Device(DEVICE_CPU), IsVariableInitializedOp);
AF_REGISTER_KERNEL(KernelDefBuilder("IsVariableInitialized").Device(DEVICE_GPU).TypeConstraint<float>("dtype"),
                   IsVariableInitializedOp);

// CountUpTo shapes: the variable is a scalar.
Status CountUpToShape(InferenceContext* c) {
  const PartialTensorShape& ref = c->input(0);
  if (!ref.unknown_rank() && ref.dims() != 0)
    return c->Error("CountUpTo needs a scalar variable, got shape ", ref.DebugString());
  c->set_output(0, PartialTensorShape::Scalar());
  return Status::OK();
}

AF_REGISTER_OP("CountUpTo")
    .Input("ref: Ref(T)")
    .Output("output: T")
    .Attr("limit: int")
    .Attr("T: {int32, int64}")
    .SetShapeFn(CountUpToShape)
    .Doc("Increments the scalar variable until it reaches limit; outputs its value before the increment. "
         "OutOfRange ('Reached limit of N') once it is there.");

class CountUpToOp : public VariableUpdateKernel {
 public:
  explicit CountUpToOp(OpKernelConstruction* c) : VariableUpdateKernel(c) {
    c->SetStatus(c->GetAttr("limit", &limit_));
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    VarUpdateRequest req;
    req.kind = static_cast<int32_t>(VarUpdateKind::kCountUpTo);
    Status s = Handles(ctx, 1, &req.handles);
    if (s.ok() && !ctx->variables()) s = errors::Unavailable("no container actor holds variables on this device");
    if (!s.ok()) {
      ctx->SetStatus(s);
      done();
      return;
    }
    req.args.push_back(Tensor::Scalar<int64_t>(limit_));
    ctx->variables()->UpdateAndAnswer(std::move(req), [this, ctx, done = std::move(done)](VarUpdateResponse& r) {
      try {  // out of memory here fails the step; the kernel still finishes
        if (!r.status.ok()) ctx->SetStatus(r.status);
        else if (!r.value.IsInitialized()) ctx->SetStatus(errors::Internal("CountUpTo: no value in the answer"));
        else ctx->set_output(0, std::move(r.value));
      } catch (...) {
        ctx->SetStatus(CurrentExceptionStatus(name()));
      }
      done();
    });
  }

 private:
  int64_t limit_ = 0;
};
AF_REGISTER_KERNEL(KernelDefBuilder("CountUpTo").Device(DEVICE_CPU), CountUpToOp);

// State changes and random draws have no gradient.
AF_REGISTER_NO_GRADIENT("VariableV2");
AF_REGISTER_NO_GRADIENT("Assign");
AF_REGISTER_NO_GRADIENT("AssignAdd");
AF_REGISTER_NO_GRADIENT("AssignSub");
AF_REGISTER_NO_GRADIENT("IsVariableInitialized");
AF_REGISTER_NO_GRADIENT("CountUpTo");

}  // namespace
}  // namespace actorflow
