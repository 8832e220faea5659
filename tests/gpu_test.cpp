// The CUDA device: every GPU kernel against its CPU kernel on random inputs,
// an MLP layer (MatMul, BiasAdd, Relu, Softmax) placed on GPU:0 with feeds and
// fetches on the host, the device allocator's reuse across steps, errors, and
// GPU tensors between processes (an `actorflow server` with a GPU).
//
// Needs a GPU: without one (or in a build without CUDA) the program prints why
// and exits 77, which CTest reports as skipped (SKIP_RETURN_CODE), never as
// passed. Run it alone with `ctest -R gpu_test --output-on-failure`.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/collective_ops.hpp"
#include "actorflow/client/ops/control_flow.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/cluster_spec.hpp"
#include "actorflow/devices/device.hpp"
#include "actorflow/devices/device_manager.hpp"
#include "actorflow/devices/pool_allocator.hpp"
#include "cluster_fixture.hpp"
#include "actorflow/master/server.hpp"
#include "gpu_util.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::ExpectClose;
using test::kCpu;
using test::kGpu;
using test::MakeTensor;
using test::Random;
using test::ToDef;
using test::Values;

namespace {

Runtime* g_runtime = nullptr;  // one for all cases: a CUDA context per process is enough

template <class T>
Tensor RandomLabels(int64_t rows, int64_t classes, uint32_t seed) {
  std::mt19937 gen(seed);
  Tensor t(DataTypeToEnum<T>::value, TensorShape{rows});
  for (int64_t i = 0; i < rows; ++i) t.data<T>()[i] = static_cast<T>(gen() % classes);
  return t;
}

struct RunResult {
  Status status;
  std::vector<Tensor> outputs;
  std::map<std::string, std::string> placement;
};

// One step of `fetches` in `session` (created with the scope's graph already).
RunResult RunStep(Session* session, const std::vector<Output>& fetches,
                  const std::vector<std::pair<std::string, Tensor>>& feeds) {
  std::vector<std::string> names;
  for (const auto& f : fetches) names.push_back(f.name());
  RunOptions options;
  options.timeout_in_ms = 60000;  // never hang
  RunResult r;
  r.status = session->Run(options, feeds, names, {}, &r.outputs);
  r.placement = session->LastPlacement();
  return r;
}

std::unique_ptr<Session> NewSession(const Scope& root) { return test::NewSession(g_runtime, root); }

RunResult RunGraph(const Scope& root, const std::vector<Output>& fetches,
                   const std::vector<std::pair<std::string, Tensor>>& feeds) {
  return RunStep(NewSession(root).get(), fetches, feeds);
}

// Builds `op` twice over the same fed inputs, on GPU:0 and on CPU:0, runs both
// in one step and compares; the GPU copy must really be on the GPU.
using OpBuilder = std::function<std::vector<Output>(const Scope&, const std::vector<Output>&)>;
void CompareWithCpu(const std::vector<Tensor>& inputs, const OpBuilder& op, float tol = 1e-5f) {
  Scope root = Scope::NewRootScope();
  std::vector<Output> ins;
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    ins.push_back(ops::Placeholder(root.WithOpName(name), inputs[i].dtype()));
    feeds.emplace_back(name, inputs[i]);
  }
  std::vector<Output> on_gpu = op(root.WithDevice("/device:GPU:0").NewSubScope("gpu"), ins);
  std::vector<Output> on_cpu = op(root.WithDevice("/device:CPU:0").NewSubScope("cpu"), ins);
  REQUIRE(on_gpu.size() == on_cpu.size());
  std::vector<Output> fetches = on_gpu;
  fetches.insert(fetches.end(), on_cpu.begin(), on_cpu.end());
  RunResult r = RunGraph(root, fetches, feeds);
  INFO(r.status.ToString());
  REQUIRE(r.status.ok());
  for (const Output& o : on_gpu) CHECK(r.placement[o.node()->name()] == kGpu);
  for (size_t i = 0; i < on_gpu.size(); ++i) {
    INFO("output " << i);
    ExpectClose(r.outputs[i], r.outputs[on_gpu.size() + i], tol);
  }
}

}  // namespace

