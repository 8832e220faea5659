// The tensor transport's frame codec (comm/frame_codec.hpp) and the two
// clients' meta codecs (net/rendezvous_key.hpp, comm/collective_message.hpp):
// every frame round-trips, bytes are little endian as documented, and each
// check rejects its bad frame with DataLoss saying what was wrong.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "actorflow/comm/collective_message.hpp"
#include "actorflow/comm/frame_codec.hpp"
#include "actorflow/core/dtypes.hpp"
#include "actorflow/core/io/fixed_width.hpp"
#include "actorflow/net/rendezvous_key.hpp"

using namespace actorflow;
using Catch::Matchers::Contains;

namespace {

constexpr uint64_t kCap = uint64_t{1} << 30;

// The body of a begin frame (its header stripped).
std::string BeginBody(const frame::Begin& b, uint8_t flags = 0) {
  std::string f;
  frame::AppendBegin(&f, flags, 1, b);
  return f.substr(frame::kHeaderBytes);
}

frame::Begin FloatBegin(std::vector<int64_t> dims, uint64_t payload) {
  return frame::Begin{1, DT_FLOAT, payload, "meta", std::move(dims)};
}

// The DataLoss message of decoding `body` as a begin frame.
std::string BeginError(const std::string& body, uint8_t flags = 0, uint64_t cap = kCap) {
  frame::Begin out;
  TensorShape shape;
  const Status s = frame::DecodeBegin(body.data(), body.size(), flags, cap, &out, &shape);
  REQUIRE_FALSE(s.ok());
  CHECK(errors::IsDataLoss(s));
  return s.message();
}

std::string HeaderError(const std::string& bytes) {
  REQUIRE(bytes.size() == frame::kHeaderBytes);
  frame::Header h;
  const Status s = frame::DecodeHeader(bytes.data(), &h);
  REQUIRE_FALSE(s.ok());
  CHECK(errors::IsDataLoss(s));
  return s.message();
}

std::string Header(uint8_t kind, uint8_t flags, uint32_t body_len) {
  std::string h;
  frame::AppendHeader(&h, frame::Header{kind, flags, 9, body_len});
  return h;
}

}  // namespace

TEST_CASE("frame codec: a header round-trips in the documented little-endian layout") {
  std::string bytes = Header(frame::kBegin, frame::kFlagDead | frame::kFlagTruncate16, 300);
  REQUIRE(bytes.size() == frame::kHeaderBytes);
  CHECK(bytes.substr(0, 4) == "AFT2");
  CHECK(fixed::Get<uint32_t>(bytes.data() + 8) == 9u);
  frame::Header h;
  REQUIRE(frame::DecodeHeader(bytes.data(), &h).ok());
  CHECK(h.kind == frame::kBegin);
  CHECK(h.flags == 3);
  CHECK(h.stream == 9u);
  CHECK(h.body_len == 300u);
  frame::SetStream(&bytes[0], 0x01020304);
  REQUIRE(frame::DecodeHeader(bytes.data(), &h).ok());
  CHECK(h.stream == 0x01020304u);
  for (uint8_t kind : {frame::kSameHost, frame::kReturn, frame::kNotSameHost})
    CHECK(frame::DecodeHeader(Header(kind, 0, 0).data(), &h).ok());
  CHECK(frame::DecodeHeader(Header(frame::kLend, 0, 8).data(), &h).ok());
  CHECK(frame::DecodeHeader(Header(frame::kData, 0, frame::kMaxDataBody).data(), &h).ok());
}

