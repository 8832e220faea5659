// CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected, init and final xor
// 0xFFFFFFFF): the checksum of TFRecord files (core/io/record_writer.hpp) and
// of checkpoint bundles (checkpoint/bundle_format.hpp).
//
//   uint32_t crc = crc32c::Value(data, n);           // CRC32C("123456789") = 0xE3069283
//   crc = crc32c::Extend(crc, more, m);              // == Value(data ++ more)
//   crc = crc32c::Combine(crc, Value(more, m), m);   // the same, from separate pieces
//   uint32_t stored = crc32c::Mask(crc);             // what TFRecord files store
//
// Three implementations, chosen once at run time from what the CPU has (so a
// binary built without -msse4.2 still uses the instructions where they exist):
//  - AVX-512 VPCLMULQDQ: carry-less multiplication folds 256 bytes a step
//    (measured here: ~27 GB/s from memory, ~55 GB/s from cache);
//  - SSE4.2: the `crc32` instruction on three independent streams (its latency
//    is three cycles, its throughput one a cycle), joined by a table-driven
//    shift (~16 GB/s);
//  - elsewhere Boost.CRC's tables (~0.4 GB/s).
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace actorflow {
namespace crc32c {

/// CRC32C of data ++ [p, p + n) where `crc` is the CRC32C of data (0 for none).
uint32_t Extend(uint32_t crc, const void* p, size_t n);
/// CRC32C of [p, p + n).
inline uint32_t Value(const void* p, size_t n) { return Extend(0, p, n); }
/// CRC32C of A ++ B from CRC32C(A), CRC32C(B) and |B|: pieces checksummed on
/// several threads join into the CRC of the whole (O(log length_b)).
uint32_t Combine(uint32_t crc_a, uint32_t crc_b, uint64_t length_b);

/// Extend computed by Boost.CRC, on any CPU.
uint32_t ExtendPortable(uint32_t crc, const void* p, size_t n);
/// True when this CPU has SSE4.2's crc32 instruction (x86-64 only).
bool HardwareAvailable();
/// Extend computed with the crc32 instruction; call only when HardwareAvailable().
uint32_t ExtendHardware(uint32_t crc, const void* p, size_t n);
/// True when this CPU has AVX-512 with VPCLMULQDQ (and SSE4.2), x86-64 only.
bool FoldingAvailable();
/// Extend computed by carry-less folding; call only when FoldingAvailable().
uint32_t ExtendFolding(uint32_t crc, const void* p, size_t n);

/// The masked CRC that TFRecord files (and checkpoint bundles) store: a CRC of
/// bytes that themselves hold CRCs is weak, so stored CRCs are rotated and
/// offset: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
constexpr uint32_t kMaskDelta = 0xa282ead8u;
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t Unmask(uint32_t masked) {
  const uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace crc32c
}  // namespace actorflow
