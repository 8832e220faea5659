// CPU kernels against hand-computed values: broadcasting, scalars, empty
// tensors, dtypes, and the errors bad inputs must give.
#include <catch2/catch.hpp>

#include <cmath>

#include "test_util.hpp"

using namespace actorflow;
using test::MakeTensor;
using test::Run1;
using test::RunOk;
using test::RunStatus;
using test::ShapeOf;
using test::Values;
using Catch::Matchers::Contains;

TEST_CASE("binary arithmetic with numpy broadcasting") {
  Scope root = Scope::NewRootScope();
  auto m = ops::Const(root, {{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});  // [2,3]
  auto row = ops::Const(root, {10.f, 20.f, 30.f});               // [3]
  auto col = ops::Const(root, {{100.f}, {200.f}});               // [2,1]
  REQUIRE(Run1<float>(root, ops::Add(root, m, row)) == std::vector<float>{11, 22, 33, 14, 25, 36});
  REQUIRE(Run1<float>(root, ops::Sub(root, m, col)) == std::vector<float>{-99, -98, -97, -196, -195, -194});
  REQUIRE(Run1<float>(root, ops::Mul(root, col, row)) == std::vector<float>{1000, 2000, 3000, 2000, 4000, 6000});
  REQUIRE(ShapeOf(root, ops::Mul(root, col, row)) == std::vector<int64_t>{2, 3});
  REQUIRE(Run1<float>(root, ops::RealDiv(root, m, 2.f)) == std::vector<float>{0.5, 1, 1.5, 2, 2.5, 3});
  REQUIRE(Run1<float>(root, ops::Maximum(root, m, 3.5f)) == std::vector<float>{3.5, 3.5, 3.5, 4, 5, 6});
  REQUIRE(Run1<float>(root, ops::Minimum(root, 3.5f, m)) == std::vector<float>{1, 2, 3, 3.5, 3.5, 3.5});
  REQUIRE(Run1<float>(root, ops::Pow(root, row, 2.f)) == std::vector<float>{100, 400, 900});
  REQUIRE(Run1<int32_t>(root, ops::AddV2(root, ops::Const(root, {1, 2}), 5)) == std::vector<int32_t>{6, 7});
  REQUIRE(Run1<int64_t>(root, ops::Mul(root, ops::Const(root, {int64_t{3}}), int64_t{4})) == std::vector<int64_t>{12});
  REQUIRE(Run1<double>(root, ops::Add(root, 1.5, 2.25)) == std::vector<double>{3.75});
}

TEST_CASE("broadcasting a [2,1,3] tensor against [4,1]") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, {{{1, 2, 3}}, {{4, 5, 6}}});  // [2,1,3]
  auto b = ops::Const(root, {{0}, {10}, {20}, {30}});     // [4,1]
  auto out = RunOk(root, {ops::Add(root, a, b)});
  REQUIRE(out[0].shape().dim_sizes() == std::vector<int64_t>{2, 4, 3});
  auto v = Values<int32_t>(out[0]);
  REQUIRE(v[0] == 1);
  REQUIRE(v[5] == 13);   // [0,1,2] = 3 + 10
  REQUIRE(v[23] == 36);  // [1,3,2] = 6 + 30
}

TEST_CASE("empty tensors flow through element-wise ops and reductions") {
  Scope root = Scope::NewRootScope();
  auto e = ops::Placeholder(root.WithOpName("e"), DT_FLOAT);
  auto sum = ops::Add(root, e, 1.f);
  auto total = ops::Sum(root, e, {0, 1});
  auto mx = ops::Max(root, e, 1);
  auto out = RunOk(root, {sum, total, mx}, {{"e", Tensor(DT_FLOAT, TensorShape{0, 3})}});
  REQUIRE(out[0].shape().dim_sizes() == std::vector<int64_t>{0, 3});
  REQUIRE(out[1].scalar<float>() == 0.f);
  REQUIRE(out[2].shape().dim_sizes() == std::vector<int64_t>{0});
}

