// The C++ graph builder, in the spirit of TensorFlow's C++ API.
//
//   Scope root = Scope::NewRootScope();
//   auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
//   auto w = ops::Const(root, {{1.f, 2.f}, {3.f, 4.f}});
//   auto y = ops::Relu(root.WithOpName("y"), ops::MatMul(root, x, w));
//   proto::GraphDef def;
//   AF_RETURN_IF_ERROR(root.ToGraphDef(&def));   // first error of any op above
//   Session session;
//   AF_RETURN_IF_ERROR(session.Create(def));
//   std::vector<Tensor> out;
//   AF_RETURN_IF_ERROR(session.Run({{"x", x_value}}, {"y"}, {}, &out));
//
// Construction never computes: ops add nodes to the scope's graph and return
// Output handles. A Scope carries a name prefix (NewSubScope), the requested
// device (WithDevice) and control dependencies (WithControlDependencies);
// copies share the graph and the first error. Shape functions run as nodes are
// added, so a shape mismatch is reported here, naming the node.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/core/proto/graph.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/graph/graph.hpp"

namespace actorflow {

class Output;

/// A node of the graph under construction.
class Operation {
 public:
  Operation() = default;
  explicit Operation(Node* n) : node_(n) {}
  Node* node() const { return node_; }
  const std::string& name() const { return node_->name(); }
  Output output(int i) const;
  int num_outputs() const { return node_ ? node_->num_outputs() : 0; }
  /// The Output feeding data input i (invalid when it is not connected).
  Output input(int i) const;
  int num_inputs() const { return node_ ? node_->num_inputs() : 0; }

 private:
  Node* node_ = nullptr;
};

/// One output tensor of an operation: "name:index".
class Output {
 public:
  Output() = default;
  Output(Node* n, int index) : node_(n), index_(index) {}
  Output(const Operation& op) : Output(op.node(), 0) {}  // NOLINT(implicit): single-output ops
  Node* node() const { return node_; }
  int index() const { return index_; }
  Operation op() const { return Operation(node_); }
  DataType type() const { return node_ ? BaseType(node_->output_type(index_)) : DT_INVALID; }
  /// "name:index", as Session::Run takes it.
  std::string name() const { return node_ ? node_->name() + ":" + std::to_string(index_) : "<invalid>"; }
  bool valid() const { return node_ != nullptr; }

 private:
  Node* node_ = nullptr;
  int index_ = 0;
};

/// Either an Output or a constant value that becomes a Const node when used.
/// Nested braces make tensors: {{1.f, 2.f}, {3.f, 4.f}} is a float [2,2].
class Input {
 public:
  struct Initializer {
    Initializer(float v) : tensor(Tensor::Scalar<float>(v)) {}                      // NOLINT
    Initializer(double v) : tensor(Tensor::Scalar<double>(v)) {}                    // NOLINT
    Initializer(int v) : tensor(Tensor::Scalar<int32_t>(v)) {}                      // NOLINT
    Initializer(int64_t v) : tensor(Tensor::Scalar<int64_t>(v)) {}                  // NOLINT
    Initializer(bool v) : tensor(Tensor::Scalar<bool>(v)) {}                        // NOLINT
    Initializer(const char* v) : tensor(Tensor::Scalar<std::string>(v)) {}          // NOLINT
    Initializer(const std::string& v) : tensor(Tensor::Scalar<std::string>(v)) {}   // NOLINT
    Initializer(const Tensor& t) : tensor(t) {}                                     // NOLINT
    Initializer(std::initializer_list<Initializer> list);                           // NOLINT
    Tensor tensor;
    Status status;
  };

  Input(const Output& o) : output_(o) {}               // NOLINT
  Input(const Operation& o) : output_(o) {}            // NOLINT
  Input(const Initializer& init) : init_(init), is_const_(true) {}  // NOLINT
  Input(std::initializer_list<Initializer> list) : init_(Initializer(list)), is_const_(true) {}  // NOLINT
  Input(float v) : Input(Initializer(v)) {}            // NOLINT
  Input(double v) : Input(Initializer(v)) {}           // NOLINT
  Input(int v) : Input(Initializer(v)) {}              // NOLINT
  Input(int64_t v) : Input(Initializer(v)) {}          // NOLINT
  Input(bool v) : Input(Initializer(v)) {}             // NOLINT
  Input(const Tensor& t) : Input(Initializer(t)) {}    // NOLINT
  Input(const std::string& v) : Input(Initializer(v)) {}  // NOLINT
  Input(const char* v) : Input(Initializer(v)) {}      // NOLINT

  bool is_const() const { return is_const_; }
  const Output& output() const { return output_; }
  const Initializer& initializer() const { return init_; }

