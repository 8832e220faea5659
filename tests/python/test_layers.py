"""TensorFlow 1.x's conveniences built on the ops: tf.layers (dense, conv2d, pooling, flatten, dropout) reusing
variables by scope, tf.losses, clipping by value and by global norm, and learning-rate schedules; a small CNN
written with them trains."""

import numpy as np

import actorflow as tf


def run(t, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(t, feed)


def test_dense_layers_share_variables_under_reuse():
    x = tf.constant(np.ones([2, 3], np.float32))
    y = tf.layers.dense(x, 4, activation=tf.nn.relu, name="fc")
    with tf.variable_scope("", reuse=True):
        y2 = tf.layers.dense(x, 4, activation=tf.nn.relu, name="fc")
    names = sorted(v.name for v in tf.trainable_variables())
    assert names == ["fc/bias:0", "fc/kernel:0"]
    a, b = run([y, y2])
    assert a.shape == (2, 4)
    np.testing.assert_array_equal(a, b)


def test_unnamed_layers_are_named_as_tensorflow_names_them():
    x = tf.constant(np.ones([2, 3, 5], np.float32))
    h = tf.layers.dense(tf.layers.dense(x, 4), 2)  # over the last axis of a rank-3 input
    assert h.shape.as_list() == [2, 3, 2]
    assert sorted(v.name for v in tf.trainable_variables()) == ["dense/bias:0", "dense/kernel:0",
                                                                 "dense_1/bias:0", "dense_1/kernel:0"]
    p = tf.placeholder(tf.float32, [None, None, 3])
    assert run(tf.layers.flatten(p), {p: np.ones([2, 4, 3], np.float32)}).shape == (2, 12)


def test_losses_and_clipping_against_numpy():
    logits = np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.2]], np.float32)
    labels = np.array([0, 1], np.int32)
    soft = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    assert tf.losses.get_losses() == [loss]
    np.testing.assert_allclose(run(loss), -np.log(soft[[0, 1], labels]).mean(), rtol=1e-5)
    np.testing.assert_allclose(run(tf.losses.mean_squared_error([1.0, 2.0], [1.5, 4.0])), (0.25 + 4.0) / 2)
    # TensorFlow's default reduction: the weighted sum over the count of nonzero weights.
    np.testing.assert_allclose(run(tf.losses.mean_squared_error([1.0, 2.0], [1.5, 4.0], weights=[2.0, 0.0])), 0.5)
    np.testing.assert_allclose(run(tf.losses.mean_squared_error([1.0, 2.0], [1.5, 4.0], weights=0.5)),
                               0.5 * (0.25 + 4.0) / 2)
    z = tf.placeholder(tf.float32, [2])
    dz = tf.gradients(tf.reduce_sum(tf.clip_by_norm(z, 1.0)), z)[0]
    assert np.all(np.isfinite(run(dz, {z: np.zeros(2, np.float32)})))  # no NaN at an all-zero input
    a, b = np.array([3.0, 4.0], np.float32), np.array([12.0], np.float32)
    (ca, cb), norm = tf.clip_by_global_norm([a, b], 6.5)
    got_a, got_b, got_norm = run([ca, cb, norm])
    assert got_norm == 13.0
    np.testing.assert_allclose(got_a, a * 0.5)
    np.testing.assert_allclose(got_b, b * 0.5)
    np.testing.assert_array_equal(run(tf.clip_by_value([-2.0, 0.5, 9.0], -1.0, 1.0)), [-1.0, 0.5, 1.0])
    np.testing.assert_allclose(run(tf.clip_by_norm([3.0, 4.0], 1.0)), [0.6, 0.8], rtol=1e-6)


def test_learning_rate_schedules():
    step = tf.placeholder(tf.int64, [])
    lr = tf.train.exponential_decay(0.1, step, 100, 0.5)
    stair = tf.train.exponential_decay(0.1, step, 100, 0.5, staircase=True)
    piece = tf.train.piecewise_constant(step, [10, 20], [1.0, 0.5, 0.1])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(lr, {step: 150}), 0.1 * 0.5 ** 1.5, rtol=1e-6)
        np.testing.assert_allclose(sess.run(stair, {step: 150}), 0.05, rtol=1e-6)
        assert [sess.run(piece, {step: s}) for s in (5, 10, 15, 25)] == [1.0, 1.0, 0.5, np.float32(0.1)]


def test_a_small_cnn_written_with_layers_trains():
    rng = np.random.RandomState(0)
    images = rng.rand(64, 8, 8, 1).astype(np.float32)
    labels = (images[:, :4].mean(axis=(1, 2, 3)) > images[:, 4:].mean(axis=(1, 2, 3))).astype(np.int32)
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    y = tf.placeholder(tf.int32, [None])
    training = tf.placeholder_with_default(False, [])
    h = tf.layers.conv2d(x, 8, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.dropout(tf.layers.flatten(h), rate=0.1, training=training)
    logits = tf.layers.dense(h, 2)
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    grads, _ = tf.clip_by_global_norm(tf.gradients(loss, tf.trainable_variables()), 5.0)
    train = tf.train.AdamOptimizer(0.01).apply_gradients(zip(grads, tf.trainable_variables()))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: images, y: labels})
        for _ in range(100):
            sess.run(train, {x: images, y: labels, training: True})
        last = sess.run(loss, {x: images, y: labels})
    assert last < first * 0.6
