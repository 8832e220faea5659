// Base-128 varints, as protobuf and LevelDB write them: 7 bits a byte, low
// bits first, the high bit set on every byte but the last.
//
//   std::string s;
//   varint::Put64(&s, 300);                        // ac 02
//   uint64_t v; const char* p = s.data();
//   p = varint::Get64(p, s.data() + s.size(), &v); // v == 300, p past it
//
// Get* never reads past `limit`, and returns nullptr for a truncated or
// overlong varint (more than 10 bytes, or a Get32 value above 2^32 - 1).
#pragma once

#include <cstdint>
#include <string>

namespace actorflow {
namespace varint {

inline void Put64(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

/// The bytes Put64 writes for `v`.
inline int Length64(uint64_t v) {
  int n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

inline const char* Get64(const char* p, const char* limit, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && p < limit; shift += 7) {
    const uint64_t byte = static_cast<unsigned char>(*p++);
    if (shift == 63 && byte > 1) return nullptr;  // more than 64 bits
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return p;
    }
  }
  return nullptr;
}

inline const char* Get32(const char* p, const char* limit, uint32_t* v) {
  uint64_t wide = 0;
  p = Get64(p, limit, &wide);
  if (p == nullptr || wide > UINT32_MAX) return nullptr;
  *v = static_cast<uint32_t>(wide);
  return p;
}

}  // namespace varint
}  // namespace actorflow
