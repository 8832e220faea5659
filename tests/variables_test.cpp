// Variables in the container actor: reads, updates, sharing, reset, copy on
// write, the optimizers' update formulas, CountUpTo and local variables, and
// random ops' seeds (RandomShuffle included).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <future>
#include <thread>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/variables.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::MakeTensor;
using test::Open;
using test::Values;

namespace {

std::vector<Tensor> Run(Session& s, const std::vector<std::string>& fetches,
                        const std::vector<std::string>& targets = {},
                        const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
  std::vector<Tensor> out;
  Status st = s.Run(feeds, fetches, targets, &out);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return out;
}

}  // namespace

TEST_CASE("a variable keeps its value across steps; Assign, AssignAdd, AssignSub") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), PartialTensorShape(TensorShape{2}), DT_FLOAT, "", "vars_test_v1");
  ops::Assign(root.WithOpName("init"), v, {1.f, 2.f});
  ops::AssignAdd(root.WithOpName("add"), v, {10.f, 20.f});
  ops::AssignSub(root.WithOpName("sub"), v, {1.f, 1.f});
  ops::Identity(root.WithOpName("read"), v);
  auto session = Open(root);
  auto out = Run(*session, {"init"});
  CHECK(Values<float>(out[0]) == std::vector<float>{1, 2});  // fetching a ref reads the value
  CHECK(Values<float>(Run(*session, {"read"})[0]) == std::vector<float>{1, 2});
  Run(*session, {}, {"add"});
  Run(*session, {}, {"add"});
  CHECK(Values<float>(Run(*session, {"read"})[0]) == std::vector<float>{21, 42});
  CHECK(Values<float>(Run(*session, {"sub"})[0]) == std::vector<float>{20, 41});
  // Another session of the process sees the same variable.
  Scope other = Scope::NewRootScope();
  auto same = ops::Variable(other.WithOpName("elsewhere"), PartialTensorShape(TensorShape{2}), DT_FLOAT, "", "vars_test_v1");
  ops::Identity(other.WithOpName("r"), same);
  auto session2 = Open(other);
  CHECK(Values<float>(Run(*session2, {"r"})[0]) == std::vector<float>{20, 41});
}

TEST_CASE("reading an uninitialized variable fails with FailedPrecondition naming it") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("never_set"), PartialTensorShape(TensorShape{2}), DT_FLOAT);
  ops::Identity(root.WithOpName("read"), v);
  ops::AssignAdd(root.WithOpName("add"), v, {1.f, 1.f});
  auto session = Open(root);
  std::vector<Tensor> out;
  Status s = session->Run({}, {"read"}, {}, &out);
  CHECK(s.code() == Code::kFailedPrecondition);
  CHECK_THAT(s.message(), Catch::Contains("uninitialized value never_set") && Catch::Contains("read"));
  s = session->Run({}, {}, {"add"}, &out);
  CHECK(s.code() == Code::kFailedPrecondition);
}

