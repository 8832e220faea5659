// OpKernel: the code that computes one node, and the kernel registry.
//
// Contract. A kernel is constructed once per node when a graph is registered
// with a device actor, and then computes for every step that runs the node,
// possibly for several steps at once from several threads: Compute must not
// mutate the kernel. The OpKernelContext lives until Compute returns (or, for
// an AsyncOpKernel, until `done` is called). Errors are recorded with
// ctx->SetStatus (AF_REQUIRES) and never thrown: the executor turns them into
// the step's Status naming the node.
//
// Cheap kernels run inline on the device actor's thread; kernels that declare
// themselves expensive run on the compute pool when their inputs are large;
// asynchronous kernels (waiting on another actor) return at once and call done.
//
//   class ZeroOut : public OpKernel {
//    public:
//     using OpKernel::OpKernel;
//     void Compute(OpKernelContext* ctx) override { ... }
//   };
//   AF_REGISTER_KERNEL(KernelDefBuilder("ZeroOut").Device(DEVICE_CPU), ZeroOut);
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/core/proto/node_def.pb.h"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/ops/attrs.hpp"

namespace actorflow {

class CancellationManager;
class CollectiveAccess;
class OpKernelContext;
class QueueAccess;
class RendezvousAccess;
class StepResources;
class VariableAccess;

/// Arguments and results of one step: fed tensors are read by _Arg nodes,
/// fetched tensors written by _Retval nodes.
struct CallFrame {
  std::vector<Tensor> args;
  std::vector<Tensor> retvals;
};

class OpKernelConstruction {
 public:
  OpKernelConstruction(Device* device, const proto::NodeDef* def, const proto::OpDef* op_def,
                       DataTypeVector input_types, DataTypeVector output_types)
      : device_(device), def_(def), op_def_(op_def), input_types_(std::move(input_types)),
        output_types_(std::move(output_types)) {}

  const proto::NodeDef& def() const { return *def_; }
  const proto::OpDef& op_def() const { return *op_def_; }
  Device* device() const { return device_; }
  const DataTypeVector& input_types() const { return input_types_; }
  const DataTypeVector& output_types() const { return output_types_; }
  template <class T>
  Status GetAttr(const std::string& name, T* value) const {
    return GetNodeAttr(*def_, name, value);
  }
  bool HasAttr(const std::string& name) const { return HasNodeAttr(*def_, name); }
  void SetStatus(const Status& s) { status_.Update(s); }
  const Status& status() const { return status_; }

 private:
  Device* device_;
  const proto::NodeDef* def_;
  const proto::OpDef* op_def_;
  DataTypeVector input_types_, output_types_;
  Status status_;
};

class AsyncOpKernel;

class OpKernel {
 public:
  explicit OpKernel(OpKernelConstruction* c);
  virtual ~OpKernel() = default;
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  virtual void Compute(OpKernelContext* ctx) = 0;
  virtual AsyncOpKernel* AsAsync() { return nullptr; }
  /// True for kernels whose cost grows with their inputs (MatMul, reductions,
  /// element-wise math): the executor sends them to the compute pool when their
  /// inputs are large. Shape-only kernels (Reshape, Identity) stay inline.
  bool IsExpensive() const { return expensive_; }
  /// Whether this invocation should leave the device actor's thread for the
  /// compute pool. By default: expensive kernels whose inputs exceed 128 KB.
  /// Kernels whose cost follows their output rather than their inputs (Fill,
  /// Range) override this.
  virtual bool ShouldOffload(const Tensor* inputs, int num_inputs) const;
  /// Whether input `i`, of a dtype its device keeps in host memory (a GPU's
  /// integers), may also come in device memory, where the kernel reads it
  /// without the host: the class labels of SparseSoftmaxCrossEntropyWithLogits
  /// on a GPU. A captured step (actors/device/step_capture.hpp) feeds such an
  /// input from a fixed device buffer.
  virtual bool ReadsInDeviceMemory(int i) const { return false; }

  const std::string& name() const { return name_; }
  const std::string& type_string() const { return type_string_; }
  int num_inputs() const { return static_cast<int>(input_types_.size()); }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DataType input_type(int i) const { return input_types_[i]; }
  DataType output_type(int i) const { return output_types_[i]; }
  const DataTypeVector& output_types() const { return output_types_; }

 protected:
  bool expensive_ = false;

 private:
  // Not the NodeDef: a Const's value would be kept twice. Kernels read their
  // attrs at construction.
  std::string name_;
  std::string type_string_;
  DataTypeVector input_types_, output_types_;
};

class AsyncOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  using DoneCallback = std::function<void()>;
  /// Starts the work and returns; `done` is called exactly once, from any
  /// thread. If ComputeAsync throws, it must not have called (nor arranged to
  /// call) `done`: the executor then fails the node itself.
  virtual void ComputeAsync(OpKernelContext* ctx, DoneCallback done) = 0;
  void Compute(OpKernelContext* ctx) final;
  /// Whether this invocation is cheap enough to finish at once on the calling
  /// thread (a small MatMul): the executor then calls ComputeInline there,
  /// with no callback and no hand-off.
  virtual bool RunsInline(const Tensor* inputs, int num_inputs) const { return false; }
  /// Computes synchronously; called only when RunsInline said so.
  virtual void ComputeInline(OpKernelContext* ctx);
  AsyncOpKernel* AsAsync() final { return this; }
};

