#include "actorflow/graph/preparation.hpp"

#include "actorflow/ops/attrs.hpp"

namespace actorflow {

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
  if (!options.graph_options.capture_gpu_steps)  // the executor then never captures their partitions
    for (Node* n : g->nodes())
      if (n->assigned_device().find("/device:GPU:") != std::string::npos)
        (*n->mutable_def()->mutable_attr())["_no_capture"] = AttrBool(true);
  if (options.last_stage == PreparationStage::kPlace) return Status::OK();
  AF_RETURN_IF_ERROR(PartitionGraph(*g, options.partitioning, &out->partitions));
  if (out->partitions.empty()) return errors::Internal("the graph has no nodes left to run");
  return Status::OK();
}

}  // namespace actorflow
