// Symbolic gradients, in the spirit of TensorFlow's C++ API
// (tensorflow/cc/framework/gradients.h).
//
//   Scope root = Scope::NewRootScope();
//   auto x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE);
//   auto y = ops::Sum(root, ops::Square(root, x), 0);
//   std::vector<Output> dx;
//   AF_RETURN_IF_ERROR(AddSymbolicGradients(root, {y}, {x}, &dx));  // dx[0] = 2x
//
// AddSymbolicGradients adds the nodes computing d(sum of ys)/d(each x) to the
// scope's graph, under the name scope "gradients/", and returns their outputs;
// nothing is computed until a Session runs them. Only the nodes that lie on a
// data path from some x to some y get gradient nodes: control edges are
// ignored, and no gradient flows through tensors that are not of a floating
// dtype (integer, bool, string). Where several consumers send a tensor a
// gradient, they are summed with AddN.
//
// Every op says how its gradient is computed by registering a GradFunc, by
// family (client/gradients/math_grad.cpp, client/gradients/nn_grad.cpp,
// client/gradients/array_grad.cpp), or says that it has none:
//
//   Status SquareGrad(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
//                     std::vector<Output>* grad_outputs) {
//     const Output x = op.input(0), two = grad::ScalarOf(scope, 2, x.type());
//     grad_outputs->push_back(ops::Mul(scope, grad_inputs[0], ops::Mul(scope, two, x)));  // dx = dy * 2x
//     return scope.status();
//   }
//   AF_REGISTER_GRADIENT("Square", SquareGrad);
//   AF_REGISTER_NO_GRADIENT("Shape");  // ops/op_registry.hpp: next to the op, in ops/
//
// (client/gradients/grad_helpers.hpp has the shared building blocks.) A node on a path
// from xs to ys whose op registered neither is an error naming the node and
// its op.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "actorflow/client/builder.hpp"
#include "actorflow/ops/op_registry.hpp"

namespace actorflow {

/// Builds the gradient of one node. `grad_inputs` has one gradient per output
/// of `op` (dL/d output i); `grad_outputs` receives one per input of `op`
/// (dL/d input i), an invalid Output() meaning "no gradient" (an integer input,
/// an axis, a shape). Build ops in `scope`; return scope.status() or an error.
/// When some outputs of `op` receive gradients and others do not, the others
/// get zeros (ZerosLike of the output), so every grad_input is valid.
using GradFunc = Status (*)(const Scope& scope, const Operation& op, const std::vector<Output>& grad_inputs,
                            std::vector<Output>* grad_outputs);

/// Op type -> gradient function (nullptr: the op has no gradient). Filled by
/// AF_REGISTER_GRADIENT at static-initialization time, read-only afterwards.
class GradOpRegistry {
 public:
  static GradOpRegistry* Global();
  /// Registers `fn` (nullptr: not differentiable) for `op`; a second
  /// registration for one op aborts at start-up (a bug in actorflow).
  bool Register(const std::string& op, GradFunc fn);
  /// The gradient function of `op`, nullptr for an op declared not
  /// differentiable (AF_REGISTER_NO_GRADIENT, ops/op_registry.hpp); NotFound
  /// when neither is registered for `op`.
  Status Lookup(const std::string& op, GradFunc* fn) const;
  /// Every op with a registration, sorted (with a function or without).
  std::vector<std::string> ListOps() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, GradFunc> grads_;
};

/// Adds the gradients d(sum_i <ys[i], grad_ys[i]>)/d(xs[j]) to the scope's
/// graph and returns them in `grad_outputs` (one per x, of x's base dtype and
/// shape). `grad_ys[i]` has the shape of ys[i]. An x that no y depends on (or
/// only through non-floating tensors or StopGradient) gets ZerosLike(x). xs
/// may be of ref dtype (variables); their gradients are ordinary tensors.
/// Errors (invalid arguments, an op without gradient on a path, an op that
/// fails to build) name the node; on error no gradient node stays in the graph.
/// An op that fails to build also records its error in the scope, as every
/// builder op does.
Status AddSymbolicGradients(const Scope& scope, const OutputList& ys, const OutputList& xs, const OutputList& grad_ys,
                            OutputList* grad_outputs);

/// Same, with grad_ys of ones (OnesLike of each y): the gradient of the sum of
/// all elements of all ys.
Status AddSymbolicGradients(const Scope& scope, const OutputList& ys, const OutputList& xs, OutputList* grad_outputs);

/// For a while loop's gradient (client/gradients/while_gradients.cpp): the gradient of
/// the graph between xs and ys only, without differentiating past an x (a
/// loop body's inputs are its Switches, whose predicate depends on them too).
/// Nodes go under the scope itself (no "gradients/" prefix).
Status AddSymbolicGradientsStoppingAtXs(const Scope& scope, const OutputList& ys, const OutputList& xs,
                                        const OutputList& grad_ys, OutputList* grad_outputs);

/// Whether gradients flow through tensors of `dtype` (its base type): the
/// floating and complex dtypes.
bool IsDifferentiableType(DataType dtype);

namespace detail {
struct GradRegistrar {
  GradRegistrar(const char* op, GradFunc fn) { GradOpRegistry::Global()->Register(op, fn); }
};
}  // namespace detail

}  // namespace actorflow

#define AF_REGISTER_GRADIENT(name, fn) AF_REGISTER_GRADIENT_UNIQ(__COUNTER__, name, fn)
#define AF_REGISTER_GRADIENT_UNIQ(ctr, name, fn) AF_REGISTER_GRADIENT_UNIQ2(ctr, name, fn)
#define AF_REGISTER_GRADIENT_UNIQ2(ctr, name, fn) \
  static ::actorflow::detail::GradRegistrar af_grad_registrar_##ctr(name, fn)
