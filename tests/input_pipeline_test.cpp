// Queue runners, the coordinator and batching (client/train/queue_runner.hpp,
// client/train/coordinator.hpp, client/train/input_batching.hpp): the pipeline ends
// cleanly at the end of input, on an error and on a stop request, never
// hanging; batches hold every element once.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/queue_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/coordinator.hpp"
#include "actorflow/client/train/input_batching.hpp"
#include "actorflow/client/train/queue_runner.hpp"
#include "actorflow/core/io/tfrecord_file_reader.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::TwoThreads;
using test::MakeTensor;
using test::Open;
using test::Values;

namespace {

// A source queue "src" of float scalars 0..n-1 (filled by "fill", closed by
// "src_close"), and one element of it (dequeued) to batch.
Output Source(const Scope& root, int n) {
  ops::QueueOptions o;
  o.shapes = {PartialTensorShape::Scalar()};
  auto src = ops::FIFOQueue(root.WithOpName("src"), {DT_FLOAT}, o);
  std::vector<float> values(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<float>(i);
  ops::QueueEnqueueMany(root.WithOpName("fill"), src, {ops::Const(root, MakeTensor<float>(values, {n}))});
  ops::QueueClose(root.WithOpName("src_close"), src);
  return ops::QueueDequeue(root, src, {DT_FLOAT})[0];
}

RunOptions Bounded() {
  RunOptions o;
  o.timeout_in_ms = 30000;
  return o;
}

}  // namespace

TEST_CASE("batch: runners fill the queue until their input ends, close it, and the consumer drains every element") {
  Runtime rt(TwoThreads());
  for (bool smaller : {true, false}) {
    INFO("allow_smaller_final_batch " << smaller);
    Scope root = Scope::NewRootScope();
    Output x = Source(root, 50);
    ops::BatchOptions o;
    o.batch_size = 8;
    o.num_threads = 2;
    o.capacity = 16;
    o.allow_smaller_final_batch = smaller;
    o.shapes = {PartialTensorShape::Scalar()};  // a dequeue's shape is not inferred
    Batched b = Batch(root, {ops::Identity(root, x)}, o);
    INFO(root.status().ToString());
    REQUIRE(root.ok());
    ops::Identity(root.WithOpName("out"), b.tensors[0]);
    REQUIRE(root.GetQueueRunners().size() == 1);
    REQUIRE(root.GetQueueRunners()[0].enqueue_op_names.size() == 2);
    auto session = Open(&rt, root);
    std::vector<Tensor> out;
    REQUIRE(session->Run(Bounded(), {}, {}, {"fill"}, &out).ok());
    REQUIRE(session->Run(Bounded(), {}, {}, {"src_close"}, &out).ok());
    Coordinator coord;
    REQUIRE(StartQueueRunners(session.get(), root.GetQueueRunners(), &coord).ok());
    std::multiset<float> seen;
    std::vector<int64_t> sizes;
    for (;;) {
      Status s = session->Run(Bounded(), {}, {"out"}, {}, &out);
      if (errors::IsOutOfRange(s)) break;  // the runners closed the batch queue and it is drained
      INFO(s.ToString());
      REQUIRE(s.ok());
      sizes.push_back(out[0].dim_size(0));
      for (float v : Values<float>(out[0])) seen.insert(v);
    }
    coord.RequestStop();
    REQUIRE(coord.Join(std::chrono::seconds(30)).ok());
    if (smaller) {
      REQUIRE(seen.size() == 50);  // six batches of 8, then the remaining 2
      REQUIRE(sizes.back() == 2);
    } else {
      REQUIRE(seen.size() == 48);  // the last 2 never make a full batch
    }
    for (float v : seen) REQUIRE(seen.count(v) == 1);
  }
}

TEST_CASE("shuffle_batch: a capacity not greater than min_after_dequeue is refused when the graph is built") {
  Scope root = Scope::NewRootScope();
  auto x = ops::Const(root, 1.f);
  ops::ShuffleBatchOptions o;
  o.capacity = 100;
  o.min_after_dequeue = 100;
  ShuffleBatch(root, {x}, o);
  REQUIRE(root.status().code() == Code::kInvalidArgument);
  REQUIRE_THAT(root.status().message(), Catch::Contains("capacity") && Catch::Contains("min_after_dequeue"));
  Scope unknown = Scope::NewRootScope();
  auto p = ops::Placeholder(unknown.WithOpName("p"), DT_FLOAT);
  ops::BatchOptions b;
  Batch(unknown, {p}, b);
  REQUIRE(unknown.status().code() == Code::kInvalidArgument);
  REQUIRE_THAT(unknown.status().message(), Catch::Contains("not fully known"));
}

TEST_CASE("shuffle_batch_join: one runner thread per list; batches mix the lists; everything arrives once") {
  Runtime rt(TwoThreads());
  Scope root = Scope::NewRootScope();
  Output a = Source(root.NewSubScope("a"), 40);
  Output b = ops::Add(root, Source(root.NewSubScope("b"), 40), 1000.f);
  ops::ShuffleBatchOptions o;
  o.batch_size = 10;
  o.capacity = 30;
  o.min_after_dequeue = 10;
  o.seed = 3;
  o.shapes = {PartialTensorShape::Scalar()};
  Batched batched = ShuffleBatchJoin(root, {{a}, {b}}, o);
  INFO(root.status().ToString());
  REQUIRE(root.ok());
  ops::Identity(root.WithOpName("out"), batched.tensors[0]);
  REQUIRE(batched.runner.enqueue_op_names.size() == 2);
  auto session = Open(&rt, root);
  std::vector<Tensor> out;
  REQUIRE(session->Run(Bounded(), {}, {}, {"a/fill", "b/fill"}, &out).ok());
  REQUIRE(session->Run(Bounded(), {}, {}, {"a/src_close", "b/src_close"}, &out).ok());
  Coordinator coord;
  REQUIRE(StartQueueRunners(session.get(), root.GetQueueRunners(), &coord).ok());
  std::multiset<float> seen;
  for (;;) {
    Status s = session->Run(Bounded(), {}, {"out"}, {}, &out);
    if (errors::IsOutOfRange(s)) break;
    INFO(s.ToString());
    REQUIRE(s.ok());
    for (float v : Values<float>(out[0])) seen.insert(v);
  }
  REQUIRE(seen.size() == 80);
  for (int i = 0; i < 40; ++i) {
    REQUIRE(seen.count(static_cast<float>(i)) == 1);
    REQUIRE(seen.count(static_cast<float>(1000 + i)) == 1);
  }
  coord.RequestStop();
  REQUIRE(coord.Join(std::chrono::seconds(30)).ok());
}

TEST_CASE("coordinator: a stop request cancels runners waiting on a full queue; join returns within the grace") {
  Runtime rt(TwoThreads());
  Scope root = Scope::NewRootScope();
  ops::BatchOptions o;
  o.batch_size = 4;
  o.capacity = 4;
  o.num_threads = 3;
  Batched b = Batch(root, {ops::Const(root, 7.f)}, o);  // endless input: the queue fills and the runners wait
  INFO(root.status().ToString());
  REQUIRE(root.ok());
  ops::Identity(root.WithOpName("out"), b.tensors[0]);
  auto session = Open(&rt, root);
  Coordinator coord;
  REQUIRE(StartQueueRunners(session.get(), root.GetQueueRunners(), &coord).ok());
  std::vector<Tensor> out;
  for (int i = 0; i < 5 && !coord.ShouldStop(); ++i) {  // a training loop
    REQUIRE(session->Run(Bounded(), {}, {"out"}, {}, &out).ok());
    REQUIRE(Values<float>(out[0]) == std::vector<float>{7, 7, 7, 7});
  }
  coord.RequestStop();  // as a Ctrl-C handler's watcher would
  REQUIRE(coord.ShouldStop());
  REQUIRE(coord.Join(std::chrono::seconds(30)).ok());
  // The queue was cancelled: what is left drains, then OutOfRange, never a hang.
  Status s;
  for (int i = 0; i < 10 && s.ok(); ++i) s = session->Run(Bounded(), {}, {"out"}, {}, &out);
  REQUIRE(errors::IsOutOfRange(s));
}

TEST_CASE("coordinator: a runner's error is reported, stops the others, and Join returns it") {
  Runtime rt(TwoThreads());
  Scope root = Scope::NewRootScope();
  ops::QueueOptions q;
  q.shapes = {PartialTensorShape::Scalar()};
  q.capacity = 4;
  auto queue = ops::FIFOQueue(root.WithOpName("q"), {DT_FLOAT}, q);
  ops::QueueEnqueue(root.WithOpName("bad"), queue, {ops::Const(root, {1.f, 2.f})});  // not a scalar
  ops::QueueEnqueue(root.WithOpName("good"), queue, {ops::Const(root, 1.f)});
  ops::QueueClose(root.WithOpName("close"), queue);
  ops::QueueClose(root.WithOpName("cancel"), queue, true);
  auto session = Open(&rt, root);
  QueueRunnerDef def{"q", {"good", "bad"}, "close", "cancel"};
  Coordinator coord;
  REQUIRE(StartQueueRunners(session.get(), {def}, &coord).ok());
  REQUIRE(coord.WaitForStop(std::chrono::seconds(30)));
  Status s = coord.Join(std::chrono::seconds(30));
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("shape"));
  REQUIRE(coord.GetStatus().code() == Code::kInvalidArgument);
  // A def without ops is refused.
  std::unique_ptr<QueueRunner> r;
  REQUIRE(QueueRunner::New(QueueRunnerDef{"q", {}, "close", "cancel"}, &r).code() == Code::kInvalidArgument);
}

