#include "actorflow/checkpoint/bundle_writer.hpp"

#include <algorithm>

#include "actorflow/core/allocator.hpp"
#include "actorflow/core/io/crc32c.hpp"
#include "actorflow/core/io/fixed_width.hpp"
#include "actorflow/core/io/file_io.hpp"
#include "actorflow/checkpoint/sstable.hpp"
#include "actorflow/checkpoint/tf_bundle_format.hpp"

namespace actorflow {
namespace {

// Writes of at least this many bytes skip the buffer.
constexpr size_t kDirectWriteBytes = 256 * 1024;
// The buffer is written out when it holds this much.
constexpr size_t kBufferBytes = 1 << 20;
// A tensor's bytes are checksummed and written this much at a time: small
// enough to stay in cache between the two, big enough that write() calls cost
// nothing next to the copying.
constexpr size_t kCrcPieceBytes = 1 << 20;

}  // namespace

Status BundleWriter::Create(const std::string& prefix, std::unique_ptr<BundleWriter>* out) {
  return Create(prefix, Options(), out);
}

Status BundleWriter::Create(const std::string& prefix, const Options& options, std::unique_ptr<BundleWriter>* out) {
  const bool tf = options.format == BundleFormat::kTensorFlow;
  const std::string path = tf ? tf_bundle::DataFileName(prefix, 0, 1) : bundle::BundleFileName(prefix);
  if (!bundle::HostIsLittleEndian())
    return errors::Unimplemented("checkpoint '", path, "': bundles are written on little-endian hosts only");
  AF_RETURN_IF_ERROR(file_io::CreateDirectories(file_io::Dirname(path))
                         .WithContext("creating the directory of checkpoint '" + path + "'"));
  std::unique_ptr<AtomicFileWriter> file;
  AF_RETURN_IF_ERROR(AtomicFileWriter::Create(path, &file));
  if (options.simulate_crash_after_bytes >= 0) file->SimulateCrashAfterBytesForTesting(options.simulate_crash_after_bytes);
  out->reset(new BundleWriter(options.format, prefix, std::move(file)));
  return Status::OK();
}

BundleWriter::BundleWriter(BundleFormat format, const std::string& prefix, std::unique_ptr<AtomicFileWriter> file)
    : format_(format), index_path_(tf_bundle::IndexFileName(prefix)), file_(std::move(file)) {
  if (format_ == BundleFormat::kActorflow) {
    // The header's place; Finish writes it once the index's place is known.
    buffer_.assign(bundle::kDataStart, '\0');
    end_ = bundle::kDataStart;
  }
}

Status BundleWriter::Add(const std::string& name, const Tensor& tensor) {
  if (!status_.ok()) return status_;
  if (finished_) return errors::FailedPrecondition("checkpoint '", filename(), "' is finished: cannot add '", name, "'");
  // A refused tensor leaves the file as it was: the writer stays usable.
  AF_RETURN_IF_ERROR(Check(name, tensor));
  status_ = Write(name, tensor);
  return status_;
}

Status BundleWriter::Check(const std::string& name, const Tensor& tensor) const {
  if (name.empty() || name.size() > bundle::kMaxNameLength)
    return errors::InvalidArgument("checkpoint '", filename(), "': tensor names must have 1 to ",
                                   bundle::kMaxNameLength, " bytes, got ", name.size());
  if (names_.count(name)) return errors::InvalidArgument("checkpoint '", filename(), "': tensor '", name, "' added twice");
  const DataType dtype = tensor.dtype();
  if (!bundle::DtypeIsStorable(dtype))
    return errors::InvalidArgument("checkpoint '", filename(), "': tensor '", name, "' has dtype ",
                                   DataTypeString(dtype), ", which cannot be saved");
  if (!tensor.IsInitialized())
    return errors::InvalidArgument("checkpoint '", filename(), "': tensor '", name, "' is not initialized");
  if (tensor.buffer() != nullptr && !tensor.buffer()->allocator()->HostAccessible())
    return errors::Unimplemented("checkpoint '", filename(), "': tensor '", name, "' is in device memory");
  if (tensor.dims() > static_cast<int>(bundle::kMaxRank))
    return errors::InvalidArgument("checkpoint '", filename(), "': tensor '", name, "' has rank ", tensor.dims(),
                                   ", more than ", bundle::kMaxRank);
  return Status::OK();
}

Status BundleWriter::Write(const std::string& name, const Tensor& tensor) {
  const DataType dtype = tensor.dtype();
  bundle::IndexEntry e;
  e.name = name;
  e.dtype = dtype;
  e.shape = tensor.shape();
  if (format_ == BundleFormat::kActorflow) {
    // Zero padding up to the next 64-byte boundary.
    const uint64_t padding = (bundle::kDataAlignment - end_ % bundle::kDataAlignment) % bundle::kDataAlignment;
    buffer_.append(padding, '\0');
    end_ += padding;
  }
  e.offset = end_;
  uint32_t crc = 0;
  Status s;
  if (dtype == DT_STRING && format_ == BundleFormat::kTensorFlow) {
    // The lengths and their checksum, then the strings.
    const std::string lengths = tf_bundle::EncodeStringLengths(tensor, &crc);
    s = Append(lengths.data(), lengths.size());
    const std::string* strings = tensor.data<std::string>();
    for (int64_t i = 0; s.ok() && i < tensor.NumElements(); ++i)
      s = AppendWithCrc(strings[i].data(), strings[i].size(), &crc);
  } else if (dtype == DT_STRING) {
    const std::string* strings = tensor.data<std::string>();
    for (int64_t i = 0; s.ok() && i < tensor.NumElements(); ++i) {
      std::string len;
      fixed::Put<uint64_t>(&len, strings[i].size());
      s = AppendWithCrc(len.data(), len.size(), &crc);
      if (s.ok()) s = AppendWithCrc(strings[i].data(), strings[i].size(), &crc);
    }
  } else {
    s = AppendWithCrc(tensor.raw_data(), tensor.TotalBytes(), &crc);
  }
  if (!s.ok()) return s.WithContext("writing tensor '" + name + "' of checkpoint '" + filename() + "'");
  e.length = end_ - e.offset;
  e.masked_crc = crc32c::Mask(crc);
  names_.insert(name);
  entries_.push_back(std::move(e));
  return Status::OK();
}

Status BundleWriter::AppendWithCrc(const void* data, size_t n, uint32_t* crc) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const size_t piece = std::min(n, kCrcPieceBytes);
    *crc = crc32c::Extend(*crc, p, piece);
    AF_RETURN_IF_ERROR(Append(p, piece));
    p += piece;
    n -= piece;
  }
  return Status::OK();
}

