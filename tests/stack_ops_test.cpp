// Stack ops (ops/stack/stack_ops.cpp): LIFO outside loops; the errors, each
// naming the node and the stack; loops that push in every iteration pop in
// exact reverse iteration order afterwards, with 1 and 10 parallel
// iterations and in nested loops; stacks die with their step; the placer
// keeps whatever a stack handle reaches on the stack's device.
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/control_flow_ops.hpp"
#include "actorflow/client/ops/queue_ops.hpp"
#include "actorflow/client/ops/stack_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/devices/device_manager.hpp"
#include "actorflow/graph/graph_def_io.hpp"
#include "actorflow/graph/placer.hpp"
#include "actorflow/ops/stack/stack.hpp"
#include "test_util.hpp"

using namespace actorflow;
using namespace actorflow::test;

namespace {

constexpr int64_t kStepBoundMs = StepClient::kStepBoundMs;  // a step that should finish does, long before

Status Run(Session* session, const std::vector<Output>& fetches, std::vector<Tensor>* out,
           const std::vector<std::pair<std::string, Tensor>>& feeds = {}, RunMetadata* metadata = nullptr) {
  RunOptions opts;
  opts.timeout_in_ms = kStepBoundMs;
  if (metadata) opts.trace_level = TraceLevel::kSoftwareTrace;
  std::vector<std::string> names;
  for (const Output& f : fetches) names.push_back(f.name());
  return session->Run(opts, feeds, names, {}, out, metadata);
}

// Runs the scope's graph once in a new session; REQUIREs that it was built.
Status RunOnce(const Scope& root, const std::vector<Output>& fetches, std::vector<Tensor>* out,
               const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  return Run(&session, fetches, out, feeds);
}

std::vector<Tensor> RunOnceOk(const Scope& root, const std::vector<Output>& fetches,
                              const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
  std::vector<Tensor> out;
  Status s = RunOnce(root, fetches, &out, feeds);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return out;
}

bool Contains(const Status& s, const std::string& part) { return s.message().find(part) != std::string::npos; }

// A constant inside a loop body: in the frame through a control edge from the pivot.
Output C(const Scope& s, const Output& pivot, const Input::Initializer& v) {
  return ops::Const(s.WithControlDependencies({pivot.op()}), v);
}

// The body of a counting loop: the next accumulator from the counter, the
// accumulator and the loop invariants (all in the loop's frame).
using Body = std::function<Output(const Scope& s, Output i, Output acc, const std::vector<Output>& invariants)>;

// A while loop written out from the primitives, as control_flow_test.cpp's
// SumLoop: for (i = i0; i < n; ++i) acc = body(i, acc, invariants). `i0`,
// `n`, `acc0` and the invariants are of the enclosing frame. Returns acc
// after the loop.
Output CountingLoop(const Scope& outer, const std::string& frame, Input i0, Input n, Input acc0, int64_t parallel,
                    const std::vector<Output>& invariants, const Body& body) {
  Scope s = outer.NewSubScope(frame);
  auto enter_i = ops::Enter(s.WithOpName("Enter_i"), i0, frame, false, parallel);
  auto enter_acc = ops::Enter(s.WithOpName("Enter_acc"), acc0, frame, false, parallel);
  auto enter_n = ops::Enter(s.WithOpName("Enter_n"), n, frame, true, parallel);
  std::vector<Output> inv;
  for (size_t k = 0; k < invariants.size(); ++k)
    inv.push_back(ops::Enter(s.WithOpName("Enter_inv" + std::to_string(k)), invariants[k], frame, true, parallel));
  auto merge_i = ops::Merge(s.WithOpName("Merge_i"), {enter_i, enter_i});
  auto merge_acc = ops::Merge(s.WithOpName("Merge_acc"), {enter_acc, enter_acc});
  auto cond = ops::LoopCond(s.WithOpName("LoopCond"), ops::Less(s.WithOpName("Less"), merge_i.output, enter_n));
  auto sw_i = ops::Switch(s.WithOpName("Switch_i"), merge_i.output, cond);
  auto sw_acc = ops::Switch(s.WithOpName("Switch_acc"), merge_acc.output, cond);
  auto i = ops::Identity(s.WithOpName("i"), sw_i.output_true);
  auto acc = ops::Identity(s.WithOpName("acc"), sw_acc.output_true);
  auto next_i = ops::NextIteration(s.WithOpName("NextIteration_i"), ops::Add(s.WithOpName("next_i"), i, C(s, i, 1)));
  auto next_acc = ops::NextIteration(s.WithOpName("NextIteration_acc"), body(s, i, acc, inv));
  // The back edges: the merges' second inputs become the NextIterations.
  Graph* g = outer.graph();
  for (auto [merge, next] : {std::pair<Output, Output>{merge_i.output, next_i}, {merge_acc.output, next_acc}})
    for (const Edge* e : merge.node()->in_edges())
      if (!e->IsControlEdge() && e->dst_input == 1) {
        g->ReplaceEdgeSource(e, next.node(), 0);
        break;
      }
  return ops::Exit(s.WithOpName("Exit_acc"), sw_acc.output_false);
}

// Pops `n` int32 elements of `stack` in a loop after `after` (a value
// computed once every push is done) and returns [after, first pop, second
// pop, ...]. Each pop waits for the previous one (through the accumulator),
// as TensorFlow's gradient loops order theirs: a pop takes the top,
// whichever iteration runs it.
Output PopAll(const Scope& root, const Output& stack, Input n, const Output& after, int64_t parallel) {
  auto acc0 = ops::Reshape(root, after, {1});
  return CountingLoop(root, "pop_loop", 0, n, acc0, parallel, {stack},
                      [](const Scope& s, Output i, Output acc, const std::vector<Output>& inv) {
                        auto pop = ops::StackPop(s.WithOpName("pop").WithControlDependencies({acc.op()}), inv[0],
                                                 DT_INT32);
                        return ops::Concat(s, {acc, ops::Reshape(s, pop, C(s, i, {1}))}, C(s, i, 0));
                      });
}

}  // namespace

