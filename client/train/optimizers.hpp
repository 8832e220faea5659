// Optimizers for graph builders (TensorFlow's tf.train optimizers):
// Minimize(loss) adds the gradient nodes of the loss with respect to the
// trainable variables and one update op per variable, and returns the train
// op that runs them all (and increments the global step when given one).
//
//   GradientDescentOptimizer sgd(0.1);
//   Variable step = GetOrCreateGlobalStep(root);
//   Operation train = sgd.Minimize(root, loss, &step);
//   ... session.Run({{"x", batch}, {"y", labels}}, {loss.name()}, {train.name()}, &out);
//
// Slots (momentum accumulators, Adam's moments) are non-trainable variables
// named after their variable ("w/Momentum", "w/Adam", "w/Adam_1"), in the
// global collection, so GlobalVariablesInitializer and savers cover them.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/client/builder.hpp"
#include "actorflow/client/train/variables.hpp"

namespace actorflow {

class Optimizer {
 public:
  using GradAndVar = std::pair<Output, Variable>;

  explicit Optimizer(std::string name) : name_(std::move(name)) {}
  virtual ~Optimizer() = default;

  /// ComputeGradients then ApplyGradients. An empty `var_list` means every
  /// trainable variable of the scope's graph.
  Operation Minimize(const Scope& scope, const Output& loss, const Variable* global_step = nullptr,
                     std::vector<Variable> var_list = {});
  /// d loss / d var for each variable (gradient nodes under "gradients/").
  std::vector<GradAndVar> ComputeGradients(const Scope& scope, const Output& loss, std::vector<Variable> var_list = {});
  /// One update per (gradient, variable) whose gradient is valid; the train
  /// op depends on all of them.
  Operation ApplyGradients(const Scope& scope, const std::vector<GradAndVar>& grads_and_vars,
                           const Variable* global_step = nullptr);

  const std::string& name() const { return name_; }

  /// Uses a scalar tensor as the learning rate instead of the constant given
  /// at construction: a schedule computed in the graph (ExponentialDecay) or
  /// a placeholder fed each step. Call before Minimize/ApplyGradients.
  void SetLearningRate(const Output& learning_rate) { lr_tensor_ = learning_rate; }

 protected:
  /// The update op of one variable.
  virtual Output ApplyDense(const Scope& s, const Output& grad, const Variable& var) = 0;
  /// Ops to run after every update (Adam's beta powers); returned ops join
  /// the train op.
  virtual std::vector<Operation> Finish(const Scope& s, const std::vector<Operation>& updates);
  /// Forgets nodes cached for the graph of the last ApplyGradients.
  virtual void ClearState() {}

  /// A slot of `var` named "<var>/<name_><suffix>", filled with `initial`.
  Variable Slot(const Scope& s, const Variable& var, const std::string& suffix, double initial);
  /// A hyperparameter as a constant of `dtype`, one node per (name, dtype);
  /// "learning_rate" is the tensor of SetLearningRate when there is one.
  Output Hyper(const Scope& s, const std::string& name, double value, DataType dtype);

 private:
  std::string name_;
  Output lr_tensor_;
  std::map<std::pair<std::string, DataType>, Output> hypers_;
};

class GradientDescentOptimizer : public Optimizer {
 public:
  explicit GradientDescentOptimizer(double learning_rate) : Optimizer("GradientDescent"), lr_(learning_rate) {}

 protected:
  Output ApplyDense(const Scope& s, const Output& grad, const Variable& var) override;

 private:
  double lr_;
};

class MomentumOptimizer : public Optimizer {
 public:
  MomentumOptimizer(double learning_rate, double momentum, bool use_nesterov = false)
      : Optimizer("Momentum"), lr_(learning_rate), momentum_(momentum), nesterov_(use_nesterov) {}

 protected:
  Output ApplyDense(const Scope& s, const Output& grad, const Variable& var) override;

 private:
  double lr_, momentum_;
  bool nesterov_;
};

class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(double learning_rate = 0.001, double beta1 = 0.9, double beta2 = 0.999,
                         double epsilon = 1e-8)
      : Optimizer("Adam"), lr_(learning_rate), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {}

 protected:
  Output ApplyDense(const Scope& s, const Output& grad, const Variable& var) override;
  std::vector<Operation> Finish(const Scope& s, const std::vector<Operation>& updates) override;
  void ClearState() override { powers_.clear(); }

 private:
  // beta1^t and beta2^t, one pair per dtype of the variables.
  std::pair<Variable, Variable> Powers(const Scope& s, const Variable& first);
  double lr_, beta1_, beta2_, epsilon_;
  std::map<DataType, std::pair<Variable, Variable>> powers_;
};

class AdagradOptimizer : public Optimizer {
 public:
  explicit AdagradOptimizer(double learning_rate, double initial_accumulator_value = 0.1)
      : Optimizer("Adagrad"), lr_(learning_rate), initial_(initial_accumulator_value) {}

 protected:
  Output ApplyDense(const Scope& s, const Output& grad, const Variable& var) override;

 private:
  double lr_, initial_;
};

class RMSPropOptimizer : public Optimizer {
 public:
  explicit RMSPropOptimizer(double learning_rate, double decay = 0.9, double momentum = 0.0, double epsilon = 1e-10)
      : Optimizer("RMSProp"), lr_(learning_rate), decay_(decay), momentum_(momentum), epsilon_(epsilon) {}

 protected:
  Output ApplyDense(const Scope& s, const Output& grad, const Variable& var) override;

 private:
  double lr_, decay_, momentum_, epsilon_;
};

/// learning_rate * decay_rate ^ (global_step / decay_steps), the division
/// rounded down when `staircase` (TensorFlow's tf.train.exponential_decay).
Output ExponentialDecay(const Scope& scope, double learning_rate, const Variable& global_step, int64_t decay_steps,
                        double decay_rate, bool staircase = false);

}  // namespace actorflow