TEST_CASE("frame codec: each bad header is DataLoss naming what is wrong") {
  std::string old_magic = Header(frame::kHello, 0, 10);
  old_magic[3] = '1';  // "AFT1": the previous format
  CHECK_THAT(HeaderError(old_magic), Contains("bad magic"));
  std::string nonzero = Header(frame::kHello, 0, 10);
  nonzero[6] = 1;
  CHECK_THAT(HeaderError(nonzero), Contains("unknown flags"));
  CHECK_THAT(HeaderError(Header(frame::kBegin, 0x80, 10)), Contains("unknown flags"));
  CHECK_THAT(HeaderError(Header(frame::kData, frame::kFlagDead, 10)), Contains("unknown flags"));
  CHECK_THAT(HeaderError(Header(frame::kBegin, 0, frame::kMaxBodyBytes + 1)), Contains("header body too long"));
  CHECK_THAT(HeaderError(Header(frame::kHello, 0, frame::kMaxBodyBytes + 1)), Contains("header body too long"));
  CHECK_THAT(HeaderError(Header(frame::kData, 0, 0)), Contains("a data frame of 0 bytes"));
  CHECK_THAT(HeaderError(Header(frame::kData, 0, frame::kMaxDataBody + 1)), Contains("a data frame of"));
  CHECK_THAT(HeaderError(Header(frame::kLend, 0, 4)), Contains("a lend frame of 4 bytes"));
  CHECK_THAT(HeaderError(Header(frame::kReturn, 0, 1)), Contains("an answer with a body"));
  CHECK_THAT(HeaderError(Header(0, 0, 0)), Contains("unknown frame kind 0"));
  CHECK_THAT(HeaderError(Header(9, 0, 0)), Contains("unknown frame kind 9"));
}

TEST_CASE("frame codec: a hello round-trips with and without the same-host proof; bad ones are DataLoss") {
  for (bool proof : {false, true}) {
    frame::Hello in{0x1122334455667788u, "/job:w/replica:0/task:3", proof, {}};
    in.proof.pid = 4242;
    in.proof.address = 0xdeadbeef00u;
    for (size_t i = 0; i < in.proof.cookie.size(); ++i) in.proof.cookie[i] = static_cast<uint8_t>(i * 13);
    std::string f;
    frame::AppendHello(&f, in);
    frame::Header h;
    REQUIRE(frame::DecodeHeader(f.data(), &h).ok());
    CHECK(h.kind == frame::kHello);
    REQUIRE(h.body_len == f.size() - frame::kHeaderBytes);
    frame::Hello out;
    REQUIRE(frame::DecodeHello(f.data() + frame::kHeaderBytes, h.body_len, &out).ok());
    CHECK(out.incarnation == in.incarnation);
    CHECK(out.task == in.task);
    CHECK(out.has_proof == proof);
    if (proof) {
      CHECK(out.proof.pid == 4242u);
      CHECK(out.proof.address == in.proof.address);
      CHECK(out.proof.cookie == in.proof.cookie);
    }
  }
  auto error = [](const std::string& body) {
    frame::Hello out;
    const Status s = frame::DecodeHello(body.data(), body.size(), &out);
    REQUIRE(errors::IsDataLoss(s));
    return s.message();
  };
  CHECK_THAT(error(std::string(11, '\0')), Contains("short hello"));
  std::string empty_task(12, '\0');
  CHECK_THAT(error(empty_task), Contains("bad hello"));
  std::string huge(8, '\0');
  fixed::Put<uint32_t>(&huge, frame::kMaxTaskBytes + 1);
  huge += std::string(frame::kMaxTaskBytes + 1, 't');
  CHECK_THAT(error(huge), Contains("bad hello"));
  std::string odd_tail(8, '\0');
  fixed::Put<uint32_t>(&odd_tail, 1);
  odd_tail += "t" + std::string(5, 'x');  // neither no proof nor a whole one
  CHECK_THAT(error(odd_tail), Contains("bad hello"));
}

