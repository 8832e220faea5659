// input_pipeline: the MLP 784-256-10 trained on Fashion-MNIST read from
// TFRecord files through a queue-based input pipeline, as TensorFlow 1.x
// programs did:
//
//   TFRecord shards --> filename queue (shuffled, num_epochs)
//       --> 2 readers (TFRecordReader, read-up-to 128, DecodeRaw) --> shuffle_batch_join (enqueue-many)
//       --> dequeue-many(batch) inside the training step
//
//   input_pipeline [--epochs N] [--batch B] [--lr R] [--dir DIR] [--logdir DIR]
//
// First it writes the training set as 4 TFRecord shards into --dir (one
// record per image: the label byte, then the 784 pixel bytes), unless they
// are there already. Queue runners (one per reader, plus the filename
// producer's) keep the queues fed on their own threads while the main thread
// trains; a Coordinator stops them all at the end of input (the producer's
// num_epochs), on an error, or on Ctrl-C, and joins them with a grace period.
// Every 20th step (after warm-up) is traced: the share of step time spent in
// the step's dequeue (waiting for input plus assembling the batch) is printed
// per epoch. A fed pipeline keeps it small: the step does not wait.
// With --logdir, the graph, the loss at every step and the test accuracy
// after each epoch go to an events file there for TensorBoard.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/parsing_ops.hpp"
#include "actorflow/client/ops/reader_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/coordinator.hpp"
#include "actorflow/client/train/input_batching.hpp"
#include "actorflow/client/train/input_producers.hpp"
#include "actorflow/client/train/queue_runner.hpp"
#include "actorflow/client/train/summary_writer.hpp"
#include "actorflow/client/train/variables.hpp"
#include "actorflow/core/io/record_writer.hpp"
#include "examples/datasets.hpp"
#include "examples/mlp_model.hpp"

using namespace actorflow;
using namespace actorflow::examples;

