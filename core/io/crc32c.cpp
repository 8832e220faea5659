#include "actorflow/core/io/crc32c.hpp"

#include <boost/crc.hpp>

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#include <nmmintrin.h>
#define AF_HAVE_CRC32_INSTRUCTION 1
#else
#define AF_HAVE_CRC32_INSTRUCTION 0
#endif

namespace actorflow {
namespace crc32c {
namespace {

using BoostCrc32c = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

constexpr uint32_t kReflectedPoly = 0x82F63B78u;  // 0x1EDC6F41 bit-reversed

uint32_t ReverseBits(uint32_t v) {
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i, v >>= 1) r = (r << 1) | (v & 1);
  return r;
}

#if AF_HAVE_CRC32_INSTRUCTION

// Joining streams. The raw CRC state (before the final xor) of A ++ B is the
// state of A shifted over |B| zero bytes, xor the raw state of B computed from
// zero: CRCs are linear over GF(2). Shifting over a fixed length is a 32x32
// bit matrix, applied through four 256-entry tables (Mark Adler's method).

constexpr size_t kLongStream = 8192;  // bytes per stream in blocks of 3 streams
constexpr size_t kShortStream = 256;

uint32_t Gf2MatrixTimes(const uint32_t* mat, uint32_t vec) {
  uint32_t sum = 0;
  for (; vec != 0; vec >>= 1, ++mat)
    if (vec & 1) sum ^= *mat;
  return sum;
}

void Gf2MatrixSquare(uint32_t* square, const uint32_t* mat) {
  for (int n = 0; n < 32; ++n) square[n] = Gf2MatrixTimes(mat, mat[n]);
}

/// The operator that appends `len` zero bytes to a raw CRC state; `len` a power of two.
void ZerosOperator(uint32_t* even, size_t len) {
  uint32_t odd[32];
  odd[0] = kReflectedPoly;  // one zero bit
  for (int n = 1; n < 32; ++n) odd[n] = uint32_t{1} << (n - 1);
  Gf2MatrixSquare(even, odd);  // two zero bits
  Gf2MatrixSquare(odd, even);  // four zero bits
  // Each squaring doubles the length: the first one below gives one byte.
  for (;;) {
    Gf2MatrixSquare(even, odd);
    len >>= 1;
    if (len == 0) return;
    Gf2MatrixSquare(odd, even);
    len >>= 1;
    if (len == 0) break;
  }
  std::memcpy(even, odd, sizeof(odd));
}

/// Shifts a raw CRC state over a fixed number of zero bytes.
class ZerosShift {
 public:
  explicit ZerosShift(size_t len) {
    uint32_t op[32];
    ZerosOperator(op, len);
    for (uint32_t n = 0; n < 256; ++n)
      for (int b = 0; b < 4; ++b) table_[b][n] = Gf2MatrixTimes(op, n << (8 * b));
  }
  uint32_t operator()(uint32_t crc) const {
    return table_[0][crc & 0xff] ^ table_[1][(crc >> 8) & 0xff] ^ table_[2][(crc >> 16) & 0xff] ^
           table_[3][crc >> 24];
  }

