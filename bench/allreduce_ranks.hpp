// The ranks of the all-reduce benchmarks (bench/bench_allreduce.cpp: processes
// of this machine; bench/bench_allreduce_hosts.cpp: processes on simulated
// hosts, tests/netns/hosts.sh): how a rank finds the others (files in a
// shared directory), actorflow's collective executor over its own transport,
// the torch.distributed peer driven from rank 0 (bench/peer_torch_allreduce.py),
// and the bandwidths in nccl-tests' units. A failure ends the children rank 0
// started (and removes its scratch directory) before the process exits.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "actorflow/comm/collective_executor.hpp"
#include "actorflow/comm/membership.hpp"
#include "actorflow/comm/tensor_transport.hpp"
#include "actorflow/ops/collective/collective_reduction.hpp"

namespace allreduce_bench {

using namespace actorflow;

inline std::string Task(int rank) { return "/job:worker/replica:0/task:" + std::to_string(rank); }

// nccl-tests' units (doc/PERFORMANCE.md there): algbw = bytes / time; busbw =
// algbw x 2 (n-1) / n for an all-reduce among n ranks, the rate each rank's
// link must carry in a ring, comparable whatever n is. GB/s (1e9).
inline double AlgBandwidth(int64_t bytes, double ms) { return ms > 0 ? static_cast<double>(bytes) / ms / 1e6 : 0; }
inline double BusBandwidth(int64_t bytes, double ms, int ranks) {
  return AlgBandwidth(bytes, ms) * 2.0 * (ranks - 1) / ranks;
}

// What rank 0 started (the other ranks, the torch peer) and its scratch
// directory: a failure ends and removes them before the process exits.
inline std::vector<pid_t> g_children;
inline std::string g_scratch;

// `pid` was waited for: never signalled again (its number may be reused).
inline void Reaped(pid_t pid) {
  g_children.erase(std::remove(g_children.begin(), g_children.end(), pid), g_children.end());
}

[[noreturn]] inline void Fail(const std::string& why) {
  std::fprintf(stderr, "bench_allreduce: %s\n", why.c_str());
  for (pid_t pid : g_children) {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  if (!g_scratch.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(g_scratch, ec);
  }
  std::exit(1);
}

inline void WriteFile(const std::string& path, const std::string& text) {
  {
    std::ofstream(path + ".tmp") << text;
  }
  std::filesystem::rename(path + ".tmp", path);
}

// The first line of `path`, once another rank has written it (`seconds` at most).
inline std::string WaitFile(const std::string& path, int seconds = 30) {
  for (int i = 0; i < seconds * 100; ++i) {
    std::ifstream in(path);
    std::string s;
    if (in && std::getline(in, s) && !s.empty()) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Fail("no " + path + " after " + std::to_string(seconds) + " s");
}

// actorflow: a transport listening on `host` (same-host path on or off) and a
// collective executor over it asking for `algorithm` (comm/collective_layout.hpp),
// with every other rank as a peer: each writes "HOST PORT" to `dir`/TAG_RANK.
class ActorflowRing {
 public:
  ActorflowRing(int rank, int ranks, const std::string& dir, const std::string& tag, bool same_host,
                const std::string& host = "127.0.0.1", CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto)
      : ranks_(ranks), membership_(Task(rank), 10 + rank) {
    auto target = target_;
    TransportOptions o;
    o.task = Task(rank);
    o.incarnation = 10 + rank;
    o.membership = &membership_;
    o.same_host = same_host;
    o.bind_host = host;
    TransportCallbacks cb;
    cb.handler(Channel::kCollective).deliver = [target](const std::string& from, std::string meta, Tensor v, bool) {
      if (auto* e = target->load()) e->Deliver(from, std::move(meta), std::move(v));
    };
    const Status s = TensorTransport::Start(o, cb, &transport_);
    if (!s.ok()) Fail(s.ToString());
    const std::string prefix = dir + "/" + tag + "_";
    WriteFile(prefix + std::to_string(rank), host + " " + std::to_string(transport_->port()));
    for (int peer = 0; peer < ranks; ++peer) {
      if (peer == rank) continue;
      std::istringstream where(WaitFile(prefix + std::to_string(peer), 60));
      std::string peer_host;
      int port = 0;
      where >> peer_host >> port;
      membership_.Update(TaskRecord::At(Task(peer), peer_host, static_cast<uint16_t>(port), 10 + peer));
    }
    CollectiveExecutorOptions eo;
    eo.algorithm = algorithm;
    eo.default_timeout = std::chrono::seconds(120);
    exec_ = std::make_unique<CollectiveExecutor>(transport_.get(), &membership_, Task(rank), eo);
    target_->store(exec_.get());
    if (!NewCollectiveReduction("bench", "Add", "Id", &sum_).ok()) Fail("no Add/Id reduction");
  }
  ~ActorflowRing() {
    transport_->Drain(std::chrono::seconds(5));  // the peers have what this rank sent
    target_->store(nullptr);
    exec_->Stop();
    transport_->Stop();
  }

  // output = the sum of every rank's `input` (instance `instance`: one per size).
  void AllReduce(int64_t instance, const Tensor& input, Tensor* output) {
    CollectiveParams p;
    p.node = "bench";
    p.group_size = ranks_;
    p.instance_key = instance;
    p.reduction = sum_;
    std::promise<Status> done;
    auto f = done.get_future();
    exec_->Start(exec_->NewId(), p, input, *output, [&](const Status& st, Tensor) { done.set_value(st); });
    const Status st = f.get();
    if (!st.ok()) Fail("actorflow all-reduce failed: " + st.ToString());
  }
  const TensorTransport& transport() const { return *transport_; }
  /// How the group ran ("flat", "sharded: hosts {0,1} ...").
  std::string layout() const { return exec_->layout(0); }

 private:
  int ranks_;
  Membership membership_;  // this rank's process's: outlives its transport and executor
  std::shared_ptr<std::atomic<CollectiveExecutor*>> target_ = std::make_shared<std::atomic<CollectiveExecutor*>>();
  std::unique_ptr<TensorTransport> transport_;
  std::unique_ptr<CollectiveExecutor> exec_;
  std::shared_ptr<const CollectiveReduction> sum_;
};

// torch.distributed (rank 0 only): bench/peer_torch_allreduce.py with `args`,
// whose rank 0 is driven by lines on its stdin ("BYTES CALLS" -> the calls'
// ms on one line).
class TorchPeer {
 public:
  TorchPeer(const std::string& python, const std::vector<std::string>& args) {
    std::vector<std::string> argv{std::string(AF_BENCH_DIR) + "/peer_torch_allreduce.py"};
    argv.insert(argv.end(), args.begin(), args.end());
    child_ = bench::SpawnPiped(python, argv);
    if (child_.pid < 0) {
      error_ = "cannot start " + python;
      return;
    }
    g_children.push_back(child_.pid);
    const std::string ready = ReadLine();
    if (ready != "ready") error_ = ready.empty() ? "the peer ended before its group formed" : ready;
  }
  ~TorchPeer() {
    if (child_.pid < 0) return;
    std::fclose(child_.to);  // end of input: the peer's ranks leave
    std::fclose(child_.from);
    int status = 0;
    ::waitpid(child_.pid, &status, 0);
    Reaped(child_.pid);
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  // Milliseconds of each of `calls` all-reduces of `bytes`; empty when the peer failed.
  std::vector<double> Block(int64_t bytes, int calls) {
    if (!ok()) return {};
    std::fprintf(child_.to, "%lld %d\n", static_cast<long long>(bytes), calls);
    std::fflush(child_.to);
    const std::string line = ReadLine();
    std::vector<double> ms;
    const char* p = line.c_str();
    char* end = nullptr;
    for (double v = std::strtod(p, &end); end != p; v = std::strtod(p, &end)) {
      ms.push_back(v);
      p = end;
    }
    if (static_cast<int>(ms.size()) != calls) {
      error_ = line.empty() ? "the peer ended" : "the peer answered '" + line + "'";
      return {};
    }
    return ms;
  }

 private:
  std::string ReadLine() {
    std::string s;
    for (int c = std::fgetc(child_.from); c != EOF && c != '\n'; c = std::fgetc(child_.from)) s.push_back(c);
    return s;
  }
  bench::Child child_;
  std::string error_;
};

inline double Elapsed(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

inline std::string Json(double v, const char* format = "%.4f") {
  if (!(v > 0)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

}  // namespace allreduce_bench
