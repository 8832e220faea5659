// How actorflow's values cross an actor boundary: CAF inspect overloads for
// Tensor and Status.
//
// Inside one process CAF never serializes: a message holding a Tensor shares
// its buffer. Across processes the serializer writes a tensor as dtype, dims
// and then its bytes in one raw block (numeric types) or string by string;
// the deserializer validates dtype and dims, and that the message holds the
// bytes they claim, before allocating, so a corrupt or hostile message is an
// error, never a crash or a huge allocation.
#pragma once

#include <caf/binary_deserializer.hpp>
#include <caf/deserializer.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/sec.hpp>
#include <caf/serializer.hpp>

#include <type_traits>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {

namespace detail {
// The elements after the header: one raw block, or string by string.
template <class Inspector>
caf::error InspectTensorPayload(Inspector& f, Tensor& t) {
  if (DataTypeIsStringLike(t.dtype())) {
    for (int64_t i = 0; i < t.NumElements(); ++i)
      if (auto err = f(t.data<std::string>()[i])) return err;
    return caf::error{};
  }
  if (t.TotalBytes() == 0) return caf::error{};
  return f.apply_raw(t.TotalBytes(), t.raw_data());
}
}  // namespace detail

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Tensor& t) {
  if constexpr (std::is_base_of_v<caf::serializer, Inspector>) {
    // Device memory (a GPU's) is not the host's to read: such a tensor
    // crosses a process only after a device kernel copied it out (_Send).
    if (!t.InHostMemory() && t.TotalBytes() > 0)
      return caf::make_error(caf::sec::invalid_argument, "a tensor in device memory cannot be serialized");
    int32_t dtype = t.dtype();
    std::vector<int64_t> dims = t.shape().dim_sizes();
    if (auto err = f(dtype, dims)) return err;
    return detail::InspectTensorPayload(f, t);
  } else if constexpr (std::is_base_of_v<caf::deserializer, Inspector>) {
    int32_t dtype = 0;
    std::vector<int64_t> dims;
    if (auto err = f(dtype, dims)) return err;
    if (dtype == DT_INVALID && dims.empty()) {  // an uninitialized tensor
      t = Tensor();
      return caf::error{};
    }
    TensorShape shape;
    if (!DataTypeIsSupported(static_cast<DataType>(dtype)) || !TensorShape::FromDims(dims, &shape).ok())
      return caf::make_error(caf::sec::invalid_argument, "bad tensor header in message");
    // A header may claim more than the message holds: check before allocating.
    if (const auto* bin = dynamic_cast<const caf::binary_deserializer*>(&f)) {
      const auto n = static_cast<uint64_t>(shape.num_elements());
      const bool is_string = DataTypeIsStringLike(static_cast<DataType>(dtype));
      // A string takes at least its one-byte length; other elements their size.
      const uint64_t elem = is_string ? 1 : DataTypeSize(static_cast<DataType>(dtype));
      if (elem != 0 && n > bin->remaining() / elem)
        return caf::make_error(caf::sec::invalid_argument, "tensor header in message claims more bytes than it holds");
    }
    if (!Tensor::Create(nullptr, static_cast<DataType>(dtype), shape, &t).ok())
      return caf::make_error(caf::sec::invalid_argument, "tensor in message too large");
    return detail::InspectTensorPayload(f, t);
  } else {
    std::string s = t.DebugString(4);
    return f(caf::meta::type_name("Tensor"), s);
  }
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Status& s) {
  if constexpr (std::is_base_of_v<caf::deserializer, Inspector>) {
    int32_t code = 0;
    std::string msg;
    if (auto err = f(code, msg)) return err;
    if (code < 0 || code > static_cast<int32_t>(Code::kUnauthenticated)) code = static_cast<int32_t>(Code::kUnknown);
    s = Status(static_cast<Code>(code), std::move(msg));
    return caf::error{};
  } else {
    int32_t code = static_cast<int32_t>(s.code());
    std::string msg = s.message();
    return f(caf::meta::type_name("Status"), code, msg);
  }
}

}  // namespace actorflow
