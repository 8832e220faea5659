// SaveV2, RestoreV2 and MergeV2Checkpoints: write tensors to a checkpoint in
// TensorFlow's V2 format, read them back (also from actorflow's older .afckpt
// files), and join the checkpoints of several savers into one, with
// TensorFlow's signatures (checkpoint/bundle_writer.hpp, bundle_reader.hpp
// and merge.hpp do the file work).
//
// Both do file I/O, so neither runs on the device actor's thread: each is an
// asynchronous kernel that checks its inputs there, then runs as one job on
// the device's compute pool (RestoreV2 reading pieces of its tensors in
// parallel over the pool) and calls done. While a save is in fsync its job
// holds a pool thread. shape_and_slices must be "" (whole tensors) for every
// tensor.
#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "actorflow/checkpoint/bundle_format.hpp"
#include "actorflow/checkpoint/bundle_reader.hpp"
#include "actorflow/checkpoint/bundle_writer.hpp"
#include "actorflow/checkpoint/merge.hpp"
#include "actorflow/core/cancellation.hpp"
#include "actorflow/devices/compute_pool.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "actorflow/ops/shape_inference.hpp"

namespace actorflow {
namespace {

// ---------------------------------------------------------------------------
// Helpers.

/// Checks the rank of inputs 0-2 and that inputs 1 and 2 have `n` entries, as far as known.
Status CheckSaveRestoreShapes(InferenceContext* c, int n) {
  const PartialTensorShape& prefix = c->input(0);
  if (!prefix.unknown_rank() && prefix.dims() != 0)
    return c->Error("prefix must be a scalar, got shape ", prefix.DebugString());
  static const char* const kNames[] = {"tensor_names", "shape_and_slices"};
  for (int i = 1; i <= 2; ++i) {
    const PartialTensorShape& s = c->input(i);
    if (s.unknown_rank()) continue;
    if (s.dims() != 1) return c->Error(kNames[i - 1], " must be a vector, got shape ", s.DebugString());
    if (s.dim_size(0) >= 0 && s.dim_size(0) != n)
      return c->Error(kNames[i - 1], " has ", s.dim_size(0), " entries for ", n, " tensors");
  }
  return Status::OK();
}

/// Checks prefix, tensor_names and shape_and_slices of a SaveV2 or RestoreV2
/// for `n` tensors: a scalar and two vectors of n strings, slices all "".
Status CheckArguments(OpKernelContext* ctx, int n) {
  const Tensor& prefix = ctx->input(0);
  const Tensor& names = ctx->input(1);
  const Tensor& slices = ctx->input(2);
  if (prefix.NumElements() != 1)
    return errors::InvalidArgument("prefix must have exactly one element, got shape ", prefix.shape().DebugString());
  if (prefix.scalar<std::string>().empty()) return errors::InvalidArgument("prefix is empty");
  if (names.dims() != 1 || names.dim_size(0) != n)
    return errors::InvalidArgument("tensor_names must be a vector of ", n, " names, got shape ",
                                   names.shape().DebugString());
  if (slices.dims() != 1 || slices.dim_size(0) != n)
    return errors::InvalidArgument("shape_and_slices must be a vector of ", n, " strings, got shape ",
                                   slices.shape().DebugString());
  for (int i = 0; i < n; ++i) {
    const std::string& spec = slices.data<std::string>()[i];
    if (!spec.empty())
      return errors::Unimplemented("shape_and_slices[", i, "] is '", spec, "' for tensor '",
                                   names.data<std::string>()[i],
                                   "': slices are not supported, pass \"\" to save or restore the whole tensor");
  }
  return Status::OK();
}

Status CancelledStatus(OpKernelContext* ctx) {
  CancellationManager* cm = ctx->cancellation_manager();
  if (cm != nullptr && cm->IsCancelled()) return errors::Cancelled("step cancelled");
  return Status::OK();
}

/// Runs `work` as a job on the device's compute pool, then calls done;
/// exceptions become the node's status.
template <class Work>
void RunOnPool(OpKernelContext* ctx, AsyncOpKernel::DoneCallback done, const char* op, Work work) {
  ctx->device()->compute_pool()->Schedule([ctx, done = std::move(done), op, work]() {
    try {
      ctx->SetStatus(work());
    } catch (const std::bad_alloc&) {
      ctx->SetStatus(errors::ResourceExhausted("out of memory in ", op));
    } catch (const std::exception& e) {
      ctx->SetStatus(errors::Internal(op, " threw: ", e.what()));
    } catch (...) {
      ctx->SetStatus(errors::Internal(op, " threw a non-standard exception"));
    }
    done();
  });
}

// ---------------------------------------------------------------------------
// SaveV2

Status SaveV2Shape(InferenceContext* c) { return CheckSaveRestoreShapes(c, c->num_inputs() - 3); }

AF_REGISTER_OP("SaveV2")
    .Input("prefix: string")
    .Input("tensor_names: string")
    .Input("shape_and_slices: string")
    .Input("tensors: dtypes")
    .Attr("dtypes: list(type)")
    .SetIsStateful()
    .SetShapeFn(SaveV2Shape)
    .Doc("Saves tensors under their names to the checkpoint `prefix` (<prefix>.index and <prefix>.data-00000-of-00001, "
         "TensorFlow's V2 format).");

class SaveV2Op : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const int n = ctx->num_inputs() - 3;
    AF_REQUIRES_ASYNC(ctx, n >= 0, errors::Internal("SaveV2 has ", ctx->num_inputs(), " inputs"), done);
    Status s = CheckArguments(ctx, n);
    AF_REQUIRES_ASYNC(ctx, s.ok(), s, done);
    RunOnPool(ctx, std::move(done), "SaveV2", [ctx, n] { return Save(ctx, n); });
  }

