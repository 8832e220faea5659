// Bad input and failing kernels end their step with a Status; they never crash
// the process, hang it, or harm other steps.
#include <catch2/catch.hpp>

#include <future>
#include <stdexcept>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/core/proto/tensor.pb.h"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/ops/op_kernel.hpp"
#include "actorflow/ops/op_registry.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::ToDef;
using test::MakeTensor;

namespace {
// A kernel with a bug: it throws.
AF_REGISTER_OP("TestThrows").Input("x: float").Output("y: float");
class TestThrowsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override { throw std::runtime_error("kernel bug"); }
};
AF_REGISTER_KERNEL(KernelDefBuilder("TestThrows").Device(DEVICE_CPU), TestThrowsOp);

}  // namespace

TEST_CASE("a kernel that throws fails its step, and the device keeps working") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  root.WithOpName("boom").AddOp("TestThrows", {{x}});
  ops::Neg(root.WithOpName("fine"), x);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  Status s = session.Run({{"x", Tensor::Scalar<float>(1)}}, {"boom"}, {}, &out);
  REQUIRE(s.code() == Code::kInternal);
  REQUIRE_THAT(s.message(), Catch::Contains("'boom'") && Catch::Contains("kernel bug"));
  REQUIRE(session.Run({{"x", Tensor::Scalar<float>(1)}}, {"fine"}, {}, &out).ok());
  REQUIRE(out[0].scalar<float>() == -1.f);
}

TEST_CASE("a constant too large for memory is ResourceExhausted, not a crash") {
  for (int64_t dim : {int64_t{1000000000000}, int64_t{4611686018427387887}}) {
    proto::GraphDef def;
    std::string text = "node { name: 'big' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } } "
                       "attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: " +
                       std::to_string(dim) + " } } float_val: 1 } } } }";
    REQUIRE(ParseGraphDefText(text, &def).ok());
    Session session;
    REQUIRE(session.Create(def).ok());
    std::vector<Tensor> out;
    Status s = session.Run({}, {"big"}, {}, &out);
    REQUIRE(s.code() == Code::kResourceExhausted);
  }
  REQUIRE(Tensor::Create(nullptr, DT_DOUBLE, TensorShape{int64_t{1} << 40, int64_t{1} << 20}, nullptr).code() ==
          Code::kResourceExhausted);
}

TEST_CASE("a deadline interrupts a long chain of cheap nodes") {
  // ~200k inline nodes take well over a millisecond; the actor must yield to
  // its mailbox between batches so the deadline message is seen.
  Scope root = Scope::NewRootScope();
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  for (int i = 0; i < 200000; ++i) x = ops::Neg(root, x);
  ops::Identity(root.WithOpName("out"), x);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  REQUIRE(session.Run({{"x", Tensor::Scalar<float>(1)}}, {"out"}, {}, &out).ok());
  REQUIRE(out[0].scalar<float>() == 1.f);
  RunOptions opts;
  opts.timeout_in_ms = 1;
  Status s = session.Run(opts, {{"x", Tensor::Scalar<float>(1)}}, {"out"}, {}, &out);
  REQUIRE(s.code() == Code::kDeadlineExceeded);
}

TEST_CASE("timeouts out of range are rejected") {
  Scope root = Scope::NewRootScope();
  ops::Const(root.WithOpName("c"), 1);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  RunOptions opts;
  opts.timeout_in_ms = INT64_MAX;
  std::vector<Tensor> out;
  REQUIRE(session.Run(opts, {}, {"c"}, {}, &out).code() == Code::kInvalidArgument);
  opts.timeout_in_ms = -1;
  REQUIRE(session.Run(opts, {}, {"c"}, {}, &out).code() == Code::kInvalidArgument);
}

