// Gradients through control flow (client/gradients/while_gradients.hpp):
// AddSymbolicGradients through Cond and WhileLoop checked against central
// differences: loops to their initial values and captured tensors, loops
// stopped by maximum_iterations or run zero times, either branch of a cond,
// nested loops, conds and loops inside a loop's body, and long loops whose
// backward iterations overlap. The refusals for bare primitives are in
// control_flow_test.cpp.
#include <catch2/catch.hpp>

#include <functional>

#include "actorflow/client/gradients/gradients.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/control_flow.hpp"
#include "actorflow/client/session.hpp"
#include "test_util.hpp"

using namespace actorflow;
using namespace actorflow::test;

// ---- Gradients through Cond and WhileLoop ---------------------------------------

namespace {

// The gradient of sum(y) with respect to each feed, symbolic (through the
// control flow) against central differences.
void CheckGradients(const Scope& root, const Output& y, const std::vector<std::pair<Output, Tensor>>& at,
                    double tolerance = 2e-3) {
  OutputList xs;
  for (const auto& [x, value] : at) xs.push_back(x);
  OutputList grads;
  Status s = AddSymbolicGradients(root, {y}, xs, &grads);
  INFO(s.ToString());
  REQUIRE(s.ok());
  auto total = ops::Sum(root, y, ops::Range(root, 0, ops::Rank(root, y), 1));
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  auto feeds = [&](size_t which, int64_t element, double delta) {
    std::vector<std::pair<std::string, Tensor>> f;
    for (size_t i = 0; i < at.size(); ++i) {
      Tensor t(DT_FLOAT, at[i].second.shape());
      for (int64_t k = 0; k < t.NumElements(); ++k) t.data<float>()[k] = at[i].second.data<float>()[k];
      if (i == which) t.data<float>()[element] += static_cast<float>(delta);
      f.emplace_back(at[i].first.node()->name(), t);
    }
    return f;
  };
  std::vector<std::string> grad_names;
  for (const Output& g : grads) grad_names.push_back(g.name());
  std::vector<Tensor> symbolic;
  {
    std::vector<Tensor> forward;
    s = session.Run(feeds(0, 0, 0.0), {total.name()}, {}, &forward);
    INFO("the forward value, with the gradient's additions: " << s.ToString());
    REQUIRE(s.ok());
  }
  s = session.Run(feeds(0, 0, 0.0), grad_names, {}, &symbolic);
  INFO(s.ToString());
  REQUIRE(s.ok());
  const double eps = 1e-3;
  for (size_t i = 0; i < at.size(); ++i) {
    for (int64_t k = 0; k < at[i].second.NumElements(); ++k) {
      std::vector<Tensor> plus, minus;
      REQUIRE(session.Run(feeds(i, k, eps), {total.name()}, {}, &plus).ok());
      REQUIRE(session.Run(feeds(i, k, -eps), {total.name()}, {}, &minus).ok());
      const double numeric = (plus[0].scalar<float>() - minus[0].scalar<float>()) / (2 * eps);
      INFO("d sum(y) / d " << at[i].first.name() << "[" << k << "]");
      CHECK(symbolic[i].data<float>()[k] == Approx(numeric).epsilon(tolerance).margin(tolerance));
    }
  }
}

Tensor Floats(std::vector<float> v) { return MakeTensor<float>(v, TensorShape{static_cast<int64_t>(v.size())}); }

// while (i < 3) { x = x * x * 0.5 + w * x }, x a vector, w captured from outside.
Output PolyLoop(const Scope& root, Output x, Output w, int64_t parallel, int64_t max_iterations = -1, int limit = 3) {
  OutputList out;
  ops::WhileOptions o;
  o.parallel_iterations = parallel;
  o.maximum_iterations = max_iterations;
  Status s = ops::WhileLoop(
      root, {ops::Const(root, 0), x},
      [limit](const Scope& c, const OutputList& v, Output* pred) {
        *pred = ops::Less(c, v[0], limit);
        return c.status();
      },
      [w](const Scope& b, const OutputList& v, OutputList* next) {
        *next = {ops::Add(b, v[0], 1), ops::Add(b, ops::Mul(b, ops::Mul(b, v[1], v[1]), 0.5f), ops::Mul(b, w, v[1]))};
        return b.status();
      },
      &out, o);
  REQUIRE(s.ok());
  return out[1];
}

}  // namespace

