// Partitioned variables (client/train/partitioned_variables.hpp): the
// partitioners' numbers (TensorFlow's), the parts' names, shapes and
// placement, the whole value, initial values from the whole shape, training
// each part by its slice of the gradient, and checkpoints that do not depend
// on the partitioning.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "actorflow/checkpoint/bundle_reader.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/partitioned_variables.hpp"
#include "actorflow/client/train/replica_device_setter.hpp"
#include "actorflow/client/train/saver.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::MakeTensor;
using test::ToDef;
using test::Values;

namespace {

std::vector<int64_t> Cut(const Partitioner& p, const TensorShape& shape, DataType dtype = DT_FLOAT) {
  std::vector<int64_t> parts;
  const Status s = p(shape, dtype, &parts);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return parts;
}


// 0, 1, 2, ... in a float tensor of `shape`.
Tensor Iota(const TensorShape& shape, float scale = 1.f) {
  std::vector<float> v(static_cast<size_t>(shape.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>(i);
  return MakeTensor<float>(v, shape);
}

std::vector<Tensor> Fetch(Session* s, const std::vector<std::string>& names) {
  std::vector<Tensor> out;
  const Status st = s->Run({}, names, {}, &out);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return out;
}

void RunTargets(Session* s, const std::vector<std::string>& targets) {
  std::vector<Tensor> out;
  const Status st = s->Run({}, {}, targets, &out);
  INFO(st.ToString());
  REQUIRE(st.ok());
}

}  // namespace

TEST_CASE("partitioners: TensorFlow's numbers of parts") {
  SECTION("fixed size: num_shards along the axis, no more than its size") {
    CHECK(Cut(FixedSizePartitioner(4), {784, 256}) == std::vector<int64_t>{4, 1});
    CHECK(Cut(FixedSizePartitioner(10), {3, 5}) == std::vector<int64_t>{3, 1});
    CHECK(Cut(FixedSizePartitioner(2, 1), {3, 5}) == std::vector<int64_t>{1, 2});
  }
  SECTION("min/max: parts of at least min_slice_size bytes, at most max_partitions") {
    // 784*256 floats = 802816 bytes: ceil(802816 / 262144) = 4 parts.
    CHECK(Cut(MinMaxVariablePartitioner(8), {784, 256}) == std::vector<int64_t>{4, 1});
    CHECK(Cut(MinMaxVariablePartitioner(2), {784, 256}) == std::vector<int64_t>{2, 1});
    CHECK(Cut(MinMaxVariablePartitioner(8), {10, 10}) == std::vector<int64_t>{1, 1});  // too small to cut
    // Strings count 16 bytes each unless told: 1000 * 16 / 4096 = 3.9 -> 4.
    CHECK(Cut(MinMaxVariablePartitioner(100, 0, 4096), {1000}, DT_STRING) == std::vector<int64_t>{4});
    CHECK(Cut(MinMaxVariablePartitioner(100, 0, 4096, 64), {1000}, DT_STRING) == std::vector<int64_t>{16});
  }
  SECTION("axis size: rows per part from max_shard_bytes, at most max_shards") {
    // A row is 256 floats (1024 bytes): 97 rows per part, ceil(784 / 97) = 9 parts.
    CHECK(Cut(VariableAxisSizePartitioner(100000), {784, 256}) == std::vector<int64_t>{9, 1});
    CHECK(Cut(VariableAxisSizePartitioner(100000, 0, 16, 4), {784, 256}) == std::vector<int64_t>{4, 1});
    CHECK(Cut(VariableAxisSizePartitioner(1), {5, 2}) == std::vector<int64_t>{5, 1});  // at least a row each
  }
  SECTION("bad arguments: InvalidArgument naming the partitioner") {
    std::vector<int64_t> parts;
    Status s = FixedSizePartitioner(2, 2)(TensorShape{3, 5}, DT_FLOAT, &parts);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::Contains("fixed_size_partitioner") && Catch::Contains("axis 2"));
    CHECK(FixedSizePartitioner(0)(TensorShape{3}, DT_FLOAT, &parts).code() == Code::kInvalidArgument);
    CHECK(MinMaxVariablePartitioner(0)(TensorShape{3}, DT_FLOAT, &parts).code() == Code::kInvalidArgument);
    CHECK(VariableAxisSizePartitioner(0)(TensorShape{3}, DT_FLOAT, &parts).code() == Code::kInvalidArgument);
  }
}

TEST_CASE("a partitioned variable: parts named and shaped as TensorFlow's, the whole value concatenated") {
  Scope root = Scope::NewRootScope();
  Scope layer = root.NewSubScope("layer");
  const Tensor initial = Iota({10, 3});
  PartitionedVariable w =
      NewPartitionedVariable(layer, "w", {10, 3}, DT_FLOAT, init::Constant(initial), FixedSizePartitioner(3));
  REQUIRE(root.status().ok());
  REQUIRE(w.valid());
  CHECK(w.name == "layer/w");
  CHECK(w.axis == 0);
  REQUIRE(w.parts.size() == 3);
  // 10 rows in 3 parts: the first takes the remainder's row.
  const std::vector<std::vector<int64_t>> shapes = {{4, 3}, {3, 3}, {3, 3}};
  const std::vector<int64_t> offsets = {0, 4, 7};
  for (size_t i = 0; i < 3; ++i) {
    CHECK(w.parts[i].name == "layer/w/part_" + std::to_string(i));
    CHECK(w.parts[i].shape.dim_sizes() == shapes[i]);
    CHECK(w.parts[i].save_slice.full_name == "layer/w");
    CHECK(w.parts[i].save_slice.offset == std::vector<int64_t>{offsets[i], 0});
  }
  CHECK(w.value.node()->name() == "layer/w");
  // The collections know the parts, with where they lie (read back from the nodes).
  const auto global = GlobalVariables(root);
  const auto trainable = TrainableVariables(root);
  REQUIRE(global.size() == 3);
  REQUIRE(trainable.size() == 3);
  CHECK(global[1].save_slice.full_name == "layer/w");
  CHECK(global[1].save_slice.full_shape.dim_sizes() == std::vector<int64_t>{10, 3});
  CHECK(global[2].save_slice.offset == std::vector<int64_t>{7, 0});
  GlobalVariablesInitializer(root);
  Runtime rt(test::TwoThreads());  // variables of its own
  auto session = test::Open(&rt, root);
  RunTargets(session.get(), {"init"});
  auto out = Fetch(session.get(), {w.value.name(), w.parts[1].value.name()});
  CHECK(Values<float>(out[0]) == Values<float>(initial));  // the whole, in order
  const auto all = Values<float>(initial);
  const std::vector<float> block(all.begin() + 12, all.begin() + 21);
  CHECK(Values<float>(out[1]) == block);  // rows 4..6

  SECTION("along another axis, and one part") {
    Scope r2 = Scope::NewRootScope();
    PartitionedVariable cols =
        NewPartitionedVariable(r2, "c", {2, 5}, DT_FLOAT, init::Constant(Iota({2, 5})), FixedSizePartitioner(2, 1));
    PartitionedVariable one = NewPartitionedVariable(r2, "one", {4}, DT_FLOAT, init::Ones(), FixedSizePartitioner(1));
    REQUIRE(r2.status().ok());
    CHECK(cols.axis == 1);
    CHECK(cols.parts[0].shape.dim_sizes() == std::vector<int64_t>{2, 3});
    CHECK(cols.parts[1].save_slice.offset == std::vector<int64_t>{0, 3});
    REQUIRE(one.parts.size() == 1);
    CHECK(one.parts[0].name == "one/part_0");
    GlobalVariablesInitializer(r2);
    auto s2 = test::Open(&rt, r2);
    RunTargets(s2.get(), {"init"});
    auto v = Fetch(s2.get(), {cols.value.name(), cols.parts[1].value.name(), one.value.name()});
    CHECK(Values<float>(v[0]) == Values<float>(Iota({2, 5})));
    CHECK(Values<float>(v[1]) == std::vector<float>{3, 4, 8, 9});
    CHECK(Values<float>(v[2]) == std::vector<float>(4, 1.f));
  }
}

TEST_CASE("a partitioned variable's Glorot initial values scale by the whole variable's fans") {
  Scope root = Scope::NewRootScope();
  PartitionedVariable w =
      NewPartitionedVariable(root, "w", {784, 256}, DT_FLOAT, init::GlorotUniform(7), FixedSizePartitioner(4));
  REQUIRE(root.status().ok());
  GlobalVariablesInitializer(root);
  Runtime rt(test::TwoThreads());  // variables of its own
  auto session = test::Open(&rt, root);
  RunTargets(session.get(), {"init"});
  const auto v = Values<float>(Fetch(session.get(), {w.value.name()})[0]);
  const double limit = std::sqrt(6.0 / (784 + 256));  // 0.0760; a part's own fans would give 0.115
  float biggest = 0;
  for (float x : v) biggest = std::max(biggest, std::abs(x));
  CHECK(biggest <= limit + 1e-6);
  CHECK(biggest > 0.99 * limit);  // uniform over the whole range, 200k draws
}

TEST_CASE("training a partitioned variable updates each part by its slice of the gradient") {
  // loss = sum((x w)^2) with w 6x2; the same SGD step on w whole and on w in 3 parts.
  auto step = [](int parts) {
    Scope root = Scope::NewRootScope();
    const Tensor initial = Iota({6, 2}, 0.1f);
    Output value;
    std::vector<std::string> names;
    if (parts == 0) {
      Variable w = NewVariable(root, "w", {6, 2}, DT_FLOAT, init::Constant(initial));
      value = w.value;
    } else {
      PartitionedVariable w =
          NewPartitionedVariable(root, "w", {6, 2}, DT_FLOAT, init::Constant(initial), FixedSizePartitioner(parts));
      value = w.value;
    }
    auto x = ops::Const(root, MakeTensor<float>({1, 2, 3, 4, 5, 6, -1, 0, 1, 0, -1, 2}, {2, 6}));
    auto y = ops::MatMul(root, x, value);
    auto loss = ops::Sum(root.WithOpName("loss"), ops::Mul(root, y, y), ops::Const(root, {0, 1}));
    GradientDescentOptimizer sgd(0.01);
    sgd.Minimize(root.WithOpName("train"), loss);
    GlobalVariablesInitializer(root);
    REQUIRE(root.status().ok());
    Runtime rt(test::TwoThreads());
    auto session = test::Open(&rt, root);
    RunTargets(session.get(), {"init"});
    RunTargets(session.get(), {"train"});
    return Values<float>(Fetch(session.get(), {value.name()})[0]);
  };
  const auto whole = step(0);
  const auto initial = Values<float>(Iota({6, 2}, 0.1f));
  CHECK(whole != initial);  // it trained
  const auto in_parts = step(3);
  REQUIRE(in_parts.size() == whole.size());
  for (size_t i = 0; i < whole.size(); ++i) CHECK(in_parts[i] == Approx(whole[i]).epsilon(1e-6));
}

TEST_CASE("checkpoints of a partitioned variable hold the whole tensor and restore into any partitioning") {
  test::TempDir ckpt_dir("af_partitioned_test_ckpt");
  const std::string dir = ckpt_dir.path();
  const Tensor initial = Iota({10, 3});
  // A model whose w is cut into `parts` (0: a plain variable), with Adam's slots.
  struct Model {
    Scope root = Scope::NewRootScope();
    Output value, m_slot;
    std::vector<Variable> parts;
    std::unique_ptr<Saver> saver;
    Runtime rt{test::TwoThreads()};  // variables of its own
    std::unique_ptr<Session> session;
    Model(int parts_wanted, const std::string& container, const std::string& dir, const Tensor& initial) {
      if (parts_wanted == 0) {
        Variable w = NewVariable(root, "w", {10, 3}, DT_FLOAT, init::Constant(initial), true, container);
        value = w.value;
        parts = {w};
      } else {
        PartitionedVariable w = NewPartitionedVariable(root, "w", {10, 3}, DT_FLOAT, init::Constant(initial),
                                                       FixedSizePartitioner(parts_wanted));
        value = w.value;
        parts = w.parts;
      }
      auto loss = ops::Sum(root.WithOpName("loss"), value, ops::Const(root, {0, 1}));
      AdamOptimizer adam(0.1);
      adam.Minimize(root.WithOpName("train"), loss);
      ops::Assign(root.WithOpName("zero"), parts[0].ref, ops::ZerosLike(root, parts[0].value));
      GlobalVariablesInitializer(root);
      SaverOptions so;
      so.dir = dir;
      saver = std::make_unique<Saver>(root, std::vector<Variable>{}, so);
      REQUIRE(root.status().ok());
      session = test::Open(&rt, root);
    }
    std::vector<float> Value() { return Values<float>(Fetch(session.get(), {value.name()})[0]); }
  };

  Model three(3, "", dir, initial);
  RunTargets(three.session.get(), {"init"});
  RunTargets(three.session.get(), {"train"});
  const auto trained = three.Value();
  CHECK(trained != Values<float>(initial));
  std::string path;
  REQUIRE(three.saver->Save(three.session.get(), 1, &path).ok());

  // One tensor per whole variable, Adam's slots too, none per part.
  std::unique_ptr<BundleReader> reader;
  REQUIRE(BundleReader::Open(path, &reader).ok());
  DataType dtype;
  TensorShape shape;
  for (const char* name : {"w", "w/Adam", "w/Adam_1"}) {
    INFO(name);
    REQUIRE(reader->LookupDtypeAndShape(name, &dtype, &shape).ok());
    CHECK(shape.dim_sizes() == std::vector<int64_t>{10, 3});
  }
  CHECK(reader->LookupDtypeAndShape("w/part_0", &dtype, &shape).code() == Code::kNotFound);
  Tensor saved;
  REQUIRE(reader->Lookup("w", &saved).ok());
  CHECK(Values<float>(saved) == trained);
  reader.reset();

  SECTION("back into the same parts") {
    RunTargets(three.session.get(), {"zero"});
    CHECK(three.Value() != trained);
    REQUIRE(three.saver->Restore(three.session.get(), path).ok());
    CHECK(three.Value() == trained);
  }
  for (int parts : {0, 2, 4}) {
    DYNAMIC_SECTION("into " << parts << " parts (0: a plain variable)") {
      test::TempDir other_dir("af_partitioned_test_other");
      Model other(parts, "", other_dir.path(), initial);
      RunTargets(other.session.get(), {"init"});
      CHECK(other.Value() == Values<float>(initial));
      REQUIRE(other.saver->Restore(other.session.get(), path).ok());
      CHECK(other.Value() == trained);
      // And its slots came back: one more step from the restored state matches one from the original.
      RunTargets(other.session.get(), {"train"});
      RunTargets(three.session.get(), {"train"});
      const auto a = other.Value(), b = three.Value();
      for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).epsilon(1e-6));
    }
  }
}

