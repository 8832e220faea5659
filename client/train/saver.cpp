#include "actorflow/client/train/saver.hpp"

#include <algorithm>
#include <map>

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
  // One saved tensor per whole variable; the parts of a partitioned one
  // gathered under its name, in order along the dimension they cut. Parts
  // that do not make up their whole here (a list naming some of them, an
  // optimizer given some of them) are each saved under their own name.
  struct Group {
    std::vector<const Variable*> parts;
    bool whole = false;  // parts of one variable, saved as it
    int axis = 0;
  };
  std::vector<Group> groups;
  std::map<std::string, size_t> group_of;
  for (const Variable& v : vars_) {
    const SaveSliceInfo& info = v.save_slice;
    if (info.valid()) {  // a part that fits its whole (Lookup and SetSaveSliceInfo keep only such; a caller may not)
      bool fits = v.shape.dims() >= 1 && info.full_shape.dims() == v.shape.dims() &&
                  static_cast<int>(info.offset.size()) == v.shape.dims();
      for (int d = 0; fits && d < v.shape.dims(); ++d)
        fits = info.offset[d] >= 0 && info.offset[d] + v.shape.dim_size(d) <= info.full_shape.dim_size(d);
      if (!fits) {
        scope.UpdateStatus(errors::InvalidArgument("Saver: variable ", v.name, " of shape ", v.shape.DebugString(),
                                                   " is said to be a part of '", info.full_name, "' of shape ",
                                                   info.full_shape.DebugString(), ", where it does not fit"));
        return;
      }
    }
    const std::string key = info.valid() ? info.full_name : v.name;
    auto [it, fresh] = group_of.emplace(key, groups.size());
    if (fresh) {
      groups.emplace_back();
      groups.back().whole = info.valid();
    } else if (!info.valid() || !groups[it->second].whole) {
      scope.UpdateStatus(errors::InvalidArgument("Saver: two variables saved as '", key, "'"));
      return;
    }
    groups[it->second].parts.push_back(&v);
  }
  std::vector<Group> split;  // the parts of groups that do not make up their whole
  for (Group& g : groups) {
    if (!g.whole) continue;
    const SaveSliceInfo& whole = g.parts[0]->save_slice;
    // The dimension the parts cut: where one of them is shorter than the whole.
    for (const Variable* p : g.parts)
      for (int d = 0; d < whole.full_shape.dims(); ++d)
        if (p->shape.dim_size(d) != whole.full_shape.dim_size(d)) g.axis = d;
    const int axis = g.axis;
    std::sort(g.parts.begin(), g.parts.end(), [axis](const Variable* a, const Variable* b) {
      return a->save_slice.offset[axis] < b->save_slice.offset[axis];
    });
    int64_t covered = 0;
    bool tiles = true;
    for (const Variable* p : g.parts) {
      tiles = p->dtype == g.parts[0]->dtype && p->save_slice.full_shape == whole.full_shape &&
              p->save_slice.offset[axis] == covered;
      for (int d = 0; tiles && d < whole.full_shape.dims(); ++d)
        tiles = d == axis || (p->shape.dim_size(d) == whole.full_shape.dim_size(d) && p->save_slice.offset[d] == 0);
      if (!tiles) break;
      covered += p->shape.dim_size(axis);
    }
    if (tiles && covered == whole.full_shape.dim_size(axis)) continue;
    for (const Variable* p : g.parts) split.push_back(Group{{p}, false, 0});
    g.parts.clear();
  }
  groups.erase(std::remove_if(groups.begin(), groups.end(), [](const Group& g) { return g.parts.empty(); }),
               groups.end());
  for (Group& g : split) {
    if (group_of.count(g.parts[0]->name)) {
      scope.UpdateStatus(errors::InvalidArgument("Saver: two variables saved as '", g.parts[0]->name, "'"));
      return;
    }
    groups.push_back(std::move(g));
  }
  for (const Group& g : groups) {
    const Variable* first = g.parts[0];
    saved_.push_back(g.whole ? Saved{first->save_slice.full_name, first->dtype, first->save_slice.full_shape}
                             : Saved{first->name, first->dtype, first->shape});
  }
  Tensor names(DT_STRING, TensorShape{static_cast<int64_t>(saved_.size())});
  Tensor slices(DT_STRING, TensorShape{static_cast<int64_t>(saved_.size())});
  std::vector<Output> values;
  DataTypeVector dtypes;
  for (size_t g = 0; g < groups.size(); ++g) {
    names.data<std::string>()[g] = saved_[g].name;
    slices.data<std::string>()[g] = "";
    dtypes.push_back(saved_[g].dtype);
    const auto& parts = groups[g].parts;
    if (!groups[g].whole || parts.size() == 1) {
      values.push_back(parts[0]->ref);  // by reference: one consistent read of all of them
      continue;
    }
    std::vector<Input> refs;
    for (const Variable* p : parts) refs.push_back(p->ref);
    values.push_back(ops::Concat(s.WithOpName("concat"), refs, ops::Const(s, groups[g].axis)));
  }
  Output filename = ops::Placeholder(s.WithOpName("filename"), DT_STRING, PartialTensorShape::Scalar());
  Output tensor_names = ops::Const(s.WithOpName("tensor_names"), names);
  Output shape_and_slices = ops::Const(s.WithOpName("shape_and_slices"), slices);
  Operation save = ops::SaveV2(s.WithOpName("SaveV2"), filename, tensor_names, shape_and_slices, values);
  std::vector<Output> restored =
      ops::RestoreV2(s.WithOpName("RestoreV2"), filename, tensor_names, shape_and_slices, dtypes);
  std::vector<Operation> assigns;
  for (size_t g = 0; g < restored.size() && g < groups.size(); ++g) {
    for (const Variable* p : groups[g].parts) {
      Output value = restored[g];
      if (groups[g].whole && p->shape != saved_[g].shape) {  // its block of the whole
        Tensor begin(DT_INT64, TensorShape{p->shape.dims()}), size(DT_INT64, TensorShape{p->shape.dims()});
        for (int d = 0; d < p->shape.dims(); ++d) {
          begin.data<int64_t>()[d] = p->save_slice.offset[d];
          size.data<int64_t>()[d] = p->shape.dim_size(d);
        }
        value = ops::Slice(s, value, ops::Const(s, begin), ops::Const(s, size));
      }
      assigns.push_back(ops::Assign(s.WithOpName("Assign"), p->ref, value).op());
    }
  }
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
  for (const Saved& v : saved_) {
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
