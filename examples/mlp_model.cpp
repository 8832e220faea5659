#include "examples/mlp_model.hpp"

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/partitioned_variables.hpp"

namespace actorflow {
namespace examples {

Mlp BuildMlp(const Scope& root, Output x, Output y, double learning_rate, int64_t steps_per_epoch) {
  Mlp m = BuildMlpLayers(root, x, y);
  std::unique_ptr<Optimizer> adam = MlpOptimizer(root, learning_rate, m.step, steps_per_epoch);
  m.train = adam->Minimize(root.WithOpName("train"), m.loss, &m.step);
  return m;
}

std::unique_ptr<Optimizer> MlpOptimizer(const Scope& root, double learning_rate, const Variable& step,
                                        int64_t steps_per_epoch, const Output* scale) {
  auto adam = std::make_unique<AdamOptimizer>(learning_rate);
  Output rate = ExponentialDecay(root, learning_rate, step, steps_per_epoch, 0.8, /*staircase=*/true);
  adam->SetLearningRate(scale ? ops::Mul(root.WithOpName("scaled_learning_rate"), rate, *scale) : rate);
  return adam;
}

Mlp BuildMlpLayers(const Scope& root, Output x, Output y, int w1_parts) {
  Mlp m;
  Scope l1 = root.NewSubScope("hidden");
  const Output w1 = w1_parts > 1 ? NewPartitionedVariable(l1, "weights", {784, 256}, DT_FLOAT, init::GlorotUniform(),
                                                          FixedSizePartitioner(w1_parts))
                                       .value
                                 : NewVariable(l1, "weights", {784, 256}, DT_FLOAT, init::GlorotUniform()).value;
  Variable b1 = NewVariable(l1, "biases", {256}, DT_FLOAT, init::Zeros());
  auto h = ops::Relu(l1, ops::BiasAdd(l1, ops::MatMul(l1, x, w1), b1.value));
  Scope l2 = root.NewSubScope("softmax");
  Variable w2 = NewVariable(l2, "weights", {256, 10}, DT_FLOAT, init::GlorotUniform());
  Variable b2 = NewVariable(l2, "biases", {10}, DT_FLOAT, init::Zeros());
  auto logits = ops::BiasAdd(l2.WithOpName("logits"), ops::MatMul(l2, h, w2.value), b2.value);
  m.loss = ops::Mean(root.WithOpName("loss"), ops::SparseSoftmaxCrossEntropyWithLogits(root, logits, y).loss, 0);
  auto correct = ops::Equal(root, ops::ArgMax(root, logits, 1, DT_INT32), y);
  m.accuracy = ops::Mean(root.WithOpName("accuracy"), ops::Cast(root, correct, DT_FLOAT), 0);
  m.step = GetOrCreateGlobalStep(root);
  return m;
}

}  // namespace examples
}  // namespace actorflow