TEST_CASE("GPU element-wise ops match the CPU, with broadcasting") {
  const std::vector<std::pair<TensorShape, TensorShape>> shapes = {
      {{64, 33}, {64, 33}},        // same shape
      {{64, 33}, {33}},            // row vector
      {{64, 1}, {64, 33}},         // column against matrix
      {{}, {5, 7}},                // scalar
      {{4, 1, 6}, {1, 5, 1}},      // both broadcast
      {{0, 3}, {3}},               // empty
  };
  using Binary = Output (*)(const Scope&, Input, Input);
  const std::vector<std::pair<const char*, Binary>> binary = {
      {"Add", ops::Add}, {"AddV2", ops::AddV2}, {"Sub", ops::Sub},
      {"Mul", ops::Mul}, {"RealDiv", ops::RealDiv}, {"ReluGrad", ops::ReluGrad}};
  uint32_t seed = 1;
  for (const auto& [name, fn] : binary) {
    for (const auto& [sa, sb] : shapes) {
      INFO(name << " " << sa.DebugString() << " vs " << sb.DebugString());
      Tensor a = Random(sa, seed++), b = Random(sb, seed++, 0.5f, 2.f);  // divisors away from 0
      CompareWithCpu({a, b}, [fn = fn](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{fn(s, in[0], in[1])};
      });
    }
  }
  CompareWithCpu({Random({1000, 17}, 7)}, [](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{ops::Relu(s, in[0]), ops::Identity(s, in[0])};
  });
  // A constant operand lives on the GPU (copied there when the graph is registered).
  CompareWithCpu({Random({8, 3}, 8)}, [](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{ops::Mul(s, in[0], {{1.f, 2.f, 3.f}})};
  });
}

TEST_CASE("GPU MatMul matches the CPU for every transpose combination") {
  uint32_t seed = 100;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      INFO("transpose_a " << ta << " transpose_b " << tb);
      const int64_t m = 37, k = 129, n = 65;
      Tensor a = Random(ta ? TensorShape{k, m} : TensorShape{m, k}, seed++);
      Tensor b = Random(tb ? TensorShape{n, k} : TensorShape{k, n}, seed++);
      CompareWithCpu({a, b}, [ta, tb](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::MatMul(s, in[0], in[1], ta, tb)};
      }, 1e-4f);
    }
  }
  CompareWithCpu({Random({3, 0}, 1), Random({0, 4}, 2)}, [](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{ops::MatMul(s, in[0], in[1])};  // an empty sum: zeros
  });
}

TEST_CASE("GPU BiasAdd and BiasAddGrad match the CPU in NHWC and NCHW") {
  CompareWithCpu({Random({128, 10}, 1), Random({10}, 2)}, [](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{ops::BiasAdd(s, in[0], in[1]), ops::BiasAddGrad(s, in[0])};
  }, 1e-4f);
  CompareWithCpu({Random({4, 5, 6, 7}, 3), Random({7}, 4)}, [](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{ops::BiasAdd(s, in[0], in[1]), ops::BiasAddGrad(s, in[0])};
  }, 1e-4f);
  CompareWithCpu({Random({4, 5, 6, 7}, 5), Random({5}, 6)}, [](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{ops::BiasAdd(s, in[0], in[1], "NCHW"), ops::BiasAddGrad(s, in[0], "NCHW")};
  }, 1e-4f);
  // Many column tiles, the last one partial; long columns (the gradient's row lanes).
  CompareWithCpu({Random({3001, 70}, 7), Random({70}, 8)}, [](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{ops::BiasAdd(s, in[0], in[1]), ops::BiasAddGrad(s, in[0])};
  }, 1e-3f);
}

TEST_CASE("a large feed reaches the GPU intact through sliced staging, and a small one through one copy") {
  // 999 x 1001 floats: about 3.8 MiB, over kSlicedCopyBytes, and not a whole
  // number of slices; 3 x 5 stays one copy.
  for (const TensorShape& shape : {TensorShape{999, 1001}, TensorShape{3, 5}}) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto y = ops::Identity(root.WithDevice("/device:GPU:0").WithOpName("y"), x);
    auto z = ops::Neg(root.WithDevice("/device:GPU:0").WithOpName("z"), y);
    const Tensor fed = Random(shape, 11);
    auto session = NewSession(root);
    for (int step = 0; step < 3; ++step) {  // the staging blocks are reused from step to step
      RunResult r = RunStep(session.get(), {y, z}, {{"x", fed}});
      INFO(r.status.ToString());
      REQUIRE(r.status.ok());
      CHECK(r.placement["y"] == kGpu);
      REQUIRE(r.outputs[0].shape() == shape);
      REQUIRE(std::memcmp(r.outputs[0].raw_data(), fed.raw_data(), fed.TotalBytes()) == 0);
      for (int64_t i = 0; i < fed.NumElements(); ++i) REQUIRE(r.outputs[1].data<float>()[i] == -fed.data<float>()[i]);
    }
  }
}