TEST_CASE("stacks: outside loops, last in first out; a push outputs what it pushed") {
  Scope root = Scope::NewRootScope();
  auto stack = ops::Stack(root.WithOpName("stack"), DT_FLOAT);
  Output last;
  std::vector<Output> pushed;
  for (float v : {1.f, 2.f, 3.f}) {
    Scope s = last.valid() ? root.WithControlDependencies({last.op()}) : root;
    last = ops::StackPush(s, stack, ops::Const(root, {v, 10 * v}));
    pushed.push_back(last);
  }
  std::vector<Output> pops;
  for (int k = 0; k < 3; ++k) {
    last = ops::StackPop(root.WithOpName("pop" + std::to_string(k)).WithControlDependencies({last.op()}), stack,
                         DT_FLOAT);
    pops.push_back(last);
  }
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  RunMetadata metadata;
  Status s = Run(&session, {pushed[1], pops[0], pops[1], pops[2]}, &out, {}, &metadata);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(Values<float>(out[0]) == std::vector<float>{2.f, 20.f});
  CHECK(Values<float>(out[1]) == std::vector<float>{3.f, 30.f});
  CHECK(Values<float>(out[2]) == std::vector<float>{2.f, 20.f});
  CHECK(Values<float>(out[3]) == std::vector<float>{1.f, 10.f});
  // Cheap: every stack kernel ran on the device actor's thread.
  int stack_nodes = 0;
  for (const NodeExecStats& n : metadata.step_stats)
    if (n.op.rfind("Stack", 0) == 0) {
      ++stack_nodes;
      CHECK(n.where == "inline");
    }
  CHECK(stack_nodes == 7);
}

