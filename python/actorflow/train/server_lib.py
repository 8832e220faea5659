"""Clusters (tf.train.ClusterSpec), in-process servers (tf.train.Server, whose `target` a Session runs on),
tf.train.replica_device_setter (variables on the parameter servers, round-robin, the rest on the worker) and
tf.train.SyncReplicasOptimizer (synchronous data parallelism through ConditionalAccumulators and a token queue,
with TensorFlow's graph structure)."""

import json

from actorflow import _actorflow
from actorflow import array_ops
from actorflow import control_flow_ops
from actorflow import data_flow_ops
from actorflow import dtypes
from actorflow import framework
from actorflow import gen_ops
from actorflow import variables
from actorflow.framework import GraphKeys, convert_to_tensor
from actorflow.train.optimizer import _Wrapper
from actorflow.train.queue_runner import QueueRunner

__all__ = ["ClusterSpec", "Server", "replica_device_setter", "SyncReplicasOptimizer"]


class ClusterSpec(object):
    """Jobs and their tasks' addresses: {"ps": ["host:port"], "worker": ["host:port", ...]} (or {index: address})."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        self._jobs = {}
        for job, tasks in cluster.items():
            if isinstance(tasks, (list, tuple)):
                self._jobs[job] = {i: a for i, a in enumerate(tasks)}
            elif isinstance(tasks, dict):
                self._jobs[job] = {int(i): a for i, a in tasks.items()}
            else:
                raise TypeError("The tasks for job %r must be a list or a dictionary from integers to strings." % job)

    def as_dict(self):
        out = {}
        for job, tasks in self._jobs.items():
            idx = sorted(tasks)
            out[job] = [tasks[i] for i in idx] if idx == list(range(len(idx))) else dict(tasks)
        return out

    @property
    def jobs(self):
        return list(self._jobs)

    def num_tasks(self, job_name):
        return len(self._jobs[job_name])

    def task_indices(self, job_name):
        return sorted(self._jobs[job_name])

    def task_address(self, job_name, task_index):
        try:
            return self._jobs[job_name][task_index]
        except KeyError:
            raise ValueError("No such task index %s in job %r" % (task_index, job_name))

    def job_tasks(self, job_name):
        tasks = self._jobs[job_name]
        return [tasks.get(i) for i in range(max(tasks) + 1)] if tasks else []

    def _json(self):
        return json.dumps(self.as_dict())  # lists for dense jobs, {"index": address} for sparse ones

    def __bool__(self):
        return bool(self._jobs)

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self.as_dict() == other.as_dict()

    def __repr__(self):
        return "ClusterSpec(%r)" % self.as_dict()


class Server(object):
    """A task of a cluster, in this process: its devices, variables and queues serve the cluster's sessions.
    `target` is what tf.Session(target) takes. Binds to loopback unless the address says otherwise (and then
    needs mutual TLS, as `actorflow server` does)."""

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None, protocol=None, config=None,
                 start=True):
        cluster = server_or_cluster_def if isinstance(server_or_cluster_def, ClusterSpec) else \
            ClusterSpec(server_or_cluster_def)
        if job_name is None:
            if len(cluster.jobs) != 1:
                raise ValueError("Must specify an explicit `job_name`.")
            job_name = cluster.jobs[0]
        if task_index is None:
            indices = cluster.task_indices(job_name)
            if len(indices) != 1:
                raise ValueError("Must specify an explicit `task_index`.")
            task_index = indices[0]
        address = cluster.task_address(job_name, task_index)
        port = int(address.rpartition(":")[2])
        self._cluster = cluster
        self._job, self._task = job_name, task_index
        # Loopback unless ACTORFLOW_BIND says otherwise (then with mutual TLS or ACTORFLOW_INSECURE).
        self._c = _actorflow.Server(cluster._json(), job_name, int(task_index), "127.0.0.1", port)

    @staticmethod
    def create_local_server(config=None, start=True):
        return Server({"localhost": ["127.0.0.1:0"]}, job_name="localhost", task_index=0)

    @property
    def target(self):
        return self._c.target

    @property
    def server_def(self):
        return {"cluster": self._cluster.as_dict(), "job_name": self._job, "task_index": self._task}

    def start(self):
        pass

    def join(self):
        return self._c.join()

    def stop(self):
        self._c.stop("stopped from Python")

    def shutdown_tasks(self, job, reason="training is over", timeout_ms=10000):
        """Asks every task of `job` (the parameter servers, once training is over) to stop: their join() returns."""
        self._c.shutdown_tasks(job, reason, timeout_ms)

    def __del__(self):
        try:
            self._c.destroy()
        except Exception:  # noqa: BLE001
            pass


_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
           "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
           "MutableDenseHashTableV2", "VarHandleOp")


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker", merge_devices=True,
                          cluster=None, ps_ops=None, ps_strategy=None):
    """A device function: variables to the parameter servers (round-robin over `ps_tasks`), every other op to
    `worker_device`; a device an op already requests wins field by field (merge_devices)."""
    if cluster is not None:
        cluster = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster)
        if "ps" not in cluster.jobs:
            return None
        ps_tasks = cluster.num_tasks("ps")
    if ps_tasks == 0:
        return None
    ps_ops = tuple(ps_ops) if ps_ops is not None else _PS_OPS
    counter = [0]

    def choose(op):
        if ps_strategy is not None:
            return ps_strategy(op)
        task = counter[0] % ps_tasks
        counter[0] += 1
        return task

    def device_fn(op):
        current = op.device or ""
        if op.type in ps_ops:
            spec = ps_device + ("/task:%d" % choose(op) if ps_tasks and "/task:" not in ps_device else "")
        else:
            spec = worker_device or ""
        if merge_devices and current:
            return framework._merge_device(spec, current)
        return spec if not current else current
    return device_fn


class SyncReplicasOptimizer(_Wrapper):
    """Aggregates `replicas_to_aggregate` replicas' gradients per step (TensorFlow's SyncReplicasOptimizer)."""

    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None, variable_averages=None,
                 variables_to_average=None, use_locking=False, name="sync_replicas"):
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._total = total_num_replicas if total_num_replicas is not None else replicas_to_aggregate
        self._name = name
        self._gradients_applied = False
        self._global_step = None
        self._token_queue = None
        self.local_step_init_op = None
        self.chief_init_op = None
        self.ready_for_local_init_op = None
        self._chief_queue_runner = None
        self._local_step = None

    def compute_gradients(self, *args, **kwargs):
        return self._opt.compute_gradients(*args, **kwargs)

    def minimize(self, loss, global_step=None, var_list=None, name=None, **kwargs):
        return self.apply_gradients(self.compute_gradients(loss, var_list=var_list), global_step=global_step,
                                    name=name)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        if self._gradients_applied:
            raise ValueError("apply_gradients() can only be called once.")
        self._gradients_applied = True
        self._global_step = global_step
        gs_device = global_step.device
        # The replica's own ops go where a plain op would (TensorFlow colocates them with a local anchor).
        worker = framework.get_default_graph()._current_device("NoOp", "local_anchor")
        with framework.name_scope(None), framework.name_scope(self._name), framework.device(None):
            with framework.control_dependencies(None), framework.device(worker or None):
                self._local_step = variables.Variable(array_ops.constant(0, dtype=global_step.dtype.base_dtype),
                                                      trainable=False, name="sync_rep_local_step",
                                                      collections=[GraphKeys.LOCAL_VARIABLES])
                self.local_step_init_op = variables.assign(self._local_step, global_step.value(),
                                                           name="local_step_init").op
            applies, aggregated, set_steps = [], [], []
            self._num_dropped = None
            for grad, var in grads_and_vars:
                if grad is None:
                    aggregated.append((None, var))
                    continue
                with framework.colocate_with(var):
                    acc = gen_ops.conditional_accumulator(dtype=grad.dtype.base_dtype, shape=var.shape,
                                                          shared_name=var.name + "/grad_accum")
                    applies.append(gen_ops.accumulator_apply_gradient(acc, self._local_step.value(), grad))
                    if self._num_dropped is None:
                        self._num_dropped = gen_ops.accumulator_num_dropped(acc, name="num_dropped")
                    aggregated.append((gen_ops.accumulator_take_gradient(
                        acc, self._replicas_to_aggregate, dtype=grad.dtype.base_dtype), var))
                    set_steps.append(gen_ops.accumulator_set_global_step(acc, global_step.value()))
            with framework.device(gs_device or None):
                update = self._opt.apply_gradients(aggregated, global_step=global_step)
                self._token_queue = data_flow_ops.FIFOQueue(-1, global_step.dtype.base_dtype, shapes=[[]],
                                                            shared_name="sync_token_q", name="sync_token_q")
                dummy = data_flow_ops.FIFOQueue(1, dtypes.int32, shapes=[[]], shared_name="dummy_queue",
                                                name="dummy_queue")
                with framework.control_dependencies(applies):
                    token = self._token_queue.dequeue()
                with framework.control_dependencies([update]):
                    now = array_ops.identity(global_step._ref())
                    tokens = array_ops.fill([max(self._total, self._replicas_to_aggregate)], now)
                    sync = self._token_queue.enqueue_many([tokens])
            with framework.device(worker or None):
                train_op = variables.assign(self._local_step, token, name="train_op").op
            self._chief_queue_runner = QueueRunner(dummy, [sync])
            with framework.control_dependencies(set_steps + [self.local_step_init_op]):
                self.chief_init_op = control_flow_ops.no_op(name="chief_init")
            self.ready_for_local_init_op = variables.report_uninitialized_variables(variables.global_variables())
        return train_op

    def get_chief_queue_runner(self):
        if self._chief_queue_runner is None:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens=-1):
        if self._token_queue is None:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        needed = self._replicas_to_aggregate - self._total
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < needed:
            raise ValueError("Too few tokens to finish the first step: %d (given) vs %d (needed)" %
                             (num_tokens, needed))
        with framework.device(self._global_step.device or None):
            if num_tokens <= 0:
                return control_flow_ops.no_op(name="no_init_tokens")
            tokens = array_ops.fill([num_tokens], self._global_step.value())
            return self._token_queue.enqueue_many([tokens])

    @property
    def num_dropped(self):
        return self._num_dropped

    def make_session_run_hook(self, is_chief, num_tokens=-1):
        from actorflow.train.monitored_session import _SyncReplicasOptimizerHook
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)


_ = convert_to_tensor
