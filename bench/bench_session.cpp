// What Session::Run costs a client, for the Python front-end's figures
// (bench/bench_python.py measures the same from Python, in the same run):
//  - session_run: one step of a one-node graph (fetch a Const), microseconds
//  - feed_fetch: feed a 64 MiB float32 tensor and fetch x + 1 (64 MiB), no
//    copy on either side, GB/s of fed-and-fetched bytes
// Threads: ACTORFLOW_NUM_THREADS (default: cores).
#include <cstdio>
#include <cstdlib>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "bench_util.hpp"

using namespace actorflow;

namespace {

void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "bench_session: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

}  // namespace

int main() {
  Scope root = Scope::NewRootScope();
  auto c = ops::Const(root.WithOpName("c"), 1.f);
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto y = ops::AddV2(root.WithOpName("y"), x, ops::Const(root, 1.f));
  proto::GraphDef def;
  Check(root.ToGraphDef(&def));
  Session session;
  Check(session.Create(def));
  std::vector<Tensor> out;
  const std::string params = "\"threads\":" + std::to_string(Runtime::Default()->num_threads()) +
                             ",\"impl\":\"c++\"";
  auto one = [&] { Check(session.Run({}, {"c:0"}, {}, &out)); };
  auto stats = bench::MeasureInterleaved(9, 2000, {one});
  bench::Print("session_run", params, "latency", "us", stats[0], 1e6);

  const int64_t n = (int64_t{64} << 20) / 4;  // 64 MiB of float32
  Tensor big(DT_FLOAT, TensorShape{n});
  for (int64_t i = 0; i < n; ++i) big.data<float>()[i] = static_cast<float>(i & 1023);
  auto round_trip = [&] { Check(session.Run({{"x", big}}, {"y:0"}, {}, &out)); };
  stats = bench::MeasureInterleaved(9, 20, {round_trip});
  bench::Print("feed_fetch", params + ",\"mib\":64", "throughput", "GB/s", stats[0], 2.0 * 64 * (1 << 20) / 1e9, true);
  return 0;
}
