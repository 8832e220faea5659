#include "actorflow/graph/preparation.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "actorflow/graph/remapper.hpp"
#include "actorflow/ops/attrs.hpp"

namespace actorflow {

namespace {

bool OnGpu(const Node* n) { return n->assigned_device().find("/device:GPU:") != std::string::npos; }

// Marks `_no_capture` (its value: why) on the nodes of each GPU whose steps
// the executor must not capture (actors/device/step_capture.hpp): all of
// them when the session turned capture off; a GPU whose tensors come back to
// it in the same step through another device (a replay waits for all its
// _Recvs before it runs anything, so such a round trip would never end).
void MarkUncapturable(Graph* g, bool capture) {
  std::vector<std::string> gpus;
  for (const Node* n : g->nodes())
    if (OnGpu(n) && std::find(gpus.begin(), gpus.end(), n->assigned_device()) == gpus.end())
      gpus.push_back(n->assigned_device());
  for (const std::string& gpu : gpus) {
    std::string why = capture ? "" : "capture is off for this session (GraphOptions::capture_gpu_steps)";
    if (why.empty()) {
      // From every edge leaving the GPU, does a path come back to it?
      std::vector<char> seen(static_cast<size_t>(g->num_node_ids()), 0);
      std::vector<const Node*> stack;
      for (const Node* n : g->nodes()) {
        if (n->assigned_device() != gpu) continue;
        for (const Edge* e : n->out_edges())
          if (e->dst->assigned_device() != gpu && !seen[static_cast<size_t>(e->dst->id())]) {
            seen[static_cast<size_t>(e->dst->id())] = 1;
            stack.push_back(e->dst);
          }
      }
      // A node on another GPU stands for all of that GPU's nodes: a held
      // replay there sends nothing until all of its _Recvs are in.
      std::vector<std::string> held;
      auto enter = [&](const Node* n) {
        if (!OnGpu(n) || std::find(held.begin(), held.end(), n->assigned_device()) != held.end()) return;
        held.push_back(n->assigned_device());
        for (const Node* m : g->nodes())
          if (m->assigned_device() == n->assigned_device() && !seen[static_cast<size_t>(m->id())]) {
            seen[static_cast<size_t>(m->id())] = 1;
            stack.push_back(m);
          }
      };
      for (size_t i = 0, n = stack.size(); i < n; ++i) enter(stack[i]);
      while (!stack.empty() && why.empty()) {
        const Node* n = stack.back();
        stack.pop_back();
        enter(n);
        for (const Edge* e : n->out_edges()) {
          const Node* d = e->dst;
          if (d->assigned_device() == gpu) {
            why = "its tensors come back to it through another device within a step (node '" + d->name() + "')";
            break;
          }
          if (!seen[static_cast<size_t>(d->id())]) {
            seen[static_cast<size_t>(d->id())] = 1;
            stack.push_back(d);
          }
        }
      }
    }
    if (why.empty()) continue;
    for (Node* n : g->nodes())
      if (n->assigned_device() == gpu) (*n->mutable_def()->mutable_attr())["_no_capture"] = AttrString(why);
  }
}

}  // namespace

Status PrepareGraph(Graph* g, const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
                    const std::vector<std::string>& targets, const PreparationOptions& options, PreparedGraph* out) {
  if (!fetches.empty() || !targets.empty())
    AF_RETURN_IF_ERROR(RewriteGraphForExecution(g, feeds, fetches, targets, &out->info));
  if (options.last_stage == PreparationStage::kPrune) return Status::OK();
  if (options.fold_device) AF_RETURN_IF_ERROR(OptimizeGraph(g, options.fold_device, options.graph_options));
  if (options.last_stage == PreparationStage::kOptimize) return Status::OK();
  if (!options.devices) return errors::Internal("graph preparation: no devices to place on");
  AF_RETURN_IF_ERROR(PlaceGraph(g, *options.devices, options.placer));
  if (options.on_placed) options.on_placed(*g);
  AF_RETURN_IF_ERROR(FuseOptimizerUpdates(g, options.graph_options.fuse_optimizer_updates)
                         .WithContext("in optimizer-update fusion"));
  if (options.graph_options.do_remapping)
    AF_RETURN_IF_ERROR(FuseMatMulChains(g).WithContext("in op fusion (remapping)"));
  MarkUncapturable(g, options.graph_options.capture_gpu_steps);
  if (options.last_stage == PreparationStage::kPlace) return Status::OK();
  AF_RETURN_IF_ERROR(PartitionGraph(*g, options.partitioning, &out->partitions));
  if (out->partitions.empty()) return errors::Internal("the graph has no nodes left to run");
  return Status::OK();
}

}  // namespace actorflow
