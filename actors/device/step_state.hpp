// StepState: everything one step of one graph partition owns while it runs.
//
// Organised as TensorFlow's executor is, so loop frames slot in: a step has
// frames (only the root frame until control flow lands), a frame has live
// iterations, and an iteration holds the pending-input counts of every node
// and the input slots where arriving tensors wait. Input slots are released
// as soon as their node has run, so each intermediate tensor dies with its
// last consumer. Per-step resources (stacks) live in it and die with it.
// Owned by one device actor; never touched by another thread except for the
// input slots of a node that a pool thread is computing (and the per-step
// resources, which guard themselves).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "actorflow/actors/device/step_capture.hpp"
#include "actorflow/core/cancellation.hpp"
#include "actorflow/core/status.hpp"
#include "actorflow/core/step_stats.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/step_resources.hpp"

namespace actorflow {

class ExecutorPlan;
class StepState;

/// A steady-clock reading in nanoseconds, and a stable id of this thread.
int64_t NowNanos();
uint64_t ThisThreadId();

struct FrameInfo;
struct FrameState;

/// Pending counts and input slots of one iteration of one frame.
struct IterationState {
  IterationState(const FrameInfo& info, bool control_flow, FrameState* frame, int64_t iter);
  /// Makes a finished iteration ready to serve as iteration `i` again
  /// (frames recycle them: a loop allocates no state per iteration).
  void Reset(const FrameInfo& info, int64_t i);
  std::vector<Tensor> inputs;    // FrameInfo::total_input_slots slots
  std::vector<int32_t> pending;  // per node of the frame (local index): inputs still to arrive
  std::vector<int32_t> dead_count;  // per node: dead inputs so far (plans with control flow only)
  /// Per deref input of the frame's nodes (NodeItem::deref_local): whether
  /// its slot holds the variable's value yet (else its handle, or nothing yet).
  std::vector<uint8_t> derefed;
  FrameState* frame;
  int64_t iter;
  int64_t outstanding_ops = 0;          // its nodes that are ready or running
  int32_t outstanding_frame_count = 0;  // child frames it started that are not done
};

/// One run-time instance of a loop frame: the frame a loop's Enters open
/// in one iteration of the parent frame. Iterations run while their inputs
/// are ready, at most parallel_iterations at once; each is freed when it is
/// done and the frame when its last one is, so a long loop runs in constant
/// memory. The root frame has exactly one iteration and no parent.
struct FrameState {
  const FrameInfo* info = nullptr;
  std::string name;     // unique in the step: parent's name;parent iteration;frame name
  int64_t id = 0;       // the rendezvous key's frame id (0 for the root frame)
  FrameState* parent = nullptr;
  IterationState* parent_iter = nullptr;
  /// The iteration of each loop frame enclosing this one, outermost first:
  /// empty for the root frame and the loops it starts; a kernel's
  /// OpKernelContext::iteration_path is this and its iteration.
  std::vector<int64_t> parent_iterations;
  int32_t parallel_iterations = 1;
  int64_t iteration_count = 0;          // the newest iteration started
  int32_t num_outstanding_iterations = 1;
  int32_t num_pending_inputs = 0;       // Enters whose value has not come yet
  std::vector<std::unique_ptr<IterationState>> iterations;  // a ring: iteration i at i % size
  struct Value {
    int32_t node;
    Tensor value;
    bool dead;
  };
  std::vector<Value> next_iter_roots;  // NextIteration values waiting for an iteration to free up
  std::vector<Value> loop_invariants;  // constant Enters' values, given to every new iteration
  std::vector<int32_t> dead_exits;     // Exits dead in the newest iteration: passed on dead when the frame ends
  std::vector<std::unique_ptr<IterationState>> spare;  // finished iterations, for reuse

