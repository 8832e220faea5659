"""The interpreter's exit with live sessions, queue-runner threads blocked in steps, and fed arrays still held
by the runtime ends cleanly (exit status 0, promptly, nothing printed to stderr); so does a program that closes
nothing. Misuse raises Python errors, never crashes the interpreter."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import actorflow as tf
from conftest import build_dir


def run_script(body, timeout=120):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(build_dir(), "python")
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(body)], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def test_exit_with_blocked_queue_runners_and_open_sessions():
    rc, out, err = run_script("""
        import numpy as np
        import actorflow as tf
        q = tf.FIFOQueue(2, [tf.float32], shapes=[[4]])
        x = tf.placeholder(tf.float32, [4])
        tf.train.add_queue_runner(tf.train.QueueRunner(q, [q.enqueue([tf.random_uniform([4])])] * 2))
        held = tf.FIFOQueue(10, [tf.float32], shapes=[[4]])
        sess = tf.Session()
        sess.run(held.enqueue([x]), {x: np.ones(4, np.float32)})  # a fed array the runtime still holds
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        sess.run(q.dequeue())
        other = tf.Session()  # never closed either
        print("leaving", flush=True)
        # no request_stop, no join, no close: the enqueue threads are blocked on a full queue
    """)
    assert rc == 0, err
    assert "leaving" in out
    assert "Traceback" not in err and "Fatal" not in err, err


def test_exit_during_a_step_of_another_thread():
    rc, out, err = run_script("""
        import threading
        import actorflow as tf
        q = tf.FIFOQueue(1, [tf.float32], shapes=[[]])
        sess = tf.Session()
        t = threading.Thread(target=lambda: sess.run(q.dequeue()), daemon=True)
        t.start()
        print("leaving", flush=True)
    """)
    assert rc == 0, err
    assert "Fatal" not in err, err


def test_misuse_raises_never_crashes():
    a = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError):
        tf.reshape(a, "not a shape")
    with pytest.raises((TypeError, ValueError)):
        tf.gen_ops.mat_mul(a, a, transpose_a="yes")
    with pytest.raises(TypeError):
        tf.placeholder("no such dtype")
    with pytest.raises(ValueError, match="reshape"):
        tf.reshape(a, [3])  # known statically: refused as the graph is built
    fed = tf.placeholder(tf.float32)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(tf.reshape(fed, [3]), {fed: [1.0, 2.0]})
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(tf.gather(a, [5]))
        x = tf.placeholder(tf.string, [])
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(tf.string_to_number(x), {x: "not a number"})
        y = tf.placeholder(tf.float32, [None])
        with pytest.raises(tf.errors.InvalidArgumentError, match="strings"):
            sess.run(y * 2.0, {y: np.array(["a"], dtype=object)})
        huge = tf.zeros(tf.constant([1 << 20, 1 << 20]), dtype=tf.float32)
        with pytest.raises(tf.errors.ResourceExhaustedError):
            sess.run(huge)
        assert sess.run(a).tolist() == [1.0, 2.0]  # the session goes on