TEST_CASE("GPU Sum and Mean match the CPU over all axes, one axis, and neighbouring axes") {
  Tensor x = Random({33, 70, 5}, 9);
  const std::vector<std::vector<int32_t>> axes = {{0, 1, 2}, {0}, {1}, {2}, {-1}, {0, 1}, {1, 2}};
  for (const auto& ax : axes) {
    const Tensor axis = MakeTensor<int32_t>(ax, TensorShape{static_cast<int64_t>(ax.size())});
    for (bool keep : {false, true}) {
      INFO("axes " << axis.SummarizeValue() << " keep_dims " << keep);
      CompareWithCpu({x}, [&axis, keep](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Sum(s, in[0], axis, keep), ops::Mean(s, in[0], axis, keep)};
      }, 1e-4f);
    }
  }
  CompareWithCpu({Random({4, 0}, 1)}, [](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{ops::Sum(s, in[0], 1), ops::Mean(s, in[0], 1)};  // empty: 0 and NaN
  });
}

TEST_CASE("GPU Softmax and both softmax cross entropies (dense and sparse labels) match the CPU") {
  for (int64_t cols : {1, 10, 1000}) {  // the dense cross entropy: labels a distribution per row
    INFO("dense, cols " << cols);
    Tensor logits = Random({67, cols}, static_cast<uint32_t>(cols) + 7, -8.f, 8.f);
    Tensor labels = Random({67, cols}, static_cast<uint32_t>(cols) + 8, 0.f, 1.f);
    for (int64_t r = 0; r < 67; ++r) {  // each row sums to 1
      float sum = 0.f;
      for (int64_t j = 0; j < cols; ++j) sum += labels.data<float>()[r * cols + j];
      for (int64_t j = 0; j < cols; ++j)
        labels.data<float>()[r * cols + j] = sum > 0.f ? labels.data<float>()[r * cols + j] / sum : 1.f / cols;
    }
    CompareWithCpu({logits, labels}, [](const Scope& s, const std::vector<Output>& in) {
      auto x = ops::SoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
      return std::vector<Output>{x.loss, x.backprop};
    }, 1e-4f);
  }
  for (int64_t cols : {1, 10, 1000}) {
    INFO("cols " << cols);
    Tensor logits = Random({67, cols}, static_cast<uint32_t>(cols), -8.f, 8.f);
    CompareWithCpu({logits}, [](const Scope& s, const std::vector<Output>& in) {
      return std::vector<Output>{ops::Softmax(s, in[0])};
    });
    CompareWithCpu({logits, RandomLabels<int32_t>(67, cols, 3)}, [](const Scope& s, const std::vector<Output>& in) {
      auto x = ops::SparseSoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
      return std::vector<Output>{x.loss, x.backprop};
    }, 1e-4f);
    CompareWithCpu({logits, RandomLabels<int64_t>(67, cols, 4)}, [](const Scope& s, const std::vector<Output>& in) {
      auto x = ops::SparseSoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
      return std::vector<Output>{x.loss, x.backprop};
    }, 1e-4f);
  }
}

