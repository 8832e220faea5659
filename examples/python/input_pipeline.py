"""The MLP 784-256-10 trained on Fashion-MNIST read from TFRecord files through a queue-based input pipeline,
as TensorFlow 1.x programs did (examples/input_pipeline.cpp in C++):

    TFRecord shards --> filename queue (shuffled, num_epochs)
        --> 2 readers (TFRecordReader, DecodeRaw) --> shuffle_batch_join --> dequeue_many(batch) in the step

    PYTHONPATH=build/python /usr/bin/python3 examples/python/input_pipeline.py [--epochs 1] [--batch 100]
        [--dir DIR] [--train-limit N]

First it writes the training set as 4 TFRecord shards into --dir (one record per image: the label byte, then
the 784 pixel bytes), unless they are there. QueueRunners keep the queues fed on their own Python threads
(the GIL is released while their steps wait) while the main thread trains; a Coordinator stops them at the end
of input (OutOfRangeError after num_epochs) and joins them."""

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import actorflow as tf  # noqa: E402  (was: import tensorflow as tf)
import fashion_mnist  # noqa: E402


def write_shards(directory, images, labels, shards=4):
    names = [os.path.join(directory, "train-%d-of-%d.tfrecord" % (i, shards)) for i in range(shards)]
    if all(os.path.exists(n) for n in names):
        return names
    pixels = np.round(images * 255).astype(np.uint8)
    for i, name in enumerate(names):
        with tf.python_io.TFRecordWriter(name + ".tmp") as w:
            for j in range(i, len(labels), shards):
                w.write(bytes([labels[j]]) + pixels[j].tobytes())
        os.replace(name + ".tmp", name)
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "actorflow_input_pipeline"))
    ap.add_argument("--train-limit", type=int, default=0)
    a = ap.parse_args()
    train_x, train_y, test_x, test_y = fashion_mnist.load()
    if a.train_limit:
        train_x, train_y = train_x[:a.train_limit], train_y[:a.train_limit]
        a.dir = a.dir + "_%d" % a.train_limit
    os.makedirs(a.dir, exist_ok=True)
    files = write_shards(a.dir, train_x, train_y)

    filenames = tf.train.string_input_producer(files, num_epochs=a.epochs, shuffle=True, seed=1)
    examples = []
    for _ in range(2):  # two readers, each its own queue runner
        _, record = tf.TFRecordReader().read(filenames)
        raw = tf.decode_raw(record, tf.uint8)
        label = tf.cast(raw[0], tf.int32)
        image = tf.cast(raw[1:], tf.float32) / 255.0
        image.set_shape([784])
        examples.append([image, label])
    images, labels = tf.train.shuffle_batch_join(examples, batch_size=a.batch, capacity=20 * a.batch,
                                                 min_after_dequeue=10 * a.batch, seed=1)
    eval_x = tf.placeholder(tf.float32, [None, 784])
    eval_y = tf.placeholder(tf.int32, [None])

    def mlp(inp):
        with tf.variable_scope("mlp", reuse=tf.AUTO_REUSE):
            h = tf.nn.relu(tf.matmul(inp, tf.get_variable("w1", [784, 256])) +
                           tf.get_variable("b1", [256], initializer=tf.zeros_initializer()))
            return tf.matmul(h, tf.get_variable("w2", [256, 10])) + \
                tf.get_variable("b2", [10], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=mlp(images)))
    train = tf.train.AdamOptimizer(a.lr).minimize(loss)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(mlp(eval_x), 1, output_type=tf.int32), eval_y),
                                      tf.float32))

    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        step, t0, total = 0, time.time(), 0.0
        try:
            while not coord.should_stop():
                _, l = sess.run([train, loss])
                total += l
                step += 1
                if step % 200 == 0:
                    print("step %d: loss %.4f (%.0f examples/s)" % (step, total / 200, step * a.batch /
                                                                   (time.time() - t0)), flush=True)
                    total = 0.0
        except tf.errors.OutOfRangeError:
            print("end of input after %d steps (%d epochs)" % (step, a.epochs))
        finally:
            coord.request_stop()
        coord.join(threads)
        acc = sess.run(accuracy, {eval_x: test_x, eval_y: test_y})
        print("test accuracy %.2f%%" % (100 * acc), flush=True)


if __name__ == "__main__":
    main()
