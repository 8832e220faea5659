// Helpers for the tensor transport's tests (transport_test, same_host_test):
// an inbox of what an endpoint delivered on its rendezvous channel (a step id
// and key as each message's meta, as the rendezvous actor's), a connected
// pair of endpoints in this process (each with its own membership, as two
// processes have), a send of a tensor under a step id and key, and the wire
// frames (comm/frame_codec.hpp) for hostile peers.
// The inbox's callbacks run on the transport's thread and only record what
// came (under its mutex); Next, Pair, Dial and SendHostile assert, so they
// are called on the test's main thread only (Catch2 2.x is not thread-safe).
#pragma once

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actorflow/comm/frame_codec.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/comm/tensor_transport.hpp"
#include "actorflow/net/rendezvous_key.hpp"
#include "wait_until.hpp"

namespace actorflow {
namespace test {

constexpr char kA[] = "/job:a/replica:0/task:0";
constexpr char kB[] = "/job:b/replica:0/task:0";

struct Inbox {
  struct Item {
    int64_t step;
    std::string key;
    Tensor value;
    bool dead;
    Status status;  // not OK: a reject
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Item> items;
  std::deque<std::pair<std::string, Status>> failures;

  // The callbacks of the endpoint of `task`.
  TransportCallbacks Callbacks(const std::string& task) {
    TransportCallbacks cb;
    ChannelHandler& h = cb.handler(Channel::kRendezvous);
    h.check = [task](const std::string&, const std::string& meta) { return CheckRendezvousMeta(meta, task); };
    h.deliver = [this](const std::string&, std::string meta, Tensor v, bool dead) {
      int64_t step = 0;
      RendezvousKey key;
      (void)DecodeRendezvousMeta(meta, &step, &key);  // checked when it began
      std::lock_guard<std::mutex> l(mu);
      items.push_back({step, key.str(), std::move(v), dead, Status::OK()});
      cv.notify_all();
    };
    h.reject = [this](const std::string&, const std::string& meta, Status s) {
      int64_t step = 0;
      (void)DecodeRendezvousMeta(meta, &step, nullptr);
      std::lock_guard<std::mutex> l(mu);
      items.push_back({step, "", Tensor(), false, std::move(s)});
      cv.notify_all();
    };
    cb.peer_failed = [this](const std::string& task, Status s) {
      std::lock_guard<std::mutex> l(mu);
      failures.emplace_back(task, std::move(s));
      cv.notify_all();
    };
    return cb;
  }
  Item Next() {
    std::unique_lock<std::mutex> l(mu);
    REQUIRE(cv.wait_for(l, std::chrono::seconds(20), [&] { return !items.empty(); }));
    Item i = std::move(items.front());
    items.pop_front();
    return i;
  }
};

// What a session tells the membership `m` of a task: it listens on loopback `port`, at `incarnation`.
inline void Introduce(Membership& m, const std::string& task, uint16_t port, uint64_t incarnation) {
  REQUIRE(m.Update(TaskRecord::At(task, "127.0.0.1", port, incarnation)).ok());
}

struct Pair {
  Inbox in_a, in_b;
  Membership ma{kA, 111}, mb{kB, 222};  // each endpoint's process's (they outlive the endpoints)
  std::unique_ptr<TensorTransport> a, b;
  // `same_host` off: every byte over TCP, as between machines; `faults_a`:
  // what A's sends meet (test-only fault injection, comm/fault_injection.hpp).
  // `spin`: both io threads' spin window (comm/io_poller.hpp; unset: the default).
  explicit Pair(size_t chunk = size_t{4} << 20, bool same_host = false, TransportFaults faults_a = {},
                std::optional<std::chrono::microseconds> spin = std::nullopt) {
    TransportOptions oa, ob;
    oa.spin = ob.spin = spin;
    oa.same_host = ob.same_host = same_host;
    oa.test_faults = faults_a;
    oa.task = kA;
    oa.incarnation = 111;
    oa.membership = &ma;
    ob.task = kB;
    ob.incarnation = 222;
    ob.membership = &mb;
    oa.chunk_bytes = ob.chunk_bytes = chunk;
    REQUIRE(TensorTransport::Start(oa, in_a.Callbacks(kA), &a).ok());
    REQUIRE(TensorTransport::Start(ob, in_b.Callbacks(kB), &b).ok());
    Introduce(ma, kB, b->port(), 222);
    Introduce(mb, kA, a->port(), 111);
  }
};

inline RendezvousKey Key(const std::string& name, int64_t frame = 0, int64_t iter = 0) {
  return MakeRendezvousKey(std::string(kA) + "/device:CPU:0", 111, std::string(kB) + "/device:CPU:0", name, frame,
                           iter);
}

// Sends `value` on the rendezvous channel as the rendezvous actor does.
inline Status SendTensor(TensorTransport& t, const std::string& task, int64_t step, const RendezvousKey& key,
                         const Tensor& value, bool is_dead, bool truncate16 = false) {
  return t.Send(task, Channel::kRendezvous, EncodeRendezvousMeta(step, key), value, SendFlags{is_dead, truncate16});
}

// A raw connection to `port` for writing hostile bytes.
inline int Dial(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  return fd;
}

inline std::string Frame(uint8_t kind, uint32_t stream, const std::string& body, uint8_t flags = 0) {
  std::string f;
  frame::AppendHeader(&f, frame::Header{kind, flags, stream, static_cast<uint32_t>(body.size())});
  return f + body;
}

inline std::string Hello(const std::string& task, uint64_t incarnation) {
  std::string f;
  frame::AppendHello(&f, frame::Hello{incarnation, task, false, {}});
  return f;
}

// A begin frame on the rendezvous channel (step 7, key `key`).
inline std::string Begin(uint32_t stream, int32_t dtype, const std::vector<int64_t>& dims, uint64_t payload,
                         const std::string& key = Key("k").str()) {
  std::string f;
  frame::AppendBegin(&f, 0, stream,
                     frame::Begin{static_cast<uint8_t>(Channel::kRendezvous), dtype, payload,
                                  EncodeRendezvousMeta(7, RendezvousKey(key)), dims});
  return f;
}

// A hello carrying a process proof (the same-host offer).
inline std::string HelloWithProof(const std::string& task, uint64_t incarnation, uint32_t pid, uint64_t address,
                                  const std::string& cookie) {
  frame::Hello h{incarnation, task, true, {}};
  h.proof.pid = pid;
  h.proof.address = address;
  std::memcpy(h.proof.cookie.data(), cookie.data(), std::min(cookie.size(), h.proof.cookie.size()));
  std::string f;
  frame::AppendHello(&f, h);
  return f;
}

// A lend frame: stream `stream`'s payload lies at `address` of the sender.
inline std::string Lend(uint32_t stream, uint64_t address) {
  std::string f;
  frame::AppendLend(&f, stream, address);
  return f;
}

// Writes `bytes`, closes the writing half (unless `half_close` is false: a
// peer that stays), and waits (bounded) for the endpoint to close the
// connection. The endpoint's answers to a same-host offer are skipped; the
// connection must end, not time out.
inline void SendHostile(uint16_t port, const std::string& bytes, bool half_close = true) {
  int fd = Dial(port);
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;  // closed by the endpoint already
    off += static_cast<size_t>(n);
  }
  if (half_close) ::shutdown(fd, SHUT_WR);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[256];
  ssize_t got;
  while ((got = ::recv(fd, buf, sizeof buf, 0)) > 0) {
  }
  const int err = got < 0 ? errno : 0;
  CHECK((got == 0 || (err != EAGAIN && err != EWOULDBLOCK)));  // closed or reset, not a timeout hang
  ::close(fd);
}

}  // namespace test
}  // namespace actorflow
