// InputStream: bytes read front to back from a file, possibly through a
// decompressor. The record readers (record_reader.hpp, text_line_reader.hpp,
// fixed_length_record_reader.hpp) read a BufferedInputStream over one of:
//
//   FileInputStream   the bytes of a file (file_input_stream.hpp)
//   ZlibInputStream   the inflated bytes of a gzip or zlib stream (zlib_input_stream.hpp)
//
// Not thread-safe: one reader owns a stream. Errors name the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "actorflow/core/status.hpp"

namespace actorflow {
namespace io {

class InputStream {
 public:
  virtual ~InputStream() = default;
  /// Reads up to `n` bytes into `dst`. *got may be less than n; it is 0 (with
  /// OK) only at the end of the stream.
  virtual Status Read(void* dst, size_t n, size_t* got) = 0;
  /// Bytes returned by Read so far: the position in the (decompressed) stream.
  virtual uint64_t Tell() const = 0;
  /// The file the bytes come from, for messages.
  virtual const std::string& filename() const = 0;
};

}  // namespace io
}  // namespace actorflow
