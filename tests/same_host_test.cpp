// The tensor transport's same-host path (comm/same_host.hpp,
// comm/tensor_transport.hpp): between two endpoints of one host, numeric
// tensors of 256 KiB and more are read straight from the sender's memory,
// bit for bit, and the sender holds each until the receiver returns it;
// smaller ones and strings go over TCP. A proof that does not check out
// gets "not the same host", and hostile lend frames (no proof, an address
// the sender does not map, an unknown stream, a string, data for a lent
// stream) close the connection with DataLoss, never a crash or a read past
// the tensor.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "actorflow/comm/same_host.hpp"
#include "actorflow/comm/tensor_transport.hpp"
#include "test_util.hpp"
#include "transport_util.hpp"

using namespace actorflow;
using namespace actorflow::test;

namespace {

std::string CookieOf(const ProcessProof& p) { return std::string(reinterpret_cast<const char*>(p.cookie.data()), 16); }

// Waits (bounded) until `pred` holds.
template <class P>
bool Eventually(P pred) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// Reads exactly `n` bytes from `fd` (each read bounded by the socket's timeout).
std::string ReadExact(int fd, size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::recv(fd, out.data() + got, n - got, 0);
    REQUIRE(r > 0);
    got += static_cast<size_t>(r);
  }
  return out;
}

// One frame: {kind, stream, body}.
struct RawFrame {
  uint8_t kind;
  uint32_t stream;
  std::string body;
};
RawFrame ReadFrame(int fd) {
  const std::string h = ReadExact(fd, 16);
  RawFrame f;
  f.kind = static_cast<uint8_t>(h[4]);
  uint32_t len;
  std::memcpy(&f.stream, h.data() + 8, 4);
  std::memcpy(&len, h.data() + 12, 4);
  f.body = ReadExact(fd, len);
  return f;
}

void WriteAll(int fd, const std::string& bytes) {
  REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
}

