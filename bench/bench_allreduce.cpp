// All-reduce of 4 KiB .. 64 MiB of float32 among 2 or 3 processes of this
// machine (1 thread each), in ms per all-reduce (rank 0's clock), four ways:
//   actorflow_tcp        actorflow's collective executor (comm/collective_executor.hpp:
//                        a ring over the tensor transport from 3 ranks; 2 ranks
//                        exchange whole tensors) with the same-host path off:
//                        every byte over loopback TCP, as between machines
//   gloo                 gloo's ring all-reduce called directly (Debian's libgloo,
//                        PyTorch's CPU backend) over its TCP transport
//   torch                torch.distributed.all_reduce, gloo backend
//                        (bench/peer_torch_allreduce.py, driven block by block)
//   actorflow_same_host  the executor as it runs on one host: chunks of 256 KiB and
//                        more are read from the peer's memory (comm/same_host.hpp),
//                        smaller ones go over TCP. Not like for like: the peers
//                        copy through TCP; its ratio says so in its name.
// The like-for-like ratios are ratio_tcp_vs_gloo and ratio_tcp_vs_torch (peer ms /
// actorflow_tcp ms: above 1, actorflow is faster). Per size, the four run in
// interleaved blocks (tcp, gloo, torch, same host; round after round, after a
// warm-up block each), so a slow spell of a shared machine hits all of them;
// each call is timed alone, the figure is the median of all calls.
// Which path ran: rank 0's tensors received in the same-host run, and how many
// of them were read from the peer's memory (same_host_tensors); the TCP run
// must read none (the bench fails if it does).
//
// Validation (allreduce_validation), on every rank, through both executors and
// gloo (run it with --ranks 3 for the ring): 1000003 floats per rank, (1) dyadic values whose sum is exact in any
// order: every element equal to the exact sum and to gloo's, bit for bit;
// (2) random floats: every element is a ring's float sum of the ranks' inputs
// (a fold starting at one rank and going round; with 3 ranks the two rings
// start elements at different ranks, so the bits may differ from gloo's, and
// how many do is printed; with 2 ranks none may).
//
//   bench_allreduce [--ranks N] [--rounds R] [PYTHON]   # rank 0; starts the others
// Prints one JSON line per size and one for the validation; exits 1 when a
// check fails or the torch peer could not run (its figures are then null).
// Each size's line has every implementation's bandwidth in nccl-tests' units,
// GB/s (algbw_GBps: bytes / median time; busbw_GBps: algbw x 2 (n-1)/n, what
// each rank's link carries in a ring), to set beside other libraries' figures.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "allreduce_ranks.hpp"

using namespace actorflow;
using namespace allreduce_bench;

namespace {

const std::vector<int64_t> kBytes = {4 << 10, 64 << 10, 256 << 10, 814120 /* the MLP's gradients */, 1 << 20,
                                     4 << 20, 16 << 20, 64 << 20};
constexpr int kWarmupCalls = 2;

// Calls per implementation, size and round: about 512 MiB all-reduced over
// all rounds (15..300 calls in all).
int CallsPerRound(int64_t bytes, int rounds) {
  const int64_t total = std::clamp<int64_t>((int64_t{512} << 20) / bytes, 15, 300);
  return static_cast<int>(std::max<int64_t>(1, (total + rounds - 1) / rounds));
}

// ---- the three implementations in this process ------------------------------

// gloo: a full mesh by a FileStore, ring all-reduce in place.
class GlooRing {
 public:
  GlooRing(int rank, int ranks, const std::string& dir) {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    dev_ = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(dir);
    gloo::rendezvous::PrefixStore prefix("bench", store);
    ctx_ = std::make_shared<gloo::rendezvous::Context>(rank, ranks);
    ctx_->setTimeout(std::chrono::seconds(60));
    ctx_->connectFullMesh(prefix, dev_);
  }
  void AllReduce(float* buf, size_t n) {
    gloo::AllreduceOptions opts(ctx_);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setOutput(buf, n);
    opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    opts.setTag(++tag_);
    gloo::allreduce(opts);
  }

