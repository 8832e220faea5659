#include "actorflow/ops/parsing/number_parsing.hpp"

#include <charconv>
#include <cstdlib>
#include <string>

namespace actorflow {
namespace parsing {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view Strip(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

template <class Int>
bool ParseInt(std::string_view text, Int* out) {
  text = Strip(text);
  if (!text.empty() && text.front() == '+') {  // from_chars takes '-' only
    text.remove_prefix(1);
    if (!text.empty() && (text.front() == '-' || text.front() == '+')) return false;
  }
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out, 10);
  return ec == std::errc() && end == text.data() + text.size();
}

// strtod/strtof on a copy (they need a terminator), refusing what they accept
// beyond TensorFlow: hexadecimal, and text they stop short of.
template <class Float, class Parse>
bool ParseReal(std::string_view text, Float* out, Parse parse) {
  text = Strip(text);
  if (text.empty() || text.find_first_of("xX") != std::string_view::npos) return false;
  const std::string copy(text);
  char* end = nullptr;
  const Float v = parse(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return false;
  *out = v;  // on ERANGE: +-inf for overflow, a tiny value or zero for underflow
  return true;
}

}  // namespace

bool ParseInt32(std::string_view text, int32_t* out) { return ParseInt(text, out); }
bool ParseInt64(std::string_view text, int64_t* out) { return ParseInt(text, out); }
bool ParseFloat(std::string_view text, float* out) { return ParseReal(text, out, std::strtof); }
bool ParseDouble(std::string_view text, double* out) { return ParseReal(text, out, std::strtod); }

}  // namespace parsing
}  // namespace actorflow