void SetTimeout(int fd) {
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

Tensor Floats(int64_t n, float scale) {
  Tensor t(DT_FLOAT, TensorShape{n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(i) * scale - 3.f;
  return t;
}

}  // namespace

TEST_CASE("same host: tensors of 256 KiB and more are read from the sender's memory bit for bit, the rest over TCP") {
  Pair p(size_t{4} << 20, /*same_host=*/true);
  Tensor big = Floats((int64_t{9} << 20) / 4 + 3, 0.37f);  // three 4 MiB pieces and a bit
  Tensor edge(DT_INT8, TensorShape{256 << 10});           // exactly the threshold
  for (int64_t i = 0; i < edge.NumElements(); ++i) edge.data<int8_t>()[i] = static_cast<int8_t>(i * 7);
  Tensor small = test::MakeTensor<int64_t>({1, -2, int64_t{1} << 40}, TensorShape{3});
  Tensor under(DT_INT32, TensorShape{(256 << 10) / 4 - 1});  // one value under the threshold
  for (int64_t i = 0; i < under.NumElements(); ++i) under.data<int32_t>()[i] = static_cast<int32_t>(i ^ 0x5a5a);
  Tensor strings = test::Strings({std::string(300000, 's'), "", "x"});
  Tensor wide = Floats(int64_t{1} << 18, 1.7f);  // 1 MiB, sent truncated to 16 bits
  REQUIRE(SendTensor(*p.a, kB, 1, Key("big"), big, false).ok());
  REQUIRE(SendTensor(*p.a, kB, 1, Key("edge"), edge, false).ok());
  REQUIRE(SendTensor(*p.a, kB, 1, Key("small"), small, false).ok());
  REQUIRE(SendTensor(*p.a, kB, 1, Key("under"), under, false).ok());
  REQUIRE(SendTensor(*p.a, kB, 1, Key("strings"), strings, false).ok());
  REQUIRE(SendTensor(*p.a, kB, 1, Key("wide"), wide, false, /*truncate16=*/true).ok());
  std::map<std::string, Tensor> got;
  for (int i = 0; i < 6; ++i) {
    auto item = p.in_b.Next();
    REQUIRE(item.status.ok());
    got[item.key] = item.value;
  }
  auto same = [&](const char* name, const Tensor& want) {
    INFO(name);
    const Tensor& t = got.at(Key(name).str());
    REQUIRE(t.dtype() == want.dtype());
    REQUIRE(t.shape() == want.shape());
    CHECK(std::memcmp(t.raw_data(), want.raw_data(), want.TotalBytes()) == 0);
  };
  same("big", big);
  same("edge", edge);
  same("small", small);
  same("under", under);
  CHECK(test::Values<std::string>(got.at(Key("strings").str())) == test::Values<std::string>(strings));
  const Tensor& w = got.at(Key("wide").str());
  REQUIRE(w.shape() == wide.shape());
  for (int64_t i = 0; i < wide.NumElements(); ++i) {  // the values the 16-bit wire gives
    uint32_t bits, seen;
    std::memcpy(&bits, &wide.data<float>()[i], 4);
    std::memcpy(&seen, &w.data<float>()[i], 4);
    if (seen != (bits & 0xffff0000u)) FAIL("element " << i << " not truncated to its upper 16 bits");
  }
  CHECK(p.b->same_host_count() == 3);  // big, edge, wide
  CHECK(p.b->data_loss_count() == 0);
  // The sender let the lent tensors go once they were read.
  CHECK(Eventually([&] { return big.RefCountIsOne() && edge.RefCountIsOne() && wide.RefCountIsOne(); }));
}

TEST_CASE("same host: a lent tensor the receiver rejects (an unknown incarnation) is returned at once, its step Aborted") {
  Pair p(size_t{4} << 20, /*same_host=*/true);
  Introduce(p.mb, kA, p.a->port(), 999);  // B knows another incarnation of A
  Tensor big = Floats(int64_t{1} << 20, 0.5f);
  REQUIRE(SendTensor(*p.a, kB, 4, Key("big"), big, false).ok());
  auto r = p.in_b.Next();
  CHECK(r.step == 4);
  CHECK(errors::IsAborted(r.status));
  CHECK(Eventually([&] { return big.RefCountIsOne(); }));  // never read, still returned
  CHECK(p.b->same_host_count() == 0);
}

TEST_CASE("same host: the sender waits for the answer to its offer, lends, and holds the tensor until it is returned") {
  // A receiver written by hand: it sees exactly what the sender puts on the wire.
  int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(lfd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(lfd, 1) == 0);
  socklen_t alen = sizeof addr;
  REQUIRE(::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &alen) == 0);

  Inbox in_a;
  Membership ma(kA, 111);
  std::unique_ptr<TensorTransport> a;
  TransportOptions oa;
  oa.task = kA;
  oa.incarnation = 111;
  oa.membership = &ma;
  REQUIRE(TensorTransport::Start(oa, in_a.Callbacks(kA), &a).ok());
  Introduce(ma, kB, ntohs(addr.sin_port), 222);
  Tensor big = Floats(int64_t{1} << 20, 0.25f);  // 4 MiB
  REQUIRE(SendTensor(*a, kB, 1, Key("big"), big, false).ok());
  REQUIRE(SendTensor(*a, kB, 1, Key("small"), Tensor::Scalar<float>(5.f), false).ok());

  timeval tv{10, 0};
  ::setsockopt(lfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);  // bounds accept
  const int fd = ::accept(lfd, nullptr, nullptr);
  REQUIRE(fd >= 0);
  SetTimeout(fd);
  // The hello offers this process's proof.
  RawFrame hello = ReadFrame(fd);
  REQUIRE(hello.kind == 1);
  const ProcessProof& proof = ThisProcessProof();
  REQUIRE(hello.body.size() == 12 + std::strlen(kA) + 28);
  uint32_t pid;
  std::memcpy(&pid, hello.body.data() + 12 + std::strlen(kA), 4);
  CHECK(pid == proof.pid);
  CHECK(hello.body.substr(hello.body.size() - 16) == CookieOf(proof));
  // Before the answer, only the small tensor comes: the big one waits to be lent.
  RawFrame first = ReadFrame(fd);
  CHECK(first.kind == 2);
  CHECK(first.body.find("small") != std::string::npos);
  RawFrame first_data = ReadFrame(fd);
  CHECK(first_data.kind == 3);
  // "I can read your memory": the big tensor is lent, not written.
  WriteAll(fd, Frame(5, 0, ""));
  RawFrame begin = ReadFrame(fd);
  REQUIRE(begin.kind == 2);
  CHECK(begin.body.find("big") != std::string::npos);
  RawFrame lend = ReadFrame(fd);
  REQUIRE(lend.kind == 4);
  CHECK(lend.stream == begin.stream);
  uint64_t where;
  REQUIRE(lend.body.size() == 8);
  std::memcpy(&where, lend.body.data(), 8);
  CHECK(where == reinterpret_cast<uint64_t>(big.raw_data()));
  // Held while lent, let go once returned.
  CHECK_FALSE(big.RefCountIsOne());
  WriteAll(fd, Frame(6, lend.stream, ""));
  CHECK(Eventually([&] { return big.RefCountIsOne(); }));
  // An answer that is not one of the protocol's closes the connection with DataLoss.
  WriteAll(fd, Frame(9, 0, ""));
  REQUIRE(Eventually([&] { return a->data_loss_count() == 1; }));
  {
    std::unique_lock<std::mutex> l(in_a.mu);
    REQUIRE(in_a.cv.wait_for(l, std::chrono::seconds(10), [&] { return !in_a.failures.empty(); }));
    CHECK(in_a.failures.front().first == kB);
    CHECK(errors::IsDataLoss(in_a.failures.front().second));
  }
  ::close(fd);
  ::close(lfd);
}

TEST_CASE("same host: a proof that does not check out, or a receiver with the path off, is answered 'not the same host'") {
  const ProcessProof& proof = ThisProcessProof();
  std::string wrong = CookieOf(proof);
  wrong[3] ^= 1;
  struct Case {
    const char* name;
    bool receiver_on;
    uint32_t pid;
    uint64_t address;
    std::string cookie;
    uint8_t answer;
  };
  const std::vector<Case> cases = {
      {"the right proof", true, proof.pid, proof.address, CookieOf(proof), 5},
      {"a wrong cookie", true, proof.pid, proof.address, wrong, 7},
      {"an address not mapped", true, proof.pid, 8, CookieOf(proof), 7},
      {"a pid with no process", true, 0x7ffffff0u, proof.address, CookieOf(proof), 7},
      {"the receiver's path off", false, proof.pid, proof.address, CookieOf(proof), 7},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    Pair p(size_t{4} << 20, c.receiver_on);
    const int fd = Dial(p.b->port());
    SetTimeout(fd);
    WriteAll(fd, HelloWithProof(kA, 111, c.pid, c.address, c.cookie));
    RawFrame answer = ReadFrame(fd);
    CHECK(answer.kind == c.answer);
    CHECK(answer.body.empty());
    ::close(fd);
  }
}

TEST_CASE("same host: hostile lend frames close the connection with DataLoss, never crash, and the endpoint goes on") {
  Pair p(size_t{4} << 20, /*same_host=*/true);
  const ProcessProof& proof = ThisProcessProof();
  const std::string plain = Hello(kA, 111);
  const std::string proven = HelloWithProof(kA, 111, proof.pid, proof.address, CookieOf(proof));
  std::vector<char> source(size_t{1} << 20, 'q');  // memory a lend may point at
  const uint64_t src = reinterpret_cast<uint64_t>(source.data());
  const std::string begin = Begin(1, DT_FLOAT, {int64_t{1} << 18}, uint64_t{1} << 20);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a lend from a peer that offered no proof", plain + begin + Lend(1, src)},
      {"a lend at an address the sender does not map", proven + begin + Lend(1, 4096)},
      {"a lend running past the sender's mapping", proven + begin + Lend(1, uint64_t{0x7fffffffffff} - 4096)},
      {"a lend for an unknown stream", proven + begin + Lend(9, src)},
      {"a lend frame of the wrong length", proven + begin + Frame(4, 1, "abcd")},
      {"a lend of a string tensor", proven + Begin(1, DT_STRING, {1}, 1 << 20) + Lend(1, src)},
      {"a lend of an empty tensor", proven + Begin(1, DT_FLOAT, {0}, 0) + Lend(1, src)},
      {"a second lend of a stream", proven + begin + Lend(1, src) + Lend(1, src)},
      {"data for a lent stream", proven + begin + Lend(1, src) + Frame(3, 1, "abcd")},
  };
  uint64_t expected = 0;
  for (const auto& [name, bytes] : cases) {
    INFO(name);
    SendHostile(p.b->port(), bytes, /*half_close=*/false);  // a sender that stays while its lend is read
    ++expected;
    CHECK(Eventually([&] { return p.b->data_loss_count() >= expected; }));
    CHECK(p.b->data_loss_count() == expected);
  }
  // B still takes tensors, lent ones too, from its real peer.
  const uint64_t lent_before = p.b->same_host_count();
  Tensor big = Floats(int64_t{1} << 19, 0.1f);
  REQUIRE(SendTensor(*p.a, kB, 3, Key("after"), big, false).ok());
  Inbox::Item got = p.in_b.Next();
  // The hostile tensors' rejects come first, and tensors a hostile peer lent before its bad frame.
  while (got.key != Key("after").str()) got = p.in_b.Next();
  REQUIRE(got.status.ok());
  CHECK(std::memcmp(got.value.raw_data(), big.raw_data(), big.TotalBytes()) == 0);
  CHECK(p.b->same_host_count() == lent_before + 1);
}

