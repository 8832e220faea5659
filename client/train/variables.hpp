// Variables for graph builders: a VariableV2 node with its initializer and
// read, kept in the scope's collections so that an initializer op, a Saver and
// the optimizers can find them (TensorFlow's tf.Variable and
// tf.global_variables_initializer, with the same node names: "w", "w/Assign",
// "w/read", "w/Initializer/...").
//
//   Scope root = Scope::NewRootScope();
//   root.SetGraphSeed(42);
//   Variable w = NewVariable(root, "w", {784, 256}, DT_FLOAT, init::GlorotUniform());
//   Variable b = NewVariable(root, "b", {256}, DT_FLOAT, init::Zeros());
//   auto h = ops::Relu(root, ops::BiasAdd(root, ops::MatMul(root, x, w.value), b.value));
//   Operation init = GlobalVariablesInitializer(root);   // run once, then train
#pragma once

#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "actorflow/client/builder.hpp"

namespace actorflow {

/// Where one part of a partitioned variable lies in the whole
/// (client/train/partitioned_variables.hpp; TensorFlow's PartitionInfo).
struct PartitionInfo {
  TensorShape full_shape;
  std::vector<int64_t> offset;  // one per dimension
};

/// Builds a variable's initial value: (scope under "<name>/Initializer",
/// shape, dtype) -> the value. Any callable of that signature converts to
/// one. For a part of a partitioned variable, Part builds that part's value:
/// by default the same rule at the part's shape (values drawn per part, as
/// TensorFlow's initializers do), and what depends on the whole shape takes it
/// from the PartitionInfo (GlorotUniform's fans; Constant(tensor)'s slice;
/// a seeded random initializer mixes the part's offset into its seed, so
/// equal-shaped parts differ, where TensorFlow 1.x draws them alike). A
/// callable that wraps an initializer is a new one: its parts get the
/// wrapped one's whole rule at their own shape, not its Part.
class VariableInitializer {
 public:
  using Whole = std::function<Output(const Scope&, const TensorShape&, DataType)>;
  using PartOf = std::function<Output(const Scope&, const TensorShape& part, DataType, const PartitionInfo&)>;
  VariableInitializer() = default;
  template <typename F, typename = std::enable_if_t<std::is_invocable_r_v<Output, F&, const Scope&, const TensorShape&,
                                                                          DataType> &&
                                                    !std::is_same_v<std::decay_t<F>, VariableInitializer>>>
  VariableInitializer(F f) : whole_(std::move(f)) {}  // NOLINT: implicit, as the std::function it was
  VariableInitializer(Whole whole, PartOf part) : whole_(std::move(whole)), part_(std::move(part)) {}

  Output operator()(const Scope& s, const TensorShape& shape, DataType dtype) const { return whole_(s, shape, dtype); }
  Output Part(const Scope& s, const TensorShape& part, DataType dtype, const PartitionInfo& info) const {
    return part_ ? part_(s, part, dtype, info) : whole_(s, part, dtype);
  }
  explicit operator bool() const { return static_cast<bool>(whole_); }

 private:
  Whole whole_;
  PartOf part_;
};

namespace init {
VariableInitializer Zeros();
VariableInitializer Ones();
/// A scalar, broadcast to the shape, or a tensor of exactly that shape.
VariableInitializer Constant(const Tensor& value);
VariableInitializer Constant(double value);
/// Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010).
VariableInitializer GlorotUniform(int64_t seed = -1);
VariableInitializer RandomUniform(double minval, double maxval, int64_t seed = -1);
VariableInitializer RandomNormal(double mean, double stddev, int64_t seed = -1);
VariableInitializer TruncatedNormal(double mean, double stddev, int64_t seed = -1);
}  // namespace init

/// A variable that is one part of a larger one (TensorFlow's
/// Variable.SaveSliceInfo): a Saver saves and restores the parts of
/// `full_name` as that one tensor. Kept on the VariableV2 node as the attrs
/// _save_slice_info_full_name, _full_shape and _offset.
struct SaveSliceInfo {
  std::string full_name;          // empty: a whole variable
  TensorShape full_shape;
  std::vector<int64_t> offset;    // of this part in the whole, one per dimension
  bool valid() const { return !full_name.empty(); }
};

struct Variable {
  std::string name;
  DataType dtype = DT_INVALID;
  TensorShape shape;
  Output ref;          // the VariableV2 output: for Assign*, Apply* and as a gradient's x
  Output value;        // "<name>/read": its value in a step
  Output initializer;  // "<name>/Assign": sets the initial value
  SaveSliceInfo save_slice;  // set for a part of a partitioned variable (and its optimizer slots)
  bool valid() const { return ref.valid(); }
};

/// Marks `var` as a part of `info.full_name` (on its node, so GlobalVariables
/// and a Saver see it). InvalidArgument (to the scope) when the part does not
/// fit in the full shape.
void SetSaveSliceInfo(const Scope& scope, Variable* var, const SaveSliceInfo& info);

/// Adds a variable named `name` under the scope's name scope. Trainable
/// variables are what optimizers update by default. container/shared_name:
/// see VariableV2 ("" = default container and the variable's own name).
Variable NewVariable(const Scope& scope, const std::string& name, const TensorShape& shape, DataType dtype,
                     const VariableInitializer& initializer, bool trainable = true, const std::string& container = "",
                     const std::string& shared_name = "");

/// A local variable (TensorFlow's tf.local_variables: the epoch counter of an
/// input producer): kept out of GlobalVariables, so neither trained nor saved
/// by a Saver; LocalVariablesInitializer sets it.
Variable NewLocalVariable(const Scope& scope, const std::string& name, const TensorShape& shape, DataType dtype,
                          const VariableInitializer& initializer);

/// Every variable added to the scope's graph, and the trainable ones.
std::vector<Variable> GlobalVariables(const Scope& scope);
std::vector<Variable> TrainableVariables(const Scope& scope);
/// A NoOp ("init" unless the scope names it) depending on every variable's
/// initializer: run it once before training.
Operation GlobalVariablesInitializer(const Scope& scope);
/// The local variables, and a NoOp ("init_local" unless the scope names it)
/// depending on their initializers.
std::vector<Variable> LocalVariables(const Scope& scope);
Operation LocalVariablesInitializer(const Scope& scope);
/// The int64 scalar "global_step" variable, created on first use.
Variable GetOrCreateGlobalStep(const Scope& scope);

/// The value of `var` when this node runs (its reference taken as a value),
/// not through its "read" node, which may run earlier in a step: give the
/// scope control dependencies to read it after an update.
Output ReadVariableNow(const Scope& scope, const Variable& var);

}  // namespace actorflow
