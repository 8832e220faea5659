#include "actorflow/core/resource_handle.hpp"

#include <atomic>

#include "actorflow/core/proto/resource_handle.pb.h"

namespace actorflow {

std::string ResourceHandle::Encode() const {
  proto::ResourceHandleProto p;
  if (!device.empty()) p.set_device(device);
  p.set_container(container);
  p.set_name(name);
  auto* ds = p.add_dtypes_and_shapes();
  ds->set_dtype(static_cast<proto::DataType>(dtype));
  auto* sp = ds->mutable_shape();
  if (shape.unknown_rank()) {
    sp->set_unknown_rank(true);
  } else {
    for (int64_t d : shape.dim_sizes()) sp->add_dim()->set_size(d);
  }
  return p.SerializeAsString();
}

Status ResourceHandle::Decode(const std::string& encoded, ResourceHandle* out) {
  proto::ResourceHandleProto p;
  if (!p.ParseFromString(encoded) || p.name().empty() || p.dtypes_and_shapes_size() != 1)
    return errors::InvalidArgument("not a variable handle (", encoded.size(), " bytes)");
  out->device = p.device();
  out->container = p.container().empty() ? kDefaultContainer : p.container();
  out->name = p.name();
  const auto& ds = p.dtypes_and_shapes(0);
  out->dtype = static_cast<DataType>(ds.dtype());
  if (ds.shape().unknown_rank()) {
    out->shape = PartialTensorShape();
  } else {
    std::vector<int64_t> dims;
    for (const auto& d : ds.shape().dim()) dims.push_back(d.size());
    out->shape = PartialTensorShape(std::move(dims));
  }
  return Status::OK();
}

std::string ResourceIdentity(const std::string& encoded) {
  ResourceHandle h;
  if (!ResourceHandle::Decode(encoded, &h).ok()) return encoded;
  return h.container + "\n" + h.name;
}

std::string ResourceHandle::DebugName() const { return container + "/" + name; }

Tensor MakeRefTensor(const ResourceHandle& handle) { return Tensor::Scalar<std::string>(handle.Encode()); }

Status RefTensorHandle(const Tensor& t, const std::string** encoded) {
  if (!t.IsInitialized() || t.dtype() != DT_STRING || t.NumElements() != 1)
    return errors::InvalidArgument("expected a reference to a variable, got ",
                                   t.IsInitialized() ? DataTypeString(t.dtype()) : "no value");
  *encoded = &t.data<std::string>()[0];
  return Status::OK();
}

ResourceHandle DeclaredResourceHandle(const std::string& device, const std::string& container,
                                      const std::string& shared_name, const std::string& node_name) {
  static std::atomic<uint64_t> next_private{1};
  ResourceHandle h;
  h.device = device;
  h.container = container.empty() ? kDefaultContainer : container;
  h.name = shared_name.empty() ? node_name + "/_private_" + std::to_string(next_private++) : shared_name;
  h.dtype = DT_RESOURCE;
  return h;
}

}  // namespace actorflow