 private:
  std::shared_ptr<gloo::transport::Device> dev_;
  std::shared_ptr<gloo::rendezvous::Context> ctx_;
  uint32_t tag_ = 0;
};

// ---- the measurement -----------------------------------------------------------

enum Impl { kTcp, kGloo, kTorch, kSameHost, kImpls };  // the order of each round

struct SizeResult {
  std::array<std::vector<double>, kImpls> ms;
  uint64_t same_host_received = 0, same_host_read = 0;  // rank 0's same-host run
};

// Every rank runs this schedule; rank 0 (with `torch`) also drives the torch peer.
std::vector<SizeResult> Measure(int rank, int ranks, int rounds, ActorflowRing& tcp, ActorflowRing& same_host,
                                GlooRing& gloo, TorchPeer* torch) {
  std::vector<SizeResult> results(kBytes.size());
  const float expected = static_cast<float>(ranks * (ranks + 1) / 2);
  for (size_t s = 0; s < kBytes.size(); ++s) {
    const int64_t n = kBytes[s] / 4;
    const int64_t instance = static_cast<int64_t>(s) + 1;
    Tensor input(DT_FLOAT, TensorShape{n});
    std::fill(input.data<float>(), input.data<float>() + n, static_cast<float>(rank + 1));
    std::vector<float> buf(static_cast<size_t>(n));
    SizeResult& out = results[s];
    // Rank 0's same-host counters since its last same-host block ended (a
    // peer's first tensor of a block may come before this rank's block begins).
    uint64_t received_mark = 0, read_mark = 0;
    for (int round = -1; round < rounds; ++round) {  // round -1: the warm-up block
      const int calls = round < 0 ? kWarmupCalls : CallsPerRound(kBytes[s], rounds);
      for (int impl = 0; impl < kImpls; ++impl) {
        std::vector<double> ms;
        if (impl == kTorch) {
          if (torch != nullptr) ms = torch->Block(kBytes[s], calls);
        } else if (impl == kGloo) {
          for (int c = 0; c < calls; ++c) {
            std::fill(buf.begin(), buf.end(), static_cast<float>(rank + 1));
            const auto t0 = std::chrono::steady_clock::now();
            gloo.AllReduce(buf.data(), buf.size());
            ms.push_back(Elapsed(t0));
            if (buf.back() != expected) Fail("gloo all-reduce gave " + std::to_string(buf.back()));
          }
        } else {
          ActorflowRing& ring = impl == kTcp ? tcp : same_host;
          for (int c = 0; c < calls; ++c) {
            Tensor output(DT_FLOAT, TensorShape{n});
            const auto t0 = std::chrono::steady_clock::now();
            ring.AllReduce(instance, input, &output);
            ms.push_back(Elapsed(t0));
            if (output.data<float>()[n - 1] != expected || output.data<float>()[0] != expected)
              Fail("actorflow all-reduce gave " + std::to_string(output.data<float>()[n - 1]));
          }
          if (impl == kSameHost) {
            const uint64_t received = ring.transport().received_count(), read = ring.transport().same_host_count();
            if (round >= 0) {
              out.same_host_received += received - received_mark;
              out.same_host_read += read - read_mark;
            }
            received_mark = received;
            read_mark = read;
          }
        }
        if (round >= 0) out.ms[impl].insert(out.ms[impl].end(), ms.begin(), ms.end());
      }
    }
  }
  return results;
}

// ---- the validation ------------------------------------------------------------

constexpr int64_t kValidationElements = 1000003;  // odd: chunks of unequal sizes

// Random floats of either sign, 1e-9 .. 2.1 in magnitude (`dyadic`: multiples
// of 2^-20 under 1, whose sums of up to 8 are exact in any order).
std::vector<float> Input(int rank, bool dyadic) {
  std::vector<float> v(kValidationElements);
  uint32_t x = 12345u + 7919u * static_cast<uint32_t>(rank);
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = dyadic ? std::ldexp(static_cast<float>(static_cast<int32_t>(x) >> 12), -20)
               : static_cast<float>(static_cast<int32_t>(x)) * 1e-9f;
  }
  return v;
}

struct Outcome {
  int64_t not_a_ring_sum = 0;     // elements that are no ring's float sum of the inputs
  int64_t differ_from_gloo = 0;   // elements whose bits differ from gloo's
};

// Checks `got` (one all-reduce of every rank's Input) against the ring sums
// (a fold over the ranks from each start: what a ring can compute for an
// element) and against gloo's bits.
Outcome Check(const std::vector<std::vector<float>>& inputs, const float* got, const float* gloo) {
  Outcome o;
  const int ranks = static_cast<int>(inputs.size());
  for (int64_t i = 0; i < kValidationElements; ++i) {
    bool ring_sum = false;
    for (int start = 0; start < ranks && !ring_sum; ++start) {
      float sum = inputs[start][i];
      for (int k = 1; k < ranks; ++k) sum += inputs[(start + k) % ranks][i];
      ring_sum = std::memcmp(&sum, &got[i], 4) == 0;
    }
    o.not_a_ring_sum += !ring_sum;
    if (gloo != nullptr) o.differ_from_gloo += std::memcmp(&got[i], &gloo[i], 4) != 0;
  }
  return o;
}

