#include "actorflow/client/train/saver.hpp"

#include "actorflow/checkpoint/bundle_reader.hpp"
#include "actorflow/checkpoint/checkpoint_state.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/io_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"

namespace actorflow {

Saver::Saver(const Scope& scope, std::vector<Variable> vars, SaverOptions options)
    : options_(std::move(options)), vars_(std::move(vars)) {
  if (vars_.empty()) vars_ = GlobalVariables(scope);
  Scope s = scope.GraphRoot().NewSubScope("save");
  if (vars_.empty()) {
    scope.UpdateStatus(errors::InvalidArgument("Saver: no variables to save"));
    return;
  }
  Tensor names(DT_STRING, TensorShape{static_cast<int64_t>(vars_.size())});
  Tensor slices(DT_STRING, TensorShape{static_cast<int64_t>(vars_.size())});
  std::vector<Output> refs;
  DataTypeVector dtypes;
  for (size_t i = 0; i < vars_.size(); ++i) {
    names.data<std::string>()[i] = vars_[i].name;
    slices.data<std::string>()[i] = "";
    refs.push_back(vars_[i].ref);  // by reference: one consistent read of all of them
    dtypes.push_back(vars_[i].dtype);
  }
  Output filename = ops::Placeholder(s.WithOpName("filename"), DT_STRING, PartialTensorShape::Scalar());
  Output tensor_names = ops::Const(s.WithOpName("tensor_names"), names);
  Output shape_and_slices = ops::Const(s.WithOpName("shape_and_slices"), slices);
  Operation save = ops::SaveV2(s.WithOpName("SaveV2"), filename, tensor_names, shape_and_slices, refs);
  std::vector<Output> restored =
      ops::RestoreV2(s.WithOpName("RestoreV2"), filename, tensor_names, shape_and_slices, dtypes);
  std::vector<Operation> assigns;
  for (size_t i = 0; i < restored.size() && i < vars_.size(); ++i)
    assigns.push_back(ops::Assign(s.WithOpName("Assign"), vars_[i].ref, restored[i]).op());
  Operation restore_all = ops::NoOp(s.WithOpName("restore_all").WithControlDependencies(assigns));
  if (!scope.ok()) return;
  filename_ = filename.name();
  save_op_ = save.name();
  restore_op_ = restore_all.name();
}

Status Saver::Save(Session* session, int64_t global_step, std::string* prefix) {
  if (save_op_.empty()) return errors::FailedPrecondition("Saver was not built (see the scope's status)");
  const std::string path = options_.dir + "/" + options_.basename + "-" + std::to_string(global_step);
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(session->Run({{filename_, Tensor::Scalar<std::string>(path)}}, {}, {save_op_}, &out));
  AF_RETURN_IF_ERROR(RecordCheckpoint(options_.dir, path, options_.max_to_keep));
  last_step_ = global_step;
  last_time_ = std::chrono::steady_clock::now();
  if (prefix) *prefix = path;
  return Status::OK();
}

Status Saver::Restore(Session* session, const std::string& prefix) {
  if (restore_op_.empty()) return errors::FailedPrecondition("Saver was not built (see the scope's status)");
  // Every variable is checked against the checkpoint's index first, so a
  // missing or mismatched tensor changes no variable at all.
  std::unique_ptr<BundleReader> reader;
  AF_RETURN_IF_ERROR(BundleReader::Open(prefix, &reader));
  for (const Variable& v : vars_) {
    DataType dtype;
    TensorShape shape;
    AF_RETURN_IF_ERROR(reader->LookupDtypeAndShape(v.name, &dtype, &shape));
    if (dtype != v.dtype || shape != v.shape)
      return errors::InvalidArgument("checkpoint ", prefix, " holds ", v.name, " as ", DataTypeString(dtype), " ",
                                     shape.DebugString(), ", the variable is ", DataTypeString(v.dtype), " ",
                                     v.shape.DebugString());
  }
  reader.reset();
  std::vector<Tensor> out;
  return session->Run({{filename_, Tensor::Scalar<std::string>(prefix)}}, {}, {restore_op_}, &out);
}

Status Saver::RestoreLatest(Session* session, bool* restored, std::string* prefix) {
  *restored = false;
  CheckpointState state;
  Status s = ReadCheckpointState(options_.dir, &state);
  if (errors::IsNotFound(s)) return Status::OK();  // nothing saved yet
  AF_RETURN_IF_ERROR(s);
  AF_RETURN_IF_ERROR(Restore(session, state.latest));
  *restored = true;
  if (prefix) *prefix = state.latest;
  return Status::OK();
}

Status Saver::MaybeSave(Session* session, int64_t global_step, bool* saved) {
  if (saved) *saved = false;
  const auto now = std::chrono::steady_clock::now();
  if (last_step_ < 0) {  // the first call starts the clocks
    last_step_ = global_step;
    last_time_ = now;
    return Status::OK();
  }
  const bool by_steps = options_.save_every_steps > 0 && global_step - last_step_ >= options_.save_every_steps;
  const bool by_time = options_.save_every_secs > 0 &&
                       std::chrono::duration<double>(now - last_time_).count() >= options_.save_every_secs;
  if (!by_steps && !by_time) return Status::OK();
  AF_RETURN_IF_ERROR(Save(session, global_step));
  if (saved) *saved = true;
  return Status::OK();
}

}  // namespace actorflow
