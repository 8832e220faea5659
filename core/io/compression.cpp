#include "actorflow/core/io/compression.hpp"

namespace actorflow {
namespace io {

Status ParseCompression(const std::string& name, Compression* out) {
  if (name.empty()) {
    *out = Compression::kNone;
  } else if (name == "GZIP") {
    *out = Compression::kGzip;
  } else if (name == "ZLIB") {
    *out = Compression::kZlib;
  } else {
    return errors::InvalidArgument("unknown compression type '", name, "' (expected \"\", \"GZIP\" or \"ZLIB\")");
  }
  return Status::OK();
}

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "";
    case Compression::kGzip: return "GZIP";
    case Compression::kZlib: return "ZLIB";
  }
  return "";
}

}  // namespace io
}  // namespace actorflow
