// All-reduce of 4 KiB .. 64 MiB of float32 between two processes of this
// machine: actorflow's collective executor (net/collective_executor.hpp: a
// ring over the tensor transport, as it runs on one host and with the
// same-host path off, as between machines) beside gloo called directly
// (Debian's libgloo, ring all-reduce over its TCP transport: PyTorch's CPU
// backend) and torch.distributed.all_reduce (gloo; bench/peer_torch_allreduce.py),
// all in the same run. Prints one JSON line per size: medians in ms and the
// ratios (peer time / actorflow time: above 1, actorflow is faster).
//
//   bench_allreduce [python3]     # rank 0; it starts rank 1 (this program again)
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "bench_util.hpp"
#include "net/collective_executor.hpp"
#include "net/tensor_transport.hpp"

extern char** environ;

using namespace actorflow;

namespace {

const std::vector<int64_t> kBytes = {4 << 10, 64 << 10, 256 << 10, 814120 /* the MLP's gradients */, 1 << 20,
                                     4 << 20, 16 << 20, 64 << 20};

// The results of one all-reduce of random floats (an odd count), compared
// bit for bit between actorflow and gloo: the validation of the ring against
// the library (two ranks: every element is a + b either way).
constexpr int64_t kValidationElements = 1000003;
std::vector<float> RandomInput(int rank) {
  std::vector<float> v(kValidationElements);
  uint32_t x = 12345u + 7919u * static_cast<uint32_t>(rank);
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(static_cast<int32_t>(x)) * 1e-9f;
  }
  return v;
}
std::vector<float> g_validation_af, g_validation_gloo;

int Reps(int64_t bytes) { return static_cast<int>(std::clamp<int64_t>((int64_t{512} << 20) / bytes, 15, 300)); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string Task(int rank) { return "/job:worker/replica:0/task:" + std::to_string(rank); }

void WriteFile(const std::string& path, const std::string& text) {
  {
    std::ofstream(path + ".tmp") << text;
  }
  std::filesystem::rename(path + ".tmp", path);
}

std::string WaitFile(const std::string& path) {
  for (int i = 0; i < 3000; ++i) {
    std::ifstream in(path);
    std::string s;
    if (in && std::getline(in, s) && !s.empty()) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "bench_allreduce: no %s after 30 s\n", path.c_str());
  std::exit(1);
}

// Milliseconds per all-reduce, per size, through actorflow's executor.
std::vector<double> RunActorflow(int rank, const std::string& dir, bool same_host, const std::string& tag) {
  auto target = std::make_shared<std::atomic<CollectiveExecutor*>>(nullptr);
  TransportOptions o;
  o.task = Task(rank);
  o.incarnation = 10 + rank;
  o.same_host = same_host;
  TransportCallbacks cb;
  cb.deliver = [target](int64_t step, RendezvousKey key, Tensor v, bool) {
    if (step == CollectiveExecutor::kStepId)
      if (auto* e = target->load()) e->Deliver(std::move(key), std::move(v));
  };
  cb.peer_failed = [target](const std::string& task, Status s) {
    if (auto* e = target->load()) e->PeerFailed(task, std::move(s));
  };
  std::unique_ptr<TensorTransport> transport;
  Status s = TensorTransport::Start(o, cb, &transport);
  if (!s.ok()) {
    std::fprintf(stderr, "bench_allreduce: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  WriteFile(dir + "/" + tag + std::to_string(rank), std::to_string(transport->port()));
  const int peer = 1 - rank;
  const int peer_port = std::stoi(WaitFile(dir + "/" + tag + std::to_string(peer)));
  transport->SetPeer(Task(peer), "127.0.0.1", static_cast<uint16_t>(peer_port), 10 + peer);
  auto exec = std::make_unique<CollectiveExecutor>(transport.get(), Task(rank));
  target->store(exec.get());
  std::vector<double> ms;
  int64_t instance = 0;
  for (int64_t bytes : kBytes) {
    const int64_t n = bytes / 4;
    Tensor input(DT_FLOAT, TensorShape{n});
    for (int64_t i = 0; i < n; ++i) input.data<float>()[i] = static_cast<float>(rank + 1);
    CollectiveParams p;
    p.node = "bench";
    p.group_size = 2;
    p.instance_key = ++instance;
    std::vector<double> t;
    const int reps = Reps(bytes);
    for (int r = 0; r < reps + 3; ++r) {
      Tensor output(DT_FLOAT, TensorShape{n});
      std::promise<Status> done;
      auto f = done.get_future();
      const auto t0 = std::chrono::steady_clock::now();
      exec->Start(exec->NewId(), p, input, output, [&](const Status& st, Tensor) { done.set_value(st); });
      const Status st = f.get();
      const double dt = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!st.ok() || output.data<float>()[n - 1] != 3.f) {
        std::fprintf(stderr, "bench_allreduce: actorflow all-reduce failed: %s\n", st.ToString().c_str());
        std::exit(1);
      }
      if (r >= 3) t.push_back(dt);
    }
    ms.push_back(Median(t));
  }
  if (same_host) {  // the validation all-reduce
    const std::vector<float> in = RandomInput(rank);
    Tensor input(DT_FLOAT, TensorShape{kValidationElements}), output(DT_FLOAT, TensorShape{kValidationElements});
    std::memcpy(input.raw_data(), in.data(), in.size() * 4);
    CollectiveParams p;
    p.node = "validation";
    p.group_size = 2;
    p.instance_key = 999;
    std::promise<Status> done;
    auto f = done.get_future();
    exec->Start(exec->NewId(), p, input, output, [&](const Status& st, Tensor) { done.set_value(st); });
    if (!f.get().ok()) std::exit(1);
    g_validation_af.assign(output.data<float>(), output.data<float>() + kValidationElements);
  }
  transport->Drain(std::chrono::seconds(5));  // the peer has what this rank sent
  target->store(nullptr);
  exec->Stop();
  transport->Stop();
  return ms;
}

// The same through gloo: a full mesh by a FileStore, ring all-reduce.
std::vector<double> RunGloo(int rank, const std::string& dir) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(dir);
  gloo::rendezvous::PrefixStore prefix("bench", store);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, 2);
  ctx->setTimeout(std::chrono::seconds(60));
  ctx->connectFullMesh(prefix, dev);
  std::vector<double> ms;
  uint32_t tag = 0;
  for (int64_t bytes : kBytes) {
    const size_t n = static_cast<size_t>(bytes / 4);
    std::vector<float> buf(n);
    std::vector<double> t;
    const int reps = Reps(bytes);
    for (int r = 0; r < reps + 3; ++r) {
      std::fill(buf.begin(), buf.end(), static_cast<float>(rank + 1));
      gloo::AllreduceOptions opts(ctx);
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      opts.setOutput(buf.data(), n);
      opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTag(++tag);
      const auto t0 = std::chrono::steady_clock::now();
      gloo::allreduce(opts);
      const double dt = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (buf[n - 1] != 3.f) {
        std::fprintf(stderr, "bench_allreduce: gloo all-reduce gave %g\n", buf[n - 1]);
        std::exit(1);
      }
      if (r >= 3) t.push_back(dt);
    }
    ms.push_back(Median(t));
  }
  std::vector<float> v = RandomInput(rank);
  gloo::AllreduceOptions opts(ctx);
  opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  opts.setOutput(v.data(), v.size());
  opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
  opts.setTag(++tag);
  gloo::allreduce(opts);
  g_validation_gloo = std::move(v);
  return ms;
}