TEST_CASE("gradients: through a while loop, to its initial value and to a captured constant") {
  for (int64_t parallel : {1, 10}) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto w = ops::Placeholder(root.WithOpName("w"), DT_FLOAT);
    Output y = PolyLoop(root, x, w, parallel);
    INFO("parallel_iterations " << parallel);
    CheckGradients(root, y, {{x, Floats({0.7f, -0.4f, 1.1f})}, {w, Floats({0.3f, 0.5f, -0.2f})}});
  }
}

TEST_CASE("gradients: through a loop stopped by maximum_iterations, and a loop that runs zero times") {
  {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto w = ops::Placeholder(root.WithOpName("w"), DT_FLOAT);
    Output y = PolyLoop(root, x, w, 10, /*max_iterations=*/2, /*limit=*/100);
    CheckGradients(root, y, {{x, Floats({0.6f, 0.9f})}, {w, Floats({0.4f, -0.3f})}});
  }
  {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto w = ops::Placeholder(root.WithOpName("w"), DT_FLOAT);
    Output y = PolyLoop(root, x, w, 10, -1, /*limit=*/0);
    CheckGradients(root, y, {{x, Floats({0.6f})}, {w, Floats({0.4f})}});  // y = x: dy/dx = 1, dy/dw = 0
  }
}

TEST_CASE("gradients: through a Cond, on either branch") {
  for (float at : {2.f, -1.5f}) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    OutputList out;
    REQUIRE(ops::Cond(
                root, ops::Greater(root, ops::Sum(root, x, 0), 0.f),
                [&](const Scope& s, OutputList* r) {
                  *r = {ops::Mul(s, x, x)};
                  return s.status();
                },
                [&](const Scope& s, OutputList* r) {
                  *r = {ops::Mul(s, ops::Tanh(s, x), -3.f)};
                  return s.status();
                },
                &out)
                .ok());
    INFO("x = " << at);
    CheckGradients(root, out[0], {{x, Floats({at, at / 2})}});
  }
}

TEST_CASE("gradients: through nested while loops") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  OutputList out;
  // for i < 2: for j < 3: x = x * 0.9 + sin(x)
  REQUIRE(ops::WhileLoop(
              root, {ops::Const(root, 0), x},
              [](const Scope& c, const OutputList& v, Output* pred) {
                *pred = ops::Less(c, v[0], 2);
                return c.status();
              },
              [](const Scope& b, const OutputList& v, OutputList* next) {
                OutputList inner;
                AF_RETURN_IF_ERROR(ops::WhileLoop(
                    b, {ops::Const(b, 0), v[1]},
                    [](const Scope& c2, const OutputList& u, Output* pred) {
                      *pred = ops::Less(c2, u[0], 3);
                      return c2.status();
                    },
                    [](const Scope& b2, const OutputList& u, OutputList* next2) {
                      *next2 = {ops::Add(b2, u[0], 1), ops::Add(b2, ops::Mul(b2, u[1], 0.9f), ops::Tanh(b2, u[1]))};
                      return b2.status();
                    },
                    &inner));
                *next = {ops::Add(b, v[0], 1), inner[1]};
                return b.status();
              },
              &out)
              .ok());
  CheckGradients(root, out[1], {{x, Floats({0.3f, -0.8f})}});
}

// ---- Conds and loops inside a loop's body -----------------------------------

namespace {

// for (i = 0; i < n; ++i) x = step(i, x), with parallel_iterations `parallel`; the final x.
using LoopStep = std::function<Status(const Scope&, Output i, Output x, Output* next_x)>;
Output CountedLoop(const Scope& root, Output x, int n, int64_t parallel, const LoopStep& step) {
  OutputList out;
  ops::WhileOptions o;
  o.parallel_iterations = parallel;
  Status st = ops::WhileLoop(
      root, {ops::Const(root, 0), x},
      [n](const Scope& s, const OutputList& v, Output* pred) {
        *pred = ops::Less(s, v[0], n);
        return s.status();
      },
      [&](const Scope& s, const OutputList& v, OutputList* next) {
        Output next_x;
        AF_RETURN_IF_ERROR(step(s, v[0], v[1], &next_x));
        *next = {ops::Add(s, v[0], 1), next_x};
        return s.status();
      },
      &out, o);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return out[1];
}

// y = even(i) ? then_fn(x) : else_fn(x), as a Cond.
Status CondOnEvenIteration(const Scope& s, Output i, const ops::BranchFn& then_fn, const ops::BranchFn& else_fn,
                           Output* y) {
  OutputList r;
  AF_RETURN_IF_ERROR(ops::Cond(s, ops::Equal(s, ops::FloorMod(s, i, 2), 0), then_fn, else_fn, &r));
  *y = r[0];
  return Status::OK();
}

}  // namespace

