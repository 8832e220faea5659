// Cond and WhileLoop: conditionals and loops built from the control-flow
// primitives (client/ops/control_flow_ops.hpp) with TensorFlow 1.x's structure
// and node names, so graphs built here and graphs written by TensorFlow run
// the same way.
//
//   OutputList out;
//   AF_RETURN_IF_ERROR(ops::WhileLoop(root, {i0, x0},
//       [](const Scope& s, const OutputList& v, Output* pred) { *pred = ops::Less(s, v[0], 10); return s.status(); },
//       [](const Scope& s, const OutputList& v, OutputList* next) {
//         *next = {ops::Add(s, v[0], 1), ops::Mul(s, v[1], 2.f)};
//         return s.status();
//       },
//       &out));
//
// A loop named "while" opens the frame "while": "while/Enter", "while/Merge",
// "while/LoopCond", "while/Switch", "while/Identity" (the body's inputs),
// "while/NextIteration", "while/Exit", with the cond's and body's ops under
// "while/" too. Tensors from outside that the cond or body use enter the loop
// as loop constants (an Enter with is_constant); ops without inputs (Consts)
// get a control edge from the loop's pivot so they run in every iteration.
// A cond named "cond" switches every outside tensor its branches use on the
// predicate ("cond/Switch_1", ...), so a branch not taken does not run at all,
// stateful ops included, and merges the branches' results ("cond/Merge").
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "actorflow/client/builder.hpp"

namespace actorflow {
namespace ops {

struct WhileOptions {
  /// How many iterations may run at once (their inputs permitting).
  int64_t parallel_iterations = 10;
  /// At most this many iterations (-1: no bound): the loop stops then even if its condition holds.
  int64_t maximum_iterations = -1;
  /// Per loop variable, the shapes it may take (empty: each keeps the shape it
  /// enters with). A variable whose shape after the body is not compatible is
  /// refused when the loop is built, naming it and both shapes.
  std::vector<PartialTensorShape> shape_invariants;
  /// The loop's name (made unique in the scope): its frame and node-name prefix.
  std::string name = "while";
};

/// Builds the condition from the loop variables (as the iteration sees them).
using WhileCondFn = std::function<Status(const Scope&, const OutputList& vars, Output* pred)>;
/// Builds the next values of the loop variables (one per variable, same dtypes).
using WhileBodyFn = std::function<Status(const Scope&, const OutputList& vars, OutputList* next)>;

/// `outputs`: the loop variables' values when the condition first fails.
Status WhileLoop(const Scope& scope, const OutputList& loop_vars, const WhileCondFn& cond, const WhileBodyFn& body,
                 OutputList* outputs, const WhileOptions& options = {});

/// Builds one branch's results.
using BranchFn = std::function<Status(const Scope&, OutputList* outputs)>;

/// `outputs`: true_fn's results when `pred` (a bool scalar) is true, else
/// false_fn's; both branches give as many results, of the same dtypes.
Status Cond(const Scope& scope, Input pred, const BranchFn& true_fn, const BranchFn& false_fn, OutputList* outputs,
            const std::string& name = "cond");

}  // namespace ops
}  // namespace actorflow