/// Bytes of a tensor's elements, strings counted by their contents.
size_t TensorPayloadBytes(const Tensor& t);

class OpKernelContext {
 public:
  struct Params {
    int64_t step_id = 0;  // the client's step id, shared by all partitions of the step
    int64_t frame_id = 0;   // the loop frame instance it runs in (0: the root frame)
    int64_t iteration = 0;  // and the iteration
    /// The iteration of each loop enclosing the frame, outermost first
    /// (FrameState::parent_iterations); null: none (the root frame).
    const std::vector<int64_t>* parent_iterations = nullptr;
    bool is_input_dead = false;  // a transfer node run on dead inputs (a _Send sends them dead)
    Device* device = nullptr;
    OpKernel* op_kernel = nullptr;
    Tensor* inputs = nullptr;  // the node's input slots; a kernel may take (forward) one
    int num_inputs = 0;
    Tensor* outputs = nullptr;  // empty tensors to fill, num_outputs of them
    int num_outputs = 0;
    CallFrame* call_frame = nullptr;
    CancellationManager* cancellation = nullptr;
    VariableAccess* variables = nullptr;  // the container actor's variables, through the device actor
    RendezvousAccess* rendezvous = nullptr;  // where _Send and _Recv meet, through the device actor
    QueueAccess* queues = nullptr;  // the process's queue actors, through the device actor
    CollectiveAccess* collectives = nullptr;  // the process's collective ops (ops/collective_access.hpp)
    StepResources* step_resources = nullptr;  // state that lives as long as the step (stacks)
  };

  explicit OpKernelContext(Params* p) : p_(p) {}

  int num_inputs() const { return p_->num_inputs; }
  const Tensor& input(int i) const { return p_->inputs[i]; }
  DataType input_dtype(int i) const { return p_->inputs[i].dtype(); }
  int num_outputs() const { return p_->num_outputs; }
  DataType expected_output_dtype(int i) const { return p_->op_kernel->output_type(i); }

  /// Sets output i (shares the buffer).
  void set_output(int i, Tensor t) { p_->outputs[i] = std::move(t); }
  /// Allocates output i of the kernel's output dtype on the device.
  Status allocate_output(int i, const TensorShape& shape, Tensor** out);
  /// Reuses the buffer of one of the `candidates` inputs for output i when that
  /// input is of the output's dtype and size and nothing else holds it (an
  /// intermediate whose last consumer is this node); otherwise allocates.
  Status forward_input_or_allocate_output(std::initializer_list<int> candidates, int i, const TensorShape& shape,
                                          Tensor** out);
  Status allocate_temp(DataType dtype, const TensorShape& shape, Tensor* out);
  Tensor* mutable_output(int i) { return &p_->outputs[i]; }
  /// Where outputs and temporaries of `dtype` live: the device's allocator,
  /// except on a device the host cannot read (a GPU), whose non-float32
  /// tensors live in host memory (nullptr: the CPU allocator).
  Allocator* AllocatorFor(DataType dtype) const;

  void SetStatus(const Status& s) { status_.Update(s); }
  const Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }

  int64_t step_id() const { return p_->step_id; }
  int64_t frame_id() const { return p_->frame_id; }
  int64_t iteration() const { return p_->iteration; }
  /// Where this invocation runs in nested loops: the iteration of every loop
  /// frame from the outermost down to its own, e.g. {2, 0} in iteration 0 of
  /// an inner loop started by iteration 2 of an outer one; empty outside
  /// loops. Orders what iterations leave behind (stacks) by iteration rather
  /// than by arrival, since parallel iterations run in any order.
  std::vector<int64_t> iteration_path() const;
  bool is_input_dead() const { return p_->is_input_dead; }
  Device* device() const { return p_->device; }
  const OpKernel& op_kernel() const { return *p_->op_kernel; }
  CallFrame* call_frame() const { return p_->call_frame; }
  CancellationManager* cancellation_manager() const { return p_->cancellation; }
  /// Reads and updates of variables; null where no container is reachable.
  VariableAccess* variables() const { return p_->variables; }
  /// Where tensors cross between partitions; null where none is reachable.
  RendezvousAccess* rendezvous() const { return p_->rendezvous; }
  /// Queue actors (ops/queue/queue_access.hpp); null where none is reachable.
  QueueAccess* queues() const { return p_->queues; }
  /// The process's collective executor; null where there is none.
  CollectiveAccess* collectives() const { return p_->collectives; }
  /// This step's per-step state (ops/step_resources.hpp); null where the
  /// kernel runs outside a step (constant folding).
  StepResources* step_resources() const { return p_->step_resources; }

 private:
  Params* p_;
  Status status_;
};

// ---------------------------------------------------------------------------
// Kernel registry.

