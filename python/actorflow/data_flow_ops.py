"""Queues (tf.FIFOQueue, tf.RandomShuffleQueue, tf.PaddingFIFOQueue, tf.PriorityQueue) and readers
(tf.TextLineReader, tf.TFRecordReader, tf.FixedLengthRecordReader, tf.IdentityReader). A queue is an actor of the
runtime; a blocked dequeue or enqueue is an asynchronous kernel that holds no thread, and the Python thread that
runs it has released the GIL."""

from actorflow import dtypes
from actorflow import dtypes as dtypes_mod
from actorflow import framework
from actorflow import gen_ops
from actorflow.framework import Tensor, convert_to_tensor
from actorflow.tensor_shape import TensorShape

__all__ = ["QueueBase", "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue", "PriorityQueue", "ReaderBase",
           "TextLineReader", "TFRecordReader", "FixedLengthRecordReader", "IdentityReader", "StagingArea"]


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


class _Tuples(object):
    """What a queue and a staging area say of their tuples."""

    @property
    def name(self):
        return self._name

    @property
    def dtypes(self):
        return self._dtypes

    @property
    def shapes(self):
        return self._shapes

    @property
    def names(self):
        return self._names


class QueueBase(_Tuples):
    """A queue of tuples of tensors (components), each of `dtypes`, optionally of `shapes`."""

    def __init__(self, dtypes_, shapes, names, queue_ref):
        self._dtypes = [dtypes.as_dtype(d) for d in dtypes_]
        self._shapes = [TensorShape(s) for s in shapes] if shapes else [TensorShape(None)] * len(self._dtypes)
        self._names = names
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name

    @property
    def queue_ref(self):
        return self._queue_ref


    def _components(self, vals):
        if isinstance(vals, dict):
            if self._names is None:
                raise ValueError("Queue must have names to enqueue a dictionary")
            vals = [vals[n] for n in self._names]
        vals = _as_list(vals) if not isinstance(vals, Tensor) or len(self._dtypes) > 1 else [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError("Expected %d components, got %d" % (len(self._dtypes), len(vals)))
        return [convert_to_tensor(v, dtype=d) for v, d in zip(vals, self._dtypes)]

    def enqueue(self, vals, name=None):
        with framework.name_scope(name, "%s_enqueue" % self._name):
            return gen_ops.queue_enqueue_v2(self._queue_ref, self._components(vals))

    def enqueue_many(self, vals, name=None):
        with framework.name_scope(name, "%s_EnqueueMany" % self._name):
            return gen_ops.queue_enqueue_many_v2(self._queue_ref, self._components(vals))

    def _result(self, out, batch=None):
        out = _as_list(out)
        for t, s in zip(out, self._shapes):
            if s.ndims is not None:
                t.set_shape(TensorShape([batch]).concatenate(s) if batch is not False else s)
        if self._names is not None:
            return dict(zip(self._names, out))
        return out[0] if len(out) == 1 else out

    def dequeue(self, name=None):
        if name is None:
            name = "%s_Dequeue" % self._name
        out = gen_ops.queue_dequeue_v2(self._queue_ref, component_types=self._dtypes, name=name)
        return self._result(out, batch=False)

    def dequeue_many(self, n, name=None):
        if name is None:
            name = "%s_DequeueMany" % self._name
        out = gen_ops.queue_dequeue_many_v2(self._queue_ref, convert_to_tensor(n, dtype=dtypes.int32),
                                            component_types=self._dtypes, name=name)
        return self._result(out, batch=n if isinstance(n, int) else None)

    def dequeue_up_to(self, n, name=None):
        if name is None:
            name = "%s_DequeueUpTo" % self._name
        out = gen_ops.queue_dequeue_up_to_v2(self._queue_ref, convert_to_tensor(n, dtype=dtypes.int32),
                                             component_types=self._dtypes, name=name)
        return self._result(out, batch=None)

    def close(self, cancel_pending_enqueues=False, name=None):
        if name is None:
            name = "%s_Close" % self._name
        return gen_ops.queue_close_v2(self._queue_ref, cancel_pending_enqueues=cancel_pending_enqueues, name=name)

    def size(self, name=None):
        return gen_ops.queue_size_v2(self._queue_ref, name=name or "%s_Size" % self._name)

    def is_closed(self, name=None):
        return gen_ops.queue_is_closed_v2(self._queue_ref, name=name or "%s_IsClosed" % self._name)


class StagingArea(_Tuples):
    """tf.contrib.staging.StagingArea: a FIFO of tuples on the device where put() and get() are placed (device
    tensors stay on their GPU). put() waits while `capacity` tuples are staged (0: unbounded), get() while none are;
    the usual pattern stages the next batch in the step that consumes the current one, so the model never waits for
    the host-to-device copy. memory_limit > 0 is refused (Unimplemented) when the op runs."""

    def __init__(self, dtypes, shapes=None, names=None, shared_name=None, capacity=0, memory_limit=0):  # noqa
        self._dtypes = [dtypes_mod.as_dtype(d) for d in _as_list(dtypes)]
        self._shapes = [TensorShape(s) for s in shapes] if shapes else [TensorShape(None)] * len(self._dtypes)
        if len(self._shapes) != len(self._dtypes):
            raise ValueError("StagingArea: %d dtypes but %d shapes" % (len(self._dtypes), len(self._shapes)))
        self._names = list(names) if names is not None else None
        if self._names is not None and len(self._names) != len(self._dtypes):
            raise ValueError("StagingArea: %d dtypes but %d names" % (len(self._dtypes), len(self._names)))
        self._name = shared_name if shared_name else framework.get_default_graph().unique_name("StagingArea")
        self._attrs = dict(dtypes=self._dtypes, capacity=capacity, memory_limit=memory_limit, shared_name=self._name)
        self._put_op = None


    def put(self, values, name=None):
        if isinstance(values, dict):
            if self._names is None:
                raise ValueError("StagingArea has no names: put a list, not a dictionary")
            values = [values[n] for n in self._names]
        values = _as_list(values)
        if len(values) != len(self._dtypes):
            raise ValueError("StagingArea: expected %d values, got %d" % (len(self._dtypes), len(values)))
        tensors = []
        for v, d, shape in zip(values, self._dtypes, self._shapes):
            t = convert_to_tensor(v, dtype=d)
            if not t.shape.is_compatible_with(shape):
                raise ValueError("StagingArea: a value of shape %s where %s is declared" % (t.shape, shape))
            tensors.append(t)
        attrs = dict(self._attrs)
        del attrs["dtypes"]
        op = gen_ops.stage(tensors, name=name or "%s_put" % self._name, **attrs)
        if self._put_op is None:
            self._put_op = op  # the area is this op's device's: get, size and clear go there too
        return op

    def _colocated(self):
        return framework.get_default_graph().colocate_with(self._put_op) if self._put_op is not None \
            else _NoScope()

    def get(self, name=None):
        with self._colocated():
            out = _as_list(gen_ops.unstage(name=name or "%s_get" % self._name, **self._attrs))
        for t, s in zip(out, self._shapes):
            if s.ndims is not None:
                t.set_shape(s)
        if self._names is not None:
            return dict(zip(self._names, out))
        return out[0] if len(out) == 1 else out

    def size(self, name=None):
        with self._colocated():
            return gen_ops.stage_size(name=name or "%s_size" % self._name, **self._attrs)

    def clear(self, name=None):
        with self._colocated():
            return gen_ops.stage_clear(name=name or "%s_clear" % self._name, **self._attrs)


class _NoScope(object):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _queue_attrs(dtypes_, shapes, capacity, shared_name):
    return dict(component_types=[dtypes.as_dtype(d) for d in dtypes_],
                shapes=[TensorShape(s) for s in shapes] if shapes else [], capacity=capacity,
                shared_name=shared_name or "")


class FIFOQueue(QueueBase):
    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None, name="fifo_queue"):  # noqa
        dtypes = _as_list(dtypes)
        ref = gen_ops.fifo_queue_v2(name=name, **_queue_attrs(dtypes, shapes, capacity, shared_name))
        super(FIFOQueue, self).__init__(dtypes, shapes, names, ref)


