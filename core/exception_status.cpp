#include "actorflow/core/exception_status.hpp"

#include <exception>
#include <new>
#include <string>

namespace actorflow {

const Status& OutOfMemoryStatus() noexcept {
  static const Status* s = new Status(Code::kResourceExhausted, "out of memory");  // never freed: always answerable
  return *s;
}

namespace {
// Made at load time, while memory is plentiful: OutOfMemoryStatus() never allocates after that.
[[maybe_unused]] const Status& g_out_of_memory = OutOfMemoryStatus();
}  // namespace

Status CurrentExceptionStatus(std::string_view context) noexcept {
  try {
    std::string prefix = context.empty() ? std::string() : std::string(context) + ": ";
    try {
      throw;
    } catch (const std::bad_alloc& e) {
      return Status(Code::kResourceExhausted, prefix + e.what());
    } catch (const std::exception& e) {
      return Status(Code::kInternal, prefix + e.what());
    } catch (...) {
      return Status(Code::kInternal, prefix + "a non-standard exception");
    }
  } catch (...) {
    return OutOfMemoryStatus();
  }
}

}  // namespace actorflow