namespace {

constexpr int kShards = 4, kReaders = 2, kPixels = 784;

struct Options {
  int epochs = 12;
  int batch = 100;
  double lr = 0.001;
  std::string dir = "input_pipeline_data";
  std::string logdir;  // empty: no TensorBoard events
};

std::atomic<bool> g_interrupted{false};
void OnSignal(int) { g_interrupted = true; }

int Fail(const Status& s) {
  std::fprintf(stderr, "input_pipeline: %s\n", s.ToString().c_str());
  return 1;
}

// The training images as TFRecord shards: record = label byte + 784 pixel bytes.
Status WriteShards(const Dataset& train, const std::vector<std::string>& paths) {
  const int64_t n = train.size();
  for (int k = 0; k < kShards; ++k) {
    std::unique_ptr<io::RecordWriter> writer;
    const std::string tmp = paths[static_cast<size_t>(k)] + ".tmp";
    AF_RETURN_IF_ERROR(io::RecordWriter::Create(tmp, {}, &writer));
    std::string record(1 + kPixels, '\0');
    for (int64_t i = k; i < n; i += kShards) {
      record[0] = static_cast<char>(train.labels.data<int32_t>()[i]);
      const float* px = train.images.data<float>() + i * kPixels;
      for (int p = 0; p < kPixels; ++p) record[static_cast<size_t>(1 + p)] =
          static_cast<char>(static_cast<uint8_t>(px[p] * 255.f + 0.5f));  // [0, 255]: a char may be signed
      AF_RETURN_IF_ERROR(writer->WriteRecord(record));
    }
    AF_RETURN_IF_ERROR(writer->Close());
    std::error_code ec;
    std::filesystem::rename(tmp, paths[static_cast<size_t>(k)], ec);  // whole shards only
    if (ec) return errors::Unavailable("cannot rename ", tmp, ": ", ec.message());
  }
  return Status::OK();
}

struct TrainGraph {
  proto::GraphDef def;
  std::vector<QueueRunnerDef> runners;
  std::string loss, train, accuracy, init, init_local, dequeue;
};

// Up to 128 decoded examples (a batch along dimension 0) from a reader of
// the files in `filenames`: one runner step reads and enqueues many records.
OutputList ReadMany(const Scope& s, Output filenames) {
  Output reader = ops::TFRecordReader(s);
  auto records = ops::ReaderReadUpTo(s, reader, filenames, ops::Const(s, int64_t{128}));
  Output bytes = ops::DecodeRaw(s, records.values, DT_UINT8);  // [n, 785]
  Output label = ops::Reshape(s, ops::Cast(s, ops::Slice(s, bytes, {0, 0}, {-1, 1}), DT_INT32), {-1});
  Output image = ops::Mul(s, ops::Cast(s, ops::Slice(s, bytes, {0, 1}, {-1, kPixels}), DT_FLOAT), 1.f / 255.f);
  return {image, label};
}

Status Build(const Options& o, const std::vector<std::string>& shards, TrainGraph* g) {
  Scope root = Scope::NewRootScope();
  root.SetGraphSeed(2024);
  ops::InputProducerOptions files;
  files.num_epochs = o.epochs;
  files.seed = 1;
  Tensor names(DT_STRING, TensorShape{static_cast<int64_t>(shards.size())});
  for (size_t i = 0; i < shards.size(); ++i) names.data<std::string>()[i] = shards[i];
  InputProducer producer = StringInputProducer(root.NewSubScope("input"), ops::Const(root, names), files);
  std::vector<OutputList> examples;
  for (int r = 0; r < kReaders; ++r) examples.push_back(ReadMany(root.NewSubScope("reader_" + std::to_string(r)), producer.queue));
  ops::ShuffleBatchOptions sb;
  sb.batch_size = o.batch;
  sb.min_after_dequeue = 5000;
  sb.capacity = sb.min_after_dequeue + 4 * o.batch;
  sb.seed = 2;
  sb.enqueue_many = true;
  sb.shapes = {PartialTensorShape(std::vector<int64_t>{kPixels}), PartialTensorShape::Scalar()};
  Batched batch = ShuffleBatchJoin(root, examples, sb);
  AF_RETURN_IF_ERROR(root.status());

  // The model reads the batch, or (for evaluation) fed images and labels.
  auto x = ops::PlaceholderWithDefault(root.WithOpName("images"), batch.tensors[0],
                                       PartialTensorShape(std::vector<int64_t>{-1, kPixels}));
  auto y = ops::PlaceholderWithDefault(root.WithOpName("labels"), batch.tensors[1],
                                       PartialTensorShape(std::vector<int64_t>{-1}));
  Mlp m = BuildMlp(root, x, y, o.lr, 60000 / o.batch);
  Operation init = GlobalVariablesInitializer(root);
  Operation init_local = LocalVariablesInitializer(root);
  AF_RETURN_IF_ERROR(root.ToGraphDef(&g->def));
  g->runners = root.GetQueueRunners();
  g->loss = m.loss.name();
  g->train = m.train.name();
  g->accuracy = m.accuracy.name();
  g->init = init.name();
  g->init_local = init_local.name();
  g->dequeue = batch.tensors[0].node()->name();
  return Status::OK();
}

int Usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--epochs N] [--batch B] [--lr R] [--dir DIR] [--logdir DIR]\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--epochs" && has) o.epochs = std::atoi(argv[++i]);
    else if (a == "--batch" && has) o.batch = std::atoi(argv[++i]);
    else if (a == "--lr" && has) o.lr = std::atof(argv[++i]);
    else if (a == "--dir" && has) o.dir = argv[++i];
    else if (a == "--logdir" && has) o.logdir = argv[++i];
    else return Usage(argv[0]);
  }
  if (o.epochs <= 0 || o.batch <= 0 || o.lr <= 0) return Usage(argv[0]);

  Dataset train, test;
  Status s = LoadFashionMnist(&train, &test);
  if (!s.ok()) return Fail(s);
  std::error_code ec;
  std::filesystem::create_directories(o.dir, ec);
  std::vector<std::string> shards;
  bool have_all = true;
  for (int k = 0; k < kShards; ++k) {
    shards.push_back(o.dir + "/train-" + std::to_string(k) + "-of-" + std::to_string(kShards) + ".tfrecord");
    have_all = have_all && std::filesystem::exists(shards.back());
  }
  if (!have_all) {
    std::printf("writing %lld training images as %d TFRecord shards in %s\n", static_cast<long long>(train.size()),
                kShards, o.dir.c_str());
    if (!(s = WriteShards(train, shards)).ok()) return Fail(s);
  }

  TrainGraph g;
  if (!(s = Build(o, shards, &g)).ok()) return Fail(s);
  Session session;
  if (!(s = session.Create(g.def)).ok()) return Fail(s);
  std::vector<Tensor> out;
  if (!(s = session.Run({}, {}, {g.init, g.init_local}, &out)).ok()) return Fail(s);
  std::unique_ptr<FileWriter> events;
  if (!o.logdir.empty()) {
    if (!(s = FileWriter::Create(o.logdir, {}, &events)).ok()) return Fail(s);
    if (!(s = events->AddGraph(g.def)).ok()) return Fail(s);
    std::printf("TensorBoard events: %s\n", events->filename().c_str());
  }

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  Coordinator coord;
  if (!(s = StartQueueRunners(&session, g.runners, &coord)).ok()) return Fail(s);
  // Ctrl-C: the watcher asks the coordinator to stop; runners cancel their
  // queues, and the training loop sees ShouldStop.
  std::thread watcher([&] {
    while (!coord.WaitForStop(std::chrono::milliseconds(100)))
      if (g_interrupted) coord.RequestStop();
  });
  std::printf("Fashion-MNIST from %d TFRecord shards, %d readers, shuffle_batch(%d); MLP 784-256-10, Adam(%.4g), "
              "%d epochs\n",
              kShards, kReaders, o.batch, o.lr, o.epochs);

  const int64_t steps_per_epoch = train.size() / o.batch;
  int64_t step = 0;
  double wait_us = 0, traced_us = 0, loss_avg = 0;
  auto t0 = std::chrono::steady_clock::now();
  Status end;
  while (!coord.ShouldStop()) {
    RunOptions ro;
    const bool traced = step % 20 == 0 && step >= 50;  // after warm-up: the queue has filled
    if (traced) ro.trace_level = TraceLevel::kSoftwareTrace;
    RunMetadata md;
    s = session.Run(ro, {}, {g.loss}, {g.train}, &out, &md);
    if (errors::IsOutOfRange(s)) break;  // num_epochs read: the input is over
    if (!s.ok()) {
      coord.ReportStatus(s);
      end = s;
      break;
    }
    ++step;
    if (events && !(s = events->AddScalar("loss", out[0].scalar<float>(), step)).ok()) {
      coord.ReportStatus(s);  // the runners and the watcher stop before the error is reported
      end = s;
      break;
    }
    loss_avg = step == 1 ? out[0].scalar<float>() : 0.98 * loss_avg + 0.02 * out[0].scalar<float>();
    if (traced) {
      int64_t first = INT64_MAX, last = 0;
      for (const auto& n : md.step_stats) {
        first = std::min(first, n.start_us);
        last = std::max(last, n.end_us);
        if (n.node == g.dequeue) wait_us += static_cast<double>(n.end_us - n.start_us);
      }
      traced_us += static_cast<double>(last - first);
    }
    if (step % steps_per_epoch == 0) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if ((s = session.Run({{"images", test.images}, {"labels", test.labels}}, {g.accuracy}, {}, &out)).ok() && events &&
          !(s = events->AddScalar("test_accuracy", out[0].scalar<float>(), step)).ok()) {
        coord.ReportStatus(s);
        end = s;
        break;
      }
      if (s.ok())
        std::printf("epoch %lld: loss %.4f, test accuracy %.2f%%, %.0f images/s, dequeue %.1f%% of step time\n",
                    static_cast<long long>(step / steps_per_epoch), loss_avg, 100 * out[0].scalar<float>(),
                    steps_per_epoch * o.batch / std::max(secs, 1e-9), traced_us > 0 ? 100 * wait_us / traced_us : 0.0);
      std::fflush(stdout);
      wait_us = traced_us = 0;
      t0 = std::chrono::steady_clock::now();
    }
  }
  coord.RequestStop();
  watcher.join();
  Status joined = coord.Join(std::chrono::seconds(10));
  if (!end.ok()) return Fail(end);
  if (!joined.ok()) return Fail(joined);
  if (!(s = session.Run({{"images", test.images}, {"labels", test.labels}}, {g.accuracy}, {}, &out)).ok())
    return Fail(s);
  std::printf("%s after %lld steps: test accuracy %.2f%%\n", g_interrupted ? "interrupted" : "input exhausted",
              static_cast<long long>(step), 100 * out[0].scalar<float>());
  std::fflush(stdout);  // before exit handlers run: a pipe or a file gets the line even if one of them fails
  return g_interrupted ? 130 : 0;
}
