"""All-reduce data parallelism from Python (actorflow.train.AllReduceOptimizer over the runtime's collective
ops): two workers (in-process servers, one thread each) with different initial values are made equal by the
broadcast hook, and after steps on half a batch each hold, bit for bit, the same variables, which are one
process's batch-2b variables; workers whose models differ are refused, naming the difference."""

import re

import numpy as np
import pytest

import actorflow as tf
from conftest import free_ports, run_in_threads

STEPS = 5


def data():
    rng = np.random.RandomState(5)
    x = rng.randn(64, 4).astype(np.float32)
    y = rng.randint(0, 3, size=64).astype(np.int32)
    return x, y


def model(seed, classes=3):
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.placeholder(tf.int32, [None], name="y")
    w = tf.Variable(tf.random_normal([4, classes], stddev=0.1, seed=seed), name="w")
    b = tf.Variable(tf.random_normal([classes], stddev=0.1, seed=seed + 1), name="b")
    logits = tf.matmul(x, w) + b
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    return x, y, w, b, loss


@pytest.fixture(scope="module")
def workers():
    ports = free_ports(2)
    spec = tf.train.ClusterSpec({"worker": ["127.0.0.1:%d" % p for p in ports]})
    servers = [tf.train.Server(spec, "worker", t) for t in (0, 1)]
    yield servers
    for s in servers:
        s.stop()


def run_workers(fn):
    return run_in_threads(fn, (0, 1))


class SeenAtStart(tf.train.SessionRunHook):
    def __init__(self, var):
        self.var, self.value = var, None

    def after_create_session(self, session, coord):
        self.value = session.run(self.var)


@pytest.mark.parametrize("bucket_bytes", [4 << 20, 1])  # one bucket; a bucket per gradient
def test_two_workers_train_as_one_process_with_both_halves(workers, bucket_bytes):
    xs, ys = data()

    def worker(task):
        with tf.Graph().as_default():
            with tf.device("/job:worker/task:%d" % task), tf.name_scope("b%d" % bucket_bytes):  # apart per case
                x, y, w, b, loss = model(seed=1 + 10 * task)  # the broadcast makes them the source's
                gs = tf.train.get_or_create_global_step()
                opt = tf.train.AllReduceOptimizer(tf.train.GradientDescentOptimizer(0.5), group_size=2,
                                                  group_key=1 + (bucket_bytes == 1), bucket_bytes=bucket_bytes,
                                                  timeout_seconds=60)
                train = opt.minimize(loss, global_step=gs)
            hook = opt.make_session_run_hook(is_source=(task == 0))
            seen = SeenAtStart(w)  # listed first: runs after the broadcast all the same
            with tf.train.MonitoredTrainingSession(master=workers[task].target, hooks=[seen, hook],
                                                   save_summaries_steps=None, save_summaries_secs=None,
                                                   log_step_count_steps=None) as sess:
                half = slice(32 * task, 32 * task + 32)
                for _ in range(STEPS):
                    sess.run(train, {x: xs[half], y: ys[half]})
                return sess.run([w, b, gs]), seen.value
    results, errors = run_workers(worker)
    assert not errors, errors
    ((w0, b0, gs0), start0), ((w1, b1, gs1), start1) = results[0], results[1]
    np.testing.assert_array_equal(start0, start1)  # the hooks saw the source's w, not worker 1's own
    assert gs0 == gs1 == STEPS
    np.testing.assert_array_equal(w0, w1)  # the replicas are equal, bit for bit
    np.testing.assert_array_equal(b0, b1)
    # One process, the whole batch, from the source's initial values.
    with tf.Graph().as_default():
        x, y, w, b, loss = model(seed=1)
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(STEPS):
                sess.run(train, {x: xs, y: ys})
            want_w, want_b = sess.run([w, b])
    np.testing.assert_allclose(w0, want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b0, want_b, rtol=1e-5, atol=1e-6)


def test_workers_whose_models_differ_are_refused_naming_the_difference(workers):
    xs, ys = data()

    def worker(task):
        with tf.Graph().as_default():
            with tf.device("/job:worker/task:%d" % task), tf.name_scope("mismatch"):  # apart from the last test's
                x, y, _, _, loss = model(seed=1, classes=3 + task)  # w is [4, 3] on one, [4, 4] on the other
                opt = tf.train.AllReduceOptimizer(tf.train.GradientDescentOptimizer(0.5), group_size=2,
                                                  group_key=7, first_instance_key=100, timeout_seconds=60)
                train = opt.minimize(loss)
            with tf.Session(workers[task].target) as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(train, {x: xs[:32], y: ys[:32]})
    _, errors = run_workers(worker)
    assert set(errors) == {0, 1}, errors
    for e in errors.values():
        assert isinstance(e, tf.errors.InvalidArgumentError), e
        # The first differing line of the bucket plans: b's (buckets go in reverse order), [3] against [4].
        assert "differ" in str(e) and re.search(r"mismatch/b float\[[34]\]", str(e)), e


def test_bad_arguments_are_refused_when_the_graph_is_built():
    _, _, w, _, loss = model(seed=1)
    with pytest.raises(ValueError, match="group_size"):
        tf.train.AllReduceOptimizer(tf.train.GradientDescentOptimizer(0.5), group_size=0)
    with pytest.raises(TypeError, match="tf.Variable"):
        tf.train.all_reduce_gradients([(loss, loss)], group_size=2)


def test_instance_keys_are_handed_out_per_graph_without_overlap():
    _, _, w, b, loss = model(seed=1)
    loss2 = tf.reduce_sum(w * w)
    tf.train.AllReduceOptimizer(tf.train.GradientDescentOptimizer(0.5), group_size=2, bucket_bytes=1).minimize(loss)
    tf.train.AllReduceOptimizer(tf.train.GradientDescentOptimizer(0.5), group_size=2).minimize(loss2)
    tf.train.broadcast_variables([w, b], is_source=True, group_size=2)
    keys = [op.get_attr("instance_key") for op in tf.get_default_graph().get_operations()
            if op.type.startswith("Collective")]
    assert len(keys) >= 5 and len(set(keys)) == len(keys), keys  # 2 + 1 buckets, the broadcast's 2 variables
