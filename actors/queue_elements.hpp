// The elements a queue actor (actors/queue_actor.hpp) holds, and the store
// that keeps them in the order its kind takes them out. Internal to the
// queue actor; in a header of their own to keep each file to one concept.
//
// An element refers to what its enqueue gave (a Chunk) rather than copying
// its row out; lists of elements take their memory from the host allocator,
// so that they count against the process's budget as tensors do, and throw
// TensorAllocationError (a std::bad_alloc naming the bytes) when refused.
// Moving an element never throws; Store::Push leaves its element intact when
// it throws, Store::Pop and Store::Return never throw.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "actorflow/core/allocator.hpp"
#include "actorflow/core/exception_status.hpp"
#include "actorflow/core/tensor.hpp"
#include "actorflow/ops/queue/queue_access.hpp"

namespace actorflow {
namespace queue_detail {

// "out of memory allocating 24 bytes for 1 queue elements (cpu: budget ...)": the
// message of a refused index allocation; null when there is no memory for it.
std::shared_ptr<const std::string> IndexRefused(Allocator* a, size_t n, size_t size) noexcept;

// The queue's lists of elements take their memory from the host allocator,
// so that they count against the process's budget as tensors do: an
// enqueue-many of 2^40 empty rows is refused at once, whatever the kernel's
// overcommit policy, instead of taking the machine's memory element by
// element. Throws TensorAllocationError (a std::bad_alloc) when refused.
template <class T>
struct BudgetedAllocator {
  using value_type = T;
  BudgetedAllocator() = default;
  template <class U>
  BudgetedAllocator(const BudgetedAllocator<U>&) noexcept {}  // NOLINT(implicit)
  T* allocate(size_t n) {
    Allocator* a = cpu_allocator();
    void* p = n <= SIZE_MAX / sizeof(T) ? a->AllocateRaw(alignof(T), n * sizeof(T)) : nullptr;
    if (!p) throw TensorAllocationError(IndexRefused(a, n, sizeof(T)));
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept { cpu_allocator()->DeallocateRaw(p, n * sizeof(T)); }
};
template <class T, class U>
bool operator==(const BudgetedAllocator<T>&, const BudgetedAllocator<U>&) {
  return true;
}
template <class T, class U>
bool operator!=(const BudgetedAllocator<T>&, const BudgetedAllocator<U>&) {
  return false;
}

// What one enqueue gave: one tensor per component, a single element or (from
// enqueue-many) a batch of them along dimension 0. Its elements refer to it
// rather than copy their rows out; it lives until its last element leaves.
struct Chunk {
  std::vector<Tensor> components;
};

// Component `source` of an element: the whole tensor (row -1) or one row of it.
struct Part {
  const Tensor& source;
  int64_t row;

  int64_t NumElements() const { return row < 0 ? source.NumElements() : source.NumElements() / source.dim_size(0); }
  int64_t First() const { return row < 0 ? 0 : row * NumElements(); }
  int dims() const { return source.dims() - (row < 0 ? 0 : 1); }
  int64_t dim_size(int d) const { return source.dim_size(d + (row < 0 ? 0 : 1)); }
  TensorShape shape() const {
    TensorShape s = source.shape();
    if (row >= 0) s.RemoveDim(0);
    return s;
  }
  bool HasShape(const TensorShape& s) const {
    if (dims() != s.dims()) return false;
    for (int d = 0; d < s.dims(); ++d)
      if (dim_size(d) != s.dim_size(d)) return false;
    return true;
  }
  int64_t Priority() const { return source.data<int64_t>()[First()]; }
  Tensor Materialize() const;
};

// One element of the queue: a chunk and its row (24 bytes, no allocation).
// Moving one never throws: the lists below rely on it.
class Element {
 public:
  Element() = default;
  Element(std::shared_ptr<const Chunk> chunk, int64_t row) noexcept : chunk_(std::move(chunk)), row_(row) {}
  Element(Element&&) noexcept = default;
  Element& operator=(Element&&) noexcept = default;
  Element(const Element&) = default;
  Element& operator=(const Element&) = default;
  Part operator[](size_t c) const { return Part{chunk_->components[c], row_}; }
  size_t size() const { return chunk_ ? chunk_->components.size() : 0; }

