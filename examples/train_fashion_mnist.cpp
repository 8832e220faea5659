// train_fashion_mnist: the MLP 784-256-10 on Fashion-MNIST, with checkpoints.
//
//   train_fashion_mnist [--epochs N] [--batch B] [--lr R] [--dir DIR] [--fresh] [--save-every STEPS]
//                       [--logdir DIR]
//
// Reads the IDX files Debian's dataset-fashion-mnist installs (setup.sh does),
// trains with Adam through Session::Run, and saves a checkpoint every
// --save-every steps, at the end of every epoch and on Ctrl-C. Started again
// with the same --dir, it restores the latest checkpoint (weights, Adam's
// moments, the global step) and goes on from there; --fresh starts over.
// Prints progress while it trains, and the test accuracy after each epoch.
// With --logdir, the graph, the training loss at every step and the test
// accuracy after each epoch go to an events file there for TensorBoard.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/saver.hpp"
#include "actorflow/client/train/summary_writer.hpp"
#include "actorflow/client/train/variables.hpp"
#include "examples/datasets.hpp"
#include "examples/mlp_model.hpp"

using namespace actorflow;
using namespace actorflow::examples;

namespace {

struct Options {
  int epochs = 12;
  int batch = 100;
  double lr = 0.001;
  int save_every = 2000;
  bool fresh = false;
  std::string dir;
  std::string logdir;  // empty: no TensorBoard events
};

std::atomic<bool> g_interrupted{false};
void OnSignal(int) { g_interrupted = true; }

struct TrainGraph {
  proto::GraphDef def;
  std::string loss, accuracy, train, init, step;
};

Status Build(const Options& o, TrainGraph* g, std::unique_ptr<Saver>* saver) {
  Scope root = Scope::NewRootScope();
  root.SetGraphSeed(2024);
  auto x = ops::Placeholder(root.WithOpName("images"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{-1, 784}));
  auto y = ops::Placeholder(root.WithOpName("labels"), DT_INT32, PartialTensorShape(std::vector<int64_t>{-1}));
  Mlp m = BuildMlp(root, x, y, o.lr, 60000 / o.batch);
  Operation init = GlobalVariablesInitializer(root);
  SaverOptions so;
  so.dir = o.dir;
  so.basename = "model";
  so.max_to_keep = 3;
  so.save_every_steps = o.save_every;
  *saver = std::make_unique<Saver>(root, std::vector<Variable>{}, so);
  AF_RETURN_IF_ERROR(root.ToGraphDef(&g->def));
  g->loss = m.loss.name();
  g->accuracy = m.accuracy.name();
  g->train = m.train.name();
  g->init = init.name();
  g->step = m.step.value.name();
  return Status::OK();
}

// One line of progress: rewritten in place on a terminal, printed every few
// seconds otherwise.
class Progress {
 public:
  Progress(bool tty, int batch) : tty_(tty), batch_(batch) {}
  void Update(int epoch, int epochs, int64_t done, int64_t total, int64_t step, double loss, double rate) {
    const auto now = std::chrono::steady_clock::now();
    if (!tty_ && now - last_ < std::chrono::seconds(5) && done < total) return;
    last_ = now;
    const int width = 24;
    const int filled = static_cast<int>(static_cast<double>(width) * static_cast<double>(done) / static_cast<double>(total));
    const double eta = rate > 0 ? static_cast<double>((total - done) * batch_) / rate : 0;
    std::printf("%sepoch %d/%d [%.*s%*s] %3d%%  step %lld  loss %.4f  %6.0f examples/s  epoch ETA %3.0fs%s",
                tty_ ? "\r" : "", epoch, epochs, filled, "########################", width - filled, "",
                static_cast<int>(100 * done / total), static_cast<long long>(step), loss, rate, eta,
                tty_ ? "" : "\n");
    std::fflush(stdout);
  }
  void EndLine() {
    if (tty_) std::printf("\n");
  }