TEST_CASE("GPU unary ops, Maximum, Minimum, Pow and the activations' gradients match the CPU") {
  using Unary = Output (*)(const Scope&, Input);
  const std::vector<std::pair<const char*, Unary>> unary = {
      {"Neg", ops::Neg},   {"Abs", ops::Abs},   {"Sign", ops::Sign},         {"Square", ops::Square},
      {"Exp", ops::Exp},   {"Tanh", ops::Tanh}, {"Sigmoid", ops::Sigmoid}};
  for (const auto& [name, fn] : unary) {
    INFO(name);
    CompareWithCpu({Random({65, 33}, 1)}, [fn = fn](const Scope& s, const std::vector<Output>& in) {
      return std::vector<Output>{fn(s, in[0])};
    }, 1e-5f);
  }
  const std::vector<std::pair<const char*, Unary>> positive = {
      {"Log", ops::Log}, {"Sqrt", ops::Sqrt}, {"Rsqrt", ops::Rsqrt}, {"Reciprocal", ops::Reciprocal}};
  for (const auto& [name, fn] : positive) {
    INFO(name);
    CompareWithCpu({Random({65, 33}, 2, 0.25f, 4.f)}, [fn = fn](const Scope& s, const std::vector<Output>& in) {
      return std::vector<Output>{fn(s, in[0])};
    }, 1e-5f);
  }
  using Binary = Output (*)(const Scope&, Input, Input);
  const std::vector<std::pair<const char*, Binary>> binary = {
      {"Maximum", ops::Maximum}, {"Minimum", ops::Minimum}, {"Pow", ops::Pow},
      {"SigmoidGrad", ops::SigmoidGrad}, {"TanhGrad", ops::TanhGrad}, {"SqrtGrad", ops::SqrtGrad},
      {"RsqrtGrad", ops::RsqrtGrad}, {"ReciprocalGrad", ops::ReciprocalGrad}};
  for (const auto& [name, fn] : binary) {
    INFO(name);
    CompareWithCpu({Random({40, 9}, 3, 0.25f, 2.f), Random({9}, 4)}, [fn = fn](const Scope& s,
                                                                              const std::vector<Output>& in) {
      return std::vector<Output>{fn(s, in[0], in[1])};
    }, 1e-5f);
  }
}

TEST_CASE("GPU ArgMax and ArgMin give the CPU's indices, in host memory") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  Scope g = root.WithDevice("/device:GPU:0");
  Scope c = root.WithDevice("/device:CPU:0");
  std::vector<Output> fetches;
  for (int axis : {0, 1, -1}) {
    fetches.push_back(ops::ArgMax(g.WithOpName("gpu_max" + std::to_string(axis + 1)), x, axis, DT_INT32));
    fetches.push_back(ops::ArgMax(c, x, axis, DT_INT32));
    fetches.push_back(ops::ArgMin(g.WithOpName("gpu_min" + std::to_string(axis + 1)), x, axis, DT_INT64));
    fetches.push_back(ops::ArgMin(c, x, axis, DT_INT64));
  }
  RunResult r = RunGraph(root, fetches, {{"x", Random({300, 10}, 5)}});  // 1/64 steps: ties, first index wins
  INFO(r.status.ToString());
  REQUIRE(r.status.ok());
  CHECK(r.placement["gpu_max0"] == kGpu);
  for (size_t i = 0; i < fetches.size(); i += 2) {
    INFO("fetch " << i);
    REQUIRE(r.outputs[i].shape() == r.outputs[i + 1].shape());
    if (r.outputs[i].dtype() == DT_INT32) CHECK(Values<int32_t>(r.outputs[i]) == Values<int32_t>(r.outputs[i + 1]));
    else CHECK(Values<int64_t>(r.outputs[i]) == Values<int64_t>(r.outputs[i + 1]));
  }
}

