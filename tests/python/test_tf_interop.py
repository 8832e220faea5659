"""What TensorFlow wrote, loaded from Python: TensorFlow 2.10's Keras SavedModel (tests/data/tensorflow/keras_cnn)
through tf.saved_model.loader.load classifies MNIST as Keras did; and graphs round-trip through GraphDef bytes."""

import os

import numpy as np

import actorflow as tf

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "tensorflow")


def test_keras_saved_model_loads_and_classifies():
    raw = np.fromfile(os.path.join(DATA, "mnist_t10k_200.bin"), dtype=np.uint8)
    n = 200
    images = raw[:n * 784].reshape(n, 28, 28).astype(np.float64)
    labels = raw[n * 784:]
    # tf.keras.utils.normalize(x, axis=1), as the model was trained: each column to unit L2 norm.
    norms = np.sqrt((images ** 2).sum(axis=1, keepdims=True))
    x = np.where(norms > 0, images / np.where(norms > 0, norms, 1), 0).astype(np.float32).reshape(n, 28, 28, 1)
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING],
                                          os.path.join(DATA, "keras_cnn"))
        sig = meta.signature_def["serving_default"]
        out = sess.run(sig.outputs["dense_1"].name, {sig.inputs["conv2d_input"].name: x})
    assert out.shape == (n, 10)
    assert (out.argmax(1) == labels).mean() >= 0.97  # Keras reported ~99%; misread weights give ~10%


def test_missing_saved_model_is_not_found(tmp_path):
    with tf.Session(graph=tf.Graph()) as sess:
        try:
            tf.saved_model.loader.load(sess, ["serve"], str(tmp_path))
        except tf.errors.NotFoundError as e:
            assert str(tmp_path) in str(e)
        else:
            raise AssertionError("no error")
