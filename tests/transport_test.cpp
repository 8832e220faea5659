// The tensor transport (comm/tensor_transport.hpp) between two endpoints in
// this process: tensors of every kind cross intact (numbers, strings, dead
// ones, 16-bit truncated floats, loop keys); a small tensor is not held
// behind a huge one; a tensor from an incarnation the receiver does not know
// is rejected with Aborted; and hostile bytes (random, truncated, huge dims,
// bad dtype, lengths that disagree) close the connection with DataLoss
// without a crash, while the endpoint goes on serving its peers.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "actorflow/comm/tensor_transport.hpp"
#include "test_util.hpp"
#include "transport_util.hpp"

using namespace actorflow;

using namespace actorflow::test;

TEST_CASE("transport: tensors of every kind cross intact") {
  Pair p;
  Tensor floats = test::MakeTensor<float>({1.5f, -2.f, 3.25f}, TensorShape{3});
  Tensor ints = test::MakeTensor<int64_t>({1, -2, int64_t{1} << 40, 4}, TensorShape{2, 2});
  Tensor strings = test::Strings({"", "x", std::string(70000, 'q'), std::string("a\0b", 3)});
  Tensor empty(DT_INT32, TensorShape{0, 5});
  REQUIRE(SendTensor(*p.a, kB, 1, Key("f"), floats, false).ok());
  REQUIRE(SendTensor(*p.a, kB, 1, Key("i"), ints, false).ok());
  REQUIRE(SendTensor(*p.a, kB, 2, Key("s", 3, 4), strings, false).ok());
  REQUIRE(SendTensor(*p.a, kB, 2, Key("dead"), Tensor(), true).ok());
  REQUIRE(SendTensor(*p.a, kB, 2, Key("empty"), empty, false).ok());
  // The writer takes queued tensors in turn, a chunk each, so a tensor may
  // arrive before one queued ahead of it (the dead one before the strings).
  std::map<std::string, Inbox::Item> got;
  for (int n = 0; n < 5; ++n) {
    Inbox::Item item = p.in_b.Next();
    got[item.key] = std::move(item);
  }
  REQUIRE(got.size() == 5);
  const auto& f = got[Key("f").str()];
  CHECK(f.step == 1);
  CHECK(test::Values<float>(f.value) == test::Values<float>(floats));
  const auto& i = got[Key("i").str()];
  CHECK(i.value.shape() == ints.shape());
  CHECK(test::Values<int64_t>(i.value) == test::Values<int64_t>(ints));
  const auto& s = got[Key("s", 3, 4).str()];
  CHECK(s.step == 2);
  CHECK(test::Values<std::string>(s.value) == test::Values<std::string>(strings));
  CHECK(got[Key("dead").str()].dead);
  const auto& e = got[Key("empty").str()];
  CHECK(e.value.shape() == empty.shape());
  CHECK(e.value.dtype() == DT_INT32);
  // And the other way.
  const RendezvousKey back = MakeRendezvousKey(std::string(kB) + "/device:CPU:0", 222, std::string(kA) + "/device:CPU:0",
                                               "back", 0, 0);
  REQUIRE(SendTensor(*p.b, kA, 9, back, floats, false).ok());
  CHECK(test::Values<float>(p.in_a.Next().value) == test::Values<float>(floats));
  CHECK(p.a->data_loss_count() == 0);
  CHECK(p.b->data_loss_count() == 0);
}

TEST_CASE("transport: float32 truncated to 16 bits keeps the upper half of each value, dtype and shape") {
  Pair p;
  Tensor x = test::MakeTensor<float>({1.f, 3.14159265f, -1e-20f, 65504.f, 1e30f, 0.1f}, TensorShape{2, 3});
  REQUIRE(SendTensor(*p.a, kB, 1, Key("t"), x, false, /*truncate16=*/true).ok());
  auto got = p.in_b.Next();
  REQUIRE(got.value.dtype() == DT_FLOAT);
  CHECK(got.value.shape() == x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x.data<float>()[i], 4);
    bits &= 0xffff0000u;
    float expect;
    std::memcpy(&expect, &bits, 4);
    CHECK(got.value.data<float>()[i] == expect);
  }
}

