// Running out of memory in the queue, container and rendezvous actors (issue
// 13, item 1): a request whose memory is refused fails its step with
// ResourceExhausted naming the queue / variable / node and the bytes asked,
// and the actor, its state and every later step go on. Memory is refused by
// budgets, not by the machine: the host allocator's limit lowered for one
// step (HostBudget, restored on every path) or a runtime's per-device budget
// (RuntimeOptions::device_memory_limit_bytes), so the tests pass alike on
// machines of any size and overcommit policy.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/queue_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/core/allocator.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::MakeTensor;
using test::ToDef;
using test::TwoThreads;
using test::Values;

namespace {

// Lowers the host allocator's budget to what is in use now plus `headroom`
// bytes, for the current scope; the old budget comes back however the scope
// ends (a failed REQUIRE throws through here).
class HostBudget {
 public:
  explicit HostBudget(int64_t headroom) : old_(cpu_allocator()->limit()) {
    cpu_allocator()->set_limit(cpu_allocator()->bytes_in_use() + headroom);
  }
  ~HostBudget() { cpu_allocator()->set_limit(old_); }
  HostBudget(const HostBudget&) = delete;
  HostBudget& operator=(const HostBudget&) = delete;

 private:
  int64_t old_;
};

constexpr int64_t kMiB = 1 << 20;

// A float vector of n elements, all `v`.
Tensor Filled(int64_t n, float v) { return MakeTensor<float>(std::vector<float>(static_cast<size_t>(n), v), {n}); }

std::string Describe(const Status& s) { return s.ToString(); }

}  // namespace

TEST_CASE("a dequeue-many whose batch is over the memory budget fails its step; the queue keeps its elements") {
  constexpr int64_t kRow = 256 * 1024;  // 1 MiB of floats per element
  Scope root = Scope::NewRootScope();
  ops::QueueOptions o;
  o.shapes = {PartialTensorShape(TensorShape{kRow})};
  o.shared_name = "memory_test_batch";
  auto q = ops::FIFOQueue(root.WithOpName("q"), {DT_FLOAT}, o);
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
  ops::QueueEnqueue(root.WithOpName("enq"), q, {x});
  ops::Identity(root.WithOpName("deq_many"), ops::QueueDequeueMany(root, q, n, {DT_FLOAT})[0]);
  ops::Identity(root.WithOpName("deq"), ops::QueueDequeue(root, q, {DT_FLOAT})[0]);
  ops::Identity(root.WithOpName("size"), ops::QueueSize(root, q));
  Runtime rt(TwoThreads());
  test::StepClient client(&rt, ToDef(root));
  for (int i = 0; i < 8; ++i) client.RunOk({{"x", Filled(kRow, static_cast<float>(i))}}, {}, {"enq"});

  const Tensor eight = Tensor::Scalar<int32_t>(8);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the same failure again: the queue actor is alive
    std::vector<Tensor> out;
    Status s;
    {
      HostBudget budget(4 * kMiB);  // the 8 MiB batch does not fit
      s = client.Run({{"n", eight}}, {"deq_many"}, {}, &out);
    }
    INFO(Describe(s));
    REQUIRE(s.code() == Code::kResourceExhausted);
    CHECK_THAT(s.message(), Catch::Contains("FIFOQueue 'memory_test_batch'"));
    CHECK_THAT(s.message(), Catch::Contains("cannot batch 8 elements"));
    CHECK_THAT(s.message(), Catch::Contains(std::to_string(8 * kRow * 4) + " bytes"));
    CHECK(out.empty());
    CHECK(client.RunOk({}, {"size"}, {})[0].scalar<int32_t>() == 8);  // nothing lost
  }
  // Later steps: the elements, intact and in order.
  auto first = client.RunOk({{"n", Tensor::Scalar<int32_t>(3)}}, {"deq_many"}, {})[0];
  REQUIRE(first.shape() == TensorShape({3, kRow}));
  for (int i = 0; i < 3; ++i) {
    CHECK(first.data<float>()[i * kRow] == static_cast<float>(i));
    CHECK(first.data<float>()[(i + 1) * kRow - 1] == static_cast<float>(i));
  }
  for (int i = 3; i < 8; ++i) {
    auto one = client.RunOk({}, {"deq"}, {})[0];
    CHECK(Values<float>(one) == std::vector<float>(static_cast<size_t>(kRow), static_cast<float>(i)));
  }
  CHECK(client.RunOk({}, {"size"}, {})[0].scalar<int32_t>() == 0);
}