TEST_CASE("GPU Fill, ZerosLike, OnesLike, Tile, AddN and Cast match the CPU") {
  CompareWithCpu({Random({5, 7}, 1), Random({}, 2), Random({1}, 3)}, [](const Scope& s, const std::vector<Output>& in) {
    return std::vector<Output>{ops::ZerosLike(s, in[0]), ops::OnesLike(s, in[0]),
                               ops::Fill(s, MakeTensor<int32_t>({3, 4}, {2}), in[1]),
                               ops::Fill(s, MakeTensor<int64_t>({0, 4}, {2}), in[1]),
                               ops::Fill(s, MakeTensor<int32_t>({2, 2}, {2}), in[2])};  // a [1] value, as on the CPU
  });
  for (const auto& [shape, multiples] : std::vector<std::pair<TensorShape, std::vector<int32_t>>>{
           {{}, {}}, {{1}, {300}}, {{3, 4}, {2, 3}}, {{3, 4}, {1, 1}}, {{2, 1, 3}, {1, 5, 2}}, {{4, 2}, {0, 1}}}) {
    INFO("Tile " << shape.DebugString());
    const Tensor m = MakeTensor<int32_t>(multiples, TensorShape{static_cast<int64_t>(multiples.size())});
    CompareWithCpu({Random(shape, 3)}, [&m](const Scope& s, const std::vector<Output>& in) {
      return std::vector<Output>{ops::Tile(s, in[0], m)};
    });
  }
  for (int n : {1, 2, 9, 17}) {
    INFO("AddN of " << n);
    std::vector<Tensor> ins;
    for (int i = 0; i < n; ++i) ins.push_back(Random({33, 5}, 10 + i));
    CompareWithCpu(ins, [](const Scope& s, const std::vector<Output>& in) {
      return std::vector<Output>{ops::AddN(s, std::vector<Input>(in.begin(), in.end()))};
    });
  }
  CompareWithCpu({MakeTensor<int32_t>({-3, 0, 7, 1 << 20}, {2, 2}), MakeTensor<int64_t>({5, -9}, {2}),
                  Random({4}, 4)},
                 [](const Scope& s, const std::vector<Output>& in) {
                   return std::vector<Output>{ops::Cast(s, in[0], DT_FLOAT), ops::Cast(s, in[1], DT_FLOAT),
                                              ops::Cast(s, in[2], DT_FLOAT)};
                 });
}

TEST_CASE("shape and index ops run on the GPU in host memory beside its float tensors") {
  // The gradient of a mean: Shape, Size and Reshape of a GPU tensor, Tile and
  // a Cast of the int64 count, all placed on GPU:0.
  CompareWithCpu({Random({6, 5}, 1), Random({}, 2)}, [](const Scope& s, const std::vector<Output>& in) {
    Output tiled = ops::Tile(s, ops::Reshape(s, in[1], MakeTensor<int32_t>({1, 1}, {2})), ops::Shape(s, in[0]));
    Output count = ops::Cast(s, ops::Size(s, in[0], DT_INT64), DT_FLOAT);
    Output col = ops::ExpandDims(s, ops::Sum(s, in[0], 1), -1);
    return std::vector<Output>{ops::RealDiv(s, tiled, count), ops::Mul(s, col, in[0])};
  });
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  Scope g = root.WithDevice("/device:GPU:0");
  auto shape = ops::Shape(g.WithOpName("shape"), x);
  auto doubled = ops::Mul(g.WithOpName("doubled"), shape, 2);  // int32 arithmetic: a host kernel on the GPU
  RunResult r = RunGraph(root, {doubled}, {{"x", Random({3, 4}, 1)}});
  INFO(r.status.ToString());
  REQUIRE(r.status.ok());
  CHECK(r.placement["shape"] == kGpu);
  CHECK(r.placement["doubled"] == kGpu);
  CHECK(Values<int32_t>(r.outputs[0]) == std::vector<int32_t>{6, 8});
}

TEST_CASE("an MLP layer on GPU:0 with feeds and fetches on the host") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto w = ops::Placeholder(root.WithOpName("w"), DT_FLOAT);
  auto b = ops::Placeholder(root.WithOpName("b"), DT_FLOAT);
  Scope gpu = root.WithDevice("/device:GPU:0");
  auto mm = ops::MatMul(gpu.WithOpName("mm"), x, w);
  auto h = ops::Relu(gpu.WithOpName("h"), ops::BiasAdd(gpu.WithOpName("z"), mm, b));
  auto p = ops::Softmax(gpu.WithOpName("p"), h);
  Scope cpu = root.WithDevice("/device:CPU:0").NewSubScope("cpu");
  auto p_cpu = ops::Softmax(cpu, ops::Relu(cpu, ops::BiasAdd(cpu, ops::MatMul(cpu, x, w), b)));
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", Random({256, 784}, 1, 0.f, 1.f)}, {"w", Random({784, 128}, 2, -0.1f, 0.1f)}, {"b", Random({128}, 3)}};
  RunResult r = RunGraph(root, {p, h, p_cpu}, feeds);
  INFO(r.status.ToString());
  REQUIRE(r.status.ok());
  for (const char* n : {"mm", "z", "h", "p"}) CHECK(r.placement[n] == kGpu);
  CHECK(r.placement["_arg_x_0"] == kCpu);  // feeds stay on the host: Send/Recv carry them over
  REQUIRE(r.outputs.size() == 3);
  CHECK(r.outputs[0].shape() == TensorShape{256, 128});
  ExpectClose(r.outputs[0], r.outputs[2], 1e-4f);
  for (int64_t i = 0; i < r.outputs[1].NumElements(); ++i) REQUIRE(r.outputs[1].data<float>()[i] >= 0.f);
}

