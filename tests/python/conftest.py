"""pytest fixtures for the Python module's tests: each test gets a fresh default graph."""

import os
import random
import socket
import sys

import pytest

import actorflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def linear_regression():
    """(loss, train op, global step) of y = 3x + 1 fitted by gradient descent (w and b start at zero)."""
    import numpy as np
    x = tf.constant(np.linspace(-1, 1, 32, dtype=np.float32).reshape(32, 1))
    y = 3.0 * x + 1.0
    w = tf.Variable(tf.zeros([1, 1]), name="w")
    b = tf.Variable(tf.zeros([1]), name="b")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    gs = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=gs)
    return loss, train, gs


def run_in_threads(fn, args, timeout=120):
    """fn(arg) for each arg, each on a thread of its own, all at once: ({arg: result}, {arg: exception}); fails
    if one is still running after `timeout` seconds."""
    import threading
    results, errors = {}, {}

    def run(a):
        try:
            results[a] = fn(a)
        except Exception as e:  # noqa: BLE001
            errors[a] = e
    threads = [threading.Thread(target=run, args=(a,), daemon=True) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not any(t.is_alive() for t in threads), "a thread is still running after %s s" % timeout
    return results, errors


def build_dir():
    """The build tree (for programs the tests start): AF_BUILD, else the one the module was loaded from."""
    if os.environ.get("AF_BUILD"):
        return os.environ["AF_BUILD"]
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(tf.__file__))))


def free_ports(n):
    """n loopback ports free now (for servers a test starts), below the kernel's ephemeral range (32768 and
    up by default), so that no outgoing connection takes one before its server listens."""
    rng = random.Random()
    for _ in range(200):
        ports = rng.sample(range(20000, 32768), n)
        socks = []
        try:
            for p in ports:
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return ports
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free ports")


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
