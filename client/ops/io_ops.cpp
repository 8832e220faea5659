#include "actorflow/client/ops/io_ops.hpp"

namespace actorflow {
namespace ops {

Operation SaveV2(const Scope& s, Input prefix, Input tensor_names, Input shape_and_slices,
                 const std::vector<Output>& tensors) {
  return s.AddOp("SaveV2",
                 {{s.AsOutput(prefix)}, {s.AsOutput(tensor_names)}, {s.AsOutput(shape_and_slices)}, tensors});
}

std::vector<Output> RestoreV2(const Scope& s, Input prefix, Input tensor_names, Input shape_and_slices,
                              const DataTypeVector& dtypes) {
  Operation op = s.AddOp("RestoreV2", {{s.AsOutput(prefix)}, {s.AsOutput(tensor_names)}, {s.AsOutput(shape_and_slices)}},
                         {{"dtypes", AttrTypeList(dtypes)}});
  std::vector<Output> out;
  for (int i = 0; i < op.num_outputs(); ++i) out.push_back(op.output(i));
  return out;
}

Operation MergeV2Checkpoints(const Scope& s, Input checkpoint_prefixes, Input destination_prefix, bool delete_old_dirs,
                             bool allow_missing_files) {
  return s.AddOp("MergeV2Checkpoints", {{s.AsOutput(checkpoint_prefixes)}, {s.AsOutput(destination_prefix)}},
                 {{"delete_old_dirs", AttrBool(delete_old_dirs)}, {"allow_missing_files", AttrBool(allow_missing_files)}});
}

}  // namespace ops
}  // namespace actorflow
