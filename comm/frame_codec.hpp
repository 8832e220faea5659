// The tensor transport's frame codec (comm/tensor_transport.hpp describes
// the wire format and the protocol): pure functions that encode each frame
// and decode it with every check the receiver makes of its bytes alone. No
// I/O, no state, nothing allocated beyond the output; all integers through
// core/io/fixed_width.hpp (little endian on any host).
//
// Encoders write what they are given (tests write hostile frames with them);
// decoders validate before anything is allocated by a length the peer
// claims, and a bad frame is DataLoss whose message says what was wrong
// (the transport closes the connection with it). What depends on the
// connection's state (a frame before the hello, a stream begun twice, a
// chunk for an unknown stream or past its tensor's end) the transport checks.
//
// A message is one begin frame (then its payload in data frames, or a lend
// frame): the channel it goes to, its client's opaque meta bytes, and a
// tensor, or no tensor at all: dtype DT_INVALID with no dims and no payload
// (a control message; the receiver delivers an uninitialized Tensor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actorflow/core/status.hpp"
#include "actorflow/core/tensor_shape.hpp"
#include "actorflow/comm/same_host.hpp"

namespace actorflow {
namespace frame {

constexpr uint32_t kMagic = 0x32544641;  // "AFT2" little endian
constexpr size_t kHeaderBytes = 16;
// Sender to receiver, and the receiver's answers (empty bodies).
constexpr uint8_t kHello = 1, kBegin = 2, kData = 3, kLend = 4;
constexpr uint8_t kSameHost = 5, kReturn = 6, kNotSameHost = 7;
constexpr uint8_t kFlagDead = 1, kFlagTruncate16 = 2;  // begin frames only
constexpr uint32_t kMaxBodyBytes = 64 << 10;  // hello and begin bodies
constexpr uint32_t kMaxMetaBytes = 16 << 10;
constexpr uint32_t kMaxTaskBytes = 1024;
constexpr uint32_t kMaxDims = 64;
constexpr uint32_t kMaxDataBody = 64 << 20;  // one chunk
constexpr uint8_t kMaxChannel = 3;           // channels are 1..kMaxChannel (comm/tensor_transport.hpp)
constexpr size_t kHelloFixed = 8 + 4;               // incarnation, task length
constexpr size_t kProofBytes = 4 + 8 + 16;          // the hello's optional tail: pid, address, cookie
constexpr size_t kBeginFixed = 1 + 4 + 4 + 8 + 4;   // channel, dtype, ndims, payload length, meta length
constexpr size_t kLendBytes = 8;

struct Header {
  uint8_t kind = 0;
  uint8_t flags = 0;
  uint32_t stream = 0;
  uint32_t body_len = 0;
};

struct Hello {
  uint64_t incarnation = 0;
  std::string task;
  bool has_proof = false;  // the same-host offer (plaintext only)
  ProcessProof proof;
};

struct Begin {
  uint8_t channel = 0;
  int32_t dtype = 0;  // DT_INVALID: a message without a tensor
  uint64_t payload_len = 0;
  std::string meta;
  std::vector<int64_t> dims;
};

// --- header: u32 magic | u8 kind | u8 flags | u16 zero | u32 stream | u32 body_len
void EncodeHeader(const Header& h, char* out);  // kHeaderBytes at `out`
void AppendHeader(std::string* out, const Header& h);
/// Rewrites the stream id of the frame whose header starts at `frame`.
void SetStream(char* frame, uint32_t stream);
/// Magic, zero field, a known kind, flags only on begin frames and only
/// known ones, and a body length the kind allows (hello and begin up to
/// kMaxBodyBytes, data 1..kMaxDataBody, lend kLendBytes, answers none).
Status DecodeHeader(const char* p, Header* out);  // kHeaderBytes at `p`

// --- hello: u64 incarnation | u32 task_len | task [| u32 pid | u64 address | 16 bytes cookie]
void AppendHello(std::string* out, const Hello& hello);  // header and body
/// A task name of 1..kMaxTaskBytes and exactly the proof's bytes or none.
Status DecodeHello(const char* body, size_t len, Hello* out);

// --- begin: u8 channel | i32 dtype | u32 ndims | u64 payload_len | u32 meta_len | meta | i64 dims[ndims]
void AppendBegin(std::string* out, uint8_t flags, uint32_t stream, const Begin& begin);  // header and body
/// The lengths agree, a known channel, at most kMaxMetaBytes of meta and
/// kMaxDims dims; no tensor (DT_INVALID): no dims, no payload, no
/// truncation; a tensor: a supported dtype, dims that make a shape
/// (`*shape`), payload_len <= max_payload_bytes, 16-bit truncation only of
/// float32, dims x element size = payload_len (2 bytes a truncated value),
/// strings: at least 8 payload bytes (its length) an element.
Status DecodeBegin(const char* body, size_t len, uint8_t flags, uint64_t max_payload_bytes, Begin* out,
                   TensorShape* shape);

// --- lend: u64 address (the payload lies there in the sender's memory)
void AppendLend(std::string* out, uint32_t stream, uint64_t address);  // header and body
Status DecodeLend(const char* body, size_t len, uint64_t* address);

// --- the payload of a string tensor: per element u64 length | bytes
uint64_t StringPayloadBytes(const std::string* elements, int64_t n);
void AppendStrings(std::string* out, const std::string* elements, int64_t n);
/// Exactly `n` elements filling all `len` bytes.
Status DecodeStrings(const char* p, uint64_t len, std::string* elements, int64_t n);

}  // namespace frame
}  // namespace actorflow
