#include "actorflow/checkpoint/bundle_reader.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "actorflow/core/allocator.hpp"
#include "actorflow/core/io/crc32c.hpp"
#include "actorflow/core/io/fixed_width.hpp"
#include "actorflow/checkpoint/sstable.hpp"
#include "actorflow/checkpoint/tf_bundle_format.hpp"

namespace actorflow {
namespace {

// A tensor's bytes are read this much at a time and checksummed while the
// piece is still in cache (measured here: the checksum pass costs less than
// half what it costs after reading whole 8 MB tensors; smaller pieces cost
// more in read() calls than they save).
constexpr size_t kReadPieceBytes = 256 * 1024;
// LookupManyInto splits numeric tensors into tasks of this many bytes.
constexpr uint64_t kParallelPieceBytes = 4 << 20;
// The smallest index entry: lengths, a one-byte name, dtype, rank 0, offset,
// length and CRC.
constexpr uint64_t kMinEntryBytes = 4 + 1 + 4 + 4 + 8 + 8 + 4;

uint32_t ByteSwap32(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

/// fn(), with std::bad_alloc turned into ResourceExhausted: lengths are checked
/// against the file's size before anything is allocated, but a file can be
/// larger than memory.
template <class Fn>
Status OutOfMemoryIsStatus(const std::string& what, Fn fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return errors::ResourceExhausted("out of memory ", what);
  }
}

std::string Hex(uint32_t v) {
  char buf[11];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

}  // namespace

template <class... Args>
Status BundleReader::Corrupt(const bundle::IndexEntry& e, const Args&... args) const {
  return errors::DataLoss("checkpoint '", files_[e.shard].path(), "' is corrupt: tensor '", e.name, "' (offset ", e.offset, ", ",
                          e.length, " bytes): ", args...);
}

Status BundleReader::Open(const std::string& prefix, std::unique_ptr<BundleReader>* out) {
  return Open(prefix, Options(), out);
}

Status BundleReader::Open(const std::string& prefix, const Options& options, std::unique_ptr<BundleReader>* out) {
  if (options.max_index_bytes == 0)
    return errors::InvalidArgument("reading checkpoint '", prefix, "': max_index_bytes must be > 0");
  if (!bundle::HostIsLittleEndian())
    return errors::Unimplemented("checkpoint '", prefix, "': bundles are read on little-endian hosts only");
  const std::string index = tf_bundle::IndexFileName(prefix);
  const std::string legacy = bundle::BundleFileName(prefix);
  std::unique_ptr<BundleReader> r;
  if (file_io::FileExists(index)) {
    r.reset(new BundleReader(BundleFormat::kTensorFlow, index));
    AF_RETURN_IF_ERROR(OutOfMemoryIsStatus("reading the index of checkpoint '" + index + "'",
                                           [&] { return r->ReadTensorFlowIndex(prefix, options); }));
  } else if (file_io::FileExists(legacy)) {
    r.reset(new BundleReader(BundleFormat::kActorflow, legacy));
    r->files_.emplace_back();
    AF_RETURN_IF_ERROR(file_io::File::OpenForRead(legacy, &r->files_[0]));
    AF_RETURN_IF_ERROR(OutOfMemoryIsStatus("reading the index of checkpoint '" + legacy + "'",
                                           [&] { return r->ReadHeaderAndIndex(options); }));
  } else {
    return errors::NotFound("no checkpoint '", prefix, "': neither '", index, "' nor '", legacy, "' exists");
  }
  *out = std::move(r);
  return Status::OK();
}

Status BundleReader::ReadTensorFlowIndex(const std::string& prefix, const Options& options) {
  const std::string& path = filename();
  {
    file_io::File index;
    uint64_t size = 0;
    AF_RETURN_IF_ERROR(file_io::File::OpenForRead(path, &index));
    AF_RETURN_IF_ERROR(index.Size(&size));
    if (size > options.max_index_bytes)
      return errors::DataLoss("checkpoint index '", path, "' is corrupt or too large: ", size,
                              " bytes, more than the limit of ", options.max_index_bytes, " bytes (max_index_bytes)");
  }
  std::string bytes;
  AF_RETURN_IF_ERROR(file_io::ReadFileToString(path, static_cast<size_t>(options.max_index_bytes), &bytes));
  sstable::Entries table;
  AF_RETURN_IF_ERROR(sstable::Parse(path, bytes.data(), bytes.size(), &table));
  if (table.empty() || !table[0].first.empty())
    return errors::DataLoss("checkpoint index '", path, "' is corrupt: its first entry is not the header");
  int num_shards = 0;
  AF_RETURN_IF_ERROR(tf_bundle::DecodeHeader(path, table[0].second, &num_shards));
  entries_.reserve(table.size() - 1);
  std::vector<bool> used(static_cast<size_t>(num_shards), false);
  for (size_t i = 1; i < table.size(); ++i) {
    bundle::IndexEntry e;
    AF_RETURN_IF_ERROR(tf_bundle::DecodeEntry(path, table[i].first, table[i].second, num_shards, &e));
    if (e.unreadable.empty()) used[e.shard] = true;
    entries_.emplace(table[i].first, std::move(e));
  }
  // The data files the entries use, each tensor checked against its file's size.
  files_.resize(static_cast<size_t>(num_shards));
  file_sizes_.assign(static_cast<size_t>(num_shards), 0);
  for (int shard = 0; shard < num_shards; ++shard) {
    if (!used[shard]) continue;
    const std::string data = tf_bundle::DataFileName(prefix, shard, num_shards);
    AF_RETURN_IF_ERROR(file_io::File::OpenForRead(data, &files_[shard])
                           .WithContext("opening a data file of checkpoint '" + path + "'"));
    AF_RETURN_IF_ERROR(files_[shard].Size(&file_sizes_[shard]));
  }
  for (const auto& kv : entries_) {
    const bundle::IndexEntry& e = kv.second;
    if (!e.unreadable.empty()) continue;
    const uint64_t size = file_sizes_[e.shard];
    if (e.offset > size || e.length > size - e.offset)
      return Corrupt(e, "the data file has ", size, " bytes (truncated?)");
  }
  return Status::OK();
}

Status BundleReader::ReadHeaderAndIndex(const Options& options) {
  const std::string& path = filename();
  file_io::File& file = files_[0];
  file_sizes_.assign(1, 0);
  uint64_t& file_size = file_sizes_[0];
  AF_RETURN_IF_ERROR(file.Size(&file_size));
  if (file_size < bundle::kHeaderSize)
    return errors::DataLoss("checkpoint '", path, "' is truncated: ", file_size, " bytes, less than its ",
                            bundle::kHeaderSize, "-byte header");
  char header[bundle::kHeaderSize];
  size_t got = 0;
  AF_RETURN_IF_ERROR(file.ReadAt(0, header, sizeof(header), &got));
  if (got != sizeof(header))
    return errors::DataLoss("checkpoint '", path, "' is truncated: its header ends after ", got, " bytes");
  if (std::memcmp(header, bundle::kMagic, sizeof(bundle::kMagic)) != 0)
    return errors::DataLoss("'", path, "' is not a checkpoint bundle, or its header is corrupt: bad magic bytes");
  const uint32_t byte_order = fixed::DecodeFixed32(header + 12);
  if (byte_order == ByteSwap32(bundle::kByteOrderMark))
    return errors::Unimplemented("checkpoint '", path, "' was written big-endian, which this reader does not read");
  if (byte_order != bundle::kByteOrderMark)
    return errors::DataLoss("checkpoint '", path, "' is corrupt: bad byte-order mark ", Hex(byte_order));
  bundle::Header h;
  h.version = fixed::DecodeFixed32(header + 8);
  h.index_offset = fixed::DecodeFixed64(header + 16);
  h.index_length = fixed::DecodeFixed64(header + 24);
  h.num_entries = fixed::DecodeFixed64(header + 32);
  const uint32_t reserved = fixed::DecodeFixed32(header + 40);
  const uint32_t stored_crc = crc32c::Unmask(fixed::DecodeFixed32(header + bundle::kMetaCrcOffset));
  if (h.index_offset < bundle::kDataStart || h.index_offset > file_size ||
      h.index_length != file_size - h.index_offset)
    return errors::DataLoss("checkpoint '", path, "' is truncated or corrupt: its header puts the index at [",
                            h.index_offset, ", +", h.index_length, ") but the file has ", file_size, " bytes");
  if (h.num_entries > h.index_length / kMinEntryBytes)
    return errors::DataLoss("checkpoint '", path, "' is corrupt: ", h.num_entries, " tensors cannot fit in an index of ",
                            h.index_length, " bytes");
  // The file's size bounds the index, but a sparse or forged file can be as
  // large as it claims: a bound too, before the index is allocated.
  if (h.index_length > options.max_index_bytes)
    return errors::DataLoss("checkpoint '", path, "' is corrupt or too large: its header gives an index of ",
                            h.index_length, " bytes at offset ", h.index_offset, ", more than the limit of ",
                            options.max_index_bytes, " bytes (max_index_bytes)");
  std::string index(static_cast<size_t>(h.index_length), '\0');
  AF_RETURN_IF_ERROR(file.ReadAt(h.index_offset, index.data(), index.size(), &got));
  if (got != index.size())
    return errors::DataLoss("checkpoint '", path, "' is truncated: its index ends after ", got, " of ", index.size(),
                            " bytes");
  const uint32_t crc = crc32c::Extend(crc32c::Value(header, bundle::kMetaCrcOffset), index.data(), index.size());
  if (crc != stored_crc)
    return errors::DataLoss("checkpoint '", path, "' is corrupt: the checksum of its header and index is ", Hex(crc),
                            ", the file says ", Hex(stored_crc));
  // The bytes are as written: what follows is a writer's disagreement, not damage.
  if (h.version != bundle::kVersion || reserved != 0)
    return errors::Unimplemented("checkpoint '", path, "' has format version ", h.version, " (reserved field ",
                                 reserved, "); this reader reads version ", bundle::kVersion);
  bundle::Decoder d(index.data(), index.size(), h.index_offset, path, "its index");
  entries_.reserve(static_cast<size_t>(h.num_entries));
  std::string previous;
  for (uint64_t i = 0; i < h.num_entries; ++i) {
    bundle::IndexEntry e;
    AF_RETURN_IF_ERROR(bundle::ReadIndexEntry(&d, h.index_offset, &e));
    if (i > 0 && !(previous < e.name))
      return errors::DataLoss("checkpoint '", path, "' is corrupt: index entry '", e.name,
                              "' is out of order or repeated (after '", previous, "')");
    previous = e.name;
    std::string name = e.name;
    entries_.emplace(std::move(name), std::move(e));
  }
  if (d.remaining() != 0)
    return errors::DataLoss("checkpoint '", path, "' is corrupt: ", d.remaining(), " bytes follow the ",
                            h.num_entries, " entries of its index");
  return Status::OK();
}

std::vector<std::string> BundleReader::TensorNames() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& kv : entries_) names.push_back(kv.first);
  std::sort(names.begin(), names.end());
  return names;
}