TEST_CASE("examples/input_pipeline trains from TFRecord shards until its input ends, and stops cleanly") {
  const std::string dir = std::string(AF_EXAMPLES_BIN_DIR) + "/input_pipeline_test_data";
  const std::string logdir = std::string(AF_EXAMPLES_BIN_DIR) + "/input_pipeline_test_logs_" + std::to_string(::getpid());
  std::filesystem::remove_all(logdir);
  std::string output;
  const int rc = test::RunProgram(
      std::string(AF_EXAMPLES_BIN_DIR) + "/input_pipeline --epochs 2 --dir " + dir + " --logdir " + logdir, &output);
  INFO(output);
  REQUIRE(rc == 0);
  // Two epochs of 600 steps, then the filename producer's num_epochs ends the input.
  REQUIRE_THAT(output, Catch::Contains("epoch 2:") && Catch::Contains("input exhausted after 1200 steps"));
  std::smatch m;
  REQUIRE(std::regex_search(output, m, std::regex(R"(test accuracy ([0-9.]+)%\n?$)")));
  CHECK(std::stod(m[1]) >= 80.0);
  // --logdir: one events file with the version record, the graph, 1200 losses and 2 test accuracies.
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(logdir)) files.push_back(e.path());
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().rfind("events.out.tfevents.", 0) == 0);
  std::unique_ptr<io::FileRecordReader> reader;
  REQUIRE(io::TFRecordFileReader::Create({}, &reader).ok());
  REQUIRE(reader->Open(files[0].string()).ok());
  std::string key, value;
  int records = 0;
  Status read;
  while ((read = reader->ReadRecord(&key, &value)).ok()) ++records;
  CHECK(read.code() == Code::kOutOfRange);
  CHECK(records == 1 + 1 + 1200 + 2);
  std::filesystem::remove_all(logdir);
}

