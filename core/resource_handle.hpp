// ResourceHandle: names a piece of state kept by the container actor (a
// variable), and travels along ref edges of the graph.
//
// TensorFlow's reference edges carry a pointer to a variable's buffer; ours
// carry a scalar DT_STRING tensor holding an encoded handle, so a ref edge can
// cross actors and processes like any tensor. The holder of the state is the
// container actor: kernels send it the handle, never touch the state.
#pragma once

#include <string>

#include "actorflow/core/dtypes.hpp"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/core/tensor_shape.hpp"

namespace actorflow {

/// The container that VariableV2 with container "" uses.
inline constexpr const char* kDefaultContainer = "localhost";

struct ResourceHandle {
  /// The full name of the device whose kernel declared it (TensorFlow's
  /// ResourceHandle.device): where the state is used from. Not part of its
  /// identity: the container actor names state by (container, name).
  std::string device;
  std::string container;      // never empty: "" means kDefaultContainer
  std::string name;           // the shared name
  DataType dtype = DT_INVALID;
  PartialTensorShape shape;   // as declared by the op that names it

  /// A compact, self-delimiting encoding (a ResourceHandleProto).
  std::string Encode() const;
  static Status Decode(const std::string& encoded, ResourceHandle* out);
  /// "container/name", for messages.
  std::string DebugName() const;
};

/// The handle a kernel declaring a resource (a queue, a reader) on `device`
/// gives it: (container, shared_name), "" meaning the default container; with
/// no shared_name, a name private to this kernel instance ("<node>/_private_<n>").
ResourceHandle DeclaredResourceHandle(const std::string& device, const std::string& container,
                                      const std::string& shared_name, const std::string& node_name);

/// What names the state of an encoded handle, whatever device declared it:
/// "container\nname" (the encoded text itself when it does not decode).
std::string ResourceIdentity(const std::string& encoded);

/// The tensor a ref output carries: a DT_STRING scalar holding handle.Encode().
Tensor MakeRefTensor(const ResourceHandle& handle);
/// The encoded handle in a ref tensor; InvalidArgument when `t` is not one.
Status RefTensorHandle(const Tensor& t, const std::string** encoded);

}  // namespace actorflow
