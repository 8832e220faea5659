// Variables updated where they live (ops/state/local_variable.hpp): kernels of
// the process read and update a variable directly under its lock, in parallel
// with each other and with requests that reach its container actor by
// message. Concurrent locked updates never lose one; readers never see a torn
// tensor; checkpoints taken while updates run restore a consistent tensor;
// updates by message (another process's) interleave with them whole;
// use_locking=false races without corrupting memory; a dropped variable is
// resolved again.
#include <catch2/catch.hpp>
#include <caf/all.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include "actorflow/actors/container_actor.hpp"
#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/saver.hpp"
#include "actorflow/core/resource_handle.hpp"
#include "actorflow/net/protocol.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::Open;
using test::Values;

namespace {

// Above kInlineUpdateElements: the device's updates of it run on the pool,
// sharded, while other steps read it.
constexpr int64_t kBig = 1 << 17;

void RunOk(Session& s, const std::vector<std::string>& targets, std::vector<Tensor>* out = nullptr,
           const std::vector<std::string>& fetches = {}) {
  std::vector<Tensor> mine;
  Status st = s.Run({}, fetches, targets, out ? out : &mine);
  INFO(st.ToString());
  REQUIRE(st.ok());
}

// Runs fn(thread index) on `n` threads and joins them.
template <class Fn>
void OnThreads(int n, Fn fn) {
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back([&fn, t] { fn(t); });
  for (auto& t : threads) t.join();
}

// Whether every element of a float tensor is `v` (or, with v < 0, one value).
bool Uniform(const Tensor& t, float* seen = nullptr) {
  std::vector<float> x = Values<float>(t);
  if (x.empty()) return false;
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  if (seen) *seen = *lo;
  return *lo == *hi;
}

}  // namespace

TEST_CASE("use_locking=true: N threads x K updates of one variable are N*K, small and large, Assign* and Apply*") {
  Scope root = Scope::NewRootScope();
  auto small = ops::Variable(root.WithOpName("small"), PartialTensorShape(TensorShape{4}), DT_INT64, "", "lv_small");
  auto big = ops::Variable(root.WithOpName("big"), PartialTensorShape(TensorShape{kBig}), DT_FLOAT, "", "lv_big");
  auto sgd = ops::Variable(root.WithOpName("sgd"), PartialTensorShape(TensorShape{kBig}), DT_FLOAT, "", "lv_sgd");
  ops::Assign(root.WithOpName("init_small"), small, ops::Fill(root, {4}, int64_t{0}));
  ops::Assign(root.WithOpName("init_big"), big, ops::Fill(root, {kBig}, 0.f));
  ops::Assign(root.WithOpName("init_sgd"), sgd, ops::Fill(root, {kBig}, 0.f));
  ops::AssignAdd(root.WithOpName("inc_small"), small, ops::Fill(root, {4}, int64_t{1}), /*use_locking=*/true);
  ops::AssignAdd(root.WithOpName("inc_big"), big, ops::Fill(root, {kBig}, 1.f), /*use_locking=*/true);
  // var -= 1 * (-1): an increment by the optimizer's formula.
  ops::ApplyGradientDescent(root.WithOpName("inc_sgd"), sgd, 1.f, ops::Fill(root, {kBig}, -1.f), /*use_locking=*/true);
  ops::Identity(root.WithOpName("read_small"), small);
  ops::Identity(root.WithOpName("read_big"), big);
  ops::Identity(root.WithOpName("read_sgd"), sgd);
  auto session = Open(root);
  RunOk(*session, {"init_small", "init_big", "init_sgd"});
  constexpr int kThreads = 4, kSteps = 150;
  std::atomic<int> failures{0};
  OnThreads(kThreads, [&](int) {
    for (int i = 0; i < kSteps; ++i) {
      std::vector<Tensor> out;
      if (!session->Run({}, {}, {"inc_small", "inc_big", "inc_sgd"}, &out).ok()) ++failures;
    }
  });
  CHECK(failures == 0);
  std::vector<Tensor> out;
  RunOk(*session, {}, &out, {"read_small", "read_big", "read_sgd"});
  CHECK(Values<int64_t>(out[0]) == std::vector<int64_t>(4, kThreads * kSteps));
  float v = 0;
  CHECK(Uniform(out[1], &v));
  CHECK(v == float(kThreads * kSteps));
  CHECK(Uniform(out[2], &v));
  CHECK(v == float(kThreads * kSteps));
}

