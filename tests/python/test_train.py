"""Training as TensorFlow 1.x writes it: optimizers' updates against their formulas, minimize with a global step,
slots, while_loop and cond (with gradients through them), and a classic program that learns."""

import numpy as np
import pytest

import actorflow as tf

rng = np.random.RandomState(1)


def one_step(opt, w0, g0):
    w = tf.Variable(w0.copy(), name="w")
    loss = tf.reduce_sum(w * tf.constant(g0))  # dloss/dw = g0
    step = opt.minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step)
        first = sess.run(w)
        sess.run(step)
        return first, sess.run(w)


def test_gradient_descent_momentum_adagrad_rmsprop_adam_follow_their_formulas():
    w0 = rng.randn(3).astype(np.float32)
    g = rng.randn(3).astype(np.float32)
    lr = 0.1
    w1, w2 = one_step(tf.train.GradientDescentOptimizer(lr), w0, g)
    np.testing.assert_allclose(w1, w0 - lr * g, rtol=1e-6)
    np.testing.assert_allclose(w2, w0 - 2 * lr * g, rtol=1e-6)

    w1, w2 = one_step(tf.train.MomentumOptimizer(lr, 0.9), w0, g)
    np.testing.assert_allclose(w1, w0 - lr * g, rtol=1e-6)
    np.testing.assert_allclose(w2, w1 - lr * (0.9 * g + g), rtol=1e-5)

    w1, _ = one_step(tf.train.AdagradOptimizer(lr, initial_accumulator_value=0.1), w0, g)
    np.testing.assert_allclose(w1, w0 - lr * g / np.sqrt(0.1 + g * g), rtol=1e-5)

    w1, _ = one_step(tf.train.RMSPropOptimizer(lr, decay=0.9, epsilon=1e-10), w0, g)
    ms = 0.9 * 1.0 + 0.1 * g * g
    np.testing.assert_allclose(w1, w0 - lr * g / np.sqrt(ms + 1e-10), rtol=1e-5)

    w1, w2 = one_step(tf.train.AdamOptimizer(lr), w0, g)
    m, v = 0.1 * g, 0.001 * g * g
    lr_t = lr * np.sqrt(1 - 0.999) / (1 - 0.9)
    np.testing.assert_allclose(w1, w0 - lr_t * m / (np.sqrt(v) + 1e-8), rtol=1e-4)
    m2, v2 = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
    lr_t2 = lr * np.sqrt(1 - 0.999 ** 2) / (1 - 0.9 ** 2)
    np.testing.assert_allclose(w2, w1 - lr_t2 * m2 / (np.sqrt(v2) + 1e-8), rtol=1e-4)


