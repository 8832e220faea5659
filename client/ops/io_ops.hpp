// Builder functions for the checkpoint ops (ops/io/save_restore_ops.cpp):
//
//   Scope root = Scope::NewRootScope();
//   auto w = ops::Placeholder(root.WithOpName("w"), DT_FLOAT);
//   auto save = ops::SaveV2(root, "/ckpt/model-1", {"w"}, {""}, {w});
//   auto restored = ops::RestoreV2(root, "/ckpt/model-1", {"w"}, {""}, {DT_FLOAT});
//   // run `save` as a target, then fetch restored[0]
//
// `tensor_names` and `shape_and_slices` are string vectors with one entry per
// tensor; "" in shape_and_slices means the whole tensor (the only form supported).
#pragma once

#include <vector>

#include "actorflow/client/builder.hpp"
#include "actorflow/ops/attrs.hpp"

namespace actorflow {
namespace ops {

/// Saves `tensors` under `tensor_names` to the checkpoint `prefix`; run it as a target.
Operation SaveV2(const Scope& s, Input prefix, Input tensor_names, Input shape_and_slices,
                 const std::vector<Output>& tensors);
/// Restores the tensors `tensor_names` of dtypes `dtypes` from the checkpoint `prefix`.
std::vector<Output> RestoreV2(const Scope& s, Input prefix, Input tensor_names, Input shape_and_slices,
                              const DataTypeVector& dtypes);
/// Joins the checkpoints `checkpoint_prefixes` into `destination_prefix` (checkpoint/merge.hpp); run it as a target.
Operation MergeV2Checkpoints(const Scope& s, Input checkpoint_prefixes, Input destination_prefix,
                             bool delete_old_dirs = true, bool allow_missing_files = false);

}  // namespace ops
}  // namespace actorflow