TEST_CASE("unary math") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {-2.0, 0.0, 1.0, 4.0});
  REQUIRE(Run1<double>(root, ops::Neg(root, x)) == std::vector<double>{2, 0, -1, -4});
  REQUIRE(Run1<double>(root, ops::Abs(root, x)) == std::vector<double>{2, 0, 1, 4});
  REQUIRE(Run1<double>(root, ops::Square(root, x)) == std::vector<double>{4, 0, 1, 16});
  REQUIRE(Run1<double>(root, ops::Relu(root, x)) == std::vector<double>{0, 0, 1, 4});
  auto pos = ops::Const(root, {1.0, 4.0});
  REQUIRE(Run1<double>(root, ops::Sqrt(root, pos)) == std::vector<double>{1, 2});
  REQUIRE(Run1<double>(root, ops::Rsqrt(root, pos)) == std::vector<double>{1, 0.5});
  auto e = Run1<double>(root, ops::Exp(root, pos));
  REQUIRE(e[1] == Approx(std::exp(4.0)));
  REQUIRE(Run1<double>(root, ops::Log(root, pos))[1] == Approx(std::log(4.0)));
  REQUIRE(Run1<double>(root, ops::Tanh(root, x))[0] == Approx(std::tanh(-2.0)));
  REQUIRE(Run1<double>(root, ops::Sigmoid(root, x))[3] == Approx(1.0 / (1.0 + std::exp(-4.0))));
  REQUIRE(Run1<int32_t>(root, ops::Neg(root, ops::Const(root, {3, -4}))) == std::vector<int32_t>{-3, 4});
}

TEST_CASE("comparisons and logic produce bools") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, {1, 2, 3});
  auto b = ops::Const(root, 2);
  REQUIRE(Run1<bool>(root, ops::Equal(root, a, b)) == std::vector<bool>{false, true, false});
  REQUIRE(Run1<bool>(root, ops::NotEqual(root, a, b)) == std::vector<bool>{true, false, true});
  REQUIRE(Run1<bool>(root, ops::Less(root, a, b)) == std::vector<bool>{true, false, false});
  REQUIRE(Run1<bool>(root, ops::LessEqual(root, a, b)) == std::vector<bool>{true, true, false});
  REQUIRE(Run1<bool>(root, ops::Greater(root, a, b)) == std::vector<bool>{false, false, true});
  REQUIRE(Run1<bool>(root, ops::GreaterEqual(root, a, b)) == std::vector<bool>{false, true, true});
  auto t = ops::Const(root, {true, true, false, false});
  auto u = ops::Const(root, {true, false, true, false});
  REQUIRE(Run1<bool>(root, ops::LogicalAnd(root, t, u)) == std::vector<bool>{true, false, false, false});
  REQUIRE(Run1<bool>(root, ops::LogicalOr(root, t, u)) == std::vector<bool>{true, true, true, false});
  REQUIRE(Run1<bool>(root, ops::LogicalNot(root, t)) == std::vector<bool>{false, false, true, true});
  REQUIRE(Run1<bool>(root, ops::Equal(root, t, true)) == std::vector<bool>{true, true, false, false});
}

TEST_CASE("MatMul with transposes, float and int") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, {{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});  // [3,2]
  auto b = ops::Const(root, {{1.f, 0.f, 2.f}, {0.f, 1.f, 3.f}});    // [2,3]
  REQUIRE(Run1<float>(root, ops::MatMul(root, a, b)) == std::vector<float>{1, 2, 8, 3, 4, 18, 5, 6, 28});
  REQUIRE(Run1<float>(root, ops::MatMul(root, a, a, true, false)) == std::vector<float>{35, 44, 44, 56});
  REQUIRE(Run1<float>(root, ops::MatMul(root, b, b, false, true)) == std::vector<float>{5, 6, 6, 10});
  auto ai = ops::Const(root, {{1, 2}, {3, 4}});
  REQUIRE(Run1<int32_t>(root, ops::MatMul(root, ai, ai)) == std::vector<int32_t>{7, 10, 15, 22});
  auto ad = ops::Const(root, {{1.0, 2.0}});
  REQUIRE(Run1<double>(root, ops::MatMul(root, ad, ad, false, true)) == std::vector<double>{5});
}

TEST_CASE("a large MatMul sharded over the pool equals the reference") {
  Scope root = Scope::NewRootScope();
  const int n = 300;
  Tensor a(DT_FLOAT, TensorShape{n, n}), b(DT_FLOAT, TensorShape{n, n});
  for (int i = 0; i < n * n; ++i) {
    a.data<float>()[i] = static_cast<float>((i % 7) - 3);
    b.data<float>()[i] = static_cast<float>((i % 5) - 2);
  }
  auto c = RunOk(root, {ops::MatMul(root, a, b, false, true)})[0];
  for (int r : {0, 151, 299})
    for (int col : {0, 77, 299}) {
      float ref = 0;
      for (int k = 0; k < n; ++k) ref += a.data<float>()[r * n + k] * b.data<float>()[col * n + k];
      REQUIRE(c.data<float>()[r * n + col] == ref);
    }
}

