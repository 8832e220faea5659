// Text to numbers as TensorFlow's parsing ops read them (DecodeCSV,
// StringToNumber; TensorFlow uses absl::SimpleAtoi / SimpleAtof):
//  - ASCII whitespace around the number is ignored; nothing else may follow;
//  - integers are decimal with an optional sign; one out of range is refused;
//  - floats are decimal, with an optional exponent, or inf, infinity or nan
//    (any case); hexadecimal is refused; a value too large becomes +-inf.
// Each returns false, leaving *out unspecified, for text that is not a number.
#pragma once

#include <cstdint>
#include <string_view>

namespace actorflow {
namespace parsing {

bool ParseInt32(std::string_view text, int32_t* out);
bool ParseInt64(std::string_view text, int64_t* out);
bool ParseFloat(std::string_view text, float* out);
bool ParseDouble(std::string_view text, double* out);

}  // namespace parsing
}  // namespace actorflow
