// Checkpoint bundles: named tensors that BundleWriter writes and BundleReader
// reads, in one of two formats (BundleFormat):
//  - TensorFlow's V2 checkpoint (P.index + P.data-NNNNN-of-NNNNN), the default:
//    checkpoint/tf_bundle_format.hpp;
//  - actorflow's own single-file format, P.afckpt, described below: what
//    earlier actorflow versions wrote. Still read, so that their checkpoints
//    restore, and written only on request.
// The checkpoint with prefix P in actorflow's format is the file
// BundleFileName(P) = P + ".afckpt".
//
// Byte layout, format version 1. Integers are little-endian and fixed-width
// (core/io/fixed_width.hpp); offsets count from the start of the file.
//
//   [0, 48)  header
//      0  8  magic         "AFCKPT\r\n"
//      8  4  u32 version   1
//     12  4  u32 byte_order 0x01020304, so the file holds 04 03 02 01
//     16  8  u64 index_offset
//     24  8  u64 index_length  index_offset + index_length == file size
//     32  8  u64 num_entries
//     40  4  u32 reserved  0
//     44  4  u32 meta_crc  masked CRC32C of header bytes [0, 44) followed by
//                          the index bytes
//   [48, index_offset)  data: each tensor's bytes at its entry's offset, which
//                       is a multiple of 64; zero bytes pad between tensors
//   [index_offset, end) index: num_entries entries, sorted by name, names unique
//      u32 name_length     1 .. kMaxNameLength
//      name_length bytes   the tensor's name
//      i32 dtype           DataType number (TensorFlow's): a POD type or DT_STRING
//      u32 rank            0 .. kMaxRank
//      i64 dims[rank]      each >= 0, their product fits in int64
//      u64 offset          >= kDataStart, offset + length <= index_offset
//      u64 length          bytes of the tensor
//      u32 data_crc        masked CRC32C of those bytes
//
// Tensor bytes. Numeric and bool tensors: the elements in row-major order,
// little-endian (a bool is one byte, 0 or 1); length = elements * element size.
// String tensors: per element a u64 byte count, then the bytes.
//
// A reader checks the header, then the index against meta_crc before using
// any of it, and each tensor against its data_crc when it reads it; every
// length is checked against the file's size (and index_length against a
// bound, kDefaultMaxIndexBytes by default) before anything is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "actorflow/core/dtypes.hpp"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor_shape.hpp"

namespace actorflow {

enum class BundleFormat {
  kTensorFlow,  // P.index + P.data-00000-of-00001, as TensorFlow writes them
  kActorflow,   // P.afckpt (actorflow before TensorFlow's format)
};

namespace bundle {

constexpr char kMagic[8] = {'A', 'F', 'C', 'K', 'P', 'T', '\r', '\n'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kByteOrderMark = 0x01020304u;
constexpr size_t kHeaderSize = 48;
constexpr size_t kMetaCrcOffset = 44;  // the header's bytes before meta_crc
constexpr uint64_t kDataAlignment = 64;
constexpr uint64_t kDataStart = 64;  // the first tensor's offset
constexpr uint32_t kMaxNameLength = 1 << 16;
constexpr uint32_t kMaxRank = 254;
/// The default bound on an index's bytes (BundleReader::Options): 256 MiB,
/// some millions of tensors.
constexpr uint64_t kDefaultMaxIndexBytes = uint64_t{256} << 20;

/// The file of the checkpoint with prefix `prefix`.
inline std::string BundleFileName(const std::string& prefix) { return prefix + ".afckpt"; }

/// True when tensors of this dtype can be stored (numeric, bool, string).
bool DtypeIsStorable(DataType dtype);
/// True on little-endian hosts, the only ones whose tensor bytes are the file's.
bool HostIsLittleEndian();

struct Header {
  uint32_t version = kVersion;
  uint64_t index_offset = 0;
  uint64_t index_length = 0;
  uint64_t num_entries = 0;
};

/// The header's first kMetaCrcOffset bytes (meta_crc is computed over them).
std::string EncodeHeaderPrefix(const Header& h);

struct IndexEntry {
  std::string name;
  DataType dtype = DT_INVALID;
  TensorShape shape;
  int shard = 0;  // which data file (TensorFlow's format; 0 in actorflow's)
  uint64_t offset = 0;
  uint64_t length = 0;
  uint32_t masked_crc = 0;
  std::string unreadable;  // why this reader cannot read the tensor; empty when it can
};

void AppendIndexEntry(const IndexEntry& e, std::string* out);

/// Reads little-endian fields from a byte range of `file` that starts at file
/// offset `base`, refusing to run past its end: DataLoss naming the file, the
/// `region` ("its index", "tensor 'x'") and the offset.
class Decoder {
 public:
  Decoder(const char* data, size_t size, uint64_t base, std::string file, std::string region)
      : p_(data), size_(size), base_(base), file_(std::move(file)), region_(std::move(region)) {}
  Status ReadU32(const char* what, uint32_t* v);
  Status ReadU64(const char* what, uint64_t* v);
  Status ReadBytes(const char* what, size_t n, std::string* v);
  size_t remaining() const { return size_ - pos_; }
  uint64_t offset() const { return base_ + pos_; }
  const std::string& file() const { return file_; }

 private:
  Status Truncated(const char* what, size_t need) const;
  const char* p_;
  size_t size_;
  size_t pos_ = 0;
  uint64_t base_;
  std::string file_;
  std::string region_;
};

/// Decodes and checks one index entry (see the layout above); DataLoss naming
/// the file, the entry and the offset when it is malformed. `data_end` is the
/// index's offset: every tensor lies before it.
Status ReadIndexEntry(Decoder* d, uint64_t data_end, IndexEntry* e);

}  // namespace bundle
}  // namespace actorflow