TEST_CASE("readers never see a torn value of a variable updated with use_locking=true") {
  // 4 MiB: an update in place takes long enough for a read to fall inside it.
  constexpr int64_t kHuge = 1 << 20;
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), PartialTensorShape(TensorShape{kHuge}), DT_FLOAT, "", "lv_torn");
  ops::Assign(root.WithOpName("init"), v, ops::Fill(root, {kHuge}, 0.f));
  ops::AssignAdd(root.WithOpName("inc"), v, ops::Fill(root, {kHuge}, 1.f), /*use_locking=*/true);
  ops::Identity(root.WithOpName("read"), v);
  auto session = Open(root);
  RunOk(*session, {"init"});
  constexpr int kWriters = 2, kReaders = 2, kSteps = 150;
  std::atomic<int> writers_left{kWriters};
  std::atomic<int> torn{0}, overlapping{0}, failures{0};
  OnThreads(kWriters + kReaders, [&](int t) {
    if (t < kWriters) {
      std::vector<Tensor> out;
      for (int i = 0; i < kSteps; ++i)
        if (!session->Run({}, {}, {"inc"}, &out).ok()) ++failures;
      --writers_left;
      return;
    }
    // Reads for as long as the writers write (and at least a few times).
    for (int i = 0; writers_left > 0 || i < 10; ++i) {
      std::vector<Tensor> out;
      if (!session->Run({}, {"read"}, {}, &out).ok()) {
        ++failures;
        continue;
      }
      if (writers_left > 0) ++overlapping;  // read while the writers were writing
      if (!Uniform(out[0])) ++torn;
    }
  });
  CHECK(failures == 0);
  CHECK(overlapping >= 5);
  CHECK(torn == 0);
  std::vector<Tensor> out;
  RunOk(*session, {}, &out, {"read"});
  float last = 0;
  CHECK(Uniform(out[0], &last));
  CHECK(last == float(kWriters * kSteps));
}

