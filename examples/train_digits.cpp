// train_digits: softmax regression and a two-layer MLP on the bundled 8x8
// handwritten digits (examples/data/digits.csv.gz), trained through
// Session::Run with gradients added to the graph and updates applied by the
// container actor that holds the variables.
//
//   train_digits [--steps N] [--batch B] [--log-every K] [--seed S] [--logdir DIR]
//
// With --logdir, each model writes its graph, its training loss at every step
// and its held-out accuracy to DIR/<model> for TensorBoard
// (`tensorboard --logdir DIR`).
//
// A fixed shuffled split (80% train, 20% held out) and fixed seeds: the same
// run gives the same numbers. Prints a progress line every K steps and the
// held-out accuracy of each model at the end.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/session.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/summary_writer.hpp"
#include "actorflow/client/train/variables.hpp"
#include "examples/datasets.hpp"

using namespace actorflow;
using namespace actorflow::examples;

namespace {

struct Options {
  int steps = 1500;
  int batch = 32;
  int log_every = 250;
  uint64_t seed = 1;
  std::string logdir;  // empty: no TensorBoard events
};

struct Model {
  std::string name, run;  // run: its TensorBoard run's directory name
  proto::GraphDef graph;
  std::string x, y, loss, accuracy, train, init;
};

// logits = x W + b (softmax regression), or a hidden ReLU layer first (MLP).
Status Build(bool mlp, int features, uint64_t seed, Model* m) {
  Scope graph = Scope::NewRootScope();
  graph.SetGraphSeed(static_cast<int64_t>(seed));
  // Variables are shared by name across the process's sessions: each model
  // keeps its own under its own name scope.
  Scope root = graph.NewSubScope(mlp ? "mlp" : "softmax_regression");
  auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, PartialTensorShape(std::vector<int64_t>{-1, features}));
  auto y = ops::Placeholder(root.WithOpName("y"), DT_INT32, PartialTensorShape(std::vector<int64_t>{-1}));
  Output logits;
  if (mlp) {
    Scope l1 = root.NewSubScope("hidden");
    Variable w1 = NewVariable(l1, "weights", {features, 128}, DT_FLOAT, init::GlorotUniform());
    Variable b1 = NewVariable(l1, "biases", {128}, DT_FLOAT, init::Zeros());
    auto h = ops::Relu(l1, ops::BiasAdd(l1, ops::MatMul(l1, x, w1.value), b1.value));
    Scope l2 = root.NewSubScope("softmax");
    Variable w2 = NewVariable(l2, "weights", {128, 10}, DT_FLOAT, init::GlorotUniform());
    Variable b2 = NewVariable(l2, "biases", {10}, DT_FLOAT, init::Zeros());
    logits = ops::BiasAdd(l2.WithOpName("logits"), ops::MatMul(l2, h, w2.value), b2.value);
  } else {
    Scope l = root.NewSubScope("softmax");
    Variable w = NewVariable(l, "weights", {features, 10}, DT_FLOAT, init::Zeros());
    Variable b = NewVariable(l, "biases", {10}, DT_FLOAT, init::Zeros());
    logits = ops::BiasAdd(l.WithOpName("logits"), ops::MatMul(l, x, w.value), b.value);
  }
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(root, logits, y);
  auto loss = ops::Mean(root.WithOpName("loss"), xent.loss, 0);
  auto correct = ops::Equal(root, ops::ArgMax(root, logits, 1, DT_INT32), y);
  auto accuracy = ops::Mean(root.WithOpName("accuracy"), ops::Cast(root, correct, DT_FLOAT), 0);
  Operation train;
  if (mlp) {
    AdamOptimizer adam(0.01);
    train = adam.Minimize(root.WithOpName("train"), loss);
  } else {
    GradientDescentOptimizer sgd(0.5);
    train = sgd.Minimize(root.WithOpName("train"), loss);
  }
  Operation init = GlobalVariablesInitializer(root);
  AF_RETURN_IF_ERROR(graph.ToGraphDef(&m->graph));
  m->name = mlp ? "MLP 64-128-10" : "softmax regression 64-10";
  m->run = mlp ? "mlp" : "softmax_regression";
  m->x = x.name();
  m->y = y.name();
  m->loss = loss.name();
  m->accuracy = accuracy.name();
  m->train = train.name();
  m->init = init.name();
  return Status::OK();
}

