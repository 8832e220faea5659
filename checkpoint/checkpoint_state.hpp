// The checkpoint state file: which checkpoints a directory holds, newest last.
//
// Beside its bundles, a directory of checkpoints holds a small text file named
// "checkpoint":
//
//   actorflow checkpoint state 1
//   latest model-300
//   kept model-100
//   kept model-200
//   kept model-300
//   crc32c 5d0b6a3f
//
// `latest` is the newest checkpoint's prefix; each `kept` line names one
// checkpoint still kept, oldest first, the latest among them. Prefixes are
// paths, absolute or relative to the working directory; one inside the
// directory is stored relative to it, so that the directory can be moved, and
// read back joined with the directory's path. The last line is the CRC32C, in
// hex, of every byte before it: a truncated or damaged file is DataLoss, never
// a wrong answer. The file is replaced atomically (AtomicFileWriter).
//
// A saver calls RecordCheckpoint after each bundle it wrote:
//
//   AF_RETURN_IF_ERROR(RecordCheckpoint("/ckpt", "/ckpt/model-300", /*max_to_keep=*/5));
//   std::string prefix;
//   AF_RETURN_IF_ERROR(LatestCheckpoint("/ckpt", &prefix));  // "/ckpt/model-300"
#pragma once

#include <string>
#include <vector>

#include "core/status.hpp"

namespace actorflow {

constexpr char kCheckpointStateFile[] = "checkpoint";

struct CheckpointState {
  std::string latest;            // prefix of the newest checkpoint
  std::vector<std::string> all;  // prefixes of the kept checkpoints, oldest first; `latest` is among them
};

/// Replaces the state file of `dir`. `latest` is added to the end of `all`
/// when missing. InvalidArgument for an empty prefix, one holding a line break,
/// or one listed twice.
Status WriteCheckpointState(const std::string& dir, const std::string& latest, const std::vector<std::string>& all);
/// Reads the state file of `dir`: NotFound when there is none, DataLoss (naming
/// the file and line) when it is corrupt.
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
/// Deletes the bundle of checkpoint `prefix`; NotFound when there is none.
Status DeleteCheckpoint(const std::string& prefix);

}  // namespace actorflow