TEST_CASE("a step's variable reads go out together, each after what its reader depends on") {
  // Twenty readers ready at once share one read; each gets its own variable.
  Scope root = Scope::NewRootScope();
  std::vector<Output> reads;
  std::vector<Operation> inits;
  for (int i = 0; i < 20; ++i) {
    auto v = ops::Variable(root.WithOpName("batched_" + std::to_string(i)), PartialTensorShape(TensorShape{}),
                           DT_FLOAT);
    inits.push_back(ops::Assign(root.WithOpName("init_" + std::to_string(i)), v, static_cast<float>(i)).op());
    reads.push_back(ops::Identity(root.WithOpName("read_" + std::to_string(i)), v));
  }
  ops::AddN(root.WithOpName("sum"), std::vector<Input>(reads.begin(), reads.end()));
  // A reader behind an update reads after it, in a later batch.
  auto later = ops::Variable(root.WithOpName("later"), PartialTensorShape(TensorShape{}), DT_FLOAT);
  auto set_later = ops::Assign(root.WithOpName("set_later"), later, 5.f);
  ops::Identity(root.WithOpName("read_later").WithControlDependencies({set_later.op()}), later);
  auto unset = ops::Variable(root.WithOpName("unset"), PartialTensorShape(TensorShape{}), DT_FLOAT);
  auto read_unset = ops::Identity(root.WithOpName("read_unset"), unset);
  ops::AddN(root.WithOpName("sum_with_unset"), {reads[3], read_unset, reads[7]});
  auto session = Open(root);
  std::vector<std::string> init_names;
  for (const auto& op : inits) init_names.push_back(op.name());
  Run(*session, {}, init_names);
  CHECK(Values<float>(Run(*session, {"sum"})[0]) == std::vector<float>{190});
  auto out = Run(*session, {"read_3", "read_17", "read_later"});
  CHECK(Values<float>(out[0]) == std::vector<float>{3});
  CHECK(Values<float>(out[1]) == std::vector<float>{17});
  CHECK(Values<float>(out[2]) == std::vector<float>{5});
  // One uninitialized variable in the batch fails the step, naming it; the
  // others are intact for the next step.
  Status s = session->Run({}, {"sum_with_unset"}, {}, &out);
  CHECK(s.code() == Code::kFailedPrecondition);
  CHECK_THAT(s.message(), Catch::Contains("uninitialized value unset"));
  CHECK(Values<float>(Run(*session, {"sum"})[0]) == std::vector<float>{190});
}

TEST_CASE("a step's read keeps its bytes: an update copies only while a reader holds the buffer") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("cow"), PartialTensorShape(TensorShape{3}), DT_FLOAT, "", "vars_test_cow");
  ops::Assign(root.WithOpName("init"), v, ops::Fill(root, {3}, 1.f));
  ops::AssignAdd(root.WithOpName("add"), v, {1.f, 1.f, 1.f});
  ops::Identity(root.WithOpName("read"), v);
  auto session = Open(root);
  Run(*session, {}, {"init"});
  const void* before;
  {
    Tensor held = Run(*session, {"read"})[0];
    before = held.raw_data();
    Run(*session, {}, {"add"});  // `held` still references the old buffer
    CHECK(Values<float>(held) == std::vector<float>{1, 1, 1});
  }
  Tensor now = Run(*session, {"read"})[0];
  CHECK(Values<float>(now) == std::vector<float>{2, 2, 2});
  CHECK(now.raw_data() != before);  // copied on write
  const void* current = now.raw_data();
  now = Tensor();                    // no reader left
  Run(*session, {}, {"add"});
  Tensor after = Run(*session, {"read"})[0];
  CHECK(Values<float>(after) == std::vector<float>{3, 3, 3});
  CHECK(after.raw_data() == current);  // updated in place
}

TEST_CASE("Assign checks shapes unless validate_shape is false; shared declarations must agree") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("shaped"), PartialTensorShape(TensorShape{2}), DT_FLOAT, "", "vars_shape");
  Output bad_value = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::Assign(root.WithOpName("assign"), v, bad_value);
  auto loose = ops::Variable(root.WithOpName("loose"), PartialTensorShape(), DT_FLOAT, "", "vars_loose");
  ops::Assign(root.WithOpName("reshape"), loose, bad_value, /*validate_shape=*/false);
  auto session = Open(root);
  std::vector<Tensor> out;
  Status s = session->Run({{"x", MakeTensor<float>({1, 2, 3}, {3})}}, {"assign"}, {}, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("lhs shape= [2] rhs shape= [3]"));
  REQUIRE(session->Run({{"x", MakeTensor<float>({1, 2, 3}, {3})}}, {"reshape"}, {}, &out).ok());
  CHECK(out[0].shape() == TensorShape{3});
  REQUIRE(session->Run({{"x", MakeTensor<float>({1, 2, 3, 4}, {2, 2})}}, {"reshape"}, {}, &out).ok());
  CHECK(out[0].shape() == (TensorShape{2, 2}));

  // The same (container, shared_name) declared with another dtype or shape.
  Scope other = Scope::NewRootScope();
  auto clash = ops::Variable(other.WithOpName("clash"), PartialTensorShape(TensorShape{5}), DT_FLOAT, "", "vars_shape");
  ops::Identity(other.WithOpName("r"), clash);
  auto session2 = Open(other);
  s = session2->Run({}, {"r"}, {}, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("Trying to share variable vars_shape"));
}

