#include "actorflow/client/train/input_producers.hpp"

#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/queue_ops.hpp"
#include "actorflow/client/ops/state_ops.hpp"

namespace actorflow {

InputProducer StringInputProducer(const Scope& scope, Input filenames, const ops::InputProducerOptions& o) {
  InputProducer p;
  if (o.num_epochs < 0) {
    scope.UpdateStatus(errors::InvalidArgument("string input producer: num_epochs must be >= 0 (0: forever), got ",
                                               o.num_epochs));
    return p;
  }
  if (o.capacity < 1) {
    scope.UpdateStatus(errors::InvalidArgument("string input producer: capacity must be >= 1, got ", o.capacity));
    return p;
  }
  ops::QueueOptions qo;
  qo.shapes = {PartialTensorShape::Scalar()};
  qo.capacity = o.capacity;
  qo.shared_name = o.shared_name;
  p.queue = ops::FIFOQueue(scope.has_op_name() ? scope : scope.WithOpName("input_producer"), {DT_STRING}, qo);
  if (!p.queue.valid()) return p;
  const std::string name = p.queue.node()->name();
  const Scope s = scope.GraphRoot().NewSubScope(name);

  Output list = s.AsOutput(filenames);
  if (!list.valid()) return p;
  const PartialTensorShape shape = s.InferredShape(list);
  if (list.type() != DT_STRING || (!shape.unknown_rank() && shape.dims() != 1) ||
      (!shape.unknown_rank() && shape.dim_size(0) == 0)) {
    scope.UpdateStatus(errors::InvalidArgument("string input producer '", name,
                                               "' needs a non-empty vector of filenames, got ",
                                               DataTypeString(list.type()), " ", shape.DebugString()));
    return p;
  }
  // As TensorFlow: a list fed empty at run time fails here, not in a silent loop.
  Output non_empty = ops::Greater(s, ops::Size(s, list), 0);
  Operation check = ops::Assert(s, non_empty, {ops::Const(s, std::string("string_input_producer requires a "
                                                                            "non-null input tensor"))});
  list = ops::Identity(s.WithControlDependencies({check}), list);
  if (o.shuffle) list = ops::RandomShuffle(s, list, o.seed);
  if (o.num_epochs > 0) {
    const Scope limit = s.NewSubScope("limit_epochs");
    p.epochs = NewLocalVariable(limit, "epochs", TensorShape{}, DT_INT64, init::Zeros());
    if (!p.epochs.valid()) return p;
    Output counter = ops::CountUpTo(limit, p.epochs.ref, o.num_epochs);
    list = ops::Identity(s.WithOpName("limit_epochs").WithControlDependencies({counter.op()}), list);
  }
  p.enqueue = ops::QueueEnqueueMany(s.WithOpName("input_producer_EnqueueMany"), p.queue, {list});
  p.close = ops::QueueClose(s.WithOpName("input_producer_Close"), p.queue);
  Operation cancel = ops::QueueClose(s.WithOpName("input_producer_Close_1"), p.queue, true);
  if (s.ok() && p.enqueue.node() && p.close.node() && cancel.node())
    s.AddQueueRunner(
        QueueRunnerDef{p.queue.node()->name(), {p.enqueue.node()->name()}, p.close.node()->name(), cancel.node()->name()});
  return p;
}

}  // namespace actorflow
