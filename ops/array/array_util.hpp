// Small helpers shared by the array kernels.
#pragma once

#include "core/status.hpp"
#include "core/tensor.hpp"

namespace actorflow {

/// Whether `t` is a dtype that index inputs (shapes, axes, perms) may have.
inline bool IsIndexDtype(DataType t) { return t == DT_INT32 || t == DT_INT64; }

/// InvalidArgument unless `t` is an int32 or int64 tensor; `what` names the input.
inline Status CheckIndexDtype(const Tensor& t, const char* what) {
  if (!IsIndexDtype(t.dtype()))
    return errors::InvalidArgument(what, " must be an int32 or int64 tensor, got ", DataTypeString(t.dtype()));
  return Status::OK();
}

}  // namespace actorflow