TEST_CASE("transport: a small tensor is not held behind a huge one, over TCP and read from the sender's memory") {
  const bool same_host = GENERATE(false, true);
  INFO("same host " << same_host);
  Pair p(size_t{1} << 20, same_host);  // 1 MiB chunks (or pieces read from the sender)
  Tensor big(DT_FLOAT, TensorShape{(int64_t{64} << 20) / 4});
  std::memset(big.raw_data(), 7, big.TotalBytes());
  REQUIRE(SendTensor(*p.a, kB, 1, Key("big"), big, false).ok());
  REQUIRE(SendTensor(*p.a, kB, 1, Key("small"), Tensor::Scalar<float>(1.f), false).ok());
  CHECK(p.in_b.Next().key == Key("small").str());  // 64 chunks of the big one were queued first
  auto b = p.in_b.Next();
  CHECK(b.key == Key("big").str());
  CHECK(std::memcmp(b.value.raw_data(), big.raw_data(), big.TotalBytes()) == 0);
  CHECK(p.b->same_host_count() == (same_host ? 1u : 0u));
}

TEST_CASE("transport: small tensors written by their callers' threads interleave with queued large ones, all intact") {
  // Senders on four threads (small tensors go out on the caller's thread when
  // the connection is idle; what the socket does not take, the transport's
  // thread finishes) beside large tensors queued behind and between them.
  const bool same_host = GENERATE(false, true);
  INFO("same host " << same_host);
  Pair p(size_t{1} << 20, same_host);
  constexpr int kThreads = 4, kPerThread = 300, kBig = 6;
  auto value = [](int t, int i) {
    const int64_t n = 1 + (t * 7919 + i * 104729) % (16 << 10);  // 4 B .. 64 KiB of int32
    Tensor v(DT_INT32, TensorShape{n});
    for (int64_t k = 0; k < n; ++k) v.data<int32_t>()[k] = static_cast<int32_t>(t * 1000003 + i * 31 + k);
    return v;
  };
  Tensor big(DT_FLOAT, TensorShape{(int64_t{8} << 20) / 4});
  for (int64_t k = 0; k < big.NumElements(); ++k) big.data<float>()[k] = static_cast<float>(k % 65521);
  std::vector<std::thread> senders;
  std::atomic<int> failed_sends{0};  // the senders count; this thread checks
  for (int t = 0; t < kThreads; ++t)
    senders.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i)
        if (!SendTensor(*p.a, kB, 1, Key("s" + std::to_string(t) + "_" + std::to_string(i)), value(t, i), false).ok())
          failed_sends.fetch_add(1);
    });
  for (int b = 0; b < kBig; ++b) REQUIRE(SendTensor(*p.a, kB, 1, Key("big" + std::to_string(b)), big, false).ok());
  for (auto& s : senders) s.join();
  CHECK(failed_sends.load() == 0);
  std::map<std::string, Tensor> got;
  for (int n = 0; n < kThreads * kPerThread + kBig; ++n) {
    auto item = p.in_b.Next();
    REQUIRE(item.status.ok());
    CHECK(got.emplace(item.key, item.value).second);  // each once
  }
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kPerThread; ++i) {
      auto it = got.find(Key("s" + std::to_string(t) + "_" + std::to_string(i)).str());
      REQUIRE(it != got.end());
      const Tensor want = value(t, i);
      REQUIRE(it->second.shape() == want.shape());
      CHECK(std::memcmp(it->second.raw_data(), want.raw_data(), want.TotalBytes()) == 0);
    }
  for (int b = 0; b < kBig; ++b) {
    auto it = got.find(Key("big" + std::to_string(b)).str());
    REQUIRE(it != got.end());
    CHECK(std::memcmp(it->second.raw_data(), big.raw_data(), big.TotalBytes()) == 0);
  }
  CHECK(p.b->data_loss_count() == 0);
  CHECK(p.b->same_host_count() == (same_host ? static_cast<uint64_t>(kBig) : 0u));
}