TEST_CASE("frame codec: begin frames round-trip: tensors, strings, truncated floats, no tensor") {
  struct Case {
    frame::Begin begin;
    uint8_t flags;
    TensorShape shape;
  };
  const std::vector<Case> cases = {
      {frame::Begin{1, DT_FLOAT, 24, EncodeRendezvousMeta(5, "a;b;c;d;0:0"), {2, 3}}, frame::kFlagDead,
       TensorShape{2, 3}},
      {frame::Begin{2, DT_INT64, 0, "", {0, 7}}, 0, TensorShape{0, 7}},
      {frame::Begin{3, DT_FLOAT, 12, std::string(frame::kMaxMetaBytes, 'm'), {6}}, frame::kFlagTruncate16,
       TensorShape{6}},
      {frame::Begin{1, DT_STRING, 100, "s", {2}}, 0, TensorShape{2}},
      {frame::Begin{2, DT_INT8, 1, "scalar", {}}, 0, TensorShape{}},
      {frame::Begin{3, DT_INVALID, 0, "control", {}}, frame::kFlagDead, TensorShape{}},
  };
  for (const auto& c : cases) {
    INFO("dtype " << c.begin.dtype << ", channel " << int(c.begin.channel));
    std::string f;
    frame::AppendBegin(&f, c.flags, 77, c.begin);
    frame::Header h;
    REQUIRE(frame::DecodeHeader(f.data(), &h).ok());
    CHECK(h.kind == frame::kBegin);
    CHECK(h.flags == c.flags);
    CHECK(h.stream == 77u);
    REQUIRE(h.body_len == f.size() - frame::kHeaderBytes);
    frame::Begin out;
    TensorShape shape({9, 9});
    REQUIRE(frame::DecodeBegin(f.data() + frame::kHeaderBytes, h.body_len, h.flags, kCap, &out, &shape).ok());
    CHECK(out.channel == c.begin.channel);
    CHECK(out.dtype == c.begin.dtype);
    CHECK(out.payload_len == c.begin.payload_len);
    CHECK(out.meta == c.begin.meta);
    CHECK(out.dims == c.begin.dims);
    CHECK(shape == c.shape);
    std::string again;
    frame::AppendBegin(&again, h.flags, 77, out);
    CHECK(again == f);
  }
}

TEST_CASE("frame codec: each bad begin frame is DataLoss naming what is wrong") {
  CHECK_THAT(BeginError(std::string(frame::kBeginFixed - 1, '\0')), Contains("short begin frame"));
  frame::Begin b = FloatBegin({1}, 4);
  b.channel = 0;
  CHECK_THAT(BeginError(BeginBody(b)), Contains("unknown channel 0"));
  b.channel = 4;
  CHECK_THAT(BeginError(BeginBody(b)), Contains("unknown channel 4"));
  std::string body = BeginBody(FloatBegin({1}, 4));
  CHECK_THAT(BeginError(body + "x"), Contains("lengths disagree"));
  CHECK_THAT(BeginError(body.substr(0, body.size() - 1)), Contains("lengths disagree"));
  CHECK_THAT(BeginError(BeginBody(FloatBegin(std::vector<int64_t>(frame::kMaxDims + 1, 1), 4))),
             Contains("lengths disagree"));
  b = FloatBegin({1}, 4);
  b.meta = std::string(frame::kMaxMetaBytes + 1, 'm');
  CHECK_THAT(BeginError(BeginBody(b)), Contains("lengths disagree"));
  b = FloatBegin({1}, 4);
  b.dtype = 12345;
  CHECK_THAT(BeginError(BeginBody(b)), Contains("unsupported dtype 12345"));
  b.dtype = DT_FLOAT_REF;
  CHECK_THAT(BeginError(BeginBody(b)), Contains("unsupported dtype"));
  b.dtype = -1;
  CHECK_THAT(BeginError(BeginBody(b)), Contains("unsupported dtype"));
  CHECK_THAT(BeginError(BeginBody(FloatBegin({-5}, 0))), Contains("invalid dims"));
  CHECK_THAT(BeginError(BeginBody(FloatBegin({int64_t{1} << 40, int64_t{1} << 40}, 16))), Contains("invalid dims"));
  CHECK_THAT(BeginError(BeginBody(FloatBegin({1000}, 16))), Contains("dims x element size != payload length"));
  CHECK_THAT(BeginError(BeginBody(FloatBegin({4}, 32))), Contains("dims x element size != payload length"));
  CHECK_THAT(BeginError(BeginBody(FloatBegin({4}, 16)), 0, 15), Contains("payload over the cap"));
  frame::Begin ints{1, DT_INT32, 8, "m", {2}};
  CHECK_THAT(BeginError(BeginBody(ints, frame::kFlagTruncate16), frame::kFlagTruncate16),
             Contains("16-bit truncation of a non-float32 tensor"));
  // A truncated float32 is 2 bytes a value on the wire.
  CHECK_THAT(BeginError(BeginBody(FloatBegin({4}, 16), frame::kFlagTruncate16), frame::kFlagTruncate16),
             Contains("dims x element size != payload length"));
  frame::Begin strings{1, DT_STRING, 15, "m", {2}};
  CHECK_THAT(BeginError(BeginBody(strings)), Contains("string payload shorter than its lengths"));
  frame::Begin none{3, DT_INVALID, 4, "m", {}};
  CHECK_THAT(BeginError(BeginBody(none)), Contains("without a tensor"));
  none = frame::Begin{3, DT_INVALID, 0, "m", {1}};
  CHECK_THAT(BeginError(BeginBody(none)), Contains("without a tensor"));
  none = frame::Begin{3, DT_INVALID, 0, "m", {}};
  CHECK_THAT(BeginError(BeginBody(none, frame::kFlagTruncate16), frame::kFlagTruncate16), Contains("without a tensor"));
}

