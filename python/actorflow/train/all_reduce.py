"""All-reduce data parallelism from Python, Horovod's model (its DistributedOptimizer and
BroadcastGlobalVariablesHook) over the runtime's collective ops (client/train/all_reduce.hpp): every worker holds
the whole model and computes gradients on its own batch; the gradients are averaged across the group by
CollectiveReduce, in buckets of about `bucket_bytes` reduced as backpropagation produces them, before each worker
applies the same update, so the replicas stay equal. A broadcast first sets every worker's variables to the
source's (rank 0's). Workers whose models or options differ get InvalidArgumentError naming the first
difference; a member missing or hung fails the others' collective after `timeout_seconds` (DeadlineExceeded),
or as soon as it is known dead (Unavailable).

    opt = tf.train.AllReduceOptimizer(tf.train.GradientDescentOptimizer(0.1), group_size=num_workers)
    train = opt.minimize(loss, global_step=gs)
    hooks = [opt.make_session_run_hook(is_source=(task == 0))]
    with tf.train.MonitoredTrainingSession(master=server.target, hooks=hooks,
                                           checkpoint_dir=ckpt if task == 0 else None,
                                           config=tf.ConfigProto(device_filters=["/job:worker"])) as sess: ...

Every worker initializes its own variables (is_chief=True, the default) and the broadcast then makes them rank
0's. The group is every task of the workers' job that the session knows: with parameter servers in the cluster a
session knows only them and its own task unless its device_filters name the workers' job.

These names are actorflow's (TensorFlow 1.x has none for this); the rest of the program is TensorFlow's."""

from actorflow import _actorflow
from actorflow import framework
from actorflow import variables
from actorflow.train.basic_session_run_hooks import SessionRunHook
from actorflow.train.optimizer import Optimizer, _Wrapper

__all__ = ["AllReduceOptimizer", "all_reduce_gradients", "broadcast_variables", "BroadcastVariablesHook"]

_DEFAULT_BUCKET_BYTES = 4 << 20  # client/train/all_reduce.hpp's default (one bucket for a small model)


def _options(group_size, group_key, first_instance_key, bucket_bytes=_DEFAULT_BUCKET_BYTES, average=True,
             timeout_seconds=0):
    if group_size < 1:
        raise ValueError("group_size must be at least 1, got %d" % group_size)
    o = _actorflow.AllReduceOptions()
    o.group_size, o.group_key, o.first_instance_key = int(group_size), int(group_key), int(first_instance_key)
    o.bucket_bytes, o.average, o.timeout_seconds = int(bucket_bytes), bool(average), float(timeout_seconds)
    return o


def _parts(var):
    """What the C++ builders use of a variable: its name, dtype, shape, VariableV2 output and read value."""
    if not isinstance(var, variables.Variable):
        raise TypeError("expected a tf.Variable, got %r" % (var,))
    shape = var.shape
    if not shape.is_fully_defined():
        raise ValueError("variable %s: all-reduce needs a fully defined shape, got %s" % (var.op.name, shape))
    return (var.op.name, var.dtype.base_dtype.as_datatype_enum, shape.as_list(), var._variable._c_output(),
            var._snapshot._c_output())


def _scope(graph, op_type):
    # The C++ builders add their ops in the current name scope, on the current device.
    if graph._finalized:
        raise RuntimeError("Graph is finalized and cannot be modified.")
    # (tf.control_dependencies does not reach these ops; the updates built after them, in Python, get it.)
    scope = graph._scope_stack[-1][1]
    device = graph._current_device(op_type, None) if graph._device_stack else ""
    return scope.with_device(device) if device else scope


def _instance_keys(graph, count, first):
    """`first`, or (None) the next `count` instance keys of the graph's all-reduce ops, handed out in the order
    they are built, as TensorFlow's CollectiveKeys does: every rank builds the same graph, so gets the same keys,
    and two optimizers' or a broadcast's ops never share one."""
    following = getattr(graph, "_all_reduce_next_instance", 1)
    if first is None:
        first = following
    graph._all_reduce_next_instance = max(following, int(first) + max(1, count))
    return first