TEST_CASE("transport: messages queued for the transport's thread (SendFlags::queued) arrive intact beside direct ones, "
          "in the order one thread sent them") {
  Pair p;
  constexpr int kEach = 50;
  for (int i = 0; i < kEach; ++i) {
    SendFlags queued;
    queued.queued = true;
    REQUIRE(p.a->Send(kB, Channel::kRendezvous, EncodeRendezvousMeta(1, Key("q" + std::to_string(i))),
                      Tensor::Scalar<int32_t>(i), queued)
                .ok());
    REQUIRE(SendTensor(*p.a, kB, 1, Key("d" + std::to_string(i)), Tensor::Scalar<int32_t>(-i), false).ok());
  }
  std::map<std::string, int32_t> got;
  std::vector<std::string> order;
  for (int n = 0; n < 2 * kEach; ++n) {
    auto item = p.in_b.Next();
    REQUIRE(item.status.ok());
    got[item.key] = item.value.scalar<int32_t>();
    order.push_back(item.key);
  }
  // One chunk each, from one thread: none overtakes one sent before it
  // (a direct write waits for the queued ones ahead of it; the collective
  // executor sends a bucket plan's text before the tensors that name it).
  std::vector<std::string> sent;
  for (int i = 0; i < kEach; ++i) {
    sent.push_back(Key("q" + std::to_string(i)).str());
    sent.push_back(Key("d" + std::to_string(i)).str());
  }
  CHECK(order == sent);
  for (int i = 0; i < kEach; ++i) {
    CHECK(got[Key("q" + std::to_string(i)).str()] == i);
    CHECK(got[Key("d" + std::to_string(i)).str()] == -i);
  }
  CHECK(p.b->data_loss_count() == 0);
}

TEST_CASE("transport: tensors sent while the receiver stalls (the sockets full, writes cut short) arrive whole") {
  // The receiver's thread stalls in its first delivery while the sender
  // writes 64 KiB tensors until the socket buffers are full: direct writes
  // then fall short or find no room, and the transport's thread must finish
  // each one before anything else goes on the connection.
  Inbox in_b;
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool open = false;
  std::atomic<bool> stalled{false};  // the receiver's thread is in the gate's delivery
  TransportCallbacks cb = in_b.Callbacks(kB);
  auto deliver = cb.handler(Channel::kRendezvous).deliver;
  cb.handler(Channel::kRendezvous).deliver = [&](const std::string& from, std::string meta, Tensor v, bool dead) {
    if (meta == EncodeRendezvousMeta(1, Key("gate"))) {
      stalled = true;
      std::unique_lock<std::mutex> l(gate_mu);
      gate_cv.wait_for(l, std::chrono::seconds(10), [&] { return open; });  // bounded
    }
    deliver(from, std::move(meta), std::move(v), dead);
  };
  Inbox in_a;
  Membership ma(kA, 111), mb(kB, 222);
  std::unique_ptr<TensorTransport> a, b;
  TransportOptions oa, ob;
  oa.task = kA;
  oa.incarnation = 111;
  oa.membership = &ma;
  ob.task = kB;
  ob.incarnation = 222;
  ob.membership = &mb;
  REQUIRE(TensorTransport::Start(oa, in_a.Callbacks(kA), &a).ok());
  REQUIRE(TensorTransport::Start(ob, cb, &b).ok());
  Introduce(ma, kB, b->port(), 222);
  Introduce(mb, kA, a->port(), 111);
  REQUIRE(SendTensor(*a, kB, 1, Key("gate"), Tensor::Scalar<int32_t>(0), false).ok());
  constexpr int kCount = 600;  // 600 x 64 KiB: far more than the sockets hold
  auto value = [](int i) {
    Tensor v(DT_INT32, TensorShape{(int64_t{64} << 10) / 4 - (i % 3)});
    for (int64_t k = 0; k < v.NumElements(); ++k) v.data<int32_t>()[k] = static_cast<int32_t>(i * 65537 + k);
    return v;
  };
  REQUIRE(WaitUntil([&] { return stalled.load(); }, std::chrono::seconds(10)));  // the gate is delivered and stalls
  for (int i = 0; i < kCount; ++i) REQUIRE(SendTensor(*a, kB, 1, Key("t" + std::to_string(i)), value(i), false).ok());
  {
    std::lock_guard<std::mutex> l(gate_mu);
    open = true;
  }
  gate_cv.notify_all();
  CHECK(in_b.Next().key == Key("gate").str());
  std::map<std::string, Tensor> got;
  for (int n = 0; n < kCount; ++n) {
    auto item = in_b.Next();
    REQUIRE(item.status.ok());
    got.emplace(item.key, item.value);
  }
  for (int i = 0; i < kCount; ++i) {
    auto it = got.find(Key("t" + std::to_string(i)).str());
    REQUIRE(it != got.end());
    const Tensor want = value(i);
    REQUIRE(it->second.shape() == want.shape());
    CHECK(std::memcmp(it->second.raw_data(), want.raw_data(), want.TotalBytes()) == 0);
  }
  CHECK(b->data_loss_count() == 0);
}

