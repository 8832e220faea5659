// The executor's side of CUDA-graph capture (actors/device/step_capture.hpp
// says what is captured, when, and how a step is replayed or falls back).
#include <cstdlib>
#include <string>
#include <utility>

#include "actorflow/actors/device/executor.hpp"
#include "actorflow/core/exception_status.hpp"
#include "actorflow/devices/capture_arena.hpp"
#include "actorflow/devices/device.hpp"

namespace actorflow {

namespace {

// ACTORFLOW_GPU_CAPTURE=0 turns capture off in the process (the session's
// option, GraphOptions::capture_gpu_steps, turns it off per session).
bool CaptureEnabled() {
  static const bool on = [] {
    const char* v = std::getenv("ACTORFLOW_GPU_CAPTURE");
    return v == nullptr || std::string(v) != "0";
  }();
  return on;
}

CaptureSignature SignatureOf(const std::vector<Tensor>& values) {
  CaptureSignature sig;
  for (const Tensor& t : values) {
    sig.dtypes.push_back(t.dtype());
    sig.shapes.push_back(t.shape());
  }
  return sig;
}

}  // namespace

void Executor::RecordCaptureStats(StepState* step, const std::string& what) {
  if (!step->collect_stats) return;
  NodeExecStats st;
  st.node = "_capture";
  st.op = "_CapturedStep";
  st.where = what;
  st.device = services_.device->name();
  st.start_us = st.end_us = (NowNanos() - step->start_ns) / 1000;
  step->stats.push_back(std::move(st));
}

void Executor::SetUpCapture(StepState* step, uint64_t graph_handle,
                            const std::shared_ptr<const ExecutorPlan>& plan) {
  if (pending_dry_run_) {  // the dry run itself (StartDryRun)
    DryRunSetUp* d = pending_dry_run_;
    pending_dry_run_ = nullptr;
    step->capture = d->capture;
    step->capture_mode = CaptureMode::kDryRun;
    step->recv_values = std::move(d->inputs);
    step->send_inputs.assign(d->capture->analysis().sends.size(), Tensor());
    step->variable_handles.assign(d->capture->analysis().variables.size(), std::string());
    step->arena = d->arena;
    dry_run_ = true;
    return;
  }
  Device* device = services_.device;
  if (!device->CanCapture() || !CaptureEnabled()) return;
  std::shared_ptr<StepCapture>& slot = captures_[graph_handle];
  if (!slot) slot = std::make_shared<StepCapture>(plan);
  if (slot->off()) {
    RecordCaptureStats(step, "uncaptured: " + slot->reason());
    return;
  }
  step->capture = slot;
  const size_t recvs = slot->analysis().recvs.size();
  step->recvs_left = static_cast<int32_t>(recvs);
  if (slot->captured()) {
    step->capture_mode = CaptureMode::kHold;
    step->recv_values.assign(recvs, Tensor());
    if (recvs == 0) DecideReplay(step);
  } else {
    step->capture_mode = CaptureMode::kObserve;
    step->signature.dtypes.assign(recvs, DT_INVALID);
    step->signature.shapes.assign(recvs, TensorShape());
  }
}

bool Executor::CaptureIntercepts(const TaggedNode& t) {
  StepState* step = t.step;
  const CaptureAnalysis& a = step->capture->analysis();
  const auto role = a.role[static_cast<size_t>(t.node)];
  const int32_t pos = a.position[static_cast<size_t>(t.node)];
  const NodeItem& item = step->plan().item(t.node);
  Tensor* inputs = t.iter->inputs.data() + item.input_start;
  switch (step->capture_mode) {
    case CaptureMode::kNone:
    case CaptureMode::kObserve:
      return false;
    case CaptureMode::kDryRun:
      if (role == CaptureAnalysis::kRecv) {  // the fixed buffer the captured kernels read
        inline_outputs_[0] = step->recv_values[static_cast<size_t>(pos)];
        Propagate(step, t.iter, t.node, Status::OK(), inline_outputs_.data());
        return true;
      }
      if (role == CaptureAnalysis::kSend) {  // the buffer the captured kernels write
        const TensorBuffer* buf = inputs[0].buffer();
        bool ours = buf == nullptr || inputs[0].NumElements() == 0 || buf->allocator() == step->arena;
        for (const Tensor& fixed : step->recv_values) ours = ours || buf == fixed.buffer();
        if (!ours) {  // a variable's buffer, a constant: not a buffer the captured work writes
          step->capture->Failed("node '" + item.kernel->name() + "' sends a tensor the captured work does not " +
                                "write (a variable's value or a constant)");
          Propagate(step, t.iter, t.node, errors::FailedPrecondition("not capturable"), inline_outputs_.data());
          return true;
        }
        step->send_inputs[static_cast<size_t>(pos)] = inputs[0];
        Propagate(step, t.iter, t.node, Status::OK(), inline_outputs_.data());
        return true;
      }
      return false;
    case CaptureMode::kHold:
      if (role == CaptureAnalysis::kRecv) return false;
      step->parked.push_back(t);
      return true;
    case CaptureMode::kSkip:
      if (role == CaptureAnalysis::kRecv) return false;
      if (role == CaptureAnalysis::kSend) {
        inputs[0] = step->send_inputs[static_cast<size_t>(pos)];  // a copy of the capture's output
        return false;
      }
      // Its work is in the launched graph: consumers get placeholders (only
      // _Sends run, and they take the copies above).
      for (int i = 0; i < item.num_outputs; ++i) {
        const DataType dt = IsRefType(item.kernel->output_type(i)) ? DT_STRING : item.kernel->output_type(i);
        const size_t k = static_cast<size_t>(dt);
        if (placeholders_.size() <= k) placeholders_.resize(k + 1);
        if (!placeholders_[k].IsInitialized()) placeholders_[k] = Tensor(dt, TensorShape{});
        inline_outputs_[static_cast<size_t>(i)] = placeholders_[k];
      }
      Propagate(step, t.iter, t.node, Status::OK(), inline_outputs_.data());
      return true;
  }
  return false;
}

void Executor::CaptureSawNode(StepState* step, int32_t node, const Tensor* outputs) {
  const CaptureAnalysis& a = step->capture->analysis();
  const auto role = a.role[static_cast<size_t>(node)];
  const size_t pos = static_cast<size_t>(a.position[static_cast<size_t>(node)]);
  if (role == CaptureAnalysis::kVariable && step->capture_mode == CaptureMode::kDryRun) {
    if (outputs[0].dtype() == DT_STRING && outputs[0].NumElements() == 1)
      step->variable_handles[pos] = outputs[0].scalar<std::string>();
    return;
  }
  if (role != CaptureAnalysis::kRecv) return;
  if (!outputs[0].IsInitialized()) {  // dead: no signature; a held step runs as usual
    if (step->capture_mode == CaptureMode::kHold) {
      step->capture_mode = CaptureMode::kNone;
      RecordCaptureStats(step, "uncaptured: a received tensor is dead");
      Unpark(step);
    }
    return;
  }
  if (step->capture_mode == CaptureMode::kObserve) {
    step->signature.dtypes[pos] = outputs[0].dtype();
    step->signature.shapes[pos] = outputs[0].shape();
    --step->recvs_left;
  } else if (step->capture_mode == CaptureMode::kHold) {
    step->recv_values[pos] = outputs[0];
    if (--step->recvs_left == 0) DecideReplay(step);
  }
}

void Executor::Unpark(StepState* step) {
  while (!step->parked.empty()) {  // one by one: a failed push leaves the rest parked, none twice
    ready_.push_back(step->parked.back());
    step->parked.pop_back();
  }
}

void Executor::DecideReplay(StepState* step) {
  std::shared_ptr<StepCapture> c = step->capture;
  auto as_usual = [this, step](const std::string& why) {
    step->capture_mode = CaptureMode::kNone;
    step->recv_values.clear();
    RecordCaptureStats(step, "uncaptured: " + why);
    Unpark(step);
  };
  if (!c->captured()) return as_usual("the capture was dropped");
  const CaptureSignature sig = SignatureOf(step->recv_values);
  if (sig != c->signature()) {
    const std::string why = "the received shapes changed from " + c->signature().DebugString() + " to " +
                            sig.DebugString();
    c->Mismatched();
    return as_usual(why);
  }
  // Under the variables' locks (when there are any): the check, the copies
  // in, the launch and the copies out, on the device's stream in that order.
  auto replay = [this, step, c, as_usual](const Status& s, const std::vector<const void*>& buffers,
                                          const std::vector<bool>& shared) {
    if (step->failed()) return Unpark(step);  // its nodes are skipped as a failed step's
    // Dropped meanwhile by another step (the variables' resolution waited for the container)?
    if (!c->captured() || c->buffers().size() != buffers.size() || c->inputs().size() != step->recv_values.size())
      return as_usual("the capture was dropped");
    if (!s.ok()) {
      c->Drop(s.ToString());
      return as_usual(s.ToString());
    }
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (buffers[i] != c->buffers()[i]) {
        const std::string why = "variable " + c->variables()[i] + " has another buffer than the captured one";
        c->Drop(why);
        return as_usual(why);
      }
      if (shared[i]) return as_usual("variable " + c->variables()[i] + " is shared by another step's tensor");
    }
    Device* d = services_.device;
    Status st;
    const std::vector<bool>& from_host = c->analysis().from_host;
    for (size_t i = 0; i < step->recv_values.size() && st.ok(); ++i) {
      void* fixed = const_cast<void*>(c->inputs()[i].raw_data());
      st = from_host[i] && step->recv_values[i].InHostMemory() ? d->CopyFromHost(step->recv_values[i], fixed)
                        : d->CopyOnDevice(step->recv_values[i].raw_data(), fixed, c->inputs()[i].TotalBytes());
    }
    if (st.ok()) st = c->work()->Launch();
    step->send_inputs.assign(c->outputs().size(), Tensor());
    for (size_t j = 0; j < c->outputs().size() && st.ok(); ++j) {
      const Tensor& out = c->outputs()[j];
      st = Tensor::Create(d->home_allocator(), out.dtype(), out.shape(), &step->send_inputs[j]);
      if (st.ok()) st = d->CopyOnDevice(out.raw_data(), step->send_inputs[j].raw_data(), out.TotalBytes());
    }
    step->recv_values.clear();  // copied in, in stream order
    if (!st.ok()) {
      c->Drop(st.ToString());
      FailStep(step, st.WithContext("replaying the captured step on " + d->name()));
      return Unpark(step);
    }
    step->capture_mode = CaptureMode::kSkip;
    c->Replayed();
    RecordCaptureStats(step, "replayed");
    Unpark(step);
  };
  if (c->variables().empty()) return replay(Status::OK(), {}, {});
  if (!services_.variables) return replay(errors::Unavailable("no variable access"), {}, {});
  // The step is held while the variables are resolved (the container may be
  // asked): its parked nodes could otherwise all end, were it failed meanwhile.
  auto ran = std::make_shared<bool>(false);
  VariableAccess::InspectFn inspect = [this, step, replay, ran](const Status& s,
                                                                const std::vector<const void*>& buffers,
                                                                const std::vector<bool>& shared) {
    *ran = true;
    try {
      replay(s, buffers, shared);
    } catch (...) {  // out of memory deciding: the step fails, and still ends
      FailStepOnError(step->step_id());
    }
    NodeFinished(step);
  };
  std::vector<std::string> handles = c->variables();
  ++step->outstanding;
  try {
    services_.variables->InspectBuffers(std::move(handles), std::move(inspect));
  } catch (...) {  // the hold goes with the failure, unless the callback took it already
    if (!*ran) NodeFinished(step);
    throw;
  }
}