TEST_CASE("ResetContainers drops the named containers' variables only") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Variable(root.WithOpName("a"), PartialTensorShape(TensorShape{}), DT_INT32, "reset_me", "");
  auto b = ops::Variable(root.WithOpName("b"), PartialTensorShape(TensorShape{}), DT_INT32, "keep_me", "");
  ops::Assign(root.WithOpName("set_a"), a, 1);
  ops::Assign(root.WithOpName("set_b"), b, 2);
  ops::Identity(root.WithOpName("ra"), a);
  ops::Identity(root.WithOpName("rb"), b);
  auto session = Open(root);
  Run(*session, {}, {"set_a", "set_b"});
  REQUIRE(session->ResetContainers({"reset_me"}).ok());
  std::vector<Tensor> out;
  CHECK(session->Run({}, {"ra"}, {}, &out).code() == Code::kFailedPrecondition);
  CHECK(Values<int32_t>(Run(*session, {"rb"})[0]) == std::vector<int32_t>{2});
  Run(*session, {}, {"set_a"});  // usable again
  CHECK(Values<int32_t>(Run(*session, {"ra"})[0]) == std::vector<int32_t>{1});
}

TEST_CASE("concurrent updates of one variable with use_locking=true are atomic") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("counter"), PartialTensorShape(TensorShape{4}), DT_INT64, "", "vars_counter");
  ops::Assign(root.WithOpName("zero"), v, ops::Fill(root, {4}, int64_t{0}));
  ops::AssignAdd(root.WithOpName("inc"), v, ops::Fill(root, {4}, int64_t{1}), /*use_locking=*/true);
  // A large variable: its updates run on the pool while others wait for its lock.
  auto big = ops::Variable(root.WithOpName("big"), PartialTensorShape(TensorShape{100000}), DT_FLOAT, "", "vars_big");
  ops::Assign(root.WithOpName("big_zero"), big, ops::Fill(root, {100000}, 0.f));
  ops::AssignAdd(root.WithOpName("big_inc"), big, ops::Fill(root, {100000}, 1.f), /*use_locking=*/true);
  ops::Identity(root.WithOpName("read"), v);
  ops::Sum(root.WithOpName("big_sum"), big, 0);
  auto session = Open(root);
  Run(*session, {}, {"zero", "big_zero"});
  constexpr int kThreads = 4, kSteps = 200;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kSteps; ++i) {
        std::vector<Tensor> out;
        if (!session->Run({}, {}, {"inc", "big_inc"}, &out).ok()) ++failures;
        if (i % 10 == 0 && !session->Run({}, {"big_sum"}, {}, &out).ok()) ++failures;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  CHECK(Values<int64_t>(Run(*session, {"read"})[0]) == std::vector<int64_t>(4, kThreads * kSteps));
  CHECK(Values<float>(Run(*session, {"big_sum"})[0])[0] == Approx(100000.0 * kThreads * kSteps));
}

namespace {

// Sets variables from values, runs one update op, returns the variables.
std::vector<std::vector<double>> ApplyOnce(const std::function<Output(const Scope&, const std::vector<Output>&)>& op,
                                           const std::vector<std::vector<double>>& initial, const std::string& tag) {
  Scope root = Scope::NewRootScope();
  std::vector<Output> vars;
  std::vector<std::string> inits, reads;
  for (size_t i = 0; i < initial.size(); ++i) {
    const std::string name = tag + "_v" + std::to_string(i);
    auto v = ops::Variable(root.WithOpName(name), PartialTensorShape(TensorShape{2}), DT_DOUBLE);
    Tensor t(DT_DOUBLE, TensorShape{2});
    t.data<double>()[0] = initial[i][0];
    t.data<double>()[1] = initial[i][1];
    ops::Assign(root.WithOpName(name + "_init"), v, t);
    ops::Identity(root.WithOpName(name + "_read"), v);
    vars.push_back(v);
    inits.push_back(name + "_init");
    reads.push_back(name + "_read");
  }
  op(root.WithOpName(tag + "_apply"), vars);
  auto session = Open(root);
  Run(*session, {}, inits);
  Run(*session, {}, {tag + "_apply"});
  std::vector<std::vector<double>> out;
  for (auto& t : Run(*session, reads)) out.push_back(Values<double>(t));
  return out;
}

}  // namespace

