// Training in the graph: optimizers minimizing losses, their slots and the
// global step, initializers, learning-rate schedules, and the digits example.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <regex>

#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/variables.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::ToDef;
using test::Values;

namespace {

struct Quadratic {
  Scope root = Scope::NewRootScope();
  Variable w, step;
  Output loss;
  // loss = sum((w - [1, -2, 3])^2), w starts at 0; each test uses its own container.
  explicit Quadratic(const std::string& container) {
    w = NewVariable(root, "w", {3}, DT_DOUBLE, init::Zeros(), true, container);
    step = NewVariable(root, "global_step", {}, DT_INT64, init::Zeros(), false, container);
    loss = ops::Sum(root.WithOpName("loss"), ops::Square(root, ops::Sub(root, w.value, {1.0, -2.0, 3.0})), 0);
  }
};

std::vector<double> Train(Quadratic& q, Optimizer& opt, int steps) {
  Operation train = opt.Minimize(q.root.WithOpName("train"), q.loss, &q.step);
  Operation init = GlobalVariablesInitializer(q.root);
  Session session;
  REQUIRE(session.Create(ToDef(q.root)).ok());
  std::vector<Tensor> out;
  REQUIRE(session.Run({}, {}, {init.name()}, &out).ok());
  for (int i = 0; i < steps; ++i) REQUIRE(session.Run({}, {}, {train.name()}, &out).ok());
  REQUIRE(session.Run({}, {q.w.value.name(), q.step.value.name()}, {}, &out).ok());
  CHECK(Values<int64_t>(out[1]) == std::vector<int64_t>{steps});
  return Values<double>(out[0]);
}

}  // namespace

TEST_CASE("every optimizer minimizes a quadratic and counts its steps") {
  const std::vector<double> target{1, -2, 3};
  auto close = [&](const std::vector<double>& w, double tol) {
    for (int i = 0; i < 3; ++i) CHECK(w[i] == Approx(target[i]).margin(tol));
  };
  SECTION("GradientDescent") {
    Quadratic q("train_gd");
    GradientDescentOptimizer opt(0.1);
    close(Train(q, opt, 100), 1e-6);
  }
  SECTION("Momentum and Nesterov") {
    Quadratic q("train_mom");
    MomentumOptimizer opt(0.05, 0.9, /*use_nesterov=*/true);
    close(Train(q, opt, 300), 1e-4);
  }
  SECTION("Adam") {
    Quadratic q("train_adam");
    AdamOptimizer opt(0.1);
    close(Train(q, opt, 500), 1e-2);
  }
  SECTION("Adagrad") {
    Quadratic q("train_adagrad");
    AdagradOptimizer opt(1.0);
    close(Train(q, opt, 500), 1e-3);
  }
  SECTION("RMSProp") {
    Quadratic q("train_rms");
    RMSPropOptimizer opt(0.01);
    close(Train(q, opt, 1000), 2e-2);
  }
}

TEST_CASE("Adam's first two steps follow TensorFlow's formula, beta powers included") {
  Quadratic q("train_adam_exact");
  AdamOptimizer opt(0.1, 0.9, 0.999, 1e-8);
  const std::vector<double> w = Train(q, opt, 2);
  // By hand: g = 2 (w - target); m, v moving averages; lr_t from beta powers.
  const double target[3] = {1, -2, 3};
  for (int i = 0; i < 3; ++i) {
    double x = 0, m = 0, v = 0, b1p = 0.9, b2p = 0.999;
    for (int t = 0; t < 2; ++t) {
      const double g = 2 * (x - target[i]);
      const double lr = 0.1 * std::sqrt(1 - b2p) / (1 - b1p);
      m += (g - m) * (1 - 0.9);
      v += (g * g - v) * (1 - 0.999);
      x -= lr * m / (std::sqrt(v) + 1e-8);
      b1p *= 0.9;
      b2p *= 0.999;
    }
    CHECK(w[i] == Approx(x).epsilon(1e-9));
  }
  // Slots and powers are global (so saved and initialized), not trainable.
  std::vector<std::string> names;
  for (const Variable& v : GlobalVariables(q.root)) names.push_back(v.name);
  CHECK(std::find(names.begin(), names.end(), "w/Adam") != names.end());
  CHECK(std::find(names.begin(), names.end(), "w/Adam_1") != names.end());
  CHECK(std::find(names.begin(), names.end(), "beta1_power") != names.end());
  CHECK(TrainableVariables(q.root).size() == 1);
}

