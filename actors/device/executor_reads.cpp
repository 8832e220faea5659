// Variable reads. A ready node with inputs taken by value from ref edges
// (deref inputs) first reads those variables (VariableAccess), so it sees
// their values as of now, after everything it depends on. Such nodes wait in
// `read_wait_` until the ready queue is drained; then each step's waiting
// nodes read in one request: the variables under their locks at once (those
// of this process, answered at once), or one round trip to a container of
// another process per batch rather than one per node.
#include <boost/container/small_vector.hpp>

#include "actorflow/actors/device/executor.hpp"
#include "actorflow/core/resource_handle.hpp"

namespace actorflow {

// A value in device memory is readable on that device only: a variable placed
// on a GPU by one graph and read on the CPU (or another GPU) by another is an
// error naming it, never host code dereferencing device memory.
Status Executor::CheckReadable(const Tensor& value, const Tensor& ref) const {
  if (value.InHostMemory() || value.buffer()->allocator() == services_.device->home_allocator()) return Status::OK();
  std::string name = "a variable";
  const std::string* encoded = nullptr;
  ResourceHandle h;
  if (RefTensorHandle(ref, &encoded).ok() && ResourceHandle::Decode(*encoded, &h).ok()) name = "variable " + h.DebugName();
  return errors::FailedPrecondition(name, " holds its value in the memory of ", h.device.empty() ? "another device" : h.device,
                                    ", which ", services_.device->name(),
                                    " cannot read; the nodes taking a variable by reference are placed on one device "
                                    "per graph: place them the same way in every graph that shares the variable");
}

namespace {

// Where one value read goes: an input of the reading node.
struct ReadFill {
  IterationState* iter;  // alive while its reading node is outstanding
  int32_t slot;          // input slot in the iteration
  int32_t deref;         // index into the iteration's deref flags
};

}  // namespace

// Puts the values read for `reading` (of `step`) into their inputs and queues
// those nodes; a failed read fails the step. The queue grows first: once
// anything is handed on, only Propagate of a failed read may throw (as a node
// run from RunReady may).
template <class Fills, class Reading>
void Executor::FinishStepReads(StepState* step, const Fills& fills, const Reading& reading, Status status,
                               Tensor* values, size_t num_values) {
  ready_.reserve(ready_.size() + reading.size());
  if (status.ok() && num_values != fills.size())
    status = errors::Internal("container answered ", num_values, " values for ", fills.size());
  for (size_t i = 0; i < fills.size() && status.ok(); ++i)
    status = CheckReadable(values[i], fills[i].iter->inputs[fills[i].slot]);
  if (!status.ok()) {
    // The first fails the step; the others, still outstanding, are skipped.
    for (size_t i = 1; i < reading.size(); ++i) ready_.push_back(reading[i]);
    Propagate(step, reading[0].iter, reading[0].node, status, inline_outputs_.data());
    return;
  }
  for (size_t i = 0; i < fills.size(); ++i) {
    fills[i].iter->inputs[fills[i].slot] = std::move(values[i]);
    fills[i].iter->derefed[fills[i].deref] = 1;
  }
  // Still outstanding, they run (or are skipped) from the queue.
  for (const TaggedNode& t : reading) ready_.push_back(t);
}

// Skips `t` of `step`, which has failed: nothing to allocate (ExecuteNode).
void Executor::SkipFailedNode(StepState* step, const TaggedNode& t) noexcept {
  try {
    ExecuteNode(step, t.iter, t.node, t.dead);
  } catch (...) {  // answering the step as it ends ran out of memory: the client's deadline ends its wait
  }
}

// Sends one read for `nodes` (ready, of one live step). A node whose handle
// is malformed fails alone; nodes of a step that failed meanwhile are skipped.
// Variables of this process are read at once (VariableAccess::ReadNow), with
// no request, callback or list allocated for a step's few reads. Out of
// memory before a node is handed on (run, queued, failed or given to a read)
// fails the step, and the nodes not handed on are skipped: none is lost,
// which would leave its step outstanding for ever.
void Executor::SendStepReads(StepState* step, const TaggedNode* nodes, size_t num_nodes) noexcept {
  const int64_t step_id = step->step_id();
  size_t next = 0;              // nodes[next..] are not handed on yet
  bool reading_handed = false;  // the nodes of `reading` are
  boost::container::small_vector<const std::string*, 8> handles;  // in the refs of the nodes' inputs
  boost::container::small_vector<ReadFill, 8> fills;                // per handle
  boost::container::small_vector<TaggedNode, 4> reading;
  try {
    const ExecutorPlan& plan = step->plan();
    size_t derefs = 0;  // room first: adding to the lists below cannot throw
    for (size_t n = 0; n < num_nodes; ++n) derefs += static_cast<size_t>(plan.item(nodes[n].node).num_deref);
    handles.reserve(derefs);
    fills.reserve(derefs);
    reading.reserve(num_nodes);
    while (next < num_nodes) {
      const TaggedNode& t = nodes[next++];
      if (step->failed()) {
        ExecuteNode(step, t.iter, t.node, t.dead);  // skips it; `step` may end with the last one
        continue;
      }
      const NodeItem& item = plan.item(t.node);
      IterationState& iter = *t.iter;
      Status bad;
      const size_t first = handles.size();
      for (int32_t k = 0; k < item.num_deref && bad.ok(); ++k) {
        if (iter.derefed[item.deref_local + k]) continue;
        const std::string* handle = nullptr;
        const int32_t slot = item.input_start + plan.deref_inputs(item)[k];
        if (item.kind == NodeKind::kMerge && !iter.inputs[slot].IsInitialized()) {
          iter.derefed[item.deref_local + k] = 1;  // a merge input that did not come: nothing to read
          continue;
        }
        bad = RefTensorHandle(iter.inputs[slot], &handle);
        if (bad.ok()) {
          handles.push_back(handle);
          fills.push_back({t.iter, slot, item.deref_local + k});
        }
      }
      if (!bad.ok()) {
        handles.resize(first);
        fills.resize(first);
        Propagate(step, t.iter, t.node, bad, inline_outputs_.data());
        continue;
      }
      reading.push_back(t);
    }
    if (reading.empty()) return;  // `step` may be gone
    if (!services_.variables) {
      ready_.reserve(ready_.size() + reading.size());
      reading_handed = true;
      FinishStepReads(step, fills, reading,
                      errors::Unavailable("no container actor holds variables on ", services_.device->name()),
                      nullptr, 0);
      return;
    }
    {
      boost::container::small_vector<Tensor, 8> values(handles.size());
      Status now;
      if (services_.variables->ReadNow(handles.data(), handles.size(), values.data(), &now)) {
        ready_.reserve(ready_.size() + reading.size());
        reading_handed = true;
        FinishStepReads(step, fills, reading, now, values.data(), values.size());
        return;
      }
    }
    // By message (another process) or once resolved: the handles are copied
    // (the refs holding them may be gone when it is answered).
    VarReadRequest req;
    req.handles.reserve(handles.size());
    for (const std::string* h : handles) req.handles.push_back(*h);
    std::function<void(VarReadResponse&)> answered =
        [this, step_id, fills = std::vector<ReadFill>(fills.begin(), fills.end()),
         reading = std::vector<TaggedNode>(reading.begin(), reading.end())](VarReadResponse& r) {
          auto it = steps_.find(step_id);
          if (it == steps_.end()) return;  // cannot happen: the reading nodes keep their step
          FinishStepReads(it->second.state.get(), fills, reading, r.status, r.values.data(), r.values.size());
        };
    reading_handed = true;  // the callback has them
    services_.variables->Read(std::move(req), std::move(answered));
  } catch (...) {
    FailStepOnError(step_id);  // the nodes not handed on keep the step alive
    if (!reading_handed)
      for (const TaggedNode& t : reading) SkipFailedNode(step, t);
    while (next < num_nodes) SkipFailedNode(step, nodes[next++]);
  }
}

// Sends the reads of every node in `read_wait_`, one request per step.
// The waiting list's buffer is kept (swapped back when nothing was queued
// meanwhile): a step's reads allocate no list. Out of memory for a step's
// list fails that step, its waiting nodes skipped.
void Executor::SendReads() {
  std::vector<TaggedNode> waiting;
  waiting.swap(read_wait_);
  boost::container::small_vector<TaggedNode, 8> nodes;
  for (size_t i = 0; i < waiting.size(); ++i) {
    StepState* step = waiting[i].step;
    if (!step) continue;  // taken with an earlier step's batch
    const int64_t step_id = step->step_id();
    try {
      nodes.clear();
      for (size_t j = i; j < waiting.size(); ++j)
        if (waiting[j].step == step) nodes.push_back(waiting[j]);
    } catch (...) {
      FailStepOnError(step_id);  // its waiting nodes keep it alive until the last is skipped
      for (size_t j = i; j < waiting.size(); ++j) {
        if (waiting[j].step != step) continue;
        waiting[j].step = nullptr;
        SkipFailedNode(step, waiting[j]);
      }
      continue;
    }
    for (size_t j = i; j < waiting.size(); ++j)
      if (waiting[j].step == step) waiting[j].step = nullptr;
    SendStepReads(step, nodes.data(), nodes.size());
  }
  waiting.clear();
  if (read_wait_.empty()) read_wait_.swap(waiting);
}

}  // namespace actorflow
