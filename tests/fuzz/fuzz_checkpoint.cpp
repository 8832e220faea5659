// Fuzz target: the checkpoint bundle reader (checkpoint/bundle_reader.hpp)
// over a bundle file of fuzzed bytes in actorflow's .afckpt format: Open (header and index checked against
// the file), then, for every tensor in the index, its dtype and shape,
// Lookup, and LookupManyInto into destinations of the stored dtype and shape.
//
// Input layout (tests/fuzz/make_seeds.cpp writes seeds in it):
//   byte 0   bit 0: before writing the file, the target recomputes the
//            checksums (each index entry's data_crc over the bytes it points
//            at, then the header's meta_crc), so that mutations of sizes,
//            offsets and dims get past the CRC checks to the code that uses them
//   the rest: the bundle file's bytes (checkpoint/bundle_format.hpp)
// Findings: crashes, sanitizer reports, allocations over -rss_limit_mb /
// -malloc_limit_mb (a size from the file trusted before it is checked against
// the file), and an invariant of the reader broken (a tensor read back with
// another dtype or shape than the index says).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/checkpoint/bundle_format.hpp"
#include "actorflow/checkpoint/bundle_reader.hpp"
#include "actorflow/core/io/crc32c.hpp"
#include "actorflow/core/io/fixed_width.hpp"
#include "actorflow/core/tensor.hpp"
#include "tests/fuzz/fuzz_bundle.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace actorflow;

namespace {

// Recomputes the data_crc of every index entry it can walk and the header's
// meta_crc, in place; leaves what does not parse as it is.
void FixChecksums(std::string* file) {
  char* f = &(*file)[0];
  const uint64_t size = file->size();
  if (size < bundle::kHeaderSize) return;
  const uint64_t index_offset = fixed::DecodeFixed64(f + 16);
  const uint64_t index_length = fixed::DecodeFixed64(f + 24);
  const uint64_t num_entries = fixed::DecodeFixed64(f + 32);
  if (index_offset > size || index_length > size - index_offset) return;
  uint64_t p = index_offset;
  const uint64_t end = index_offset + index_length;
  auto have = [&](uint64_t n) { return n <= end - p; };
  for (uint64_t i = 0; i < num_entries && have(4); ++i) {
    const uint64_t name_length = fixed::DecodeFixed32(f + p);
    if (!have(4 + name_length + 8)) break;
    p += 4 + name_length + 4;  // name_length, name, dtype
    const uint64_t rank = fixed::DecodeFixed32(f + p);
    p += 4;
    if (rank > bundle::kMaxRank || !have(8 * rank + 20)) break;
    p += 8 * rank;
    const uint64_t offset = fixed::DecodeFixed64(f + p);
    const uint64_t length = fixed::DecodeFixed64(f + p + 8);
    p += 16;
    if (offset <= size && length <= size - offset) {
      const uint32_t crc = crc32c::Mask(crc32c::Value(f + offset, length));
      for (int b = 0; b < 4; ++b) f[p + b] = static_cast<char>(crc >> (8 * b));
    }
    p += 4;
  }
  const uint32_t meta = crc32c::Mask(
      crc32c::Extend(crc32c::Value(f, bundle::kMetaCrcOffset), f + index_offset, index_length));
  for (int b = 0; b < 4; ++b) f[bundle::kMetaCrcOffset + b] = static_cast<char>(meta >> (8 * b));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string file(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 1) FixChecksums(&file);
  const std::string prefix = fuzz::ScratchDir() + "/model";
  fuzz::WriteScratchFile("model.afckpt", file.data(), file.size());
  std::unique_ptr<BundleReader> reader;
  if (!BundleReader::Open(prefix, &reader).ok()) return 0;
  fuzz::ReadEveryTensor(*reader);
  return 0;
}