TEST_CASE("the GPU allocator reuses its blocks from one step to the next") {
  Device* gpu = nullptr;
  REQUIRE(g_runtime->device_manager().Lookup("GPU:0", &gpu).ok());
  auto* pool = dynamic_cast<PoolAllocator*>(gpu->allocator());
  REQUIRE(pool != nullptr);
  REQUIRE_FALSE(pool->HostAccessible());
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  Scope g = root.WithDevice("/device:GPU:0");
  auto y = ops::Mean(g, ops::Relu(g, ops::MatMul(g, x, x)), MakeTensor<int32_t>({0, 1}, {2}));
  auto session = NewSession(root);
  const Tensor value = Random({512, 512}, 11);
  RunResult first = RunStep(session.get(), {y}, {{"x", value}});
  REQUIRE(first.status.ok());
  const PoolAllocatorStats after_first = pool->stats();
  const int64_t in_use = pool->bytes_in_use();
  for (int step = 0; step < 5; ++step) {
    RunResult again = RunStep(session.get(), {y}, {{"x", value}});
    REQUIRE(again.status.ok());
    CHECK(Values<float>(again.outputs[0]) == Values<float>(first.outputs[0]));
  }
  const PoolAllocatorStats after = pool->stats();
  CHECK(after.num_system_allocs == after_first.num_system_allocs);  // no cudaMalloc after the first step
  CHECK(after.num_reused >= after_first.num_reused + 5 * 3);         // x, MatMul's and Mean's outputs each step
  CHECK(after.bytes_reserved == after_first.bytes_reserved);
  CHECK(pool->bytes_in_use() <= in_use);  // every step's tensors went back (earlier tests' may still be going)
}

TEST_CASE("GPU kernel errors name the node, as on the CPU") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Placeholder(root.WithOpName("a"), DT_FLOAT);
  auto l = ops::Placeholder(root.WithOpName("l"), DT_INT32);
  Scope g = root.WithDevice("/device:GPU:0");
  auto mm = ops::MatMul(g.WithOpName("bad_matmul"), a, a);
  RunResult r = RunGraph(root, {mm}, {{"a", Random({2, 3}, 1)}});
  CHECK(r.status.code() == Code::kInvalidArgument);
  CHECK_THAT(r.status.message(), Catch::Contains("bad_matmul") && Catch::Contains("Matrix size-incompatible"));

  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(g.WithOpName("xent"), a, l);
  r = RunGraph(root, {xent.loss}, {{"a", Random({2, 3}, 1)}, {"l", MakeTensor<int32_t>({0, 7}, {2})}});
  CHECK(r.status.code() == Code::kInvalidArgument);
  CHECK_THAT(r.status.message(), Catch::Contains("xent") && Catch::Contains("label value of 7"));

  auto sum = ops::Sum(g.WithOpName("gapped_sum"), a, MakeTensor<int32_t>({0, 2}, {2}));
  r = RunGraph(root, {sum}, {{"a", Random({2, 3, 4}, 1)}});
  CHECK(r.status.code() == Code::kUnimplemented);
  CHECK_THAT(r.status.message(), Catch::Contains("gapped_sum"));
}

int main(int argc, char** argv) {
  RuntimeOptions options;
  options.num_gpu_devices = 1;
  Runtime runtime(options);
  if (!test::HasGpuOrSaySkipped(runtime, "gpu_test")) return test::kSkipped;
  g_runtime = &runtime;
  return test::RunTests(argc, argv);  // failed, skipped (77) or passed (skip.hpp)
}

