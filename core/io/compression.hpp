// How a record file's bytes are compressed, named as TensorFlow names it:
// TFRecordReader's and TFRecordOptions' `compression_type` and
// FixedLengthRecordReader's `encoding` take "" (none), "GZIP" or "ZLIB".
//
//   Compression c;
//   AF_RETURN_IF_ERROR(ParseCompression(attr_value, &c));   // "GZIP" -> kGzip
//
// GZIP is a gzip stream (RFC 1952: header, deflate data, CRC-32 and length),
// ZLIB a zlib stream (RFC 1950: two-byte header, deflate data, Adler-32); both
// are read and written through zlib (zlib_input_stream.hpp,
// zlib_output_stream.hpp).
#pragma once

#include <string>

#include "actorflow/core/status.hpp"

namespace actorflow {
namespace io {

enum class Compression {
  kNone,  ///< the bytes as they are
  kGzip,  ///< a gzip stream
  kZlib,  ///< a zlib stream
};

/// "" -> kNone, "GZIP" -> kGzip, "ZLIB" -> kZlib (exact case, as TensorFlow);
/// InvalidArgument naming the value for anything else.
Status ParseCompression(const std::string& name, Compression* out);
/// The inverse of ParseCompression: "", "GZIP" or "ZLIB".
const char* CompressionName(Compression c);

}  // namespace io
}  // namespace actorflow