Status Train(const Model& m, const Dataset& train, const Dataset& test, const Options& o, double* accuracy) {
  Session session;
  AF_RETURN_IF_ERROR(session.Create(m.graph));
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(session.Run({}, {}, {m.init}, &out));
  std::unique_ptr<FileWriter> events;
  if (!o.logdir.empty()) {
    AF_RETURN_IF_ERROR(FileWriter::Create(o.logdir + "/" + m.run, {}, &events));
    AF_RETURN_IF_ERROR(events->AddGraph(m.graph));
  }
  std::printf("\n%s: %lld training examples, batch %d, %d steps\n", m.name.c_str(),
              static_cast<long long>(train.size()), o.batch, o.steps);
  std::vector<int64_t> order(static_cast<size_t>(train.size()));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(o.seed);
  int64_t pos = train.size();  // reshuffle at the start of each epoch
  auto t0 = std::chrono::steady_clock::now();
  double loss_sum = 0;
  int loss_n = 0;
  for (int step = 1; step <= o.steps; ++step) {
    if (pos + o.batch > train.size()) {
      std::shuffle(order.begin(), order.end(), rng);
      pos = 0;
    }
    Tensor x, y;
    Gather(train, order, pos, o.batch, &x, &y);
    pos += o.batch;
    AF_RETURN_IF_ERROR(session.Run({{m.x, x}, {m.y, y}}, {m.loss}, {m.train}, &out));
    loss_sum += out[0].scalar<float>();
    ++loss_n;
    if (events) AF_RETURN_IF_ERROR(events->AddScalar("loss", out[0].scalar<float>(), step));
    if (step % o.log_every == 0 || step == o.steps) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("  step %5d  loss %.4f  %8.0f examples/s\n", step, loss_sum / loss_n,
                  static_cast<double>(step) * o.batch / secs);
      std::fflush(stdout);
      loss_sum = 0;
      loss_n = 0;
    }
  }
  AF_RETURN_IF_ERROR(session.Run({{m.x, test.images}, {m.y, test.labels}}, {m.accuracy}, {}, &out));
  *accuracy = out[0].scalar<float>();
  if (events) {
    AF_RETURN_IF_ERROR(events->AddScalar("heldout_accuracy", *accuracy, o.steps));
    AF_RETURN_IF_ERROR(events->Close());
    std::printf("  TensorBoard events: %s\n", events->filename().c_str());
  }
  std::printf("  held-out accuracy: %.2f%% (%lld examples)\n", 100.0 * *accuracy,
              static_cast<long long>(test.size()));
  return Status::OK();
}

int Usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--steps N] [--batch B] [--log-every K] [--seed S] [--logdir DIR]\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    auto next = [&](int* v) { return i + 1 < argc && (*v = std::atoi(argv[++i])) > 0; };
    int v = 0;
    if (!std::strcmp(argv[i], "--steps") && next(&v)) o.steps = v;
    else if (!std::strcmp(argv[i], "--batch") && next(&v)) o.batch = v;
    else if (!std::strcmp(argv[i], "--log-every") && next(&v)) o.log_every = v;
    else if (!std::strcmp(argv[i], "--seed") && next(&v)) o.seed = static_cast<uint64_t>(v);
    else if (!std::strcmp(argv[i], "--logdir") && i + 1 < argc) o.logdir = argv[++i];
    else return Usage(argv[0]);
  }
  Dataset all, train, test;
  Status s = LoadDigitsCsv(DataDir() + "/digits.csv.gz", &all);
  if (!s.ok()) {
    std::fprintf(stderr, "train_digits: %s\n", s.ToString().c_str());
    return 1;
  }
  Split(all, 0.2, o.seed, &train, &test);
  if (o.batch > train.size()) o.batch = static_cast<int>(train.size());
  double acc[2] = {0, 0};
  for (int mlp = 0; mlp < 2; ++mlp) {
    Model m;
    s = Build(mlp == 1, static_cast<int>(all.features()), o.seed, &m);
    if (s.ok()) s = Train(m, train, test, o, &acc[mlp]);
    if (!s.ok()) {
      std::fprintf(stderr, "train_digits: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  std::printf("\nheld-out accuracy: softmax regression %.2f%%, MLP %.2f%%\n", 100 * acc[0], 100 * acc[1]);
  return 0;
}
