// StagingArea (ops/queue/staging_ops.cpp, TensorFlow's Stage/Unstage) through
// sessions on the CPU: tuples in order across steps, a full area's Stage and
// an empty area's Unstage waiting (asynchronously) until the other side runs,
// size and clear, areas kept apart by name, and the prefetch pattern of an
// input pipeline: each step's model reads the batch the previous step staged,
// in the pipeline's order. The same kernels on a GPU (device tensors staged
// onto it by the copy stream) are gpu_training_test's. Every wait is bounded.
#include <catch2/catch.hpp>

#include <future>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/queue_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/ops/attrs.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::Finished;
using test::MakeTensor;
using test::StillWaiting;
using test::ToDef;
using test::TwoThreads;
using test::Values;

namespace {

// An area "area" of (float [n], int32 scalar) tuples with capacity 2:
// "put" stages the fed x and k, "get" unstages (fetch "got_x", "got_k"),
// "size", "clear".
struct AreaGraph {
  explicit AreaGraph(int64_t capacity = 2, const std::string& name = "area") {
    Scope root = Scope::NewRootScope();
    ops::StagingArea area{{DT_FLOAT, DT_INT32}, {capacity, "", name}};
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto k = ops::Placeholder(root.WithOpName("k"), DT_INT32);
    area.Put(root.WithOpName("put"), {x, k});
    OutputList got = area.Get(root.WithOpName("get"));
    ops::Identity(root.WithOpName("got_x"), got[0]);
    ops::Identity(root.WithOpName("got_k"), got[1]);
    ops::Identity(root.WithOpName("size"), area.Size(root.WithOpName("area_size")));
    area.Clear(root.WithOpName("clear"));
    def = ToDef(root);
  }
  proto::GraphDef def;
};

class Client : public test::StepClient {
 public:
  using StepClient::StepClient;
  void Put(float v, int32_t k) { RunOk(Feeds(v, k), {}, {"put"}); }
  std::future<Status> StartPut(float v, int32_t k) { return Start(Feeds(v, k), {}, {"put"}, nullptr); }
  std::pair<std::vector<float>, int32_t> Get() {
    std::vector<Tensor> out = RunOk({}, {"got_x", "got_k"}, {});
    return {Values<float>(out[0]), out[1].scalar<int32_t>()};
  }
  int Size() { return RunOk({}, {"size"}, {})[0].scalar<int32_t>(); }

 private:
  static std::vector<std::pair<std::string, Tensor>> Feeds(float v, int32_t k) {
    return {{"x", MakeTensor<float>({v, v + 1}, {2})}, {"k", Tensor::Scalar<int32_t>(k)}};
  }
};

}  // namespace

TEST_CASE("staging area: tuples come out in the order staged, across steps; size and clear") {
  Runtime rt(TwoThreads());
  AreaGraph g(/*capacity=*/0);  // unbounded
  Client c(&rt, g.def);
  for (int i = 0; i < 5; ++i) c.Put(10.f * i, i);
  CHECK(c.Size() == 5);
  for (int i = 0; i < 3; ++i) {
    auto [x, k] = c.Get();
    CHECK(x == std::vector<float>({10.f * i, 10.f * i + 1}));
    CHECK(k == i);
  }
  CHECK(c.Size() == 2);
  c.RunOk({}, {}, {"clear"});
  CHECK(c.Size() == 0);
  c.Put(7, 70);
  CHECK(c.Get().second == 70);
}

TEST_CASE("staging area: a Stage into a full area waits for an Unstage, an Unstage from an empty one for a Stage") {
  Runtime rt(TwoThreads());
  AreaGraph g(/*capacity=*/2);
  Client c(&rt, g.def);
  std::vector<Tensor> out;
  auto get = c.Start({}, {"got_x", "got_k"}, {}, &out);
  REQUIRE(StillWaiting(get));  // empty: the Unstage waits, holding no thread
  c.Put(1, 1);
  REQUIRE(Finished(get).ok());
  CHECK(out[1].scalar<int32_t>() == 1);
  c.Put(2, 2);
  c.Put(3, 3);
  auto put = c.StartPut(4, 4);
  REQUIRE(StillWaiting(put));  // full at 2
  CHECK(c.Size() == 2);
  CHECK(c.Get().second == 2);
  REQUIRE(Finished(put).ok());
  CHECK(c.Get().second == 3);
  CHECK(c.Get().second == 4);
  // A clear makes room too.
  c.Put(5, 5);
  c.Put(6, 6);
  auto put7 = c.StartPut(7, 7);
  REQUIRE(StillWaiting(put7));
  c.RunOk({}, {}, {"clear"});
  REQUIRE(Finished(put7).ok());
  CHECK(c.Get().second == 7);
  // An Unstage that waits past its step's deadline fails DeadlineExceeded; the area is intact after.
  Status s = c.Run({}, {"got_k"}, {}, &out, 300);
  CHECK(s.code() == Code::kDeadlineExceeded);
  c.Put(8, 8);
  CHECK(c.Get().second == 8);
  CHECK(c.Size() == 0);
}

