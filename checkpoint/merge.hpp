// MergeCheckpoints: joins checkpoints written in TensorFlow's format by
// several savers (one per device, say) into one, as TensorFlow's
// MergeV2Checkpoints op does when tf.train.Checkpoint and sharded
// tf.train.Saver save: the inputs' data files are renamed to the
// destination's (P.data-<i>-of-<total>, numbered in the order of the inputs
// and their shards), one index for all is written, and the inputs' indexes
// are deleted (with their directories, when `delete_old_dirs` and they are
// not the destination's and are left empty).
//
//   AF_RETURN_IF_ERROR(MergeCheckpoints({"/ckpt/ckpt-1_temp/part-00000-of-00002",
//                                        "/ckpt/ckpt-1_temp/part-00001-of-00002"},
//                                       "/ckpt/ckpt-1", /*delete_old_dirs=*/true));
//
// Every input index is read and checked before any file moves. A tensor in two
// inputs is InvalidArgument, unless both hold slices of it (their slice lists
// join). A missing input is NotFound, or skipped with `allow_missing_files`
// (InvalidArgument when none is left).
#pragma once

#include <string>
#include <vector>

#include "actorflow/core/status.hpp"

namespace actorflow {

Status MergeCheckpoints(const std::vector<std::string>& prefixes, const std::string& destination,
                        bool delete_old_dirs = true, bool allow_missing_files = false);

}  // namespace actorflow
