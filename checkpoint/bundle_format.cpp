#include "actorflow/checkpoint/bundle_format.hpp"

#include <cstring>
#include <limits>

#include "actorflow/core/io/fixed_width.hpp"

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

std::string EncodeHeaderPrefix(const Header& h) {
  std::string out(kMagic, sizeof(kMagic));
  fixed::Put<uint32_t>(&out, h.version);
  fixed::Put<uint32_t>(&out, kByteOrderMark);
  fixed::Put<uint64_t>(&out, h.index_offset);
  fixed::Put<uint64_t>(&out, h.index_length);
  fixed::Put<uint64_t>(&out, h.num_entries);
  fixed::Put<uint32_t>(&out, 0);  // reserved
  return out;
}

void AppendIndexEntry(const IndexEntry& e, std::string* out) {
  fixed::Put<uint32_t>(out, static_cast<uint32_t>(e.name.size()));
  out->append(e.name);
  fixed::Put<uint32_t>(out, static_cast<uint32_t>(e.dtype));
  fixed::Put<uint32_t>(out, static_cast<uint32_t>(e.shape.dims()));
  for (int i = 0; i < e.shape.dims(); ++i) fixed::Put<uint64_t>(out, static_cast<uint64_t>(e.shape.dim_size(i)));
  fixed::Put<uint64_t>(out, e.offset);
  fixed::Put<uint64_t>(out, e.length);
  fixed::Put<uint32_t>(out, e.masked_crc);
}

Status Decoder::Truncated(const char* what, size_t need) const {
  return errors::DataLoss("checkpoint '", file_, "' is corrupt: ", region_, " ends inside ", what, " at offset ",
                          offset(), " (", need, " bytes needed, ", remaining(), " left)");
}

Status Decoder::ReadU32(const char* what, uint32_t* v) {
  if (remaining() < 4) return Truncated(what, 4);
  *v = fixed::DecodeFixed32(p_ + pos_);
  pos_ += 4;
  return Status::OK();
}

Status Decoder::ReadU64(const char* what, uint64_t* v) {
  if (remaining() < 8) return Truncated(what, 8);
  *v = fixed::DecodeFixed64(p_ + pos_);
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