TEST_CASE("BiasAdd, Softmax and LogSoftmax") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Const(root, {{1.f, 2.f}, {3.f, 4.f}});
  REQUIRE(Run1<float>(root, ops::BiasAdd(root, v, {10.f, 20.f})) == std::vector<float>{11, 22, 13, 24});
  auto v3 = ops::Const(root, {{{1.f, 2.f}, {3.f, 4.f}}});  // [1,2,2]: channels on dim 1 for NCHW
  REQUIRE(Run1<float>(root, ops::BiasAdd(root, v3, {10.f, 20.f}, "NCHW")) == std::vector<float>{11, 12, 23, 24});
  auto logits = ops::Const(root, {{1.0, 2.0, 3.0}, {1.0, 1.0, 1.0}});
  auto sm = Run1<double>(root, ops::Softmax(root, logits));
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  REQUIRE(sm[0] == Approx(std::exp(1.0) / z));
  REQUIRE(sm[2] == Approx(std::exp(3.0) / z));
  REQUIRE(sm[4] == Approx(1.0 / 3));
  auto lsm = Run1<double>(root, ops::LogSoftmax(root, logits));
  REQUIRE(lsm[1] == Approx(2.0 - std::log(z)));
  REQUIRE(RunStatus(root, {ops::BiasAdd(root, v, {1.f, 2.f, 3.f})}).code() == Code::kInvalidArgument);
}

TEST_CASE("softmax cross entropy, dense and sparse") {
  Scope root = Scope::NewRootScope();
  auto logits = ops::Const(root, {{0.0, 0.0}, {1.0, 3.0}});
  auto labels = ops::Const(root, {{1.0, 0.0}, {0.0, 1.0}});
  auto x = ops::SoftmaxCrossEntropyWithLogits(root, logits, labels);
  auto out = RunOk(root, {x.loss, x.backprop});
  const double p = std::exp(3.0) / (std::exp(1.0) + std::exp(3.0));
  REQUIRE(Values<double>(out[0])[0] == Approx(std::log(2.0)));
  REQUIRE(Values<double>(out[0])[1] == Approx(-std::log(p)));
  REQUIRE(Values<double>(out[1])[0] == Approx(-0.5));
  REQUIRE(Values<double>(out[1])[3] == Approx(p - 1));
  auto sparse = ops::SparseSoftmaxCrossEntropyWithLogits(root, logits, ops::Const(root, {int64_t{0}, int64_t{1}}));
  auto sout = RunOk(root, {sparse.loss, sparse.backprop});
  REQUIRE(Values<double>(sout[0])[1] == Approx(-std::log(p)));
  REQUIRE(Values<double>(sout[1])[0] == Approx(-0.5));
  auto bad = ops::SparseSoftmaxCrossEntropyWithLogits(root, logits, ops::Const(root, {0, 2}));
  Status s = RunStatus(root, {bad.loss});
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Contains("label value of 2"));
}