TEST_CASE("stacks: popping an empty stack is InvalidArgument naming the node and the stack") {
  Scope root = Scope::NewRootScope();
  auto stack = ops::Stack(root.WithOpName("stack"), DT_INT32);
  auto pushed = ops::StackPush(root.WithOpName("push"), stack, 7);
  auto pop1 = ops::StackPop(root.WithOpName("pop1").WithControlDependencies({pushed.op()}), stack, DT_INT32);
  auto pop2 = ops::StackPop(root.WithOpName("pop2").WithControlDependencies({pop1.op()}), stack, DT_INT32);
  CHECK(RunOnceOk(root, {pop1})[0].scalar<int32_t>() == 7);
  std::vector<Tensor> out;
  Status s = RunOnce(root, {pop2}, &out);
  INFO(s.ToString());
  CHECK(errors::IsInvalidArgument(s));
  CHECK(Contains(s, "'pop2'"));
  CHECK(Contains(s, "stack 'stack_0' is empty"));
}

TEST_CASE("stacks: pushing beyond max_size is InvalidArgument; a negative max_size is unbounded") {
  for (int max_size : {2, -1}) {
    Scope root = Scope::NewRootScope();
    auto stack = ops::Stack(root.WithOpName("stack"), DT_INT32, max_size, "bounded");
    Output last;
    for (int k = 0; k < 3; ++k) {
      Scope s = last.valid() ? root.WithControlDependencies({last.op()}) : root;
      last = ops::StackPush(s.WithOpName("push" + std::to_string(k)), stack, k);
    }
    std::vector<Tensor> out;
    Status s = RunOnce(root, {last}, &out);
    INFO("max_size " << max_size << ": " << s.ToString());
    if (max_size < 0) {
      CHECK(s.ok());
      continue;
    }
    CHECK(errors::IsInvalidArgument(s));
    CHECK(Contains(s, "'push2'"));
    CHECK(Contains(s, "stack 'bounded_0' is full"));
  }
}

TEST_CASE("stacks: a closed stack refuses pushes and pops, naming it") {
  for (bool pop : {true, false}) {
    Scope root = Scope::NewRootScope();
    auto stack = ops::Stack(root.WithOpName("stack"), DT_INT32);
    auto pushed = ops::StackPush(root.WithOpName("push"), stack, 1);
    auto close = ops::StackClose(root.WithOpName("close").WithControlDependencies({pushed.op()}), stack);
    Scope after = root.WithOpName("after").WithControlDependencies({close});
    Output late = pop ? ops::StackPop(after, stack, DT_INT32) : ops::StackPush(after, stack, 2);
    std::vector<Tensor> out;
    Status s = RunOnce(root, {late}, &out);
    INFO(s.ToString());
    CHECK(errors::IsInvalidArgument(s));
    CHECK(Contains(s, "'after'"));
    CHECK(Contains(s, "stack 'stack_0' is closed"));
  }
}

TEST_CASE("stacks: pushing or popping the wrong dtype is InvalidArgument naming both dtypes") {
  Scope root = Scope::NewRootScope();
  auto stack = ops::Stack(root.WithOpName("stack"), DT_INT32);
  auto bad_push = ops::StackPush(root.WithOpName("bad_push"), stack, 1.5f);
  std::vector<Tensor> out;
  Status s = RunOnce(root, {bad_push}, &out);
  INFO(s.ToString());
  CHECK(errors::IsInvalidArgument(s));
  CHECK(Contains(s, "'bad_push'"));
  CHECK(Contains(s, "stack 'stack_0' holds int32, cannot push float"));

  auto pushed = ops::StackPush(root.WithOpName("push"), stack, 1);
  auto bad_pop = ops::StackPop(root.WithOpName("bad_pop").WithControlDependencies({pushed.op()}), stack, DT_FLOAT);
  s = RunOnce(root, {bad_pop}, &out);
  INFO(s.ToString());
  CHECK(errors::IsInvalidArgument(s));
  CHECK(Contains(s, "'bad_pop'"));
  CHECK(Contains(s, "holds int32, but the pop expects float"));
}

