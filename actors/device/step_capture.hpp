// StepCapture: CUDA-graph capture of a GPU partition's steps (TensorFlow's
// and PyTorch's CUDA graphs), one per registered partition, kept by its
// executor (actors/device/executor.hpp).
//
// What is captured. A partition is capturable (AnalyzeCapture) when its
// device can capture (a GPU), it has no control flow, no arguments, and
// every node is one of:
// - a _Recv of a float32 tensor (a feed, in device memory);
// - a _Recv of int32/int64 class labels (in host memory), when every
//   consumer also reads them in device memory (OpKernel::ReadsInDeviceMemory:
//   SparseSoftmaxCrossEntropyWithLogits on a GPU, where an out-of-range label
//   then gives NaN, as in TensorFlow's GPU kernel, not the uncaptured step's
//   error);
// - a _Send of a float32 tensor the partition computes (a fetch);
// - a ref variable (VariableV2);
// - a GPU kernel that only enqueues work (GpuOpKernel);
// - a variable update on the device (Apply*, _FusedApply*, AssignAdd/Sub;
//   not Assign, which gives its variable a new buffer each step);
// - a kernel that runs on the host and is not stateful (shapes: static
//   under a signature).
// Anything else gives the reason it is not, and so does the master's mark `_no_capture` (graph/preparation.cpp): the
// session's option off (GraphOptions::capture_gpu_steps), or the GPU's
// tensors coming back to it through another device within a step (a replay
// waits for all its _Recvs before it runs anything).
//
// How. The executor runs such a partition's steps as usual while it watches
// their signature (the dtype and shape of each _Recv's tensor). After
// kWarmupSteps steps that succeeded with the same one, and as soon as no
// other step runs on the device, it captures a dry run of the plan: the
// _Recvs give fixed device buffers of the signature's shapes, the _Sends
// only note their input (a buffer of the capture), everything else runs as
// usual with the device capturing (Device::BeginCapture: nothing executes;
// allocations come from a CaptureArena, kept for the capture); steps started
// meanwhile wait. Nothing of the dry run is visible: a variable whose buffer
// would change fails it (VarUpdateRequest::capturing).
// Steps of the partition then replay: the nodes wait until every _Recv has
// its tensor; with the same signature, and each variable still holding the
// buffer the capture writes and shared by no other tensor (checked under
// the variables' locks, held until the launch is enqueued), the feeds are
// copied into the fixed buffers (labels from the host: Device::CopyFromHost,
// in stream order), the graph is launched, each fetch is copied
// out of its buffer into a new tensor for its _Send, and every other node
// is skipped. Otherwise the step runs as usual: other shapes (a last, smaller
// batch) keep the capture, unless kWarmupSteps steps in a row bring them
// (then it is made again for them); a moved variable or a failed dry run
// drops it (made again after kWarmupSteps; off after kMaxDrops); a variable
// shared by another step's tensor just falls back for that step. A replay
// whose _Recv fails or is dead ends as a step of the partition would.
//
// The trace (RunOptions::trace_level) gets one entry per step for the
// partition, node "_capture", op "_CapturedStep", where "replayed" or
// "uncaptured: <reason>".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/core/tensor.hpp"
#include "actorflow/devices/device.hpp"

