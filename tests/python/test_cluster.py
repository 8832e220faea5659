"""A cluster of in-process servers (tf.train.Server) run from Python: sessions on a server's target,
replica_device_setter putting variables on the parameter servers, and SyncReplicasOptimizer aggregating two
workers' gradients per step."""


import numpy as np
import pytest

import actorflow as tf
from conftest import free_ports, run_in_threads


@pytest.fixture(scope="module")
def cluster():
    ps, w0, w1 = free_ports(3)
    spec = tf.train.ClusterSpec({"ps": ["127.0.0.1:%d" % ps], "worker": ["127.0.0.1:%d" % w0, "127.0.0.1:%d" % w1]})
    servers = [tf.train.Server(spec, "ps", 0), tf.train.Server(spec, "worker", 0), tf.train.Server(spec, "worker", 1)]
    yield spec, servers
    for s in servers:
        s.stop()


def test_cluster_spec():
    spec = tf.train.ClusterSpec({"ps": ["a:1"], "worker": {1: "b:2"}})
    assert spec.jobs == ["ps", "worker"] and spec.num_tasks("worker") == 1
    assert spec.task_address("worker", 1) == "b:2" and spec.task_indices("worker") == [1]
    with pytest.raises(ValueError):
        spec.task_address("worker", 0)


def test_replica_device_setter_places_variables_round_robin():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:1")):
        a = tf.Variable(1.0, name="a")
        b = tf.Variable(1.0, name="b")
        c = tf.Variable(1.0, name="c")
        y = a + b
        with tf.device("/device:CPU:0"):
            z = y * 2.0
    assert [v.device for v in (a, b, c)] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    assert y.device == "/job:worker/task:1"
    assert z.device == "/job:worker/task:1/device:CPU:0"
    assert tf.train.replica_device_setter(cluster=tf.train.ClusterSpec({"worker": ["a:1"]})) is None


def test_sessions_on_a_servers_target_share_its_variables(cluster):
    spec, servers = cluster
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(5.0, name="shared_v")
    with tf.device("/job:worker/task:0"):
        y = v * 2.0
    with tf.device("/job:worker/task:1"):
        z = v * 3.0
    with tf.Session(servers[1].target) as s1:
        s1.run(v.initializer)
        assert s1.run(y) == 10.0
        # By default a worker's session uses the ps tasks and its own task only (TensorFlow users set
        # device_filters so): the other worker's devices are not its.
        with pytest.raises(tf.errors.InvalidArgumentError, match="task:1"):
            s1.run(z)
    with tf.Session(servers[2].target) as s2:  # another worker's master: the ps holds the value
        assert s2.run(v) == 5.0 and s2.run(z) == 15.0
    # A remote master by address, as TensorFlow's grpc:// targets name it (and actorflow://).
    address = servers[2].target[len("actorflow://"):]
    for scheme in ("grpc://", "actorflow://"):
        with tf.Session(scheme + address) as s4:
            assert s4.run(v) == 5.0
    config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker"])
    with tf.Session(servers[1].target, config=config) as s3:  # every task, when asked
        assert s3.run(z) == 15.0


def test_sync_replicas_aggregates_two_workers(cluster):
    spec, servers = cluster

    def worker(task):
        g = tf.Graph()
        with g.as_default():
            with tf.device(tf.train.replica_device_setter(cluster=spec, worker_device="/job:worker/task:%d" % task)):
                gs = tf.train.get_or_create_global_step()
                w = tf.Variable([0.0], name="sync_w")
                x = tf.placeholder(tf.float32, [1])
                loss = tf.reduce_sum(w * x)  # d loss / dw = x
                opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(1.0), replicas_to_aggregate=2,
                                                     total_num_replicas=2)
                train = opt.minimize(loss, global_step=gs)
            hook = opt.make_session_run_hook(is_chief=(task == 0))
            with tf.train.MonitoredTrainingSession(master=servers[1 + task].target, is_chief=(task == 0),
                                                   hooks=[hook, tf.train.StopAtStepHook(last_step=3)],
                                                   save_checkpoint_secs=None, save_summaries_steps=None,
                                                   log_step_count_steps=None, max_wait_secs=60) as sess:
                steps = 0
                while not sess.should_stop():
                    sess.run(train, {x: [2.0]})
                    steps += 1
                return steps
    results, errors = run_in_threads(worker, (0, 1), timeout=100)
    assert not errors, errors
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable([0.0], name="sync_w")
            gs = tf.Variable(0, dtype=tf.int64, name="global_step")
        with tf.Session(servers[1].target) as sess:
            # Each of the 3 global steps applied the mean of 2 gradients (each 2): w = -2 per step. (Which
            # replica sent them is not fixed: the chief may take both first tokens, as in TensorFlow.)
            assert sess.run(gs) == 3
            np.testing.assert_allclose(sess.run(w), [-6.0])
    assert results[0] >= 1 and results[1] >= 1, results