Status BundleReader::FindEntry(const std::string& name, const bundle::IndexEntry** e, bool any) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return errors::NotFound("tensor '", name, "' not found in checkpoint '", filename(), "'");
  if (!any && !it->second.unreadable.empty())
    return errors::Unimplemented("tensor '", name, "' of checkpoint '", filename(), "' cannot be read: ",
                                 it->second.unreadable);
  *e = &it->second;
  return Status::OK();
}

Status BundleReader::LookupDtypeAndShape(const std::string& name, DataType* dtype, TensorShape* shape) const {
  const bundle::IndexEntry* e;
  AF_RETURN_IF_ERROR(FindEntry(name, &e, /*any=*/true));
  *dtype = e->dtype;
  *shape = e->shape;
  return Status::OK();
}

Status BundleReader::Lookup(const std::string& name, Tensor* out, Allocator* allocator) const {
  const bundle::IndexEntry* e;
  AF_RETURN_IF_ERROR(FindEntry(name, &e));
  // A string tensor's elements (32 bytes each, up to one per 8 bytes of the
  // file) are made only once its bytes match their CRC.
  const bool strings = e->dtype == DT_STRING;
  std::string blob;  // TensorFlow's format: a string tensor's bytes, read and checked once
  if (strings && format_ == BundleFormat::kTensorFlow) AF_RETURN_IF_ERROR(ReadTfStrings(*e, &blob));
  if (strings && format_ == BundleFormat::kActorflow) AF_RETURN_IF_ERROR(CheckCrcInPieces(*e));
  Tensor t;
  AF_RETURN_IF_ERROR(Tensor::Create(allocator, e->dtype, e->shape, &t)
                         .WithContext("reading tensor '" + name + "' of checkpoint '" + filename() + "'"));
  if (strings && format_ == BundleFormat::kTensorFlow)
    tf_bundle::FillStrings(blob.data(), blob.size(), t.NumElements(), t.data<std::string>());
  else
    AF_RETURN_IF_ERROR(Read(*e, &t, strings));
  *out = std::move(t);
  return Status::OK();
}

