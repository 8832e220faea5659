// Optimizer-update fusion (graph/fuse_updates.hpp), the fused ops' CPU kernel
// (ops/state/fused_apply_ops.cpp) and the multi-tensor launch plan of their
// GPU kernel (ops/state/multi_tensor_plan.hpp).
#include <catch2/catch.hpp>

#include <cstring>
#include <set>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/control_flow_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/graph/control_flow_info.hpp"
#include "actorflow/graph/fuse_updates.hpp"
#include "actorflow/ops/state/multi_tensor_plan.hpp"
#include "test_util.hpp"

using namespace actorflow;
using namespace actorflow::test;

namespace {

const Node* OnlyNodeOf(const Graph& g, const std::string& op) {
  const Node* found = nullptr;
  for (const Node* node : g.nodes())
    if (node->type_string() == op) {
      REQUIRE(found == nullptr);
      found = node;
    }
  REQUIRE(found != nullptr);
  return found;
}

constexpr char kGpuZero[] = "/job:localhost/replica:0/task:0/device:GPU:0";
constexpr char kGpuOne[] = "/job:localhost/replica:0/task:0/device:GPU:1";
constexpr char kCpuZero[] = "/job:localhost/replica:0/task:0/device:CPU:0";

}  // namespace

TEST_CASE("fusion: Apply nodes of one optimizer, device and learning rate become one node; consumers follow") {
  Scope root = Scope::NewRootScope();
  auto lr = ops::Const(root.WithOpName("lr"), 0.5f);
  std::vector<Operation> applies;
  for (int i = 0; i < 3; ++i) {
    const std::string n = std::to_string(i);
    auto v = ops::Variable(root.WithOpName("v" + n), PartialTensorShape(TensorShape{2}), DT_FLOAT);
    auto g = ops::Const(root.WithOpName("g" + n), {1.f * i, 2.f});
    applies.push_back(ops::ApplyGradientDescent(root.WithOpName("apply" + n), v, lr, g).op());
  }
  auto read = ops::Identity(root.WithOpName("read1"), applies[1].output(0));  // a data consumer of member 1
  ops::NoOp(root.WithOpName("train").WithControlDependencies(applies));
  REQUIRE(root.ok());
  Graph* g = root.graph();
  AssignAll(g, kGpuZero);

  SECTION("on a GPU, by default") {
    int fused = -1;
    REQUIRE(FuseOptimizerUpdates(g, FuseUpdates::kOnGpus, &fused).ok());
    REQUIRE(fused == 1);
    REQUIRE(CountOp(*g, "ApplyGradientDescent") == 0);
    const Node* f = OnlyNodeOf(*g, "_FusedApplyGradientDescent");
    REQUIRE(f->def().attr().at("N").i() == 3);
    REQUIRE(f->assigned_device() == kGpuZero);
    REQUIRE(f->num_inputs() == 3 + 1 + 3);
    REQUIRE(f->num_outputs() == 3);
    // var list, then lr once, then the gradients, in the members' order.
    for (int i = 0; i < 3; ++i) {
      REQUIRE(f->input_edge(i)->src->name() == "v" + std::to_string(i));
      REQUIRE(f->input_edge(4 + i)->src->name() == "g" + std::to_string(i));
    }
    REQUIRE(f->input_edge(3)->src->name() == "lr");
    const Node* r = g->FindNode("read1");
    REQUIRE(r->input_edge(0)->src == f);
    REQUIRE(r->input_edge(0)->src_output == 1);
    bool train_after = false;
    for (const Edge* e : g->FindNode("train")->in_edges()) train_after |= e->IsControlEdge() && e->src == f;
    REQUIRE(train_after);
    REQUIRE(ValidateGraph(*g).ok());
  }
  SECTION("not on a CPU unless asked; off means off") {
    AssignAll(g, kCpuZero);
    int fused = -1;
    REQUIRE(FuseOptimizerUpdates(g, FuseUpdates::kOnGpus, &fused).ok());
    REQUIRE(fused == 0);
    REQUIRE(FuseOptimizerUpdates(g, FuseUpdates::kOff, &fused).ok());
    REQUIRE(fused == 0);
    REQUIRE(CountOp(*g, "ApplyGradientDescent") == 3);
    REQUIRE(FuseOptimizerUpdates(g, FuseUpdates::kEverywhere, &fused).ok());
    REQUIRE(fused == 1);
    REQUIRE(CountOp(*g, "ApplyGradientDescent") == 0);
  }
  SECTION("different devices or learning rates make different groups; a lone node stays as it is") {
    g->FindNode("apply2")->set_assigned_device(kGpuOne);
    int fused = -1;
    REQUIRE(FuseOptimizerUpdates(g, FuseUpdates::kOnGpus, &fused).ok());
    REQUIRE(fused == 1);
    REQUIRE(OnlyNodeOf(*g, "_FusedApplyGradientDescent")->def().attr().at("N").i() == 2);
    REQUIRE(g->FindNode("apply2") != nullptr);
  }
}

