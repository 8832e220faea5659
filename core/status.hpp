// Status: the outcome of every fallible operation in actorflow.
//
// A Status is OK or carries one of TensorFlow's canonical error codes plus a
// message that names what failed (node, op, file or task). Statuses are values:
// kernels record them in their context, actors reply with them, nothing throws
// across an actor boundary.
#pragma once

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace actorflow {

/// Canonical error codes; numbers and names are TensorFlow's (error_codes.proto).
enum class Code : int32_t {
  kOk = 0,
  kCancelled = 1,           ///< the operation was cancelled (step aborted, queue closed)
  kUnknown = 2,             ///< an error without a better code
  kInvalidArgument = 3,     ///< bad input regardless of system state
  kDeadlineExceeded = 4,    ///< a deadline expired before the operation completed
  kNotFound = 5,            ///< a requested entity (node, file, tensor) does not exist
  kAlreadyExists = 6,       ///< an entity that should be new exists already
  kPermissionDenied = 7,    ///< the caller may not do this
  kResourceExhausted = 8,   ///< out of memory, quota or capacity
  kFailedPrecondition = 9,  ///< the system is not in the state the operation needs
  kAborted = 10,            ///< aborted, typically by a concurrency conflict
  kOutOfRange = 11,         ///< iterated past the end (end of input, closed queue)
  kUnimplemented = 12,      ///< not supported (yet)
  kInternal = 13,           ///< an invariant of actorflow itself was broken
  kUnavailable = 14,        ///< a peer or service cannot be reached right now
  kDataLoss = 15,           ///< unrecoverable data loss or corruption
  kUnauthenticated = 16,    ///< missing or bad credentials
};

/// TensorFlow's upper-case name of a code, e.g. "INVALID_ARGUMENT".
const char* CodeName(Code code);
/// Inverse of CodeName; false when the name is unknown.
bool CodeFromName(std::string_view name, Code* code);

class Status {
 public:
  Status() = default;
  Status(Code code, std::string message);

  static Status OK() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  Code code() const { return state_ ? state_->code : Code::kOk; }
  const std::string& message() const;

  /// "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;

  /// Returns a copy with `context` appended to the message ("msg; context").
  Status WithContext(std::string_view context) const;
  /// Keeps the first error: if this is OK, becomes `other`.
  void Update(const Status& other) {
    if (ok() && !other.ok()) *this = other;
  }

  bool operator==(const Status& o) const { return code() == o.code() && message() == o.message(); }
  bool operator!=(const Status& o) const { return !(*this == o); }

 private:
  struct State {
    Code code;
    std::string message;
  };
  std::shared_ptr<const State> state_;  // null when OK: OK statuses cost nothing
};

std::ostream& operator<<(std::ostream& os, const Status& s);

/// A value or the Status explaining why there is none.
template <class T>
class StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}  // NOLINT(implicit)
  StatusOr(Status status) : v_(std::move(status)) {}  // NOLINT(implicit)
  bool ok() const { return v_.index() == 0; }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(v_);
  }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> v_;
};

namespace strings {
/// Concatenates anything printable with operator<<.
template <class... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace strings

/// Coded constructors, e.g. errors::InvalidArgument("node '", name, "' ...").
namespace errors {
#define AF_DECLARE_ERROR(Name, CODE)                                   \
  template <class... Args>                                             \
  Status Name(const Args&... args) {                                   \
    return Status(Code::CODE, ::actorflow::strings::StrCat(args...));  \
  }                                                                    \
  inline bool Is##Name(const Status& s) { return s.code() == Code::CODE; }
AF_DECLARE_ERROR(Cancelled, kCancelled)
AF_DECLARE_ERROR(Unknown, kUnknown)
AF_DECLARE_ERROR(InvalidArgument, kInvalidArgument)
AF_DECLARE_ERROR(DeadlineExceeded, kDeadlineExceeded)
AF_DECLARE_ERROR(NotFound, kNotFound)
AF_DECLARE_ERROR(AlreadyExists, kAlreadyExists)
AF_DECLARE_ERROR(PermissionDenied, kPermissionDenied)
AF_DECLARE_ERROR(ResourceExhausted, kResourceExhausted)
AF_DECLARE_ERROR(FailedPrecondition, kFailedPrecondition)
AF_DECLARE_ERROR(Aborted, kAborted)
AF_DECLARE_ERROR(OutOfRange, kOutOfRange)
AF_DECLARE_ERROR(Unimplemented, kUnimplemented)
AF_DECLARE_ERROR(Internal, kInternal)
AF_DECLARE_ERROR(Unavailable, kUnavailable)
AF_DECLARE_ERROR(DataLoss, kDataLoss)
AF_DECLARE_ERROR(Unauthenticated, kUnauthenticated)
#undef AF_DECLARE_ERROR
}  // namespace errors

}  // namespace actorflow

/// Returns from the enclosing function if `expr` yields a non-OK Status.
#define AF_RETURN_IF_ERROR(expr)                  \
  do {                                            \
    ::actorflow::Status _af_status = (expr);      \
    if (!_af_status.ok()) return _af_status;      \
  } while (0)

#define AF_CONCAT_INNER(a, b) a##b
#define AF_CONCAT(a, b) AF_CONCAT_INNER(a, b)
/// `AF_ASSIGN_OR_RETURN(auto x, MakeX());`
#define AF_ASSIGN_OR_RETURN(lhs, expr)                          \
  auto AF_CONCAT(_af_sor_, __LINE__) = (expr);                  \
  if (!AF_CONCAT(_af_sor_, __LINE__).ok())                      \
    return AF_CONCAT(_af_sor_, __LINE__).status();              \
  lhs = std::move(AF_CONCAT(_af_sor_, __LINE__)).value()