struct Validation {
  // [dyadic][tcp, same host, gloo]
  std::array<std::array<Outcome, 3>, 2> outcomes;
  bool ok(int ranks) const {
    for (int d = 0; d < 2; ++d)
      for (int impl = 0; impl < 3; ++impl) {
        const Outcome& o = outcomes[d][impl];
        if (o.not_a_ring_sum != 0) return false;
        // Exact sums (or two ranks: one ring sum) must match gloo bit for bit.
        if ((d == 1 || ranks == 2) && o.differ_from_gloo != 0) return false;
      }
    return true;
  }
};

Validation Validate(int rank, int ranks, ActorflowRing& tcp, ActorflowRing& same_host, GlooRing& gloo) {
  Validation v;
  for (int d = 0; d < 2; ++d) {
    std::vector<std::vector<float>> inputs;
    for (int r = 0; r < ranks; ++r) inputs.push_back(Input(r, d == 1));
    Tensor input(DT_FLOAT, TensorShape{kValidationElements});
    std::memcpy(input.raw_data(), inputs[rank].data(), kValidationElements * 4);
    Tensor out_tcp(DT_FLOAT, TensorShape{kValidationElements}), out_same(DT_FLOAT, TensorShape{kValidationElements});
    tcp.AllReduce(1000 + d, input, &out_tcp);
    same_host.AllReduce(1000 + d, input, &out_same);
    std::vector<float> g = inputs[rank];
    gloo.AllReduce(g.data(), g.size());
    v.outcomes[d][0] = Check(inputs, out_tcp.data<float>(), g.data());
    v.outcomes[d][1] = Check(inputs, out_same.data<float>(), g.data());
    v.outcomes[d][2] = Check(inputs, g.data(), nullptr);
  }
  return v;
}

// ---- the processes ---------------------------------------------------------------

// Everything one rank does; rank 0's figures and validation when it is rank 0.
struct RankRun {
  std::vector<SizeResult> sizes;
  Validation validation;
  uint64_t tcp_read = 0;  // tensors the TCP run read from a peer's memory: must be 0
};

