"""Session.run as TensorFlow's: fetch structures, feeds by tensor or name, numpy arrays in and out without copies,
the GIL released during a step, TensorFlow's exception classes for failures and bad input, closed sessions."""

import collections
import threading
import time

import numpy as np
import pytest

import actorflow as tf
from actorflow import _actorflow


def test_fetch_structures():
    a = tf.constant(1.0)
    b = tf.constant([1, 2])
    op = tf.no_op()
    Pair = collections.namedtuple("Pair", ["x", "y"])
    with tf.Session() as sess:
        assert sess.run(a) == 1.0
        assert sess.run(op) is None
        out = sess.run({"a": a, "list": [b, (a, op)], "pair": Pair(a, b)})
        assert out["a"] == 1.0
        np.testing.assert_array_equal(out["list"][0], [1, 2])
        assert out["list"][1] == (1.0, None)
        assert isinstance(out["pair"], Pair) and out["pair"].x == 1.0
        assert sess.run("Const:0") == 1.0
        assert sess.run([a, a]) == [1.0, 1.0]  # one fetch, returned twice
        # Scalars come back as numpy's scalars (hashable, usable as ints), strings as bytes.
        assert isinstance(sess.run(a), np.float32) and sess.run(tf.constant("x")) == b"x"
        assert {sess.run(tf.constant(3)): "three"}[3] == "three"


def test_feeds_by_tensor_and_name_convert_to_the_placeholder_dtype():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    n = tf.placeholder(tf.int64, [], name="n")
    y = x * 2.0
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: [[1, 2]]}), [[2, 4]])
        np.testing.assert_allclose(sess.run(y, {"x:0": np.array([[3.0, 4.0]])}), [[6, 8]])  # float64 -> float32
        assert sess.run(n, {n: 7}) == 7 and sess.run(n, {n: 7}).dtype == np.int64
        with pytest.raises(ValueError, match="Cannot feed value of shape"):
            sess.run(y, {x: np.zeros([3], np.float32)})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(n, {n: 1.5})  # a float to an integer is refused
        with pytest.raises(tf.errors.InvalidArgumentError, match="x"):
            sess.run(y)  # not fed
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key"):
            sess.run(y, {3: 1})
        with pytest.raises(TypeError, match="feed cannot be a tf.Tensor"):
            sess.run(y, {x: y})


def test_bad_fetches():
    a = tf.constant(1.0)
    g = tf.Graph()
    with g.as_default():
        other = tf.constant(2.0)
    with tf.Session() as sess:
        with pytest.raises(TypeError, match="invalid type"):
            sess.run(3)
        with pytest.raises(ValueError):
            sess.run(other)
        with pytest.raises(ValueError):
            sess.run("nosuch:0")
        assert sess.run(a) == 1.0


def test_step_errors_are_tensorflows_classes():
    v = tf.Variable(1.0, name="v")
    q = tf.FIFOQueue(1, [tf.float32]) if hasattr(tf, "FIFOQueue") else None
    check = tf.Assert(tf.constant(False), [tf.constant("boom")])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="v"):
            sess.run(v)
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(check)
        if q is not None:
            sess.run(q.close())
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(q.dequeue())
        assert issubclass(tf.errors.NotFoundError, tf.errors.OpError)


def test_closed_session_and_context_managers():
    a = tf.constant(2.0)
    with tf.Session() as sess:
        assert tf.get_default_session() is sess
        assert a.eval() == 2.0
    assert tf.get_default_session() is None
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(a)
    with pytest.raises(ValueError, match="No default session"):
        a.eval()


def test_graph_grows_between_runs():
    a = tf.constant(1.0)
    with tf.Session() as sess:
        assert sess.run(a) == 1.0
        b = a + 1.0  # added after the session's first run
        assert sess.run(b) == 2.0
        c = tf.Variable(5.0)
        sess.run(c.initializer)
        assert sess.run(c) == 5.0


