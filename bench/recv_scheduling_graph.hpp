// The graph on which scheduling _Recvs late (graph/recv_scheduling.hpp) shows:
// bench_recv_scheduling measures it, tests/recv_scheduling_test.cpp checks it.
//
// CPU:0 runs a long chain of n x n MatMuls from the feed `x`. CPU:1 makes
// `tensors` values from the scalar feed `y`, all at the start of the step;
// value i is consumed at chain position (i + 1) * chain / (tensors + 1), by
//   d_i = Mean(Mul(big_i, Sum(c_p)))      c_{p+1} = MatMul(c_p, w) + d_i
// so big_i (`elements` floats) must live until the chain gets there.
//
// With `expand_on_receiver`, CPU:1 sends a scalar and CPU:0 makes big_i from
// it (Fill): a _Recv issued at the start of the step lets that Fill run at
// once, a late one only near its consumer. Without, CPU:1 makes big_i itself
// and sends it; in one process the rendezvous passes it by reference, so it
// lives from CPU:1's Fill until its consumer wherever the _Recv is scheduled.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actorflow/client/ops/cc_ops.hpp"

namespace actorflow {
namespace bench_graphs {

struct LateConsumerParams {
  int chain = 200;
  int tensors = 8;
  int64_t elements = int64_t{1} << 18;  // 1 MiB of floats per tensor
  int n = 128;
  bool expand_on_receiver = true;
};

struct LateConsumerGraph {
  Output x;       // feed: float [n, n], on CPU:0
  Output y;       // feed: float scalar, on CPU:1
  Output result;  // fetch: float [n, n], on CPU:0
};

inline LateConsumerGraph BuildLateConsumerGraph(const Scope& root, const LateConsumerParams& p) {
  const Scope cpu0 = root.WithDevice("/device:CPU:0");
  const Scope cpu1 = root.WithDevice("/device:CPU:1");
  LateConsumerGraph g;
  g.x = ops::Placeholder(cpu0.WithOpName("x"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{p.n, p.n}));
  g.y = ops::Placeholder(cpu1.WithOpName("y"), DT_FLOAT, PartialTensorShape::Scalar());
  const Output w = ops::Fill(cpu0.WithOpName("w"), {p.n, p.n}, 1.0f / static_cast<float>(p.n));
  std::vector<Output> big(p.tensors);
  for (int i = 0; i < p.tensors; ++i) {
    const std::string id = std::to_string(i);
    const Output value = ops::Mul(cpu1.WithOpName("value_" + id), g.y, static_cast<float>(i + 1) * 1e-3f);
    const Scope maker = p.expand_on_receiver ? cpu0 : cpu1;
    // The dims vector {elements}: Input({int}) would be a scalar under clang (Input(int)), a vector under gcc.
    const Input dims(std::initializer_list<Input::Initializer>{static_cast<int>(p.elements)});
    big[i] = ops::Fill(maker.WithOpName("big_" + id), dims, value);
  }
  Output c = g.x;
  int next = 0;
  for (int j = 0; j < p.chain; ++j) {
    Output m = ops::MatMul(cpu0.WithOpName("chain_" + std::to_string(j)), c, w);
    if (next < p.tensors && j == (next + 1) * p.chain / (p.tensors + 1)) {
      const std::string id = std::to_string(next);
      const Output s = ops::Sum(cpu0.WithOpName("sum_" + id), c, {0, 1});
      const Output d = ops::Mean(cpu0.WithOpName("use_" + id), ops::Mul(cpu0, big[next], s), 0);
      m = ops::Add(cpu0.WithOpName("add_" + id), m, d);
      ++next;
    }
    c = m;
  }
  g.result = ops::Identity(cpu0.WithOpName("result"), c);
  return g;
}

}  // namespace bench_graphs
}  // namespace actorflow