TEST_CASE("transport: a tensor from an incarnation the receiver does not know is rejected: Aborted, task restarted") {
  Pair p;
  Introduce(p.mb, kA, p.a->port(), 999);  // B knows another incarnation of A
  REQUIRE(SendTensor(*p.a, kB, 5, Key("x"), Tensor::Scalar<float>(1.f), false).ok());
  auto r = p.in_b.Next();
  CHECK(r.step == 5);
  CHECK(errors::IsAborted(r.status));
  CHECK(r.status.message().find("restarted") != std::string::npos);
  CHECK(SendTensor(*p.a, "/job:nobody/replica:0/task:0", 5, Key("x"), Tensor::Scalar<float>(1.f), false).code() ==
        Code::kNotFound);
}

TEST_CASE("transport: a closed connection reports its peer failed only for the peer's current incarnation") {
  auto failures_of = [](Inbox& in) {
    std::lock_guard<std::mutex> l(in.mu);
    return std::vector<std::pair<std::string, Status>>(in.failures.begin(), in.failures.end());
  };
  SECTION("the peer ends: reported") {
    Pair p;
    REQUIRE(SendTensor(*p.a, kB, 1, Key("x"), Tensor::Scalar<float>(1.f), false).ok());
    REQUIRE(p.in_b.Next().status.ok());
    p.b.reset();  // its end of A's connection closes
    std::unique_lock<std::mutex> l(p.in_a.mu);
    REQUIRE(p.in_a.cv.wait_for(l, std::chrono::seconds(20), [&] { return !p.in_a.failures.empty(); }));
    CHECK(p.in_a.failures.front().first == kB);
    CHECK(errors::IsUnavailable(p.in_a.failures.front().second));
  }
  SECTION("the peer restarted (a new incarnation known) and the old one ends: not reported") {
    Pair p;
    REQUIRE(SendTensor(*p.a, kB, 1, Key("x"), Tensor::Scalar<float>(1.f), false).ok());
    REQUIRE(p.in_b.Next().status.ok());
    const uint16_t port = p.b->port();
    Introduce(p.ma, kB, port, 333);  // as a session finds the restarted task
    p.b.reset();                     // the old incarnation's end of A's connection closes
    // A drops the old connection as its membership replaces B (a report of
    // it would have come by the time it is counted); then a send to the new
    // incarnation, which is not listening: that failure is the current
    // one's and is reported.
    REQUIRE(WaitUntil([&] { return p.a->failed_connection_count() >= 1; }, std::chrono::seconds(20)));
    CHECK(failures_of(p.in_a).empty());
    SendTensor(*p.a, kB, 2, Key("y"), Tensor::Scalar<float>(2.f), false);
    std::unique_lock<std::mutex> l(p.in_a.mu);
    REQUIRE(p.in_a.cv.wait_for(l, std::chrono::seconds(20), [&] { return !p.in_a.failures.empty(); }));
    for (const auto& [task, status] : p.in_a.failures) {
      INFO(status.ToString());
      CHECK(task == kB);
      CHECK(status.message().find("closed the connection") == std::string::npos);
    }
  }
}