TEST_CASE("frame codec: lend frames and string payloads round-trip; bad ones are DataLoss") {
  std::string f;
  frame::AppendLend(&f, 5, 0x00007f0012345678u);
  frame::Header h;
  REQUIRE(frame::DecodeHeader(f.data(), &h).ok());
  CHECK(h.kind == frame::kLend);
  CHECK(h.stream == 5u);
  uint64_t address = 0;
  REQUIRE(frame::DecodeLend(f.data() + frame::kHeaderBytes, h.body_len, &address).ok());
  CHECK(address == 0x00007f0012345678u);
  CHECK_THAT(frame::DecodeLend(f.data(), 7, &address).message(), Contains("a lend frame of 7 bytes"));

  const std::vector<std::string> in = {"", "x", std::string("a\0b", 3), std::string(1000, 'q')};
  std::string payload;
  frame::AppendStrings(&payload, in.data(), static_cast<int64_t>(in.size()));
  CHECK(payload.size() == frame::StringPayloadBytes(in.data(), static_cast<int64_t>(in.size())));
  std::vector<std::string> out(in.size());
  REQUIRE(frame::DecodeStrings(payload.data(), payload.size(), out.data(), static_cast<int64_t>(out.size())).ok());
  CHECK(out == in);
  auto error = [&](const std::string& bytes, int64_t n) {
    std::vector<std::string> o(static_cast<size_t>(n));
    const Status s = frame::DecodeStrings(bytes.data(), bytes.size(), o.data(), n);
    REQUIRE(errors::IsDataLoss(s));
    return s.message();
  };
  CHECK_THAT(error(payload.substr(0, 4), 1), Contains("string payload truncated"));
  CHECK_THAT(error(std::string("\xff\0\0\0\0\0\0\0x", 9), 1), Contains("string element longer than its payload"));
  CHECK_THAT(error(payload + "z", static_cast<int64_t>(in.size())),
             Contains("string payload longer than its elements"));
}

TEST_CASE("rendezvous meta: step id and key round-trip; bad lengths and another task's key are DataLoss") {
  const RendezvousKey key = MakeRendezvousKey("/job:a/replica:0/task:0/device:CPU:0", 7,
                                              "/job:b/replica:0/task:1/device:CPU:0", "edge", 2, 3);
  const std::string meta = EncodeRendezvousMeta(-42, key);
  CHECK(fixed::Get<int64_t>(meta.data()) == -42);
  int64_t step = 0;
  RendezvousKey out;
  REQUIRE(DecodeRendezvousMeta(meta, &step, &out).ok());
  CHECK(step == -42);
  CHECK(out == key);
  CHECK(CheckRendezvousMeta(meta, "/job:b/replica:0/task:1").ok());
  const Status other = CheckRendezvousMeta(meta, "/job:b/replica:0/task:0");
  CHECK(errors::IsDataLoss(other));
  CHECK_THAT(other.message(), Contains("a tensor for another task"));
  CHECK(errors::IsDataLoss(DecodeRendezvousMeta(meta.substr(0, 11), &step, &out)));
  CHECK(errors::IsDataLoss(DecodeRendezvousMeta(meta + "x", &step, &out)));
  CHECK(errors::IsDataLoss(DecodeRendezvousMeta(EncodeRendezvousMeta(1, RendezvousKey("")), &step, &out)));
  CHECK(errors::IsDataLoss(
      DecodeRendezvousMeta(EncodeRendezvousMeta(1, std::string(kMaxRendezvousKeyBytes + 1, 'k')), &step, &out)));
}

