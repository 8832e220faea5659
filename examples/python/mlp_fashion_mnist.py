"""The MLP 784-256-10 on Fashion-MNIST, as a TensorFlow 1.x program (examples/train_fashion_mnist.cpp in C++).

    PYTHONPATH=build/python /usr/bin/python3 examples/python/mlp_fashion_mnist.py [--epochs 3] [--batch 100]
        [--lr 0.001] [--checkpoint-dir DIR] [--logdir DIR] [--train-limit N]

Adam through feed_dict, the test accuracy after each epoch, a checkpoint per epoch (restored when the program
starts again with the same --checkpoint-dir), and with --logdir the graph and the loss for TensorBoard. Only
the import differs from the TensorFlow 1.x program."""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import actorflow as tf  # noqa: E402  (was: import tensorflow as tf)
import fashion_mnist  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--checkpoint-dir")
    ap.add_argument("--logdir")
    ap.add_argument("--train-limit", type=int, default=0, help="use only the first N training images")
    a = ap.parse_args()
    train_x, train_y, test_x, test_y = fashion_mnist.load()
    if a.train_limit:
        train_x, train_y = train_x[:a.train_limit], train_y[:a.train_limit]

    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 784], name="images")
    y = tf.placeholder(tf.int32, [None], name="labels")
    with tf.variable_scope("hidden"):
        h = tf.nn.relu(tf.matmul(x, tf.get_variable("w", [784, 256])) +
                       tf.get_variable("b", [256], initializer=tf.zeros_initializer()))
    with tf.variable_scope("out"):
        logits = tf.matmul(h, tf.get_variable("w", [256, 10])) + \
            tf.get_variable("b", [10], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1, output_type=tf.int32), y), tf.float32))
    global_step = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(a.lr).minimize(loss, global_step=global_step)
    tf.summary.scalar("loss", loss)
    summaries = tf.summary.merge_all()
    saver = tf.train.Saver(max_to_keep=3)
    writer = tf.summary.FileWriter(a.logdir, tf.get_default_graph()) if a.logdir else None

    with tf.Session() as sess:
        latest = tf.train.latest_checkpoint(a.checkpoint_dir) if a.checkpoint_dir else None
        if latest:
            saver.restore(sess, latest)
            print("restored %s (step %d)" % (latest, sess.run(global_step)))
        else:
            sess.run(tf.global_variables_initializer())
        steps_per_epoch = len(train_x) // a.batch
        first_epoch = sess.run(global_step) // steps_per_epoch
        rng = np.random.RandomState(first_epoch)
        for epoch in range(first_epoch, a.epochs):
            order = rng.permutation(len(train_x))
            t0, total = time.time(), 0.0
            for i in range(steps_per_epoch):
                idx = order[i * a.batch:(i + 1) * a.batch]
                fetches = [train, loss, summaries] if writer else [train, loss]
                out = sess.run(fetches, {x: train_x[idx], y: train_y[idx]})
                total += out[1]
                if writer:
                    writer.add_summary(out[2], epoch * steps_per_epoch + i)
            acc = sess.run(accuracy, {x: test_x, y: test_y})
            print("epoch %d/%d: loss %.4f, test accuracy %.2f%% (%.1f s, %.0f examples/s)" % (
                epoch + 1, a.epochs, total / steps_per_epoch, 100 * acc, time.time() - t0,
                steps_per_epoch * a.batch / (time.time() - t0)), flush=True)
            if a.checkpoint_dir:
                os.makedirs(a.checkpoint_dir, exist_ok=True)
                saver.save(sess, os.path.join(a.checkpoint_dir, "model.ckpt"), global_step=global_step)
    if writer:
        writer.close()


if __name__ == "__main__":
    main()