 private:
  uint32_t table_[4][256];
};

const ZerosShift& LongShift() {
  static const ZerosShift shift(kLongStream);
  return shift;
}
const ZerosShift& ShortShift() {
  static const ZerosShift shift(kShortStream);
  return shift;
}

inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Three streams of `stream` bytes each from `*next`, joined into `crc0`.
__attribute__((target("sse4.2"))) inline uint64_t ThreeStreams(uint64_t crc0, const unsigned char** next,
                                                                size_t stream, const ZerosShift& shift) {
  const unsigned char* p = *next;
  const unsigned char* const stop = p + stream;
  uint64_t crc1 = 0, crc2 = 0;
  do {
    crc0 = _mm_crc32_u64(crc0, Load64(p));
    crc1 = _mm_crc32_u64(crc1, Load64(p + stream));
    crc2 = _mm_crc32_u64(crc2, Load64(p + 2 * stream));
    p += 8;
  } while (p < stop);
  crc0 = shift(static_cast<uint32_t>(crc0)) ^ crc1;
  crc0 = shift(static_cast<uint32_t>(crc0)) ^ crc2;
  *next = p + 2 * stream;
  return crc0;
}

// Folding with carry-less multiplication (AVX-512 VPCLMULQDQ). Sixteen
// 128-bit lanes (four 512-bit accumulators) each hold the CRC-equivalent
// remainder of their part of the data; every step multiplies a lane by
// x^distance mod P and adds the next 16 bytes. A 16-byte lane in the
// reflected bit order holds a polynomial F = H*x^64 + L with H in its low
// half, so F*x^d = H*x^(d+64) + L*x^d; the constants are x^(d+63) and
// x^(d-1) mod P because a carry-less product of reflected operands comes out
// multiplied by x once more. The last lane is reduced to 32 bits by the crc32
// instruction, which computes F*x^32 mod P from a zero state.

/// x^e mod P, bit-reflected into 64 bits (coefficient of x^i at bit 63 - i).
uint64_t XPowModReflected(int e) {
  uint64_t r = 1;
  for (int i = 0; i < e; ++i) {
    r <<= 1;
    if (r & (uint64_t{1} << 32)) r ^= (uint64_t{1} << 32) | 0x1EDC6F41u;
  }
  uint64_t out = 0;
  for (int b = 0; b < 32; ++b)
    if (r & (uint64_t{1} << b)) out |= uint64_t{1} << (63 - b);
  return out;
}

/// Fold constants for 128, 512 and 2048 bits: {x^(d+63), x^(d-1)} mod P.
struct FoldConstants {
  FoldConstants() {
    const int distances[3] = {128, 512, 2048};
    for (int i = 0; i < 3; ++i) {
      k[i][0] = static_cast<long long>(XPowModReflected(distances[i] + 63));
      k[i][1] = static_cast<long long>(XPowModReflected(distances[i] - 1));
    }
  }
  long long k[3][2];
};

#define AF_VPCLMUL_TARGET __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))

AF_VPCLMUL_TARGET inline __m512i Fold512(__m512i acc, __m512i k, __m512i next) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(acc, k, 0x00), _mm512_clmulepi64_epi128(acc, k, 0x11),
                                   next, 0x96);  // a ^ b ^ c
}

AF_VPCLMUL_TARGET inline __m128i Fold128(__m128i acc, __m128i k, __m128i next) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11)), next);
}

// Below this the setup costs more than the crc32 instruction's three streams.
constexpr size_t kMinFoldBytes = 512;

#endif  // AF_HAVE_CRC32_INSTRUCTION

// Combining. With init = final xor, CRC(A ++ B) = CRC(A) * x^(8|B|) + CRC(B)
// mod P (zlib's crc32_combine). Reflected polynomials: x^0 is bit 31.

uint32_t MultModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = uint32_t{1} << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kReflectedPoly : b >> 1;
  }
  return product;
}

/// x^(2^k) mod P for k < 67: enough for any 64-bit count of bytes (2^3 bits each).
class PowersOfX {
 public:
  PowersOfX() {
    table_[0] = uint32_t{1} << 30;  // x^1
    for (int k = 1; k < kSize; ++k) table_[k] = MultModP(table_[k - 1], table_[k - 1]);
  }
  /// x^(8n) mod P.
  uint32_t BytesShift(uint64_t n) const {
    uint32_t p = uint32_t{1} << 31;  // x^0
    for (int k = 3; n != 0; n >>= 1, ++k)
      if (n & 1) p = MultModP(table_[k], p);
    return p;
  }

 private:
  static constexpr int kSize = 67;
  uint32_t table_[kSize];
};

using ExtendFn = uint32_t (*)(uint32_t, const void*, size_t);

ExtendFn ChooseExtend() {
  if (FoldingAvailable()) return &ExtendFolding;
  return HardwareAvailable() ? &ExtendHardware : &ExtendPortable;
}

}  // namespace

uint32_t ExtendPortable(uint32_t crc, const void* p, size_t n) {
  // Boost keeps the unreflected remainder: checksum = reflect(rem) ^ 0xFFFFFFFF.
  BoostCrc32c c(ReverseBits(crc ^ 0xFFFFFFFFu));
  c.process_bytes(p, n);
  return c.checksum();
}

#if AF_HAVE_CRC32_INSTRUCTION

bool HardwareAvailable() {
  static const bool available = __builtin_cpu_supports("sse4.2");
  return available;
}