TEST_CASE("reductions over axes, keep_dims, and ArgMax") {
  Scope root = Scope::NewRootScope();
  auto m = ops::Const(root, {{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  REQUIRE(Run1<float>(root, ops::Sum(root, m, 0)) == std::vector<float>{5, 7, 9});
  REQUIRE(Run1<float>(root, ops::Sum(root, m, 1)) == std::vector<float>{6, 15});
  REQUIRE(Run1<float>(root, ops::Sum(root, m, {0, 1})) == std::vector<float>{21});
  REQUIRE(Run1<float>(root, ops::Mean(root, m, -1)) == std::vector<float>{2, 5});
  REQUIRE(Run1<float>(root, ops::Max(root, m, 0)) == std::vector<float>{4, 5, 6});
  REQUIRE(Run1<float>(root, ops::Min(root, m, 1)) == std::vector<float>{1, 4});
  REQUIRE(Run1<float>(root, ops::Prod(root, m, 1)) == std::vector<float>{6, 120});
  REQUIRE(ShapeOf(root, ops::Sum(root, m, 1, true)) == std::vector<int64_t>{2, 1});
  auto t3 = ops::Const(root, {{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}});  // [2,2,2]
  REQUIRE(Run1<int32_t>(root, ops::Sum(root, t3, {0, 2})) == std::vector<int32_t>{14, 22});
  REQUIRE(Run1<int32_t>(root, ops::Sum(root, t3, 1)) == std::vector<int32_t>{4, 6, 12, 14});
  REQUIRE(Run1<int32_t>(root, ops::Max(root, t3, {0, 2}, true)) == std::vector<int32_t>{6, 8});
  REQUIRE(Run1<int64_t>(root, ops::ArgMax(root, m, 1)) == std::vector<int64_t>{2, 2});
  REQUIRE(Run1<int64_t>(root, ops::ArgMin(root, m, 0)) == std::vector<int64_t>{0, 0, 0});
  REQUIRE(Run1<int32_t>(root, ops::ArgMax(root, ops::Const(root, {3.f, 9.f, 1.f}), 0, DT_INT32)) ==
          std::vector<int32_t>{1});
  Status s = RunStatus(root, {ops::Sum(root, ops::Placeholder(root.WithOpName("p"), DT_FLOAT), 5)},
                       {{"p", MakeTensor<float>({1, 2}, {2})}});
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Contains("Invalid reduction dimension 5"));
}

TEST_CASE("Cast between dtypes") {
  Scope root = Scope::NewRootScope();
  auto f = ops::Const(root, {1.7f, -2.2f, 0.f});
  REQUIRE(Run1<int32_t>(root, ops::Cast(root, f, DT_INT32)) == std::vector<int32_t>{1, -2, 0});
  REQUIRE(Run1<bool>(root, ops::Cast(root, f, DT_BOOL)) == std::vector<bool>{true, true, false});
  REQUIRE(Run1<double>(root, ops::Cast(root, ops::Const(root, {true, false}), DT_DOUBLE)) == std::vector<double>{1, 0});
  REQUIRE(Run1<int64_t>(root, ops::Cast(root, ops::Const(root, {7}), DT_INT64)) == std::vector<int64_t>{7});
}

TEST_CASE("shape ops share buffers and validate") {
  Scope root = Scope::NewRootScope();
  auto m = ops::Const(root, {{1, 2, 3}, {4, 5, 6}});
  REQUIRE(ShapeOf(root, ops::Reshape(root, m, {3, -1})) == std::vector<int64_t>{3, 2});
  REQUIRE(Run1<int32_t>(root, ops::Shape(root, m)) == std::vector<int32_t>{2, 3});
  REQUIRE(Run1<int64_t>(root, ops::Shape(root, m, DT_INT64)) == std::vector<int64_t>{2, 3});
  REQUIRE(Run1<int32_t>(root, ops::Size(root, m)) == std::vector<int32_t>{6});
  REQUIRE(Run1<int32_t>(root, ops::Rank(root, m)) == std::vector<int32_t>{2});
  REQUIRE(ShapeOf(root, ops::ExpandDims(root, m, -1)) == std::vector<int64_t>{2, 3, 1});
  REQUIRE(ShapeOf(root, ops::Squeeze(root, ops::Const(root, {{{1}, {2}}}))) == std::vector<int64_t>{2});
  REQUIRE(Run1<int32_t>(root, ops::Identity(root, m)) == std::vector<int32_t>{1, 2, 3, 4, 5, 6});
  Status s = RunStatus(root, {ops::Reshape(root, ops::Placeholder(root.WithOpName("p"), DT_INT32), {4})},
                       {{"p", MakeTensor<int32_t>({1, 2, 3, 4, 5, 6}, {6})}});
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Contains("6 values") && Contains("4"));
}

TEST_CASE("Fill, ZerosLike, OnesLike, Range") {
  Scope root = Scope::NewRootScope();
  REQUIRE(Run1<float>(root, ops::Fill(root, {2, 2}, 1.5f)) == std::vector<float>{1.5, 1.5, 1.5, 1.5});
  auto m = ops::Const(root, {{1.0, 2.0}});
  REQUIRE(Run1<double>(root, ops::ZerosLike(root, m)) == std::vector<double>{0, 0});
  REQUIRE(Run1<double>(root, ops::OnesLike(root, m)) == std::vector<double>{1, 1});
  REQUIRE(Run1<int32_t>(root, ops::Range(root, 2, 11, 3)) == std::vector<int32_t>{2, 5, 8});
  REQUIRE(Run1<float>(root, ops::Range(root, 1.f, 0.f, -0.5f)) == std::vector<float>{1, 0.5});
  REQUIRE(RunStatus(root, {ops::Range(root, 0, 5, 0)}).code() == Code::kInvalidArgument);
}

TEST_CASE("Concat, Split, Stack, Slice, Transpose, Select") {
  Scope root = Scope::NewRootScope();
  auto a = ops::Const(root, {{1, 2}, {3, 4}});
  auto b = ops::Const(root, {{5, 6}});
  REQUIRE(Run1<int32_t>(root, ops::Concat(root, {a, b}, 0)) == std::vector<int32_t>{1, 2, 3, 4, 5, 6});
  REQUIRE(Run1<int32_t>(root, ops::Concat(root, {a, a}, -1)) == std::vector<int32_t>{1, 2, 1, 2, 3, 4, 3, 4});
  {
    Scope bad = Scope::NewRootScope();
    REQUIRE(RunStatus(bad, {ops::Concat(bad, {ops::Const(bad, {{1, 2}}), ops::Const(bad, {{5}})}, 0)}).code() ==
            Code::kInvalidArgument);
  }
  auto parts = ops::Split(root, 1, a, 2);
  REQUIRE(parts.size() == 2);
  REQUIRE(Run1<int32_t>(root, parts[1]) == std::vector<int32_t>{2, 4});
  REQUIRE(Run1<int32_t>(root, ops::Stack(root, {ops::Const(root, {1, 2}), ops::Const(root, {3, 4})}, 1)) ==
          std::vector<int32_t>{1, 3, 2, 4});
  auto m = ops::Const(root, {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}});
  REQUIRE(Run1<int32_t>(root, ops::Slice(root, m, {1, 1}, {2, -1})) == std::vector<int32_t>{5, 6, 8, 9});
  {
    Scope bad = Scope::NewRootScope();
    REQUIRE(RunStatus(bad, {ops::Slice(bad, ops::Const(bad, {{1, 2}}), {2, 0}, {2, 1})}).code() == Code::kInvalidArgument);
  }
  REQUIRE(Run1<int32_t>(root, ops::Transpose(root, m, {1, 0})) == std::vector<int32_t>{1, 4, 7, 2, 5, 8, 3, 6, 9});
  auto t3 = ops::Const(root, {{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}});
  REQUIRE(Run1<int32_t>(root, ops::Transpose(root, t3, {2, 0, 1})) == std::vector<int32_t>{1, 3, 5, 7, 2, 4, 6, 8});
  {
    Scope bad = Scope::NewRootScope();
    REQUIRE(RunStatus(bad, {ops::Transpose(bad, ops::Const(bad, {{1, 2}}), {0, 0})}).code() == Code::kInvalidArgument);
  }
  auto cond = ops::Const(root, {true, false, true});
  REQUIRE(Run1<int32_t>(root, ops::Select(root, cond, ops::Const(root, {1, 2, 3}), ops::Const(root, {9, 8, 7}))) ==
          std::vector<int32_t>{1, 8, 3});
  auto rows = ops::Select(root, ops::Const(root, {false, true}), ops::Const(root, {{1, 2}, {3, 4}}),
                          ops::Const(root, {{0, 0}, {0, 0}}));
  REQUIRE(Run1<int32_t>(root, rows) == std::vector<int32_t>{0, 0, 3, 4});
}

