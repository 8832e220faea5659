// Gradient accumulators through sessions (ops/queue/accumulator_ops.cpp,
// actors/accumulator_actor.hpp), with TensorFlow's ConditionalAccumulator
// semantics: mean over the gradients accumulated (or sum), a take that waits
// inside the actor until enough are in, stale gradients dropped, the global
// step, shapes and dtypes checked, cancellation by a failing step, sharing by
// name. Every wait is bounded: a test fails, never hangs.
#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/accumulator_ops.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::Finished;
using test::MakeTensor;
using test::StillWaiting;
using test::ToDef;
using test::TwoThreads;
using test::Values;

namespace {

// An accumulator "acc" of float gradients of `shape`, with the ops around it:
//   g (fed float), step (fed int64) -> "apply"; n (fed int32) -> "take";
//   "num"; new_step (fed int64) -> "set_step".
struct AccGraph {
  explicit AccGraph(std::initializer_list<int64_t> dims, const std::string& reduction = "MEAN",
                    const std::string& shared_name = "")
      : AccGraph(PartialTensorShape(std::vector<int64_t>(dims)), reduction, shared_name) {}
  AccGraph(const PartialTensorShape& shape, const std::string& reduction, const std::string& shared_name,
           DataType dtype = DT_FLOAT) {
    Scope root = Scope::NewRootScope();
    ops::AccumulatorOptions o;
    o.reduction_type = reduction;
    o.shared_name = shared_name;
    Output acc = ops::ConditionalAccumulator(root.WithOpName("acc"), dtype, shape, o);
    auto g = ops::Placeholder(root.WithOpName("g"), dtype);
    auto step = ops::Placeholder(root.WithOpName("step"), DT_INT64);
    auto n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
    auto new_step = ops::Placeholder(root.WithOpName("new_step"), DT_INT64);
    ops::AccumulatorApplyGradient(root.WithOpName("apply"), acc, step, g);
    ops::Identity(root.WithOpName("take"), ops::AccumulatorTakeGradient(root, acc, n, dtype));
    ops::Identity(root.WithOpName("num"), ops::AccumulatorNumAccumulated(root, acc));
    ops::Identity(root.WithOpName("dropped"), ops::AccumulatorNumDropped(root, acc));
    ops::AccumulatorSetGlobalStep(root.WithOpName("set_step"), acc, new_step);
    def = ToDef(root);
  }
  proto::GraphDef def;
};

class Client : public test::StepClient {
 public:
  using StepClient::StepClient;
  Status Apply(const std::vector<float>& g, int64_t step = 0) {
    std::vector<Tensor> out;
    return Run({{"g", MakeTensor<float>(g, {static_cast<int64_t>(g.size())})}, {"step", Tensor::Scalar<int64_t>(step)}},
               {}, {"apply"}, &out);
  }
  void ApplyOk(const std::vector<float>& g, int64_t step = 0) {
    Status s = Apply(g, step);
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  std::vector<float> Take(int n) { return Values<float>(RunOk({{"n", Tensor::Scalar<int32_t>(n)}}, {"take"}, {})[0]); }
  int Num() { return RunOk({}, {"num"}, {})[0].scalar<int32_t>(); }
  int64_t Dropped() { return RunOk({}, {"dropped"}, {})[0].scalar<int64_t>(); }
  void SetStep(int64_t s) { RunOk({{"new_step", Tensor::Scalar<int64_t>(s)}}, {}, {"set_step"}); }
};

}  // namespace

TEST_CASE("accumulator: a take gives the mean of every gradient accumulated (or their sum), and resets") {
  Runtime rt(TwoThreads());
  AccGraph mean({2});
  Client c(&rt, mean.def);
  c.ApplyOk({1, 2});
  c.ApplyOk({3, 4});
  c.ApplyOk({5, 6});
  REQUIRE(c.Num() == 3);
  REQUIRE(c.Take(2) == std::vector<float>{3, 4});  // all three, divided by 3: TensorFlow's rule
  REQUIRE(c.Num() == 0);
  AccGraph sum({2}, "SUM");
  Client d(&rt, sum.def);
  d.ApplyOk({1, 2});
  d.ApplyOk({3, 4});
  REQUIRE(d.Take(2) == std::vector<float>{4, 6});
  // The applied tensors are not changed by the accumulation (copy on write).
  d.ApplyOk({1, 1}, 1);  // the take made the global step 1
  d.ApplyOk({1, 1}, 1);
  REQUIRE(d.Take(1) == std::vector<float>{2, 2});
}

TEST_CASE("accumulator: a take waits, holding no thread, until enough gradients are in") {
  Runtime rt(TwoThreads());
  AccGraph g({2});
  Client c(&rt, g.def);
  std::vector<Tensor> out;
  auto take = c.Start({{"n", Tensor::Scalar<int32_t>(2)}}, {"take"}, {}, &out);
  REQUIRE(StillWaiting(take));
  c.ApplyOk({2, 4});  // the session's other steps go on while the take waits
  REQUIRE(StillWaiting(take));
  REQUIRE(c.Num() == 1);
  c.ApplyOk({4, 8});
  REQUIRE(Finished(take).ok());
  REQUIRE(Values<float>(out[0]) == std::vector<float>{3, 6});
}

TEST_CASE("accumulator: gradients older than the global step are dropped and counted; the step follows takes and "
          "SetGlobalStep") {
  Runtime rt(TwoThreads());
  AccGraph g({2});
  Client c(&rt, g.def);
  REQUIRE(c.Dropped() == 0);
  c.ApplyOk({1, 1}, 0);
  REQUIRE(c.Take(1) == std::vector<float>{1, 1});  // global step 0 -> 1
  c.ApplyOk({9, 9}, 0);                             // stale: dropped without an error
  REQUIRE(c.Num() == 0);
  c.ApplyOk({2, 2}, 1);
  REQUIRE(c.Num() == 1);
  c.SetStep(5);
  c.ApplyOk({7, 7}, 4);  // stale
  c.ApplyOk({4, 4}, 5);
  REQUIRE(c.Num() == 2);
  REQUIRE(c.Take(2) == std::vector<float>{3, 3});
  c.SetStep(2);  // lowering it is allowed (TensorFlow only warns)
  c.ApplyOk({5, 5}, 2);
  REQUIRE(c.Num() == 1);
  // A stale gradient of the wrong shape is dropped too, before any check.
  c.SetStep(10);
  c.ApplyOk({1, 2, 3}, 0);
  REQUIRE(c.Num() == 1);
  // Every stale gradient counted (three), none of the others; takes and SetGlobalStep leave the count.
  REQUIRE(c.Dropped() == 3);
}

TEST_CASE("accumulator: wrong shapes, dtypes and arguments are InvalidArgument naming what is wrong") {
  Runtime rt(TwoThreads());
  AccGraph declared({2});
  Client c(&rt, declared.def);
  Status s = c.Apply({1, 2, 3});
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(),
               Catch::Contains("Shape mismatch") && Catch::Contains("[2]") && Catch::Contains("[3]") &&
                   Catch::Contains("acc") && Catch::Contains("apply"));
  // Undeclared shape: the first gradient fixes it until the next take.
  AccGraph open(PartialTensorShape(), "MEAN", "");
  Client o(&rt, open.def);
  o.ApplyOk({1, 2});
  s = o.Apply({1, 2, 3});
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("[2]") && Catch::Contains("[3]"));
  REQUIRE(o.Take(1) == std::vector<float>{1, 2});
  o.ApplyOk({1, 2, 3});
  // Arguments.
  std::vector<Tensor> out;
  s = c.Run({{"n", Tensor::Scalar<int32_t>(0)}}, {"take"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("num_required must be positive"));
  s = c.Run({{"g", MakeTensor<float>({1, 2}, {2})}, {"step", MakeTensor<int64_t>({0, 0}, {2})}}, {}, {"apply"}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("local_step must be scalar"));
  // A reduction other than MEAN or SUM, and a dtype the op does not take.
  AccGraph bad_reduction({2}, "MAX");
  Client b(&rt, bad_reduction.def);
  s = b.Run({}, {"num"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("reduction_type") && Catch::Contains("MAX"));
  Scope root = Scope::NewRootScope();
  ops::ConditionalAccumulator(root, DT_INT32, PartialTensorShape(std::vector<int64_t>{2}));
  REQUIRE(root.status().code() == Code::kInvalidArgument);
}

TEST_CASE("accumulator: a step timeout or a closed session cancels its waiting take; the gradients stay") {
  Runtime rt(TwoThreads());
  AccGraph g({1}, "SUM", "shared_acc");
  Client c(&rt, g.def);
  c.ApplyOk({1});
  std::vector<Tensor> out;
  Status s = c.Run({{"n", Tensor::Scalar<int32_t>(3)}}, {"take"}, {}, &out, /*timeout_ms=*/200);
  REQUIRE(s.code() == Code::kDeadlineExceeded);
  REQUIRE(c.Num() == 1);  // kept: the cancelled take took nothing
  std::future<Status> waiting;
  {
    Client closing(&rt, g.def);
    waiting = closing.Start({{"n", Tensor::Scalar<int32_t>(3)}}, {"take"}, {}, &out, 0);  // no deadline
    REQUIRE(StillWaiting(waiting));
    REQUIRE(closing.session->Close().ok());
    REQUIRE(Finished(waiting).code() == Code::kCancelled);
  }
  c.ApplyOk({2});
  REQUIRE(c.Take(2) == std::vector<float>{3});
}

TEST_CASE("accumulator: a shared name is one accumulator across sessions; declared differently, an error saying how") {
  Runtime rt(TwoThreads());
  AccGraph a({2}, "MEAN", "grads");
  Client c1(&rt, a.def), c2(&rt, a.def);
  c1.ApplyOk({1, 1});
  c2.ApplyOk({3, 3});
  REQUIRE(c1.Take(2) == std::vector<float>{2, 2});
  std::vector<Tensor> out;
  AccGraph other_shape({3}, "MEAN", "grads");
  Client c3(&rt, other_shape.def);
  Status s = c3.Run({}, {"num"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("grads") && Catch::Contains("accumulator") && Catch::Contains("[3]"));
  AccGraph other_reduction({2}, "SUM", "grads");
  Client c4(&rt, other_reduction.def);
  s = c4.Run({}, {"num"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("reduction_type is MEAN, not SUM"));
  // Private accumulators (no shared name) are one per session.
  AccGraph mine({2});
  Client p1(&rt, mine.def), p2(&rt, mine.def);
  p1.ApplyOk({1, 1});
  REQUIRE(p2.Num() == 0);
  REQUIRE(p1.Num() == 1);
}

TEST_CASE("accumulator: gradients from four threads at once all count exactly once") {
  Runtime rt(TwoThreads());
  AccGraph g({1}, "SUM", "busy");
  Client taker(&rt, g.def);
  std::vector<Tensor> out1;
  auto take1 = taker.Start({{"n", Tensor::Scalar<int32_t>(100)}}, {"take"}, {}, &out1);
  std::vector<std::thread> appliers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    appliers.emplace_back([&] {
      Client c(&rt, g.def);
      for (int i = 0; i < 50; ++i)
        if (!c.Apply({1}, /*step=*/1000).ok()) ++failures;  // never stale
    });
  for (auto& t : appliers) t.join();
  REQUIRE(failures == 0);
  REQUIRE(Finished(take1).ok());
  // The take got what was in when the 100th came (applies may have reached
  // the accumulator before the take did); the rest waits for the next take.
  const float first = Values<float>(out1[0])[0];
  REQUIRE(first >= 100);
  const int rest = taker.Num();
  REQUIRE(first + static_cast<float>(rest) == 200);
  if (rest > 0) REQUIRE(taker.Take(1) == std::vector<float>{static_cast<float>(rest)});
}

TEST_CASE("accumulator: shutting the runtime down with a take waiting never hangs") {
  std::future<Status> waiting;
  std::vector<Tensor> out;
  {
    auto rt = std::make_unique<Runtime>(TwoThreads());
    AccGraph g({1});
    auto c = std::make_unique<Client>(rt.get(), g.def);
    waiting = c->Start({{"n", Tensor::Scalar<int32_t>(1)}}, {"take"}, {}, &out, 0);
    REQUIRE(StillWaiting(waiting));
    REQUIRE(c->session->Close().ok());
    REQUIRE_FALSE(Finished(waiting).ok());
    c.reset();
  }  // the runtime and its accumulator actors go
}