TEST_CASE("a while loop whose body runs on GPU:0 (its control loop there) matches the same loop on the CPU") {
  Scope root = Scope::NewRootScope().WithDevice("/device:CPU:0");
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto w = ops::Placeholder(root.WithOpName("w"), DT_FLOAT);
  auto loop = [&](const std::string& body_device, const std::string& name) {
    OutputList out;
    ops::WhileOptions o;
    o.name = name;
    Status s = ops::WhileLoop(
        root, {ops::Const(root, 0), x},
        [](const Scope& c, const OutputList& v, Output* pred) {
          *pred = ops::Less(c, v[0], 5);
          return c.status();
        },
        [&](const Scope& b, const OutputList& v, OutputList* next) {
          Scope d = b.WithDevice(body_device);
          *next = {ops::Add(b, v[0], 1), ops::Relu(d, ops::MatMul(d, v[1], w))};
          return b.status();
        },
        &out, o);
    REQUIRE(s.ok());
    return out[1];
  };
  Output on_gpu = loop("/device:GPU:0", "gpu_loop");
  Output on_cpu = loop("/device:CPU:0", "cpu_loop");
  RunResult r = RunGraph(root, {on_gpu, on_cpu},
                         {{"x", Random({64, 128}, 1, 0.f, 1.f)}, {"w", Random({128, 128}, 2, -0.1f, 0.2f)}});
  INFO(r.status.ToString());
  REQUIRE(r.status.ok());
  CHECK(r.placement["gpu_loop/MatMul"] == kGpu);
  ExpectClose(r.outputs[0], r.outputs[1], 1e-4f);
}

TEST_CASE("GPU tensors cross processes, staged through the host: from another task's GPU and to this task's GPU") {
  // A ps process with a GPU, and this process as worker 0 with one.
  test::ClusterFixture c({{"ps", 0, {"--devices", "cpu:1,gpu:1"}}}, [](ServerOptions* o) { o->num_gpu_devices = 1; });

  Scope root = Scope::NewRootScope().WithDevice("/job:worker/task:0/device:CPU:0");
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  // worker CPU -> ps GPU -> worker GPU -> worker CPU, and ps GPU -> worker CPU; 3 MiB and a bit,
  // so the host copies between processes are lent (same host) as well as written.
  auto sq = ops::Square(root.WithOpName("sq").WithDevice("/job:ps/task:0/device:GPU:0"), x);
  auto twice = ops::Add(root.WithOpName("twice").WithDevice("/job:worker/task:0/device:GPU:0"), sq, sq);
  ops::Identity(root.WithOpName("back"), twice);
  ops::Identity(root.WithOpName("sq_back"), sq);
  Session session(c.Options());
  REQUIRE(session.Create(ToDef(root)).ok());
  Tensor in = Random({768, 1024 + 1}, 7);
  std::vector<Tensor> out;
  RunOptions ro;
  ro.timeout_in_ms = 60000;  // a lost tensor fails here, never hangs
  Status s = session.Run(ro, {{"x", in}}, {"back:0", "sq_back:0"}, {}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out.size() == 2);
  REQUIRE(out[0].shape() == in.shape());
  for (int64_t i = 0; i < in.NumElements(); ++i) {
    const float v = in.data<float>()[i];
    if (out[1].data<float>()[i] != v * v || out[0].data<float>()[i] != v * v + v * v)
      FAIL("element " << i << ": " << out[1].data<float>()[i] << ", " << out[0].data<float>()[i] << " for " << v);
  }
  session.Close();
}