TEST_CASE("the optimizers' update ops follow TensorFlow's formulas") {
  const double g0 = 0.5, g1 = -2.0;
  Tensor grad(DT_DOUBLE, TensorShape{2});
  grad.data<double>()[0] = g0;
  grad.data<double>()[1] = g1;
  SECTION("ApplyGradientDescent") {
    auto r = ApplyOnce([&](const Scope& s, const std::vector<Output>& v) { return ops::ApplyGradientDescent(s, v[0], 0.1, grad); },
                       {{1, 2}}, "gd");
    CHECK(r[0][0] == Approx(1 - 0.1 * g0));
    CHECK(r[0][1] == Approx(2 - 0.1 * g1));
  }
  SECTION("ApplyMomentum, plain and Nesterov") {
    for (bool nesterov : {false, true}) {
      auto r = ApplyOnce(
          [&](const Scope& s, const std::vector<Output>& v) {
            return ops::ApplyMomentum(s, v[0], v[1], 0.1, grad, 0.9, nesterov);
          },
          {{1, 2}, {0.3, 0.4}}, nesterov ? "nest" : "mom");
      const double a0 = 0.3 * 0.9 + g0, a1 = 0.4 * 0.9 + g1;
      CHECK(r[1][0] == Approx(a0));
      CHECK(r[1][1] == Approx(a1));
      if (nesterov) {
        CHECK(r[0][0] == Approx(1 - (g0 * 0.1 + a0 * 0.9 * 0.1)));
        CHECK(r[0][1] == Approx(2 - (g1 * 0.1 + a1 * 0.9 * 0.1)));
      } else {
        CHECK(r[0][0] == Approx(1 - 0.1 * a0));
        CHECK(r[0][1] == Approx(2 - 0.1 * a1));
      }
    }
  }
  SECTION("ApplyAdam") {
    const double b1p = 0.9, b2p = 0.999, lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    auto r = ApplyOnce(
        [&](const Scope& s, const std::vector<Output>& v) {
          return ops::ApplyAdam(s, v[0], v[1], v[2], b1p, b2p, lr, b1, b2, eps, grad);
        },
        {{1, 2}, {0.1, 0.2}, {0.01, 0.02}}, "adam");
    const double alpha = lr * std::sqrt(1 - b2p) / (1 - b1p);
    const double g[2] = {g0, g1}, m0[2] = {0.1, 0.2}, v0[2] = {0.01, 0.02}, x0[2] = {1, 2};
    for (int i = 0; i < 2; ++i) {
      const double m = m0[i] + (g[i] - m0[i]) * (1 - b1);
      const double v = v0[i] + (g[i] * g[i] - v0[i]) * (1 - b2);
      CHECK(r[1][i] == Approx(m));
      CHECK(r[2][i] == Approx(v));
      CHECK(r[0][i] == Approx(x0[i] - m * alpha / (std::sqrt(v) + eps)));
    }
  }
  SECTION("ApplyAdagrad") {
    auto r = ApplyOnce([&](const Scope& s, const std::vector<Output>& v) { return ops::ApplyAdagrad(s, v[0], v[1], 0.1, grad); },
                       {{1, 2}, {0.1, 0.1}}, "adagrad");
    const double acc0 = 0.1 + g0 * g0, acc1 = 0.1 + g1 * g1;
    CHECK(r[1][0] == Approx(acc0));
    CHECK(r[0][0] == Approx(1 - 0.1 * g0 / std::sqrt(acc0)));
    CHECK(r[0][1] == Approx(2 - 0.1 * g1 / std::sqrt(acc1)));
  }
  SECTION("ApplyRMSProp") {
    const double lr = 0.01, rho = 0.9, mom = 0.5, eps = 1e-10;
    auto r = ApplyOnce(
        [&](const Scope& s, const std::vector<Output>& v) {
          return ops::ApplyRMSProp(s, v[0], v[1], v[2], lr, rho, mom, eps, grad);
        },
        {{1, 2}, {0.5, 0.5}, {0.1, -0.1}}, "rms");
    const double g[2] = {g0, g1}, ms0[2] = {0.5, 0.5}, mom0[2] = {0.1, -0.1}, x0[2] = {1, 2};
    for (int i = 0; i < 2; ++i) {
      const double ms = ms0[i] + (g[i] * g[i] - ms0[i]) * (1 - rho);
      const double m = mom0[i] * mom + lr * g[i] / std::sqrt(ms + eps);
      CHECK(r[1][i] == Approx(ms));
      CHECK(r[2][i] == Approx(m));
      CHECK(r[0][i] == Approx(x0[i] - m));
    }
  }
}