void Executor::CaptureStepEnded(StepState* step) noexcept {
  try {
    StepCapture* c = step->capture.get();
    if (step->capture_mode == CaptureMode::kObserve) {
      c->Observed(step->signature, !step->failed() && step->recvs_left == 0);
      RecordCaptureStats(step, "uncaptured: watching for identical steps before capturing");
      return;
    }
    if (step->capture_mode != CaptureMode::kDryRun) return;
    dry_run_ = false;
    std::unique_ptr<Device::CapturedWork> work;
    Status s = services_.device->EndCapture(&work);  // always: the device must stop capturing
    if (step->failed()) s = step->status();
    CaptureArena* arena = step->arena;
    for (const std::string& h : step->variable_handles)
      if (s.ok() && h.empty()) s = errors::Internal("a variable of the capture gave no handle");
    if (!s.ok()) {
      if (!c->off()) c->Drop("the capture failed: " + s.ToString());  // (off already when it cannot be captured)
      if (arena) arena->Release();
      return;
    }
    auto held = std::make_shared<std::unique_ptr<Device::CapturedWork>>(std::move(work));
    std::shared_ptr<StepCapture> capture = step->capture;
    auto finish = [capture, held, arena, inputs = std::move(step->recv_values),
                   outputs = std::move(step->send_inputs), handles = step->variable_handles](
                      const Status& st, const std::vector<const void*>& buffers, const std::vector<bool>&) {
      for (const void* b : buffers)
        if (st.ok() && b == nullptr) return capture->Failed("a variable of the capture has no value"), arena->Release();
      if (!st.ok()) {
        capture->Failed("its variables could not be inspected: " + st.ToString());
        return arena->Release();
      }
      capture->Captured(std::move(*held), arena, inputs, outputs, handles, buffers);
    };
    if (step->variable_handles.empty()) finish(Status::OK(), {}, {});
    else if (services_.variables) services_.variables->InspectBuffers(step->variable_handles, std::move(finish));
    else finish(errors::Unavailable("no variable access"), {}, {});
  } catch (...) {  // no memory to keep the capture: steps run as usual
    if (step->capture_mode == CaptureMode::kDryRun && step->capture) {
      step->capture->Drop("out of memory");
      if (step->arena) step->arena->Release();
    }
  }
}