TEST_CASE("drain: a sender about to end lets its peer read what it sent, lent or over TCP; a peer that never reads "
          "bounds the wait") {
  for (bool same_host : {true, false}) {
    INFO("same host " << same_host);
    Pair p(size_t{4} << 20, same_host);
    Tensor big = Floats(int64_t{16} << 20, 0.5f);  // 64 MiB: lent, or many chunks
    REQUIRE(SendTensor(*p.a, kB, 1, Key("big"), big, false).ok());
    REQUIRE(p.a->Drain(std::chrono::seconds(20)));
    p.a->Stop();  // gone: whatever it had not delivered would be lost now
    auto item = p.in_b.Next();
    REQUIRE(item.status.ok());
    REQUIRE(item.value.shape() == big.shape());
    CHECK(std::memcmp(item.value.raw_data(), big.raw_data(), big.TotalBytes()) == 0);
  }
  // A peer that accepts and never reads: the bytes cannot all go, Drain says so at its bound.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(::listen(listener, 4) == 0);
  socklen_t len = sizeof(addr);
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  Pair p(size_t{4} << 20, /*same_host=*/false);
  Introduce(p.ma, kB, ntohs(addr.sin_port), 222);
  REQUIRE(SendTensor(*p.a, kB, 1, Key("big"), Floats(int64_t{16} << 20, 0.5f), false).ok());
  CHECK_FALSE(p.a->Drain(std::chrono::milliseconds(300)));
  ::close(listener);
}
