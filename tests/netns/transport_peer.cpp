// transport_peer: one endpoint of the tensor transport in a process of its
// own, for the multi-host tests and benchmarks (tests/netns/hosts.sh runs one
// per simulated host): which path carried the tensors (the same-host path,
// comm/same_host.hpp, or TCP) and at what rate.
//
//   transport_peer recv MY_IP PORT PEER_IP PEER_PORT N
//       receives N tensors from the sender at PEER_IP:PEER_PORT, then prints
//       {"received":N,"same_host":K,"bytes":B,"seconds":S,"gbit_s":R}
//       (S and R from the first tensor's arrival to the last's: N-1 tensors)
//       and exits 0; exit 1 when they do not all come within 60 s.
//   transport_peer send MY_IP PORT PEER_IP PEER_PORT N BYTES
//       sends N float32 tensors of BYTES each to the receiver at
//       PEER_IP:PEER_PORT, waits (at most 60 s) until every one is written or
//       read from its memory, prints {"sent":N,"lent":K} and exits 0.
// Both print "listening" once their transport is bound. Task names:
// /job:recv/task:0 and /job:send/task:0, incarnations 2 and 1. The sender
// retries its first tensor until the receiver is there (at most 30 s).
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "actorflow/comm/membership.hpp"
#include "actorflow/comm/tensor_transport.hpp"

using namespace actorflow;

namespace {

constexpr char kRecv[] = "/job:recv/replica:0/task:0";
constexpr char kSend[] = "/job:send/replica:0/task:0";

int Usage() {
  std::fprintf(stderr,
               "usage: transport_peer recv MY_IP PORT PEER_IP PEER_PORT N\n"
               "       transport_peer send MY_IP PORT PEER_IP PEER_PORT N BYTES\n");
  return 2;
}

struct Counter {
  std::mutex mu;
  std::condition_variable cv;
  int delivered = 0, rejected = 0;
  uint64_t bytes = 0;
  std::chrono::steady_clock::time_point first, last;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) return Usage();
  const std::string role = argv[1], my_ip = argv[2], peer_ip = argv[4];
  const int port = std::atoi(argv[3]), peer_port = std::atoi(argv[5]), n = std::atoi(argv[6]);
  const bool sender = role == "send";
  if ((role != "recv" && !sender) || (sender && argc < 8) || n <= 0) return Usage();
  const std::string me = sender ? kSend : kRecv, peer = sender ? kRecv : kSend;
  Membership membership(me, sender ? 1 : 2);
  Counter c;
  TransportCallbacks cb;
  ChannelHandler& h = cb.handler(Channel::kCollective);
  h.deliver = [&](const std::string&, std::string, Tensor value, bool) {
    std::lock_guard<std::mutex> l(c.mu);
    const auto now = std::chrono::steady_clock::now();
    if (c.delivered++ == 0) c.first = now;
    else c.bytes += value.TotalBytes();
    c.last = now;
    c.cv.notify_all();
  };
  h.reject = [&](const std::string&, const std::string&, Status) {
    std::lock_guard<std::mutex> l(c.mu);
    ++c.rejected;
    c.cv.notify_all();
  };
  TransportOptions o;
  o.task = me;
  o.incarnation = sender ? 1 : 2;
  o.membership = &membership;
  o.bind_host = my_ip;
  o.port = static_cast<uint16_t>(port);
  std::unique_ptr<TensorTransport> t;
  Status s = TensorTransport::Start(o, cb, &t);
  if (!s.ok()) {
    std::fprintf(stderr, "transport_peer: %s\n", s.ToString().c_str());
    return 1;
  }
  s = membership.Update(TaskRecord::At(peer, peer_ip, static_cast<uint16_t>(peer_port), sender ? 2 : 1));
  if (!s.ok()) {
    std::fprintf(stderr, "transport_peer: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("listening\n");
  std::fflush(stdout);
  if (!sender) {
    std::unique_lock<std::mutex> l(c.mu);
    if (!c.cv.wait_for(l, std::chrono::seconds(60), [&] { return c.delivered >= n; })) {
      std::fprintf(stderr, "transport_peer: %d of %d tensors in 60 s\n", c.delivered, n);
      return 1;
    }
    const double secs = std::chrono::duration<double>(c.last - c.first).count();
    std::printf("{\"received\":%d,\"same_host\":%llu,\"bytes\":%llu,\"seconds\":%.4f,\"gbit_s\":%.4f}\n", c.delivered,
                static_cast<unsigned long long>(t->same_host_count()), static_cast<unsigned long long>(c.bytes),
                secs, secs > 0 ? static_cast<double>(c.bytes) * 8 / secs / 1e9 : 0.0);
    std::fflush(stdout);
    t->Stop();
    return 0;
  }
  const int64_t bytes = std::atoll(argv[7]);
  Tensor value(DT_FLOAT, TensorShape{std::max<int64_t>(1, bytes / 4)});
  for (int64_t i = 0; i < value.NumElements(); ++i) value.data<float>()[i] = static_cast<float>(i);
  // The receiver may not be listening yet: a rejected first tensor is sent again.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    if (!(s = t->Send(peer, Channel::kCollective, "first", value)).ok()) break;
    if (!t->Drain(std::chrono::seconds(30))) break;
    std::unique_lock<std::mutex> l(c.mu);
    if (c.rejected == 0 || std::chrono::steady_clock::now() > give_up) break;
    c.rejected = 0;
    l.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (void)membership.Update(TaskRecord::At(peer, peer_ip, static_cast<uint16_t>(peer_port), 2));
  }
  for (int i = 1; i < n && s.ok(); ++i) s = t->Send(peer, Channel::kCollective, "next", value);
  const bool drained = s.ok() && t->Drain(std::chrono::seconds(60));
  std::printf("{\"sent\":%d,\"lent\":%llu,\"rejected\":%d}\n", n, static_cast<unsigned long long>(t->lent_count()),
              c.rejected);
  std::fflush(stdout);
  t->Stop();
  if (!drained) std::fprintf(stderr, "transport_peer: %s\n", s.ok() ? "not drained in 60 s" : s.ToString().c_str());
  return drained && c.rejected == 0 ? 0 : 1;
}
