// TensorFlow's V2 checkpoint format (the "tensor bundle" of
// tensorflow/core/util/tensor_bundle), as BundleWriter writes it and
// BundleReader reads it by default. Byte for byte what TensorFlow writes;
// docs/tensorflow-formats/tf_checkpoint_v2.md has the details and golden bytes.
//
// The checkpoint with prefix P is two or more files:
//   P.index                    a table (checkpoint/sstable.hpp) whose keys are
//                              sorted bytewise: under "" a BundleHeaderProto
//                              (num_shards, endianness, version), under each
//                              tensor's name a BundleEntryProto (dtype, shape,
//                              shard_id, offset, size, masked CRC32C)
//   P.data-00000-of-0000N      the tensors' bytes, one after another in the
//                              order they were added, unpadded
// Numeric and bool tensors are their elements, row-major, little-endian.
// A string tensor is every element's length as a varint, the masked CRC32C of
// those lengths (each as a 4-byte little-endian integer, 8 bytes if it does not
// fit), then the strings' bytes; its entry's CRC continues that one over the 4
// stored bytes and the strings.
//
// Partitioned tensors (entries with slices) are listed but not read
// (Unimplemented naming the tensor); big-endian checkpoints are refused.
#pragma once

#include <string>

#include "actorflow/checkpoint/bundle_format.hpp"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {
namespace tf_bundle {

/// The format version the header carries (TensorFlow's kTensorBundleVersion),
/// and the oldest reader version it asks for.
constexpr int kVersion = 1;
constexpr int kMinConsumer = 0;
/// A bound on a header's num_shards (TensorFlow writes one per device).
constexpr int kMaxShards = 1 << 16;

inline std::string IndexFileName(const std::string& prefix) { return prefix + ".index"; }
/// "P.data-00000-of-00001".
std::string DataFileName(const std::string& prefix, int shard, int num_shards);

/// The header's value: num_shards, little-endian, version 1.
std::string EncodeHeader(int num_shards);
/// Decodes and checks a header (versions, endianness); DataLoss or
/// Unimplemented naming `file`.
Status DecodeHeader(const std::string& file, const std::string& value, int* num_shards);

/// The entry's value for tensor `e` (dtype, shape, shard, offset, size, CRC).
std::string EncodeEntry(const bundle::IndexEntry& e);
/// Decodes and checks the entry of tensor `name`. An entry this reader cannot
/// read (a partitioned tensor, a dtype it does not store) decodes with the
/// reason in e->unreadable; a malformed one is DataLoss naming `file`.
Status DecodeEntry(const std::string& file, const std::string& name, const std::string& value, int num_shards,
                   bundle::IndexEntry* e);

/// A string tensor's stored bytes before its strings: the lengths and their
/// checksum. `crc` gets the running CRC32C (unmasked) after those bytes.
std::string EncodeStringLengths(const Tensor& strings, uint32_t* crc);
/// Checks a string tensor's stored bytes [p, p + size) for `n` strings
/// against the entry's CRC (the lengths, their checksum, the strings); on
/// failure `why` says what does not match.
bool CheckStrings(const char* p, size_t size, int64_t n, uint32_t masked_crc, std::string* why);
/// The `n` strings of bytes CheckStrings accepted, into out[0, n).
void FillStrings(const char* p, size_t size, int64_t n, std::string* out);

}  // namespace tf_bundle
}  // namespace actorflow