TEST_CASE("partitioned variables: errors name the variable") {
  Scope root = Scope::NewRootScope();
  SECTION("a scalar") {
    PartitionedVariable s = NewPartitionedVariable(root, "s", {}, DT_FLOAT, init::Zeros(), FixedSizePartitioner(2));
    CHECK_FALSE(s.valid());
    CHECK(root.status().code() == Code::kInvalidArgument);
    CHECK_THAT(root.status().message(), Catch::Contains("'s'") && Catch::Contains("scalar"));
  }
  SECTION("a partitioner that cuts two dimensions") {
    Partitioner both = [](const TensorShape&, DataType, std::vector<int64_t>* p) {
      *p = {2, 2};
      return Status::OK();
    };
    CHECK_FALSE(NewPartitionedVariable(root, "m", {4, 4}, DT_FLOAT, init::Zeros(), both).valid());
    CHECK_THAT(root.status().message(), Catch::Contains("'m'") && Catch::Contains("one dimension"));
  }
  SECTION("a partitioner's own error") {
    CHECK_FALSE(NewPartitionedVariable(root, "v", {4}, DT_FLOAT, init::Zeros(), FixedSizePartitioner(2, 3)).valid());
    CHECK_THAT(root.status().message(), Catch::Contains("'v'") && Catch::Contains("axis 3"));
  }
  SECTION("more parts than rows") {
    Partitioner many = [](const TensorShape&, DataType, std::vector<int64_t>* p) {
      *p = {5};
      return Status::OK();
    };
    CHECK_FALSE(NewPartitionedVariable(root, "few", {3}, DT_FLOAT, init::Zeros(), many).valid());
    CHECK_THAT(root.status().message(), Catch::Contains("'few'") && Catch::Contains("into 5 parts"));
  }
  SECTION("an initial value of another shape") {
    NewPartitionedVariable(root, "c", {4, 2}, DT_FLOAT, init::Constant(Iota({2, 4})), FixedSizePartitioner(2));
    CHECK(root.status().code() == Code::kInvalidArgument);
    CHECK_THAT(root.status().message(), Catch::Contains("[2,4]") && Catch::Contains("[4,2]"));
  }
  SECTION("a name a node already has, or none") {
    REQUIRE(NewPartitionedVariable(root, "w", {4}, DT_FLOAT, init::Zeros(), FixedSizePartitioner(2)).valid());
    CHECK_FALSE(NewPartitionedVariable(root, "w", {4}, DT_FLOAT, init::Zeros(), FixedSizePartitioner(2)).valid());
    CHECK(root.status().code() == Code::kAlreadyExists);
    CHECK_THAT(root.status().message(), Catch::Contains("w/part_0 already exists"));
    Scope other = Scope::NewRootScope();
    CHECK_FALSE(NewPartitionedVariable(other, "", {4}, DT_FLOAT, init::Zeros(), FixedSizePartitioner(2)).valid());
    CHECK(other.status().code() == Code::kInvalidArgument);
  }
  SECTION("a part that does not fit its whole: refused when set, and by a Saver when made by hand") {
    Variable scalar = NewVariable(root, "scalar", {}, DT_FLOAT, init::Zeros());
    SetSaveSliceInfo(root, &scalar, SaveSliceInfo{"x", TensorShape{}, {}});
    CHECK(root.status().code() == Code::kInvalidArgument);
    Scope r2 = Scope::NewRootScope();
    Variable a = NewVariable(r2, "a", {2, 2}, DT_FLOAT, init::Zeros());
    Variable b = NewVariable(r2, "b", {2}, DT_FLOAT, init::Zeros());
    a.save_slice = SaveSliceInfo{"ab", TensorShape{4, 2}, {0, 0}};
    b.save_slice = SaveSliceInfo{"ab", TensorShape{4}, {}};  // another rank, no offset
    Saver saver(r2, {a, b});
    CHECK(r2.status().code() == Code::kInvalidArgument);
    CHECK_THAT(r2.status().message(), Catch::Contains("variable b") && Catch::Contains("'ab'"));
  }
  SECTION("a constant's block out of the value") {
    PartitionInfo outside{TensorShape{4, 2}, {3, 0}};
    init::Constant(Iota({4, 2})).Part(root, TensorShape{4, 2}, DT_FLOAT, outside);
    CHECK(root.status().code() == Code::kInvalidArgument);
  }
}

