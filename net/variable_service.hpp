// The variable service: what is asked of the container actor that holds
// variables (actors/container_actor.hpp), by the variables' encoded handles
// (core/resource_handle.hpp): by kernels whose container is in another
// process (those of its own process reach the variables directly,
// ops/state/local_variable.hpp). Every update by message is applied whole
// before the next read or update of the same variables.
//
//   VarReadRequest         -> VarReadResponse
//   VarUpdateRequest       -> VarUpdateResponse
//   ResetContainersRequest -> ResetContainersResponse
//
// Kernels send them through VariableAccess (ops/state/variable_access.hpp).
// Every message may cross a process: registered in net/protocol.cpp.
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/net/wire_format.hpp"

namespace actorflow {

/// The update ops, with TensorFlow's formulas (ops/state/variable_updates.cpp).
enum class VarUpdateKind : int32_t {
  kAssign = 0,             // vars: {ref}              args: {value}
  kAssignAdd = 1,          // vars: {ref}              args: {value}
  kAssignSub = 2,          // vars: {ref}              args: {value}
  kGradientDescent = 3,    // vars: {var}              args: {alpha, delta}
  kMomentum = 4,           // vars: {var, accum}       args: {lr, grad, momentum}
  kAdam = 5,               // vars: {var, m, v}        args: {beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad}
  kAdagrad = 6,            // vars: {var, accum}       args: {lr, grad}
  kRMSProp = 7,            // vars: {var, ms, mom}     args: {lr, rho, momentum, epsilon, grad}
  kCountUpTo = 8,          // vars: {ref}              args: {limit: int64 scalar}; answers the count before
};
const char* VarUpdateName(VarUpdateKind kind);

struct VarReadRequest {
  std::vector<std::string> handles;  // encoded ResourceHandles
  bool check_only = false;           // answer whether each is initialized, no values
};

struct VarReadResponse {
  Status status;
  std::vector<Tensor> values;  // one per handle; bool scalars when check_only
};

struct VarUpdateRequest {
  int32_t kind = 0;                  // a VarUpdateKind
  std::vector<std::string> handles;  // the variables it changes, in the order of VarUpdateKind's comment
  std::vector<Tensor> args;
  bool validate_shape = true;        // Assign: the value must have the variable's shape
  bool use_nesterov = false;         // Momentum, Adam
  /// From a device kernel that updates the variables in device memory (a
  /// GPU's Apply* and AssignAdd/Sub): the container checks the request as
  /// usual, computes nothing, and answers the buffers the kernel writes
  /// (VarUpdateResponse::vars: the variables' own, or new ones where a reader
  /// holds them, copy on write) and the values it reads (sources), which the
  /// kernel updates in stream order. An Assign on the device hands over a new
  /// buffer the variable takes as it is.
  /// Never crosses a process: device memory is the process's own.
  bool on_device = false;
  /// on_device, from a step being captured (actors/device/step_capture.hpp):
  /// the captured kernel will write the same buffers at every launch, so a
  /// variable's buffer may not change (copy on write, an Assign's new buffer):
  /// such an update fails instead, and the step is not captured. Not
  /// serialized (never crosses a process).
  bool capturing = false;
};

struct VarUpdateResponse {
  Status status;
  Tensor value;  // kCountUpTo: the variable's value before the increment
  std::vector<Tensor> vars;     // on_device: the buffers to write, in the request's order
  std::vector<Tensor> sources;  // on_device: the values to read (the same buffers when in place)
};

/// Drops every variable of the named containers (all when the list is empty).
struct ResetContainersRequest {
  std::vector<std::string> containers;
};

struct ResetContainersResponse {
  Status status;
  int64_t num_dropped = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, VarReadRequest& x) {
  return f(caf::meta::type_name("VarReadRequest"), x.handles, x.check_only);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, VarReadResponse& x) {
  return f(caf::meta::type_name("VarReadResponse"), x.status, x.values);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, VarUpdateRequest& x) {
  return f(caf::meta::type_name("VarUpdateRequest"), x.kind, x.handles, x.args, x.validate_shape, x.use_nesterov,
           x.on_device);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, VarUpdateResponse& x) {
  return f(caf::meta::type_name("VarUpdateResponse"), x.status, x.value, x.vars, x.sources);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ResetContainersRequest& x) {
  return f(caf::meta::type_name("ResetContainersRequest"), x.containers);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ResetContainersResponse& x) {
  return f(caf::meta::type_name("ResetContainersResponse"), x.status, x.num_dropped);
}

}  // namespace actorflow
