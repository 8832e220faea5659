#include "actorflow/core/status.hpp"

#include <ostream>

namespace actorflow {

namespace {
constexpr const char* kCodeNames[] = {
    "OK",           "CANCELLED",         "UNKNOWN",         "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED", "NOT_FOUND",    "ALREADY_EXISTS",  "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
    "UNIMPLEMENTED", "INTERNAL",         "UNAVAILABLE",     "DATA_LOSS",
    "UNAUTHENTICATED"};
constexpr int kNumCodes = sizeof(kCodeNames) / sizeof(kCodeNames[0]);
}  // namespace

const char* CodeName(Code code) {
  auto i = static_cast<int>(code);
  return (i >= 0 && i < kNumCodes) ? kCodeNames[i] : "UNKNOWN";
}

bool CodeFromName(std::string_view name, Code* code) {
  for (int i = 0; i < kNumCodes; ++i) {
    if (name == kCodeNames[i]) {
      *code = static_cast<Code>(i);
      return true;
    }
  }
  return false;
}

Status::Status(Code code, std::string message) {
  if (code != Code::kOk) state_ = std::make_shared<const State>(State{code, std::move(message)});
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->message : kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code())) + ": " + message();
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code(), message() + "; " + std::string(context));
}

std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }

}  // namespace actorflow