TEST_CASE("update ops reject mismatched gradients and uninitialized slots, naming them") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("w"), PartialTensorShape(TensorShape{2}), DT_FLOAT);
  auto acc = ops::Variable(root.WithOpName("w_acc"), PartialTensorShape(TensorShape{2}), DT_FLOAT);
  ops::Assign(root.WithOpName("init"), v, {1.f, 2.f});
  auto g = ops::Placeholder(root.WithOpName("g"), DT_FLOAT);
  ops::ApplyGradientDescent(root.WithOpName("sgd"), v, 0.1f, g);
  ops::ApplyAdagrad(root.WithOpName("ada"), v, acc, 0.1f, g);
  auto session = Open(root);
  Run(*session, {}, {"init"});
  std::vector<Tensor> out;
  Status s = session->Run({{"g", MakeTensor<float>({1, 2, 3}, {3})}}, {}, {"sgd"}, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("sgd") && Catch::Contains("do not have the same shape"));
  s = session->Run({{"g", MakeTensor<float>({1, 2}, {2})}}, {}, {"ada"}, &out);
  CHECK(s.code() == Code::kFailedPrecondition);
  CHECK_THAT(s.message(), Catch::Contains("uninitialized value w_acc"));
  // The failed updates changed nothing.
  Scope reader = Scope::NewRootScope();
  ops::Identity(reader.WithOpName("r"), ops::Variable(reader.WithOpName("w"), PartialTensorShape(TensorShape{2}), DT_FLOAT));
  auto s2 = Open(reader);
  CHECK(Values<float>(Run(*s2, {"r"})[0]) == std::vector<float>{1, 2});
}

TEST_CASE("random ops: fixed seeds repeat across sessions, streams differ per op and per step") {
  auto build = [](Scope& root) {
    root.SetGraphSeed(7);
    ops::RandomUniform(root.WithOpName("u1"), {1000}, DT_FLOAT);
    ops::RandomUniform(root.WithOpName("u2"), {1000}, DT_FLOAT);
    ops::RandomStandardNormal(root.WithOpName("n"), {20000}, DT_DOUBLE);
    ops::TruncatedNormal(root.WithOpName("t"), {20000}, DT_FLOAT);
    ops::RandomUniformInt(root.WithOpName("i"), {1000}, 3, 9);
  };
  Scope a = Scope::NewRootScope(), b = Scope::NewRootScope();
  build(a);
  build(b);
  auto sa = Open(a), sb = Open(b);
  auto ra = Run(*sa, {"u1", "u2", "n", "t", "i"});
  auto rb = Run(*sb, {"u1", "u2", "n", "t", "i"});
  CHECK(Values<float>(ra[0]) == Values<float>(rb[0]));  // same graph seed, same op: same values
  CHECK(Values<float>(ra[0]) != Values<float>(ra[1]));  // another op: another stream
  auto again = Run(*sa, {"u1"});
  CHECK(Values<float>(again[0]) != Values<float>(ra[0]));  // the next step continues the stream
  for (float u : Values<float>(ra[0])) REQUIRE((u >= 0.f && u < 1.f));
  double sum = 0, sq = 0;
  for (double z : Values<double>(ra[2])) sum += z, sq += z * z;
  const double mean = sum / 20000, var = sq / 20000 - mean * mean;
  CHECK(std::abs(mean) < 0.05);
  CHECK(std::abs(var - 1) < 0.05);
  for (float z : Values<float>(ra[3])) REQUIRE(std::abs(z) <= 2.f);
  std::vector<int> seen(10, 0);
  for (int32_t i : Values<int32_t>(ra[4])) {
    REQUIRE((i >= 3 && i < 9));
    ++seen[i];
  }
  for (int i = 3; i < 9; ++i) CHECK(seen[i] > 100);
}