class PaddingFIFOQueue(QueueBase):
    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None, name="padding_fifo_queue"):  # noqa
        dtypes = _as_list(dtypes)
        ref = gen_ops.padding_fifo_queue_v2(name=name, **_queue_attrs(dtypes, shapes, capacity, shared_name))
        super(PaddingFIFOQueue, self).__init__(dtypes, shapes, names, ref)


class PriorityQueue(QueueBase):
    def __init__(self, capacity, types, shapes, names=None, shared_name=None, name="priority_queue"):
        types = _as_list(types)
        attrs = _queue_attrs(types, shapes, capacity, shared_name)
        ref = gen_ops.priority_queue_v2(name=name, **attrs)
        super(PriorityQueue, self).__init__([dtypes.int64] + types, [[]] + list(shapes), names, ref)


class RandomShuffleQueue(QueueBase):
    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None, seed=None,  # noqa
                 shared_name=None, name="random_shuffle_queue"):
        dtypes = _as_list(dtypes)
        s1, s2 = framework._seeds(seed)
        ref = gen_ops.random_shuffle_queue_v2(name=name, min_after_dequeue=min_after_dequeue, seed=s1, seed2=s2,
                                              **_queue_attrs(dtypes, shapes, capacity, shared_name))
        super(RandomShuffleQueue, self).__init__(dtypes, shapes, names, ref)


