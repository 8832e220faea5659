#include "actorflow/comm/frame_codec.hpp"

#include <cstring>

#include "actorflow/core/dtypes.hpp"
#include "actorflow/core/io/fixed_width.hpp"

namespace actorflow {
namespace frame {

namespace {

Status Bad(const std::string& why) { return errors::DataLoss(why); }

}  // namespace

void EncodeHeader(const Header& h, char* out) {
  fixed::Encode<uint32_t>(out, kMagic);
  fixed::Encode<uint8_t>(out + 4, h.kind);
  fixed::Encode<uint8_t>(out + 5, h.flags);
  fixed::Encode<uint16_t>(out + 6, 0);
  fixed::Encode<uint32_t>(out + 8, h.stream);
  fixed::Encode<uint32_t>(out + 12, h.body_len);
}

void AppendHeader(std::string* out, const Header& h) {
  char b[kHeaderBytes];
  EncodeHeader(h, b);
  out->append(b, kHeaderBytes);
}

void SetStream(char* frame, uint32_t stream) { fixed::Encode<uint32_t>(frame + 8, stream); }

Status DecodeHeader(const char* p, Header* out) {
  if (fixed::Get<uint32_t>(p) != kMagic) return Bad("bad magic");
  Header h;
  h.kind = fixed::Get<uint8_t>(p + 4);
  h.flags = fixed::Get<uint8_t>(p + 5);
  h.stream = fixed::Get<uint32_t>(p + 8);
  h.body_len = fixed::Get<uint32_t>(p + 12);
  if (fixed::Get<uint16_t>(p + 6) != 0 || (h.flags & ~(kFlagDead | kFlagTruncate16)) ||
      (h.flags != 0 && h.kind != kBegin))
    return Bad("unknown flags");
  switch (h.kind) {
    case kHello:
    case kBegin:
      if (h.body_len > kMaxBodyBytes) return Bad("header body too long");
      break;
    case kData:
      if (h.body_len == 0 || h.body_len > kMaxDataBody)
        return Bad("a data frame of " + std::to_string(h.body_len) + " bytes");
      break;
    case kLend:
      if (h.body_len != kLendBytes) return Bad("a lend frame of " + std::to_string(h.body_len) + " bytes");
      break;
    case kSameHost:
    case kReturn:
    case kNotSameHost:
      if (h.body_len != 0) return Bad("an answer with a body of " + std::to_string(h.body_len) + " bytes");
      break;
    default:
      return Bad("unknown frame kind " + std::to_string(h.kind));
  }
  *out = h;
  return Status::OK();
}

void AppendHello(std::string* out, const Hello& hello) {
  const size_t body = kHelloFixed + hello.task.size() + (hello.has_proof ? kProofBytes : 0);
  out->reserve(out->size() + kHeaderBytes + body);
  AppendHeader(out, Header{kHello, 0, 0, static_cast<uint32_t>(body)});
  fixed::Put<uint64_t>(out, hello.incarnation);
  fixed::Put<uint32_t>(out, static_cast<uint32_t>(hello.task.size()));
  out->append(hello.task);
  if (!hello.has_proof) return;
  fixed::Put<uint32_t>(out, hello.proof.pid);
  fixed::Put<uint64_t>(out, hello.proof.address);
  out->append(reinterpret_cast<const char*>(hello.proof.cookie.data()), hello.proof.cookie.size());
}

Status DecodeHello(const char* body, size_t len, Hello* out) {
  if (len < kHelloFixed) return Bad("short hello");
  const uint32_t task_len = fixed::Get<uint32_t>(body + 8);
  if (task_len == 0 || task_len > kMaxTaskBytes ||
      (len != kHelloFixed + task_len && len != kHelloFixed + task_len + kProofBytes))
    return Bad("bad hello");
  out->incarnation = fixed::Get<uint64_t>(body);
  out->task.assign(body + kHelloFixed, task_len);
  out->has_proof = len > kHelloFixed + task_len;
  out->proof = ProcessProof();
  if (out->has_proof) {
    const char* q = body + kHelloFixed + task_len;
    out->proof.pid = fixed::Get<uint32_t>(q);
    out->proof.address = fixed::Get<uint64_t>(q + 4);
    std::memcpy(out->proof.cookie.data(), q + 12, out->proof.cookie.size());
  }
  return Status::OK();
}

void AppendBegin(std::string* out, uint8_t flags, uint32_t stream, const Begin& begin) {
  const size_t body = kBeginFixed + begin.meta.size() + size_t{8} * begin.dims.size();
  out->reserve(out->size() + kHeaderBytes + body);
  AppendHeader(out, Header{kBegin, flags, stream, static_cast<uint32_t>(body)});
  fixed::Put<uint8_t>(out, begin.channel);
  fixed::Put<int32_t>(out, begin.dtype);
  fixed::Put<uint32_t>(out, static_cast<uint32_t>(begin.dims.size()));
  fixed::Put<uint64_t>(out, begin.payload_len);
  fixed::Put<uint32_t>(out, static_cast<uint32_t>(begin.meta.size()));
  out->append(begin.meta);
  for (int64_t d : begin.dims) fixed::Put<int64_t>(out, d);
}

Status DecodeBegin(const char* body, size_t len, uint8_t flags, uint64_t max_payload_bytes, Begin* out,
                   TensorShape* shape) {
  if (len < kBeginFixed) return Bad("short begin frame");
  const uint8_t channel = fixed::Get<uint8_t>(body);
  const int32_t dtype = fixed::Get<int32_t>(body + 1);
  const uint32_t ndims = fixed::Get<uint32_t>(body + 5);
  const uint64_t payload_len = fixed::Get<uint64_t>(body + 9);
  const uint32_t meta_len = fixed::Get<uint32_t>(body + 17);
  if (channel == 0 || channel > kMaxChannel) return Bad("unknown channel " + std::to_string(channel));
  if (ndims > kMaxDims || meta_len > kMaxMetaBytes || len != kBeginFixed + meta_len + size_t{8} * ndims)
    return Bad("begin frame lengths disagree");
  const bool truncated = flags & kFlagTruncate16;
  std::vector<int64_t> dims(ndims);
  const char* d = body + kBeginFixed + meta_len;
  for (uint32_t i = 0; i < ndims; ++i) dims[i] = fixed::Get<int64_t>(d + size_t{8} * i);
  TensorShape s;
  if (dtype == DT_INVALID) {
    if (ndims != 0 || payload_len != 0 || truncated) return Bad("a message without a tensor has dims or a payload");
  } else {
    const DataType t = static_cast<DataType>(dtype);
    if (dtype < 0 || dtype >= kDataTypeRefOffset || !DataTypeIsSupported(t))
      return Bad("unsupported dtype " + std::to_string(dtype));
    if (!TensorShape::FromDims(dims, &s).ok()) return Bad("invalid dims");
    if (payload_len > max_payload_bytes) return Bad("payload over the cap");
    if (truncated && t != DT_FLOAT) return Bad("16-bit truncation of a non-float32 tensor");
    const uint64_t n = static_cast<uint64_t>(s.num_elements());
    if (DataTypeIsStringLike(t)) {
      if (n > payload_len / 8) return Bad("string payload shorter than its lengths");
    } else {
      const uint64_t elem = truncated ? 2 : DataTypeSize(t);
      if (elem == 0 || (n != 0 && n > payload_len / elem) || n * elem != payload_len)
        return Bad("dims x element size != payload length");
    }
  }
  out->channel = channel;
  out->dtype = dtype;
  out->payload_len = payload_len;
  out->meta.assign(body + kBeginFixed, meta_len);
  out->dims = std::move(dims);
  if (shape) *shape = s;
  return Status::OK();
}

void AppendLend(std::string* out, uint32_t stream, uint64_t address) {
  AppendHeader(out, Header{kLend, 0, stream, static_cast<uint32_t>(kLendBytes)});
  fixed::Put<uint64_t>(out, address);
}

Status DecodeLend(const char* body, size_t len, uint64_t* address) {
  if (len != kLendBytes) return Bad("a lend frame of " + std::to_string(len) + " bytes");
  *address = fixed::Get<uint64_t>(body);
  return Status::OK();
}

uint64_t StringPayloadBytes(const std::string* elements, int64_t n) {
  uint64_t total = 0;
  for (int64_t i = 0; i < n; ++i) total += 8 + elements[i].size();
  return total;
}

void AppendStrings(std::string* out, const std::string* elements, int64_t n) {
  out->reserve(out->size() + StringPayloadBytes(elements, n));
  for (int64_t i = 0; i < n; ++i) {
    fixed::Put<uint64_t>(out, elements[i].size());
    out->append(elements[i]);
  }
}

Status DecodeStrings(const char* p, uint64_t len, std::string* elements, int64_t n) {
  uint64_t left = len;
  for (int64_t i = 0; i < n; ++i) {
    if (left < 8) return Bad("string payload truncated");
    const uint64_t size = fixed::Get<uint64_t>(p);
    p += 8;
    left -= 8;
    if (size > left) return Bad("string element longer than its payload");
    elements[i].assign(p, size);
    p += size;
    left -= size;
  }
  if (left != 0) return Bad("string payload longer than its elements");
  return Status::OK();
}

}  // namespace frame
}  // namespace actorflow