Status BundleReader::CheckDestination(const bundle::IndexEntry& e, const Tensor& dst) const {
  if (dst.dtype() != e.dtype || dst.shape() != e.shape)
    return errors::InvalidArgument("tensor '", e.name, "' in checkpoint '", filename(), "' has dtype ",
                                   DataTypeString(e.dtype), " and shape ", e.shape.DebugString(), ", but dtype ",
                                   DataTypeString(dst.dtype()), " and shape ", dst.shape().DebugString(),
                                   " were requested");
  if (!dst.IsInitialized())
    return errors::InvalidArgument("reading tensor '", e.name, "' of checkpoint '", filename(),
                                   "' into an uninitialized tensor");
  if (dst.buffer() != nullptr && !dst.buffer()->allocator()->HostAccessible())
    return errors::Unimplemented("reading tensor '", e.name, "' of checkpoint '", filename(), "' into device memory");
  return Status::OK();
}

Status BundleReader::LookupInto(const std::string& name, Tensor* dst) const {
  const bundle::IndexEntry* e;
  AF_RETURN_IF_ERROR(FindEntry(name, &e));
  AF_RETURN_IF_ERROR(CheckDestination(*e, *dst));
  return Read(*e, dst);
}

Status BundleReader::LookupManyInto(const std::vector<std::string>& names, const std::vector<Tensor*>& dsts,
                                    const Runner& run) const {
  if (names.size() != dsts.size())
    return errors::InvalidArgument("reading ", names.size(), " tensors of checkpoint '", filename(), "' into ",
                                   dsts.size(), " destinations");
  const int n = static_cast<int>(names.size());
  std::vector<const bundle::IndexEntry*> entries(n);
  for (int i = 0; i < n; ++i) {
    AF_RETURN_IF_ERROR(FindEntry(names[i], &entries[i]));
    AF_RETURN_IF_ERROR(CheckDestination(*entries[i], *dsts[i]));
  }
  // Numeric tensors in pieces, each with its own CRC; string tensors whole.
  struct Task {
    int tensor;
    uint64_t begin, end;
  };
  std::vector<Task> tasks;
  for (int i = 0; i < n; ++i) {
    const bundle::IndexEntry& e = *entries[i];
    if (e.dtype == DT_STRING || e.length <= kParallelPieceBytes) {
      tasks.push_back({i, 0, e.length});
      continue;
    }
    for (uint64_t b = 0; b < e.length; b += kParallelPieceBytes)
      tasks.push_back({i, b, std::min<uint64_t>(e.length, b + kParallelPieceBytes)});
  }
  std::vector<uint32_t> crcs(tasks.size(), 0);
  std::vector<Status> statuses(tasks.size());
  auto task = [&](int t) {
    const Task& k = tasks[t];
    const bundle::IndexEntry& e = *entries[k.tensor];
    if (e.dtype == DT_STRING) {
      statuses[t] = Read(e, dsts[k.tensor]);
      return;
    }
    statuses[t] = ReadRange(e, static_cast<char*>(dsts[k.tensor]->raw_data()), k.begin, k.end, &crcs[t]);
  };
  if (run) {
    run(static_cast<int>(tasks.size()), task);
  } else {
    for (int t = 0; t < static_cast<int>(tasks.size()); ++t) task(t);
  }
  // The pieces' CRCs join into each tensor's, in order.
  Status result;
  size_t t = 0;
  for (int i = 0; i < n; ++i) {
    const bundle::IndexEntry& e = *entries[i];
    Status s;
    uint32_t crc = 0;
    for (; t < tasks.size() && tasks[t].tensor == i; ++t) {
      s.Update(statuses[t]);
      crc = crc32c::Combine(crc, crcs[t], tasks[t].end - tasks[t].begin);
    }
    if (s.ok() && e.dtype != DT_STRING) s = CheckNumeric(e, crc, static_cast<const char*>(dsts[i]->raw_data()));
    result.Update(s);
  }
  return result;
}