TEST_CASE("fusion: a member never depends on another (no cycle), attrs must agree, control flow is left alone") {
  Scope root = Scope::NewRootScope();
  auto lr = ops::Const(root.WithOpName("lr"), 0.5f);
  auto v0 = ops::Variable(root.WithOpName("v0"), PartialTensorShape(TensorShape{2}), DT_FLOAT);
  auto v1 = ops::Variable(root.WithOpName("v1"), PartialTensorShape(TensorShape{2}), DT_FLOAT);
  auto v2 = ops::Variable(root.WithOpName("v2"), PartialTensorShape(TensorShape{2}), DT_FLOAT);
  auto v3 = ops::Variable(root.WithOpName("v3"), PartialTensorShape(TensorShape{2}), DT_FLOAT);
  auto a0 = ops::ApplyGradientDescent(root.WithOpName("a0"), v0, lr, ops::Const(root, {1.f, 1.f}));
  // a1's gradient reads a0's result: fusing them would make a cycle.
  auto a1 = ops::ApplyGradientDescent(root.WithOpName("a1"), v1, lr, ops::Identity(root.WithOpName("after_a0"), a0));
  auto a2 = ops::ApplyGradientDescent(root.WithOpName("a2"), v2, lr, ops::Const(root, {1.f, 1.f}));
  // use_locking differs: its own group.
  auto a3 = ops::ApplyGradientDescent(root.WithOpName("a3"), v3, lr, ops::Const(root, {1.f, 1.f}), true);
  ops::NoOp(root.WithOpName("train").WithControlDependencies({a1.op(), a2.op(), a3.op()}));
  REQUIRE(root.ok());
  Graph* g = root.graph();
  AssignAll(g, kGpuZero);
  int fused = -1;
  REQUIRE(FuseOptimizerUpdates(g, FuseUpdates::kOnGpus, &fused).ok());
  REQUIRE(fused == 1);
  REQUIRE(ValidateGraph(*g).ok());
  std::vector<Node*> order;
  REQUIRE(TopologicalOrder(*g, &order).ok());
  const Node* f = OnlyNodeOf(*g, "_FusedApplyGradientDescent");
  REQUIRE(f->def().attr().at("N").i() == 2);
  // a0 and a2 fused (a1 follows a0); a1 and a3 alone.
  REQUIRE(f->input_edge(0)->src->name() == "v0");
  REQUIRE(f->input_edge(1)->src->name() == "v2");
  REQUIRE(g->FindNode("a1") != nullptr);
  REQUIRE(g->FindNode("a3") != nullptr);
  REQUIRE(g->FindNode("after_a0")->input_edge(0)->src == f);

  SECTION("a graph with control flow is not touched") {
    Scope cf = Scope::NewRootScope();
    auto p = ops::Placeholder(cf.WithOpName("p"), DT_BOOL);
    auto sw = ops::Switch(cf.WithOpName("sw"), ops::Const(cf, {1.f, 1.f}), p);
    auto w0 = ops::Variable(cf.WithOpName("w0"), PartialTensorShape(TensorShape{2}), DT_FLOAT);
    auto w1 = ops::Variable(cf.WithOpName("w1"), PartialTensorShape(TensorShape{2}), DT_FLOAT);
    auto rate = ops::Const(cf.WithOpName("rate"), 0.5f);
    ops::ApplyGradientDescent(cf.WithOpName("b0"), w0, rate, sw.output_true);
    ops::ApplyGradientDescent(cf.WithOpName("b1"), w1, rate, ops::Const(cf, {1.f, 1.f}));
    REQUIRE(cf.ok());
    REQUIRE(HasControlFlow(*cf.graph()));
    AssignAll(cf.graph(), kGpuZero);
    REQUIRE(FuseOptimizerUpdates(cf.graph(), FuseUpdates::kOnGpus, &fused).ok());
    REQUIRE(fused == 0);
    REQUIRE(CountOp(*cf.graph(), "ApplyGradientDescent") == 2);
  }
}

