// Partitioned variables: one variable stored as parts along one axis, each a
// variable of its own, so a large variable spreads over several parameter
// server tasks (TensorFlow's tf.compat.v1.get_variable(partitioner=...) and
// PartitionedVariable, with its partitioners).
//
//   Scope s = ReplicaDeviceSetter(root, rd);   // 4 ps tasks: the parts go round-robin
//   PartitionedVariable w = NewPartitionedVariable(s, "w", {784, 256}, DT_FLOAT, init::GlorotUniform(),
//                                                  FixedSizePartitioner(4));
//   auto h = ops::MatMul(s, x, w.value);       // the parts' reads, concatenated where h runs
//
// Contract (TensorFlow's rules, so its graphs and checkpoints mean the same):
//   - A partitioner says how many parts each dimension is cut into; at most
//     one dimension may have more than one, and no more parts than its size.
//     Along it, part i has size/n rows, one more for the first size%n parts.
//   - Part i is the variable "<name>/part_<i>" of its own shape, in the
//     global (and, when trainable, the trainable) variables: optimizers update
//     each part by its gradient, a ReplicaDeviceSetter places each part.
//   - `value` is "<name>" (an Identity of "<name>/ConcatPartitions/concat"):
//     the parts' values, concatenated; gradients flow back to each part as
//     its slice. With one part it is that part's value.
//   - Initial values: each part's is the initializer's Part (GlorotUniform
//     scales by the whole variable's fans; Constant(tensor) gives each part its
//     block; random initializers draw each part's values on their own, a
//     seeded one from its seed mixed with the part's offset).
//   - Each part carries its SaveSliceInfo (client/train/variables.hpp): a
//     Saver writes the whole variable as one tensor named "<name>" of the full
//     shape, and restores every part from its block of it, whatever the
//     checkpoint's partitioning (or none). So a checkpoint of a partitioned
//     variable restores into an unpartitioned one and back, and TensorFlow
//     reads it as an ordinary tensor. Parts a Saver gets without the rest of
//     their variable are saved each under its own name. (TensorFlow itself writes partitioned
//     variables as slices of one entry; a bundle with sliced entries is not
//     read here: checkpoint/tf_bundle_format.hpp.)
//   - Errors (a bad partitioner, a scalar, no name, a partitioner's own) go to
//     the scope as InvalidArgument naming the variable, a name whose parts or
//     value a node already has as AlreadyExists; the result is then invalid.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "actorflow/client/train/variables.hpp"

namespace actorflow {

/// How many parts each dimension of a variable of `shape` and `dtype` is cut into.
using Partitioner =
    std::function<Status(const TensorShape& shape, DataType dtype, std::vector<int64_t>* partitions)>;

/// `num_shards` parts along `axis` (fewer when the axis is shorter):
/// tf.compat.v1.fixed_size_partitioner.
Partitioner FixedSizePartitioner(int64_t num_shards, int axis = 0);
/// As many parts along `axis` as keep each at least `min_slice_size` bytes,
/// at most `max_partitions` (tf.compat.v1.min_max_variable_partitioner;
/// strings count `bytes_per_string_element` each).
Partitioner MinMaxVariablePartitioner(int64_t max_partitions = 1, int axis = 0, int64_t min_slice_size = 256 << 10,
                                      int64_t bytes_per_string_element = 16);
/// Parts along `axis` of at most `max_shard_bytes` each (at least one row
/// each), at most `max_shards` of them when it is positive
/// (tf.compat.v1.variable_axis_size_partitioner).
Partitioner VariableAxisSizePartitioner(int64_t max_shard_bytes, int axis = 0, int64_t bytes_per_string_element = 16,
                                        int64_t max_shards = 0);

struct PartitionedVariable {
  std::string name;
  DataType dtype = DT_INVALID;
  TensorShape shape;  // the whole variable's
  int axis = 0;       // the dimension cut (0 when there is one part)
  std::vector<Variable> parts;
  Output value;  // the whole value in a step
  bool valid() const { return !parts.empty() && value.valid(); }
};

/// Adds the variable `name` of `shape`, cut by `partitioner` (see above).
PartitionedVariable NewPartitionedVariable(const Scope& scope, const std::string& name, const TensorShape& shape,
                                           DataType dtype, const VariableInitializer& initializer,
                                           const Partitioner& partitioner, bool trainable = true);

}  // namespace actorflow