Status BundleReader::Read(const bundle::IndexEntry& e, Tensor* dst, bool crc_checked) const {
  if (e.dtype != DT_STRING) {
    char* p = static_cast<char*>(dst->raw_data());
    uint32_t crc = 0;
    AF_RETURN_IF_ERROR(ReadRange(e, p, 0, e.length, &crc));
    return CheckNumeric(e, crc, p);
  }
  return OutOfMemoryIsStatus("reading tensor '" + e.name + "' of checkpoint '" + filename() + "'",
                             [&] { return ReadStrings(e, dst, crc_checked); });
}

Status BundleReader::ReadRange(const bundle::IndexEntry& e, char* p, uint64_t begin, uint64_t end,
                               uint32_t* crc) const {
  for (uint64_t done = begin; done < end;) {
    const size_t piece = static_cast<size_t>(std::min<uint64_t>(end - done, kReadPieceBytes));
    size_t got = 0;
    AF_RETURN_IF_ERROR(files_[e.shard].ReadAt(e.offset + done, p + done, piece, &got));
    if (got != piece) return Corrupt(e, "the file ends at offset ", e.offset + done + got);
    *crc = crc32c::Extend(*crc, p + done, piece);
    done += piece;
  }
  return Status::OK();
}

Status BundleReader::CheckNumeric(const bundle::IndexEntry& e, uint32_t crc, const char* p) const {
  if (crc != crc32c::Unmask(e.masked_crc))
    return Corrupt(e, "checksum mismatch: the bytes give ", Hex(crc), ", the index says ",
                   Hex(crc32c::Unmask(e.masked_crc)));
  if (e.dtype == DT_BOOL) {
    const auto* b = reinterpret_cast<const unsigned char*>(p);
    for (uint64_t i = 0; i < e.length; ++i)
      if (b[i] > 1) return Corrupt(e, "bool element ", i, " is ", static_cast<int>(b[i]), ", not 0 or 1");
  }
  return Status::OK();
}

