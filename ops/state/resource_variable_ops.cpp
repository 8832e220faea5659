// Resource variables, TensorFlow 2's kind (and TF1's with
// use_resource=True): VarHandleOp outputs a DT_RESOURCE handle naming the
// variable, and the ops on the handle read or change it. They share the
// container actor (actors/container_actor.hpp) with the ref variables of
// variable_ops.cpp: a variable is named by (container, shared_name, or the
// node's name), so VarHandleOp "w" and VariableV2 "w" name the same variable,
// whichever kind of op made it.
//
//   VarHandleOp                        -> handle
//   ReadVariableOp(handle)             -> value (FailedPrecondition while uninitialized)
//   AssignVariableOp(handle, value)       AssignAddVariableOp, AssignSubVariableOp
//   VarIsInitializedOp(handle)         -> bool
//   ResourceGather(handle, indices)    -> rows of the value along axis 0
//   ResourceApplyGradientDescent, ResourceApplyMomentum, ResourceApplyAdam,
//   ResourceApplyAdagrad, ResourceApplyRMSProp: the optimizers' updates, applied
//   whole by the container actor (ops/state/variable_updates.cpp)
#include "actorflow/core/exception_status.hpp"
#include "actorflow/core/resource_handle.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/ops/array/array_util.hpp"
#include "actorflow/ops/array/copy_util.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"
#include "actorflow/ops/state/variable_access.hpp"
#include "actorflow/ops/state/variable_ops.hpp"

namespace actorflow {
namespace {

/// The encoded handle in input `i`, a DT_RESOURCE scalar (in the input).
Status HandleInput(OpKernelContext* ctx, int i, const std::string** out) {
  const Tensor& t = ctx->input(i);
  if (!t.IsInitialized() || t.dtype() != DT_RESOURCE || t.NumElements() != 1)
    return errors::InvalidArgument("input ", i, " of ", ctx->op_kernel().type_string(), " node '",
                                   ctx->op_kernel().name(), "' is not a variable's resource handle");
  *out = &t.data<std::string>()[0];
  return Status::OK();
}

/// HandleInput, copied.
Status HandleInput(OpKernelContext* ctx, int i, std::string* out) {
  const std::string* h = nullptr;
  AF_RETURN_IF_ERROR(HandleInput(ctx, i, &h));
  *out = *h;
  return Status::OK();
}

VariableAccess* Variables(OpKernelContext* ctx, Status* s) {
  VariableAccess* vars = ctx->variables();
  if (!vars) *s = errors::Unavailable("no container actor holds variables on this device");
  return vars;
}

// Reads the variable of input 0 and calls then(value) on the device actor's thread.
template <class Then>
void ReadVariable(OpKernelContext* ctx, DataType dtype, AsyncOpKernel::DoneCallback done, Then then) {
  const std::string* handle = nullptr;  // in input 0
  Status s = HandleInput(ctx, 0, &handle);
  VariableAccess* vars = s.ok() ? Variables(ctx, &s) : nullptr;
  AF_REQUIRES_ASYNC(ctx, s.ok(), s, done);
  auto finish = [ctx, dtype, then](Status st, const Tensor* values, size_t n) {
    try {
      if (st.ok() && n != 1) st = errors::Internal("a read of one variable answered ", n);
      if (st.ok() && values[0].dtype() != dtype)
        st = errors::InvalidArgument("trying to read variable with wrong dtype: expected ", DataTypeString(dtype),
                                     ", the variable holds ", DataTypeString(values[0].dtype()));
      if (st.ok()) st = then(values[0]);
      if (!st.ok()) ctx->SetStatus(st);
    } catch (...) {
      ctx->SetStatus(CurrentExceptionStatus("reading a variable"));
    }
  };
  Tensor value;
  Status now;
  if (vars->ReadNow(&handle, 1, &value, &now)) {  // read already: no callback to make
    finish(now, &value, 1);
    done();
    return;
  }
  VarReadRequest req;
  req.handles.push_back(*handle);
  vars->Read(std::move(req), [finish, done = std::move(done)](VarReadResponse& r) {
    finish(r.status, r.values.data(), r.values.size());
    done();
  });
}

// ---------------------------------------------------------------------------
// The handle.

AF_REGISTER_OP("VarHandleOp")
    .Output("resource: resource")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("debug_name: string = ''")
    .Attr("dtype: type")
    .Attr("shape: shape")
    .Attr("allowed_devices: list(string) = []")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Scalar)
    .Doc("A handle to the variable (container, shared_name or the node's name), held by the container actor.");

class VarHandleOp : public OpKernel {
 public:
  explicit VarHandleOp(OpKernelConstruction* c) : OpKernel(c) {
    handle_ = Tensor(DT_RESOURCE, TensorShape{});  // built once, shared by every step
    handle_.scalar<std::string>() = DeclaredVariableHandle(c).Encode();
  }
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, handle_); }

 private:
  Tensor handle_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("VarHandleOp").Device(DEVICE_CPU), VarHandleOp);

