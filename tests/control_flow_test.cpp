// Control flow in the executor (section 4.4): dead tensors through Switch and
// Merge, loop frames whose iterations carry their own tags, built from the
// primitives as TensorFlow's GraphDefs have them; the Cond and WhileLoop
// builders, stateful loop bodies, and a TensorFlow-written graph. Gradients
// through control flow are in control_flow_gradients_test.cpp, loops across
// devices in control_flow_devices_test.cpp.
#include <catch2/catch.hpp>

#include <chrono>

#include "actorflow/client/gradients/gradients.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/control_flow.hpp"
#include "actorflow/client/ops/control_flow_ops.hpp"
#include "actorflow/client/ops/queue_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "control_flow_util.hpp"
#include "actorflow/graph/graph.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "test_util.hpp"

using namespace actorflow;
using namespace actorflow::test;

namespace {

// if (pred) x + 10 else x * 2, from a Switch and a Merge.
struct CondGraph {
  Scope root = Scope::NewRootScope();
  Output pred, x, out, index, taken_true, taken_false;
  CondGraph() {
    pred = ops::Placeholder(root.WithOpName("pred"), DT_BOOL);
    x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto sw = ops::Switch(root.WithOpName("switch"), x, pred);
    taken_false = ops::Mul(root.WithOpName("f"), sw.output_false, 2.f);
    taken_true = ops::Add(root.WithOpName("t"), sw.output_true, 10.f);
    auto m = ops::Merge(root.WithOpName("merge"), {taken_false, taken_true});
    out = m.output;
    index = m.value_index;
  }
};

// A while loop written out as TensorFlow 1.x writes it:
//   i = 0, acc = start; while (i < n) { acc = acc + i * step; i = i + 1 }
// `step` and `n` enter as loop constants. Returns (i, acc) after the loop.
std::pair<Output, Output> SumLoop(const Scope& root, Input start, Input n, Input step, int64_t parallel,
                                  const std::string& frame = "while") {
  Scope s = root.NewSubScope(frame);
  auto enter_i = ops::Enter(s.WithOpName("Enter"), 0, frame, false, parallel);
  auto enter_acc = ops::Enter(s.WithOpName("Enter_1"), start, frame, false, parallel);
  auto enter_n = ops::Enter(s.WithOpName("Enter_2"), n, frame, true, parallel);
  auto enter_step = ops::Enter(s.WithOpName("Enter_3"), step, frame, true, parallel);
  auto merge_i = ops::Merge(s.WithOpName("Merge"), {enter_i, enter_i});
  auto merge_acc = ops::Merge(s.WithOpName("Merge_1"), {enter_acc, enter_acc});
  auto cond = ops::LoopCond(s.WithOpName("LoopCond"), ops::Less(s.WithOpName("Less"), merge_i.output, enter_n));
  auto sw_i = ops::Switch(s.WithOpName("Switch"), merge_i.output, cond);
  auto sw_acc = ops::Switch(s.WithOpName("Switch_1"), merge_acc.output, cond);
  auto body_i = ops::Identity(s.WithOpName("Identity"), sw_i.output_true);
  auto body_acc = ops::Identity(s.WithOpName("Identity_1"), sw_acc.output_true);
  // A constant in the body: in the frame through a control edge from the pivot.
  auto one = ops::Const(s.WithOpName("one").WithControlDependencies({body_i.op()}), 1);
  auto next_i = ops::Add(s.WithOpName("add"), body_i, one);
  auto next_acc =
      ops::Add(s.WithOpName("add_1"), body_acc, ops::Mul(s.WithOpName("mul"), ops::Cast(s, body_i, DT_FLOAT), enter_step));
  auto ni = ops::NextIteration(s.WithOpName("NextIteration"), next_i);
  auto nacc = ops::NextIteration(s.WithOpName("NextIteration_1"), next_acc);
  // The back edges: the merges' second inputs become the NextIterations.
  Graph* g = root.graph();
  for (auto [merge, next] : {std::pair<Output, Output>{merge_i.output, ni}, {merge_acc.output, nacc}})
    for (const Edge* e : merge.node()->in_edges())
      if (!e->IsControlEdge() && e->dst_input == 1) {
        g->ReplaceEdgeSource(e, next.node(), 0);
        break;
      }
  auto exit_i = ops::Exit(s.WithOpName("Exit"), sw_i.output_false);
  auto exit_acc = ops::Exit(s.WithOpName("Exit_1"), sw_acc.output_false);
  return {exit_i, exit_acc};
}

}  // namespace

