// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC 2011), the counter-based generator TensorFlow's random ops use: block i
// of a stream is a pure function of (key, counter i), so a tensor's values do
// not depend on how its generation is split across threads.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace actorflow {
namespace random {

class Philox4x32 {
 public:
  using Block = std::array<uint32_t, 4>;

  /// `seed` keys the generator; `stream` picks one of 2^64 independent
  /// streams under it.
  Philox4x32(uint64_t seed, uint64_t stream)
      : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)},
        stream_{static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)} {}

  /// The `index`-th block of four 32-bit values of the stream.
  Block operator()(uint64_t index) const {
    Block ctr{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), stream_[0], stream_[1]};
    std::array<uint32_t, 2> key = key_;
    for (int round = 0; round < 10; ++round) {
      const uint64_t p0 = uint64_t{kM0} * ctr[0];
      const uint64_t p1 = uint64_t{kM1} * ctr[2];
      ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
             static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
      key[0] += kW0;
      key[1] += kW1;
    }
    return ctr;
  }

 private:
  static constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;
  static constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  std::array<uint32_t, 2> key_;
  std::array<uint32_t, 2> stream_;
};

/// Uniform in [0, 1) from 32 random bits (23 of them, as TensorFlow does).
inline float Uint32ToFloat(uint32_t x) {
  const uint32_t bits = (x & 0x7fffffu) | 0x3f800000u;  // [1, 2)
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f - 1.0f;
}
/// Uniform in [0, 1) from 64 random bits (52 of them).
inline double Uint64ToDouble(uint32_t hi, uint32_t lo) {
  const uint64_t bits = ((uint64_t{hi} << 32 | lo) & 0xfffffffffffffull) | 0x3ff0000000000000ull;
  double d;
  __builtin_memcpy(&d, &bits, sizeof d);
  return d - 1.0;
}

/// Two standard normal values from four random words (Box-Muller).
inline void BoxMuller(const Philox4x32::Block& b, double* z0, double* z1) {
  constexpr double kEpsilon = 1.0e-7;
  double u1 = Uint64ToDouble(b[0], b[1]);
  const double u2 = Uint64ToDouble(b[2], b[3]);
  if (u1 < kEpsilon) u1 = kEpsilon;
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * M_PI * u2;
  *z0 = r * std::sin(theta);
  *z1 = r * std::cos(theta);
}

}  // namespace random
}  // namespace actorflow