void Executor::StartDryRun(uint64_t graph_handle, const std::shared_ptr<StepCapture>& capture) {
  Device* device = services_.device;
  DryRunSetUp setup;
  setup.capture = capture;
  const CaptureSignature& sig = capture->signature();
  for (size_t i = 0; i < sig.shapes.size(); ++i) {  // the fixed buffers of the feeds, outside the arena
    Tensor t;
    Status s = Tensor::Create(device->home_allocator(), sig.dtypes[i], sig.shapes[i], &t);
    if (!s.ok()) return capture->Drop("no memory for its fixed buffers: " + s.ToString());
    setup.inputs.push_back(std::move(t));
  }
  setup.arena = NewCaptureArena(device->home_allocator(), device->name() + " capture");
  Status s = device->BeginCapture(setup.arena);
  if (!s.ok()) {
    setup.arena->Release();
    return capture->Drop(s.ToString());
  }
  capture->Started();
  RunStepRequest req;
  req.step_id = -next_step_id_;  // no rendezvous, queue or client sees it
  req.timeout_ms = 60000;        // it waits for nothing but its variables' reads
  pending_dry_run_ = &setup;
  StartStep(capture->plan(), graph_handle, req, [](RunStepResponse&&) {});
  if (pending_dry_run_ == &setup) {  // it did not start: the device must not stay capturing
    pending_dry_run_ = nullptr;
    std::unique_ptr<Device::CapturedWork> none;
    device->EndCapture(&none);
    setup.arena->Release();
    capture->Drop("its step could not start");
  }
}

void Executor::MaybeCapture() noexcept {
  if (dry_run_ || shutting_down_) return;
  try {
    if (steps_.empty()) {
      for (auto& [handle, c] : captures_) {
        if (!c->CaptureDue()) continue;
        StartDryRun(handle, c);
        break;
      }
    }
    if (!dry_run_) EndDeferred(Status::OK());
  } catch (...) {
    FailAllOnError();
  }
}

void Executor::EndDeferred(const Status& why, uint64_t only_handle) noexcept {
  std::vector<DeferredStart> starts;
  if (only_handle == 0) {
    starts.swap(deferred_);
  } else {
    for (auto it = deferred_.begin(); it != deferred_.end();) {
      if (it->graph_handle != only_handle) {
        ++it;
        continue;
      }
      starts.push_back(std::move(*it));
      it = deferred_.erase(it);
    }
  }
  for (DeferredStart& d : starts) {
    if (why.ok()) {
      StartStep(std::move(d.plan), d.graph_handle, d.req, std::move(d.reply));
      continue;
    }
    RefuseStart(d.req, d.reply, why);
  }
}

}  // namespace actorflow