 private:
  std::shared_ptr<const Chunk> chunk_;
  int64_t row_ = -1;
};

// A list of elements (an enqueue's, a dequeue's so far, the shuffle queue's).
using Elements = std::vector<Element, BudgetedAllocator<Element>>;

// The elements, in the order the queue's kind takes them out.
class Store {
 public:
  Store(QueueKind kind, uint64_t seed, bool seeded) : kind_(kind) {
    if (seeded) rng_.seed(seed);
    else rng_.seed(std::random_device()());
  }
  size_t size() const {
    switch (kind_) {
      case QueueKind::kPriority: return by_priority_.size();
      case QueueKind::kRandomShuffle: return shuffled_.size();
      default: return items_.size();
    }
  }
  /// Moves `e` in; when that throws (no memory for the list), `e` is intact
  /// and nothing changed.
  void Push(Element&& e) {
    if (kind_ == QueueKind::kPriority) by_priority_.emplace(e[0].Priority(), std::move(e));
    else if (kind_ == QueueKind::kRandomShuffle) shuffled_.push_back(std::move(e));
    else items_.push_back(std::move(e));
  }
  Element Pop() noexcept {
    Element e;
    if (kind_ == QueueKind::kPriority) {  // lowest priority first; equal ones in arrival order
      auto it = by_priority_.begin();
      e = std::move(it->second);
      by_priority_.erase(it);
    } else if (kind_ == QueueKind::kRandomShuffle) {
      const size_t i = std::uniform_int_distribution<size_t>(0, shuffled_.size() - 1)(rng_);
      std::swap(shuffled_[i], shuffled_.back());
      e = std::move(shuffled_.back());
      shuffled_.pop_back();
    } else {
      e = std::move(items_.front());
      items_.pop_front();
    }
    return e;
  }
  /// Puts back elements a failed dequeue took, so the next dequeue takes them
  /// in the same order (the shuffle queue: among the others, at random).
  /// Never throws: the lists rarely need memory to take back what they held
  /// (the shuffle queue's never does); an element they have no memory for
  /// is lost, and the count of those is returned.
  size_t Return(Elements& taken) noexcept {
    size_t lost = 0;
    for (auto it = taken.rbegin(); it != taken.rend(); ++it) {
      try {
        if (kind_ == QueueKind::kRandomShuffle) {
          shuffled_.push_back(std::move(*it));
        } else if (kind_ == QueueKind::kPriority) {
          const int64_t priority = (*it)[0].Priority();  // before equal priorities: taken first again
          by_priority_.emplace_hint(by_priority_.lower_bound(priority), priority, std::move(*it));
        } else {
          items_.push_front(std::move(*it));
        }
      } catch (...) {
        ++lost;
      }
    }
    taken.clear();
    return lost;
  }

 private:
  QueueKind kind_;
  std::deque<Element> items_;      // FIFO and padding FIFO
  Elements shuffled_;              // shuffle: taken from a random index
  std::multimap<int64_t, Element> by_priority_;
  std::mt19937_64 rng_;
};

/// Copies `count` elements of `src` from `src_first` into `dst` from `dst_first`.
void CopyElements(const Tensor& src, int64_t src_first, Tensor* dst, int64_t dst_first, int64_t count);

/// The batch's elements, one by one (rows of the batch, not copies). Throws
/// std::bad_alloc when the index of n elements does not fit the budget.
Elements Split(std::vector<Tensor> batch, int64_t n);

/// Copies `src` into row `row` of `dst` ([n, d0', d1', ...] with every di' >= src's di), zero-padded.
void CopyPadded(const Tensor& src, Tensor* dst, int64_t row);

}  // namespace queue_detail
}  // namespace actorflow
