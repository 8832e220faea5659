// Saver: checkpoints of a graph's variables through SaveV2/RestoreV2, the
// state file, keep-last-K, MaybeSave, and damaged or mismatched checkpoints.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "actorflow/checkpoint/checkpoint_state.hpp"
#include "actorflow/client/ops/state_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/saver.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::MakeTensor;
using test::ToDef;
using test::Values;

namespace {

std::string TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("af_saver_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// A graph with a float matrix, a double vector and the int64 global step,
// each in its own container so that tests do not share variables.
struct Model {
  Scope root = Scope::NewRootScope();
  Variable w, b, step;
  std::unique_ptr<Saver> saver;
  std::unique_ptr<Session> session;

  Model(const std::string& container, const std::string& dir, int keep = 5, TensorShape w_shape = {2, 2}) {
    w = NewVariable(root, "w", w_shape, DT_FLOAT, init::Constant(1.0), true, container);
    b = NewVariable(root, "b", {3}, DT_DOUBLE, init::Constant(0.5), true, container);
    step = NewVariable(root, "global_step", {}, DT_INT64, init::Zeros(), false, container);
    ops::AssignAdd(root.WithOpName("bump_w"), w.ref, ops::Fill(root, ops::Shape(root, w.value), 1.f));
    ops::AssignAdd(root.WithOpName("bump_step"), step.ref, int64_t{1});
    GlobalVariablesInitializer(root);
    SaverOptions so;
    so.dir = dir;
    so.max_to_keep = keep;
    so.save_every_steps = 3;
    saver = std::make_unique<Saver>(root, std::vector<Variable>{}, so);
    session = std::make_unique<Session>();
    REQUIRE(session->Create(ToDef(root)).ok());
  }
  void Run(const std::vector<std::string>& targets) {
    std::vector<Tensor> out;
    Status s = session->Run({}, {}, targets, &out);
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  std::vector<Tensor> Read() {
    std::vector<Tensor> out;
    REQUIRE(session->Run({}, {w.value.name(), b.value.name(), step.value.name()}, {}, &out).ok());
    return out;
  }
};

}  // namespace

TEST_CASE("Save then Restore brings every variable back, and RestoreLatest finds the newest") {
  const std::string dir = TempDir("roundtrip");
  Model m("saver_rt", dir);
  bool restored = true;
  REQUIRE(m.saver->RestoreLatest(m.session.get(), &restored).ok());
  CHECK_FALSE(restored);  // nothing saved yet
  m.Run({"init"});
  m.Run({"bump_w", "bump_step"});
  std::string path;
  REQUIRE(m.saver->Save(m.session.get(), 1, &path).ok());
  CHECK(path == dir + "/model-1");
  CHECK(std::filesystem::exists(path + ".index"));  // TensorFlow's format
  CHECK(std::filesystem::exists(path + ".data-00000-of-00001"));
  m.Run({"bump_w", "bump_step"});
  m.Run({"bump_w"});
  REQUIRE(m.saver->Restore(m.session.get(), path).ok());
  auto v = m.Read();
  CHECK(Values<float>(v[0]) == std::vector<float>(4, 2.f));
  CHECK(Values<double>(v[1]) == std::vector<double>(3, 0.5));
  CHECK(Values<int64_t>(v[2]) == std::vector<int64_t>{1});

  // A new process (here: a reset container and a new session) resumes from it.
  REQUIRE(m.session->ResetContainers({"saver_rt"}).ok());
  Model again("saver_rt", dir);
  std::string from;
  REQUIRE(again.saver->RestoreLatest(again.session.get(), &restored, &from).ok());
  CHECK(restored);
  CHECK(from == path);
  CHECK(Values<int64_t>(again.Read()[2]) == std::vector<int64_t>{1});
}

TEST_CASE("keep the last K checkpoints; MaybeSave saves every N steps") {
  const std::string dir = TempDir("keep");
  Model m("saver_keep", dir, /*keep=*/2);
  m.Run({"init"});
  int saves = 0;
  for (int64_t step = 0; step <= 12; ++step) {
    bool saved = false;
    REQUIRE(m.saver->MaybeSave(m.session.get(), step, &saved).ok());
    saves += saved;
  }
  CHECK(saves == 4);  // steps 3, 6, 9, 12
  CHECK_FALSE(std::filesystem::exists(dir + "/model-3.index"));
  CHECK_FALSE(std::filesystem::exists(dir + "/model-6.index"));
  CHECK(std::filesystem::exists(dir + "/model-9.index"));
  CHECK(std::filesystem::exists(dir + "/model-12.index"));
  CheckpointState state;
  REQUIRE(ReadCheckpointState(dir, &state).ok());
  CHECK(state.latest == dir + "/model-12");
  CHECK(state.all.size() == 2);
}

TEST_CASE("a damaged or mismatched checkpoint fails with its code, naming file and tensor, and changes nothing") {
  const std::string dir = TempDir("damaged");
  Model m("saver_bad", dir);
  m.Run({"init"});
  std::string path;
  REQUIRE(m.saver->Save(m.session.get(), 7, &path).ok());
  m.Run({"bump_w"});  // w = 2 now

  SECTION("flipped data bytes: DataLoss") {
    {
      std::fstream f(path + ".data-00000-of-00001", std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(6);  // inside the first tensor's bytes
      char c = 0x5a;
      f.write(&c, 1);
    }
    Status s = m.saver->Restore(m.session.get(), path);
    CHECK(s.code() == Code::kDataLoss);
    CHECK_THAT(s.message(), Catch::Contains("model-7"));
    CHECK(Values<float>(m.Read()[0]) == std::vector<float>(4, 2.f));  // untouched
  }
  SECTION("a truncated data file: DataLoss") {
    std::filesystem::resize_file(path + ".data-00000-of-00001", 10);
    CHECK(m.saver->Restore(m.session.get(), path).code() == Code::kDataLoss);
    bool restored;
    CHECK(m.saver->RestoreLatest(m.session.get(), &restored).code() == Code::kDataLoss);
  }
  SECTION("a truncated index: DataLoss") {
    std::filesystem::resize_file(path + ".index", 60);
    CHECK(m.saver->Restore(m.session.get(), path).code() == Code::kDataLoss);
  }
  SECTION("a variable of another shape: InvalidArgument naming it") {
    Model other("saver_bad_other", TempDir("damaged_other"), 5, TensorShape{3, 3});
    other.Run({"init"});
    other.Run({"bump_step"});  // 1, where the checkpoint holds 0
    Status s = other.saver->Restore(other.session.get(), path);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::Contains("holds w as float [2,2]") && Catch::Contains("[3,3]"));
    // Nothing was restored, not even the variables that would fit.
    CHECK(Values<int64_t>(other.Read()[2]) == std::vector<int64_t>{1});
  }
  SECTION("a missing checkpoint: NotFound") {
    CHECK(m.saver->Restore(m.session.get(), dir + "/model-999").code() == Code::kNotFound);
  }
}