namespace {

// Three variables of different sizes trained `steps` steps by `optimizer`
// with fusion `mode` on the CPU; returns the variables' (and slots') values.
std::vector<Tensor> Train(const std::string& optimizer, FuseUpdates mode, bool use_locking, int steps,
                          std::vector<std::string>* ran_ops) {
  Scope root = Scope::NewRootScope();
  const std::vector<int64_t> sizes = {3, 1000, 70000};  // the last: sharded over the pool
  std::vector<Operation> inits, applies;
  std::vector<std::string> fetch;
  auto c = [&](float x) { return ops::Const(root, x); };
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string n = std::to_string(i);
    const int64_t s = sizes[i];
    auto var = [&](const std::string& name, float init) {
      auto v = ops::Variable(root.WithOpName(name + n), PartialTensorShape(TensorShape{s}), DT_FLOAT);
      inits.push_back(ops::Assign(root.WithOpName("init_" + name + n), v, ops::Fill(root, {s}, init)).op());
      fetch.push_back(name + n);
      return v;
    };
    auto v = var("v", 1.f + static_cast<float>(i));
    // A gradient that changes from step to step: sin of the variable.
    auto grad = ops::Sin(root.WithOpName("grad" + n), v);
    Output apply;
    if (optimizer == "sgd") {
      apply = ops::ApplyGradientDescent(root.WithOpName("apply" + n), v, c(0.1f), grad, use_locking);
    } else if (optimizer == "momentum") {
      apply = ops::ApplyMomentum(root.WithOpName("apply" + n), v, var("accum", 0.f), c(0.1f), grad, c(0.9f), true,
                                 use_locking);
    } else if (optimizer == "adam") {
      apply = ops::ApplyAdam(root.WithOpName("apply" + n), v, var("m", 0.f), var("vv", 0.f), c(0.9f), c(0.999f),
                             c(0.01f), c(0.9f), c(0.999f), c(1e-7f), grad, false, use_locking);
    } else if (optimizer == "adagrad") {
      apply = ops::ApplyAdagrad(root.WithOpName("apply" + n), v, var("accum", 0.1f), c(0.1f), grad, use_locking);
    } else {
      apply = ops::ApplyRMSProp(root.WithOpName("apply" + n), v, var("ms", 1.f), var("mom", 0.f), c(0.01f), c(0.9f),
                                c(0.5f), c(1e-7f), grad, use_locking);
    }
    applies.push_back(apply.op());
  }
  ops::NoOp(root.WithOpName("init").WithControlDependencies(inits));
  ops::NoOp(root.WithOpName("train").WithControlDependencies(applies));
  REQUIRE(root.ok());
  SessionOptions so;
  so.graph_options.fuse_optimizer_updates = mode;
  Session session(so);
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  REQUIRE(session.Run({}, {}, {"init"}, &out).ok());
  for (int step = 0; step < steps; ++step) {
    RunOptions ro;
    ro.timeout_in_ms = 60'000;
    ro.trace_level = TraceLevel::kSoftwareTrace;
    RunMetadata md;
    Status s = session.Run(ro, {}, {}, {"train"}, &out, &md);
    INFO(s.ToString());
    REQUIRE(s.ok());
    if (step == 0)
      for (const NodeExecStats& st : md.step_stats) ran_ops->push_back(st.op);
  }
  REQUIRE(session.Run({}, fetch, {}, &out).ok());
  return out;
}

}  // namespace

TEST_CASE("fusion: the fused CPU kernel trains every optimizer to the same bits as the separate nodes") {
  for (const std::string optimizer : {"sgd", "momentum", "adam", "adagrad", "rmsprop"}) {
    for (bool use_locking : {true, false}) {
      INFO(optimizer << " use_locking=" << use_locking);
      std::vector<std::string> plain_ops, fused_ops;
      const std::vector<Tensor> plain = Train(optimizer, FuseUpdates::kOff, use_locking, 5, &plain_ops);
      const std::vector<Tensor> fused = Train(optimizer, FuseUpdates::kEverywhere, use_locking, 5, &fused_ops);
      // The fused run ran one fused node and no Apply*; the plain run three Apply*.
      const auto count = [](const std::vector<std::string>& ops, const std::string& prefix) {
        int n = 0;
        for (const auto& op : ops) n += op.rfind(prefix, 0) == 0;
        return n;
      };
      REQUIRE(count(plain_ops, "Apply") == 3);
      REQUIRE(count(plain_ops, "_FusedApply") == 0);
      REQUIRE(count(fused_ops, "_FusedApply") == 1);
      REQUIRE(count(fused_ops, "Apply") == 0);
      REQUIRE(plain.size() == fused.size());
      for (size_t i = 0; i < plain.size(); ++i) {
        INFO("fetch " << i);
        REQUIRE(plain[i].TotalBytes() == fused[i].TotalBytes());
        REQUIRE(std::memcmp(plain[i].raw_data(), fused[i].raw_data(), plain[i].TotalBytes()) == 0);
      }
      // And training moved the variables (a kernel that did nothing would pass the comparison).
      REQUIRE(plain[0].data<float>()[0] != 1.f);
    }
  }
}

