// What kernels ask of the container actor that holds variables, and how.
//
// Variables are state of the container actor (actors/container_actor.hpp);
// a kernel never touches them. It sends a read or an update naming variables
// by their encoded handles (core/resource_handle.hpp), and the actor answers
// when it has applied it. Every update is applied whole before the next read
// or update of the same variables: atomic, whatever `use_locking` says.
//
// The structs are messages between actors (registered in actors/messages.cpp);
// VariableAccess is how a kernel sends them: the device actor implements it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "core/tensor.hpp"

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
};

struct VarUpdateResponse {
  Status status;
  Tensor value;  // kCountUpTo: the variable's value before the increment
};

/// Drops every variable of the named containers (all when the list is empty).
struct ResetContainersRequest {
  std::vector<std::string> containers;
};

struct ResetContainersResponse {
  Status status;
  int64_t num_dropped = 0;
};

/// How a kernel reaches the variables. Call only from the device actor's
/// thread (an AsyncOpKernel's ComputeAsync); the callback runs there too.
class VariableAccess {
 public:
  virtual ~VariableAccess() = default;
  virtual void Read(VarReadRequest req, std::function<void(VarReadResponse&)> done) = 0;
  virtual void Update(VarUpdateRequest req, std::function<void(const Status&)> done) = 0;
  /// As Update, for updates that answer a value (kCountUpTo).
  virtual void UpdateAndAnswer(VarUpdateRequest req, std::function<void(VarUpdateResponse&)> done) = 0;
};

}  // namespace actorflow
