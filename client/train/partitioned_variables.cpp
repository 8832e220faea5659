#include "actorflow/client/train/partitioned_variables.hpp"

#include <algorithm>
#include <cmath>

#include "actorflow/client/ops/cc_ops.hpp"

namespace actorflow {

namespace {

Status CheckAxis(const TensorShape& shape, int axis, const char* who) {
  if (axis < 0 || axis >= shape.dims())
    return errors::InvalidArgument(who, ": axis ", axis, " is not a dimension of shape ", shape.DebugString());
  return Status::OK();
}

// `n` parts along `axis` (at least 1, at most the axis's size), 1 along the others.
Status Along(const TensorShape& shape, int axis, int64_t n, std::vector<int64_t>* partitions) {
  partitions->assign(shape.dims(), 1);
  (*partitions)[axis] = std::max<int64_t>(1, std::min(n, shape.dim_size(axis)));
  return Status::OK();
}

double ElementBytes(DataType dtype, int64_t bytes_per_string_element) {
  return dtype == DT_STRING ? static_cast<double>(bytes_per_string_element) : static_cast<double>(DataTypeSize(dtype));
}

}  // namespace

Partitioner FixedSizePartitioner(int64_t num_shards, int axis) {
  return [num_shards, axis](const TensorShape& shape, DataType, std::vector<int64_t>* partitions) -> Status {
    AF_RETURN_IF_ERROR(CheckAxis(shape, axis, "fixed_size_partitioner"));
    if (num_shards < 1) return errors::InvalidArgument("fixed_size_partitioner: num_shards ", num_shards, " < 1");
    return Along(shape, axis, num_shards, partitions);
  };
}

Partitioner MinMaxVariablePartitioner(int64_t max_partitions, int axis, int64_t min_slice_size,
                                      int64_t bytes_per_string_element) {
  return [=](const TensorShape& shape, DataType dtype, std::vector<int64_t>* partitions) -> Status {
    AF_RETURN_IF_ERROR(CheckAxis(shape, axis, "min_max_variable_partitioner"));
    if (max_partitions < 1 || min_slice_size < 1 || bytes_per_string_element < 1)
      return errors::InvalidArgument("min_max_variable_partitioner: max_partitions (", max_partitions,
                                     "), min_slice_size (", min_slice_size, ") and bytes_per_string_element (",
                                     bytes_per_string_element, ") must be positive");
    const double total = static_cast<double>(shape.num_elements()) * ElementBytes(dtype, bytes_per_string_element);
    const auto wanted = static_cast<int64_t>(std::ceil(total / static_cast<double>(min_slice_size)));
    return Along(shape, axis, std::min(max_partitions, wanted), partitions);
  };
}

Partitioner VariableAxisSizePartitioner(int64_t max_shard_bytes, int axis, int64_t bytes_per_string_element,
                                        int64_t max_shards) {
  return [=](const TensorShape& shape, DataType dtype, std::vector<int64_t>* partitions) -> Status {
    AF_RETURN_IF_ERROR(CheckAxis(shape, axis, "variable_axis_size_partitioner"));
    if (max_shard_bytes < 1 || bytes_per_string_element < 1 || max_shards < 0)
      return errors::InvalidArgument("variable_axis_size_partitioner: max_shard_bytes (", max_shard_bytes,
                                     ") and bytes_per_string_element (", bytes_per_string_element,
                                     ") must be positive, max_shards (", max_shards, ") not negative");
    const int64_t rows = shape.dim_size(axis);
    if (rows == 0) return Along(shape, axis, 1, partitions);
    const double bytes_per_row =
        static_cast<double>(shape.num_elements() / rows) * ElementBytes(dtype, bytes_per_string_element);
    const double rows_per_shard =
        bytes_per_row > 0 ? std::max(1.0, std::floor(static_cast<double>(max_shard_bytes) / bytes_per_row)) : rows;
    int64_t shards = static_cast<int64_t>(std::ceil(static_cast<double>(rows) / rows_per_shard));
    if (max_shards > 0) shards = std::min(shards, max_shards);
    return Along(shape, axis, shards, partitions);
  };
}

PartitionedVariable NewPartitionedVariable(const Scope& scope, const std::string& name, const TensorShape& shape,
                                           DataType dtype, const VariableInitializer& initializer,
                                           const Partitioner& partitioner, bool trainable) {
  PartitionedVariable pv;
  if (!scope.ok()) return pv;
  auto fail = [&](const Status& s) {
    scope.UpdateStatus(errors::InvalidArgument("partitioned variable '", name, "' of shape ", shape.DebugString(),
                                               ": ", s.message()));
    return PartitionedVariable();
  };
  if (name.empty()) return fail(errors::InvalidArgument("no name"));
  if (shape.dims() == 0) return fail(errors::InvalidArgument("a scalar cannot be partitioned"));
  if (!partitioner) return fail(errors::InvalidArgument("no partitioner"));
  if (!initializer) return fail(errors::InvalidArgument("no initializer"));
  std::vector<int64_t> partitions;
  const Status asked = partitioner(shape, dtype, &partitions);
  if (!asked.ok()) return fail(asked);
  if (static_cast<int>(partitions.size()) != shape.dims())
    return fail(errors::InvalidArgument("the partitioner gave ", partitions.size(), " partition counts for ",
                                        shape.dims(), " dimensions"));
  int axis = -1;
  for (int i = 0; i < shape.dims(); ++i) {
    if (partitions[i] < 1 || (partitions[i] > shape.dim_size(i) && partitions[i] > 1))
      return fail(errors::InvalidArgument("the partitioner cut dimension ", i, " (size ", shape.dim_size(i),
                                          ") into ", partitions[i], " parts"));
    if (partitions[i] == 1) continue;
    if (axis >= 0)
      return fail(errors::InvalidArgument("the partitioner cut dimensions ", axis, " and ", i,
                                          ": a variable is cut along one dimension only"));
    axis = i;
  }
  pv.dtype = dtype;
  pv.shape = shape;
  pv.axis = axis < 0 ? 0 : axis;
  const int64_t n = axis < 0 ? 1 : partitions[axis];
  const int64_t rows = shape.dim_size(pv.axis);
  std::vector<Input> values;
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> dims;
    for (int d = 0; d < shape.dims(); ++d) dims.push_back(shape.dim_size(d));
    dims[pv.axis] = rows / n + (i < rows % n ? 1 : 0);
    const TensorShape part_shape(dims);
    PartitionInfo info;
    info.full_shape = shape;
    info.offset.assign(shape.dims(), 0);
    info.offset[pv.axis] = offset;
    const VariableInitializer part_init = [initializer, info](const Scope& s, const TensorShape& part, DataType t) {
      return initializer.Part(s, part, t, info);
    };
    const std::string suffix = "/part_" + std::to_string(i);
    Variable v = NewVariable(scope, name + suffix, part_shape, dtype, part_init, trainable);
    if (!v.valid()) return PartitionedVariable();  // the scope says why
    // A node of that name already there: the builder made this one's name
    // unique ("w/part_0_1"); TensorFlow refuses it too.
    const bool named = v.name.size() > suffix.size() &&
                       v.name.compare(v.name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
                       (i == 0 || v.name == pv.name + suffix);
    if (!named) {
      scope.UpdateStatus(errors::AlreadyExists("partitioned variable '", name, "': a node named ",
                                               v.name.substr(0, v.name.rfind('_')), " already exists"));
      return PartitionedVariable();
    }
    if (i == 0) pv.name = v.name.substr(0, v.name.size() - suffix.size());  // with the scope's prefix
    SetSaveSliceInfo(scope, &v, SaveSliceInfo{pv.name, shape, info.offset});
    if (!scope.ok()) return PartitionedVariable();
    values.push_back(v.value);
    pv.parts.push_back(std::move(v));
    offset += dims[pv.axis];
  }
  // As TensorFlow's PartitionedVariable.as_tensor: the parts concatenated,
  // under the variable's own name.
  Output whole = n == 1 ? pv.parts[0].value
                        : ops::Concat(scope.NewSubScope(name + "/ConcatPartitions").WithOpName("concat"), values,
                                      ops::Const(scope.NewSubScope(name + "/ConcatPartitions"), pv.axis));
  pv.value = ops::Identity(scope.WithOpName(name), whole);
  if (!scope.ok()) return PartitionedVariable();
  if (pv.value.node()->name() != pv.name) {
    scope.UpdateStatus(errors::AlreadyExists("partitioned variable '", name, "': a node named ", pv.name,
                                             " already exists"));
    return PartitionedVariable();
  }
  return pv;
}

}  // namespace actorflow
