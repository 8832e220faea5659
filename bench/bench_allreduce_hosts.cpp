// All-reduce across simulated hosts (tests/netns/hosts.sh: a network and a PID
// namespace per host, every link limited by tc tbf), one rank per process,
// each started on its host by bench/bench_allreduce_multihost.sh; rank 0
// prints the figures. Float32 sums of 1, 16 and 64 MiB, four ways:
//   actorflow  the collective executor as it chooses from the hosts
//              (comm/collective_layout.hpp: one leader per host): the layout
//              it ran is in each row
//   sharded    the same executor asked for the sharded layout (kSharded)
//   ring-only  the same executor with the flat ring forced (kRing)
//   gloo       torch.distributed.all_reduce, gloo backend
//              (bench/peer_torch_allreduce.py --rank: one process per rank, on
//              the rank's host; rank 0's is driven from here)
// Tasks of one host share its PID namespace, so actorflow's same-host path
// (comm/same_host.hpp) works between them and nowhere else, as on machines.
// Per size the four run in interleaved blocks, round after round after a
// warm-up call each, so a slow spell of the shared machine hits all of them;
// each call is timed alone on rank 0 after a barrier (a one-float all-reduce,
// untimed: no rank starts sending before rank 0's clock runs), the figure is
// the median.
//
//   bench_allreduce_hosts --rank R --ranks N --host IP --dir DIR [--rounds K]
//       [--hosts H --placement block|cyclic --link RATE --link-gbps G]   (labels of the rows)
//       [--python PY --torch-master IP:PORT]                             (rank 0: the gloo peer)
// One row per size and implementation:
//   {"bench":"allreduce_multihost","params":{"hosts","tasks_per_host","placement","link","bytes","impl"},
//    "metric":"busbw","unit":"GB/s","median","ms","algbw_GBps","calls","layout"}
// busbw and algbw in nccl-tests' units (bench/allreduce_ranks.hpp); the
// actorflow row adds vs_sharded, vs_ring_only and vs_gloo (ratios of busbw) and of_link
// (busbw / the link's rate). Exits 1 when a sum is wrong or a peer failed.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "allreduce_ranks.hpp"

using namespace actorflow;
using namespace allreduce_bench;

