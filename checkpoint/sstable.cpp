#include "actorflow/checkpoint/sstable.hpp"

#include <leveldb/env.h>
#include <leveldb/options.h>
#include <leveldb/slice.h>
#include <leveldb/status.h>
#include <leveldb/table_builder.h>
#include <snappy.h>

#include <cstring>

#include "actorflow/core/io/crc32c.hpp"
#include "actorflow/core/io/fixed_width.hpp"
#include "actorflow/core/io/varint.hpp"

namespace actorflow {
namespace sstable {
namespace {

// LevelDB writes the table to a WritableFile: here, a string.
class StringFile : public leveldb::WritableFile {
 public:
  explicit StringFile(std::string* out) : out_(out) {}
  leveldb::Status Append(const leveldb::Slice& data) override {
    out_->append(data.data(), data.size());
    return leveldb::Status::OK();
  }
  leveldb::Status Close() override { return leveldb::Status::OK(); }
  leveldb::Status Flush() override { return leveldb::Status::OK(); }
  leveldb::Status Sync() override { return leveldb::Status::OK(); }

 private:
  std::string* out_;
};

struct Handle {
  uint64_t offset = 0;
  uint64_t size = 0;
};

class Parser {
 public:
  Parser(const std::string& file, const char* data, size_t size, size_t max_entries)
      : file_(file), data_(data), size_(size), max_entries_(max_entries),
        budget_(kExpansionFactor * static_cast<uint64_t>(size) + kExpansionSlack) {}

  Status Run(Entries* entries) {
    if (size_ < kFooterSize)
      return Corrupt(0, "it has ", size_, " bytes, fewer than a table's ", kFooterSize, "-byte footer");
    const char* footer = data_ + size_ - kFooterSize;
    const uint64_t magic = fixed::DecodeFixed64(footer + 40);
    if (magic != kMagic) return Corrupt(size_ - 8, "bad magic number (not a table, or truncated)");
    Handle metaindex, index;
    const char* p = footer;
    const char* limit = footer + 40;
    p = DecodeHandle(p, limit, &metaindex);
    if (p != nullptr) p = DecodeHandle(p, limit, &index);
    if (p == nullptr) return Corrupt(size_ - kFooterSize, "the footer's block places do not decode");
    std::string index_block;
    AF_RETURN_IF_ERROR(ReadBlock(index, "the index block", &index_block));
    // The index maps each data block's last key (or a separator) to its place.
    std::string previous_data_key;
    bool first = true;
    return ForEachEntry(index_block, index.offset, "the index block", [&](const std::string&, const std::string& v) {
      Handle h;
      const char* end = DecodeHandle(v.data(), v.data() + v.size(), &h);
      if (end == nullptr || end != v.data() + v.size())
        return Corrupt(index.offset, "an index entry's block place does not decode");
      std::string block;
      AF_RETURN_IF_ERROR(ReadBlock(h, "a data block", &block));
      return ForEachEntry(block, h.offset, "a data block", [&](const std::string& k, const std::string& value) {
        if (!first && !(previous_data_key < k))
          return Corrupt(h.offset, "key '", k, "' is out of order or repeated (after '", previous_data_key, "')");
        if (entries->size() >= max_entries_) return Corrupt(h.offset, "more than ", max_entries_, " entries");
        // Prefix compression lets a small table name long keys (each one
        // byte longer than the last): what the entries take is bounded by
        // the table's size before they are made.
        const uint64_t cost = k.size() + value.size() + kEntryOverhead;
        if (cost > budget_)
          return Corrupt(h.offset, "its entries expand to more than ", kExpansionFactor,
                         " times the table's size (forged prefix compression?)");
        budget_ -= cost;
        first = false;
        previous_data_key = k;
        entries->emplace_back(k, value);
        return Status::OK();
      });
    });
  }

 private:
  template <class... Args>
  Status Corrupt(uint64_t offset, const Args&... args) const {
    return errors::DataLoss("checkpoint index '", file_, "' is corrupt at offset ", offset, ": ", args...);
  }

  static const char* DecodeHandle(const char* p, const char* limit, Handle* h) {
    p = varint::Get64(p, limit, &h->offset);
    return p == nullptr ? nullptr : varint::Get64(p, limit, &h->size);
  }

