"""pytest fixtures for the Python module's tests: each test gets a fresh default graph."""

import os
import socket
import sys

import pytest

import actorflow as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def build_dir():
    """The build tree (for programs the tests start): AF_BUILD, else the one the module was loaded from."""
    if os.environ.get("AF_BUILD"):
        return os.environ["AF_BUILD"]
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(tf.__file__))))


def free_ports(n):
    """n loopback ports free now (for servers a test starts)."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
