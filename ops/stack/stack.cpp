#include "actorflow/ops/stack/stack.hpp"

#include <algorithm>

namespace actorflow {

Status Stack::Push(std::vector<int64_t> path, Tensor value) {
  if (value.dtype() != elem_type_)
    return errors::InvalidArgument("stack '", name_, "' holds ", DataTypeString(elem_type_), ", cannot push ",
                                   DataTypeString(value.dtype()));
  std::lock_guard<std::mutex> l(mu_);
  if (closed_) return errors::InvalidArgument("stack '", name_, "' is closed");
  if (max_size_ >= 0 && static_cast<int64_t>(elements_.size()) >= max_size_)
    return errors::InvalidArgument("stack '", name_, "' is full: it holds max_size ", max_size_, " elements");
  // After every element of a path <= this one: in a loop whose iterations
  // push in order, that is the back, found in O(log n).
  auto at = std::upper_bound(elements_.begin(), elements_.end(), path,
                             [](const std::vector<int64_t>& p, const Element& e) { return p < e.path; });
  elements_.insert(at, Element{std::move(path), std::move(value)});
  return Status::OK();
}

Status Stack::Pop(Tensor* value) {
  std::lock_guard<std::mutex> l(mu_);
  if (closed_) return errors::InvalidArgument("stack '", name_, "' is closed");
  if (elements_.empty()) return errors::InvalidArgument("stack '", name_, "' is empty");
  *value = std::move(elements_.back().value);
  elements_.pop_back();
  return Status::OK();
}

void Stack::Close() {
  std::vector<Element> dropped;  // freed outside the lock
  std::lock_guard<std::mutex> l(mu_);
  closed_ = true;
  dropped.swap(elements_);
}

size_t Stack::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return elements_.size();
}

}  // namespace actorflow
