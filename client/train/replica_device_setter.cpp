#include "actorflow/client/train/replica_device_setter.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "actorflow/core/dtypes.hpp"
#include "actorflow/devices/device_name.hpp"

namespace actorflow {

const std::vector<std::string>& StandardPsOps() {
  static const std::vector<std::string> ops = {
      "Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
      "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
      "MutableDenseHashTableV2", "VarHandleOp", "BoostedTreesEnsembleResourceHandleOp",
      "BoostedTreesQuantileStreamResourceHandleOp", "ResourceConditionalAccumulator", "DecisionTreeResource"};
  return ops;
}

namespace {

// `base` with every component `over` has set to `over`'s (TensorFlow's DeviceSpec.merge_from).
DeviceName Overlay(DeviceName base, const DeviceName& over) {
  if (over.has_job) base.has_job = true, base.job = over.job;
  if (over.has_replica) base.has_replica = true, base.replica = over.replica;
  if (over.has_task) base.has_task = true, base.task = over.task;
  if (over.has_type) base.has_type = true, base.type = over.type;
  if (over.has_id) base.has_id = true, base.id = over.id;
  return base;
}

// The bytes a ps op holds: its "shape" attr x its dtype's size (0 when unknown,
// as TensorFlow's byte_size_load_fn).
int64_t ByteSize(const proto::NodeDef& def) {
  auto shape = def.attr().find("shape");
  auto dtype = def.attr().find("dtype");
  if (shape == def.attr().end() || dtype == def.attr().end() || shape->second.shape().unknown_rank()) return 0;
  int64_t n = 1;
  for (const auto& d : shape->second.shape().dim()) {
    if (d.size() < 0) return 0;
    n *= d.size();
  }
  return n * static_cast<int64_t>(DataTypeSize(static_cast<DataType>(dtype->second.type())));
}

struct Setter {
  ReplicaDeviceSetterOptions options;
  DeviceName ps, worker;
  std::vector<std::string> ps_ops;
  std::mutex mu;  // scopes may be used from several threads
  std::vector<int64_t> loads;
  int next = 0;

  std::unordered_set<std::string> with_state;  // nodes placed with a ps op's state (a ref chain)

  bool IsPsOp(const std::string& op) const { return std::find(ps_ops.begin(), ps_ops.end(), op) != ps_ops.end(); }
  bool OnPs(const Node* n) {
    if (IsPsOp(n->type_string())) return true;
    std::lock_guard<std::mutex> lock(mu);
    return with_state.count(n->name()) > 0;
  }
  // Whether input `arg` of `def` is a reference (a ref arg, or a type attr
  // the builder set to a ref type from the input).
  static bool TakesRef(const proto::NodeDef& def, const proto::OpDef::ArgDef& arg) {
    if (arg.is_ref()) return true;
    if (arg.type_attr().empty()) return false;
    auto it = def.attr().find(arg.type_attr());
    return it != def.attr().end() && IsRefType(static_cast<DataType>(it->second.type()));
  }

  int PickTask(const proto::NodeDef& def) {
    std::lock_guard<std::mutex> lock(mu);
    if (options.strategy == ReplicaDeviceSetterOptions::Strategy::kRoundRobin) {
      const int t = next;
      next = (next + 1) % static_cast<int>(loads.size());
      return t;
    }
    const int t = static_cast<int>(std::min_element(loads.begin(), loads.end()) - loads.begin());
    loads[t] += ByteSize(def);
    return t;
  }

  std::string Device(const proto::NodeDef& def, const proto::OpDef& op_def, const std::vector<OutputList>& args) {
    if (!options.merge_devices && !def.device().empty()) return def.device();
    DeviceName current;
    if (!ParseDeviceName(def.device(), &current).ok()) return def.device();  // the placer reports it
    if (IsPsOp(def.op())) {
      DeviceName d = ps;
      d.has_task = true;
      d.task = PickTask(def);
      return DeviceNameString(Overlay(d, current));
    }
    // A node that takes a ps op's state by reference (Assign, the Apply ops,
    // the variable's read) runs where that state is: the placer colocates ref
    // edges, as TensorFlow's optimizers colocate their updates.
    for (int a = 0; a < op_def.input_arg_size() && a < static_cast<int>(args.size()); ++a) {
      if (!TakesRef(def, op_def.input_arg(a))) continue;
      for (const Output& o : args[a])
        if (o.node() && OnPs(o.node())) {
          std::lock_guard<std::mutex> lock(mu);
          with_state.insert(def.name());
          return o.node()->requested_device();
        }
    }
    return DeviceNameString(Overlay(worker, current));
  }
};

}  // namespace

Scope ReplicaDeviceSetter(const Scope& scope, const ReplicaDeviceSetterOptions& options) {
  int tasks = options.ps_tasks;
  if (tasks == 0 && options.cluster) tasks = options.cluster->num_tasks("ps");
  if (tasks <= 0) return scope;
  auto setter = std::make_shared<Setter>();
  setter->options = options;
  setter->ps_ops = options.ps_ops.empty() ? StandardPsOps() : options.ps_ops;
  setter->loads.assign(static_cast<size_t>(tasks), 0);
  Status s = ParseDeviceName(options.ps_device, &setter->ps);
  if (s.ok()) s = ParseDeviceName(options.worker_device, &setter->worker);
  if (!s.ok()) {
    scope.UpdateStatus(errors::InvalidArgument("ReplicaDeviceSetter: ", s.message()));
    return scope;
  }
  return scope.WithDeviceFunction(
      [setter](const proto::NodeDef& def, const proto::OpDef& op_def, const std::vector<OutputList>& args) {
        return setter->Device(def, op_def, args);
      });
}

}  // namespace actorflow