  IterationState* iteration(int64_t i) const { return iterations[static_cast<size_t>(i % static_cast<int64_t>(iterations.size()))].get(); }
  std::unique_ptr<IterationState>& iteration_slot(int64_t i) {
    return iterations[static_cast<size_t>(i % static_cast<int64_t>(iterations.size()))];
  }
};

/// How a step runs with respect to CUDA-graph capture (actors/device/step_capture.hpp).
enum class CaptureMode : uint8_t {
  kNone,     // as usual, not watched
  kObserve,  // as usual; its _Recvs' signature counts toward a capture
  kDryRun,   // the capture: fixed buffers for _Recvs, _Sends noted, nothing executes
  kHold,     // a replay waiting for its _Recvs; the other nodes are parked
  kSkip,     // replayed: only its _Sends run, from copies of the capture's outputs
};

/// A node ready to run in one iteration of one frame (TensorFlow's TaggedNode).
struct TaggedNode {
  StepState* step;
  IterationState* iter;
  int32_t node;
  bool dead;  // a dead node does not run (but for transfers); its outputs are dead
};

class StepState {
 public:
  /// `recycled`, when given: a root iteration of the same plan's last step
  /// (ExecutorPlan::spare_root), reset and used rather than a new one.
  StepState(int64_t step_id, const ExecutorPlan* plan, std::vector<Tensor> args,
            std::unique_ptr<IterationState> recycled = nullptr);
  /// The root iteration, its input slots emptied, for the plan's next step
  /// (TakeRoot leaves this state without one: only its destructor may
  /// follow); null when the step started loop frames that are not all done.
  std::unique_ptr<IterationState> TakeRoot();

  int64_t step_id() const { return step_id_; }
  const ExecutorPlan& plan() const { return *plan_; }
  IterationState& root() { return *root_iter_; }
  FrameState* root_frame() { return &root_frame_; }
  /// Loop frames started and not yet done, by FrameState::name.
  std::unordered_map<std::string, std::unique_ptr<FrameState>> frames;
  CallFrame* call_frame() { return &call_frame_; }
  CancellationManager* cancellation() { return &cancellation_; }
  /// State that lives as long as the step (the stack ops' stacks).
  StepResources* resources() { return &resources_; }

  /// The first error ends the step; later ones are dropped.
  const Status& status() const { return status_; }
  void Fail(const Status& s);
  bool failed() const { return !status_.ok(); }

  /// The client's id of this step, shared by every partition running it
  /// (kernels see it as OpKernelContext::step_id; rendezvous keys use it).
  int64_t client_step_id = 0;
  /// Other partitions run this step too: a failure here aborts it at the
  /// rendezvous, so their Recvs stop waiting.
  bool multi_partition = false;
  /// Nodes that are ready or running (including on the pool); the step is
  /// over when this drops to zero.
  int64_t outstanding = 0;
  /// CUDA-graph capture (actors/device/step_capture.hpp; the executor's
  /// executor_capture.cpp): the partition's capture while capture_mode is
  /// not kNone, the _Recvs not yet done, their tensors (by position in the
  /// capture's analysis), nodes parked until they are, the _Sends' inputs
  /// of a replay, and a dry run's arena, variable handles and _Send inputs.
  CaptureMode capture_mode = CaptureMode::kNone;
  std::shared_ptr<StepCapture> capture;
  int32_t recvs_left = 0;
  std::vector<Tensor> recv_values;
  CaptureSignature signature;
  std::vector<TaggedNode> parked;
  std::vector<Tensor> send_inputs;
  CaptureArena* arena = nullptr;
  std::vector<std::string> variable_handles;
  /// Per-node statistics, when the client asked for them.
  bool collect_stats = false;
  int64_t start_ns = 0;
  std::vector<NodeExecStats> stats;
  /// Appends the stats of `node`, which ran from `start_ns` to `end_ns` on
  /// `thread` and produced `outputs` (its num_outputs tensors, read only).
  void RecordStats(int32_t node, const char* where, int64_t start_ns, int64_t end_ns, uint64_t thread,
                   const Tensor* outputs);

  /// Whether the client has been answered (it is answered at the first error
  /// or deadline, while outstanding kernels are still being drained).
  bool replied = false;
  /// Whether the device's enqueued work has been waited for (Device::Sync)
  /// once the step's nodes had all run.
  bool device_synced = false;

 private:
  int64_t step_id_;
  const ExecutorPlan* plan_;
  FrameState root_frame_;
  IterationState* root_iter_;  // root_frame_.iterations[0], without the hops
  CallFrame call_frame_;
  CancellationManager cancellation_;
  StepResources resources_;
  Status status_;
};

}  // namespace actorflow