TEST_CASE("control flow: a Switch takes one branch, the Merge forwards it and its index") {
  CondGraph c;
  for (bool p : {false, true}) {
    auto out = RunOk(c.root, {c.out, c.index}, {{"pred", Bool(p)}, {"x", Tensor::Scalar<float>(3.f)}});
    CHECK(out[0].scalar<float>() == (p ? 13.f : 6.f));
    CHECK(out[1].scalar<int32_t>() == (p ? 1 : 0));
  }
}

TEST_CASE("control flow: fetching a dead tensor is InvalidArgument saying it has no value") {
  CondGraph c;
  Status s = RunStatus(c.root, {c.taken_true}, {{"pred", Bool(false)}, {"x", Tensor::Scalar<float>(3.f)}});
  INFO(s.ToString());
  CHECK(errors::IsInvalidArgument(s));
  CHECK(s.message().find("no value") != std::string::npos);
  CHECK(s.message().find("_retval_t_0") != std::string::npos);  // names the fetched tensor
  // The live side of the same graph is fine.
  auto out = RunOk(c.root, {c.taken_false}, {{"pred", Bool(false)}, {"x", Tensor::Scalar<float>(3.f)}});
  CHECK(out[0].scalar<float>() == 6.f);
}

TEST_CASE("control flow: dead tensors propagate through a chain and its control edges; Merge of dead is dead") {
  Scope root = Scope::NewRootScope();
  auto pred = ops::Placeholder(root.WithOpName("pred"), DT_BOOL);
  auto sw = ops::Switch(root.WithOpName("sw"), 5.f, pred);
  auto a = ops::Neg(root.WithOpName("a"), sw.output_true);
  auto b = ops::Neg(root.WithOpName("b"), a);
  auto gated = ops::Identity(root.WithOpName("gated").WithControlDependencies({b.op()}), 7.f);
  auto merged = ops::Merge(root.WithOpName("m"), {b, b});
  // Taken: everything has a value.
  auto out = RunOk(root, {b, gated, merged.output}, {{"pred", Bool(true)}});
  CHECK(out[0].scalar<float>() == 5.f);
  CHECK(out[1].scalar<float>() == 7.f);
  // Not taken: a control edge from a dead node makes its target dead too.
  for (const Output& fetch : {b, gated, merged.output}) {
    Status s = RunStatus(root, {fetch}, {{"pred", Bool(false)}});
    INFO(fetch.name() << ": " << s.ToString());
    CHECK(errors::IsInvalidArgument(s));
  }
}

TEST_CASE("control flow: a ControlTrigger fires even when its inputs are dead") {
  Scope root = Scope::NewRootScope();
  auto pred = ops::Placeholder(root.WithOpName("pred"), DT_BOOL);
  auto sw = ops::Switch(root.WithOpName("sw"), 5.f, pred);
  auto dead_side = ops::Neg(root.WithOpName("dead_side"), sw.output_true);
  auto trigger = ops::ControlTrigger(root.WithOpName("trigger").WithControlDependencies({dead_side.op()}));
  auto after = ops::Identity(root.WithOpName("after").WithControlDependencies({trigger}), 1.f);
  auto out = RunOk(root, {after}, {{"pred", Bool(false)}});
  CHECK(out[0].scalar<float>() == 1.f);
}

TEST_CASE("control flow: a while loop of primitives sums, for any parallel_iterations") {
  for (int64_t parallel : {1, 2, 5, 10, 20}) {
    Scope root = Scope::NewRootScope();
    auto n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
    auto [i, acc] = SumLoop(root, 0.5f, n, 2.f, parallel);
    for (int iterations : {0, 1, 7, 100}) {
      auto out = RunOk(root, {i, acc}, {{"n", Tensor::Scalar<int32_t>(iterations)}});
      INFO("parallel " << parallel << ", " << iterations << " iterations");
      CHECK(out[0].scalar<int32_t>() == iterations);
      // 0.5 + 2 * (0 + 1 + ... + (n-1))
      CHECK(out[1].scalar<float>() == Approx(0.5 + 2.0 * iterations * (iterations - 1) / 2.0));
    }
  }
}