RankRun RunRank(int rank, int ranks, int rounds, const std::string& dir, TorchPeer* torch) {
  ActorflowRing tcp(rank, ranks, dir, "tcp", false);
  ActorflowRing same_host(rank, ranks, dir, "af", true);
  GlooRing gloo(rank, ranks, dir + "/gloo");
  RankRun run;
  run.sizes = Measure(rank, ranks, rounds, tcp, same_host, gloo, torch);
  run.validation = Validate(rank, ranks, tcp, same_host, gloo);
  run.tcp_read = tcp.transport().same_host_count();
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 2, rounds = 5, rank = 0;
  std::string python = "/usr/bin/python3", dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ranks" && i + 1 < argc) ranks = std::atoi(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--rank" && i + 1 < argc) rank = std::atoi(argv[++i]);  // internal: another rank
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];              // internal: its rendezvous files
    else if (!a.empty() && a[0] != '-') python = a;
    else {
      std::fprintf(stderr, "usage: bench_allreduce [--ranks 2..8] [--rounds R] [PYTHON]\n");
      return 2;
    }
  }
  if (ranks < 2 || ranks > 8 || rounds < 1) {
    std::fprintf(stderr, "bench_allreduce: --ranks 2..8 and --rounds >= 1\n");
    return 2;
  }
  if (rank > 0) {
    const RankRun run = RunRank(rank, ranks, rounds, dir, nullptr);
    return run.validation.ok(ranks) && run.tcp_read == 0 ? 0 : 3;
  }

  bench::ScratchDir scratch("", "af_bench_allreduce");
  dir = scratch.path();
  g_scratch = dir;
  std::filesystem::create_directories(dir + "/gloo");
  TorchPeer torch(python, {"--ranks", std::to_string(ranks)});
  if (!torch.ok()) std::fprintf(stderr, "bench_allreduce: the torch peer: %s\n", torch.error().c_str());
  std::vector<pid_t> children;
  for (int r = 1; r < ranks; ++r) {
    bench::Child c = bench::SpawnPiped("/proc/self/exe", {"--rank", std::to_string(r), "--ranks",
                                                          std::to_string(ranks), "--rounds", std::to_string(rounds),
                                                          "--dir", dir});
    if (c.pid < 0) Fail("cannot start rank " + std::to_string(r));
    std::fclose(c.to);
    std::fclose(c.from);
    children.push_back(c.pid);
    g_children.push_back(c.pid);
  }
  const RankRun run = RunRank(0, ranks, rounds, dir, &torch);
  bool others_ok = true;
  for (pid_t c : children) {
    int status = 0;
    ::waitpid(c, &status, 0);
    Reaped(c);
    others_ok = others_ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);  // for ScratchDir to remove

  for (size_t s = 0; s < kBytes.size(); ++s) {
    const SizeResult& r = run.sizes[s];
    std::array<double, kImpls> med{};
    std::string algbw, busbw;  // per implementation, nccl-tests' units
    for (int i = 0; i < kImpls; ++i) {
      med[i] = Median(r.ms[i]);
      static const char* const kNames[kImpls] = {"actorflow_tcp", "gloo", "torch", "actorflow_same_host"};
      algbw += std::string(i ? "," : "") + "\"" + kNames[i] + "\":" + Json(AlgBandwidth(kBytes[s], med[i]), "%.3f");
      busbw += std::string(i ? "," : "") + "\"" + kNames[i] + "\":" +
               Json(BusBandwidth(kBytes[s], med[i], ranks), "%.3f");
    }
    std::printf("{\"bench\":\"allreduce\",\"params\":{\"bytes\":%lld,\"processes\":%d,\"rounds\":%d,\"calls\":%zu},"
                "\"actorflow_tcp_ms\":%s,\"gloo_ms\":%s,\"torch_ms\":%s,"
                "\"ratio_tcp_vs_gloo\":%s,\"ratio_tcp_vs_torch\":%s,\"actorflow_tcp_GBps\":%s,"
                "\"actorflow_same_host_ms\":%s,\"same_host_ratio_vs_gloo_tcp\":%s,"
                "\"same_host_run_tensors_received\":%llu,\"same_host_tensors\":%llu,"
                "\"algbw_GBps\":{%s},\"busbw_GBps\":{%s}}\n",
                static_cast<long long>(kBytes[s]), ranks, rounds, r.ms[kTcp].size(), Json(med[kTcp]).c_str(),
                Json(med[kGloo]).c_str(), Json(med[kTorch]).c_str(), Json(med[kGloo] / med[kTcp], "%.3f").c_str(),
                Json(med[kTorch] / med[kTcp], "%.3f").c_str(),
                Json(static_cast<double>(kBytes[s]) / med[kTcp] / 1e6, "%.3f").c_str(), Json(med[kSameHost]).c_str(),
                Json(med[kGloo] / med[kSameHost], "%.3f").c_str(),
                static_cast<unsigned long long>(r.same_host_received), static_cast<unsigned long long>(r.same_host_read),
                algbw.c_str(), busbw.c_str());
  }
  const Validation& v = run.validation;
  const bool ok = v.ok(ranks) && others_ok;
  std::printf("{\"bench\":\"allreduce_validation\",\"params\":{\"elements\":%lld,\"processes\":%d},"
              "\"exact_sums_differing_from_gloo\":{\"actorflow_tcp\":%lld,\"actorflow_same_host\":%lld},"
              "\"random_differing_from_gloo\":{\"actorflow_tcp\":%lld,\"actorflow_same_host\":%lld},"
              "\"not_a_ring_sum\":{\"actorflow_tcp\":%lld,\"actorflow_same_host\":%lld,\"gloo\":%lld},"
              "\"tcp_run_same_host_tensors\":%llu,\"other_ranks_ok\":%s,\"ok\":%s}\n",
              static_cast<long long>(kValidationElements), ranks,
              static_cast<long long>(v.outcomes[1][0].differ_from_gloo),
              static_cast<long long>(v.outcomes[1][1].differ_from_gloo),
              static_cast<long long>(v.outcomes[0][0].differ_from_gloo),
              static_cast<long long>(v.outcomes[0][1].differ_from_gloo),
              static_cast<long long>(v.outcomes[0][0].not_a_ring_sum + v.outcomes[1][0].not_a_ring_sum),
              static_cast<long long>(v.outcomes[0][1].not_a_ring_sum + v.outcomes[1][1].not_a_ring_sum),
              static_cast<long long>(v.outcomes[0][2].not_a_ring_sum + v.outcomes[1][2].not_a_ring_sum),
              static_cast<unsigned long long>(run.tcp_read), others_ok ? "true" : "false", ok ? "true" : "false");
  std::fflush(stdout);
  if (!ok) Fail("the validation against gloo failed (see allreduce_validation)");
  if (run.tcp_read != 0) Fail("the run with the same-host path off read tensors from a peer's memory");
  if (!torch.ok()) Fail("the torch peer failed: " + torch.error() + " (its figures are null)");
  return 0;
}
