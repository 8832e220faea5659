// From a caught exception to a Status, for code that must never let one
// escape: actor handlers (in CAF 0.17 an escaping exception kills the actor
// for good), compute-pool jobs and kernel completion callbacks.
//
// Contract: none of these functions throws, nor allocates when memory is
// gone; OutOfMemoryStatus() is made while the library loads.
#pragma once

#include <memory>
#include <new>
#include <string>
#include <string_view>

#include "actorflow/core/status.hpp"

namespace actorflow {

/// What an allocation refused by an Allocator (out of memory or over its
/// budget) throws where it cannot return a Status (the allocating Tensor
/// constructor, allocator-backed containers): a std::bad_alloc whose what()
/// says how many bytes of what, and the allocator's budget. Kernels using the
/// constructor have it turned into ResourceExhausted naming the node.
class TensorAllocationError final : public std::bad_alloc {
 public:
  /// `message` null: what() is "std::bad_alloc" (no memory for a message).
  explicit TensorAllocationError(std::shared_ptr<const std::string> message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_ ? message_->c_str() : "std::bad_alloc"; }

 private:
  std::shared_ptr<const std::string> message_;
};

/// ResourceExhausted "out of memory", made once at load time: what a handler
/// can still answer with when there is no memory left to build a message.
const Status& OutOfMemoryStatus() noexcept;

/// The Status `make()` builds (an error with its message), or
/// OutOfMemoryStatus() when building it throws: an answer that still goes out
/// when there is no memory for its message.
///   const Status gone = Safely([&] { return errors::Cancelled(name, " was destroyed"); });
template <class Make>
Status Safely(Make&& make) noexcept {
  try {
    return make();
  } catch (...) {
    return OutOfMemoryStatus();
  }
}

/// The Status for the exception being handled (call it inside a catch
/// block): ResourceExhausted with what() for std::bad_alloc (a refused tensor
/// allocation's names the bytes, dtype, shape and budget), Internal for any
/// other, with `context` in front ("context: what"). Never throws: without
/// memory for the message it returns OutOfMemoryStatus().
Status CurrentExceptionStatus(std::string_view context = {}) noexcept;

/// CurrentExceptionStatus with the context `context()` builds (a callable
/// returning std::string, which may throw for memory too: then the Status of
/// the exception it threw, without context). Call it in a catch block.
template <class Context>
Status CurrentExceptionStatusWith(Context&& context) noexcept {
  try {
    const std::string c = context();
    return CurrentExceptionStatus(c);
  } catch (...) {
    return CurrentExceptionStatus();
  }
}

}  // namespace actorflow