// torch.distributed.all_reduce (gloo), two processes: "bytes ms" per line.
std::map<int64_t, double> RunTorch(const std::string& python) {
  std::map<int64_t, double> out;
  std::string cmd = python + " bench/peer_torch_allreduce.py";
  for (int64_t b : kBytes) cmd += " " + std::to_string(b);
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return out;
  long long bytes = 0;
  double ms = 0;
  while (std::fscanf(f, "%lld %lf", &bytes, &ms) == 2) out[bytes] = ms;
  ::pclose(f);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--rank1") {
    const std::string dir = argv[2];
    RunActorflow(1, dir, true, "af_");
    RunActorflow(1, dir, false, "tcp_");
    RunGloo(1, dir + "/gloo");
    return 0;
  }
  const std::string python = argc >= 2 ? argv[1] : "/usr/bin/python3";
  bench::ScratchDir scratch("", "af_bench_allreduce");
  const std::string dir = scratch.path();
  std::filesystem::create_directories(dir + "/gloo");
  std::vector<std::string> args = {argv[0], "--rank1", dir};
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t child = -1;
  if (posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, cargv.data(), environ) != 0) return 1;
  const std::vector<double> af = RunActorflow(0, dir, true, "af_");
  const std::vector<double> tcp = RunActorflow(0, dir, false, "tcp_");
  const std::vector<double> gl = RunGloo(0, dir + "/gloo");
  int status = 0;
  ::waitpid(child, &status, 0);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  const std::map<int64_t, double> torch = RunTorch(python);
  int64_t differ = 0;
  for (int64_t i = 0; i < kValidationElements; ++i)
    differ += std::memcmp(&g_validation_af[i], &g_validation_gloo[i], 4) != 0;
  std::printf("{\"bench\":\"allreduce_validation\",\"params\":{\"elements\":%lld,\"processes\":2},"
              "\"elements_differing_from_gloo\":%lld}\n",
              static_cast<long long>(kValidationElements), static_cast<long long>(differ));
  for (size_t i = 0; i < kBytes.size(); ++i) {
    const auto t = torch.find(kBytes[i]);
    const double torch_ms = t == torch.end() ? 0 : t->second;
    std::printf("{\"bench\":\"allreduce\",\"params\":{\"bytes\":%lld,\"processes\":2},\"actorflow_ms\":%.4f,"
                "\"actorflow_tcp_ms\":%.4f,\"gloo_ms\":%.4f,\"torch_ms\":%.4f,\"ratio_vs_gloo\":%.3f,"
                "\"ratio_tcp_vs_gloo\":%.3f,\"ratio_vs_torch\":%.3f,\"actorflow_GBps\":%.3f}\n",
                static_cast<long long>(kBytes[i]), af[i], tcp[i], gl[i], torch_ms, gl[i] / af[i], gl[i] / tcp[i],
                torch_ms > 0 ? torch_ms / af[i] : 0.0, static_cast<double>(kBytes[i]) / af[i] / 1e6);
  }
  return 0;
}