TEST_CASE("an enqueue-many of more elements than memory can index fails with ResourceExhausted; the queue goes on") {
  // 2^40 rows of nothing: no tensor bytes at all, but the queue's index of
  // them would take 24 TiB. Refused by the host budget at once, whatever the
  // machine's overcommit policy, not pushed element by element.
  constexpr int64_t kRows = int64_t{1} << 40;
  Scope root = Scope::NewRootScope();
  ops::QueueOptions o;
  o.shared_name = "memory_test_index";
  auto q = ops::FIFOQueue(root.WithOpName("q"), {DT_FLOAT}, o);
  auto xs = ops::Placeholder(root.WithOpName("xs"), DT_FLOAT);
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::QueueEnqueueMany(root.WithOpName("enq_many"), q, {xs});
  ops::QueueEnqueue(root.WithOpName("enq"), q, {x});
  ops::Identity(root.WithOpName("deq"), ops::QueueDequeue(root, q, {DT_FLOAT})[0]);
  ops::Identity(root.WithOpName("size"), ops::QueueSize(root, q));
  Runtime rt(TwoThreads());
  test::StepClient client(&rt, ToDef(root));

  std::vector<Tensor> out;
  Status s = client.Run({{"xs", Tensor(DT_FLOAT, TensorShape({kRows, 0}))}}, {}, {"enq_many"}, &out);
  INFO(Describe(s));
  REQUIRE(s.code() == Code::kResourceExhausted);
  CHECK_THAT(s.message(), Catch::Contains("FIFOQueue 'memory_test_index': cannot enqueue " + std::to_string(kRows)));
  CHECK_THAT(s.message(), Catch::Contains(" bytes for the index of " + std::to_string(kRows) + " queue elements"));
  CHECK(client.RunOk({}, {"size"}, {})[0].scalar<int32_t>() == 0);
  client.RunOk({{"x", MakeTensor<float>({4.f, 2.f}, {2})}}, {}, {"enq"});
  CHECK(Values<float>(client.RunOk({}, {"deq"}, {})[0]) == std::vector<float>{4.f, 2.f});
}

TEST_CASE("a variable update over the memory budget fails its step; the variable keeps its value") {
  // Large enough to be applied on the compute pool (kInlineUpdateElements),
  // then small enough for the handler: both paths.
  for (const int64_t n : {int64_t{1} << 20, int64_t{4096}}) {
    INFO("elements " << n);
    const std::string name = "memory_test_v" + std::to_string(n);
    Scope root = Scope::NewRootScope();
    auto v = ops::Variable(root.WithOpName("v"), PartialTensorShape(), DT_FLOAT, "", name);
    auto value = ops::Placeholder(root.WithOpName("value"), DT_FLOAT);
    // validate_shape=false: a value of another shape cannot be copied into
    // the variable's buffer, Assign needs a new one.
    ops::Assign(root.WithOpName("assign"), v, value, /*validate_shape=*/false);
    ops::Identity(root.WithOpName("read"), v);
    Runtime rt(TwoThreads());
    test::StepClient client(&rt, ToDef(root));
    client.RunOk({{"value", Filled(n, 1.f)}}, {}, {"assign"});

    const Tensor larger = Filled(4 * n, 7.f);  // allocated before the budget is lowered
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::vector<Tensor> out;
      Status s;
      {
        HostBudget budget(8 * n);  // half the new value's bytes: its copy does not fit
        s = client.Run({{"value", larger}}, {}, {"assign"}, &out);
      }
      INFO(Describe(s));
      REQUIRE(s.code() == Code::kResourceExhausted);
      CHECK_THAT(s.message(), Catch::Contains("Assign of variable " + name));
      CHECK_THAT(s.message(), Catch::Contains(std::to_string(4 * n * 4) + " bytes"));
      // The old value, unchanged.
      CHECK(Values<float>(client.RunOk({}, {"read"}, {})[0]) == std::vector<float>(static_cast<size_t>(n), 1.f));
    }
    // With the budget back, the same update works.
    client.RunOk({{"value", larger}}, {}, {"assign"});
    CHECK(Values<float>(client.RunOk({}, {"read"}, {})[0]) == std::vector<float>(static_cast<size_t>(4 * n), 7.f));
  }
}