TEST_CASE("checkpoints saved while locked updates run restore consistent tensors") {
  const auto dir = std::filesystem::temp_directory_path() / ("af_local_vars_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Scope root = Scope::NewRootScope();
  Variable w = NewVariable(root, "w", {kBig}, DT_FLOAT, init::Zeros(), true, "lv_ckpt");
  ops::AssignAdd(root.WithOpName("inc"), w.ref, ops::Fill(root, {kBig}, 1.f), /*use_locking=*/true);
  GlobalVariablesInitializer(root);
  SaverOptions so;
  so.dir = dir.string();
  so.max_to_keep = 0;  // keep them all
  Saver saver(root, {}, so);
  REQUIRE(root.status().ok());
  auto session = Open(root);
  RunOk(*session, {"init"});
  // The updates go on until three saves are done (bounded), so every save
  // reads the variable while it is being updated.
  constexpr int kSaves = 3, kMaxSteps = 200000;
  std::atomic<int> updaters_left{2}, saves_done{0};
  std::atomic<int> failures{0}, during{0};
  std::vector<std::string> prefixes;
  OnThreads(3, [&](int t) {
    if (t < 2) {
      std::vector<Tensor> out;
      for (int i = 0; saves_done < kSaves && i < kMaxSteps; ++i)
        if (!session->Run({}, {}, {"inc"}, &out).ok()) ++failures;
      --updaters_left;
      return;
    }
    for (int k = 0; k < kSaves; ++k) {
      std::string prefix;
      if (!saver.Save(session.get(), k, &prefix).ok()) ++failures;
      if (updaters_left == 2) ++during;  // the updates ran all through it
      prefixes.push_back(prefix);
      ++saves_done;
    }
  });
  CHECK(failures == 0);
  CHECK(during == kSaves);
  // Each restores a tensor whose elements are all one count.
  for (const std::string& prefix : prefixes) {
    REQUIRE(saver.Restore(session.get(), prefix).ok());
    std::vector<Tensor> out;
    RunOk(*session, {}, &out, {w.value.name()});
    float v = -1;
    INFO(prefix);
    CHECK(Uniform(out[0], &v));
    CHECK(v >= 0);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("updates by message (as from another process) and by kernels of the process interleave whole") {
  Runtime* rt = Runtime::Default();
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), PartialTensorShape(TensorShape{kBig}), DT_FLOAT, "", "lv_message");
  ops::Assign(root.WithOpName("init"), v, ops::Fill(root, {kBig}, 0.f));
  ops::AssignAdd(root.WithOpName("inc"), v, ops::Fill(root, {kBig}, 1.f), /*use_locking=*/true);
  ops::Identity(root.WithOpName("read"), v);
  auto session = Open(rt, root);
  RunOk(*session, {"init"});
  ResourceHandle h;
  h.container = kDefaultContainer;
  h.name = "lv_message";
  h.dtype = DT_FLOAT;
  h.shape = PartialTensorShape(TensorShape{kBig});
  VarUpdateRequest add;
  add.kind = static_cast<int32_t>(VarUpdateKind::kAssignAdd);
  add.handles = {h.Encode()};
  Tensor ones(DT_FLOAT, TensorShape{kBig});
  std::fill(ones.data<float>(), ones.data<float>() + kBig, 1.f);
  add.args = {ones};
  constexpr int kSteps = 150;
  std::atomic<int> failures{0};
  OnThreads(2, [&](int t) {
    if (t == 0) {
      std::vector<Tensor> out;
      for (int i = 0; i < kSteps; ++i)
        if (!session->Run({}, {}, {"inc"}, &out).ok()) ++failures;
      return;
    }
    caf::scoped_actor self{rt->system()};
    for (int i = 0; i < kSteps; ++i)
      self->request(rt->container_actor(), std::chrono::seconds(30), add)
          .receive([&](VarUpdateResponse& r) { failures += r.status.ok() ? 0 : 1; },
                   [&](caf::error&) { ++failures; });
  });
  CHECK(failures == 0);
  std::vector<Tensor> out;
  RunOk(*session, {}, &out, {"read"});
  float v_now = 0;
  CHECK(Uniform(out[0], &v_now));
  CHECK(v_now == float(2 * kSteps));
}

TEST_CASE("use_locking=false updates race without failing; one at a time they are exact") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), PartialTensorShape(TensorShape{kBig}), DT_FLOAT, "", "lv_racing");
  ops::Assign(root.WithOpName("init"), v, ops::Fill(root, {kBig}, 0.f));
  ops::AssignAdd(root.WithOpName("inc"), v, ops::Fill(root, {kBig}, 1.f), /*use_locking=*/false);
  ops::ApplyGradientDescent(root.WithOpName("sgd"), v, 1.f, ops::Fill(root, {kBig}, -1.f), /*use_locking=*/false);
  ops::Identity(root.WithOpName("read"), v);
  auto session = Open(root);
  RunOk(*session, {"init"});
  for (int i = 0; i < 5; ++i) RunOk(*session, {"inc"});
  for (int i = 0; i < 5; ++i) RunOk(*session, {"sgd"});
  std::vector<Tensor> out;
  RunOk(*session, {}, &out, {"read"});
  float v_now = 0;
  CHECK(Uniform(out[0], &v_now));
  CHECK(v_now == 10.f);
  // Racing, with readers holding values (so some updates write new buffers
  // while others write in place): nothing fails, no element passes the total.
  std::atomic<int> failures{0};
  OnThreads(4, [&](int t) {
    std::vector<Tensor> out;
    for (int i = 0; i < 100; ++i) {
      if (!session->Run({}, t % 2 ? std::vector<std::string>{"read"} : std::vector<std::string>{},
                        {t < 2 ? "inc" : "sgd"}, &out)
               .ok())
        ++failures;
    }
  });
  CHECK(failures == 0);
  RunOk(*session, {}, &out, {"read"});
  std::vector<float> x = Values<float>(out[0]);
  CHECK(*std::min_element(x.begin(), x.end()) >= 10.f);
  CHECK(*std::max_element(x.begin(), x.end()) <= 410.f);
}

