// OutputStream: bytes appended to a file, possibly through a compressor. The
// record writer (record_writer.hpp) appends to one of:
//
//   FileOutputStream   a buffered file (file_output_stream.hpp)
//   ZlibOutputStream   a gzip or zlib stream deflated into another OutputStream (zlib_output_stream.hpp)
//
// Not thread-safe: one writer owns a stream. Errors name the file. After an
// error every call returns that first error; after Close, Append and Flush are
// FailedPrecondition and Close returns what the first Close returned.
#pragma once

#include <cstddef>
#include <string>

#include "actorflow/core/status.hpp"

namespace actorflow {
namespace io {

class OutputStream {
 public:
  virtual ~OutputStream() = default;
  /// Appends n bytes (possibly only to a buffer).
  virtual Status Append(const void* data, size_t n) = 0;
  /// Hands everything appended so far to the operating system; a compressed
  /// stream is flushed so that what was written so far can be inflated.
  virtual Status Flush() = 0;
  /// Writes what is left (a compressed stream's trailer), closes the file.
  virtual Status Close() = 0;
  virtual const std::string& filename() const = 0;
};

}  // namespace io
}  // namespace actorflow