// ---------------------------------------------------------------------------
// Reads.

AF_REGISTER_OP("ReadVariableOp")
    .Input("resource: resource")
    .Output("value: dtype")
    .Attr("dtype: type")
    .SetShapeFn(shape_fns::Unknown)
    .Doc("The variable's value.");

class ReadVariableOp : public AsyncOpKernel {
 public:
  explicit ReadVariableOp(OpKernelConstruction* c) : AsyncOpKernel(c) { c->SetStatus(c->GetAttr("dtype", &dtype_)); }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    ReadVariable(ctx, dtype_, std::move(done), [ctx](const Tensor& value) {
      ctx->set_output(0, value);  // shared: an update copies on write
      return Status::OK();
    });
  }

 private:
  DataType dtype_ = DT_INVALID;
};
AF_REGISTER_KERNEL(KernelDefBuilder("ReadVariableOp").Device(DEVICE_CPU), ReadVariableOp);

AF_REGISTER_OP("VarIsInitializedOp")
    .Input("resource: resource")
    .Output("is_initialized: bool")
    .SetShapeFn(shape_fns::Scalar)
    .Doc("Whether the variable has a value.");

class VarIsInitializedOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    VarReadRequest req;
    req.check_only = true;
    Status s = HandleInput(ctx, 0, &req.handles.emplace_back());
    VariableAccess* vars = s.ok() ? Variables(ctx, &s) : nullptr;
    AF_REQUIRES_ASYNC(ctx, s.ok(), s, done);
    vars->Read(std::move(req), [ctx, done = std::move(done)](VarReadResponse& r) {
      if (r.status.ok() && r.values.size() == 1) ctx->set_output(0, r.values[0]);
      else ctx->SetStatus(r.status.ok() ? errors::Internal("VarIsInitializedOp: no answer") : r.status);
      done();
    });
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("VarIsInitializedOp").Device(DEVICE_CPU), VarIsInitializedOp);

AF_REGISTER_OP("ResourceGather")
    .Input("resource: resource")
    .Input("indices: Tindices")
    .Output("output: dtype")
    .Attr("batch_dims: int = 0")
    .Attr("validate_indices: bool = true")
    .Attr("dtype: type")
    .Attr("Tindices: {int32, int64}")
    .SetShapeFn(shape_fns::Unknown)
    .Doc("Rows of the variable's value at indices (along axis 0): indices.shape + value.shape[1:].");