TEST_CASE("string tensors: Const, Identity, concatenating Add") {
  Scope root = Scope::NewRootScope();
  auto s = ops::Const(root, {std::string("ab"), std::string("c")});
  auto out = RunOk(root, {ops::Add(root, s, std::string("!"))});
  REQUIRE(Values<std::string>(out[0]) == std::vector<std::string>{"ab!", "c!"});
}

TEST_CASE("Assert passes silently and fails with its data") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, {1, 2, 3});
  auto ok = ops::Assert(root.WithOpName("ok"), true, {x});
  auto y = ops::Identity(root.WithControlDependencies({ok}), x);
  REQUIRE(Run1<int32_t>(root, y) == std::vector<int32_t>{1, 2, 3});
  auto bad = ops::Assert(root.WithOpName("bad"), false, {x});
  auto z = ops::Identity(root.WithControlDependencies({bad}), x);
  Status s = RunStatus(root, {z});
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Contains("'bad'") && Contains("1 2 3"));
}

TEST_CASE("large tensors: sharded broadcast, reductions and ArgMax match reference loops") {
  const int64_t R = 1500, C = 700;  // big enough to be split over the pool
  Tensor m(DT_FLOAT, TensorShape{R, C});
  Tensor bias(DT_FLOAT, TensorShape{C});
  for (int64_t i = 0; i < R * C; ++i) m.data<float>()[i] = static_cast<float>((i * 7919) % 1000) / 100.f;
  for (int64_t j = 0; j < C; ++j) bias.data<float>()[j] = static_cast<float>(j % 13);
  Scope root = Scope::NewRootScope();
  auto mm = ops::Const(root, m);
  auto out = RunOk(root, {ops::Add(root, mm, ops::Const(root, bias)), ops::Sum(root, mm, 0), ops::Max(root, mm, 1),
                          ops::ArgMax(root, mm, 0), ops::Sum(root, ops::Reshape(root, mm, {static_cast<int>(R / 3), 3, static_cast<int>(C)}), {0, 2})});
  for (int64_t i : {int64_t{0}, R * C / 2 + 3, R * C - 1})
    REQUIRE(out[0].data<float>()[i] == m.data<float>()[i] + bias.data<float>()[i % C]);
  for (int64_t j : {int64_t{0}, C / 2, C - 1}) {
    double sum = 0;
    float mx = -1;
    int64_t arg = 0;
    for (int64_t r = 0; r < R; ++r) {
      const float v = m.data<float>()[r * C + j];
      sum += v;
      if (v > mx) mx = v, arg = r;
    }
    REQUIRE(out[1].data<float>()[j] == Approx(sum).epsilon(1e-4));
    REQUIRE(out[3].data<int64_t>()[j] == arg);
  }
  for (int64_t r : {int64_t{0}, R - 1}) {
    float mx = -1;
    for (int64_t j = 0; j < C; ++j) mx = std::max(mx, m.data<float>()[r * C + j]);
    REQUIRE(out[2].data<float>()[r] == mx);
  }
  for (int64_t k = 0; k < 3; ++k) {  // [R/3, 3, C] summed over axes 0 and 2: the general layout
    double sum = 0;
    for (int64_t a = 0; a < R / 3; ++a)
      for (int64_t c = 0; c < C; ++c) sum += m.data<float>()[(a * 3 + k) * C + c];
    REQUIRE(out[4].data<float>()[k] == Approx(sum).epsilon(1e-4));
  }
}

