// Fuzz target: the tensor transport's frame codec (comm/frame_codec.hpp) and
// its two clients' meta codecs (net/rendezvous_key.hpp,
// comm/collective_message.hpp) over fuzzed bytes. What decodes must encode
// back to exactly the bytes it came from (every field is validated, none
// ignored), and decode again to the same.
//
// Input layout (tests/fuzz/make_seeds.cpp writes seeds in it):
//   byte 0   mode (mod 8): 0 a stream of frames as a receiver reads them
//            (header, then the kind's body: hello, begin, lend; a data
//            body is skipped) until the bytes end or a frame is bad;
//            1 one header; 2 a hello body; 3 a begin body; 4 a lend body;
//            5 a string payload; 6 a rendezvous meta; 7 a collective
//            message header
//   byte 1   begin: the header's flags; strings: the element count
//   byte 2   begin: the payload cap, 2^(byte % 48) (0: 16 GiB, the default)
//   the rest: the bytes decoded
// Findings: crashes, sanitizer reports, FuzzCheck aborts (a round trip that
// differs), hangs and allocations over -rss_limit_mb / -malloc_limit_mb (a
// length from the bytes trusted).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "actorflow/comm/collective_message.hpp"
#include "actorflow/comm/frame_codec.hpp"
#include "actorflow/net/rendezvous_key.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace actorflow;

namespace {

constexpr uint64_t kDefaultCap = uint64_t{16} << 30;

void Header(const std::string& bytes) {
  if (bytes.size() < frame::kHeaderBytes) return;
  frame::Header h;
  if (!frame::DecodeHeader(bytes.data(), &h).ok()) return;
  std::string again;
  frame::AppendHeader(&again, h);
  fuzz::FuzzCheck(again == bytes.substr(0, frame::kHeaderBytes), "header round trip");
}

bool Hello(const char* body, size_t len) {
  frame::Hello hello;
  if (!frame::DecodeHello(body, len, &hello).ok()) return false;
  std::string again;
  frame::AppendHello(&again, hello);
  fuzz::FuzzCheck(again.compare(frame::kHeaderBytes, std::string::npos, body, len) == 0, "hello round trip");
  frame::Hello twice;
  fuzz::FuzzCheck(frame::DecodeHello(again.data() + frame::kHeaderBytes, len, &twice).ok() &&
                      twice.task == hello.task && twice.incarnation == hello.incarnation &&
                      twice.has_proof == hello.has_proof,
                  "hello decodes twice alike");
  return true;
}

bool Begin(const char* body, size_t len, uint8_t flags, uint64_t cap) {
  frame::Begin begin;
  TensorShape shape;
  if (!frame::DecodeBegin(body, len, flags, cap, &begin, &shape).ok()) return false;
  fuzz::FuzzCheck(begin.channel >= 1 && begin.channel <= frame::kMaxChannel, "a known channel");
  fuzz::FuzzCheck(begin.dtype == 0 || shape.dims() == static_cast<int>(begin.dims.size()), "shape of its dims");
  std::string again;
  frame::AppendBegin(&again, flags, 0, begin);
  fuzz::FuzzCheck(again.compare(frame::kHeaderBytes, std::string::npos, body, len) == 0, "begin round trip");
  frame::Begin twice;
  TensorShape shape2;
  fuzz::FuzzCheck(frame::DecodeBegin(again.data() + frame::kHeaderBytes, len, flags, cap, &twice, &shape2).ok() &&
                      twice.meta == begin.meta && twice.dims == begin.dims && shape2 == shape,
                  "begin decodes twice alike");
  return true;
}

bool Lend(const char* body, size_t len) {
  uint64_t address = 0;
  if (!frame::DecodeLend(body, len, &address).ok()) return false;
  std::string again;
  frame::AppendLend(&again, 0, address);
  fuzz::FuzzCheck(again.compare(frame::kHeaderBytes, std::string::npos, body, len) == 0, "lend round trip");
  return true;
}

// Frames as the receiver reads them: a header, then its body.
void Stream(const std::string& bytes, uint64_t cap) {
  size_t at = 0;
  while (bytes.size() - at >= frame::kHeaderBytes) {
    frame::Header h;
    if (!frame::DecodeHeader(bytes.data() + at, &h).ok()) return;
    at += frame::kHeaderBytes;
    if (h.body_len > bytes.size() - at) return;
    const char* body = bytes.data() + at;
    at += h.body_len;
    bool ok = true;
    if (h.kind == frame::kHello) ok = Hello(body, h.body_len);
    else if (h.kind == frame::kBegin) ok = Begin(body, h.body_len, h.flags, cap);
    else if (h.kind == frame::kLend) ok = Lend(body, h.body_len);
    if (!ok) return;
  }
}

void Strings(const std::string& bytes, int64_t n) {
  std::vector<std::string> elements(static_cast<size_t>(n));
  if (!frame::DecodeStrings(bytes.data(), bytes.size(), elements.data(), n).ok()) return;
  fuzz::FuzzCheck(frame::StringPayloadBytes(elements.data(), n) == bytes.size(), "string payload length");
  std::string again;
  frame::AppendStrings(&again, elements.data(), n);
  fuzz::FuzzCheck(again == bytes, "string payload round trip");
}

void RendezvousMeta(const std::string& meta) {
  int64_t step = 0;
  RendezvousKey key;
  const bool decoded = DecodeRendezvousMeta(meta, &step, &key).ok();
  fuzz::FuzzCheck(decoded == DecodeRendezvousMeta(meta, &step, nullptr).ok(), "checked as decoded");
  const Status checked = CheckRendezvousMeta(meta, "/job:b/replica:0/task:0");
  fuzz::FuzzCheck(decoded || !checked.ok(), "a meta that does not decode is never accepted");
  if (!decoded) return;
  fuzz::FuzzCheck(checked.ok() == (RecvTaskOfKey(key.str()) == "/job:b/replica:0/task:0"), "check by its task");
  fuzz::FuzzCheck(EncodeRendezvousMeta(step, key) == meta, "rendezvous meta round trip");
}

void Collective(const std::string& meta) {
  CollectiveMessage m;
  if (!DecodeCollectiveMessage(meta, &m).ok()) return;
  const std::string again = EncodeCollectiveMessage(m);
  fuzz::FuzzCheck(again == meta, "collective header round trip");
  CollectiveMessage twice;
  fuzz::FuzzCheck(DecodeCollectiveMessage(again, &twice).ok(), "collective header decodes twice");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Cursor in(data, size);
  const uint8_t mode = in.Byte() % 8;
  const uint8_t param = in.Byte();
  const uint8_t cap_bits = in.Byte() % 48;
  const uint64_t cap = cap_bits == 0 ? kDefaultCap : uint64_t{1} << cap_bits;
  const std::string bytes(reinterpret_cast<const char*>(in.rest()), in.rest_size());
  switch (mode) {
    case 0: Stream(bytes, cap); break;
    case 1: Header(bytes); break;
    case 2: Hello(bytes.data(), bytes.size()); break;
    case 3: Begin(bytes.data(), bytes.size(), param, cap); break;
    case 4: Lend(bytes.data(), bytes.size()); break;
    case 5: Strings(bytes, param); break;
    case 6: RendezvousMeta(bytes); break;
    case 7: Collective(bytes); break;
  }
  return 0;
}