TEST_CASE("a Send/Recv across two CPU devices whose tensor is over a device's budget fails the step; later steps work") {
  RuntimeOptions options = TwoThreads(2);
  options.device_memory_limit_bytes = 16 * kMiB;
  Runtime rt(options);
  // CPU:0 makes x (dims fed); CPU:1 receives it and computes two results of
  // its size, both fetched (both held to the step's end).
  Scope root = Scope::NewRootScope();
  auto dims = ops::Placeholder(root.WithOpName("dims"), DT_INT32);
  auto x = ops::Fill(root.WithOpName("x").WithDevice("CPU:0"), dims, 1.5f);
  ops::Neg(root.WithOpName("neg").WithDevice("CPU:1"), x);
  ops::Square(root.WithOpName("square").WithDevice("CPU:1"), x);
  test::StepClient client(&rt, ToDef(root));
  auto dims_of = [](int32_t n) { return MakeTensor<int32_t>({n}, {1}); };
  struct Case {
    const char* what;
    int32_t elements;
    const char* node;  // the node that cannot have its memory, when known ("": one of CPU:1's)
  };
  for (const Case& c : {Case{"the sender's tensor does not fit on CPU:0", 5 * 1024 * 1024, "x"},
                        Case{"what CPU:1 makes of the received tensor does not fit", 3 * 1024 * 1024, ""}}) {
    INFO(c.what);
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::vector<Tensor> out;
      Status s = client.Run({{"dims", dims_of(c.elements)}}, {"neg", "square"}, {}, &out);
      INFO(Describe(s));
      REQUIRE(s.code() == Code::kResourceExhausted);
      if (*c.node) CHECK_THAT(s.message(), Catch::Contains(std::string("'") + c.node + "'"));
      CHECK_THAT(s.message(), Catch::Contains(std::to_string(int64_t{c.elements} * 4) + " bytes"));
      // A later step of the same signature works.
      auto fine = client.RunOk({{"dims", dims_of(1000)}}, {"neg", "square"}, {});
      CHECK(Values<float>(fine[0]) == std::vector<float>(1000, -1.5f));
      CHECK(Values<float>(fine[1]) == std::vector<float>(1000, 2.25f));
    }
  }
}

TEST_CASE("a padding queue's batch whose padded shape has more than 2^63-1 elements fails; the queue goes on") {
  // [2^32, 0] and [0, 2^32] hold nothing, but padded together they are
  // [2, 2^32, 2^32]: 2^65 elements, which no shape can count.
  constexpr int64_t kBig = int64_t{1} << 32;
  Scope root = Scope::NewRootScope();
  ops::QueueOptions o;
  o.shapes = {PartialTensorShape(std::vector<int64_t>{-1, -1})};
  o.shared_name = "memory_test_padding";
  auto q = ops::PaddingFIFOQueue(root.WithOpName("q"), {DT_FLOAT}, o);
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  auto n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
  ops::QueueEnqueue(root.WithOpName("enq"), q, {x});
  ops::Identity(root.WithOpName("deq_many"), ops::QueueDequeueMany(root, q, n, {DT_FLOAT})[0]);
  ops::Identity(root.WithOpName("size"), ops::QueueSize(root, q));
  Runtime rt(TwoThreads());
  test::StepClient client(&rt, ToDef(root));
  client.RunOk({{"x", Tensor(DT_FLOAT, TensorShape({kBig, 0}))}}, {}, {"enq"});
  client.RunOk({{"x", Tensor(DT_FLOAT, TensorShape({0, kBig}))}}, {}, {"enq"});
  std::vector<Tensor> out;
  Status s = client.Run({{"n", Tensor::Scalar<int32_t>(2)}}, {"deq_many"}, {}, &out);
  INFO(Describe(s));
  REQUIRE(s.code() == Code::kResourceExhausted);
  CHECK_THAT(s.message(), Catch::Contains("PaddingFIFOQueue 'memory_test_padding'") &&
                              Catch::Contains("more than 2^63-1 elements"));
  CHECK(client.RunOk({}, {"size"}, {})[0].scalar<int32_t>() == 2);  // both still there
  // Each alone batches fine.
  auto first = client.RunOk({{"n", Tensor::Scalar<int32_t>(1)}}, {"deq_many"}, {})[0];
  CHECK(first.shape() == TensorShape({1, kBig, 0}));
  auto second = client.RunOk({{"n", Tensor::Scalar<int32_t>(1)}}, {"deq_many"}, {})[0];
  CHECK(second.shape() == TensorShape({1, 0, kBig}));
}