TEST_CASE("examples/input_pipeline stops cleanly on Ctrl-C (SIGINT) while its runners keep queues full") {
  const std::string dir = std::string(AF_EXAMPLES_BIN_DIR) + "/input_pipeline_test_data";
  const std::string exe = std::string(AF_EXAMPLES_BIN_DIR) + "/input_pipeline";
  const std::string out_path = dir + "_sigint.log";
  std::remove(out_path.c_str());  // a log of an earlier run must not count
  std::fflush(stdout);             // nothing buffered is written twice by the child
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Its stderr too: a sanitizer's report at its exit belongs in the failure's message.
    if (std::freopen(out_path.c_str(), "w", stdout) == nullptr || dup2(fileno(stdout), STDERR_FILENO) < 0) _exit(126);
    execl(exe.c_str(), exe.c_str(), "--epochs", "50", "--dir", dir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Interrupt once it trains (its first epoch line), as a user would.
  auto read_log = [&] {
    std::ifstream in(out_path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (read_log().find("epoch 1:") == std::string::npos && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(kill(pid, SIGINT) == 0);
  int status = 0;
  pid_t done = 0;
  const auto stop_by = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((done = waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < stop_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (done == 0) kill(pid, SIGKILL), waitpid(pid, &status, 0);
  const std::string output = read_log();
  INFO(output);
  REQUIRE(done == pid);  // it ended by itself, without hanging
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 130);
  REQUIRE_THAT(output, Catch::Contains("interrupted after"));
}