TEST_CASE("Assign copies the value: refilling a fed buffer does not change the variable") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("copied"), PartialTensorShape(TensorShape{3}), DT_FLOAT, "", "vars_copied");
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::Assign(root.WithOpName("set"), v, x);
  ops::Identity(root.WithOpName("read"), v);
  auto session = Open(root);
  Tensor feed = MakeTensor<float>({1, 1, 1}, {3});
  Run(*session, {}, {"set"}, {{"x", feed}});
  for (int i = 0; i < 3; ++i) feed.data<float>()[i] = 42.f;  // the client reuses its buffer
  CHECK(Values<float>(Run(*session, {"read"})[0]) == std::vector<float>{1, 1, 1});
  Run(*session, {}, {"set"}, {{"x", feed}});  // a second Assign of the same shape: into the variable's buffer
  feed.data<float>()[0] = -1.f;
  CHECK(Values<float>(Run(*session, {"read"})[0]) == std::vector<float>{42, 42, 42});
}

TEST_CASE("a runtime shut down while variable updates are in flight finishes promptly") {
  // The thread says whether its graph loaded (else the check below would pass
  // without updates in flight); the main thread asserts.
  auto done = std::make_shared<std::promise<Status>>();
  std::future<Status> finished = done->get_future();
  std::thread([done] {
    Status loaded;
    {
      RuntimeOptions ro;
      ro.num_threads = 2;
      Runtime rt(ro);
      SessionOptions so;
      so.runtime = &rt;
      Session session(so);
      Scope root = Scope::NewRootScope();
      auto v = ops::Variable(root.WithOpName("big"), PartialTensorShape(TensorShape{1 << 22}), DT_FLOAT);
      ops::Assign(root.WithOpName("init"), v, ops::Fill(root, {1 << 22}, 1.f));
      std::vector<Operation> adds;
      for (int i = 0; i < 3; ++i) adds.push_back(ops::AssignAdd(root, v, ops::Fill(root, {1 << 22}, 1.f)).op());
      ops::NoOp(root.WithOpName("all").WithControlDependencies(adds));
      proto::GraphDef def;
      loaded = root.ToGraphDef(&def);
      if (loaded.ok()) loaded = session.Create(def);
      if (loaded.ok()) {
        std::vector<Tensor> out;
        session.Run({}, {}, {"init"}, &out);
        RunOptions opts;
        opts.timeout_in_ms = 1;  // the step ends while updates still run or wait in the container
        session.Run(opts, {}, {}, {"all"}, &out);
      }
    }  // ~Session, ~Runtime: must not wait forever for the container's answers
    done->set_value(loaded);
  }).detach();
  if (finished.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    FAIL_CHECK("Runtime destruction hung with variable updates in flight");
    std::_Exit(1);  // a hung thread would keep the test process alive
  }
  const Status loaded = finished.get();
  INFO(loaded.ToString());
  REQUIRE(loaded.ok());
}

TEST_CASE("a random op's stream continues across signatures, also when one of them feeds its input") {
  Scope root = Scope::NewRootScope();
  root.SetGraphSeed(11);
  auto shape = ops::Identity(root.WithOpName("shape"), ops::Const(root, {4}));
  ops::RandomUniform(root.WithOpName("u"), shape, DT_FLOAT);
  ops::Identity(root.WithOpName("other"), ops::Const(root, 1.f));
  auto session = Open(root);
  auto a = Values<float>(Run(*session, {"u"})[0]);
  auto b = Values<float>(Run(*session, {"u"}, {}, {{"shape", MakeTensor<int32_t>({4}, {1})}})[0]);
  auto c = Values<float>(Run(*session, {"u", "other"})[0]);
  CHECK(a != b);
  CHECK(b != c);
  CHECK(a != c);
}