TEST_CASE("stacks: a stack dies with its step; its handle in a later step is NotFound naming it") {
  Scope root = Scope::NewRootScope();
  auto stack = ops::Stack(root.WithOpName("stack"), DT_INT32);
  auto pushed = ops::StackPush(root.WithOpName("push"), stack, 5);
  auto handle = ops::Identity(root.WithOpName("handle").WithControlDependencies({pushed.op()}), stack);
  auto fed = ops::Placeholder(root.WithOpName("fed"), DT_RESOURCE);
  auto pop_fed = ops::StackPop(root.WithOpName("pop_fed"), fed, DT_INT32);
  auto pop_new = ops::StackPop(root.WithOpName("pop_new"), ops::Stack(root.WithOpName("fresh"), DT_INT32), DT_INT32);
  Session session;
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  Status s = Run(&session, {handle}, &out);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(out[0].dtype() == DT_RESOURCE);
  const Tensor old_handle = out[0];
  // The next step: the old stack (holding 5) is gone.
  s = Run(&session, {pop_fed}, &out, {{"fed", old_handle}});
  INFO(s.ToString());
  CHECK(errors::IsNotFound(s));
  CHECK(Contains(s, "'pop_fed'"));
  CHECK(Contains(s, "stack 'stack_0' is not one of this step's"));
  // A StackV2 makes a new, empty stack at every step.
  s = Run(&session, {pop_new}, &out);
  INFO(s.ToString());
  CHECK(errors::IsInvalidArgument(s));
  CHECK(Contains(s, "is empty"));
}

TEST_CASE("stacks: step resources own their stacks; dropping them frees the elements") {
  Tensor value = MakeTensor<float>({1.f, 2.f}, TensorShape{2});
  auto resources = std::make_unique<StepResources>();
  const std::string name = resources->UniqueName("s");
  CHECK(name == "s_0");
  CHECK(resources->UniqueName("s") == "s_1");
  auto stack = std::make_shared<Stack>(name, DT_FLOAT, -1);
  REQUIRE(stack->Push({}, value).ok());
  ResourceHandle handle;
  REQUIRE(resources->Add(name, DT_FLOAT, stack, &handle).ok());
  CHECK(errors::IsInvalidArgument(resources->Add(name, DT_FLOAT, stack, &handle)));  // the name is taken
  stack.reset();
  CHECK_FALSE(value.RefCountIsOne());  // the stack holds it
  std::shared_ptr<Stack> found;
  REQUIRE(resources->Lookup(handle, "stack", &found).ok());
  found.reset();
  StepResources other;
  other.UniqueName("s");
  CHECK(errors::IsNotFound(other.Lookup(handle, "stack", &found)));  // same name, another step
  resources.reset();  // the step ends
  CHECK(value.RefCountIsOne());
}

TEST_CASE("stacks: elements are ordered by iteration path, equal paths by arrival") {
  Stack stack("s", DT_INT32, -1);
  const std::vector<std::pair<std::vector<int64_t>, int>> pushes = {
      {{1}, 10}, {{0}, 0}, {{2, 1}, 21}, {{2, 0}, 20}, {{1}, 11}, {{}, -1}, {{2}, 2}};
  for (const auto& [path, v] : pushes) REQUIRE(stack.Push(path, Tensor::Scalar<int32_t>(v)).ok());
  std::vector<int> popped;
  Tensor t;
  while (stack.Pop(&t).ok()) popped.push_back(t.scalar<int32_t>());
  CHECK(popped == std::vector<int>{21, 20, 2, 11, 10, 0, -1});
}

