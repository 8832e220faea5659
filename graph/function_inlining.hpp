// Function inlining: how graphs that call the functions of their library
// (TensorFlow 2's graphs and SavedModels, TF1's Defun) run here. Before a
// GraphDef is imported, every call is replaced by the function's body:
//
//   PartitionedCall, StatefulPartitionedCall (attr f), or a node whose op is a
//   library function's name:
//     the body's nodes become "<call>/<node>", their inputs rewritten from the
//     function's form ("arg", "node:out_arg:i", "^node") to the graph's; the
//     call becomes an IdentityN "<call>" of the function's results (a NoOp
//     when it has none), so "<call>:i" and "^<call>" mean what they meant,
//     with control edges from the body's stateful nodes and control_ret, so
//     that running the call runs its side effects (a restore function's
//     assignments). The call's control inputs reach every body node through
//     a NoOp "<call>/_input_control".
//   If, StatelessIf (then_branch, else_branch), lowered as TensorFlow lowers
//   them: each input through a Switch on the condition, both branches
//   inlined ("<call>/then/...", "<call>/else/...") behind pivots so that only
//   the taken one runs, each result a Merge of the two.
//   While, StatelessWhile (cond, body), lowered to a frame named after the
//   node: Enter, Merge, the cond inlined, LoopCond, Switch, Exit, the body
//   inlined, NextIteration; iterations run concurrently as any loop's do.
//
// Calls inside bodies are inlined in turn (at most kMaxInlineDepth deep, and
// to at most kMaxInlinedNodes nodes in all: nested calls can grow a graph
// exponentially).
// Refused (Unimplemented, naming the node and function): functions with list
// arguments or attrs left as placeholders, If on a non-bool condition, and a
// While without loop variables.
#pragma once

#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"

namespace actorflow {

constexpr int kMaxInlineDepth = 32;
/// The most nodes a graph may have once its calls are inlined (InvalidArgument beyond).
constexpr int kMaxInlinedNodes = 1 << 20;

/// True when `def` calls a function of its library (or uses If or While).
bool HasFunctionCalls(const proto::GraphDef& def);

/// Replaces every call in `def` by the function's body (see above). Every op
/// the bodies use must be registered (the caller checks that first).
Status InlineFunctionCalls(proto::GraphDef* def);

}  // namespace actorflow