Status BundleWriter::Append(const void* data, size_t n) {
  if (n < kDirectWriteBytes) {
    buffer_.append(static_cast<const char*>(data), n);
    end_ += n;
    return buffer_.size() >= kBufferBytes ? Flush() : Status::OK();
  }
  AF_RETURN_IF_ERROR(Flush());
  AF_RETURN_IF_ERROR(file_->Append(data, n));
  end_ += n;
  return Status::OK();
}

Status BundleWriter::Flush() {
  if (buffer_.empty()) return Status::OK();
  AF_RETURN_IF_ERROR(file_->Append(buffer_.data(), buffer_.size()));
  buffer_.clear();
  return Status::OK();
}

Status BundleWriter::Finish() {
  if (!status_.ok()) return status_;
  if (finished_) return errors::FailedPrecondition("checkpoint '", filename(), "' is already finished");
  finished_ = true;
  status_ = FinishImpl();
  return status_;
}

Status BundleWriter::FinishTensorFlow() {
  // The data first, then the index that points into it.
  AF_RETURN_IF_ERROR(Flush());
  AF_RETURN_IF_ERROR(file_->Commit());
  std::sort(entries_.begin(), entries_.end(),
            [](const bundle::IndexEntry& a, const bundle::IndexEntry& b) { return a.name < b.name; });
  sstable::Entries table;
  table.reserve(entries_.size() + 1);
  table.emplace_back("", tf_bundle::EncodeHeader(1));
  for (const auto& e : entries_) table.emplace_back(e.name, tf_bundle::EncodeEntry(e));
  std::string index;
  AF_RETURN_IF_ERROR(sstable::Build(table, &index));
  return WriteFileAtomically(index_path_, index);
}

Status BundleWriter::FinishImpl() {
  if (format_ == BundleFormat::kTensorFlow)
    return FinishTensorFlow().WithContext("finishing checkpoint '" + filename() + "'");
  std::sort(entries_.begin(), entries_.end(),
            [](const bundle::IndexEntry& a, const bundle::IndexEntry& b) { return a.name < b.name; });
  std::string index;
  for (const auto& e : entries_) bundle::AppendIndexEntry(e, &index);
  bundle::Header h;
  h.index_offset = end_;
  h.index_length = index.size();
  h.num_entries = entries_.size();
  std::string header = bundle::EncodeHeaderPrefix(h);
  const uint32_t meta_crc = crc32c::Extend(crc32c::Value(header.data(), header.size()), index.data(), index.size());
  fixed::Put<uint32_t>(&header, crc32c::Mask(meta_crc));
  Status s = Append(index.data(), index.size());
  if (s.ok()) s = Flush();
  // The header goes in last: until then the file cannot pass for a bundle.
  if (s.ok()) s = file_->WriteAt(0, header.data(), header.size());
  if (s.ok()) s = file_->Commit();
  return s.WithContext("finishing checkpoint '" + filename() + "'");
}

}  // namespace actorflow