TEST_CASE("stacks: a loop's pushes pop in exact reverse iteration order, with 1 or 10 parallel iterations") {
  for (int64_t parallel : {1, 10}) {
    Scope root = Scope::NewRootScope();
    auto n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
    auto stack = ops::Stack(root.WithOpName("stack"), DT_INT32);
    // acc = sum of what was pushed: after the loop, every push is done.
    auto pushed_sum = CountingLoop(root, "push_loop", 0, n, 0, parallel, {stack},
                                   [](const Scope& s, Output i, Output acc, const std::vector<Output>& inv) {
                                     return ops::Add(s, acc, ops::StackPush(s.WithOpName("push"), inv[0], i));
                                   });
    auto popped = PopAll(root, stack, n, pushed_sum, parallel);
    Session session;
    REQUIRE(session.Create(ToDef(root)).ok());
    for (int iterations : {0, 1, 40}) {
      std::vector<Tensor> out;
      Status s = Run(&session, {popped}, &out, {{"n", Tensor::Scalar<int32_t>(iterations)}});
      INFO("parallel " << parallel << ", " << iterations << " iterations: " << s.ToString());
      REQUIRE(s.ok());
      std::vector<int32_t> want = {iterations * (iterations - 1) / 2};
      for (int k = iterations - 1; k >= 0; --k) want.push_back(k);
      CHECK(Values<int32_t>(out[0]) == want);
    }
  }
}

TEST_CASE("stacks: nested loops' (outer, inner) pushes pop in exact reverse order") {
  constexpr int kOuter = 4, kInner = 6;
  for (int64_t parallel : {1, 10}) {
    Scope root = Scope::NewRootScope();
    auto stack = ops::Stack(root.WithOpName("stack"), DT_INT32);
    Body inner = [](const Scope& s, Output k, Output acc, const std::vector<Output>& inv) {
      auto value = ops::Add(s, ops::Mul(s, inv[1], C(s, k, 100)), k);  // outer * 100 + inner
      return ops::Add(s, acc, ops::StackPush(s.WithOpName("push"), inv[0], value));
    };
    Body outer = [&](const Scope& s, Output o, Output acc, const std::vector<Output>& inv) {
      return CountingLoop(s, "inner", C(s, o, 0), C(s, o, kInner), acc, parallel, {inv[0], o}, inner);
    };
    auto pushed_sum = CountingLoop(root, "outer", 0, kOuter, 0, parallel, {stack}, outer);
    auto popped = PopAll(root, stack, kOuter * kInner, pushed_sum, parallel);
    std::vector<int32_t> want = {0};
    for (int o = kOuter - 1; o >= 0; --o)
      for (int k = kInner - 1; k >= 0; --k) {
        want[0] += o * 100 + k;
        want.push_back(o * 100 + k);
      }
    auto out = RunOnceOk(root, {popped});
    INFO("parallel " << parallel);
    CHECK(Values<int32_t>(out[0]) == want);
  }
}

TEST_CASE("stacks: the placer keeps whatever a stack handle reaches on the stack's device, not a queue's") {
  const std::string kCpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";
  Runtime rt(TwoThreads(3));
  Scope root = Scope::NewRootScope();
  auto stack = ops::Stack(root.WithOpName("stack").WithDevice("/device:CPU:1"), DT_INT32);
  auto pushed_sum = CountingLoop(root, "push_loop", 0, 8, 0, 10, {stack},
                                 [](const Scope& s, Output i, Output acc, const std::vector<Output>& inv) {
                                   return ops::Add(s, acc, ops::StackPush(s.WithOpName("push"), inv[0], i));
                                 });
  PopAll(root, stack, 8, pushed_sum, 10);
  auto queue = ops::FIFOQueue(root.WithOpName("queue").WithDevice("/device:CPU:0"), {DT_INT32});
  ops::QueueDequeue(root.WithOpName("dequeue").WithDevice("/device:CPU:2"), queue, {DT_INT32});
  const proto::GraphDef def = ToDef(root);
  Graph g;
  REQUIRE(ImportGraphDef(def, &g).ok());
  PlacerOptions po;
  po.strategy = PlacementStrategy::kRoundRobin;
  Status s = PlaceGraph(&g, rt.device_manager(), po);
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::map<std::string, std::string> where;
  for (Node* node : g.nodes()) where[node->name()] = node->assigned_device();
  for (const char* name : {"stack", "push_loop/Enter_inv0", "push_loop/push", "pop_loop/Enter_inv0", "pop_loop/pop"}) {
    INFO(name);
    CHECK(where.at(name) == kCpu1);
  }
  CHECK(where.at("dequeue") != where.at("queue"));  // queues are reached from any device
}