namespace {

const std::vector<int64_t> kBytes = {1 << 20, 16 << 20, 64 << 20};
enum Impl { kAuto, kSharded, kRing, kGloo, kImpls };  // the order of each round
const char* const kImplNames[kImpls] = {"actorflow", "sharded", "ring-only", "gloo"};

constexpr int64_t kBarrierInstance = 100;

// Calls per block: about 32 MiB (1..8 calls).
int Calls(int64_t bytes) { return static_cast<int>(std::clamp<int64_t>((int64_t{32} << 20) / bytes, 1, 8)); }

struct Args {
  int rank = 0, ranks = 0, rounds = 3, hosts = 0;
  std::string host, dir, placement = "block", link = "1gbit", python, torch_master;
  double link_gbps = 1;
};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--rank") a.rank = std::atoi(v.c_str());
    else if (k == "--ranks") a.ranks = std::atoi(v.c_str());
    else if (k == "--rounds") a.rounds = std::atoi(v.c_str());
    else if (k == "--hosts") a.hosts = std::atoi(v.c_str());
    else if (k == "--host") a.host = v;
    else if (k == "--dir") a.dir = v;
    else if (k == "--placement") a.placement = v;
    else if (k == "--link") a.link = v;
    else if (k == "--link-gbps") a.link_gbps = std::atof(v.c_str());
    else if (k == "--python") a.python = v;
    else if (k == "--torch-master") a.torch_master = v;
    else a.ranks = 0;
  }
  if (argc % 2 != 1 || a.ranks < 2 || a.rank < 0 || a.rank >= a.ranks || a.host.empty() || a.dir.empty() ||
      a.rounds < 1) {
    std::fprintf(stderr, "usage: bench_allreduce_hosts --rank R --ranks N --host IP --dir DIR [--rounds K] "
                         "[--hosts H --placement P --link RATE --link-gbps G] [--python PY --torch-master IP:PORT]\n");
    return 2;
  }
  ActorflowRing chosen(a.rank, a.ranks, a.dir, "auto", true, a.host, CollectiveAlgorithm::kAuto);
  ActorflowRing sharded(a.rank, a.ranks, a.dir, "sharded", true, a.host, CollectiveAlgorithm::kSharded);
  ActorflowRing ring(a.rank, a.ranks, a.dir, "ring", true, a.host, CollectiveAlgorithm::kRing);
  ActorflowRing* const rings[] = {&chosen, &sharded, &ring};
  std::unique_ptr<TorchPeer> torch;
  if (a.rank == 0 && !a.python.empty()) {
    torch = std::make_unique<TorchPeer>(a.python, std::vector<std::string>{"--ranks", std::to_string(a.ranks),
                                                                           "--rank", "0", "--master", a.torch_master});
    if (!torch->ok()) std::fprintf(stderr, "bench_allreduce_hosts: the gloo peer: %s\n", torch->error().c_str());
  }
  const float expected = static_cast<float>(a.ranks * (a.ranks + 1) / 2);
  std::vector<std::array<std::vector<double>, kImpls>> ms(kBytes.size());
  for (size_t s = 0; s < kBytes.size(); ++s) {
    const int64_t n = kBytes[s] / 4;
    Tensor input(DT_FLOAT, TensorShape{n});
    std::fill(input.data<float>(), input.data<float>() + n, static_cast<float>(a.rank + 1));
    for (int round = -1; round < a.rounds; ++round) {  // round -1: one warm-up call each
      const int calls = round < 0 ? 1 : Calls(kBytes[s]);
      for (int impl = 0; impl < kImpls; ++impl) {
        std::vector<double> t;
        if (impl == kGloo) {
          if (torch) t = torch->Block(kBytes[s], calls);  // the other ranks' peers follow their rank 0 (barrier included)
        } else {
          for (int c = 0; c < calls; ++c) {
            Tensor output(DT_FLOAT, TensorShape{n}), one(DT_FLOAT, TensorShape{1});
            rings[impl]->AllReduce(kBarrierInstance, one, &one);
            const auto t0 = std::chrono::steady_clock::now();
            rings[impl]->AllReduce(static_cast<int64_t>(s) + 1, input, &output);
            t.push_back(Elapsed(t0));
            if (output.data<float>()[0] != expected || output.data<float>()[n - 1] != expected)
              Fail(std::string(kImplNames[impl]) + " all-reduce gave " + std::to_string(output.data<float>()[n - 1]));
          }
        }
        if (round >= 0) ms[s][impl].insert(ms[s][impl].end(), t.begin(), t.end());
      }
    }
  }
  // No rank leaves before every rank is done: a peer's connection closing
  // fails the collectives still running (its leaving is a failure to them).
  WriteFile(a.dir + "/done_" + std::to_string(a.rank), "done");
  for (int r = 0; r < a.ranks; ++r) WaitFile(a.dir + "/done_" + std::to_string(r), 300);
  if (a.rank != 0) return 0;
  const int per_host = a.hosts > 0 ? a.ranks / a.hosts : 0;
  for (size_t s = 0; s < kBytes.size(); ++s) {
    std::array<double, kImpls> med{}, bus{};
    for (int i = 0; i < kImpls; ++i) {
      med[i] = Median(ms[s][i]);
      bus[i] = BusBandwidth(kBytes[s], med[i], a.ranks);
    }
    for (int i = 0; i < kImpls; ++i) {
      std::string extra;
      if (i == kAuto)
        extra = ",\"vs_sharded\":" + Json(bus[kAuto] / bus[kSharded], "%.3f") + ",\"vs_ring_only\":" +
                Json(bus[kAuto] / bus[kRing], "%.3f") + ",\"vs_gloo\":" +
                Json(bus[kAuto] / bus[kGloo], "%.3f") + ",\"of_link\":" + Json(bus[kAuto] / (a.link_gbps / 8), "%.3f");
      const std::string layout = i == kGloo ? "flat ring (gloo)" : rings[i]->layout();
      std::printf("{\"bench\":\"allreduce_multihost\",\"params\":{\"hosts\":%d,\"tasks_per_host\":%d,\"placement\":"
                  "\"%s\",\"link\":\"%s\",\"bytes\":%lld,\"impl\":\"%s\"},\"metric\":\"busbw\",\"unit\":\"GB/s\","
                  "\"median\":%s,\"ms\":%s,\"algbw_GBps\":%s,\"calls\":%zu,\"layout\":\"%s\"%s}\n",
                  a.hosts, per_host, a.placement.c_str(), a.link.c_str(), static_cast<long long>(kBytes[s]),
                  kImplNames[i], Json(bus[i]).c_str(), Json(med[i], "%.2f").c_str(),
                  Json(AlgBandwidth(kBytes[s], med[i])).c_str(), ms[s][i].size(), layout.c_str(), extra.c_str());
    }
  }
  std::fflush(stdout);
  if (torch && !torch->ok()) Fail("the gloo peer failed: " + torch->error() + " (its figures are null)");
  return 0;
}
