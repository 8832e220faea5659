// StepCapture: CUDA-graph capture of a GPU partition's steps (TensorFlow's
// and PyTorch's CUDA graphs), one per registered partition, kept by its
// executor (actors/device/executor.hpp).
//
// What is captured. A partition is capturable (AnalyzeCapture) when its
// device can capture (a GPU), it has no control flow, no arguments, and
// every node is one of: a _Recv of a float32 tensor (a feed, in device
// memory), a _Send of a float32 tensor (a fetch), a ref variable
// (VariableV2), a GPU kernel that only enqueues work (GpuOpKernel; the
// variable updates: Apply*, _FusedApply*, Assign*), or a kernel that runs on
// the host and is not stateful (shapes: static under a signature). Anything
// else, or the session's option off (GraphOptions::capture_gpu_steps: the
// partition's nodes carry `_no_capture`), gives the reason it is not.
//
// How. The executor runs such a partition's steps as usual while it watches
// their signature (the dtype and shape of each _Recv's tensor). After
// kWarmupSteps steps that succeeded with the same one, and as soon as no
// other step runs on the device, it captures a dry run of the plan: the
// _Recvs give fixed device buffers of the signature's shapes, the _Sends
// only note their input (a buffer of the capture), everything else runs as
// usual with the device capturing (Device::BeginCapture: nothing executes;
// allocations come from a CaptureArena, kept for the capture). Nothing of the
// dry run is visible: a variable whose buffer would change fails it.
// Steps of the partition then replay: the nodes wait until every _Recv has
// its tensor; with the same signature, and each variable still holding the
// buffer the capture writes and shared by no other tensor (checked under
// the variables' locks, held until the launch is enqueued), the feeds are
// copied into the fixed buffers, the graph is launched, each fetch is copied
// out of its buffer into a new tensor for its _Send, and every other node
// is skipped. Otherwise the step runs as usual: a new signature or a moved
// variable drops the capture (it is made again after kWarmupSteps), a
// variable shared by another step's tensor just falls back for that step.
// A failed capture turns capture off for the partition, with its reason.
//
// The trace (RunOptions::trace_level) gets one entry per step for the
// partition, node "_capture", op "_CapturedStep", where "replayed",
// "captured" or "uncaptured: <reason>".
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
  bool CaptureDue() const { return !off() && !work_ && observed_ >= kWarmupSteps; }
  const CaptureSignature& signature() const { return signature_; }

  /// The dry run's result: the recorded work and its buffers.
  void Captured(std::unique_ptr<Device::CapturedWork> work, CaptureArena* arena, std::vector<Tensor> inputs,
                std::vector<Tensor> outputs, std::vector<std::string> variables, std::vector<const void*> buffers);
  /// The dry run failed: capture is off for the partition.
  void Failed(const std::string& why);
  /// Drops the capture (after a step that must run as usual); capture is off
  /// after kMaxDrops.
  void Drop(const std::string& why);
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
  std::unique_ptr<Device::CapturedWork> work_;
  CaptureArena* arena_ = nullptr;
  std::vector<Tensor> inputs_, outputs_;
  std::vector<std::string> variables_;
  std::vector<const void*> buffers_;
};

}  // namespace actorflow