TEST_CASE("gradients: through a cond inside a loop's body, branches alternating by iteration") {
  for (int64_t parallel : {1, 10}) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto w = ops::Placeholder(root.WithOpName("w"), DT_FLOAT);
    // for i < 5: x = (i even) ? x * x * 0.5 + w * x : tanh(x) * 3 - w
    Output y = CountedLoop(root, x, 5, parallel, [&](const Scope& s, Output i, Output v, Output* next) {
      return CondOnEvenIteration(
          s, i,
          [&](const Scope& c, OutputList* r) {
            *r = {ops::Add(c, ops::Mul(c, ops::Mul(c, v, v), 0.5f), ops::Mul(c, w, v))};
            return c.status();
          },
          [&](const Scope& c, OutputList* r) {
            *r = {ops::Sub(c, ops::Mul(c, ops::Tanh(c, v), 3.f), w)};
            return c.status();
          },
          next);
    });
    INFO("parallel_iterations " << parallel);
    CheckGradients(root, y, {{x, Floats({0.6f, -0.3f})}, {w, Floats({0.2f, 0.4f})}});
  }
}

TEST_CASE("gradients: a long loop whose backward iterations overlap pops its values in order") {
  for (int64_t parallel : {1, 10}) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto w = ops::Placeholder(root.WithOpName("w"), DT_FLOAT);
    // for i < 30: x = tanh(x * w + 0.01 * i): every iteration's values differ, so a pop
    // taken from the wrong iteration changes the gradient.
    Output y = CountedLoop(root, x, 30, parallel, [&](const Scope& s, Output i, Output v, Output* next) {
      *next = ops::Tanh(s, ops::Add(s, ops::Mul(s, v, w), ops::Mul(s, ops::Cast(s, i, DT_FLOAT), 0.01f)));
      return s.status();
    });
    INFO("parallel_iterations " << parallel);
    CheckGradients(root, y, {{x, Floats({0.5f, -0.9f, 0.2f})}, {w, Floats({1.1f, 0.8f, -1.2f})}});
  }
}

TEST_CASE("gradients: a cond nested in a branch of a cond, and a loop in a branch, inside a loop's body") {
  for (int64_t parallel : {1, 10}) {
    for (auto [inner_loop_binding, at] : {std::pair<bool, std::vector<float>>{false, {0.6f, -0.2f}},
                                          {false, {-0.7f, 0.1f}}, {true, {0.6f, -0.2f}}}) {
      const bool inner_loop = inner_loop_binding;  // a variable, not a binding: the lambdas capture it (clang 14)
      Scope root = Scope::NewRootScope();
      auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
      // for i < 4: x = (i even) ? f(x) : x, where f holds a nested cond or a loop.
      Output y = CountedLoop(root, x, 4, parallel, [&](const Scope& s, Output i, Output v, Output* next) {
        return CondOnEvenIteration(
            s, i,
            [&](const Scope& c, OutputList* r) {
              if (inner_loop) {
                Output m = CountedLoop(c, v, 2, 10, [](const Scope& b, Output, Output u, Output* nx) {
                  *nx = ops::Tanh(b, ops::Mul(b, u, 1.3f));
                  return b.status();
                });
                *r = {ops::Square(c, m)};
                return c.status();
              }
              OutputList m;
              AF_RETURN_IF_ERROR(ops::Cond(
                  c, ops::Greater(c, ops::Sum(c, v, 0), 0.f),
                  [&](const Scope& c2, OutputList* r2) {
                    *r2 = {ops::Mul(c2, v, 2.f)};
                    return c2.status();
                  },
                  [&](const Scope& c2, OutputList* r2) {
                    *r2 = {ops::Neg(c2, v)};
                    return c2.status();
                  },
                  &m));
              *r = {ops::Square(c, ops::Tanh(c, m[0]))};
              return c.status();
            },
            [&](const Scope& c, OutputList* r) {
              *r = {v};
              return c.status();
            },
            next);
      });
      INFO("parallel_iterations " << parallel << (inner_loop ? ", a loop in the branch" : ", a nested cond"));
      CheckGradients(root, y, {{x, Floats(at)}});
    }
  }
}