 private:
  Output output_;
  Initializer init_{0};
  bool is_const_ = false;
};

using OutputList = std::vector<Output>;
/// How to keep a queue fed (TensorFlow's QueueRunnerDef): run each enqueue op
/// in a loop on its own thread; when the input ends (OutOfRange) close the
/// queue with `close_op`; on a stop request cancel with `cancel_op` (a close
/// that also cancels waiting enqueues).
struct QueueRunnerDef {
  std::string queue_name;
  std::vector<std::string> enqueue_op_names;
  std::string close_op_name;
  std::string cancel_op_name;
};

using AttrMap = std::map<std::string, proto::AttrValue>;

/// TensorFlow's device functions (`with tf.device(fn)`): the device a new
/// node requests, given its NodeDef (op, attrs, the device the scope gives it),
/// its op's definition and its inputs. Set with Scope::WithDeviceFunction;
/// client/train/replica_device_setter.hpp makes one.
using DeviceFunction =
    std::function<std::string(const proto::NodeDef& def, const proto::OpDef& op_def, const std::vector<OutputList>& args)>;

class Scope {
 public:
  static Scope NewRootScope();

  Scope WithOpName(const std::string& name) const;
  Scope NewSubScope(const std::string& name) const;
  Scope WithDevice(const std::string& device) const;
  /// Nodes built in the returned scope request the device `fn` gives them (it
  /// sees the scope's device in the NodeDef and may keep or merge it).
  Scope WithDeviceFunction(DeviceFunction fn) const;
  Scope WithControlDependencies(const std::vector<Operation>& deps) const;
  /// This graph's scope without name scope, device or control dependencies.
  Scope GraphRoot() const;

  bool ok() const;
  Status status() const;
  /// Records an error (the first one is kept).
  void UpdateStatus(const Status& s) const;
  /// The error recorded, which is forgotten: later ops build again (the
  /// Python front-end raises it where TensorFlow's graph construction would,
  /// and the graph stays usable; a failed op left no node).
  Status TakeStatus() const;
  Graph* graph() const;
  /// The graph as a GraphDef, or the first error of the ops built in it.
  Status ToGraphDef(proto::GraphDef* out) const;
  /// Loads `def` into the scope's graph, which must be empty (FailedPrecondition
  /// otherwise), so that ops can be built on top of an existing graph (take
  /// Outputs of its nodes with graph()->FindNode). Node names are kept (the
  /// scope's prefix does not apply) and shapes are inferred as for built ops.
  /// Errors name the node; on error the graph is left empty and the scope's
  /// status unchanged.
  Status ImportGraphDef(const proto::GraphDef& def) const;

  /// Adds an op. `args` has one entry per input arg of the op (several outputs
  /// for list args); type, list-type and number attrs are inferred from them.
  /// Returns an invalid Operation (and records the error) on failure.
  Operation AddOp(const std::string& op_type, const std::vector<OutputList>& args, const AttrMap& attrs = {}) const;
  /// An Output for an Input: itself, or a new Const node.
  Output AsOutput(const Input& in) const;
  /// The shape inferred for `o` when its node was built or imported (unknown
  /// rank when nothing is known).
  PartialTensorShape InferredShape(const Output& o) const;
  /// Refines what is known of `o`'s shape (TensorFlow's Tensor.set_shape):
  /// merged with what was inferred, so ops built after it see the merge.
  /// InvalidArgument, nothing changed, when the two are incompatible.
  Status SetShape(const Output& o, const PartialTensorShape& shape) const;

  /// Whether WithOpName named the next op.
  bool has_op_name() const { return !op_name_.empty(); }
  /// The name the next op gets: the WithOpName name, or `default_name` made unique.
  std::string GetUniqueNameForOp(const std::string& default_name) const;

  /// Named lists of outputs kept with the graph (TensorFlow's collections):
  /// client/train/variables.hpp keeps the variables and their initializers here.
  void AddToCollection(const std::string& key, const Output& value) const;
  std::vector<Output> GetCollection(const std::string& key) const;

  /// Queue runners the graph's input pipelines need (TensorFlow's
  /// "queue_runners" collection): client/train/queue_runner.hpp runs them.
  void AddQueueRunner(const QueueRunnerDef& def) const;
  std::vector<QueueRunnerDef> GetQueueRunners() const;

  /// The graph-level random seed (TensorFlow's tf.set_random_seed).
  void SetGraphSeed(int64_t seed) const;
  /// (seed, seed2) attrs for a random op given its own seed (-1: none), by
  /// TensorFlow's rules: deterministic when either seed is set, distinct per op.
  void GetSeeds(int64_t op_seed, int64_t* seed, int64_t* seed2) const;

 private:
  struct Shared;
  Scope() = default;
  std::shared_ptr<Shared> shared_;
  std::string prefix_;
  std::string op_name_;
  std::string device_;
  std::shared_ptr<const DeviceFunction> device_fn_;
  std::vector<Operation> control_deps_;
};

}  // namespace actorflow
