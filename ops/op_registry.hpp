// OpRegistry: every op's interface, registered next to its kernels.
//
//   AF_REGISTER_OP("MatMul")
//       .Input("a: T").Input("b: T").Output("product: T")
//       .Attr("transpose_a: bool = false")
//       .Attr("T: {float, double, int32, int64}")
//       .SetShapeFn(shape_fns::MatMul);
//
// Spec strings follow TensorFlow's: inputs and outputs are "name: type" where
// type is a dtype ("float"), a type attr ("T"), "N * T" or a type-list attr;
// attrs are "name: kind [= default]" with kinds type, int, float, bool, string,
// shape, tensor, func, list(...), "{float, double}" (allowed types) and
// "int >= 1" (minimum). The definitions are stored as proto::OpDef, so they are
// exported exactly as TensorFlow's OpDefs are.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "actorflow/core/proto/op_def.pb.h"
#include "actorflow/core/status.hpp"

namespace actorflow {

class InferenceContext;
using ShapeFn = std::function<Status(InferenceContext* c)>;

struct OpRegistration {
  proto::OpDef op_def;
  ShapeFn shape_fn;  // may be empty: outputs of unknown shape
};

/// Builds one OpRegistration from spec strings; parse errors are fatal at
/// start-up (they are programming errors in actorflow itself).
class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string name);
  OpDefBuilder& Input(const std::string& spec);
  OpDefBuilder& Output(const std::string& spec);
  OpDefBuilder& Attr(const std::string& spec);
  OpDefBuilder& SetIsStateful();
  OpDefBuilder& SetIsCommutative();
  OpDefBuilder& SetAllowsUninitializedInput();
  OpDefBuilder& SetShapeFn(ShapeFn fn);
  OpDefBuilder& Doc(const std::string& summary);
  /// Parses everything; non-OK on a malformed spec.
  Status Finalize(OpRegistration* out) const;

 private:
  OpRegistration reg_;
  std::vector<std::string> inputs_, outputs_, attrs_;
};

class OpRegistry {
 public:
  static OpRegistry* Global();
  /// Adds an op; a duplicate name or malformed spec aborts (a bug in actorflow).
  void Register(const OpDefBuilder& b);
  /// nullptr when no op of that name is registered.
  const OpRegistration* Find(const std::string& name) const;
  Status LookUp(const std::string& name, const OpRegistration** out) const;
  std::vector<std::string> ListOpNames() const;

  /// Declares op `name` not differentiable (AF_REGISTER_NO_GRADIENT, next to
  /// the op): the gradient builder (client/gradients/) sends no gradient
  /// through it instead of refusing it for want of a gradient function.
  void MarkNotDifferentiable(const std::string& name);
  bool IsNotDifferentiable(const std::string& name) const;
  /// Every op declared not differentiable, sorted.
  std::vector<std::string> ListNotDifferentiable() const;

 private:
  mutable std::mutex mu_;  // registration runs at static-init time, lookups later
  std::map<std::string, std::unique_ptr<OpRegistration>> ops_;
  std::set<std::string> not_differentiable_;
};

namespace detail {
struct OpRegistrar {
  OpRegistrar(const OpDefBuilder& b) { OpRegistry::Global()->Register(b); }  // NOLINT(implicit)
};
struct NoGradientRegistrar {
  explicit NoGradientRegistrar(const char* op) { OpRegistry::Global()->MarkNotDifferentiable(op); }
};
}  // namespace detail

}  // namespace actorflow

#define AF_REGISTER_OP(name) AF_REGISTER_OP_UNIQ(__COUNTER__, name)
#define AF_REGISTER_OP_UNIQ(ctr, name) AF_REGISTER_OP_UNIQ2(ctr, name)
#define AF_REGISTER_OP_UNIQ2(ctr, name) \
  static ::actorflow::detail::OpRegistrar af_op_registrar_##ctr = ::actorflow::OpDefBuilder(name)

// Declares an op not differentiable (integer, boolean, shape and stateful ops):
//   AF_REGISTER_NO_GRADIENT("Shape");
#define AF_REGISTER_NO_GRADIENT(name) AF_REGISTER_NO_GRADIENT_UNIQ(__COUNTER__, name)
#define AF_REGISTER_NO_GRADIENT_UNIQ(ctr, name) AF_REGISTER_NO_GRADIENT_UNIQ2(ctr, name)
#define AF_REGISTER_NO_GRADIENT_UNIQ2(ctr, name) \
  static ::actorflow::detail::NoGradientRegistrar af_no_gradient_registrar_##ctr(name)