TEST_CASE("fusion: one variable updated by two members of a fused node gets both updates, as with two nodes") {
  for (FuseUpdates mode : {FuseUpdates::kOff, FuseUpdates::kEverywhere}) {
    for (bool use_locking : {true, false}) {
      Scope root = Scope::NewRootScope();
      auto v = ops::Variable(root.WithOpName("twice_v"), PartialTensorShape(TensorShape{3}), DT_FLOAT);
      auto w = ops::Variable(root.WithOpName("twice_w"), PartialTensorShape(TensorShape{3}), DT_FLOAT);
      auto lr = ops::Const(root.WithOpName("lr"), 1.f);
      auto a = ops::ApplyGradientDescent(root.WithOpName("a"), v, lr, ops::Const(root, {1.f, 2.f, 3.f}), use_locking);
      auto b = ops::ApplyGradientDescent(root.WithOpName("b"), v, lr, ops::Const(root, {10.f, 20.f, 30.f}), use_locking);
      auto c = ops::ApplyGradientDescent(root.WithOpName("c"), w, lr, ops::Const(root, {1.f, 1.f, 1.f}), use_locking);
      auto init = ops::Assign(root.WithOpName("init"), v, ops::Const(root, {100.f, 100.f, 100.f}));
      auto init_w = ops::Assign(root.WithOpName("init_w"), w, ops::Const(root, {0.f, 0.f, 0.f}));
      ops::NoOp(root.WithOpName("train").WithControlDependencies({a.op(), b.op(), c.op()}));
      REQUIRE(root.ok());
      SessionOptions so;
      so.graph_options.fuse_optimizer_updates = mode;
      Session session(so);
      REQUIRE(session.Create(ToDef(root)).ok());
      std::vector<Tensor> out;
      REQUIRE(session.Run({}, {}, {"init", "init_w"}, &out).ok());
      RunOptions traced;
      traced.trace_level = TraceLevel::kSoftwareTrace;
      RunMetadata md;
      REQUIRE(session.Run(traced, {}, {}, {"train"}, &out, &md).ok());
      int fused = 0;
      for (const NodeExecStats& st : md.step_stats) fused += st.op == "_FusedApplyGradientDescent";
      CHECK(fused == (mode == FuseUpdates::kEverywhere ? 1 : 0));  // a, b and c in one node
      for (int step = 1; step < 4; ++step) REQUIRE(session.Run({}, {}, {"train"}, &out).ok());
      REQUIRE(session.Run({}, {"twice_v", "twice_w"}, {}, &out).ok());
      // With use_locking=false TensorFlow lets two updates of one variable race (one may be lost); with
      // use_locking=true both always land. Here the steps run them one at a time, racing or not.
      if (use_locking) REQUIRE(Values<float>(out[0]) == std::vector<float>{56.f, 12.f, -32.f});
      REQUIRE(Values<float>(out[1]) == std::vector<float>{-4.f, -4.f, -4.f});
    }
  }
}

TEST_CASE("fusion: a fused node names the member that failed and changes nothing for it") {
  Scope root = Scope::NewRootScope();
  auto lr = ops::Const(root.WithOpName("lr"), 0.5f);
  auto v0 = ops::Variable(root.WithOpName("failing_v0"), PartialTensorShape(TensorShape{2}), DT_FLOAT);
  auto v1 = ops::Variable(root.WithOpName("failing_v1"), PartialTensorShape(TensorShape{2}), DT_FLOAT);
  auto a0 = ops::ApplyGradientDescent(root.WithOpName("a0"), v0, lr, ops::Const(root, {1.f, 1.f}));
  auto a1 = ops::ApplyGradientDescent(root.WithOpName("a1"), v1, lr, ops::Const(root, {1.f, 1.f}));
  auto init0 = ops::Assign(root.WithOpName("init0"), v0, ops::Const(root, {4.f, 4.f}));
  ops::NoOp(root.WithOpName("train").WithControlDependencies({a0.op(), a1.op()}));
  REQUIRE(root.ok());
  SessionOptions so;
  so.graph_options.fuse_optimizer_updates = FuseUpdates::kEverywhere;
  Session session(so);
  REQUIRE(session.Create(ToDef(root)).ok());
  std::vector<Tensor> out;
  const Status init = session.Run({}, {}, {"init0"}, &out);
  INFO(init.ToString());
  REQUIRE(init.ok());
  const Status s = session.Run({}, {}, {"train"}, &out);  // v1 has no value
  INFO(s.ToString());
  REQUIRE(s.code() == Code::kFailedPrecondition);
  REQUIRE(s.message().find("failing_v1") != std::string::npos);
  REQUIRE(s.message().find("member 1 of") != std::string::npos);
  REQUIRE(session.Run({}, {"failing_v0"}, {}, &out).ok());
  // v0's update is independent of v1's and went through: as two separate nodes would.
  REQUIRE(Values<float>(out[0]) == std::vector<float>{3.5f, 3.5f});
}

