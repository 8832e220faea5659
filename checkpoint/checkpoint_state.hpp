// The checkpoint state file: which checkpoints a directory holds, newest last.
//
// Beside its checkpoints, a directory of checkpoints holds a small text file
// named "checkpoint", TensorFlow's CheckpointState in protobuf text format
// (core/proto/checkpoint_state.proto), so that TensorFlow's
// tf.train.latest_checkpoint reads ours and we read TensorFlow's:
//
//   # actorflow checkpoint state: the last line checks the lines above
//   model_checkpoint_path: "model-300"
//   all_model_checkpoint_paths: "model-200"
//   all_model_checkpoint_paths: "model-300"
//   all_model_checkpoint_timestamps: 1795772230.5
//   all_model_checkpoint_timestamps: 1795772291.25
//   # crc32c 5d0b6a3f
//
// model_checkpoint_path is the newest checkpoint's prefix; the list names the
// kept ones, oldest first, the latest among them, each with when it was saved.
// Prefixes are paths, absolute or relative to the working directory; one
// inside the directory is stored relative to it, so that the directory can be
// moved, and read back joined with the directory's path. The two comment
// lines are ours (TensorFlow skips comments): in a file that starts with the
// first, the last must be the CRC32C of every byte before it, so a truncated
// or damaged file is DataLoss, never a wrong answer; a file TensorFlow wrote
// has neither and is read as it is. The file is replaced atomically
// (AtomicFileWriter). The older actorflow format ("actorflow checkpoint
// state 1", "latest", "kept" and "crc32c" lines) is still read.
//
// A saver calls RecordCheckpoint after each bundle it wrote:
//
//   AF_RETURN_IF_ERROR(RecordCheckpoint("/ckpt", "/ckpt/model-300", /*max_to_keep=*/5));
//   std::string prefix;
//   AF_RETURN_IF_ERROR(LatestCheckpoint("/ckpt", &prefix));  // "/ckpt/model-300"
#pragma once

#include <string>
#include <vector>

#include "actorflow/core/status.hpp"

namespace actorflow {

constexpr char kCheckpointStateFile[] = "checkpoint";

struct CheckpointState {
  std::string latest;            // prefix of the newest checkpoint
  std::vector<std::string> all;  // prefixes of the kept checkpoints, oldest first; `latest` is among them
  std::vector<double> timestamps;  // when each of `all` was saved (Unix seconds); empty when unknown
  double last_preserved_timestamp = 0;
};

/// Replaces the state file of `dir`. `latest` is added to the end of `all`
/// when missing. InvalidArgument for an empty prefix, one holding a line break,
/// or one listed twice.
Status WriteCheckpointState(const std::string& dir, const std::string& latest, const std::vector<std::string>& all);
/// Reads the state file of `dir`: NotFound when there is none, DataLoss (naming
/// the file and line) when it is corrupt. A latest prefix missing from the
/// list is added to it, as TensorFlow does.
Status ReadCheckpointState(const std::string& dir, CheckpointState* state);
/// The prefix of the newest checkpoint of `dir`: NotFound when there is no
/// state file or its latest checkpoint's bundle is missing.
Status LatestCheckpoint(const std::string& dir, std::string* prefix);

/// Records `prefix` (whose bundle is written) as the newest checkpoint of
/// `dir`, then deletes the bundles of the oldest ones beyond the newest
/// `max_to_keep` (<= 0 keeps all). The state file is written before anything is
/// deleted, so it never names a deleted checkpoint. `deleted`, when given,
/// gets the prefixes whose bundles were removed. A corrupt state file is
/// DataLoss and nothing is deleted (removing the file starts a fresh list).
Status RecordCheckpoint(const std::string& dir, const std::string& prefix, int max_to_keep,
                        std::vector<std::string>* deleted = nullptr);
/// True when checkpoint `prefix` has an index (P.index) or a bundle (P.afckpt).
bool CheckpointExists(const std::string& prefix);
/// Deletes the files of checkpoint `prefix` (P.index, P.data-*-of-*,
/// P.afckpt); NotFound when there are none.
Status DeleteCheckpoint(const std::string& prefix);

}  // namespace actorflow