TEST_CASE("transport: its peers are the membership's: removed is NotFound and loses its connection; a failure is marked there") {
  Pair p;
  REQUIRE(SendTensor(*p.a, kB, 1, Key("x"), Tensor::Scalar<float>(1.f), false).ok());
  REQUIRE(p.in_b.Next().status.ok());
  // This process is never its own peer, whatever its record says.
  Introduce(p.ma, kA, p.a->port(), 111);
  CHECK(SendTensor(*p.a, kA, 1, Key("x"), Tensor::Scalar<float>(1.f), false).code() == Code::kNotFound);
  // B leaves the cluster: no sends to it, and its connection is dropped (not reported as a failure).
  p.ma.Remove(kB);
  CHECK(SendTensor(*p.a, kB, 2, Key("y"), Tensor::Scalar<float>(2.f), false).code() == Code::kNotFound);
  REQUIRE(WaitUntil([&] { return p.a->failed_connection_count() >= 1; }, std::chrono::seconds(20)));
  {
    std::lock_guard<std::mutex> l(p.in_a.mu);
    CHECK(p.in_a.failures.empty());
  }
  // Found again (as a session does): a new connection.
  Introduce(p.ma, kB, p.b->port(), 222);
  REQUIRE(SendTensor(*p.a, kB, 3, Key("z"), Tensor::Scalar<float>(3.f), false).ok());
  auto r = p.in_b.Next();
  REQUIRE(r.status.ok());
  CHECK(r.step == 3);
  // B ends: A's connection to it fails, and A's membership marks B failed (at its incarnation).
  p.b.reset();
  REQUIRE(WaitUntil([&] { return p.ma.Find(kB)->liveness == TaskRecord::Liveness::kFailed; },
                    std::chrono::seconds(20)));
  const auto b = p.ma.Find(kB);
  CHECK(b->incarnation == 222);
  CHECK(errors::IsUnavailable(b->failure));
}

TEST_CASE("transport: hostile bytes close the connection with DataLoss, never crash, and the endpoint goes on") {
  Pair p;
  const uint16_t port = p.b->port();
  const std::string hello = Hello(kA, 111);
  std::vector<std::pair<std::string, std::string>> cases = {
      {"bad magic", std::string(16, '\x55')},
      {"a frame before the hello", Begin(1, DT_FLOAT, {1}, 4)},
      {"a hello with a huge task name", Frame(1, 0, std::string(8, '\0') + std::string("\xff\xff\xff\x0f", 4))},
      {"huge dims", hello + Begin(1, DT_FLOAT, {int64_t{1} << 40, int64_t{1} << 40}, 16)},
      {"dims that disagree with the payload", hello + Begin(1, DT_FLOAT, {1000}, 16)},
      {"a bad dtype", hello + Begin(1, 12345, {1}, 4)},
      {"negative dims", hello + Begin(1, DT_FLOAT, {-5}, 0)},
      {"a header body over the cap", hello + Frame(2, 1, std::string(100000, 'x'))},
      {"data for an unknown stream", hello + Frame(3, 42, "abcd")},
      {"a chunk longer than its tensor", hello + Begin(1, DT_FLOAT, {1}, 4) + Frame(3, 1, "abcdefgh")},
      {"a payload over the cap", hello + Begin(1, DT_INT8, {int64_t{1} << 40}, uint64_t{1} << 40)},
      {"a truncated frame", hello + Begin(1, DT_FLOAT, {4}, 16) + Frame(3, 1, "abcdefghijklmnop").substr(0, 20)},
      {"string lengths past the payload",
       hello + Begin(1, DT_STRING, {1}, 9) + Frame(3, 1, std::string("\xff\0\0\0\0\0\0\0x", 9))},
      {"unknown flags", hello + Frame(2, 1, "", 0x80)},
      {"a tensor for another task",
       hello + Begin(1, DT_FLOAT, {1}, 4,
                     MakeRendezvousKey(std::string(kA) + "/device:CPU:0", 111, "/job:c/replica:0/task:0/device:CPU:0",
                                       "x", 0, 0)
                         .str())},
  };
  std::mt19937 rng(42);
  for (int r = 0; r < 20; ++r) {
    std::string junk(1 + rng() % 300, '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng());
    if (r % 2) junk = hello + junk;
    cases.push_back({"random bytes " + std::to_string(r), junk});
  }
  uint64_t expected = 0;
  for (const auto& [name, bytes] : cases) {
    INFO(name);
    SendHostile(port, bytes);
    // Random bytes may also end cleanly between frames: count only what must be data loss.
    if (name.rfind("random", 0) != 0) {
      ++expected;
      WaitUntil([&] { return p.b->data_loss_count() >= expected; }, std::chrono::seconds(10));
      CHECK(p.b->data_loss_count() == expected);
    } else {
      expected = p.b->data_loss_count();
    }
  }
  // B still takes tensors from its real peer.
  REQUIRE(SendTensor(*p.a, kB, 3, Key("after"), Tensor::Scalar<float>(2.f), false).ok());
  Inbox::Item got = p.in_b.Next();
  while (!got.status.ok()) got = p.in_b.Next();  // rejects of the hostile tensors' steps come first
  CHECK(got.key == Key("after").str());
}