TEST_CASE("destroying a runtime while a step's kernels still run drains them safely") {
  Scope root = Scope::NewRootScope();
  Output m = test::SlowChain(root, 512, 8);
  ops::Sum(root.WithOpName("out"), m, {0, 1});
  const proto::GraphDef def = ToDef(root);
  // No Catch assertion off the main thread (Catch is not thread-safe): the
  // thread returns what Create and Run said; the main thread checks.
  auto done = std::async(std::launch::async, [&def] {
    RuntimeOptions ro;
    ro.num_threads = 2;
    Runtime rt(ro);
    SessionOptions so;
    so.runtime = &rt;
    Session session(so);
    const Status created = session.Create(def);
    if (!created.ok()) return std::make_pair(created, Code::kOk);
    RunOptions opts;
    opts.timeout_in_ms = 1;
    std::vector<Tensor> out;
    Status s = session.Run(opts, {}, {"out"}, {}, &out);  // answered at the deadline; MatMuls still running
    return std::make_pair(created, s.code());
  });  // session and runtime are destroyed here, kernels in flight
  REQUIRE(done.wait_for(std::chrono::seconds(120)) == std::future_status::ready);
  const auto [created, code] = done.get();
  INFO(created.ToString());
  REQUIRE(created.ok());
  REQUIRE(code == Code::kDeadlineExceeded);
}

TEST_CASE("reductions: empty mean is NaN, axis 0 of a scalar is invalid") {
  Scope root = Scope::NewRootScope();
  auto e = ops::Placeholder(root.WithOpName("e"), DT_FLOAT);
  auto out = test::RunOk(root, {ops::Mean(root, e, 0)}, {{"e", Tensor(DT_FLOAT, TensorShape{0})}});
  REQUIRE(std::isnan(out[0].scalar<float>()));
  Scope bad = Scope::NewRootScope();
  auto p = ops::Placeholder(bad.WithOpName("p"), DT_FLOAT);
  Status s = test::RunStatus(bad, {ops::Sum(bad, p, 0)}, {{"p", Tensor::Scalar<float>(1)}});
  REQUIRE(s.code() == Code::kInvalidArgument);
}

TEST_CASE("MatMul with an empty dimension returns an empty product") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Placeholder(root.WithOpName("a"), DT_FLOAT);
  auto b = ops::Placeholder(root.WithOpName("b"), DT_FLOAT);
  auto c = ops::MatMul(root.WithOpName("c"), a, b, false, true);
  auto out = test::RunOk(root, {c}, {{"a", Tensor(DT_FLOAT, TensorShape{2048, 1024})},
                                    {"b", Tensor(DT_FLOAT, TensorShape{0, 1024})}});
  REQUIRE(out[0].shape().dim_sizes() == std::vector<int64_t>{2048, 0});
}

TEST_CASE("closing a session cancels its step in flight") {
  Scope root = Scope::NewRootScope();
  Output m = test::SlowChain(root);
  ops::Sum(root.WithOpName("out"), m, {0, 1});
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  auto step = std::async(std::launch::async, [&session] {
    std::vector<Tensor> out;
    return session.Run({}, {"out"}, {}, &out);
  });
  step.wait_for(std::chrono::milliseconds(20));  // let it start; Cancelled either way
  REQUIRE(session.Close().ok());
  REQUIRE(step.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  REQUIRE(step.get().code() == Code::kCancelled);
}

TEST_CASE("a short deadline still fires while many long ones are pending") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::Neg(root.WithOpName("quick"), x);
  Output m = test::SlowChain(root);
  ops::Sum(root.WithOpName("slow"), m, {0, 1});
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  RunOptions hour;
  hour.timeout_in_ms = 3600 * 1000;
  std::vector<Tensor> out;
  for (int i = 0; i < 100; ++i)  // leaves 100 hour-long deadlines in the device's queue
    REQUIRE(session.Run(hour, {{"x", Tensor::Scalar<float>(1)}}, {"quick"}, {}, &out).ok());
  RunOptions short_deadline;
  short_deadline.timeout_in_ms = 1;
  REQUIRE(session.Run(short_deadline, {}, {"slow"}, {}, &out).code() == Code::kDeadlineExceeded);
}
