// Parameter-server placement (TensorFlow's tf.train.replica_device_setter):
// a scope whose variables (and the other stateful ops TensorFlow lists as
// ps ops) go to the ps tasks, one task each, and everything else to the
// worker. Ops that update a variable through its reference (Assign, Apply*,
// Scatter*: the nodes taking it by a ref input) go with it, as TensorFlow's
// optimizers colocate them, so updates run in the ps task's container actor.
//
//   ReplicaDeviceSetterOptions o;
//   o.cluster = &cluster;  // or o.ps_tasks = 2
//   o.worker_device = "/job:worker/task:" + std::to_string(task_index);
//   Scope s = ReplicaDeviceSetter(root, o);
//   Variable w = NewVariable(s, "w", {784, 256}, DT_FLOAT, init::GlorotUniform());  // on a ps task
//   auto y = ops::MatMul(s, x, w.value);                                              // on the worker
//
// Which ps task: by default the one with the fewest bytes of variables so far
// (TensorFlow's GreedyLoadBalancingStrategy with its byte-size load function:
// round robin would weigh a 784x256 matrix and a 10-float bias alike), or
// round robin. A device a node asks for itself is merged in, its components
// winning (merge_devices, TensorFlow's default). With no ps tasks the scope is
// returned unchanged, as TensorFlow returns no device function.
#pragma once

#include <string>
#include <vector>

#include "actorflow/client/builder.hpp"
#include "actorflow/core/cluster_spec.hpp"

namespace actorflow {

struct ReplicaDeviceSetterOptions {
  /// Number of ps tasks; 0: the size of the cluster's "ps" job (when `cluster` is set).
  int ps_tasks = 0;
  const ClusterSpec* cluster = nullptr;
  std::string ps_device = "/job:ps";
  std::string worker_device = "/job:worker";
  /// Merge a node's own device into the one chosen (its components win); off:
  /// a node that names a device keeps exactly that.
  bool merge_devices = true;
  /// Op types placed on ps tasks; empty: TensorFlow's STANDARD_PS_OPS.
  std::vector<std::string> ps_ops;
  enum class Strategy {
    kGreedyBytes,  // the ps task with the fewest bytes so far (the variable's shape x dtype size)
    kRoundRobin,   // ps tasks in turn
  };
  Strategy strategy = Strategy::kGreedyBytes;
};

/// TensorFlow's STANDARD_PS_OPS.
const std::vector<std::string>& StandardPsOps();

/// `scope` with the replica device function set (InvalidArgument recorded in
/// the scope for an unparsable ps or worker device).
Scope ReplicaDeviceSetter(const Scope& scope, const ReplicaDeviceSetterOptions& options);

}  // namespace actorflow