class ResourceGatherOp : public AsyncOpKernel {
 public:
  explicit ResourceGatherOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    c->SetStatus(c->GetAttr("dtype", &dtype_));
    c->SetStatus(c->GetAttr("batch_dims", &batch_dims_));
    if (batch_dims_ != 0) c->SetStatus(errors::Unimplemented("ResourceGather with batch_dims ", batch_dims_));
    c->SetStatus(ElemCopier::For(dtype_, "ResourceGather", &cp_));
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const ElemCopier cp = cp_;
    ReadVariable(ctx, dtype_, std::move(done), [ctx, cp](const Tensor& params) -> Status {
      if (params.dims() < 1) return errors::InvalidArgument("ResourceGather: the variable is a scalar");
      const std::vector<int64_t> indices = TensorToInt64s(ctx->input(1));
      const int64_t rows = params.dim_size(0);
      for (size_t i = 0; i < indices.size(); ++i)
        if (indices[i] < 0 || indices[i] >= rows)
          return errors::InvalidArgument("indices[", i, "] = ", indices[i], " is not in [0, ", rows, ")");
      std::vector<int64_t> dims = ctx->input(1).shape().dim_sizes();
      for (int d = 1; d < params.dims(); ++d) dims.push_back(params.dim_size(d));
      Tensor* out = nullptr;
      AF_RETURN_IF_ERROR(ctx->allocate_output(0, TensorShape(dims), &out));
      const int64_t row = rows == 0 ? 0 : params.NumElements() / rows;
      for (size_t i = 0; i < indices.size(); ++i)
        cp.Copy(cp.At(out->raw_data(), static_cast<int64_t>(i) * row), cp.At(params.raw_data(), indices[i] * row), row);
      return Status::OK();
    });
  }

 private:
  DataType dtype_ = DT_INVALID;
  int64_t batch_dims_ = 0;
  ElemCopier cp_;
};
AF_REGISTER_KERNEL(KernelDefBuilder("ResourceGather").Device(DEVICE_CPU), ResourceGatherOp);

// ---------------------------------------------------------------------------
// Updates: one VarUpdateRequest each, no output.

class ResourceUpdateOp : public AsyncOpKernel {
 public:
  ResourceUpdateOp(OpKernelConstruction* c, VarUpdateKind kind, int num_vars)
      : AsyncOpKernel(c),
        request_(UpdateRequestFromAttrs(c, kind, false)),
        num_vars_(num_vars),
        use_locking_(UseLockingAttr(c)) {}
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    VarUpdateRequest req = request_;
    Status s = num_vars_ >= 1 && num_vars_ <= 3 ? Status::OK() : errors::Internal("an update of ", num_vars_, " variables");
    const std::string* handles[3] = {};  // in the inputs
    for (int i = 0; s.ok() && i < num_vars_; ++i) s = HandleInput(ctx, i, &handles[i]);
    VariableAccess* vars = s.ok() ? Variables(ctx, &s) : nullptr;
    AF_REQUIRES_ASYNC(ctx, s.ok(), s, done);
    req.args.reserve(static_cast<size_t>(ctx->num_inputs() - num_vars_));
    for (int i = num_vars_; i < ctx->num_inputs(); ++i) req.args.push_back(ctx->input(i));
    UpdateVariables(vars, handles, static_cast<size_t>(num_vars_), std::move(req), use_locking_,
                    [ctx, done = std::move(done)](const Status& st) {
                      if (!st.ok()) ctx->SetStatus(st);
                      done();
                    });
  }

 private:
  const VarUpdateRequest request_;  // kind and attrs; handles and args per run
  int num_vars_;
  bool use_locking_;  // the attr; true for the Assign*VariableOps (they have none)
};

#define AF_RESOURCE_UPDATE_KERNEL(OP, KIND, VARS)                                                   \
  struct OP##Kernel : ResourceUpdateOp {                                                            \
    explicit OP##Kernel(OpKernelConstruction* c) : ResourceUpdateOp(c, VarUpdateKind::KIND, VARS) {} \
  };                                                                                                \
  AF_REGISTER_KERNEL(KernelDefBuilder(#OP).Device(DEVICE_CPU), OP##Kernel)

AF_REGISTER_OP("AssignVariableOp")
    .Input("resource: resource")
    .Input("value: dtype")
    .Attr("dtype: type")
    .Attr("validate_shape: bool = false")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown)
    .Doc("Sets the variable to value (applied whole by the container actor).");
AF_REGISTER_OP("AssignAddVariableOp")
    .Input("resource: resource")
    .Input("value: dtype")
    .Attr("dtype: type")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown)
    .Doc("Adds value to the variable, atomically.");
