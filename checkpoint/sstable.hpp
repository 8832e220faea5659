// The sorted string table of a TensorFlow V2 checkpoint's .index file: the
// LevelDB table format (google/leveldb doc/table_format.md), which TensorFlow
// writes with its own fork of LevelDB's table code.
//
//   std::string bytes;
//   AF_RETURN_IF_ERROR(sstable::Build({{"", header}, {"w", entry}}, &bytes));
//   std::vector<std::pair<std::string, std::string>> entries;
//   AF_RETURN_IF_ERROR(sstable::Parse("model.index", bytes.data(), bytes.size(), &entries));
//
// Layout: data blocks of (key, value) entries, prefix-compressed, with restart
// points; an empty metaindex block; an index block mapping each data block's
// last key (or a short separator) to its place; a 48-byte footer holding the
// places of the metaindex and index blocks and the magic 0xdb4775248b80fb57.
// Each block is followed by a type byte (0 plain, 1 Snappy) and the masked
// CRC32C of the block and that byte.
//
// Build is LevelDB's own TableBuilder (Debian's libleveldb) with TensorFlow's
// options: 256 KiB blocks, a restart every 16 keys, no compression, no filter;
// its bytes are those TensorFlow writes for the same entries.
//
// Parse is not LevelDB's reader: that one trusts the block places it reads
// (LevelDB 1.23 allocates a forged block's claimed size, and a size near 2^64
// wraps around its bounds check), while a checkpoint is input that may be
// damaged or hostile. This parser checks every place, length and key against
// the bytes it has and every block's CRC before using it, and bounds what the
// entries take by the table's size (prefix compression could otherwise let a
// small forged table name keys of quadratic total length): a damaged table is
// DataLoss naming the file and the offset, never a crash or a wrong entry.
// Snappy blocks (written by TensorFlow 1.0 and 1.1) are read through libsnappy.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/core/status.hpp"

namespace actorflow {
namespace sstable {

using Entries = std::vector<std::pair<std::string, std::string>>;

constexpr uint64_t kMagic = 0xdb4775248b80fb57ull;
constexpr size_t kFooterSize = 48;
constexpr size_t kBlockTrailerSize = 5;  // type byte, masked CRC32C
/// TensorFlow's table options (tensorflow/core/lib/io/table_options.h).
constexpr size_t kBlockSize = 262144;
constexpr int kRestartInterval = 16;

/// The table holding `entries`, whose keys must be strictly increasing
/// (bytewise): InvalidArgument naming the first key out of order.
Status Build(const Entries& entries, std::string* out);

/// The entries of the table in [data, data + size), in order; `file` names
/// it in errors. `max_entries` bounds how many are kept (DataLoss beyond).
Status Parse(const std::string& file, const char* data, size_t size, Entries* entries,
             size_t max_entries = size_t{1} << 26);

}  // namespace sstable
}  // namespace actorflow
