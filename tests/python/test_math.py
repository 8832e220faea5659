"""Math, array and nn ops against numpy, with broadcasting; gradients against finite differences."""

import numpy as np
import pytest

import actorflow as tf

rng = np.random.RandomState(0)


def run(t, feed=None):
    with tf.Session() as sess:
        return sess.run(t, feed)


@pytest.mark.parametrize("op,ref", [
    (lambda a, b: a + b, np.add), (lambda a, b: a - b, np.subtract), (lambda a, b: a * b, np.multiply),
    (lambda a, b: a / b, np.divide), (tf.maximum, np.maximum), (tf.minimum, np.minimum),
    (tf.squared_difference, lambda a, b: (a - b) ** 2), (lambda a, b: a ** 2.0, lambda a, b: a ** 2.0),
])
def test_binary_ops_broadcast_as_numpy(op, ref):
    a = rng.uniform(0.5, 2, [3, 1, 4]).astype(np.float32)
    b = rng.uniform(0.5, 2, [5, 1]).astype(np.float32)
    np.testing.assert_allclose(run(op(tf.constant(a), tf.constant(b))), ref(a, b), rtol=1e-5)


def test_integer_division_and_comparisons():
    a = np.array([7, -7, 9], np.int32)
    b = np.array([2, 2, -4], np.int32)
    ta, tb = tf.constant(a), tf.constant(b)
    np.testing.assert_array_equal(run(ta // tb), a // b)
    np.testing.assert_array_equal(run(ta % tb), a % b)
    np.testing.assert_allclose(run(ta / tb), a / b)  # Python 3's true division
    np.testing.assert_array_equal(run(ta < tb), a < b)
    np.testing.assert_array_equal(run(tf.equal(ta, 7)), a == 7)
    np.testing.assert_array_equal(run(-ta), -a)
    assert run(tf.logical_and(ta > 0, tb > 0)).tolist() == [True, False, False]


def test_reductions_matmul_and_unary():
    x = rng.randn(4, 5).astype(np.float32)
    t = tf.constant(x)
    np.testing.assert_allclose(run(tf.reduce_sum(t)), x.sum(), rtol=1e-5)
    np.testing.assert_allclose(run(tf.reduce_mean(t, axis=0)), x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(run(tf.reduce_max(t, 1, keepdims=True)), x.max(1, keepdims=True))
    np.testing.assert_array_equal(run(tf.argmax(t, 1)), x.argmax(1))
    np.testing.assert_allclose(run(tf.matmul(t, t, transpose_b=True)), x @ x.T, rtol=1e-5)
    np.testing.assert_allclose(run(t @ tf.transpose(t)), x @ x.T, rtol=1e-5)
    np.testing.assert_allclose(run(tf.exp(t)), np.exp(x), rtol=1e-5)
    np.testing.assert_allclose(run(tf.abs(t)), np.abs(x))
    np.testing.assert_allclose(run(tf.sqrt(tf.abs(t))), np.sqrt(np.abs(x)), rtol=1e-5)
    np.testing.assert_allclose(run(tf.reduce_logsumexp(t, 1)), np.log(np.exp(x).sum(1)), rtol=1e-5)


def test_array_ops_and_slicing():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = tf.constant(x)
    np.testing.assert_array_equal(run(t[1, :, ::2]), x[1, :, ::2])
    np.testing.assert_array_equal(run(t[..., 1:3]), x[..., 1:3])
    np.testing.assert_array_equal(run(t[:, tf.newaxis, 0]), x[:, np.newaxis, 0])
    np.testing.assert_array_equal(run(tf.reshape(t, [4, -1])), x.reshape(4, -1))
    np.testing.assert_array_equal(run(tf.concat([t, t], 1)), np.concatenate([x, x], 1))
    np.testing.assert_array_equal(run(tf.stack([x[0], x[1]], axis=1)), np.stack([x[0], x[1]], 1))
    np.testing.assert_array_equal(run(tf.unstack(t)[1]), x[1])
    np.testing.assert_array_equal(run(tf.transpose(t, [2, 0, 1])), x.transpose(2, 0, 1))
    np.testing.assert_array_equal(run(tf.gather(tf.constant(x[0]), [2, 0])), x[0][[2, 0]])
    np.testing.assert_array_equal(run(tf.one_hot([0, 2], 3)), np.eye(3, dtype=np.float32)[[0, 2]])
    np.testing.assert_array_equal(run(tf.zeros([2, 2], tf.int32)), np.zeros([2, 2]))
    np.testing.assert_array_equal(run(tf.shape(t)), [2, 3, 4])
    np.testing.assert_array_equal(run(tf.squeeze(tf.constant(x[:1]), [0])), x[0])
    np.testing.assert_array_equal(run(tf.where(tf.constant([True, False]), [1, 2], [3, 4])), [1, 4])
    np.testing.assert_array_equal(run(tf.range(2, 10, 3)), np.arange(2, 10, 3))
    np.testing.assert_array_equal(run(tf.tile(tf.constant([1, 2]), [2])), [1, 2, 1, 2])
    np.testing.assert_array_equal(run(tf.pad(tf.constant([[1]]), [[1, 0], [0, 1]])), [[0, 0], [1, 0]])


def test_nn_ops():
    logits = rng.randn(4, 3).astype(np.float32)
    labels = np.array([0, 2, 1, 1], np.int64)
    soft = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    np.testing.assert_allclose(run(tf.nn.softmax(logits)), soft, rtol=1e-5)
    np.testing.assert_allclose(run(tf.nn.relu(tf.constant(logits))), np.maximum(logits, 0))
    loss = run(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    np.testing.assert_allclose(loss, -np.log(soft[np.arange(4), labels]), rtol=1e-5)
    dense = run(tf.nn.softmax_cross_entropy_with_logits_v2(labels=np.eye(3, dtype=np.float32)[labels],
                                                           logits=logits))
    np.testing.assert_allclose(dense, loss, rtol=1e-5)
    np.testing.assert_allclose(run(tf.nn.sigmoid_cross_entropy_with_logits(labels=np.ones_like(logits),
                                                                           logits=logits)),
                               np.log1p(np.exp(-logits)), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(run(tf.nn.l2_loss(tf.constant(logits))), (logits ** 2).sum() / 2, rtol=1e-5)
    np.testing.assert_allclose(run(tf.nn.bias_add(logits, [1.0, 2.0, 3.0])), logits + [1, 2, 3], rtol=1e-6)
    img = rng.randn(1, 4, 4, 1).astype(np.float32)
    np.testing.assert_allclose(run(tf.nn.max_pool(img, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"))[0, :, :, 0],
                               img[0, :, :, 0].reshape(2, 2, 2, 2).max(axis=(1, 3)), rtol=1e-6)
    kept = run(tf.nn.dropout(tf.ones([1000]), keep_prob=0.5, seed=1))
    assert set(np.unique(kept)) <= {0.0, 2.0} and 300 < (kept > 0).sum() < 700


def numeric_grad(f, x, eps=1e-3):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


@pytest.mark.parametrize("build", [
    lambda x, w: tf.reduce_sum(tf.tanh(tf.matmul(x, w))),
    lambda x, w: tf.reduce_mean(tf.nn.softmax(tf.matmul(x, w)) * tf.constant([1.0, 2.0, 3.0], tf.float64)),
    lambda x, w: tf.reduce_sum(tf.nn.relu(x) @ w * tf.sigmoid(w[0])),
    lambda x, w: tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 2], logits=x @ w)),
    lambda x, w: tf.reduce_sum(tf.square(tf.concat([x, x * 2.0], 0)) @ tf.exp(w / 4.0)),
])
def test_gradients_match_finite_differences(build):
    x0 = rng.randn(2, 4)
    w0 = rng.randn(4, 3)
    x = tf.placeholder(tf.float64, [2, 4])
    w = tf.placeholder(tf.float64, [4, 3])
    y = build(x, w)
    gx, gw = tf.gradients(y, [x, w])
    with tf.Session() as sess:
        got_x, got_w = sess.run([gx, gw], {x: x0, w: w0})
        f_x = lambda v: sess.run(y, {x: v, w: w0})  # noqa: E731
        f_w = lambda v: sess.run(y, {x: x0, w: v})  # noqa: E731
        np.testing.assert_allclose(got_x, numeric_grad(f_x, x0), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got_w, numeric_grad(f_w, w0), rtol=1e-4, atol=1e-6)


def test_gradients_of_unconnected_and_stopped():
    x = tf.constant(2.0)
    y = tf.constant(3.0)
    z = x * x
    assert tf.gradients(z, [y]) == [None]
    g = tf.gradients(tf.stop_gradient(z) + x, x)[0]
    assert run(g) == 1.0
    assert tf.gradients(z, x, grad_ys=tf.constant(5.0))[0] is not None
    assert run(tf.gradients(z, x, grad_ys=tf.constant(5.0))[0]) == 20.0
