// Fuzz target: the reader of TensorFlow's V2 checkpoints
// (checkpoint/bundle_reader.hpp over checkpoint/sstable.hpp and
// tf_bundle_format.hpp): Open (the .index table, its header and entries,
// checked against the data file), then, for every tensor, its dtype and
// shape, Lookup, and LookupManyInto.
//
// Input layout (tests/fuzz/make_seeds.cpp writes seeds in it):
//   byte 0     bit 0: the index is built here from entries, so that fuzzed
//              BundleHeaderProto and BundleEntryProto values get past the
//              table's block checksums to the code that decodes them:
//              the index bytes are then records [u8 key length][key]
//              [u16 LE value length][value], sorted and deduplicated by key
//   bytes 1-4  u32 LE: the length of the index part (cut to what there is)
//   then       the index part (the .index file's bytes, or records), then
//              the data file's bytes (PREFIX.data-00000-of-00001)
// Findings: crashes, sanitizer reports, allocations over -rss_limit_mb /
// -malloc_limit_mb (a length from the file trusted before it is checked),
// and a tensor read back with another dtype or shape than its entry says.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/checkpoint/bundle_reader.hpp"
#include "actorflow/checkpoint/sstable.hpp"
#include "actorflow/core/tensor.hpp"
#include "tests/fuzz/fuzz_bundle.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace actorflow;

namespace {

// The table of the records in `bytes` (see the layout above).
std::string TableOfRecords(const std::string& bytes) {
  std::map<std::string, std::string> entries;
  size_t p = 0;
  while (p < bytes.size()) {
    const size_t key_len = static_cast<unsigned char>(bytes[p++]);
    if (bytes.size() - p < key_len + 2) break;
    std::string key = bytes.substr(p, key_len);
    p += key_len;
    const size_t value_len = static_cast<unsigned char>(bytes[p]) | (static_cast<unsigned char>(bytes[p + 1]) << 8);
    p += 2;
    if (bytes.size() - p < value_len) break;
    entries.emplace(std::move(key), bytes.substr(p, value_len));
    p += value_len;
  }
  std::string table;
  if (!sstable::Build(sstable::Entries(entries.begin(), entries.end()), &table).ok()) return std::string();
  return table;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  const std::string in(reinterpret_cast<const char*>(data), size);
  const uint32_t claimed = static_cast<uint32_t>(data[1]) | (static_cast<uint32_t>(data[2]) << 8) |
                           (static_cast<uint32_t>(data[3]) << 16) | (static_cast<uint32_t>(data[4]) << 24);
  const size_t index_len = std::min<size_t>(claimed, size - 5);
  std::string index = in.substr(5, index_len);
  const std::string file_data = in.substr(5 + index_len);
  if (data[0] & 1) index = TableOfRecords(index);
  fuzz::WriteScratchFile("model.index", index.data(), index.size());
  fuzz::WriteScratchFile("model.data-00000-of-00001", file_data.data(), file_data.size());
  const std::string prefix = fuzz::ScratchDir() + "/model";
  std::unique_ptr<BundleReader> reader;
  if (!BundleReader::Open(prefix, &reader).ok()) return 0;
  fuzz::ReadEveryTensor(*reader);
  return 0;
}