def test_minimize_with_global_step_slots_and_compute_apply():
    w = tf.Variable([1.0, 2.0], name="w")
    loss = tf.reduce_sum(tf.square(w))
    gs = tf.train.get_or_create_global_step()
    opt = tf.train.MomentumOptimizer(0.1, 0.5)
    grads = opt.compute_gradients(loss)
    assert grads[0][1] is w
    train = opt.apply_gradients(grads, global_step=gs)
    assert opt.get_slot(w, "momentum").name == "w/Momentum:0"
    assert opt.get_slot_names() == ["momentum"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        assert sess.run(gs) == 3
        assert tf.train.global_step(sess, gs) == 3
    with pytest.raises(ValueError, match="No gradients"):
        tf.train.GradientDescentOptimizer(0.1).minimize(tf.constant(1.0) + 0.0, var_list=[w])


def test_while_loop_and_cond():
    i = tf.constant(0)
    x = tf.constant(1.0)
    n, y = tf.while_loop(lambda i, x: i < 10, lambda i, x: (i + 1, x * 2.0), [i, x])
    p = tf.placeholder(tf.bool, [])
    a = tf.placeholder(tf.float32, [])
    c = tf.cond(p, lambda: a * 10.0, lambda: a - 1.0)
    cs = tf.cond(p, lambda: (a, a + 1.0), lambda: (a * 0.0, a))
    single = tf.while_loop(lambda v: v < 100, lambda v: v * 3, tf.constant(1))
    with tf.Session() as sess:
        assert sess.run([n, y]) == [10, 1024.0]
        assert sess.run(c, {p: True, a: 2.0}) == 20.0
        assert sess.run(c, {p: False, a: 2.0}) == 1.0
        assert sess.run(cs, {p: False, a: 2.0}) == (0.0, 2.0)
        assert sess.run(single) == 243
    with pytest.raises(ZeroDivisionError):  # a Python error in the body propagates as it is
        tf.while_loop(lambda v: v < 3, lambda v: 1 / 0, [tf.constant(0)])
    assert tf.while_loop(lambda v: v < 3, lambda v: v + 1, [tf.constant(0)], name="again")[0].op.name.startswith(
        "again")


def test_variables_made_inside_a_cond_or_loop_live_outside_it():
    # As TensorFlow's init_scope: the variable and its initializer are not part of the branch or the loop,
    # so global_variables_initializer needs no predicate, and reads inside take its value.
    p = tf.placeholder(tf.bool, [])

    def branch():
        v = tf.get_variable("in_cond", [2], initializer=tf.constant_initializer(3.0))
        return v * 2.0
    out = tf.cond(p, branch, lambda: tf.zeros([2]))

    def body(i, acc):
        w = tf.Variable(0.5, name="in_loop")
        return i + 1, acc + w
    _, total = tf.while_loop(lambda i, acc: i < 4, body, [tf.constant(0), tf.constant(0.0)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())  # no feed of p
        np.testing.assert_array_equal(sess.run(out, {p: True}), [6.0, 6.0])
        np.testing.assert_array_equal(sess.run(out, {p: False}), [0.0, 0.0])
        assert sess.run(total) == 2.0


def test_gradients_through_while_loop_and_cond():
    x = tf.placeholder(tf.float32, [])
    _, y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x), [tf.constant(0), tf.constant(1.0)])
    dy = tf.gradients(y, x)[0]  # y = x^3
    p = tf.placeholder(tf.bool, [])
    z = tf.cond(p, lambda: tf.square(x), lambda: x * 5.0)
    dz = tf.gradients(z, x)[0]
    with tf.Session() as sess:
        assert sess.run(y, {x: 2.0}) == 8.0
        np.testing.assert_allclose(sess.run(dy, {x: 2.0}), 12.0, rtol=1e-6)
        assert sess.run(dz, {x: 3.0, p: True}) == 6.0
        assert sess.run(dz, {x: 3.0, p: False}) == 5.0


def test_a_classic_tf1_program_learns():
    # TensorFlow 1.x's softmax-regression tutorial, unchanged but for the import.
    data = rng.randn(512, 20).astype(np.float32)
    true_w = rng.randn(20, 3).astype(np.float32)
    labels = np.argmax(data @ true_w, 1)
    x = tf.placeholder(tf.float32, [None, 20])
    y_ = tf.placeholder(tf.int64, [None])
    W = tf.Variable(tf.zeros([20, 3]))
    b = tf.Variable(tf.zeros([3]))
    y = tf.matmul(x, W) + b
    cross_entropy = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y_, logits=y))
    train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)
    correct = tf.equal(tf.argmax(y, 1), y_)
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    sess = tf.InteractiveSession()
    tf.global_variables_initializer().run()
    first = accuracy.eval(feed_dict={x: data, y_: labels})
    for i in range(100):
        batch = slice((i * 64) % 512, (i * 64) % 512 + 64)
        sess.run(train_step, feed_dict={x: data[batch], y_: labels[batch]})
    last = sess.run(accuracy, feed_dict={x: data, y_: labels})
    sess.close()
    assert last > 0.9 and last > first