TEST_CASE("control flow: a long loop runs to its end (iterations and frames are freed as they finish)") {
  Scope root = Scope::NewRootScope();
  auto n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
  auto [i, acc] = SumLoop(root, 0.f, n, 0.f, 10);
  auto out = RunOk(root, {i}, {{"n", Tensor::Scalar<int32_t>(100000)}});
  CHECK(out[0].scalar<int32_t>() == 100000);
}

TEST_CASE("control flow: two loops in one graph, one fed from the other") {
  Scope root = Scope::NewRootScope();
  auto [i1, acc1] = SumLoop(root, 1.f, 4, 1.f, 10, "first");
  auto [i2, acc2] = SumLoop(root, acc1, i1, 10.f, 3, "second");
  auto out = RunOk(root, {acc1, acc2});
  CHECK(out[0].scalar<float>() == 7.f);                   // 1 + 0+1+2+3
  CHECK(out[1].scalar<float>() == 7.f + 10.f * 6.f);      // 7 + 10 * (0+1+2+3)
}

TEST_CASE("control flow: an op with inputs from two frames is an error naming both frames") {
  Scope root = Scope::NewRootScope();
  auto outside = ops::Const(root.WithOpName("outside"), 1.f);
  auto inside = ops::Enter(root.WithOpName("inside"), 2.f, "the_loop");
  ops::Add(root.WithOpName("mixed"), outside, inside);
  Status s = RunStatus(root, {ops::Identity(root.WithOpName("x"), outside)});
  // Pruning keeps only what the fetch needs: the mixed node is gone, the step runs.
  CHECK(s.ok());
  auto bad = ops::Add(root.WithOpName("mixed2"), outside, inside);
  s = RunStatus(root, {bad});
  INFO(s.ToString());
  CHECK(errors::IsInvalidArgument(s));
  CHECK(s.message().find("the_loop") != std::string::npos);
  CHECK(s.message().find("root frame") != std::string::npos);
  CHECK(s.message().find("mixed2") != std::string::npos);
}

TEST_CASE("control flow: a gradient through a bare Enter, Exit or NextIteration (no loop) refuses, naming it") {
  for (const char* which : {"Enter", "Exit", "NextIteration"}) {
    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    Output y;
    const std::string op = which;
    if (op == "Enter") y = ops::Enter(root.WithOpName("prim"), x, "f");
    if (op == "Exit") y = ops::Exit(root.WithOpName("prim"), x);
    if (op == "NextIteration") y = ops::NextIteration(root.WithOpName("prim"), x);
    OutputList grads;
    Status s = AddSymbolicGradients(root, {y}, {x}, &grads);
    INFO(op << ": " << s.ToString());
    // An Exit outside a loop's structure is not a loop; the others refuse.
    CHECK((op == "Exit" ? errors::IsInvalidArgument(s) : errors::IsUnimplemented(s)));
    CHECK(s.message().find("'prim'") != std::string::npos);
  }
}

// ---- Cond and WhileLoop ------------------------------------------------------

namespace {

// while (i < n) { i += 1; x *= 2 } with n fed.
Status DoublingLoop(const Scope& root, Output n, OutputList* out, ops::WhileOptions o = {}) {
  return ops::WhileLoop(
      root, {ops::Const(root, 0), ops::Const(root, 1.f)},
      [n](const Scope& s, const OutputList& v, Output* pred) {
        *pred = ops::Less(s, v[0], n);
        return s.status();
      },
      [](const Scope& s, const OutputList& v, OutputList* next) {
        *next = {ops::Add(s, v[0], 1), ops::Mul(s, v[1], 2.f)};
        return s.status();
      },
      out, o);
}

}  // namespace

TEST_CASE("WhileLoop: sums with outside tensors entering as loop constants, for any parallel_iterations") {
  for (int64_t parallel : {1, 5, 10, 20}) {
    Scope root = Scope::NewRootScope();
    auto n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
    OutputList out;
    ops::WhileOptions o;
    o.parallel_iterations = parallel;
    REQUIRE(DoublingLoop(root, n, &out, o).ok());
    for (int iterations : {0, 1, 10}) {
      auto v = RunOk(root, out, {{"n", Tensor::Scalar<int32_t>(iterations)}});
      CHECK(v[0].scalar<int32_t>() == iterations);
      CHECK(v[1].scalar<float>() == static_cast<float>(1 << iterations));
    }
  }
}

