// ExecutorPlan: the immutable facts a device actor needs to run one graph
// partition, computed once when the partition is registered.
//
// Nodes are numbered 0..n-1. Each NodeItem knows its kernel, where its input
// slots start in a step's flat slot array, how many inputs it waits for, and
// its out-edges (data edges grouped by output, then control edges) as ranges
// of flat arrays. Per-step mutable state lives in StepState; kernels are
// shared by all steps.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/sendrecv/rendezvous_access.hpp"

namespace actorflow {

class Graph;
class Device;
class KernelSegment;
class RendezvousKey;

struct OutEdgeItem {
  int32_t dst;         // node index
  int32_t dst_local;   // dst's index in its frame (pending counts)
  int32_t dst_slot;    // dst's input slot in its frame's slot array
  int32_t src_output;  // which output of the source feeds it
  bool last_use;       // the last edge of that output: it may take the tensor
};

struct CtrlEdgeItem {
  int32_t dst;
  int32_t dst_local;
};

/// What the executor does with a node's outputs (control flow, section 4.4).
enum class NodeKind : uint8_t {
  kNormal,
  kSwitch,          // one output is left dead
  kMerge,           // fires on its first live input; dead only when all are
  kEnter,           // outputs go to the child frame
  kExit,            // outputs go to the parent frame
  kNextIteration,   // outputs go to the next iteration
  kControlTrigger,  // never dead
};

/// The static facts of one loop frame (by frame name; index 0 is the root).
/// Every iteration of every run-time instance of the frame has this many
/// pending counts and input slots: its nodes are numbered locally.
struct FrameInfo {
  std::string name;
  int32_t num_nodes = 0;
  int32_t total_input_slots = 0;
  int32_t num_deref = 0;   // deref inputs of its nodes
  int32_t num_enters = 0;  // Enter nodes into it: inputs an instance waits for from its parent
  std::vector<int32_t> initial_pending;  // by local index
};

struct NodeItem {
  OpKernel* kernel = nullptr;
  int32_t num_inputs = 0;
  int32_t num_outputs = 0;
  int32_t frame = 0;         // its frame (ExecutorPlan::frame)
  int32_t local = 0;         // its index within the frame
  int32_t input_start = 0;   // first slot in its frame's slot array
  int32_t pending = 0;       // data + control inputs to wait for (a Merge: see FrameInfo::initial_pending)
  int32_t out_start = 0;     // data out-edges in ExecutorPlan::out_edges
  int32_t num_out = 0;
  int32_t ctrl_start = 0;    // control successors in ExecutorPlan::ctrl_edges
  int32_t num_ctrl = 0;
  int32_t deref_start = 0;   // inputs fed by a ref edge but taken by value, in ExecutorPlan::deref_inputs
  int32_t num_deref = 0;
  int32_t deref_local = 0;   // where its deref flags start in its frame's IterationState::derefed
  NodeKind kind = NodeKind::kNormal;
  // An Enter: the frame it enters, whether its value is constant across
  // iterations, and how many iterations of the frame may run at once.
  bool is_constant_enter = false;
  int32_t enter_frame = 0;
  int32_t parallel_iterations = 1;
  bool is_async = false;
  bool is_transfer = false;  // _Send or _Recv: runs before other ready nodes (another device may wait)
  /// A _Recv the device actor serves itself (DirectRecvKernel::rendezvous_key).
  bool is_direct_recv = false;
  bool is_retval = false;  // a fetch: dead, it fails the step (the fetched tensor has no value)
  bool is_stateful = false;  // its op is (OpDef::is_stateful)
  /// Its `_no_capture` attr (graph/preparation.cpp): why its partition is not captured (step_capture.hpp).
  std::string no_capture;
};

struct IterationState;

class ExecutorPlan {
 public:
  /// Builds kernels for every node of `g` on `device`; errors name the node.
  /// Stateful nodes' kernels come from `segment` when given (shared with the
  /// session's other plans).
  static Status Build(const Graph& g, Device* device, std::unique_ptr<ExecutorPlan>* out,
                      KernelSegment* segment = nullptr);

  int num_nodes() const { return static_cast<int>(items_.size()); }
  const NodeItem& item(int i) const { return items_[i]; }
  const std::vector<NodeItem>& items() const { return items_; }
  const OutEdgeItem* out_edges(const NodeItem& n) const { return out_edges_.data() + n.out_start; }
  const CtrlEdgeItem* ctrl_edges(const NodeItem& n) const { return ctrl_edges_.data() + n.ctrl_start; }
  /// Input indices of `n` that receive a variable's handle but take its value:
  /// the variable is read when the node is otherwise ready.
  const int32_t* deref_inputs(const NodeItem& n) const { return deref_inputs_.data() + n.deref_start; }
  /// All deref inputs of all nodes (NodeItem::deref_start indexes into them).
  int num_deref_inputs() const { return static_cast<int>(deref_inputs_.size()); }
  /// Whether any node is a _Send or _Recv (a partition of a multi-device graph).
  bool has_transfers() const { return has_transfers_; }
  /// The key of node `i`, a _Recv served directly (NodeItem::is_direct_recv); owned by its kernel.
  const RendezvousKey& recv_key(int i) const { return direct_recvs_[i]->rendezvous_key(); }
  /// Node `i`'s kernel as a DirectRecvKernel (its key in any frame and iteration).
  const DirectRecvKernel& direct_recv(int i) const { return *direct_recvs_[i]; }
  /// Nodes with nothing to wait for: the step starts with them.
  const std::vector<int32_t>& roots() const { return roots_; }
  /// Loop frames by index; 0 is the root frame. Plans without control flow
  /// have only the root frame, whose local indices are the node indices.
  const FrameInfo& frame(int i) const { return frames_[i]; }
  int num_frames() const { return static_cast<int>(frames_.size()); }
  /// Whether any node is a control-flow primitive (dead tensors, frames).
  bool has_control_flow() const { return has_control_flow_; }
  int max_outputs() const { return max_outputs_; }
  int num_args() const { return num_args_; }
  int num_retvals() const { return num_retvals_; }
  const std::string& node_name(int i) const { return items_[i].kernel->name(); }
  Device* device() const { return device_; }

  ExecutorPlan();
  ~ExecutorPlan();
  ExecutorPlan(const ExecutorPlan&) = delete;
  ExecutorPlan& operator=(const ExecutorPlan&) = delete;
  /// A finished step's root iteration, kept for this plan's next step (its
  /// pending counts and input slots reset, not allocated again: StepState).
  /// Only the executor that runs the plan touches it, in its device actor's
  /// turns.
  std::unique_ptr<IterationState>& spare_root() const { return spare_root_; }

 private:
  mutable std::unique_ptr<IterationState> spare_root_;
  Device* device_ = nullptr;
  std::vector<std::shared_ptr<OpKernel>> kernels_;
  std::vector<NodeItem> items_;
  std::vector<OutEdgeItem> out_edges_;
  std::vector<CtrlEdgeItem> ctrl_edges_;
  std::vector<int32_t> deref_inputs_;
  std::vector<int32_t> roots_;
  bool has_transfers_ = false;
  std::vector<const DirectRecvKernel*> direct_recvs_;  // by node; empty without direct _Recvs
  std::vector<FrameInfo> frames_;
  bool has_control_flow_ = false;
  int max_outputs_ = 0;
  int num_args_ = 0;
  int num_retvals_ = 0;
};

}  // namespace actorflow
