// Checks symbolic gradients against central differences, in float64.
//
//   CheckGradients([](const Scope& s, const std::vector<Output>& x) {
//     return std::vector<Output>{ops::Square(s, x[0])};
//   }, {Uniform({2, 3}, -1, 1)});
//
// f builds ys (float64) from placeholders standing for the xs. The checker
// draws a random weight tensor w_k of each y_k's shape, builds the symbolic
// gradients of L = sum_k <w_k, y_k> with AddSymbolicGradients(ys, xs,
// grad_ys = w), runs them in a Session, and compares every element j of every
// x with (L(x + h e_j) - L(x - h e_j)) / 2h, L evaluated by running the ys.
// A random functional, not a plain sum, so that a gradient summed or
// transposed the wrong way does not cancel out.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "actorflow/client/gradients/gradients.hpp"
#include "test_util.hpp"

namespace actorflow {
namespace test {

using GradFn = std::function<std::vector<Output>(const Scope&, const std::vector<Output>&)>;

struct GradCheckOptions {
  double h = 1e-5;          // central-difference step
  double tolerance = 1e-6;  // passes when |symbolic - numeric| <= tolerance * (1 + |numeric|)
  bool static_shapes = false;  // placeholders declare x's shape (else unknown: shapes found while running)
  uint32_t seed = 7;           // of the weights w
};

/// A float64 tensor of `shape`, uniform in [lo, hi), from a fixed seed.
inline Tensor Uniform(const TensorShape& shape, double lo, double hi, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(DT_DOUBLE, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<double>()[i] = dist(rng);
  return t;
}

/// A float64 tensor with the given values.
inline Tensor Doubles(const std::vector<double>& values, const TensorShape& shape) {
  return MakeTensor<double>(values, shape);
}

/// Builds f's graph with placeholders "x0", "x1", ... fed `x_values`, adds its
/// gradients and REQUIREs that each agrees with central differences.
inline void CheckGradients(const GradFn& f, const std::vector<Tensor>& x_values, const GradCheckOptions& opt = {}) {
  Scope root = Scope::NewRootScope();
  std::vector<Output> xs;
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (size_t i = 0; i < x_values.size(); ++i) {
    REQUIRE(x_values[i].dtype() == DT_DOUBLE);
    const PartialTensorShape shape =
        opt.static_shapes ? PartialTensorShape(x_values[i].shape()) : PartialTensorShape();
    xs.push_back(ops::Placeholder(root.WithOpName("x" + std::to_string(i)), DT_DOUBLE, shape));
    feeds.emplace_back(xs.back().name(), x_values[i]);
  }
  const std::vector<Output> ys = f(root, xs);
  INFO("building f: " << root.status().ToString());
  REQUIRE(root.ok());
  REQUIRE(!ys.empty());

  // The weights, of the ys' shapes.
  const std::vector<Tensor> y0 = RunOk(root, ys, feeds);
  std::mt19937 rng(opt.seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<Output> ws;
  std::vector<Tensor> w_values;
  for (size_t k = 0; k < ys.size(); ++k) {
    REQUIRE(y0[k].dtype() == DT_DOUBLE);
    Tensor w(DT_DOUBLE, y0[k].shape());
    for (int64_t e = 0; e < w.NumElements(); ++e) w.data<double>()[e] = dist(rng);
    ws.push_back(ops::Placeholder(root.WithOpName("w" + std::to_string(k)), DT_DOUBLE));
    w_values.push_back(w);
  }
  std::vector<Output> grads;
  const Status built = AddSymbolicGradients(root, ys, xs, ws, &grads);
  INFO("AddSymbolicGradients: " << built.ToString());
  REQUIRE(built.ok());
  REQUIRE(grads.size() == xs.size());

  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  auto run = [&](const std::vector<std::pair<std::string, Tensor>>& in, const std::vector<Output>& fetches) {
    std::vector<std::string> names;
    for (const Output& o : fetches) names.push_back(o.name());
    std::vector<Tensor> out;
    const Status s = session.Run(in, names, {}, &out);
    INFO(s.ToString());
    REQUIRE(s.ok());
    return out;
  };
  std::vector<std::pair<std::string, Tensor>> grad_feeds = feeds;
  for (size_t k = 0; k < ws.size(); ++k) grad_feeds.emplace_back(ws[k].name(), w_values[k]);
  const std::vector<Tensor> symbolic = run(grad_feeds, grads);

  auto loss = [&](const std::vector<std::pair<std::string, Tensor>>& in) {
    const std::vector<Tensor> y = run(in, ys);
    double sum = 0;
    for (size_t k = 0; k < y.size(); ++k) {
      REQUIRE(y[k].shape() == w_values[k].shape());
      for (int64_t e = 0; e < y[k].NumElements(); ++e) sum += y[k].data<double>()[e] * w_values[k].data<double>()[e];
    }
    return sum;
  };
  std::ostringstream failures;
  int failed = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    INFO("x" << i << " of shape " << x_values[i].shape().DebugString());
    REQUIRE(symbolic[i].dtype() == DT_DOUBLE);
    REQUIRE(symbolic[i].shape() == x_values[i].shape());
    for (int64_t j = 0; j < x_values[i].NumElements(); ++j) {
      std::vector<std::pair<std::string, Tensor>> in = feeds;
      Tensor x = x_values[i].DeepCopy();
      in[i].second = x;
      const double x_j = x_values[i].data<double>()[j];
      x.data<double>()[j] = x_j + opt.h;
      const double up = loss(in);
      x.data<double>()[j] = x_j - opt.h;
      const double down = loss(in);
      const double numeric = (up - down) / (2 * opt.h);
      const double sym = symbolic[i].data<double>()[j];
      if (!(std::abs(sym - numeric) <= opt.tolerance * (1 + std::abs(numeric)))) {
        if (failed++ < 8) failures << "  x" << i << "[" << j << "]: symbolic " << sym << ", numeric " << numeric << "\n";
      }
    }
  }
  INFO("gradients differing from central differences:\n" << failures.str());
  REQUIRE(failed == 0);
}

}  // namespace test
}  // namespace actorflow
