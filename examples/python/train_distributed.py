"""The Fashion-MNIST MLP trained by several worker processes against parameter servers, as TensorFlow 1.x
programs did it (examples/train_distributed.cpp in C++):

    actorflow launch --cluster '{"ps": ["127.0.0.1:7100"], "worker": ["127.0.0.1:7101", "127.0.0.1:7102"]}' -- \\
        env PYTHONPATH=build/python /usr/bin/python3 examples/python/train_distributed.py --mode sync [--steps N]

`actorflow launch` runs the ps tasks (`actorflow server`) and this program once per worker, with TF_CONFIG
saying which task it is. Each worker serves its task in this process (tf.train.Server), puts the variables on
the ps tasks (tf.train.replica_device_setter) and trains on its shard of the training set through a
MonitoredTrainingSession on its server's target; worker 0 is the chief (it initializes the model, saves
checkpoints to --dir and prints the test accuracy at the end).
  async      each worker's Adam update is applied on the ps tasks as it comes
  sync       tf.train.SyncReplicasOptimizer: the chief averages one gradient per worker per step
  allreduce  no ps: each worker holds the whole model on its task; tf.train.AllReduceOptimizer (actorflow's)
             averages the workers' gradients by all-reduce each step, after a broadcast of worker 0's
             variables (Horovod's model); every worker initializes its own, worker 0 saves"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import actorflow as tf  # noqa: E402  (was: import tensorflow as tf)
import fashion_mnist  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["async", "sync", "allreduce"], default="async")
    ap.add_argument("--steps", type=int, default=600, help="global steps to train")
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--dir", help="the chief's checkpoints (restored when it starts again)")
    a = ap.parse_args()
    config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    if not config:
        raise SystemExit("train_distributed.py: no TF_CONFIG (run it under `actorflow launch`)")
    spec = tf.train.ClusterSpec(config["cluster"])
    job, index = config["task"]["type"], int(config["task"]["index"])
    server = tf.train.Server(spec, job_name=job, task_index=index)
    if job == "ps":  # when run as a ps task itself (actorflow launch runs `actorflow server` instead)
        server.join()
        return
    workers = spec.num_tasks("worker")
    is_chief = index == 0
    train_x, train_y, test_x, test_y = fashion_mnist.load()
    shard_x, shard_y = train_x[index::workers], train_y[index::workers]

    device = "/job:worker/task:%d" % index
    with tf.device(device if a.mode == "allreduce" else
                   tf.train.replica_device_setter(cluster=spec, worker_device=device)):
        x = tf.placeholder(tf.float32, [None, 784])
        y = tf.placeholder(tf.int32, [None])
        with tf.variable_scope("mlp"):
            h = tf.nn.relu(tf.matmul(x, tf.get_variable("w1", [784, 256])) +
                           tf.get_variable("b1", [256], initializer=tf.zeros_initializer()))
            logits = tf.matmul(h, tf.get_variable("w2", [256, 10])) + \
                tf.get_variable("b2", [10], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1, output_type=tf.int32), y), tf.float32))
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.AdamOptimizer(a.lr)
        hooks = [tf.train.StopAtStepHook(last_step=a.steps)]
        if a.mode == "sync":
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=workers, total_num_replicas=workers)
            hooks.append(opt.make_session_run_hook(is_chief))
        if a.mode == "allreduce":
            opt = tf.train.AllReduceOptimizer(opt, group_size=workers, timeout_seconds=120)
            hooks.append(opt.make_session_run_hook(is_source=is_chief))
        train = opt.minimize(loss, global_step=global_step)

    rng = np.random.RandomState(index)
    t0 = time.time()
    # All-reduce: each worker's variables are its own, so each initializes them (the broadcast then makes
    # them worker 0's); with a ps, the chief initializes the shared ones and the others wait for it.
    # A session sees the ps tasks and its own task unless told otherwise: an all-reduce group is every worker.
    config = tf.ConfigProto(device_filters=["/job:worker"]) if a.mode == "allreduce" else None
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief or a.mode == "allreduce",
                                           config=config,
                                           checkpoint_dir=a.dir if is_chief else None, hooks=hooks,
                                           save_checkpoint_secs=None if not a.dir else 30,
                                           save_summaries_steps=None, log_step_count_steps=None) as sess:
        local = 0
        while not sess.should_stop():
            idx = rng.randint(0, len(shard_x), a.batch)
            _, l, step = sess.run([train, loss, global_step], {x: shard_x[idx], y: shard_y[idx]})
            local += 1
            if local % 100 == 0:
                print("worker %d: local step %d, global step %d, loss %.4f (%.0f examples/s)" % (
                    index, local, step, l, local * a.batch / (time.time() - t0)), flush=True)
            if step >= a.steps:
                break
        if is_chief:
            acc = sess.run(accuracy, {x: test_x, y: test_y})
            print("chief: %d global steps, test accuracy %.2f%%" % (sess.run(global_step), 100 * acc), flush=True)


if __name__ == "__main__":
    main()
