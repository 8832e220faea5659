// Saver: saves and restores a graph's variables as checkpoints (TensorFlow's
// tf.train.Saver), on top of the SaveV2/RestoreV2 ops and the checkpoint
// directory's state file (checkpoint/).
//
//   SaverOptions so;
//   so.dir = "/tmp/ckpt";
//   so.save_every_steps = 500;
//   Saver saver(root, {}, so);                       // adds save/ and restore/ nodes
//   ... session.Create(graph) ...
//   bool restored;
//   AF_RETURN_IF_ERROR(saver.RestoreLatest(&session, &restored));
//   if (!restored) run the initializer;
//   for (...) { train; AF_RETURN_IF_ERROR(saver.MaybeSave(&session, step)); }
//
// The save node takes every variable's reference, so the executor reads them
// all in one request to the container actor: a checkpoint is a consistent
// snapshot even while other steps train. Bundles are written to a temporary
// file, fsynced and renamed, so a crash mid-save leaves the previous
// checkpoint intact; the state file names the newest and the kept ones.
//
// The parts of a partitioned variable (client/train/partitioned_variables.hpp)
// are saved as the one tensor they are parts of, under its name and full
// shape, and each part restored from its block: a checkpoint does not depend
// on how its variables were partitioned. A variable list must then hold all
// the parts of each partitioned variable it names (InvalidArgument).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "actorflow/client/builder.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/variables.hpp"

namespace actorflow {

struct SaverOptions {
  std::string dir = ".";            // where checkpoints and the "checkpoint" state file go
  std::string basename = "model";   // checkpoints are <dir>/<basename>-<global step>
  int max_to_keep = 5;              // older checkpoints are deleted (<= 0 keeps all)
  int64_t save_every_steps = 0;     // MaybeSave: after this many steps (0: not by steps)
  double save_every_secs = 0;       // MaybeSave: after this many seconds (0: not by time)
};

class Saver {
 public:
  /// Adds the save and restore nodes for `vars` (empty: every global
  /// variable) to the scope's graph, under "save/". Errors go to the scope.
  Saver(const Scope& scope, std::vector<Variable> vars = {}, SaverOptions options = {});

  /// Writes <dir>/<basename>-<global_step>, records it as the latest and
  /// deletes checkpoints beyond max_to_keep. `prefix` gets the path written.
  Status Save(Session* session, int64_t global_step, std::string* prefix = nullptr);
  /// Sets every variable from the checkpoint `prefix`; errors (DataLoss,
  /// NotFound, InvalidArgument) name the file and tensor, and leave the
  /// variables as they were when a tensor cannot be read.
  Status Restore(Session* session, const std::string& prefix);
  /// Restores the newest checkpoint of `dir` if there is one; `restored`
  /// says whether there was. A damaged state file or bundle is an error.
  Status RestoreLatest(Session* session, bool* restored, std::string* prefix = nullptr);
  /// Saves when save_every_steps steps or save_every_secs seconds have passed
  /// since the last save (or since the first call).
  Status MaybeSave(Session* session, int64_t global_step, bool* saved = nullptr);

  const std::vector<Variable>& variables() const { return vars_; }

 private:
  struct Saved {  // a tensor of the checkpoint: a variable, or the whole of a partitioned one
    std::string name;
    DataType dtype = DT_INVALID;
    TensorShape shape;
  };
  SaverOptions options_;
  std::vector<Variable> vars_;
  std::vector<Saved> saved_;
  std::string filename_;     // the string placeholder naming the prefix
  std::string save_op_;
  std::string restore_op_;
  int64_t last_step_ = -1;
  std::chrono::steady_clock::time_point last_time_;
};

}  // namespace actorflow
