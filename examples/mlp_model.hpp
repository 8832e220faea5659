// The examples' MLP 784-256-10 for Fashion-MNIST: layers, loss, accuracy and
// an Adam train op whose learning rate decays by 0.8 each epoch (later epochs
// settle instead of bouncing around the minimum).
#pragma once

#include <memory>

#include "actorflow/client/builder.hpp"
#include "actorflow/client/train/optimizers.hpp"
#include "actorflow/client/train/variables.hpp"

namespace actorflow {
namespace examples {

struct Mlp {
  Output loss;      // mean cross-entropy
  Output accuracy;  // fraction of argmax(logits) == labels
  Operation train;  // one Adam step, counting the global step
  Variable step;    // the global step
};

/// The MLP on `images` (float [n, 784]) and `labels` (int32 [n]);
/// `steps_per_epoch` sets the learning-rate decay.
Mlp BuildMlp(const Scope& root, Output images, Output labels, double learning_rate, int64_t steps_per_epoch);

/// The same layers, loss, accuracy and global step, without a train op: for
/// a caller that wraps the optimizer (SyncReplicasOptimizer). `w1_parts` > 1
/// cuts the hidden layer's weights (784x256, nearly all the model's bytes)
/// into that many parts along its rows (client/train/partitioned_variables.hpp),
/// which a ReplicaDeviceSetter spreads over the ps tasks.
Mlp BuildMlpLayers(const Scope& root, Output images, Output labels, int w1_parts = 1);
/// The examples' Adam: `learning_rate` decayed by 0.8 every `steps_per_epoch` global steps,
/// times `scale` (a float scalar) when given.
std::unique_ptr<Optimizer> MlpOptimizer(const Scope& root, double learning_rate, const Variable& step,
                                        int64_t steps_per_epoch, const Output* scale = nullptr);

}  // namespace examples
}  // namespace actorflow
