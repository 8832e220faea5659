// Fixed-width little-endian integers: the one codec of every binary format
// actorflow reads and writes (TFRecord framing, the checkpoint bundle and its
// sstable, the tensor transport's frames).
//
//   std::string s;
//   fixed::Put<uint32_t>(&s, 7);          // 07 00 00 00
//   uint32_t v = fixed::Get<uint32_t>(s.data());
//
// Put/Get take any integer type (signed ones as their two's complement
// bits); Encode* write into a buffer the caller sized. The bytes are the same
// on any host: each is shifted out, which compilers turn into one move on a
// little-endian machine. Get reads exactly sizeof(T) bytes: the caller checks
// the length first.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

namespace actorflow {
namespace fixed {

template <class T>
inline void Encode(char* p, T value) {
  static_assert(std::is_integral<T>::value, "fixed-width integers only");
  using U = std::make_unsigned_t<T>;
  const U v = static_cast<U>(value);
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<char>(static_cast<uint8_t>(v >> (8 * i)));
}

template <class T>
inline T Get(const char* p) {
  static_assert(std::is_integral<T>::value, "fixed-width integers only");
  using U = std::make_unsigned_t<T>;
  U v = 0;
  for (size_t i = sizeof(T); i-- > 0;) v = static_cast<U>((v << 8) | static_cast<unsigned char>(p[i]));
  return static_cast<T>(v);
}

template <class T>
inline void Put(std::string* out, T value) {
  char b[sizeof(T)];
  Encode<T>(b, value);
  out->append(b, sizeof(T));
}

inline void EncodeFixed32(char* p, uint32_t v) { Encode<uint32_t>(p, v); }
inline void EncodeFixed64(char* p, uint64_t v) { Encode<uint64_t>(p, v); }
inline uint32_t DecodeFixed32(const char* p) { return Get<uint32_t>(p); }
inline uint64_t DecodeFixed64(const char* p) { return Get<uint64_t>(p); }

}  // namespace fixed
}  // namespace actorflow