struct KernelDef {
  std::string op;
  std::string device_type;
  /// attr name -> dtypes this kernel accepts for it.
  std::map<std::string, std::vector<DataType>> type_constraints;
};

using KernelFactory = std::function<OpKernel*(OpKernelConstruction*)>;

class KernelDefBuilder {
 public:
  explicit KernelDefBuilder(std::string op) { def_.op = std::move(op); }
  KernelDefBuilder& Device(const std::string& type) {
    def_.device_type = type;
    return *this;
  }
  KernelDefBuilder& TypeConstraint(const std::string& attr, std::vector<DataType> allowed) {
    def_.type_constraints[attr] = std::move(allowed);
    return *this;
  }
  template <class T>
  KernelDefBuilder& TypeConstraint(const std::string& attr) {
    return TypeConstraint(attr, {DataTypeToEnum<T>::value});
  }
  const KernelDef& def() const { return def_; }

 private:
  KernelDef def_;
};

class KernelRegistry {
 public:
  static KernelRegistry* Global();
  void Register(const KernelDef& def, KernelFactory factory);
  /// The kernel for `node` (attrs complete) on `device_type`; NotFound naming
  /// node, op, device and the node's dtypes when none matches.
  Status Find(const proto::NodeDef& node, const std::string& device_type, const KernelDef** def,
              KernelFactory* factory) const;
  std::vector<KernelDef> KernelsForOp(const std::string& op) const;

  /// Which nodes of an op the CPU's kernel serves on a device whose memory
  /// the host cannot read (a GPU), where they compute in host memory, as
  /// TensorFlow's HostMemory kernels do: shapes and indices stay on the host,
  /// so a GPU step never waits to read them.
  enum class HostKernel {
    kShapeOnly,  // any dtype: the kernel reads its inputs' shapes only (Shape, Reshape, ExpandDims)
    kIntegral,   // nodes whose type attrs are all integers or bool: every tensor they touch is in host memory
  };
  /// From now on, a node of `op` with no kernel of its own on `device_type`
  /// that `rule` admits gets the CPU's kernel there. Called at static-init
  /// time, like Register.
  void RegisterHostKernel(const std::string& op, const std::string& device_type, HostKernel rule);
  /// The device types where nodes of `op` may run its CPU kernel in host
  /// memory (RegisterHostKernel), each with its rule (`actorflow ops` lists them).
  std::vector<std::pair<std::string, HostKernel>> HostKernelsForOp(const std::string& op) const;

 private:
  struct Entry {
    KernelDef def;
    KernelFactory factory;
  };
  std::multimap<std::string, Entry> kernels_;  // filled at static-init time, read-only afterwards
  std::map<std::pair<std::string, std::string>, HostKernel> host_kernels_;  // (op, device type); the same
};

/// Builds the kernel of `node` (its attrs completed with defaults) for `device`.
Status CreateOpKernel(Device* device, const proto::NodeDef& node, std::unique_ptr<OpKernel>* out);
/// True when some kernel for `node` exists on `device_type`.
bool HasKernel(const proto::NodeDef& node, const std::string& device_type);

namespace detail {
struct HostKernelRegistrar {
  HostKernelRegistrar(const char* device_type, KernelRegistry::HostKernel rule, std::initializer_list<const char*> ops) {
    for (const char* op : ops) KernelRegistry::Global()->RegisterHostKernel(op, device_type, rule);
  }
};
struct KernelRegistrar {
  KernelRegistrar(const KernelDefBuilder& b, KernelFactory f) { KernelRegistry::Global()->Register(b.def(), std::move(f)); }
};
}  // namespace detail

}  // namespace actorflow

#define AF_REGISTER_KERNEL(builder, ...) AF_REGISTER_KERNEL_UNIQ(__COUNTER__, builder, __VA_ARGS__)
#define AF_REGISTER_KERNEL_UNIQ(ctr, builder, ...) AF_REGISTER_KERNEL_UNIQ2(ctr, builder, __VA_ARGS__)
#define AF_REGISTER_KERNEL_UNIQ2(ctr, builder, ...)                               \
  static ::actorflow::detail::KernelRegistrar af_kernel_registrar_##ctr(          \
      ::actorflow::builder, [](::actorflow::OpKernelConstruction* c) -> ::actorflow::OpKernel* { \
        return new __VA_ARGS__(c);                                                \
      })

/// Records `status` in the context and returns from Compute when `cond` fails.
#define AF_REQUIRES(ctx, cond, status) \
  do {                                 \
    if (!(cond)) {                     \
      (ctx)->SetStatus(status);        \
      return;                          \
    }                                  \
  } while (0)
#define AF_REQUIRES_OK(ctx, expr)          \
  do {                                     \
    ::actorflow::Status _af_s = (expr);    \
    if (!_af_s.ok()) {                     \
      (ctx)->SetStatus(_af_s);             \
      return;                              \
    }                                      \
  } while (0)
#define AF_REQUIRES_ASYNC(ctx, cond, status, done) \
  do {                                             \
    if (!(cond)) {                                 \
      (ctx)->SetStatus(status);                    \
      (done)();                                    \
      return;                                      \
    }                                              \
  } while (0)