 private:
  static Status Save(OpKernelContext* ctx, int n) {
    const std::string& prefix = ctx->input(0).scalar<std::string>();
    const std::string* names = ctx->input(1).data<std::string>();
    std::unique_ptr<BundleWriter> writer;
    AF_RETURN_IF_ERROR(BundleWriter::Create(prefix, &writer));
    for (int i = 0; i < n; ++i) {
      AF_RETURN_IF_ERROR(CancelledStatus(ctx).WithContext("saving checkpoint '" + writer->filename() + "'"));
      AF_RETURN_IF_ERROR(writer->Add(names[i], ctx->input(3 + i)));
    }
    return writer->Finish();
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("SaveV2").Device(DEVICE_CPU), SaveV2Op);

// ---------------------------------------------------------------------------
// RestoreV2

Status RestoreV2Shape(InferenceContext* c) {
  AF_RETURN_IF_ERROR(CheckSaveRestoreShapes(c, c->num_outputs()));
  for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, PartialTensorShape());
  return Status::OK();
}

AF_REGISTER_OP("RestoreV2")
    .Input("prefix: string")
    .Input("tensor_names: string")
    .Input("shape_and_slices: string")
    .Output("tensors: dtypes")
    .Attr("dtypes: list(type) >= 1")
    .SetIsStateful()
    .SetShapeFn(RestoreV2Shape)
    .Doc("Restores the named tensors from the checkpoint `prefix` (TensorFlow's V2 format, or actorflow's <prefix>.afckpt).");

class RestoreV2Op : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    Status s = CheckArguments(ctx, num_outputs());
    AF_REQUIRES_ASYNC(ctx, s.ok(), s, done);
    RunOnPool(ctx, std::move(done), "RestoreV2", [this, ctx] { return Restore(ctx); });
  }

 private:
  Status Restore(OpKernelContext* ctx) const {
    const std::string& prefix = ctx->input(0).scalar<std::string>();
    std::unique_ptr<BundleReader> reader;
    AF_RETURN_IF_ERROR(BundleReader::Open(prefix, &reader));
    // Every tensor is found and checked before any is read.
    const int n = num_outputs();
    std::vector<std::string> names(n);
    std::vector<Tensor*> outputs(n);
    int64_t total_bytes = 0;
    for (int i = 0; i < n; ++i) {
      names[i] = ctx->input(1).data<std::string>()[i];
      DataType dtype;
      TensorShape shape;
      AF_RETURN_IF_ERROR(reader->LookupDtypeAndShape(names[i], &dtype, &shape));
      if (dtype != BaseType(output_type(i)))
        return errors::InvalidArgument("tensor '", names[i], "' in checkpoint '", reader->filename(), "' has dtype ",
                                       DataTypeString(dtype), ", but RestoreV2 expects ",
                                       DataTypeString(BaseType(output_type(i))), " (dtypes[", i, "])");
      AF_RETURN_IF_ERROR(ctx->allocate_output(i, shape, &outputs[i])
                             .WithContext("restoring tensor '" + names[i] + "' of '" + reader->filename() + "'"));
      total_bytes += static_cast<int64_t>(TensorPayloadBytes(*outputs[i]));
    }
    AF_RETURN_IF_ERROR(CancelledStatus(ctx).WithContext("restoring checkpoint '" + reader->filename() + "'"));
    // Read in parallel: from the page cache, copying and checksumming are what
    // cost, and each thread brings its own core. Threads claim pieces one at a
    // time, so one slowed by other work reads fewer of them.
    ComputePool* pool = ctx->device()->compute_pool();
    auto run = [pool, total_bytes](int num_tasks, const std::function<void(int)>& task) {
      std::atomic<int> next{0};
      const int threads = std::max(1, std::min(num_tasks, pool->MaxParallelism()));
      pool->For(threads, std::max<int64_t>(1, total_bytes / threads), [&](int64_t, int64_t) {
        for (int t = next.fetch_add(1); t < num_tasks; t = next.fetch_add(1)) task(t);
      });
    };
    return reader->LookupManyInto(names, outputs, run);
  }
};
AF_REGISTER_KERNEL(KernelDefBuilder("RestoreV2").Device(DEVICE_CPU), RestoreV2Op);

