// Bounds on what a file can make a reader allocate. A length read from a file
// (a TFRecord's length field, a checkpoint's index length) and the length of
// a text line are untrusted: a 5 MB gzip file can inflate to terabytes, and a
// sparse file can be as large as it claims. Every reader refuses a record
// longer than its `max_record_bytes` before allocating for it, with DataLoss
// naming the file and the record's offset:
//
//   RecordReaderOptions o;                 // record_reader.hpp
//   o.max_record_bytes = 1 << 20;          // TFRecords of at most 1 MiB of data
//
// The default, kDefaultMaxRecordBytes (256 MiB), is far above what a record
// of an input pipeline holds (TensorFlow's own readers have no bound and die
// with the process instead). The reader ops take it as their
// `max_record_bytes` attr (ops/io/reader_ops.cpp). Sizes given by a caller
// (buffer sizes, a fixed-length reader's record_bytes) are checked too:
// InvalidArgument naming the option when negative, zero where that makes no
// sense, or beyond these bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "actorflow/core/status.hpp"

namespace actorflow {
namespace io {

/// The default bound on one record's (or one line's) bytes: 256 MiB.
constexpr uint64_t kDefaultMaxRecordBytes = uint64_t{256} << 20;
/// The largest buffer a stream takes (its buffer_bytes): 64 MiB.
constexpr uint64_t kMaxBufferBytes = uint64_t{64} << 20;

/// OK when `value` (of option or attr `name`) is a usable record bound: > 0.
inline Status CheckMaxRecordBytes(const std::string& name, int64_t value) {
  if (value <= 0) return errors::InvalidArgument(name, " must be > 0, got ", value);
  return Status::OK();
}

/// OK when `value` (of option `name`) is a usable buffer size: in [1, kMaxBufferBytes].
inline Status CheckBufferBytes(const std::string& name, uint64_t value) {
  if (value == 0 || value > kMaxBufferBytes)
    return errors::InvalidArgument(name, " must be in [1, ", kMaxBufferBytes, "], got ", value);
  return Status::OK();
}

/// DataLoss for a record of `length` bytes over `limit`: names the file, the
/// offset and the option that sets the bound.
inline Status RecordTooLong(const std::string& what, uint64_t length, uint64_t limit, uint64_t offset,
                            const std::string& filename) {
  return errors::DataLoss(what, " of ", length, " bytes at offset ", offset, " of '", filename,
                          "' exceeds the limit of ", limit, " bytes (max_record_bytes): the file is corrupt, or raise "
                          "the limit");
}

}  // namespace io
}  // namespace actorflow
