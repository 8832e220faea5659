// Gradients of while loops. The gradient builder (client/gradients/gradients.cpp)
// treats a loop as one node whose inputs are its Enters' inputs and whose
// outputs are its Exits; when the gradients of its Exits are known it calls
// AddWhileLoopGradient, which builds a backward loop:
//
//  - the forward loop gets an iteration counter (a new loop variable), and
//    every forward value the body's gradient needs is pushed on a stack in
//    each iteration (StackPushV2; stacks order pushes by iteration, so
//    parallel iterations push in any order). The counter's next iteration
//    waits for the pushes, so the count leaves the loop only after all of them;
//  - the backward loop runs the count of iterations, as many at once as the
//    forward loop (one at a time when the body holds a loop), each popping
//    after the previous one has (a token passed between iterations orders
//    the pops): each pops the values of its forward iteration (last first) and runs the gradient of
//    the body (the graph from the Switches' true outputs to the NextIterations'
//    inputs) on them. Loop constants (Enters with is_constant) that are
//    differentiable get their gradient summed over the iterations.
//
// A value computed in a branch of a cond inside the body exists only in the
// iterations that took the branch: it is pushed then, and its pop is gated by
// the cond's predicate (itself pushed and popped), so it runs only in the
// backward iterations of those. Pushes signal the iteration counter through a
// ControlTrigger, which fires whether or not they ran.
//
// Loops are recognised from the graph's structure (Exit -> Switch -> Merge,
// LoopCond, Enter, NextIteration), so loops imported from TensorFlow graphs
// are differentiated too. Not supported (Unimplemented naming the node): a
// value that depends on the branches of several conds at once.
#pragma once

#include <string>
#include <vector>

#include "actorflow/client/builder.hpp"

namespace actorflow {

struct WhileLoopInfo {
  std::string frame;
  int64_t parallel_iterations = 10;
  Node* loop_cond = nullptr;
  struct Var {
    Node* enter = nullptr;
    Node* merge = nullptr;
    Node* sw = nullptr;    // output 1: the value the body gets
    Node* exit = nullptr;  // null when the loop has none for this variable
    Node* next = nullptr;  // NextIteration: its input is the body's result
  };
  std::vector<Var> vars;
  std::vector<Node*> const_enters;  // Enters with is_constant into the frame
};

/// Whether `n` is an Exit (of a loop the graph's structure identifies).
bool IsLoopExit(const Node* n);

/// The loop `exit` leaves. InvalidArgument naming the node when the graph
/// around it is not a while loop's structure.
Status FindWhileLoop(const Graph& g, Node* exit, WhileLoopInfo* loop);

/// Builds the gradient of `loop` (see the file comment). `dy_exits` per
/// loop variable (invalid: none); fills `d_inits` per loop variable (the
/// gradient of its Enter's input) and `d_consts` per loop constant.
Status AddWhileLoopGradient(const Scope& scope, const WhileLoopInfo& loop, const std::vector<Output>& dy_exits,
                            std::vector<Output>* d_inits, std::vector<Output>* d_consts);

}  // namespace actorflow