TEST_CASE("collectives on GPU tensors: two processes sharing one GPU all-reduce and broadcast, staged through pinned "
          "memory") {
  // Worker 1 is an `actorflow server` process on the same GPU; this process is worker 0.
  test::ClusterFixture c({{"worker", 1, {"--devices", "cpu:1,gpu:1"}}},
                         [](ServerOptions* o) { o->num_gpu_devices = 1; });
  const std::string gpu0 = "/job:worker/replica:0/task:0/device:GPU:0",
                    gpu1 = "/job:worker/replica:0/task:1/device:GPU:0";
  Scope root = Scope::NewRootScope().WithDevice("/job:worker/task:0/device:CPU:0");
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto k = ops::Placeholder(root.WithOpName("k"), DT_INT32);
  const TensorShape shape{512, 1025};  // 2 MiB: a large staging copy each way
  ops::CollectiveOptions co;
  co.group_size = 2;
  co.group_key = 7;
  co.final_op = "Div";
  Scope s0 = root.WithDevice(gpu0).NewSubScope("t0"), s1 = root.WithDevice(gpu1).NewSubScope("t1");
  auto a0 = ops::Square(s0, x), a1 = ops::Add(s1, x, x);  // each rank's own tensor, on its GPU
  co.instance_key = 1;
  auto mean0 = ops::CollectiveReduce(s0.WithOpName("mean0"), a0, co);
  auto mean1 = ops::CollectiveReduce(s1.WithOpName("mean1"), a1, co);
  co.instance_key = 2;
  auto sent = ops::CollectiveBcastSend(s0.WithOpName("sent"), a0, shape, co);
  auto got = ops::CollectiveBcastRecv(s1.WithOpName("got"), DT_FLOAT, shape, co);
  co.instance_key = 3;
  co.final_op = "Id";  // integers in host memory on a GPU too
  auto ksum0 = ops::CollectiveReduce(s0.WithOpName("ksum0"), k, co);
  auto ksum1 = ops::CollectiveReduce(s1.WithOpName("ksum1"), ops::Add(s1, k, k), co);
  co.instance_key = 4;
  auto first0 = ops::CollectiveBcastFirst(s0.WithOpName("first0"), a0, co);
  auto first1 = ops::CollectiveBcastFirst(s1.WithOpName("first1"), a1, co);
  // Each float result also read by a GPU kernel on its own GPU, which
  // refuses a float32 input in host memory: the outputs are device tensors.
  const std::vector<Output> fetched = {mean0, mean1, sent, got, ksum0, ksum1, first0, first1,
                                       ops::Add(s0, mean0, sent), ops::Add(s1, mean1, got),
                                       ops::Add(s0, first0, first0), ops::Add(s1, first1, first1)};
  std::vector<std::string> names;
  for (const Output& o : fetched) names.push_back(ops::Identity(root, o).name());
  Session session(c.Options());
  REQUIRE(session.Create(ToDef(root)).ok());
  for (int step = 0; step < 3; ++step) {  // instances again in every step
    INFO("step " << step);
    Tensor in = Random(shape, 11 + step);
    Tensor kin = MakeTensor<int32_t>({3}, {1, -2, step});
    std::vector<Tensor> out;
    RunOptions ro;
    ro.timeout_in_ms = 60000;  // a lost collective fails here, never hangs
    Status s = session.Run(ro, {{"x", in}, {"k", kin}}, names, {}, &out);
    INFO(s.ToString());
    REQUIRE(s.ok());
    if (step == 0) {
      auto placement = session.LastPlacement();
      for (const char* n : {"t0/mean0", "t0/sent", "t0/first0"}) CHECK(placement[n] == gpu0);
      for (const char* n : {"t1/mean1", "t1/got", "t1/first1"}) CHECK(placement[n] == gpu1);
    }
    REQUIRE(out.size() == fetched.size());
    int bad = 0;
    for (int64_t i = 0; i < in.NumElements(); ++i) {
      const float v = in.data<float>()[i], mean = (v * v + (v + v)) / 2;
      const float m0 = out[0].data<float>()[i], m1 = out[1].data<float>()[i];
      const float b0 = out[2].data<float>()[i], b1 = out[3].data<float>()[i];
      const float f0 = out[6].data<float>()[i], f1 = out[7].data<float>()[i];
      if (m0 != m1 || std::fabs(m0 - mean) > 1e-5f * (1 + std::fabs(mean)) || b0 != v * v || b1 != v * v ||
          f0 != v * v || f1 != v * v ||  // rank 0 is task 0: the members are ordered by task name
          out[8].data<float>()[i] != m0 + b0 || out[9].data<float>()[i] != m1 + b1 ||
          out[10].data<float>()[i] != f0 + f0 || out[11].data<float>()[i] != f1 + f1) {
        if (++bad <= 5)
          UNSCOPED_INFO("element " << i << " (" << v << "): means " << m0 << ", " << m1 << "; broadcast " << b0 << ", "
                                   << b1 << "; first " << f0 << ", " << f1);
      }
    }
    CHECK(bad == 0);
    for (int r : {4, 5}) {
      REQUIRE(out[r].dtype() == DT_INT32);
      CHECK(test::Values<int32_t>(out[r]) == std::vector<int32_t>({3, -6, 3 * step}));
    }
  }
  session.Close();
}