TEST_CASE("parts a Saver is given without their whole are saved each under its own name") {
  Scope root = Scope::NewRootScope();
  PartitionedVariable w =
      NewPartitionedVariable(root, "w", {4, 2}, DT_FLOAT, init::Constant(Iota({4, 2})), FixedSizePartitioner(2));
  // Adam given one part: its slots are one part of "w/Adam" each.
  auto loss = ops::Sum(root, w.parts[0].value, ops::Const(root, {0, 1}));
  AdamOptimizer adam(0.1);
  adam.Minimize(root.WithOpName("train"), loss, nullptr, {w.parts[0]});
  GlobalVariablesInitializer(root);
  SaverOptions so;
  test::TempDir subset_dir("af_partitioned_test_subset");
  so.dir = subset_dir.path();
  Saver all(root, {}, so);                    // w whole; w/part_0/Adam, w/part_0/Adam_1 alone
  Saver some(root.NewSubScope("some"), {w.parts[1]}, so);  // w/part_1 alone
  REQUIRE(root.status().ok());
  Runtime rt(test::TwoThreads());
  auto session = test::Open(&rt, root);
  RunTargets(session.get(), {"init"});
  RunTargets(session.get(), {"train"});
  std::string path;
  REQUIRE(all.Save(session.get(), 1, &path).ok());
  std::unique_ptr<BundleReader> reader;
  REQUIRE(BundleReader::Open(path, &reader).ok());
  DataType dtype;
  TensorShape shape;
  REQUIRE(reader->LookupDtypeAndShape("w", &dtype, &shape).ok());
  CHECK(shape.dim_sizes() == std::vector<int64_t>{4, 2});
  REQUIRE(reader->LookupDtypeAndShape("w/part_0/Adam", &dtype, &shape).ok());
  CHECK(shape.dim_sizes() == std::vector<int64_t>{2, 2});
  REQUIRE(all.Restore(session.get(), path).ok());
  REQUIRE(some.Save(session.get(), 2, &path).ok());
  REQUIRE(BundleReader::Open(path, &reader).ok());
  CHECK(reader->LookupDtypeAndShape("w/part_1", &dtype, &shape).ok());
  CHECK(reader->LookupDtypeAndShape("w", &dtype, &shape).code() == Code::kNotFound);
  REQUIRE(some.Restore(session.get(), path).ok());
}