TEST_CASE("only the listed variables are updated; a loss that does not depend on any is an error") {
  Scope root = Scope::NewRootScope();
  Variable a = NewVariable(root, "a", {}, DT_FLOAT, init::Constant(1.0), true, "train_list");
  Variable b = NewVariable(root, "b", {}, DT_FLOAT, init::Constant(1.0), true, "train_list");
  auto loss = ops::Mul(root, a.value, b.value);
  GradientDescentOptimizer sgd(0.5);
  Operation train = sgd.Minimize(root.WithOpName("train"), loss, nullptr, {a});
  Operation init = GlobalVariablesInitializer(root);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  REQUIRE(session.Run({}, {}, {init.name()}, &out).ok());
  REQUIRE(session.Run({}, {}, {train.name()}, &out).ok());
  REQUIRE(session.Run({}, {a.value.name(), b.value.name()}, {}, &out).ok());
  CHECK(out[0].scalar<float>() == 0.5f);  // a -= 0.5 * b
  CHECK(out[1].scalar<float>() == 1.f);

  Scope other = Scope::NewRootScope();
  NewVariable(other, "c", {}, DT_FLOAT, init::Zeros(), true, "train_list");
  GradientDescentOptimizer sgd2(0.1);
  sgd2.Minimize(other, ops::Const(other, 1.f));
  CHECK_FALSE(other.ok());
  CHECK_THAT(other.status().message(), Catch::Contains("No gradients provided for any variable"));
}

TEST_CASE("initializers: Glorot's limit, truncated normals, constants of the right shape") {
  Scope root = Scope::NewRootScope();
  root.SetGraphSeed(3);
  Variable g = NewVariable(root, "g", {200, 100}, DT_FLOAT, init::GlorotUniform(), true, "train_init");
  Variable t = NewVariable(root, "t", {5000}, DT_DOUBLE, init::TruncatedNormal(1.0, 0.5), true, "train_init");
  Variable c = NewVariable(root, "c", {2}, DT_INT32, init::Constant(7.0), true, "train_init");
  Operation init = GlobalVariablesInitializer(root);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  REQUIRE(session.Run({}, {}, {init.name()}, &out).ok());
  REQUIRE(session.Run({}, {g.value.name(), t.value.name(), c.value.name()}, {}, &out).ok());
  const float limit = std::sqrt(6.f / 300.f);
  float lo = 1, hi = -1;
  for (float v : Values<float>(out[0])) lo = std::min(lo, v), hi = std::max(hi, v);
  CHECK(lo >= -limit);
  CHECK(hi <= limit);
  CHECK(lo < -0.9f * limit);  // fills the range
  CHECK(hi > 0.9f * limit);
  for (double v : Values<double>(out[1])) REQUIRE((v >= 0.0 && v <= 2.0));  // within two stddevs of 1
  CHECK(Values<int32_t>(out[2]) == std::vector<int32_t>{7, 7});

  Scope bad = Scope::NewRootScope();
  NewVariable(bad, "m", {3}, DT_FLOAT, init::Constant(test::MakeTensor<float>({1, 2}, {2})));
  CHECK_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("shape [2]"));
}

TEST_CASE("ExponentialDecay follows the global step") {
  Scope root = Scope::NewRootScope();
  Variable step = NewVariable(root, "global_step", {}, DT_INT64, init::Zeros(), false, "train_decay");
  Output smooth = ExponentialDecay(root, 0.1, step, 10, 0.5);
  Output stairs = ExponentialDecay(root, 0.1, step, 10, 0.5, /*staircase=*/true);
  auto set = ops::Assign(root.WithOpName("set"), step.ref, int64_t{15});
  Operation init = GlobalVariablesInitializer(root);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  REQUIRE(session.Run({}, {}, {init.name()}, &out).ok());
  Status st = session.Run({}, {}, {set.op().name()}, &out);
  INFO(st.ToString());
  REQUIRE(st.ok());
  REQUIRE(session.Run({}, {smooth.name(), stairs.name()}, {}, &out).ok());
  CHECK(out[0].scalar<float>() == Approx(0.1 * std::pow(0.5, 1.5)));
  CHECK(out[1].scalar<float>() == Approx(0.05));
}

TEST_CASE("train_digits: the MLP reaches at least 95% held-out accuracy") {
  std::string output;
  const int rc = test::RunProgram(AF_EXAMPLES_BIN_DIR "/train_digits --steps 1200 --log-every 1200", &output);
  INFO(output);
  REQUIRE(rc == 0);
  std::smatch m;
  REQUIRE(std::regex_search(output, m, std::regex(R"(MLP ([0-9.]+)%)")));
  CHECK(std::stod(m[1]) >= 95.0);
}

TEST_CASE("one optimizer object builds train ops for two graphs in turn") {
  AdamOptimizer adam(0.1);
  for (int round = 0; round < 2; ++round) {
    Quadratic q("train_reuse_" + std::to_string(round));
    if (round == 1) adam.SetLearningRate(ops::Const(q.root, 0.05f));  // honoured on the second graph
    const std::vector<double> w = Train(q, adam, 300);
    CHECK(w[0] == Approx(1.0).margin(0.05));
  }
}
