#include "actorflow/checkpoint/bundle_format.hpp"

#include <cstring>
#include <limits>

namespace actorflow {
namespace bundle {

bool DtypeIsStorable(DataType dtype) {
  return DataTypeIsSupported(dtype) && !IsRefType(dtype) && (dtype == DT_STRING || DataTypeIsPod(dtype));
}

bool HostIsLittleEndian() {
  const uint32_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

void PutU32(std::string* out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out->append(b, 4);
}

void PutU64(std::string* out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out->append(b, 8);
}

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::string EncodeHeaderPrefix(const Header& h) {
  std::string out(kMagic, sizeof(kMagic));
  PutU32(&out, h.version);
  PutU32(&out, kByteOrderMark);
  PutU64(&out, h.index_offset);
  PutU64(&out, h.index_length);
  PutU64(&out, h.num_entries);
  PutU32(&out, 0);  // reserved
  return out;
}

void AppendIndexEntry(const IndexEntry& e, std::string* out) {
  PutU32(out, static_cast<uint32_t>(e.name.size()));
  out->append(e.name);
  PutU32(out, static_cast<uint32_t>(e.dtype));
  PutU32(out, static_cast<uint32_t>(e.shape.dims()));
  for (int i = 0; i < e.shape.dims(); ++i) PutU64(out, static_cast<uint64_t>(e.shape.dim_size(i)));
  PutU64(out, e.offset);
  PutU64(out, e.length);
  PutU32(out, e.masked_crc);
}

Status Decoder::Truncated(const char* what, size_t need) const {
  return errors::DataLoss("checkpoint '", file_, "' is corrupt: ", region_, " ends inside ", what, " at offset ",
                          offset(), " (", need, " bytes needed, ", remaining(), " left)");
}

Status Decoder::ReadU32(const char* what, uint32_t* v) {
  if (remaining() < 4) return Truncated(what, 4);
  *v = GetU32(p_ + pos_);
  pos_ += 4;
  return Status::OK();
}

Status Decoder::ReadU64(const char* what, uint64_t* v) {
  if (remaining() < 8) return Truncated(what, 8);
  *v = GetU64(p_ + pos_);
  pos_ += 8;
  return Status::OK();
}

Status Decoder::ReadBytes(const char* what, size_t n, std::string* v) {
  if (remaining() < n) return Truncated(what, n);
  v->assign(p_ + pos_, n);
  pos_ += n;
  return Status::OK();
}

Status ReadIndexEntry(Decoder* d, uint64_t data_end, IndexEntry* e) {
  const uint64_t entry_offset = d->offset();
  auto corrupt = [&](const auto&... what) {
    return errors::DataLoss("checkpoint '", d->file(), "' is corrupt: index entry at offset ", entry_offset,
                            e->name.empty() ? std::string() : " ('" + e->name + "')", ": ", what...);
  };
  e->name.clear();
  uint32_t name_length = 0;
  AF_RETURN_IF_ERROR(d->ReadU32("a name length", &name_length));
  if (name_length == 0 || name_length > kMaxNameLength)
    return corrupt("name length ", name_length, " is not in [1, ", kMaxNameLength, "]");
  AF_RETURN_IF_ERROR(d->ReadBytes("a name", name_length, &e->name));
  uint32_t dtype = 0, rank = 0;
  AF_RETURN_IF_ERROR(d->ReadU32("a dtype", &dtype));
  e->dtype = static_cast<DataType>(static_cast<int32_t>(dtype));
  if (!DtypeIsStorable(e->dtype)) return corrupt("dtype ", static_cast<int32_t>(dtype), " cannot be stored");
  AF_RETURN_IF_ERROR(d->ReadU32("a rank", &rank));
  if (rank > kMaxRank) return corrupt("rank ", rank, " exceeds ", kMaxRank);
  std::vector<int64_t> dims(rank);
  for (uint32_t i = 0; i < rank; ++i) {
    uint64_t dim = 0;
    AF_RETURN_IF_ERROR(d->ReadU64("a dimension", &dim));
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return corrupt("dimension ", i, " is negative");
    dims[i] = static_cast<int64_t>(dim);
  }
  Status s = TensorShape::FromDims(dims, &e->shape);
  if (!s.ok()) return corrupt("bad shape: ", s.message());
  AF_RETURN_IF_ERROR(d->ReadU64("an offset", &e->offset));
  AF_RETURN_IF_ERROR(d->ReadU64("a length", &e->length));
  AF_RETURN_IF_ERROR(d->ReadU32("a checksum", &e->masked_crc));
  if (e->offset < kDataStart || e->offset > data_end || e->length > data_end - e->offset)
    return corrupt("bytes [", e->offset, ", +", e->length, ") are outside the data section [", kDataStart, ", ",
                   data_end, ")");
  const uint64_t n = static_cast<uint64_t>(e->shape.num_elements());
  if (e->dtype == DT_STRING) {
    // Every string takes at least its 8-byte length.
    if (n > e->length / 8) return corrupt(n, " strings cannot fit in ", e->length, " bytes");
  } else {
    const uint64_t size = DataTypeSize(e->dtype);
    if (n > e->length / size || n * size != e->length)
      return corrupt(e->length, " bytes do not hold ", n, " elements of ", DataTypeString(e->dtype), " (shape ",
                     e->shape.DebugString(), ")");
  }
  return Status::OK();
}

}  // namespace bundle
}  // namespace actorflow