TEST_CASE("a variable dropped by ResetContainers is resolved again: the next one of the name is a new variable") {
  Scope root = Scope::NewRootScope();
  auto v = ops::Variable(root.WithOpName("v"), PartialTensorShape(TensorShape{2}), DT_FLOAT, "lv_reset", "lv_reset_v");
  ops::Assign(root.WithOpName("init"), v, ops::Fill(root, {2}, 5.f));
  ops::AssignAdd(root.WithOpName("inc"), v, ops::Fill(root, {2}, 1.f));
  ops::Identity(root.WithOpName("read"), v);
  auto session = Open(root);
  RunOk(*session, {"init"});
  RunOk(*session, {"inc"});
  REQUIRE(session->ResetContainers({"lv_reset"}).ok());
  std::vector<Tensor> out;
  const Status s = session->Run({}, {"read"}, {}, &out);
  CHECK(s.code() == Code::kFailedPrecondition);  // the new variable has no value yet
  CHECK_THAT(s.message(), Catch::Contains("lv_reset_v"));
  RunOk(*session, {"init"});
  RunOk(*session, {"inc"});
  RunOk(*session, {}, &out, {"read"});
  CHECK(Values<float>(out[0]) == std::vector<float>{6.f, 6.f});
}

TEST_CASE("a read by message of many variables, while kernels update them, sees each whole") {
  Runtime* rt = Runtime::Default();
  constexpr int kVars = 5;
  Scope root = Scope::NewRootScope();
  std::vector<Operation> incs, inits;
  std::vector<std::string> handles;
  for (int i = 0; i < kVars; ++i) {
    const std::string name = "lv_many_" + std::to_string(i);
    auto v = ops::Variable(root.WithOpName(name), PartialTensorShape(TensorShape{kBig}), DT_FLOAT, "", name);
    inits.push_back(ops::Assign(root.WithOpName("init_" + name), v, ops::Fill(root, {kBig}, 0.f)).op());
    incs.push_back(
        ops::AssignAdd(root.WithOpName("inc_" + name), v, ops::Fill(root, {kBig}, 1.f), /*use_locking=*/true).op());
    ResourceHandle h;
    h.container = kDefaultContainer;
    h.name = name;
    h.dtype = DT_FLOAT;
    h.shape = PartialTensorShape(TensorShape{kBig});
    handles.push_back(h.Encode());
  }
  ops::NoOp(root.WithOpName("init").WithControlDependencies(inits));
  ops::NoOp(root.WithOpName("inc").WithControlDependencies(incs));
  auto session = Open(rt, root);
  RunOk(*session, {"init"});
  constexpr int kSteps = 100;
  std::atomic<bool> updating{true};
  std::atomic<int> failures{0}, torn{0}, reads{0};
  OnThreads(2, [&](int t) {
    if (t == 0) {
      std::vector<Tensor> out;
      for (int i = 0; i < kSteps; ++i)
        if (!session->Run({}, {}, {"inc"}, &out).ok()) ++failures;
      updating = false;
      return;
    }
    caf::scoped_actor self{rt->system()};
    VarReadRequest read;
    read.handles = handles;
    while (updating) {
      self->request(rt->container_actor(), std::chrono::seconds(30), read)
          .receive(
              [&](VarReadResponse& r) {
                if (!r.status.ok() || r.values.size() != handles.size()) {
                  ++failures;
                  return;
                }
                ++reads;
                for (const Tensor& v : r.values)
                  if (!Uniform(v)) ++torn;
              },
              [&](caf::error&) { ++failures; });
    }
  });
  CHECK(failures == 0);
  CHECK(reads >= 1);
  CHECK(torn == 0);
}