TEST_CASE("WhileLoop: node names and frame follow TensorFlow's") {
  Scope root = Scope::NewRootScope();
  OutputList out;
  REQUIRE(DoublingLoop(root, ops::Const(root.WithOpName("n"), 3), &out).ok());
  Graph* g = root.graph();
  for (const char* name : {"while/Enter", "while/Enter_1", "while/Merge", "while/Merge_1", "while/LoopCond",
                           "while/Switch", "while/Switch_1", "while/Identity", "while/Identity_1",
                           "while/NextIteration", "while/NextIteration_1", "while/Exit", "while/Exit_1"}) {
    INFO(name);
    CHECK(g->FindNode(name) != nullptr);
  }
  std::string frame;
  REQUIRE(GetNodeAttr(g->FindNode("while/Enter")->def(), "frame_name", &frame).ok());
  CHECK(frame == "while");
  // A second loop gets its own frame.
  OutputList out2;
  REQUIRE(DoublingLoop(root, ops::Const(root, 2), &out2).ok());
  REQUIRE(g->FindNode("while_1/Enter") != nullptr);
  REQUIRE(GetNodeAttr(g->FindNode("while_1/Enter")->def(), "frame_name", &frame).ok());
  CHECK(frame == "while_1");
  auto v = RunOk(root, {out[1], out2[1]});
  CHECK(v[0].scalar<float>() == 8.f);
  CHECK(v[1].scalar<float>() == 4.f);
}

TEST_CASE("WhileLoop: zero iterations give the initial values; maximum_iterations bounds the loop") {
  Scope root = Scope::NewRootScope();
  auto n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
  OutputList out;
  ops::WhileOptions o;
  o.maximum_iterations = 5;
  REQUIRE(DoublingLoop(root, n, &out, o).ok());
  REQUIRE(out.size() == 2);  // the counter is not among the outputs
  auto v = RunOk(root, out, {{"n", Tensor::Scalar<int32_t>(0)}});
  CHECK(v[1].scalar<float>() == 1.f);
  v = RunOk(root, out, {{"n", Tensor::Scalar<int32_t>(3)}});
  CHECK(v[1].scalar<float>() == 8.f);
  v = RunOk(root, out, {{"n", Tensor::Scalar<int32_t>(100)}});
  CHECK(v[0].scalar<int32_t>() == 5);
  CHECK(v[1].scalar<float>() == 32.f);
}

TEST_CASE("WhileLoop: a variable whose shape grows needs a shape invariant, and then runs") {
  auto build = [](const Scope& root, std::vector<PartialTensorShape> invariants, OutputList* out) {
    ops::WhileOptions o;
    o.shape_invariants = std::move(invariants);
    return ops::WhileLoop(
        root, {ops::Const(root.WithOpName("i0"), 0), ops::Const(root.WithOpName("xs0"), {1.f})},
        [](const Scope& s, const OutputList& v, Output* pred) {
          *pred = ops::Less(s, v[0], 4);
          return s.status();
        },
        [](const Scope& s, const OutputList& v, OutputList* next) {
          *next = {ops::Add(s, v[0], 1), ops::Concat(s, {v[1], v[1]}, 0)};
          return s.status();
        },
        out, o);
  };
  {
    Scope root = Scope::NewRootScope();
    OutputList out;
    Status s = build(root, {}, &out);
    INFO(s.ToString());
    CHECK(errors::IsInvalidArgument(s));
    CHECK(s.message().find("xs0") != std::string::npos);
    CHECK(s.message().find("[1]") != std::string::npos);
    CHECK(s.message().find("[2]") != std::string::npos);
    CHECK(s.message().find("shape invariant") != std::string::npos);
  }
  Scope root = Scope::NewRootScope();
  OutputList out;
  REQUIRE(build(root, {PartialTensorShape(std::vector<int64_t>{}), PartialTensorShape(std::vector<int64_t>{-1})}, &out).ok());
  auto v = RunOk(root, {out[1]});
  CHECK(v[0].NumElements() == 16);
}

TEST_CASE("WhileLoop: nested loops, and a Cond inside a loop") {
  Scope root = Scope::NewRootScope();
  OutputList out = NestedLoopWithCond(root, ops::Placeholder(root.WithOpName("n"), DT_INT32), "");
  for (int iterations : {0, 1, 4, 7}) {
    auto v = RunOk(root, out, {{"n", Tensor::Scalar<int32_t>(iterations)}});
    INFO(iterations << " outer iterations");
    CHECK(v[1].scalar<float>() == NestedLoopWithCondValue(iterations));
  }
}