// ---------------------------------------------------------------------------
// MergeV2Checkpoints

Status MergeV2CheckpointsShape(InferenceContext* c) {
  const PartialTensorShape& prefixes = c->input(0);
  if (!prefixes.unknown_rank() && prefixes.dims() > 1)
    return c->Error("checkpoint_prefixes must be a vector, got shape ", prefixes.DebugString());
  const PartialTensorShape& dest = c->input(1);
  if (!dest.unknown_rank() && dest.dims() != 0)
    return c->Error("destination_prefix must be a scalar, got shape ", dest.DebugString());
  return Status::OK();
}

AF_REGISTER_OP("MergeV2Checkpoints")
    .Input("checkpoint_prefixes: string")
    .Input("destination_prefix: string")
    .Attr("delete_old_dirs: bool = true")
    .Attr("allow_missing_files: bool = false")
    .SetIsStateful()
    .SetShapeFn(MergeV2CheckpointsShape)
    .Doc("Joins the checkpoints `checkpoint_prefixes` into `destination_prefix`: their data files are renamed, one "
         "index is written and theirs are deleted (with their directories when `delete_old_dirs`).");

class MergeV2CheckpointsOp : public AsyncOpKernel {
 public:
  explicit MergeV2CheckpointsOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    Status s = c->GetAttr("delete_old_dirs", &delete_old_dirs_);
    if (s.ok()) s = c->GetAttr("allow_missing_files", &allow_missing_files_);
    c->SetStatus(s);
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const Tensor& prefixes = ctx->input(0);
    const Tensor& dest = ctx->input(1);
    AF_REQUIRES_ASYNC(ctx, prefixes.dims() <= 1,
                      errors::InvalidArgument("checkpoint_prefixes must be a vector, got shape ",
                                              prefixes.shape().DebugString()),
                      done);
    AF_REQUIRES_ASYNC(ctx, dest.NumElements() == 1,
                      errors::InvalidArgument("destination_prefix must be a scalar, got shape ",
                                              dest.shape().DebugString()),
                      done);
    std::vector<std::string> inputs(prefixes.data<std::string>(), prefixes.data<std::string>() + prefixes.NumElements());
    const std::string destination = dest.data<std::string>()[0];
    const bool delete_old_dirs = delete_old_dirs_, allow_missing = allow_missing_files_;
    RunOnPool(ctx, std::move(done), "MergeV2Checkpoints", [=] {
      return MergeCheckpoints(inputs, destination, delete_old_dirs, allow_missing);
    });
  }

 private:
  bool delete_old_dirs_ = true;
  bool allow_missing_files_ = false;
};
AF_REGISTER_KERNEL(KernelDefBuilder("MergeV2Checkpoints").Device(DEVICE_CPU), MergeV2CheckpointsOp);

// State changes and random draws have no gradient.
AF_REGISTER_NO_GRADIENT("SaveV2");
AF_REGISTER_NO_GRADIENT("RestoreV2");
AF_REGISTER_NO_GRADIENT("MergeV2Checkpoints");

}  // namespace
}  // namespace actorflow
