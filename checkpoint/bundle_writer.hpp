// BundleWriter: writes the named tensors of one checkpoint, by default in
// TensorFlow's V2 format (checkpoint/tf_bundle_format.hpp), which TensorFlow
// reads; or in actorflow's older single-file format (bundle_format.hpp).
//
//   std::unique_ptr<BundleWriter> w;
//   AF_RETURN_IF_ERROR(BundleWriter::Create("/ckpt/model-100", &w));
//   AF_RETURN_IF_ERROR(w->Add("dense/kernel", kernel));
//   AF_RETURN_IF_ERROR(w->Add("global_step", step));
//   AF_RETURN_IF_ERROR(w->Finish());
//   // /ckpt/model-100.index and /ckpt/model-100.data-00000-of-00001 now exist, complete
//
// Tensors are written as they are added, through an AtomicFileWriter: until
// Finish renames the new file into place the previous file of that prefix, if
// any, stays as it was, and a crash leaves only a temporary file beside it.
// In TensorFlow's format Finish puts the data file in place first, then the
// index: a crash between the two leaves no index for a new prefix, and for a
// prefix written before, an index whose tensors fail their checksums against
// the new data (DataLoss), never wrong values. Savers write a new prefix each time.
// Large tensors go to the file straight from their buffers, 1 MB per write()
// with the CRC of each piece computed just before it is written (while it is
// in cache); small tensors and short strings are gathered into 1 MB writes. The writer keeps no
// reference to the tensors once Add returns.
//
// A tensor Add refuses (a bad name or dtype) leaves the writer usable; after
// any other error every later call returns that error. Destroying an
// unfinished writer removes its temporary file. Missing parent directories of
// the prefix are created, as TensorFlow's writer does. Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "actorflow/checkpoint/atomic_file.hpp"
#include "actorflow/checkpoint/bundle_format.hpp"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {

class BundleWriter {
 public:
  struct Options {
    BundleFormat format = BundleFormat::kTensorFlow;
    /// Test hook (AtomicFileWriter::SimulateCrashAfterBytesForTesting): >= 0
    /// stops the writer as a crash would once that many bytes are written.
    int64_t simulate_crash_after_bytes = -1;
  };

  /// Starts the bundle of checkpoint `prefix`.
  static Status Create(const std::string& prefix, std::unique_ptr<BundleWriter>* out);
  static Status Create(const std::string& prefix, const Options& options, std::unique_ptr<BundleWriter>* out);

  /// Writes `tensor` under `name`: InvalidArgument for an empty, overlong or
  /// repeated name, a dtype that cannot be stored or an uninitialized tensor,
  /// Unimplemented for a tensor in device memory.
  Status Add(const std::string& name, const Tensor& tensor);
  /// Writes the index and header and puts the file in place, durably.
  Status Finish();

  /// The checkpoint's index file (TensorFlow's format) or its one file (actorflow's).
  const std::string& filename() const { return format_ == BundleFormat::kTensorFlow ? index_path_ : file_->path(); }

 private:
  BundleWriter(BundleFormat format, const std::string& prefix, std::unique_ptr<AtomicFileWriter> file);
  // InvalidArgument (or Unimplemented) for a tensor that cannot be added.
  Status Check(const std::string& name, const Tensor& tensor) const;
  // Appends a checked tensor's bytes and its index entry.
  Status Write(const std::string& name, const Tensor& tensor);
  Status FinishImpl();
  Status FinishTensorFlow();
  // Appends bytes: copied into buffer_ when small, else written from `data` directly.
  Status Append(const void* data, size_t n);
  Status Flush();
  // Writes [data, data + n), extending *crc over it piece by piece.
  Status AppendWithCrc(const void* data, size_t n, uint32_t* crc);

  BundleFormat format_;
  std::string index_path_;  // TensorFlow's format
  std::unique_ptr<AtomicFileWriter> file_;  // the data file (TensorFlow's format) or the bundle
  std::string buffer_;       // bytes appended but not yet written
  uint64_t end_ = 0;         // file size once buffer_ is written
  std::vector<bundle::IndexEntry> entries_;
  std::unordered_set<std::string> names_;
  Status status_;            // the first error; sticky
  bool finished_ = false;
};

}  // namespace actorflow