def test_feeds_and_fetches_do_not_copy():
    x = tf.placeholder(tf.float32, [None, None])
    y = tf.identity(x)
    z = x * 2.0
    v = tf.Variable(tf.ones([4]))
    big = np.full([1024, 1024], 1.5, dtype=np.float32)  # as numpy allocates it (16-byte aligned)
    with tf.Session() as sess:
        sess.run(v.initializer)
        # The fed array is used in place; the computed result is returned in place.
        before = _actorflow.feed_counts()
        doubled = sess.run(z, {x: big})
        after = _actorflow.feed_counts()
        assert after["borrowed"] == before["borrowed"] + 1 and after["copied"] == before["copied"]
        assert after["fetched_in_place"] == before["fetched_in_place"] + 1
        assert doubled[5, 5] == 3.0
        # A fetched array fed back is the tensor it came from (no copy).
        before = _actorflow.feed_counts()
        again = sess.run(z, {x: doubled})
        assert _actorflow.feed_counts()["copied"] == before["copied"] and again[0, 0] == 6.0
        # A fetch of the fed array itself (passed through) is a copy, as TensorFlow's: refilling or freeing
        # the fed array changes no result, and a read-only fed array stays read-only.
        kept = sess.run(y, {x: big})
        big[:] = 7
        assert kept[0, 0] == 1.5 and kept.ctypes.data != big.ctypes.data
        frozen = np.ones([2, 2], np.float32)
        frozen.flags.writeable = False
        out = sess.run(y, {x: frozen})
        out[0, 0] = 5
        assert frozen[0, 0] == 1.0
        # A variable's value is shared: its fetch is a copy, so writing it changes nothing.
        val = sess.run(v)
        val[:] = 7
        np.testing.assert_array_equal(sess.run(v), [1, 1, 1, 1])
        # Unaligned or strided arrays are copied once, and still correct.
        odd = np.arange(16, dtype=np.float32)[1:14]  # 4 bytes past an aligned start
        assert odd.ctypes.data % 16 != 0
        before = _actorflow.feed_counts()
        np.testing.assert_array_equal(sess.run(y, {x: odd.reshape(1, 13)}), odd.reshape(1, 13))
        np.testing.assert_array_equal(sess.run(y, {x: big[:, ::2]}), big[:, ::2])
        assert _actorflow.feed_counts()["copied"] == before["copied"] + 2
        # The fed array lives as long as the tensor that uses it.
        q = tf.FIFOQueue(1, [tf.float32])
        sess.run(q.enqueue([x]), {x: np.full([8, 8], 3.0, np.float32)})  # this array's only holder: the queue
        assert sess.run(q.dequeue()).sum() == 192


def test_gil_is_released_while_a_step_waits():
    q = tf.FIFOQueue(4, [tf.float32], shapes=[[]])
    x = tf.placeholder(tf.float32, [])
    enq = q.enqueue([x])
    deq = q.dequeue()
    with tf.Session() as sess:
        # A step that waits 3 s in C++ (a dequeue from an empty queue, then DeadlineExceeded): this thread
        # keeps running Python all along, with no pause anywhere near the step's length (a step holding the
        # GIL would stop it for 3 s, from before the other thread's start to its end).
        done, errors = threading.Event(), []

        def blocked():
            try:
                sess.run(deq, options=tf.RunOptions(timeout_in_ms=3000))
            except tf.errors.DeadlineExceededError as e:
                errors.append(e)
            finally:
                done.set()
        begin = last = time.perf_counter()
        longest, loops = 0.0, 0
        t = threading.Thread(target=blocked, daemon=True)
        t.start()
        while not done.is_set() and last - begin < 60:
            now = time.perf_counter()
            longest, last, loops = max(longest, now - last), now, loops + 1
        t.join(timeout=30)
        assert done.is_set() and len(errors) == 1
        assert last - begin > 2.5, "the step ended early: %.2f s" % (last - begin)
        assert loops > 1000 and longest < 1.5, (loops, longest)
        # And a dequeue waiting on another thread is fed from this one: the enqueue comes once the queue's
        # size is 0 with the dequeue in flight (the step's end is what the waiting thread reports).
        got = []
        t = threading.Thread(target=lambda: got.append(sess.run(deq)), daemon=True)
        t.start()
        sess.run(enq, {x: 42.0})
        t.join(timeout=60)
        assert not t.is_alive() and got == [42.0]


def test_timeout_in_run_options():
    q = tf.FIFOQueue(1, [tf.float32], shapes=[[]])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(q.dequeue(), options=tf.RunOptions(timeout_in_ms=200))