TEST_CASE("staging area: areas are apart by shared_name; memory_limit is refused naming the node") {
  Runtime rt(TwoThreads());
  AreaGraph a(0, "a"), b(0, "b");
  Client ca(&rt, a.def), cb(&rt, b.def);
  ca.Put(1, 1);
  CHECK(ca.Size() == 1);
  CHECK(cb.Size() == 0);
  // Two sessions naming the same area share it (a container's resource, as in TensorFlow).
  AreaGraph a2(0, "a");
  Client ca2(&rt, a2.def);
  CHECK(ca2.Get().second == 1);

  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  root.WithOpName("limited").AddOp(
      "Stage", {{x}},
      {{"dtypes", AttrTypeList({DT_FLOAT})}, {"memory_limit", AttrInt(1 << 20)}, {"shared_name", AttrString("m")}});
  Client limited(&rt, ToDef(root));
  std::vector<Tensor> out;
  Status s = limited.Run({{"x", Tensor::Scalar<float>(1)}}, {}, {"limited"}, &out);
  INFO(s.ToString());
  CHECK(s.code() == Code::kUnimplemented);
  CHECK(s.message().find("limited") != std::string::npos);
  CHECK(s.message().find("memory_limit") != std::string::npos);
}

TEST_CASE("staging area: the prefetch pattern; each step's model reads the batch the step before staged, in order") {
  // An input pipeline (a FIFO of batches) whose dequeued batch is staged one
  // step ahead of the model: step i unstages batch i and stages batch i+1.
  Runtime rt(TwoThreads());
  Scope root = Scope::NewRootScope();
  ops::QueueOptions qo;
  qo.shapes = {PartialTensorShape(std::vector<int64_t>{3})};
  Output q = ops::FIFOQueue(root.WithOpName("batches"), {DT_FLOAT}, qo);
  auto xs = ops::Placeholder(root.WithOpName("xs"), DT_FLOAT);
  ops::QueueEnqueueMany(root.WithOpName("fill"), q, {xs});
  ops::StagingArea area{{DT_FLOAT}, {1, "", "prefetch"}};
  Operation put = area.Put(root.WithOpName("put"), {ops::QueueDequeue(root, q, {DT_FLOAT})[0]});
  Output model = ops::Sum(root.WithOpName("model"), area.Get(root.WithOpName("get"))[0], 0);
  Client c(&rt, ToDef(root));
  std::vector<float> batches;
  for (int i = 0; i < 8 * 3; ++i) batches.push_back(static_cast<float>(i));
  c.RunOk({{"xs", MakeTensor<float>(batches, {8, 3})}}, {}, {"fill"});
  c.RunOk({}, {}, {"put"});  // the warm-up: batch 0 staged
  for (int i = 0; i < 7; ++i) {
    INFO("step " << i);
    std::vector<Tensor> out = c.RunOk({}, {"model"}, {"put"});
    CHECK(out[0].scalar<float>() == static_cast<float>(9 * i + 3));  // 3i + (3i+1) + (3i+2)
  }
  CHECK(c.RunOk({}, {"model"}, {})[0].scalar<float>() == 9.f * 7 + 3);  // the last one, staged by step 6
}

TEST_CASE("staging area: one per device (a Stage on CPU:1 is not an Unstage's on CPU:0); a shared_name is required") {
  Runtime rt(TwoThreads(2));
  Scope root = Scope::NewRootScope();
  ops::StagingArea area{{DT_FLOAT}, {0, "", "per_device"}};
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  area.Put(root.WithOpName("put1").WithDevice(test::kCpu1), {x});
  area.Put(root.WithOpName("put0").WithDevice(test::kCpu0), {x});
  ops::Identity(root.WithOpName("size0"), area.Size(root.WithDevice(test::kCpu0)));
  ops::Identity(root.WithOpName("size1"), area.Size(root.WithDevice(test::kCpu1)));
  ops::StagingArea unnamed{{DT_FLOAT}, {}};
  unnamed.Put(root.WithOpName("unnamed"), {x});
  Client c(&rt, ToDef(root));
  c.RunOk({{"x", Tensor::Scalar<float>(1)}}, {}, {"put1"});
  c.RunOk({{"x", Tensor::Scalar<float>(1)}}, {}, {"put1"});
  c.RunOk({{"x", Tensor::Scalar<float>(1)}}, {}, {"put0"});
  std::vector<Tensor> out = c.RunOk({}, {"size0", "size1"}, {});
  CHECK(out[0].scalar<int32_t>() == 1);
  CHECK(out[1].scalar<int32_t>() == 2);
  Status s = c.Run({{"x", Tensor::Scalar<float>(1)}}, {}, {"unnamed"}, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.message().find("shared_name") != std::string::npos);
}