AF_REGISTER_OP("AssignSubVariableOp")
    .Input("resource: resource")
    .Input("value: dtype")
    .Attr("dtype: type")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown)
    .Doc("Subtracts value from the variable, atomically.");
AF_RESOURCE_UPDATE_KERNEL(AssignVariableOp, kAssign, 1);
AF_RESOURCE_UPDATE_KERNEL(AssignAddVariableOp, kAssignAdd, 1);
AF_RESOURCE_UPDATE_KERNEL(AssignSubVariableOp, kAssignSub, 1);

AF_REGISTER_OP("ResourceApplyGradientDescent")
    .Input("var: resource")
    .Input("alpha: T")
    .Input("delta: T")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown)
    .Doc("var -= alpha * delta.");
AF_REGISTER_OP("ResourceApplyMomentum")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("lr: T")
    .Input("grad: T")
    .Input("momentum: T")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown)
    .Doc("accum = accum * momentum + grad; var -= lr * accum (Nesterov: var -= lr * grad + lr * momentum * accum).");
AF_REGISTER_OP("ResourceApplyAdam")
    .Input("var: resource")
    .Input("m: resource")
    .Input("v: resource")
    .Input("beta1_power: T")
    .Input("beta2_power: T")
    .Input("lr: T")
    .Input("beta1: T")
    .Input("beta2: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown)
    .Doc("Adam, as ApplyAdam.");
AF_REGISTER_OP("ResourceApplyAdagrad")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("lr: T")
    .Input("grad: T")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown)
    .Doc("accum += grad^2; var -= lr * grad / sqrt(accum).");
AF_REGISTER_OP("ResourceApplyRMSProp")
    .Input("var: resource")
    .Input("ms: resource")
    .Input("mom: resource")
    .Input("lr: T")
    .Input("rho: T")
    .Input("momentum: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Attr("T: {float, double}")
    .Attr("use_locking: bool = false")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown)
    .Doc("RMSProp, as ApplyRMSProp.");
AF_RESOURCE_UPDATE_KERNEL(ResourceApplyGradientDescent, kGradientDescent, 1);
AF_RESOURCE_UPDATE_KERNEL(ResourceApplyMomentum, kMomentum, 2);
AF_RESOURCE_UPDATE_KERNEL(ResourceApplyAdam, kAdam, 3);
AF_RESOURCE_UPDATE_KERNEL(ResourceApplyAdagrad, kAdagrad, 2);
AF_RESOURCE_UPDATE_KERNEL(ResourceApplyRMSProp, kRMSProp, 3);

// State changes have no gradient; ReadVariableOp's and ResourceGather's are
// in client/gradients/ (the gradient of a read is the gradient of the handle).
AF_REGISTER_NO_GRADIENT("VarHandleOp");
AF_REGISTER_NO_GRADIENT("VarIsInitializedOp");
AF_REGISTER_NO_GRADIENT("AssignVariableOp");
AF_REGISTER_NO_GRADIENT("AssignAddVariableOp");
AF_REGISTER_NO_GRADIENT("AssignSubVariableOp");
AF_REGISTER_NO_GRADIENT("ResourceApplyGradientDescent");
AF_REGISTER_NO_GRADIENT("ResourceApplyMomentum");
AF_REGISTER_NO_GRADIENT("ResourceApplyAdam");
AF_REGISTER_NO_GRADIENT("ResourceApplyAdagrad");
AF_REGISTER_NO_GRADIENT("ResourceApplyRMSProp");

}  // namespace
}  // namespace actorflow
