"""The Python front-end's figures, each beside its peer in the same run (bench/run_all.sh --only python):

  session_run   one step of a one-node graph from Python vs from C++ (bench_session): microseconds, and
                python_overhead, the difference
  feed_fetch    a 64 MiB float32 array fed, and x + 1 (64 MiB) fetched: GB/s from Python vs C++, and how many
                copies Python made (it must make none)
  train_step    the MLP 784-256-10 SGD step (bench_train's graph, batch 64 and 256) as a Python loop vs the
                C++ loop (bench_train) vs PyTorch (peer_torch_train.py): examples/s and the ratios

  /usr/bin/python3 bench/bench_python.py [--build build] [--rounds 3] [--threads 2]

Each round runs the C++ program, then the same work in this process, then the peer, back to back; a ratio
is the median over the rounds of each round's ratio (the machine's load changes between rounds, less within
one). Prints JSON lines in run_all.sh's format."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np


def emit(bench, params, metric, unit, values, inverse_scale=None):
    vals = sorted(values)
    print(json.dumps({"bench": bench, "params": params, "metric": metric, "unit": unit,
                      "median": statistics.median(vals), "min": vals[0], "max": vals[-1], "reps": len(vals)}),
          flush=True)


def run_json(cmd, env):
    out = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    for r in rows:
        print(json.dumps(r), flush=True)
    return rows


def measure(fn, block, rounds=9):
    for _ in range(block):
        fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(block):
            fn()
        times.append((time.perf_counter() - t0) / block)
    return times


def python_session(tf, threads):
    tf.reset_default_graph()
    c = tf.constant(1.0, name="c")
    x = tf.placeholder(tf.float32, name="x")
    y = tf.add(x, 1.0, name="y")
    sess = tf.Session()
    sess.run(c)
    params = {"threads": threads, "impl": "python"}
    t = measure(lambda: sess.run(c), 2000)
    emit("session_run", params, "latency", "us", [v * 1e6 for v in t])
    run_us = statistics.median(t) * 1e6
    big = np.arange((64 << 20) // 4, dtype=np.float32) % 1024
    before = tf._actorflow.feed_counts()

    def round_trip():
        sess.run(y, {x: big})
    t = measure(round_trip, 20)
    after = tf._actorflow.feed_counts()
    copies = (after["copied"] - before["copied"]) + (after["fetched_copied"] - before["fetched_copied"])
    gbs = [2.0 * 64 * (1 << 20) / 1e9 / v for v in t]
    emit("feed_fetch", dict(params, mib=64, copies=copies), "throughput", "GB/s", gbs)
    sess.close()
    return run_us, statistics.median(gbs)


def python_train(tf, batch, threads):
    tf.reset_default_graph()
    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 784], name="x")
    y = tf.placeholder(tf.int32, [None], name="y")
    w1 = tf.Variable(tf.glorot_uniform_initializer()([784, 256]), name="w1")
    b1 = tf.Variable(tf.zeros([256]), name="b1")
    w2 = tf.Variable(tf.glorot_uniform_initializer()([256, 10]), name="w2")
    b2 = tf.Variable(tf.zeros([10]), name="b2")
    h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1))
    logits = tf.nn.bias_add(tf.matmul(h, w2), b2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    rng = np.random.RandomState(0)
    xv = rng.uniform(0, 1, [batch, 784]).astype(np.float32)
    yv = rng.randint(0, 10, [batch]).astype(np.int32)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    feed = {x: xv, y: yv}
    t = measure(lambda: sess.run(train, feed), 20 if batch <= 64 else 6)
    emit("train_step", {"model": "mlp", "batch": batch, "threads": threads, "impl": "python"}, "throughput",
         "examples/s", [batch / v for v in t])
    sess.close()
    return batch / statistics.median(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    os.environ["ACTORFLOW_NUM_THREADS"] = str(a.threads)
    env = dict(os.environ)
    sys.path.insert(0, os.path.join(a.build, "python"))
    import actorflow as tf
    here = os.path.dirname(os.path.abspath(__file__))
    ratios = {}

    def ratio(key, value):
        ratios.setdefault(key, []).append(value)
    for _ in range(a.rounds):
        rows = run_json([os.path.join(a.build, "bench", "bench_session")], env)
        cpp = {r["bench"]: r["median"] for r in rows}
        py_us, py_gbs = python_session(tf, a.threads)
        ratio("overhead", py_us - cpp["session_run"])
        ratio("feed_fetch", py_gbs / cpp["feed_fetch"])
        for batch in (64, 256):
            rows = run_json([os.path.join(a.build, "bench", "bench_train"), "mlp%d" % batch], env)
            cpp_train = rows[0]["median"]
            py_train = python_train(tf, batch, a.threads)
            rows = run_json([sys.executable, os.path.join(here, "peer_torch_train.py"), "mlp%d" % batch], env)
            torch_train = max(r["median"] for r in rows if r["bench"] == "train_step")
            ratio(("c++", batch), py_train / cpp_train)
            ratio(("pytorch", batch), py_train / torch_train)
    emit("python_overhead", {"what": "session_run, Python minus C++", "impl": "python"}, "latency", "us",
         ratios["overhead"])
    emit("python_feed_fetch_ratio", {"vs": "c++", "impl": "python"}, "ratio", "x", ratios["feed_fetch"])
    for batch in (64, 256):
        for vs in ("c++", "pytorch"):
            emit("python_train_ratio", {"batch": batch, "vs": vs, "impl": "python"}, "ratio", "x",
                 ratios[(vs, batch)])


if __name__ == "__main__":
    main()
