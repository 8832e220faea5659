#include "actorflow/graph/optimize.hpp"

#include "actorflow/graph/constant_folding.hpp"
#include "actorflow/graph/cse.hpp"

namespace actorflow {

Status OptimizeGraph(Graph* g, Device* cpu, const GraphOptions& options) {
  if (options.do_common_subexpression_elimination)
    AF_RETURN_IF_ERROR(EliminateCommonSubexpressions(g).WithContext("in common subexpression elimination"));
  if (!options.do_constant_folding) return Status::OK();
  bool folded = false;
  AF_RETURN_IF_ERROR(FoldConstants(g, cpu, ConstantFoldingOptions(), &folded).WithContext("in constant folding"));
  if (folded && options.do_common_subexpression_elimination)
    AF_RETURN_IF_ERROR(EliminateCommonSubexpressions(g).WithContext("in common subexpression elimination"));
  return Status::OK();
}

}  // namespace actorflow
