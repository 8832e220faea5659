// StepRunner: runs one step of an Executable (master/partition_registry.hpp).
//
// Every partition's step is one RunStepRequest to its task's worker session,
// which hands it to the partition's device actor (a partition of this
// process: to its device actor directly, answered by a call when the
// caller's thread starts it: ClientChannel::StartHereStep); every answer goes
// through one reply path (Absorb: status, results by fetch index, stats). A step of
// one partition is waited for alone, by spinning when the signature's steps
// are short (waking a sleeping thread costs as much as such a step on virtual
// machines); a step of several starts them all at once and joins them with a
// StepBarrier (master/step_barrier.hpp), taking answers as they come so the
// first failure aborts the others at once.
//
// A step that fails with Unavailable is explained: a task it ran in that the
// membership knows at another incarnation, or that answers a probe with one,
// has restarted (Aborted, naming it).
// Thread-safe: concurrent Runs are concurrent steps.
#pragma once

#include <chrono>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/graph/placer.hpp"
#include "actorflow/master/run_options.hpp"

namespace actorflow {

class ClusterView;
class Runtime;
struct Executable;
struct RunStepResponse;

class StepRunner {
 public:
  StepRunner(Runtime* runtime, const ClusterView* view, CostModel* cost_model);

  /// Runs one step with `args` (the partitions' arguments by step argument
  /// index); `outputs` gets one tensor per fetch.
  Status Run(const Executable& exe, const RunOptions& options, std::vector<Tensor> args,
             std::vector<Tensor>* outputs, RunMetadata* metadata);

 private:
  Status RunOne(const Executable& exe, const RunOptions& options, std::vector<Tensor> args,
                std::vector<Tensor>* outputs, RunMetadata* metadata);
  Status RunMany(const Executable& exe, const RunOptions& options, std::vector<Tensor> args,
                 std::vector<Tensor>* outputs, RunMetadata* metadata);
  Status ExplainUnavailable(Status s, const Executable& exe);

  Runtime* runtime_;
  const ClusterView* view_;
  CostModel* cost_model_;
};

}  // namespace actorflow
