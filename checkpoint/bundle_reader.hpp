// BundleReader: reads tensors from a checkpoint, checking everything it reads:
// TensorFlow's V2 format (P.index + P.data-*, checkpoint/tf_bundle_format.hpp)
// whether TensorFlow or BundleWriter wrote it, or actorflow's older P.afckpt
// (checkpoint/bundle_format.hpp); Open finds which one P has.
//
//   std::unique_ptr<BundleReader> r;
//   AF_RETURN_IF_ERROR(BundleReader::Open("/ckpt/model-100", &r));
//   Tensor kernel;
//   AF_RETURN_IF_ERROR(r->Lookup("dense/kernel", &kernel));
//
// Open reads the header and the index and checks them against the file's size
// and their CRC; Lookup reads one tensor and checks its CRC. Failures are
// Statuses, never crashes or silently wrong values:
//   DataLoss         the file is truncated or corrupt (names file, tensor, offset)
//   NotFound         no such file, or no such tensor in it (names both)
//   InvalidArgument  LookupInto's tensor has another dtype or shape (names both)
// Nothing is allocated from a length before it is checked against the file
// (ResourceExhausted when memory runs out anyway). The index is also bounded
// by Options::max_index_bytes (DataLoss naming the file), as a sparse or
// forged file can be as large as it claims; a string tensor's bytes are
// checked against their CRC, in pieces, before its strings are allocated.
// When reading fails, the destination's contents are unspecified.
//
// Thread-safe: the methods are const and read with pread, so several threads
// may read tensors of one open bundle at once; LookupManyInto spreads one
// call's reading over threads the caller provides.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "actorflow/checkpoint/bundle_format.hpp"
#include "actorflow/core/io/file_io.hpp"
#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {

class Allocator;

class BundleReader {
 public:
  struct Options {
    /// The largest index read (names, dtypes, shapes: about 50 bytes a
    /// tensor); a longer one is DataLoss before it is allocated. > 0.
    uint64_t max_index_bytes = bundle::kDefaultMaxIndexBytes;
  };
  /// Opens checkpoint `prefix`: P.index when it exists, else P.afckpt;
  /// NotFound naming both when neither does.
  static Status Open(const std::string& prefix, std::unique_ptr<BundleReader>* out);
  static Status Open(const std::string& prefix, const Options& options, std::unique_ptr<BundleReader>* out);

  /// The index file (TensorFlow's format) or the one file (actorflow's).
  const std::string& filename() const { return filename_; }
  BundleFormat format() const { return format_; }
  /// Names of the stored tensors, sorted (those Lookup cannot read included).
  std::vector<std::string> TensorNames() const;
  bool Contains(const std::string& name) const { return entries_.count(name) != 0; }

  /// The stored dtype and shape of `name`; NotFound when absent.
  Status LookupDtypeAndShape(const std::string& name, DataType* dtype, TensorShape* shape) const;
  /// Reads `name` into a new tensor (Unimplemented, with the reason, for a
  /// tensor this reader cannot read, such as a partitioned one) from `allocator` (host memory when null).
  Status Lookup(const std::string& name, Tensor* out, Allocator* allocator = nullptr) const;
  /// Reads `name` into `*dst`, which must have the stored dtype and shape.
  Status LookupInto(const std::string& name, Tensor* dst) const;

  /// Runs task(0) ... task(num_tasks - 1), each exactly once, on any threads,
  /// and returns when all have run.
  using Runner = std::function<void(int num_tasks, const std::function<void(int task)>& task)>;
  /// LookupInto for several tensors at once: every name and destination is
  /// checked before anything is read; numeric tensors are read in pieces of a
  /// few MB, each checksummed where it is read, which `run` may spread over
  /// threads (null: this thread). The first error in the order of `names`.
  Status LookupManyInto(const std::vector<std::string>& names, const std::vector<Tensor*>& dsts,
                        const Runner& run = nullptr) const;

 private:
  BundleReader(BundleFormat format, std::string filename) : format_(format), filename_(std::move(filename)) {}
  Status ReadHeaderAndIndex(const Options& options);
  Status ReadTensorFlowIndex(const std::string& prefix, const Options& options);
  // The entry of `name`: NotFound when absent; Unimplemented when it cannot be
  // read, unless `any`.
  Status FindEntry(const std::string& name, const bundle::IndexEntry** e, bool any = false) const;
  Status CheckDestination(const bundle::IndexEntry& e, const Tensor& dst) const;
  // Reads tensor `e` into `dst` (of its dtype and shape) and checks its CRC
  // (a string tensor's first, unless `crc_checked`).
  Status Read(const bundle::IndexEntry& e, Tensor* dst, bool crc_checked = false) const;
  // Reads bytes [begin, end) of numeric tensor `e` to p + begin, extending *crc over them.
  Status ReadRange(const bundle::IndexEntry& e, char* p, uint64_t begin, uint64_t end, uint32_t* crc) const;
  // Checks the CRC of numeric tensor `e`, read to `p`, and its bools.
  Status CheckNumeric(const bundle::IndexEntry& e, uint32_t crc, const char* p) const;
  Status ReadStrings(const bundle::IndexEntry& e, Tensor* dst, bool crc_checked) const;
  // A string tensor's bytes in TensorFlow's format, read whole and checked (tf_bundle::CheckStrings).
  Status ReadTfStrings(const bundle::IndexEntry& e, std::string* blob) const;
  Status ReadBlob(const bundle::IndexEntry& e, std::string* blob) const;
  // Checks tensor `e`'s bytes against its CRC, reading them in pieces.
  Status CheckCrcInPieces(const bundle::IndexEntry& e) const;
  // DataLoss for tensor `e`: "checkpoint 'F' is corrupt: tensor 'x' (offset O, N bytes): ..."
  template <class... Args>
  Status Corrupt(const bundle::IndexEntry& e, const Args&... args) const;

  BundleFormat format_;
  std::string filename_;
  std::vector<file_io::File> files_;  // by shard: TensorFlow's data files, or the one .afckpt
  std::vector<uint64_t> file_sizes_;
  std::unordered_map<std::string, bundle::IndexEntry> entries_;
};

}  // namespace actorflow