Status BundleReader::CheckCrcInPieces(const bundle::IndexEntry& e) const {
  std::vector<char> piece(static_cast<size_t>(std::min<uint64_t>(e.length, kReadPieceBytes)));
  uint32_t crc = 0;
  for (uint64_t done = 0; done < e.length;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(e.length - done, piece.size()));
    size_t got = 0;
    AF_RETURN_IF_ERROR(files_[e.shard].ReadAt(e.offset + done, piece.data(), n, &got));
    if (got != n) return Corrupt(e, "the file ends at offset ", e.offset + done + got);
    crc = crc32c::Extend(crc, piece.data(), n);
    done += n;
  }
  if (crc != crc32c::Unmask(e.masked_crc))
    return Corrupt(e, "checksum mismatch: the bytes give ", Hex(crc), ", the index says ", Hex(crc32c::Unmask(e.masked_crc)));
  return Status::OK();
}

Status BundleReader::ReadStrings(const bundle::IndexEntry& e, Tensor* dst, bool crc_checked) const {
  // Bounded by the file's size, which Open checked the entry against; and
  // the bytes are checked first, in pieces, so that a forged or sparse file
  // makes nothing of its length allocated.
  if (format_ == BundleFormat::kTensorFlow) {
    std::string blob;
    AF_RETURN_IF_ERROR(ReadTfStrings(e, &blob));
    tf_bundle::FillStrings(blob.data(), blob.size(), dst->NumElements(), dst->data<std::string>());
    return Status::OK();
  }
  if (!crc_checked) AF_RETURN_IF_ERROR(CheckCrcInPieces(e));
  std::string blob;
  AF_RETURN_IF_ERROR(ReadBlob(e, &blob));
  const uint32_t crc = crc32c::Value(blob.data(), blob.size());
  if (crc != crc32c::Unmask(e.masked_crc))  // the file changed since it was checked
    return Corrupt(e, "checksum mismatch: the bytes give ", Hex(crc), ", the index says ", Hex(crc32c::Unmask(e.masked_crc)));
  bundle::Decoder d(blob.data(), blob.size(), e.offset, files_[e.shard].path(), "tensor '" + e.name + "'");
  std::string* out = dst->data<std::string>();
  for (int64_t i = 0; i < dst->NumElements(); ++i) {
    uint64_t len = 0;
    AF_RETURN_IF_ERROR(d.ReadU64("a string length", &len));
    if (len > d.remaining()) return Corrupt(e, "string ", i, " of ", len, " bytes runs past the tensor's end");
    AF_RETURN_IF_ERROR(d.ReadBytes("a string", static_cast<size_t>(len), &out[i]));
  }
  if (d.remaining() != 0) return Corrupt(e, d.remaining(), " bytes follow the last string");
  return Status::OK();
}

Status BundleReader::ReadBlob(const bundle::IndexEntry& e, std::string* blob) const {
  // Bounded by the data file's size, which Open checked the entry against.
  blob->assign(static_cast<size_t>(e.length), '\0');
  size_t got = 0;
  AF_RETURN_IF_ERROR(files_[e.shard].ReadAt(e.offset, blob->data(), blob->size(), &got));
  if (got != blob->size()) return Corrupt(e, "the file ends at offset ", e.offset + got);
  return Status::OK();
}

Status BundleReader::ReadTfStrings(const bundle::IndexEntry& e, std::string* blob) const {
  // The bytes are checked whole before any string is made.
  AF_RETURN_IF_ERROR(ReadBlob(e, blob));
  std::string why;
  if (!tf_bundle::CheckStrings(blob->data(), blob->size(), e.shape.num_elements(), e.masked_crc, &why))
    return Corrupt(e, why);
  return Status::OK();
}

}  // namespace actorflow