TEST_CASE("collective message header: every kind round-trips; malformed headers are DataLoss") {
  CollectiveMessage join;
  join.kind = CollectiveMessage::kJoin;
  join.group = 3;
  join.size = 4;
  join.epoch = 9;
  join.forming = true;
  join.incarnation = 0xabcdef0123456789u;
  CollectiveMessage data;
  data.kind = CollectiveMessage::kData;
  data.group = -1;
  data.epoch = 2;
  data.instance = 11;
  data.execution = 5;
  data.phase = -1;
  data.from = 2;
  data.dtype = DT_DOUBLE;
  data.elements = 1 << 20;
  data.plan = 0xfeedu;
  CollectiveMessage plan;
  plan.kind = CollectiveMessage::kPlan;
  plan.group = 3;
  plan.epoch = 1;
  plan.plan = 77;
  plan.from = 1;
  for (const CollectiveMessage& m : {join, data, plan}) {
    const std::string bytes = EncodeCollectiveMessage(m);
    REQUIRE(bytes.size() == CollectiveMessage::kBytes);
    CollectiveMessage out;
    REQUIRE(DecodeCollectiveMessage(bytes, &out).ok());
    CHECK(EncodeCollectiveMessage(out) == bytes);
    CHECK(out.kind == m.kind);
    CHECK(out.group == m.group);
    CHECK(out.size == m.size);
    CHECK(out.epoch == m.epoch);
    CHECK(out.forming == m.forming);
    CHECK(out.incarnation == m.incarnation);
    CHECK(out.instance == m.instance);
    CHECK(out.execution == m.execution);
    CHECK(out.phase == m.phase);
    CHECK(out.from == m.from);
    CHECK(out.dtype == m.dtype);
    CHECK(out.elements == m.elements);
    CHECK(out.plan == m.plan);
  }
  auto error = [](std::string bytes) {
    CollectiveMessage out;
    const Status s = DecodeCollectiveMessage(bytes, &out);
    REQUIRE(errors::IsDataLoss(s));
    return s.message();
  };
  const std::string good = EncodeCollectiveMessage(join);
  CHECK_THAT(error(good.substr(1)), Contains("87 bytes"));
  CHECK_THAT(error(good + "x"), Contains("89 bytes"));
  std::string bad = good;
  bad[0] = 4;
  CHECK_THAT(error(bad), Contains("unknown kind 4"));
  bad = good;
  bad[1] = 2;
  CHECK_THAT(error(bad), Contains("unknown flags"));
  bad = good;
  bad[2] = 2;  // bit 0 (elastic) is a JOIN's only flag
  CHECK_THAT(error(bad), Contains("unknown flags"));
  bad = EncodeCollectiveMessage(data);
  bad[2] = 1;  // the elastic flag on a data message
  CHECK_THAT(error(bad), Contains("unknown flags"));
  bad = EncodeCollectiveMessage(data);
  bad[1] = 1;  // forming on a data message
  CHECK_THAT(error(bad), Contains("unknown flags"));
  CollectiveMessage m = join;
  m.size = 0;
  CHECK_THAT(error(EncodeCollectiveMessage(m)), Contains("a group of 0 members"));
  m = data;
  m.from = -1;
  CHECK_THAT(error(EncodeCollectiveMessage(m)), Contains("from rank -1"));
  m = data;
  m.phase = -2;
  CHECK_THAT(error(EncodeCollectiveMessage(m)), Contains("phase -2"));
  m = data;
  m.elements = -1;
  CHECK_THAT(error(EncodeCollectiveMessage(m)), Contains("-1 elements"));
}