def all_reduce_gradients(grads_and_vars, group_size, group_key=1, first_instance_key=None,
                         bucket_bytes=_DEFAULT_BUCKET_BYTES, average=True, timeout_seconds=0):
    """The gradients averaged (or summed) across the group's `group_size` workers, each paired with its variable
    as given; a None gradient stays None. Bucket i is collective instance first_instance_key + i (by default the
    graph's next free ones)."""
    grads_and_vars = list(grads_and_vars)
    graph = framework.get_default_graph()
    first_instance_key = _instance_keys(graph, len(grads_and_vars), first_instance_key)
    o = _options(group_size, group_key, first_instance_key, bucket_bytes, average, timeout_seconds)
    grads = [g._c_output() if g is not None else None for g, _ in grads_and_vars]
    reduced = _actorflow.all_reduce_gradients(_scope(graph, "CollectiveReduce"), grads,
                                              [_parts(v) for _, v in grads_and_vars], o)
    return [(graph._wrap_op(g.op).outputs[g.index] if g is not None else None, v)
            for g, (_, v) in zip(reduced, grads_and_vars)]


def broadcast_variables(var_list, is_source, group_size, group_key=1, first_instance_key=None, timeout_seconds=0):
    """An op that sets every worker's `var_list` to the source's (the one given is_source=True): run it on every
    worker after the variables are initialized or restored. Its instances start at first_instance_key (by
    default the graph's next free ones, apart from the gradients')."""
    graph = framework.get_default_graph()
    var_list = list(var_list)
    first_instance_key = _instance_keys(graph, len(var_list) + 1, first_instance_key)
    o = _options(group_size, group_key, first_instance_key, timeout_seconds=timeout_seconds)
    op = _actorflow.broadcast_variables(_scope(graph, "CollectiveBcastSend"), [_parts(v) for v in var_list],
                                        bool(is_source), o)
    return graph._wrap_op(op)


class BroadcastVariablesHook(SessionRunHook):
    """Runs a broadcast of the global variables from the source each time a session is made ready (the start,
    and each recovery), as Horovod's BroadcastGlobalVariablesHook; a MonitoredSession runs it before the other
    hooks' after_create_session, so that they see the source's values (its global step)."""

    _after_create_session_first = True

    def __init__(self, is_source, group_size, group_key=1, first_instance_key=None, timeout_seconds=0):
        self._args = (is_source, group_size, group_key, first_instance_key, timeout_seconds)
        self.broadcast_op = None

    def begin(self):  # before the graph is finalized
        is_source, group_size, group_key, first, timeout = self._args
        self.broadcast_op = broadcast_variables(variables.global_variables(), is_source, group_size, group_key,
                                                first, timeout)

    def after_create_session(self, session, coord):
        session.run(self.broadcast_op)


class AllReduceOptimizer(_Wrapper, Optimizer):
    """Wraps an optimizer: its gradients are all-reduced across `group_size` workers before they are applied."""

    def __init__(self, opt, group_size, group_key=1, first_instance_key=None, bucket_bytes=_DEFAULT_BUCKET_BYTES,
                 average=True, timeout_seconds=0, use_locking=False, name="AllReduce"):
        super(AllReduceOptimizer, self).__init__(use_locking, name)
        _options(group_size, group_key, first_instance_key or 1, bucket_bytes, average, timeout_seconds)  # checked now
        self._opt = opt
        self._group = dict(group_size=group_size, group_key=group_key)
        self._reduce = dict(first_instance_key=first_instance_key, bucket_bytes=bucket_bytes, average=average,
                            timeout_seconds=timeout_seconds)

    def compute_gradients(self, *args, **kwargs):
        gvs = self._opt.compute_gradients(*args, **kwargs)
        if self._group["group_size"] == 1:
            return gvs
        return all_reduce_gradients(gvs, **dict(self._group, **self._reduce))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        return self._opt.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def make_session_run_hook(self, is_source, first_instance_key=None):
        """The broadcast of the global variables from the source (rank 0) in each new session."""
        return BroadcastVariablesHook(is_source, self._group["group_size"], self._group["group_key"],
                                      first_instance_key, self._reduce["timeout_seconds"])