TEST_CASE("Cond: takes one branch; a while loop inside a branch runs only when taken") {
  Scope root = Scope::NewRootScope();
  auto pred = ops::Placeholder(root.WithOpName("pred"), DT_BOOL);
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  OutputList out;
  REQUIRE(ops::Cond(
              root, pred,
              [&](const Scope& s, OutputList* r) {
                OutputList loop;
                AF_RETURN_IF_ERROR(ops::WhileLoop(
                    s, {ops::Const(s, 0), x},
                    [](const Scope& c, const OutputList& v, Output* p) {
                      *p = ops::Less(c, v[0], 3);
                      return c.status();
                    },
                    [](const Scope& b, const OutputList& v, OutputList* nx) {
                      *nx = {ops::Add(b, v[0], 1), ops::Mul(b, v[1], 10.f)};
                      return b.status();
                    },
                    &loop));
                *r = {loop[1]};
                return s.status();
              },
              [&](const Scope& s, OutputList* r) {
                *r = {ops::Neg(s, x)};
                return s.status();
              },
              &out)
              .ok());
  Graph* g = root.graph();
  CHECK(g->FindNode("cond/Switch") != nullptr);
  CHECK(g->FindNode("cond/Merge") != nullptr);
  CHECK(g->FindNode("cond/while/Enter") != nullptr);
  auto v = RunOk(root, out, {{"pred", Bool(true)}, {"x", Tensor::Scalar<float>(2.f)}});
  CHECK(v[0].scalar<float>() == 2000.f);
  v = RunOk(root, out, {{"pred", Bool(false)}, {"x", Tensor::Scalar<float>(2.f)}});
  CHECK(v[0].scalar<float>() == -2.f);
}

TEST_CASE("Cond: a branch returning an outside tensor as is; mismatched branches are refused") {
  Scope root = Scope::NewRootScope();
  auto pred = ops::Placeholder(root.WithOpName("pred"), DT_BOOL);
  auto a = ops::Const(root.WithOpName("a"), 1.f);
  auto b = ops::Const(root.WithOpName("b"), 2.f);
  OutputList out;
  REQUIRE(ops::Cond(root, pred, [&](const Scope&, OutputList* r) { *r = {a}; return Status::OK(); },
                    [&](const Scope&, OutputList* r) { *r = {b}; return Status::OK(); }, &out)
              .ok());
  CHECK(RunOk(root, out, {{"pred", Bool(true)}})[0].scalar<float>() == 1.f);
  CHECK(RunOk(root, out, {{"pred", Bool(false)}})[0].scalar<float>() == 2.f);
  OutputList bad;
  Status s = ops::Cond(root, pred, [&](const Scope&, OutputList* r) { *r = {a}; return Status::OK(); },
                       [&](const Scope& c, OutputList* r) { *r = {ops::Const(c, 1)}; return c.status(); }, &bad);
  CHECK(errors::IsInvalidArgument(s));
  CHECK(s.message().find("false branch") != std::string::npos);
}

// ---- Stateful bodies -----------------------------------------------------------

namespace {

// A session on `root`'s graph, for several runs.
struct Sess {
  Session session;
  explicit Sess(const Scope& root) { REQUIRE(session.Create(ToDef(root)).ok()); }
  std::vector<Tensor> Run(const std::vector<Output>& fetches, const std::vector<std::string>& targets = {},
                          const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
    std::vector<std::string> names;
    for (const auto& f : fetches) names.push_back(f.name());
    std::vector<Tensor> out;
    Status s = session.Run(feeds, names, targets, &out);
    INFO(s.ToString());
    REQUIRE(s.ok());
    return out;
  }
};

}  // namespace