TEST_CASE("a seeded initializer draws each part its own values, the same ones again for the same seed") {
  auto parts = [](int64_t seed) {
    Scope root = Scope::NewRootScope();
    PartitionedVariable w =
        NewPartitionedVariable(root, "w", {8, 4}, DT_FLOAT, init::RandomNormal(0, 1, seed), FixedSizePartitioner(2));
    REQUIRE(root.status().ok());
    GlobalVariablesInitializer(root);
    Runtime rt(test::TwoThreads());
    auto session = test::Open(&rt, root);
    RunTargets(session.get(), {"init"});
    auto out = Fetch(session.get(), {w.parts[0].value.name(), w.parts[1].value.name()});
    return std::make_pair(Values<float>(out[0]), Values<float>(out[1]));
  };
  const auto a = parts(7), b = parts(7), c = parts(8);
  CHECK(a.first != a.second);  // equal shapes, different values
  CHECK(a == b);
  CHECK(a.first != c.first);
}

TEST_CASE("a replica device setter spreads the parts over the ps tasks; the whole value is read on the worker") {
  Scope root = Scope::NewRootScope();
  ReplicaDeviceSetterOptions o;
  o.ps_tasks = 4;
  o.worker_device = "/job:worker/task:0";
  Scope s = ReplicaDeviceSetter(root, o);
  PartitionedVariable w = NewPartitionedVariable(s, "w", {784, 256}, DT_FLOAT, init::GlorotUniform(1),
                                                 FixedSizePartitioner(4));
  REQUIRE(root.status().ok());
  proto::GraphDef def;
  REQUIRE(root.ToGraphDef(&def).ok());
  std::map<std::string, std::string> device;
  for (const auto& n : def.node()) device[n.name()] = n.device();
  std::set<std::string> ps;
  for (const auto& p : w.parts) ps.insert(device[p.name]);
  CHECK(ps == std::set<std::string>{"/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2", "/job:ps/task:3"});
  CHECK(device["w/part_2/read"] == device["w/part_2"]);  // each part read where it lives
  CHECK(device["w/ConcatPartitions/concat"] == "/job:worker/task:0");
  CHECK(device["w"] == "/job:worker/task:0");
}
