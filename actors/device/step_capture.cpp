#include "actorflow/actors/device/step_capture.hpp"

#include <utility>

#include "actorflow/actors/device/executor_plan.hpp"
#include "actorflow/devices/capture_arena.hpp"

namespace actorflow {

namespace {

bool UpdatesVariablesOnDevice(const std::string& op) {
  return op.rfind("Apply", 0) == 0 || op.rfind("_FusedApply", 0) == 0 || op == "Assign" || op == "AssignAdd" ||
         op == "AssignSub";
}

// Whether every consumer of `recv`'s tensor also reads it in device memory
// (OpKernel::ReadsInDeviceMemory: class labels on a GPU), where a replay's
// fixed buffer is, copied in from the host. graph/partition.cpp's
// MayBeCaptured says the same by op name: change both together.
bool OnlyReadOnDevice(const ExecutorPlan& plan, const NodeItem& recv) {
  const OutEdgeItem* e = plan.out_edges(recv);
  if (recv.num_out == 0) return false;  // read by none: no reason to copy it in
  for (int32_t j = 0; j < recv.num_out; ++j) {
    const NodeItem& dst = plan.item(e[j].dst);
    if (!dst.kernel->ReadsInDeviceMemory(e[j].dst_slot - dst.input_start)) return false;
  }
  return true;
}

std::string Named(const OpKernel& k) { return "node '" + k.name() + "' (op '" + k.type_string() + "')"; }

}  // namespace

CaptureAnalysis AnalyzeCapture(const ExecutorPlan& plan) {
  CaptureAnalysis a;
  Device* device = plan.device();
  if (device == nullptr || !device->CanCapture()) {
    a.reason = (device ? device->name() : std::string("the device")) + " cannot capture its work (only a GPU can)";
    return a;
  }
  if (plan.num_args() > 0 || plan.num_retvals() > 0) {
    a.reason = "the partition takes arguments or returns values directly (a function call)";
    return a;
  }
  std::vector<Tensor> blank;
  a.role.assign(static_cast<size_t>(plan.num_nodes()), CaptureAnalysis::kOther);
  a.position.assign(static_cast<size_t>(plan.num_nodes()), -1);
  auto note = [&](int i, CaptureAnalysis::Role r, std::vector<int32_t>* list) {
    a.role[static_cast<size_t>(i)] = r;
    a.position[static_cast<size_t>(i)] = static_cast<int32_t>(list->size());
    list->push_back(i);
  };
  for (int i = 0; i < plan.num_nodes(); ++i) {
    const NodeItem& item = plan.item(i);
    const OpKernel& k = *item.kernel;
    const std::string& op = k.type_string();
    if (!item.no_capture.empty()) {
      a.reason = item.no_capture;
      return a;
    }
    if (item.kind != NodeKind::kNormal || plan.has_control_flow()) {
      a.reason = Named(k) + " is control flow";
      return a;
    }
    if (op == "_Recv") {
      if (item.pending > 0) {  // a replay waits for every _Recv before it runs anything else
        a.reason = Named(k) + " waits for another node of the partition (a gate of recv scheduling?)";
        return a;
      }
      const DataType dt = k.num_outputs() == 1 ? k.output_type(0) : DT_INVALID;
      const bool labels = (dt == DT_INT32 || dt == DT_INT64) && OnlyReadOnDevice(plan, item);
      if (dt != DT_FLOAT && !labels) {
        const std::string what = dt == DT_INVALID ? std::string("several dtypes") : DataTypeString(dt);
        a.reason = Named(k) + " receives a tensor of " + what +
                   " that stays in host memory, read at each step (only float32 feeds, and integers that every " +
                   "consumer also reads in device memory, class labels, are captured)";
        return a;
      }
      a.from_host.push_back(labels);
      note(i, CaptureAnalysis::kRecv, &a.recvs);
      continue;
    }
    if (op == "_Send") {
      if (item.num_deref > 0) {
        a.reason = Named(k) + " sends a variable's value, read at each step";
        return a;
      }
      if (k.num_inputs() != 1 || k.input_type(0) != DT_FLOAT) {
        a.reason = Named(k) + " sends a tensor that is not float32: it is computed on the host at each step";
        return a;
      }
      note(i, CaptureAnalysis::kSend, &a.sends);
      continue;
    }
    if (op == "VariableV2" || op == "Variable") {
      note(i, CaptureAnalysis::kVariable, &a.variables);
      continue;
    }
    if (op == "Assign") {
      a.reason = Named(k) + " gives its variable a new buffer at each step";
      return a;
    }
    const bool updates = UpdatesVariablesOnDevice(op);
    if (item.is_stateful && !updates) {
      a.reason = Named(k) + " is stateful: its effect is not only work on the GPU";
      return a;
    }
    if (item.is_async && !updates) {
      blank.assign(static_cast<size_t>(item.num_inputs), Tensor());
      if (!item.kernel->AsAsync()->RunsInline(blank.data(), item.num_inputs)) {  // a GPU kernel only enqueues: inline
        a.reason = Named(k) + " finishes asynchronously, outside the GPU's stream";
        return a;
      }
    }
  }
  if (a.recvs.empty() && a.sends.empty()) a.reason = "the partition neither receives nor sends a tensor";
  return a;
}

std::string CaptureSignature::DebugString() const {
  std::string s = "[";
  for (size_t i = 0; i < shapes.size(); ++i)
    s += strings::StrCat(i ? ", " : "", DataTypeString(dtypes[i]), shapes[i].DebugString());
  return s + "]";
}

void StepCapture::Observed(const CaptureSignature& sig, bool ok) {
  if (off() || work_ || in_progress_) return;  // a dry run of signature_ is being finished
  if (!ok) {
    observed_ = 0;
    return;
  }
  if (observed_ == 0 || sig != signature_) {
    signature_ = sig;
    observed_ = 1;
    return;
  }
  ++observed_;
}

void StepCapture::Captured(std::unique_ptr<Device::CapturedWork> work, CaptureArena* arena, std::vector<Tensor> inputs,
                           std::vector<Tensor> outputs, std::vector<std::string> variables,
                           std::vector<const void*> buffers) {
  Reset();
  work_ = std::move(work);
  arena_ = arena;
  inputs_ = std::move(inputs);
  outputs_ = std::move(outputs);
  variables_ = std::move(variables);
  buffers_ = std::move(buffers);
}

void StepCapture::Failed(const std::string& why) {
  Reset();
  observed_ = 0;
  off_reason_ = why;
}

bool StepCapture::Mismatched() {
  if (++mismatches_ < kWarmupSteps) return false;
  Reset();  // the shapes moved on: made again for the new ones (not a drop)
  observed_ = 0;
  return true;
}

void StepCapture::Drop(const std::string& why) {
  Reset();
  observed_ = 0;
  if (++drops_ >= kMaxDrops)
    off_reason_ = strings::StrCat("captures were dropped ", drops_, " times; the last because ", why);
}

void StepCapture::Reset() {
  in_progress_ = false;
  mismatches_ = 0;
  // The work goes first: its launches still run on the stream, then its
  // kept buffers and the arena's blocks are given back behind them.
  work_.reset();
  if (arena_) arena_->Release();
  arena_ = nullptr;
  inputs_.clear();
  outputs_.clear();
  variables_.clear();
  buffers_.clear();
}

StepCapture::~StepCapture() { Reset(); }

}  // namespace actorflow