namespace actorflow {

class CaptureArena;
class ExecutorPlan;

/// The nodes of a capturable plan, or why it is not capturable.
struct CaptureAnalysis {
  enum Role : uint8_t { kOther, kRecv, kSend, kVariable };
  std::string reason;              // empty: capturable
  std::vector<int32_t> recvs;      // _Recv nodes, in plan order
  std::vector<bool> from_host;     // per recv: class labels, in host memory (Device::CopyFromHost into the GPU)
  std::vector<int32_t> sends;      // _Send nodes
  std::vector<int32_t> variables;  // VariableV2 nodes (their handles are noted in the dry run)
  std::vector<Role> role;          // per node (capturable plans only)
  std::vector<int32_t> position;   // per node: its index in recvs, sends or variables
  bool capturable() const { return reason.empty(); }
};
CaptureAnalysis AnalyzeCapture(const ExecutorPlan& plan);

/// The dtype and shape of each _Recv's tensor, in CaptureAnalysis::recvs order.
struct CaptureSignature {
  std::vector<DataType> dtypes;
  std::vector<TensorShape> shapes;
  bool operator==(const CaptureSignature& o) const { return dtypes == o.dtypes && shapes == o.shapes; }
  bool operator!=(const CaptureSignature& o) const { return !(*this == o); }
  std::string DebugString() const;
};

class StepCapture {
 public:
  /// Identical successful steps before a capture.
  static constexpr int kWarmupSteps = 3;
  /// Captures dropped (new signatures, moved variables) before capture is off for good.
  static constexpr int kMaxDrops = 8;

  explicit StepCapture(std::shared_ptr<const ExecutorPlan> plan)
      : plan_(std::move(plan)), analysis_(AnalyzeCapture(*plan_)) {}
  const std::shared_ptr<const ExecutorPlan>& plan() const { return plan_; }

  const CaptureAnalysis& analysis() const { return analysis_; }
  /// Why steps are not captured now ("" while capturable).
  const std::string& reason() const { return analysis_.reason.empty() ? off_reason_ : analysis_.reason; }
  bool off() const { return !reason().empty(); }

  /// A step of the partition ran as usual and ended with `ok`: counts toward a capture.
  void Observed(const CaptureSignature& sig, bool ok);
  /// Whether a dry run is due (kWarmupSteps identical steps, nothing captured).
  bool CaptureDue() const { return !off() && !work_ && !in_progress_ && observed_ >= kWarmupSteps; }
  /// A dry run started (until Captured, Failed or Drop).
  void Started() { in_progress_ = true; }
  const CaptureSignature& signature() const { return signature_; }

  /// The dry run's result: the recorded work and its buffers.
  void Captured(std::unique_ptr<Device::CapturedWork> work, CaptureArena* arena, std::vector<Tensor> inputs,
                std::vector<Tensor> outputs, std::vector<std::string> variables, std::vector<const void*> buffers);
  /// Capture is off for the partition, for `why` (it cannot be captured).
  void Failed(const std::string& why);
  /// Drops the capture or a failed dry run (a moved variable, a variable
  /// shared meanwhile): made again after kWarmupSteps; off after kMaxDrops.
  void Drop(const std::string& why);
  /// A step came with other shapes (it runs as usual): after kWarmupSteps
  /// such steps in a row the capture is dropped, to be made for the new
  /// shapes (true then). Not a drop: a last, smaller batch costs nothing.
  bool Mismatched();
  /// A step was replayed: the mismatches in a row start again.
  void Replayed() { mismatches_ = 0; }
  bool captured() const { return work_ != nullptr; }

  Device::CapturedWork* work() const { return work_.get(); }
  /// The fixed buffers: one per _Recv (the captured kernels read) and per _Send (they write).
  const std::vector<Tensor>& inputs() const { return inputs_; }
  const std::vector<Tensor>& outputs() const { return outputs_; }
  /// The variables the captured work touches and the buffers it writes.
  const std::vector<std::string>& variables() const { return variables_; }
  const std::vector<const void*>& buffers() const { return buffers_; }

  ~StepCapture();

 private:
  void Reset();

  const std::shared_ptr<const ExecutorPlan> plan_;
  const CaptureAnalysis analysis_;
  std::string off_reason_;
  CaptureSignature signature_;
  int observed_ = 0;
  int drops_ = 0;
  int mismatches_ = 0;
  bool in_progress_ = false;
  std::unique_ptr<Device::CapturedWork> work_;
  CaptureArena* arena_ = nullptr;
  std::vector<Tensor> inputs_, outputs_;
  std::vector<std::string> variables_;
  std::vector<const void*> buffers_;
};

}  // namespace actorflow