__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t crc, const void* p, size_t n) {
  const unsigned char* next = static_cast<const unsigned char*>(p);
  const unsigned char* const end = next + n;
  uint64_t crc0 = crc ^ 0xFFFFFFFFu;  // the raw state
  while (next < end && (reinterpret_cast<uintptr_t>(next) & 7) != 0) crc0 = _mm_crc32_u8(static_cast<uint32_t>(crc0), *next++);
  if (static_cast<size_t>(end - next) >= 3 * kLongStream) {
    const ZerosShift& shift = LongShift();
    while (static_cast<size_t>(end - next) >= 3 * kLongStream) crc0 = ThreeStreams(crc0, &next, kLongStream, shift);
  }
  if (static_cast<size_t>(end - next) >= 3 * kShortStream) {
    const ZerosShift& shift = ShortShift();
    while (static_cast<size_t>(end - next) >= 3 * kShortStream) crc0 = ThreeStreams(crc0, &next, kShortStream, shift);
  }
  for (; end - next >= 8; next += 8) crc0 = _mm_crc32_u64(crc0, Load64(next));
  while (next < end) crc0 = _mm_crc32_u8(static_cast<uint32_t>(crc0), *next++);
  return static_cast<uint32_t>(crc0) ^ 0xFFFFFFFFu;
}

bool FoldingAvailable() {
  static const bool available = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul") &&
                                __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq");
  return available;
}

AF_VPCLMUL_TARGET uint32_t ExtendFolding(uint32_t crc, const void* p, size_t n) {
  if (n < kMinFoldBytes) return ExtendHardware(crc, p, n);
  static const FoldConstants constants;
  const __m128i k128 = _mm_set_epi64x(constants.k[0][1], constants.k[0][0]);
  const __m512i k512 = _mm512_broadcast_i32x4(_mm_set_epi64x(constants.k[1][1], constants.k[1][0]));
  const __m512i k2048 = _mm512_broadcast_i32x4(_mm_set_epi64x(constants.k[2][1], constants.k[2][0]));
  const unsigned char* next = static_cast<const unsigned char*>(p);
  // The raw state joins the data as its first four bytes.
  const __m512i state = _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(crc ^ 0xFFFFFFFFu)));
  __m512i a0 = _mm512_xor_si512(_mm512_loadu_si512(next), state);
  __m512i a1 = _mm512_loadu_si512(next + 64);
  __m512i a2 = _mm512_loadu_si512(next + 128);
  __m512i a3 = _mm512_loadu_si512(next + 192);
  next += 256;
  n -= 256;
  for (; n >= 256; next += 256, n -= 256) {
    a0 = Fold512(a0, k2048, _mm512_loadu_si512(next));
    a1 = Fold512(a1, k2048, _mm512_loadu_si512(next + 64));
    a2 = Fold512(a2, k2048, _mm512_loadu_si512(next + 128));
    a3 = Fold512(a3, k2048, _mm512_loadu_si512(next + 192));
  }
  a1 = Fold512(a0, k512, a1);
  a2 = Fold512(a1, k512, a2);
  a3 = Fold512(a2, k512, a3);
  __m128i lane = _mm512_extracti32x4_epi32(a3, 0);
  lane = Fold128(lane, k128, _mm512_extracti32x4_epi32(a3, 1));
  lane = Fold128(lane, k128, _mm512_extracti32x4_epi32(a3, 2));
  lane = Fold128(lane, k128, _mm512_extracti32x4_epi32(a3, 3));
  uint64_t raw = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(lane)));
  raw = _mm_crc32_u64(raw, static_cast<uint64_t>(_mm_extract_epi64(lane, 1)));
  // The tail (< 256 bytes) continues from the raw state.
  return ExtendHardware(static_cast<uint32_t>(raw) ^ 0xFFFFFFFFu, next, n);
}

#else

bool HardwareAvailable() { return false; }
uint32_t ExtendHardware(uint32_t crc, const void* p, size_t n) { return ExtendPortable(crc, p, n); }
bool FoldingAvailable() { return false; }
uint32_t ExtendFolding(uint32_t crc, const void* p, size_t n) { return ExtendPortable(crc, p, n); }

#endif  // AF_HAVE_CRC32_INSTRUCTION

uint32_t Extend(uint32_t crc, const void* p, size_t n) {
  static const ExtendFn extend = ChooseExtend();
  return extend(crc, p, n);
}

uint32_t Combine(uint32_t crc_a, uint32_t crc_b, uint64_t length_b) {
  static const PowersOfX powers;
  return MultModP(powers.BytesShift(length_b), crc_a) ^ crc_b;
}

}  // namespace crc32c
}  // namespace actorflow