TEST_CASE("WhileLoop: variable updates in the body, ordered by a control dependency, match the sequential loop") {
  for (int64_t parallel : {1, 10}) {
    Scope root = Scope::NewRootScope();
    auto v = ops::Variable(root.WithOpName("v"), PartialTensorShape(std::vector<int64_t>{}), DT_FLOAT);
    ops::Assign(root.WithOpName("init"), v, 1.f);
    ops::WhileOptions o;
    o.parallel_iterations = parallel;
    OutputList out;
    // for i in [0, 6): v = v * 2 + i  (the next i waits for this iteration's update)
    REQUIRE(ops::WhileLoop(
                root, {ops::Const(root, 0)},
                [](const Scope& s, const OutputList& x, Output* pred) {
                  *pred = ops::Less(s, x[0], 6);
                  return s.status();
                },
                [&](const Scope& s, const OutputList& x, OutputList* next) {
                  auto updated = ops::Assign(s, v, ops::Add(s, ops::Mul(s, v, 2.f), ops::Cast(s, x[0], DT_FLOAT)));
                  *next = {ops::Add(s.WithControlDependencies({updated.op()}), x[0], 1)};
                  return s.status();
                },
                &out, o)
                .ok());
    auto read = ops::Identity(root.WithOpName("read"), v);
    Sess sess(root);
    sess.Run({}, {"init"});
    sess.Run(out);
    float expect = 1.f;
    for (int i = 0; i < 6; ++i) expect = expect * 2.f + static_cast<float>(i);
    INFO("parallel_iterations " << parallel);
    CHECK(sess.Run({read})[0].scalar<float>() == expect);
  }
}

TEST_CASE("WhileLoop: enqueues in the body, in order with parallel_iterations 1") {
  Scope root = Scope::NewRootScope();
  auto q = ops::FIFOQueue(root.WithOpName("q"), {DT_INT32});
  ops::WhileOptions o;
  o.parallel_iterations = 1;
  OutputList out;
  REQUIRE(ops::WhileLoop(
              root, {ops::Const(root, 0)},
              [](const Scope& s, const OutputList& x, Output* pred) {
                *pred = ops::Less(s, x[0], 20);
                return s.status();
              },
              [&](const Scope& s, const OutputList& x, OutputList* next) {
                auto enq = ops::QueueEnqueue(s, q, {x[0]});
                *next = {ops::Add(s.WithControlDependencies({enq}), x[0], 1)};
                return s.status();
              },
              &out, o)
              .ok());
  auto all = ops::QueueDequeueMany(root, q, 20, {DT_INT32})[0];
  Sess sess(root);
  sess.Run(out);
  auto v = Values<int32_t>(sess.Run({all})[0]);
  std::vector<int32_t> expect(20);
  for (int i = 0; i < 20; ++i) expect[static_cast<size_t>(i)] = i;
  CHECK(v == expect);
}

TEST_CASE("Cond: a branch's variable update runs only when the branch is taken") {
  Scope root = Scope::NewRootScope();
  auto pred = ops::Placeholder(root.WithOpName("pred"), DT_BOOL);
  auto v = ops::Variable(root.WithOpName("v"), PartialTensorShape(std::vector<int64_t>{}), DT_FLOAT);
  ops::Assign(root.WithOpName("init"), v, 0.f);
  OutputList out;
  REQUIRE(ops::Cond(
              root, pred,
              [&](const Scope& s, OutputList* r) {
                *r = {ops::AssignAdd(s, v, 1.f)};
                return s.status();
              },
              [&](const Scope& s, OutputList* r) {
                *r = {ops::Identity(s, v)};
                return s.status();
              },
              &out)
              .ok());
  auto read = ops::Identity(root.WithOpName("read"), v);
  Sess sess(root);
  sess.Run({}, {"init"});
  sess.Run(out, {}, {{"pred", Bool(true)}});
  sess.Run(out, {}, {{"pred", Bool(false)}});
  sess.Run(out, {}, {{"pred", Bool(false)}});
  sess.Run(out, {}, {{"pred", Bool(true)}});
  CHECK(sess.Run({read})[0].scalar<float>() == 2.f);
}

TEST_CASE("WhileLoop: a loop that never ends is stopped by the step timeout; the session stays usable") {
  Scope root = Scope::NewRootScope();
  OutputList forever, finite;
  REQUIRE(ops::WhileLoop(
              root, {ops::Const(root, 0)},
              [](const Scope& s, const OutputList&, Output* pred) {
                *pred = ops::Const(s, true);
                return s.status();
              },
              [](const Scope& s, const OutputList& x, OutputList* next) {
                *next = {ops::Add(s, x[0], 1)};
                return s.status();
              },
              &forever)
              .ok());
  REQUIRE(DoublingLoop(root, ops::Const(root, 3), &finite).ok());
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  RunOptions ro;
  ro.timeout_in_ms = 200;
  std::vector<Tensor> out;
  Status s = session.Run(ro, {}, {forever[0].name()}, {}, &out);
  INFO(s.ToString());
  CHECK(errors::IsDeadlineExceeded(s));
  s = session.Run(ro, {}, {finite[1].name()}, {}, &out);
  REQUIRE(s.ok());
  CHECK(out[0].scalar<float>() == 8.f);
}

