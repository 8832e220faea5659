// Input producers (TensorFlow's tf.train.string_input_producer): a FIFO queue
// of filenames for reader ops (client/ops/reader_ops.hpp), filled an epoch at a
// time by one enqueue-many op.
//
//   Scope root = Scope::NewRootScope();
//   ops::InputProducerOptions o;
//   o.num_epochs = 2;
//   o.seed = 7;
//   InputProducer files = StringInputProducer(root, {"a.tfrecord", "b.tfrecord"}, o);
//   auto kv = ops::ReaderRead(root, ops::TFRecordReader(root), files.queue);
//   Operation init = LocalVariablesInitializer(root);   // the epoch counter
//   // run init; run files.enqueue until it fails with OutOfRange (a
//   // QueueRunner's loop), then files.close; reads then drain the queue and
//   // end with OutOfRange.
//
// Each run of `enqueue` adds the whole list, reshuffled when `shuffle` (a new
// permutation each run, the same sequence of them for a fixed seed). With
// num_epochs > 0 a local epoch counter (NewLocalVariable + CountUpTo) lets
// `enqueue` run num_epochs times; after that it fails with OutOfRange and
// enqueues nothing.
#pragma once

#include <string>

#include "actorflow/client/builder.hpp"
#include "actorflow/client/train/variables.hpp"

namespace actorflow {

namespace ops {
struct InputProducerOptions {
  int64_t num_epochs = 0;  // 0: forever
  bool shuffle = true;
  int64_t seed = -1;       // the shuffle's op seed (-1: none; with the graph seed as TensorFlow's)
  int64_t capacity = 32;   // of the queue
  std::string shared_name;  // of the queue
};
}  // namespace ops

struct InputProducer {
  Output queue;        // FIFOQueueV2 of string scalars ("input_producer" unless the scope names it)
  Operation enqueue;   // enqueue-many of one epoch
  Operation close;     // closes the queue (what a QueueRunner does at OutOfRange)
  Variable epochs;     // the local epoch counter; valid only when num_epochs > 0
};

/// A filename queue fed from `filenames` (a non-empty string vector); the
/// QueueRunnerDef that feeds it is added to the scope (Scope::GetQueueRunners). Its
/// other nodes are under the queue's name, in the graph's root scope.
/// InvalidArgument (recorded in the scope) for a negative num_epochs, a
/// capacity below 1, or filenames known not to be a non-empty string vector;
/// an empty list fed at run time fails the enqueue (an Assert).
InputProducer StringInputProducer(const Scope& scope, Input filenames, const ops::InputProducerOptions& o = {});

}  // namespace actorflow
