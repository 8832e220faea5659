// Stack: the state behind TensorFlow's stack ops (StackV2, StackPushV2,
// StackPopV2, StackCloseV2; ops/stack/stack_ops.cpp), a per-step resource
// (ops/step_resources.hpp) holding tensors of one dtype.
//
// Order. A while loop's gradient pushes a value in every iteration of the
// forward loop and pops them in the backward loop, last first. With
// parallel iterations, the pushes of iterations i and i+1 may run in either
// order, so an element is ordered by the iteration path it was pushed in
// (OpKernelContext::iteration_path(): the iteration of every enclosing loop,
// outermost first), not by arrival: elements stay sorted by path
// (lexicographically; equal paths keep their arrival order) and a pop takes
// the greatest. Outside loops every path is empty: plain LIFO. Pushes from two
// loops at the same depth interleave by iteration; pops are not reordered (a
// pop takes the top, whichever iteration pops), so pops of different
// iterations must be ordered by the graph, as TensorFlow's gradient loops do.
//
// Thread-safe (guarded by mu_).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/ops/step_resources.hpp"

namespace actorflow {

class Stack : public StepResource {
 public:
  /// `max_size` < 0: unbounded.
  Stack(std::string name, DataType elem_type, int64_t max_size)
      : name_(std::move(name)), elem_type_(elem_type), max_size_(max_size) {}

  const std::string& name() const { return name_; }
  DataType elem_type() const { return elem_type_; }

  /// Adds `value`, pushed in iteration path `path`. InvalidArgument when the
  /// stack is closed, full or holds another dtype.
  Status Push(std::vector<int64_t> path, Tensor value);
  /// Takes the element of the greatest path (of those equal, the last
  /// pushed). InvalidArgument when the stack is closed or empty.
  Status Pop(Tensor* value);
  /// Drops the elements; later pushes and pops fail. Closing again does nothing.
  void Close();
  size_t size() const;

 private:
  struct Element {
    std::vector<int64_t> path;
    Tensor value;
  };
  const std::string name_;
  const DataType elem_type_;
  const int64_t max_size_;
  mutable std::mutex mu_;
  std::vector<Element> elements_;  // sorted by path, stable; the top is at the back; guarded by mu_
  bool closed_ = false;            // guarded by mu_
};

}  // namespace actorflow