TEST_CASE("CountUpTo counts a local variable up to its limit, then fails with OutOfRange and leaves it there") {
  Scope root = Scope::NewRootScope();
  Variable n = NewLocalVariable(root, "n", TensorShape{}, DT_INT64, init::Zeros());
  Variable n32 = NewLocalVariable(root, "n32", TensorShape{}, DT_INT32, init::Constant(5.0));
  NewVariable(root, "v", {2}, DT_INT64, init::Zeros());
  ops::CountUpTo(root.WithOpName("count"), n.ref, 3);
  ops::CountUpTo(root.WithOpName("count32"), n32.ref, 6);
  LocalVariablesInitializer(root);
  GlobalVariablesInitializer(root);
  CHECK(GlobalVariables(root).size() == 1);  // local variables are neither saved nor trained
  REQUIRE(LocalVariables(root).size() == 2);
  CHECK(LocalVariables(root)[0].name == "n");
  auto s = Open(root);
  std::vector<Tensor> out;
  CHECK(s->Run({}, {"count"}, {}, &out).code() == Code::kFailedPrecondition);  // not initialized yet
  Run(*s, {}, {"init_local", "init"});
  for (int64_t i = 0; i < 3; ++i) CHECK(Run(*s, {"count"})[0].scalar<int64_t>() == i);  // the value before
  Status st = s->Run({}, {"count"}, {}, &out);
  CHECK(st.code() == Code::kOutOfRange);
  CHECK_THAT(st.message(), Catch::Matchers::Contains("Reached limit of 3"));
  CHECK(Run(*s, {"n/read"})[0].scalar<int64_t>() == 3);
  CHECK(Run(*s, {"count32"})[0].scalar<int32_t>() == 5);
  CHECK(s->Run({}, {"count32"}, {}, &out).code() == Code::kOutOfRange);
  Scope other = Scope::NewRootScope();
  ops::CountUpTo(other, NewVariable(other, "v", {2}, DT_INT64, init::Zeros()).ref, 3);
  CHECK(other.status().code() == Code::kInvalidArgument);  // a counter is a scalar
}

TEST_CASE("RandomShuffle permutes rows, a new permutation each run, the same sequence for a fixed seed") {
  auto build = [](Scope& root) {
    root.SetGraphSeed(11);
    Tensor rows(DT_STRING, TensorShape{6, 2});
    for (int i = 0; i < 12; ++i) rows.data<std::string>()[i] = std::to_string(i / 2) + (i % 2 ? "b" : "a");
    ops::RandomShuffle(root.WithOpName("shuffled"), rows);
    ops::RandomShuffle(root.WithOpName("scalar"), 3.5f);
  };
  Scope a = Scope::NewRootScope(), b = Scope::NewRootScope();
  build(a);
  build(b);
  auto sa = Open(a), sb = Open(b);
  auto rows = [](const Tensor& t) {
    std::vector<std::string> v;
    for (int64_t r = 0; r < t.dim_size(0); ++r) {
      REQUIRE(t.data<std::string>()[2 * r][0] == t.data<std::string>()[2 * r + 1][0]);  // rows stay whole
      v.push_back(t.data<std::string>()[2 * r]);
    }
    return v;
  };
  std::vector<std::vector<std::string>> runs_a, runs_b;
  for (int i = 0; i < 4; ++i) {
    runs_a.push_back(rows(Run(*sa, {"shuffled"})[0]));
    runs_b.push_back(rows(Run(*sb, {"shuffled"})[0]));
  }
  CHECK(runs_a == runs_b);  // fixed seed: the same sequence of permutations
  const std::vector<std::string> sorted = {"0a", "1a", "2a", "3a", "4a", "5a"};
  bool changed = false;
  for (auto& r : runs_a) {
    changed = changed || r != runs_a[0];
    std::sort(r.begin(), r.end());
    CHECK(r == sorted);  // a permutation
  }
  CHECK(changed);
  CHECK(Run(*sa, {"scalar"})[0].scalar<float>() == 3.5f);
}