TEST_CASE("WhileLoop: a loop whose body updates a variable (a kernel that completes at once) is stopped too") {
  // Each iteration's update is answered before its kernel returns, so the
  // executor alternates running a node and handling its completion: it must
  // still yield, or a step started on the caller's thread would never let
  // its deadline in.
  Scope root = Scope::NewRootScope();
  auto w = ops::VarHandleOp(root.WithOpName("w"), DT_FLOAT, PartialTensorShape(TensorShape{}));
  auto init = ops::AssignVariableOp(root.WithOpName("init"), w, ops::Const(root, 0.f));
  OutputList forever;
  REQUIRE(ops::WhileLoop(
              root, {ops::Const(root, 0)},
              [](const Scope& s, const OutputList&, Output* pred) {
                *pred = ops::Const(s, true);
                return s.status();
              },
              [&](const Scope& s, const OutputList& x, OutputList* next) {
                Operation add = ops::AssignAddVariableOp(s, w, ops::Const(s, 1.f));
                *next = {ops::Add(s.WithControlDependencies(std::vector<Operation>{add}), x[0], 1)};
                return s.status();
              },
              &forever)
              .ok());
  auto read = ops::ReadVariableOp(root.WithOpName("read"), w, DT_FLOAT);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  REQUIRE(session.Run({}, {}, {"init"}, &out).ok());
  RunOptions ro;
  ro.timeout_in_ms = 200;
  const auto start = std::chrono::steady_clock::now();
  Status s = session.Run(ro, {}, {forever[0].name()}, {}, &out);
  INFO(s.ToString());
  CHECK(errors::IsDeadlineExceeded(s));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));  // generous: never a hang
  REQUIRE(session.Run({}, {"read"}, {}, &out).ok());
  CHECK(out[0].scalar<float>() > 0.f);
}

TEST_CASE("WhileLoop: fetching only the loop's outputs prunes side effects they do not need") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), PartialTensorShape(std::vector<int64_t>{}), DT_FLOAT);
  ops::Assign(root.WithOpName("init"), v, 0.f);
  OutputList out;
  REQUIRE(ops::WhileLoop(
              root, {ops::Const(root, 0)},
              [](const Scope& s, const OutputList& x, Output* pred) {
                *pred = ops::Less(s, x[0], 5);
                return s.status();
              },
              [&](const Scope& s, const OutputList& x, OutputList* next) {
                ops::AssignAdd(s.WithOpName("side_effect"), v, 1.f);  // nothing depends on it
                *next = {ops::Add(s, x[0], 1)};
                return s.status();
              },
              &out)
              .ok());
  auto read = ops::Identity(root.WithOpName("read"), v);
  Sess sess(root);
  sess.Run({}, {"init"});
  CHECK(sess.Run(out)[0].scalar<int32_t>() == 5);
  CHECK(sess.Run({read})[0].scalar<float>() == 0.f);
  // Asked for as a target, it runs once per iteration.
  std::vector<Tensor> none;
  REQUIRE(sess.session.Run({}, {out[0].name()}, {"while/side_effect"}, &none).ok());
  CHECK(sess.Run({read})[0].scalar<float>() == 5.f);
}

TEST_CASE("a while loop and a cond as TensorFlow 1.x writes them import and run") {
  proto::GraphDef def;
  REQUIRE(ReadGraphDefFile(std::string(AF_TEST_DATA_DIR) + "/tf_while_cond.pbtxt", &def).ok());
  Session session;
  Status s = session.Create(def);
  INFO(s.ToString());
  REQUIRE(s.ok());
  for (int n : {0, 5, 8}) {
    std::vector<Tensor> out;
    s = session.Run({{"n", Tensor::Scalar<int32_t>(n)}}, {"while/Exit:0", "while/Exit_1:0", "cond/Merge:0"}, {}, &out);
    INFO(s.ToString());
    REQUIRE(s.ok());
    const float x = static_cast<float>(1 << n);
    CHECK(out[0].scalar<int32_t>() == n);
    CHECK(out[1].scalar<float>() == x);
    CHECK(out[2].scalar<float>() == (x > 100.f ? x - 100.f : x));
  }
}