  // The contents of the block at `h`, its CRC checked, uncompressed.
  Status ReadBlock(const Handle& h, const char* what, std::string* out) const {
    const uint64_t blocks_end = size_ - kFooterSize;
    if (h.offset > blocks_end || h.size > blocks_end - h.offset ||
        kBlockTrailerSize > blocks_end - h.offset - h.size)
      return Corrupt(h.offset, what, " of ", h.size, " bytes runs past the blocks' end at ", blocks_end);
    const char* b = data_ + h.offset;
    const size_t n = static_cast<size_t>(h.size);
    const uint32_t stored = crc32c::Unmask(fixed::DecodeFixed32(b + n + 1));
    const uint32_t actual = crc32c::Value(b, n + 1);  // the block and its type byte
    if (stored != actual) return Corrupt(h.offset, what, ": checksum mismatch");
    switch (b[n]) {
      case 0:
        out->assign(b, n);
        return Status::OK();
      case 1: {
        size_t length = 0;
        if (!snappy::GetUncompressedLength(b, n, &length))
          return Corrupt(h.offset, what, ": its Snappy header does not decode");
        // Snappy expands at most ~32 : 1 in practice; a bound against forged lengths.
        if (length > 64 * n + 1024) return Corrupt(h.offset, what, ": Snappy claims ", length, " bytes");
        out->resize(length);
        if (!snappy::RawUncompress(b, n, out->data())) return Corrupt(h.offset, what, ": Snappy data do not decode");
        return Status::OK();
      }
      default:
        return Corrupt(h.offset, what, ": unknown compression type ", static_cast<int>(b[n]));
    }
  }

  // Calls fn(key, value) for each entry of a block, in order.
  template <class Fn>
  Status ForEachEntry(const std::string& block, uint64_t offset, const char* what, Fn fn) const {
    if (block.size() < 4) return Corrupt(offset, what, " has ", block.size(), " bytes, too few for its restart count");
    const uint32_t num_restarts = fixed::DecodeFixed32(block.data() + block.size() - 4);
    if (num_restarts > (block.size() - 4) / 4)
      return Corrupt(offset, what, ": ", num_restarts, " restart points cannot fit in ", block.size(), " bytes");
    const char* p = block.data();
    const char* limit = block.data() + block.size() - 4 - 4 * size_t{num_restarts};
    std::string key;
    while (p < limit) {
      uint32_t shared = 0, non_shared = 0, value_length = 0;
      p = varint::Get32(p, limit, &shared);
      if (p != nullptr) p = varint::Get32(p, limit, &non_shared);
      if (p != nullptr) p = varint::Get32(p, limit, &value_length);
      if (p == nullptr) return Corrupt(offset, what, ": an entry's lengths do not decode");
      if (shared > key.size() || non_shared > static_cast<size_t>(limit - p) ||
          value_length > static_cast<size_t>(limit - p) - non_shared)
        return Corrupt(offset, what, ": an entry's lengths run past the block");
      key.resize(shared);
      key.append(p, non_shared);
      p += non_shared;
      AF_RETURN_IF_ERROR(fn(key, std::string(p, value_length)));
      p += value_length;
    }
    return Status::OK();
  }

  // Entries may take kExpansionFactor times the table's bytes, plus
  // kExpansionSlack, each charged its key, its value and kEntryOverhead.
  // (TensorFlow's own indexes expand a few times: long names share prefixes.)
  static constexpr uint64_t kExpansionFactor = 32;
  static constexpr uint64_t kExpansionSlack = uint64_t{1} << 20;
  static constexpr uint64_t kEntryOverhead = 64;

  const std::string& file_;
  const char* data_;
  size_t size_;
  size_t max_entries_;
  uint64_t budget_;
};

}  // namespace

Status Build(const Entries& entries, std::string* out) {
  for (size_t i = 1; i < entries.size(); ++i)
    if (!(entries[i - 1].first < entries[i].first))
      return errors::InvalidArgument("table keys must be strictly increasing: '", entries[i].first, "' follows '",
                                     entries[i - 1].first, "'");
  out->clear();
  StringFile file(out);
  leveldb::Options options;
  options.block_size = kBlockSize;
  options.block_restart_interval = kRestartInterval;
  options.compression = leveldb::kNoCompression;
  options.filter_policy = nullptr;
  leveldb::TableBuilder builder(options, &file);
  for (const auto& kv : entries) builder.Add(kv.first, kv.second);
  const leveldb::Status s = builder.Finish();
  if (!s.ok()) return errors::Internal("building a checkpoint index: ", s.ToString());
  return Status::OK();
}

Status Parse(const std::string& file, const char* data, size_t size, Entries* entries, size_t max_entries) {
  entries->clear();
  return Parser(file, data, size, max_entries).Run(entries);
}

}  // namespace sstable
}  // namespace actorflow