TEST_CASE("MatMul paths: sharded with every transpose, and Eigen's parallel contraction") {
  struct Shape {
    int m, k, n;
  };
  // ~0.4 GFLOP: row blocks over the pool; 4 rows by 1024 columns: column
  // blocks; ~9.8 GFLOP: Eigen's async contraction.
  for (Shape sh : {Shape{600, 600, 600}, Shape{4, 2048, 1024}, Shape{1700, 1700, 1700}}) {
    const int m = sh.m, k = sh.k, n = sh.n;
    const std::vector<std::pair<bool, bool>> transposes =
        m < 1000 ? std::vector<std::pair<bool, bool>>{{false, false}, {true, false}, {false, true}, {true, true}}
                 : std::vector<std::pair<bool, bool>>{{false, false}, {true, true}};
    for (const auto& t : transposes) {
      const bool ta = t.first, tb = t.second;  // not a structured binding: the lambdas below capture them (clang 14)
      Tensor a(DT_FLOAT, ta ? TensorShape{k, m} : TensorShape{m, k});
      Tensor b(DT_FLOAT, tb ? TensorShape{n, k} : TensorShape{k, n});
      for (int64_t i = 0; i < a.NumElements(); ++i) a.data<float>()[i] = static_cast<float>((i * 31) % 7) - 3;
      for (int64_t i = 0; i < b.NumElements(); ++i) b.data<float>()[i] = static_cast<float>((i * 17) % 5) - 2;
      Scope root = Scope::NewRootScope();
      auto c = RunOk(root, {ops::MatMul(root, a, b, ta, tb)})[0];
      REQUIRE(c.shape() == TensorShape{m, n});
      auto A = [&](int r, int kk) { return ta ? a.data<float>()[kk * m + r] : a.data<float>()[r * k + kk]; };
      auto B = [&](int kk, int col) { return tb ? b.data<float>()[col * k + kk] : b.data<float>()[kk * n + col]; };
      for (int r : {0, m / 2 + 1, m - 1})
        for (int col : {0, n / 3, n / 2 + 1, n - 1}) {
          float ref = 0;
          for (int kk = 0; kk < k; ++kk) ref += A(r, kk) * B(kk, col);
          INFO("m=" << m << " k=" << k << " n=" << n << " ta=" << ta << " tb=" << tb << " at " << r << "," << col);
          REQUIRE(c.data<float>()[static_cast<int64_t>(r) * n + col] == ref);
        }
    }
  }
}
