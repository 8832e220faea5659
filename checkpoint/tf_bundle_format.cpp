#include "actorflow/checkpoint/tf_bundle_format.hpp"

#include <cstdio>
#include <limits>

#include "actorflow/core/io/crc32c.hpp"
#include "actorflow/core/io/fixed_width.hpp"
#include "actorflow/core/io/varint.hpp"
#include "actorflow/core/proto/tensor_bundle.pb.h"

namespace actorflow {
namespace tf_bundle {
namespace {

// CRC32C of a string length, as TensorFlow's writer hashes it: 4 bytes
// little-endian when it fits in 32 bits, else 8.
uint32_t ExtendLength(uint32_t crc, uint64_t len) {
  char b[8];
  fixed::EncodeFixed64(b, len);
  return crc32c::Extend(crc, b, len <= UINT32_MAX ? 4 : 8);
}

}  // namespace

std::string DataFileName(const std::string& prefix, int shard, int num_shards) {
  char suffix[64];
  std::snprintf(suffix, sizeof(suffix), ".data-%05d-of-%05d", shard, num_shards);
  return prefix + suffix;
}

std::string EncodeHeader(int num_shards) {
  proto::BundleHeaderProto h;
  h.set_num_shards(num_shards);
  h.set_endianness(proto::BundleHeaderProto::LITTLE);
  h.mutable_version()->set_producer(kVersion);
  h.mutable_version()->set_min_consumer(kMinConsumer);
  return h.SerializeAsString();
}

Status DecodeHeader(const std::string& file, const std::string& value, int* num_shards) {
  proto::BundleHeaderProto h;
  if (!h.ParseFromString(value))
    return errors::DataLoss("checkpoint index '", file, "' is corrupt: its header does not parse");
  if (h.num_shards() < 1 || h.num_shards() > kMaxShards)
    return errors::DataLoss("checkpoint index '", file, "' is corrupt: its header gives ", h.num_shards(),
                            " data files (1 to ", kMaxShards, " expected)");
  if (h.endianness() != proto::BundleHeaderProto::LITTLE)
    return errors::Unimplemented("checkpoint '", file, "' was written on a big-endian host, which this reader does not read");
  const auto& v = h.version();
  if (v.producer() < 0)
    return errors::DataLoss("checkpoint index '", file, "' is corrupt: producer version ", v.producer());
  if (v.min_consumer() > kVersion)
    return errors::Unimplemented("checkpoint '", file, "' needs a reader of bundle version ", v.min_consumer(),
                                 " or newer; this one reads version ", kVersion);
  for (int bad : v.bad_consumers())
    if (bad == kVersion)
      return errors::Unimplemented("checkpoint '", file, "' disallows readers of bundle version ", kVersion);
  *num_shards = h.num_shards();
  return Status::OK();
}

std::string EncodeEntry(const bundle::IndexEntry& e) {
  proto::BundleEntryProto p;
  p.set_dtype(static_cast<proto::DataType>(e.dtype));
  auto* shape = p.mutable_shape();  // always present, even for a scalar
  for (int i = 0; i < e.shape.dims(); ++i) shape->add_dim()->set_size(e.shape.dim_size(i));
  p.set_shard_id(e.shard);
  p.set_offset(static_cast<int64_t>(e.offset));
  p.set_size(static_cast<int64_t>(e.length));
  p.set_crc32c(e.masked_crc);
  return p.SerializeAsString();
}

Status DecodeEntry(const std::string& file, const std::string& name, const std::string& value, int num_shards,
                   bundle::IndexEntry* e) {
  auto corrupt = [&](const auto&... what) {
    return errors::DataLoss("checkpoint index '", file, "' is corrupt: the entry of tensor '", name, "' ", what...);
  };
  proto::BundleEntryProto p;
  if (!p.ParseFromString(value)) return corrupt("does not parse");
  e->name = name;
  e->dtype = static_cast<DataType>(p.dtype());
  e->unreadable.clear();
  if (p.shape().unknown_rank()) return corrupt("has a shape of unknown rank");
  if (p.shape().dim_size() > static_cast<int>(bundle::kMaxRank))
    return corrupt("has rank ", p.shape().dim_size(), ", more than ", bundle::kMaxRank);
  std::vector<int64_t> dims;
  for (const auto& d : p.shape().dim()) {
    if (d.size() < 0) return corrupt("has dimension ", d.size());
    dims.push_back(d.size());
  }
  Status s = TensorShape::FromDims(dims, &e->shape);
  if (!s.ok()) return corrupt("has a bad shape: ", s.message());
  if (p.slices_size() > 0) {
    e->unreadable = "it is partitioned into " + std::to_string(p.slices_size()) +
                    " slices, which this reader does not read";
    return Status::OK();
  }
  if (!bundle::DtypeIsStorable(e->dtype)) {
    e->unreadable = "its dtype " + DataTypeString(e->dtype) + " (" + std::to_string(p.dtype()) +
                    ") is not one this reader reads";
    return Status::OK();
  }
  if (p.shard_id() < 0 || p.shard_id() >= num_shards)
    return corrupt("names data file ", p.shard_id(), " of ", num_shards);
  if (p.offset() < 0 || p.size() < 0) return corrupt("has offset ", p.offset(), " and size ", p.size());
  e->shard = p.shard_id();
  e->offset = static_cast<uint64_t>(p.offset());
  e->length = static_cast<uint64_t>(p.size());
  e->masked_crc = p.crc32c();
  const uint64_t n = static_cast<uint64_t>(e->shape.num_elements());
  if (e->dtype == DT_STRING) {
    // Each string takes at least a one-byte length, and the lengths a 4-byte CRC.
    if (e->length < 4 || n > e->length - 4) return corrupt("puts ", n, " strings in ", e->length, " bytes");
  } else {
    const uint64_t size = DataTypeSize(e->dtype);
    if (n > e->length / size || n * size != e->length)
      return corrupt("gives ", e->length, " bytes for ", n, " elements of ", DataTypeString(e->dtype), " (shape ",
                     e->shape.DebugString(), ")");
  }
  return Status::OK();
}

std::string EncodeStringLengths(const Tensor& strings, uint32_t* crc) {
  std::string out;
  uint32_t c = 0;
  const std::string* s = strings.data<std::string>();
  for (int64_t i = 0; i < strings.NumElements(); ++i) {
    varint::Put64(&out, s[i].size());
    c = ExtendLength(c, s[i].size());
  }
  fixed::Put<uint32_t>(&out, crc32c::Mask(c));
  *crc = crc32c::Extend(c, out.data() + out.size() - 4, 4);
  return out;
}

bool CheckStrings(const char* p, size_t size, int64_t n, uint32_t masked_crc, std::string* why) {
  const char* limit = p + size;
  const char* q = p;
  uint32_t crc = 0;
  uint64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t len = 0;
    q = varint::Get64(q, limit, &len);
    if (q == nullptr) {
      *why = "the length of string " + std::to_string(i) + " does not decode";
      return false;
    }
    if (len > size) {
      *why = "string " + std::to_string(i) + " claims " + std::to_string(len) + " bytes";
      return false;
    }
    total += len;
    crc = ExtendLength(crc, len);
  }
  if (static_cast<size_t>(limit - q) < 4) {
    *why = "the checksum of the lengths is missing";
    return false;
  }
  if (crc32c::Unmask(fixed::DecodeFixed32(q)) != crc) {
    *why = "the checksum of the string lengths does not match";
    return false;
  }
  crc = crc32c::Extend(crc, q, 4);
  q += 4;
  if (total != static_cast<uint64_t>(limit - q)) {
    *why = "the strings take " + std::to_string(limit - q) + " bytes, their lengths say " + std::to_string(total);
    return false;
  }
  crc = crc32c::Extend(crc, q, static_cast<size_t>(limit - q));
  if (crc != crc32c::Unmask(masked_crc)) {
    *why = "checksum mismatch";
    return false;
  }
  return true;
}

void FillStrings(const char* p, size_t size, int64_t n, std::string* out) {
  const char* limit = p + size;
  const char* lens = p;
  // The strings start after the n lengths and their 4-byte checksum.
  const char* q = p;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t len = 0;
    q = varint::Get64(q, limit, &len);
  }
  q += 4;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t len = 0;
    lens = varint::Get64(lens, limit, &len);
    out[i].assign(q, static_cast<size_t>(len));
    q += len;
  }
}

}  // namespace tf_bundle
}  // namespace actorflow
