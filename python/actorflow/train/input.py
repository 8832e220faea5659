"""TensorFlow 1.x's queue-based input pipelines: input producers (filenames, ranges, slices, for some epochs)
and batching (batch, shuffle_batch, *_join), each a queue fed by QueueRunners (start_queue_runners)."""

from actorflow import array_ops
from actorflow import data_flow_ops
from actorflow import dtypes
from actorflow import framework
from actorflow import math_ops
from actorflow import random_ops
from actorflow import variables
from actorflow.framework import GraphKeys, Tensor, convert_to_tensor
from actorflow.tensor_shape import TensorShape
from actorflow.train.queue_runner import QueueRunner, add_queue_runner

__all__ = ["limit_epochs", "input_producer", "string_input_producer", "range_input_producer",
           "slice_input_producer", "batch", "shuffle_batch", "batch_join", "shuffle_batch_join", "maybe_batch"]


def limit_epochs(tensor, num_epochs=None, name=None):
    """`tensor`, which fails with OutOfRangeError after being produced `num_epochs` times."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError("num_epochs must be > 0 not %d." % num_epochs)
    with framework.name_scope(name, "limit_epochs"):
        epochs = variables.Variable(array_ops.constant(0, dtype=dtypes.int64), name="epochs", trainable=False,
                                    collections=[GraphKeys.LOCAL_VARIABLES])
        counter = epochs.count_up_to(num_epochs)
        with framework.control_dependencies([counter]):
            return array_ops.identity(tensor)


def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True, seed=None, capacity=32,
                   shared_name=None, summary_name=None, name=None, cancel_op=None):
    with framework.name_scope(name, "input_producer"):
        input_tensor = convert_to_tensor(input_tensor, name="input")
        element_shape = input_tensor.shape[1:].merge_with(TensorShape(element_shape)) if element_shape is not None \
            else input_tensor.shape[1:]
        if shuffle:
            input_tensor = random_ops.random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = data_flow_ops.FIFOQueue(capacity=capacity, dtypes=[input_tensor.dtype.base_dtype],
                                    shapes=[element_shape] if element_shape.is_fully_defined() else None,
                                    shared_name=shared_name)
        enq = q.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(q, [enq], cancel_op=cancel_op))
        return q


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None,
                          name=None, cancel_op=None):
    """A queue of the file names, shuffled each epoch (shuffle=True), for `num_epochs` epochs (None: forever)."""
    if not isinstance(string_tensor, Tensor) and not string_tensor:
        raise ValueError("Expected a non-empty list of file names")
    with framework.name_scope(name, "input_producer", [string_tensor]) as scope:
        return input_producer(convert_to_tensor(string_tensor, dtype=dtypes.string), [], num_epochs, shuffle, seed,
                              capacity, shared_name, "fraction_of_%d_full" % capacity, scope, cancel_op)


def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None, name=None):
    with framework.name_scope(name, "input_producer") as scope:
        return input_producer(math_ops.range(limit), [], num_epochs, shuffle, seed, capacity, shared_name,
                              name=scope)


def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None,
                         name=None):
    """One slice (row) of each tensor at a time, the same row of each."""
    with framework.name_scope(name, "input_producer") as scope:
        tensor_list = [convert_to_tensor(t) for t in tensor_list]
        n = tensor_list[0].shape[0].value
        size = n if n is not None else array_ops.shape(tensor_list[0])[0]
        q = range_input_producer(size, num_epochs, shuffle, seed, capacity, shared_name, name=scope)
        index = q.dequeue()
        return [array_ops.gather(t, index) for t in tensor_list]


def _flatten_input(tensors):
    if isinstance(tensors, dict):
        keys = sorted(tensors)
        return [tensors[k] for k in keys], lambda out: dict(zip(keys, out))
    if isinstance(tensors, (list, tuple)):
        return list(tensors), lambda out: list(out)
    return [tensors], lambda out: out[0]


def _shapes(tensors, shapes, enqueue_many, dynamic_pad=False):
    """The queue's shapes: fully defined, or (dynamic_pad) of known rank, the unknown sizes padded."""
    if shapes is not None:
        return [TensorShape(s) for s in shapes]
    out = []
    for t in tensors:
        s = t.shape[1:] if enqueue_many else t.shape
        if not (s.ndims is not None if dynamic_pad else s.is_fully_defined()):
            raise ValueError("All shapes must be %s: %s" % ("of known rank" if dynamic_pad else "fully defined",
                                                             [str(t.shape) for t in tensors]))
        out.append(s)
    return out


def _batch(queue_fn, tensors_list, batch_size, num_threads, enqueue_many, shapes, allow_smaller_final_batch, name,
           default_name, dynamic_pad=False):
    first = tensors_list[0]
    flat, rebuild = _flatten_input(first)
    with framework.name_scope(name, default_name):
        flats = []
        for ts in tensors_list:
            f, _ = _flatten_input(ts)
            flats.append([convert_to_tensor(t) for t in f])
        dtype_list = [t.dtype.base_dtype for t in flats[0]]
        shape_list = _shapes(flats[0], shapes, enqueue_many, dynamic_pad)
        queue = queue_fn(dtype_list, shape_list)
        enqueue = [(queue.enqueue_many if enqueue_many else queue.enqueue)(f) for f in flats]
        if len(enqueue) == 1:
            enqueue = enqueue * num_threads
        add_queue_runner(QueueRunner(queue, enqueue))
        out = queue.dequeue_up_to(batch_size) if allow_smaller_final_batch else queue.dequeue_many(batch_size)
        if not isinstance(out, list):  # one tensor: TensorFlow returns it alone, even for a list of one
            return {k: out for k in first} if isinstance(first, dict) else out
        return rebuild(out)


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None, dynamic_pad=False,
          allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches of `batch_size` of `tensors`, in order, by `num_threads` threads."""
    def make(d, s):
        if dynamic_pad:
            return data_flow_ops.PaddingFIFOQueue(capacity, d, s, shared_name=shared_name)
        return data_flow_ops.FIFOQueue(capacity, d, s, shared_name=shared_name)
    return _batch(make, [tensors], batch_size, num_threads, enqueue_many, shapes, allow_smaller_final_batch, name,
                  "batch", dynamic_pad)


def maybe_batch(tensors, keep_input, batch_size, **kwargs):
    raise NotImplementedError("maybe_batch")


def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None, dynamic_pad=False,
               allow_smaller_final_batch=False, shared_name=None, name=None):
    def make(d, s):
        return data_flow_ops.FIFOQueue(capacity, d, s, shared_name=shared_name)
    return _batch(make, tensors_list, batch_size, 1, enqueue_many, shapes, allow_smaller_final_batch, name, "batch_join")


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None, enqueue_many=False,
                  shapes=None, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches drawn at random from a RandomShuffleQueue holding at least `min_after_dequeue` elements."""
    def make(d, s):
        return data_flow_ops.RandomShuffleQueue(capacity, min_after_dequeue, d, s, seed=seed,
                                                shared_name=shared_name)
    return _batch(make, [tensors], batch_size, num_threads, enqueue_many, shapes, allow_smaller_final_batch, name,
                  "shuffle_batch")


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None, enqueue_many=False,
                       shapes=None, allow_smaller_final_batch=False, shared_name=None, name=None):
    def make(d, s):
        return data_flow_ops.RandomShuffleQueue(capacity, min_after_dequeue, d, s, seed=seed,
                                                shared_name=shared_name)
    return _batch(make, tensors_list, batch_size, 1, enqueue_many, shapes, allow_smaller_final_batch, name,
                  "shuffle_batch_join")