 private:
  bool tty_;
  int batch_;
  std::chrono::steady_clock::time_point last_{};
};

int Fail(const Status& s) {
  std::fprintf(stderr, "train_fashion_mnist: %s\n", s.ToString().c_str());
  return 1;
}

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--epochs N] [--batch B] [--lr R] [--dir DIR] [--fresh] [--save-every STEPS] [--logdir DIR]\n"
               "  --dir: checkpoints (default: $TMPDIR/actorflow-fashion-mnist); restarted with the same\n"
               "         directory, training resumes from the latest checkpoint\n",
               argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const char* tmp = std::getenv("TMPDIR");
  o.dir = std::string(tmp ? tmp : "/tmp") + "/actorflow-fashion-mnist";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--epochs" && has) o.epochs = std::atoi(argv[++i]);
    else if (a == "--batch" && has) o.batch = std::atoi(argv[++i]);
    else if (a == "--lr" && has) o.lr = std::atof(argv[++i]);
    else if (a == "--dir" && has) o.dir = argv[++i];
    else if (a == "--save-every" && has) o.save_every = std::atoi(argv[++i]);
    else if (a == "--logdir" && has) o.logdir = argv[++i];
    else if (a == "--fresh") o.fresh = true;
    else return Usage(argv[0]);
  }
  if (o.epochs <= 0 || o.batch <= 0 || o.lr <= 0 || o.save_every <= 0) return Usage(argv[0]);

  Dataset train, test;
  Status s = LoadFashionMnist(&train, &test);
  if (!s.ok()) {
    std::fprintf(stderr, "train_fashion_mnist: %s\n", s.ToString().c_str());
    return 1;
  }
  std::error_code ec;
  if (o.fresh) std::filesystem::remove_all(o.dir, ec);
  std::filesystem::create_directories(o.dir, ec);
  if (ec) return Fail(errors::Unavailable("cannot create ", o.dir, ": ", ec.message()));

  TrainGraph g;
  std::unique_ptr<Saver> saver;
  s = Build(o, &g, &saver);
  if (!s.ok()) return Fail(s);
  Session session;
  if (!(s = session.Create(g.def)).ok()) return Fail(s);

  std::vector<Tensor> out;
  bool restored = false;
  std::string from;
  if (!(s = saver->RestoreLatest(&session, &restored, &from)).ok()) return Fail(s);
  if (!restored && !(s = session.Run({}, {}, {g.init}, &out)).ok()) return Fail(s);
  if (!(s = session.Run({}, {g.step}, {}, &out)).ok()) return Fail(s);
  int64_t step = out[0].scalar<int64_t>();
  const int64_t steps_per_epoch = train.size() / o.batch;
  std::printf("Fashion-MNIST: %lld training and %lld test images; MLP 784-256-10, Adam(%.4g), batch %d\n",
              static_cast<long long>(train.size()), static_cast<long long>(test.size()), o.lr, o.batch);
  if (restored)
    std::printf("resumed from %s (step %lld, epoch %lld)\n", from.c_str(), static_cast<long long>(step),
                static_cast<long long>(step / steps_per_epoch + 1));
  else
    std::printf("checkpoints: %s (restart with the same --dir to resume; --fresh to start over)\n", o.dir.c_str());

  std::unique_ptr<FileWriter> events;
  if (!o.logdir.empty()) {
    if (!(s = FileWriter::Create(o.logdir, {}, &events)).ok()) return Fail(s);
    if (!(s = events->AddGraph(g.def, step)).ok()) return Fail(s);
    std::printf("TensorBoard events: %s\n", events->filename().c_str());
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  Progress progress(isatty(STDOUT_FILENO) != 0, o.batch);
  std::vector<int64_t> order(static_cast<size_t>(train.size()));
  double accuracy = 0;
  for (int epoch = static_cast<int>(step / steps_per_epoch); epoch < o.epochs && !g_interrupted; ++epoch) {
    // Each epoch's order depends only on the epoch: a resumed run sees the
    // batches it would have seen.
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(1000 + static_cast<uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), rng);
    const auto t0 = std::chrono::steady_clock::now();
    int64_t first = step % steps_per_epoch, done = 0;
    double loss_avg = 0;
    for (int64_t b = first; b < steps_per_epoch && !g_interrupted; ++b) {
      Tensor x, y;
      Gather(train, order, b * o.batch, o.batch, &x, &y);
      if (!(s = session.Run({{"images", x}, {"labels", y}}, {g.loss}, {g.train}, &out)).ok()) return Fail(s);
      ++step;
      ++done;
      if (events && !(s = events->AddScalar("loss", out[0].scalar<float>(), step)).ok()) return Fail(s);
      loss_avg = done == 1 ? out[0].scalar<float>() : 0.98 * loss_avg + 0.02 * out[0].scalar<float>();
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      progress.Update(epoch + 1, o.epochs, b + 1, steps_per_epoch, step, loss_avg,
                      static_cast<double>(done * o.batch) / std::max(secs, 1e-9));
      bool saved = false;
      if (!(s = saver->MaybeSave(&session, step, &saved)).ok()) return Fail(s);
    }
    progress.EndLine();
    std::string path;
    if (!(s = saver->Save(&session, step, &path)).ok()) return Fail(s);
    if (g_interrupted) {
      std::printf("interrupted: saved %s; run again with --dir %s to resume\n", path.c_str(), o.dir.c_str());
      return 130;
    }
    if (!(s = session.Run({{"images", test.images}, {"labels", test.labels}}, {g.accuracy}, {}, &out)).ok())
      return Fail(s);
    accuracy = out[0].scalar<float>();
    if (events && !(s = events->AddScalar("test_accuracy", accuracy, step)).ok()) return Fail(s);
    if (events && !(s = events->Flush()).ok()) return Fail(s);
    std::printf("epoch %d/%d done: test accuracy %.2f%%, saved %s\n", epoch + 1, o.epochs, 100 * accuracy,
                path.c_str());
  }
  if (accuracy == 0) {  // nothing left to train: report the restored model
    if (!(s = session.Run({{"images", test.images}, {"labels", test.labels}}, {g.accuracy}, {}, &out)).ok())
      return Fail(s);
    accuracy = out[0].scalar<float>();
  }
  std::printf("test accuracy after %lld steps: %.2f%%\n", static_cast<long long>(step), 100 * accuracy);
  return 0;
}