class ReaderBase(object):
    """A reader of records: read(queue) takes file names from `queue` and returns (key, value)."""

    def __init__(self, reader_ref):
        self._reader_ref = reader_ref

    @property
    def reader_ref(self):
        return self._reader_ref

    def read(self, queue, name=None):
        q = queue.queue_ref if hasattr(queue, "queue_ref") else queue
        return gen_ops.reader_read_v2(self._reader_ref, q, name=name)

    def read_up_to(self, queue, num_records, name=None):
        q = queue.queue_ref if hasattr(queue, "queue_ref") else queue
        return gen_ops.reader_read_up_to_v2(self._reader_ref, q, convert_to_tensor(num_records, dtype=dtypes.int64),
                                            name=name)

    def num_records_produced(self, name=None):
        return gen_ops.reader_num_records_produced_v2(self._reader_ref, name=name)

    def num_work_units_completed(self, name=None):
        return gen_ops.reader_num_work_units_completed_v2(self._reader_ref, name=name)

    def reset(self, name=None):
        return gen_ops.reader_reset_v2(self._reader_ref, name=name)


class TextLineReader(ReaderBase):
    def __init__(self, skip_header_lines=None, name=None):
        super(TextLineReader, self).__init__(gen_ops.text_line_reader_v2(skip_header_lines=skip_header_lines,
                                                                         name=name))


class TFRecordReader(ReaderBase):
    def __init__(self, name=None, options=None):
        compression = getattr(options, "compression_type", None) if options is not None else None
        if compression is not None and not isinstance(compression, str):
            compression = {0: "", 1: "ZLIB", 2: "GZIP"}.get(int(compression), "")
        super(TFRecordReader, self).__init__(gen_ops.tf_record_reader_v2(compression_type=compression, name=name))


class FixedLengthRecordReader(ReaderBase):
    def __init__(self, record_bytes, header_bytes=None, footer_bytes=None, hop_bytes=None, name=None,
                 encoding=None):
        super(FixedLengthRecordReader, self).__init__(gen_ops.fixed_length_record_reader_v2(
            record_bytes=record_bytes, header_bytes=header_bytes, footer_bytes=footer_bytes, hop_bytes=hop_bytes,
            encoding=encoding, name=name))


class IdentityReader(ReaderBase):
    def __init__(self, name=None):
        super(IdentityReader, self).__init__(gen_ops.identity_reader_v2(name=name))
