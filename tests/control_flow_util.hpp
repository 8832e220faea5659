// Helpers shared by the control-flow tests (control_flow_test.cpp and
// control_flow_devices_test.cpp): a bool scalar, and loops nested with a cond
// whose inner work may run on another device.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/control_flow.hpp"
#include "actorflow/core/tensor.hpp"

namespace actorflow {
namespace test {

inline Tensor Bool(bool b) { return Tensor::Scalar<bool>(b); }

// pred ? x * 2 : -x, the true branch on `taken_on` and the false one on
// `other_on` ("": the scope's device); placeholders "pred" (bool) and "x"
// (float). The untaken branch's tensors are dead where it runs.
inline OutputList DoubleOrNegate(const Scope& root, const std::string& taken_on, const std::string& other_on) {
  auto on = [](const Scope& s, const std::string& d) { return d.empty() ? s : s.WithDevice(d); };
  auto pred = ops::Placeholder(root.WithOpName("pred"), DT_BOOL);
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  OutputList out;
  Status st = ops::Cond(
      root, pred,
      [&](const Scope& s, OutputList* r) {
        *r = {ops::Mul(on(s, taken_on), x, 2.f)};
        return s.status();
      },
      [&](const Scope& s, OutputList* r) {
        *r = {ops::Neg(on(s, other_on), x)};
        return s.status();
      },
      &out);
  REQUIRE(st.ok());
  return out;
}

// (i, x) = (0, 1); while (i < n) { i += 1; x *= 2 }, the doubling on
// `other` and the counter on the scope's device. Outputs (n, 2^n).
inline OutputList DoublingLoop(const Scope& root, Output n, const std::string& other, int64_t parallel_iterations) {
  OutputList out;
  ops::WhileOptions o;
  o.parallel_iterations = parallel_iterations;
  Status st = ops::WhileLoop(
      root, {ops::Const(root, 0), ops::Const(root, 1.f)},
      [n](const Scope& s, const OutputList& v, Output* pred) {
        *pred = ops::Less(s, v[0], n);
        return s.status();
      },
      [other](const Scope& s, const OutputList& v, OutputList* next) {
        *next = {ops::Add(s, v[0], 1), ops::Mul(s.WithDevice(other), v[1], 2.f)};
        return s.status();
      },
      &out, o);
  REQUIRE(st.ok());
  return out;
}

// for i in [0, n): { for j in [0, i): total += 1;  if (i is odd) total += 100 }
// The inner loop's add and the cond's true branch run on `other` ("": the
// scope's device). Returns the outer loop's outputs (i, total).
inline OutputList NestedLoopWithCond(const Scope& root, Output n, const std::string& other) {
  auto on_other = [other](const Scope& s) { return other.empty() ? s : s.WithDevice(other); };
  OutputList out;
  Status st = ops::WhileLoop(
      root, {ops::Const(root, 0), ops::Const(root, 0.f)},
      [n](const Scope& s, const OutputList& v, Output* pred) {
        *pred = ops::Less(s, v[0], n);
        return s.status();
      },
      [&](const Scope& s, const OutputList& v, OutputList* next) {
        Output i = v[0];
        OutputList inner;
        AF_RETURN_IF_ERROR(ops::WhileLoop(
            s, {ops::Const(s, 0), v[1]},
            [i](const Scope& c, const OutputList& w, Output* pred) {
              *pred = ops::Less(c, w[0], i);
              return c.status();
            },
            [&](const Scope& b, const OutputList& w, OutputList* nx) {
              *nx = {ops::Add(b, w[0], 1), ops::Add(on_other(b), w[1], 1.f)};
              return b.status();
            },
            &inner));
        OutputList bonus;
        AF_RETURN_IF_ERROR(ops::Cond(
            s, ops::Equal(s, ops::FloorMod(s, i, 2), 1),
            [&](const Scope& c, OutputList* r) {
              *r = {ops::Add(on_other(c), inner[1], 100.f)};
              return c.status();
            },
            [&](const Scope& c, OutputList* r) {
              *r = {inner[1]};
              return c.status();
            },
            &bonus));
        *next = {ops::Add(s, i, 1), bonus[0]};
        return s.status();
      },
      &out);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return out;
}

inline float NestedLoopWithCondValue(int n) {
  float total = 0;
  for (int i = 0; i < n; ++i) total += static_cast<float>(i + (i % 2 == 1 ? 100 : 0));
  return total;
}

}  // namespace test
}  // namespace actorflow
