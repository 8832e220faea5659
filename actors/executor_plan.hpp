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

#include "core/status.hpp"
#include "ops/op_kernel.hpp"

namespace actorflow {

class Graph;
class Device;
class KernelSegment;
class RendezvousKey;

struct OutEdgeItem {
  int32_t dst;         // node index
  int32_t dst_slot;    // absolute input slot of dst
  int32_t src_output;  // which output of the source feeds it
  bool last_use;       // the last edge of that output: it may take the tensor
};

struct NodeItem {
  OpKernel* kernel = nullptr;
  int32_t num_inputs = 0;
  int32_t num_outputs = 0;
  int32_t input_start = 0;   // first slot in StepState's slot array
  int32_t pending = 0;       // data + control inputs to wait for
  int32_t out_start = 0;     // data out-edges in ExecutorPlan::out_edges
  int32_t num_out = 0;
  int32_t ctrl_start = 0;    // control successors in ExecutorPlan::ctrl_edges
  int32_t num_ctrl = 0;
  int32_t deref_start = 0;   // inputs fed by a ref edge but taken by value, in ExecutorPlan::deref_inputs
  int32_t num_deref = 0;
  bool is_async = false;
  bool is_transfer = false;  // _Send or _Recv: runs before other ready nodes (another device may wait)
  /// A _Recv the device actor serves itself (DirectRecvKernel::rendezvous_key).
  bool is_direct_recv = false;
};

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
  const int32_t* ctrl_edges(const NodeItem& n) const { return ctrl_edges_.data() + n.ctrl_start; }
  /// Input indices of `n` that receive a variable's handle but take its value:
  /// the variable is read when the node is otherwise ready.
  const int32_t* deref_inputs(const NodeItem& n) const { return deref_inputs_.data() + n.deref_start; }
  /// All deref inputs of all nodes (NodeItem::deref_start indexes into them).
  int num_deref_inputs() const { return static_cast<int>(deref_inputs_.size()); }
  /// Whether any node is a _Send or _Recv (a partition of a multi-device graph).
  bool has_transfers() const { return has_transfers_; }
  /// The key of node `i`, a _Recv served directly (NodeItem::is_direct_recv); owned by its kernel.
  const RendezvousKey& recv_key(int i) const { return *recv_keys_[i]; }
  /// Nodes with nothing to wait for: the step starts with them.
  const std::vector<int32_t>& roots() const { return roots_; }
  /// Per node, the inputs it waits for: a step starts from a copy.
  const std::vector<int32_t>& initial_pending() const { return initial_pending_; }
  int total_input_slots() const { return total_input_slots_; }
  int max_outputs() const { return max_outputs_; }
  int num_args() const { return num_args_; }
  int num_retvals() const { return num_retvals_; }
  const std::string& node_name(int i) const { return items_[i].kernel->name(); }
  Device* device() const { return device_; }

 private:
  Device* device_ = nullptr;
  std::vector<std::shared_ptr<OpKernel>> kernels_;
  std::vector<NodeItem> items_;
  std::vector<OutEdgeItem> out_edges_;
  std::vector<int32_t> ctrl_edges_;
  std::vector<int32_t> deref_inputs_;
  std::vector<int32_t> roots_;
  bool has_transfers_ = false;
  std::vector<const RendezvousKey*> recv_keys_;  // by node; empty without direct _Recvs
  std::vector<int32_t> initial_pending_;
  int total_input_slots_ = 0;
  int max_outputs_ = 0;
  int num_args_ = 0;
  int num_retvals_ = 0;
};

}  // namespace actorflow