TEST_CASE("multi-tensor plan: every chunk once, in order, within a launch's limits; a buffer written twice splits") {
  std::vector<int64_t> sizes;
  std::vector<std::vector<const void*>> writes;
  static char buffers[200];
  for (int i = 0; i < 200; ++i) {
    sizes.push_back(i % 7 == 0 ? 0 : (i % 5 == 0 ? 3 * kMultiTensorChunk + 17 : 100 + i));
    writes.push_back({&buffers[i]});
  }
  sizes[150] = 400 * kMultiTensorChunk;  // more blocks than one launch has
  writes[31] = {&buffers[30]};          // member 31 writes what member 30 writes: a new launch
  writes[60] = {&buffers[60]};
  std::vector<std::vector<const void*>> reads(sizes.size());
  reads[61] = {&buffers[60]};           // member 61 reads what member 60 writes: a new launch
  reads[80] = {&buffers[90]};           // member 90 writes what member 80 reads: a new launch
  const auto plan = PlanMultiTensorLaunches(sizes, writes, reads);
  std::vector<std::vector<int>> seen(sizes.size());
  int last_member = -1;
  for (const MultiTensorLaunch& l : plan) {
    REQUIRE(!l.block_member.empty());
    REQUIRE(l.block_member.size() == l.block_chunk.size());
    REQUIRE(static_cast<int>(l.block_member.size()) <= kMaxLaunchBlocks);
    REQUIRE(static_cast<int>(l.members.size()) <= kMaxLaunchMembers);
    std::set<const void*> written, read;
    for (int m : l.members) {
      for (const void* r : reads[static_cast<size_t>(m)]) REQUIRE(written.count(r) == 0);
      for (const void* w : writes[static_cast<size_t>(m)]) {
        REQUIRE(written.count(w) == 0);
        REQUIRE(read.count(w) == 0);
      }
      written.insert(writes[static_cast<size_t>(m)].begin(), writes[static_cast<size_t>(m)].end());
      read.insert(reads[static_cast<size_t>(m)].begin(), reads[static_cast<size_t>(m)].end());
    }
    // Splits where needed only: 30 and 31, 60 and 61, 80 and 90 are never in one launch.
    const std::set<int> in(l.members.begin(), l.members.end());
    REQUIRE(!(in.count(30) && in.count(31)));
    REQUIRE(!(in.count(60) && in.count(61)));
    REQUIRE(!(in.count(80) && in.count(90)));
    for (size_t b = 0; b < l.block_member.size(); ++b) {
      const int m = l.members[l.block_member[b]];
      REQUIRE(m >= last_member);  // members in order across launches
      last_member = m;
      seen[static_cast<size_t>(m)].push_back(l.block_chunk[b]);
    }
  }
  for (size_t m = 0; m < sizes.size(); ++m) {
    INFO("member " << m);
    const int64_t chunks = (sizes[m] + kMultiTensorChunk - 1) / kMultiTensorChunk;
    REQUIRE(static_cast<int64_t>(seen[m].size()) == chunks);
    for (int64_t c = 0; c < chunks; ++c) REQUIRE(seen[m][static_cast<size_t>(c)] == c);
  }
  REQUIRE(plan.size() >= 3);
  // Small members with nothing shared: one launch of 24 members, then the rest.
  const auto small = PlanMultiTensorLaunches(std::vector<int64_t>(30, 10), {});
  REQUIRE(small.size() == 2);
  REQUIRE(small[0].members.size() == 24);
  REQUIRE(small[1].members.size() == 6);
  // A member written twice in a row: two launches even though both are tiny.
  static char one;
  REQUIRE(PlanMultiTensorLaunches({5, 5}, {{&one}, {&one}}).size() == 2);
  REQUIRE(PlanMultiTensorLaunches({5, 5}, {{&one}, {nullptr}}, {{}, {&one}}).size() == 2);
  REQUIRE(PlanMultiTensorLaunches({0, 0}, {{}, {}}).empty());
}
