"""tf.layers (TensorFlow 1.x's functional layers) and tf.losses: dense, conv2d, pooling, flatten, dropout over
get_variable (reused under variable_scope(reuse=...)), and the common losses (mean over the batch, added to the
LOSSES collection)."""

import numpy as np

from actorflow import array_ops
from actorflow import dtypes
from actorflow import framework
from actorflow import init_ops
from actorflow import math_ops
from actorflow import nn
from actorflow import variables
from actorflow.framework import GraphKeys, convert_to_tensor

__all__ = ["dense", "conv2d", "max_pooling2d", "average_pooling2d", "flatten", "dropout"]


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=init_ops.zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
          trainable=True, name=None, reuse=None, **kwargs):
    inputs = convert_to_tensor(inputs)
    with variables.variable_scope(name, default_name="dense", reuse=reuse):
        kernel = variables.get_variable("kernel", [inputs.shape[-1].value, units], dtype=inputs.dtype.base_dtype,
                                        initializer=kernel_initializer, regularizer=kernel_regularizer,
                                        trainable=trainable)
        if inputs.shape.ndims == 2:
            out = math_ops.matmul(inputs, kernel)
        else:  # over the last axis
            out = array_ops.reshape(math_ops.matmul(array_ops.reshape(inputs, [-1, inputs.shape[-1].value]), kernel),
                                    array_ops.concat([array_ops.shape(inputs)[:-1], [units]], 0))
            out.set_shape(inputs.shape[:-1].concatenate([units]))
        if use_bias:
            bias = variables.get_variable("bias", [units], dtype=inputs.dtype.base_dtype,
                                          initializer=bias_initializer, regularizer=bias_regularizer,
                                          trainable=trainable)
            out = nn.bias_add(out, bias)
        return activation(out) if activation is not None else out


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
           dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer=None,
           bias_initializer=init_ops.zeros_initializer(), kernel_regularizer=None, bias_regularizer=None,
           trainable=True, name=None, reuse=None, **kwargs):
    if data_format != "channels_last":
        raise NotImplementedError("tf.layers.conv2d: channels_last (NHWC) only")
    inputs = convert_to_tensor(inputs)
    k = (kernel_size, kernel_size) if np.isscalar(kernel_size) else tuple(kernel_size)
    s = (strides, strides) if np.isscalar(strides) else tuple(strides)
    with variables.variable_scope(name, default_name="conv2d", reuse=reuse):
        kernel = variables.get_variable("kernel", [k[0], k[1], inputs.shape[-1].value, filters],
                                        dtype=inputs.dtype.base_dtype, initializer=kernel_initializer,
                                        regularizer=kernel_regularizer, trainable=trainable)
        d = (dilation_rate, dilation_rate) if np.isscalar(dilation_rate) else tuple(dilation_rate)
        out = nn.conv2d(inputs, kernel, [1, s[0], s[1], 1], padding.upper(), dilations=[1, d[0], d[1], 1])
        if use_bias:
            out = nn.bias_add(out, variables.get_variable("bias", [filters], dtype=inputs.dtype.base_dtype,
                                                          initializer=bias_initializer,
                                                          regularizer=bias_regularizer, trainable=trainable))
        return activation(out) if activation is not None else out


def _pool(fn, inputs, pool_size, strides, padding, name, data_format="channels_last"):
    if data_format != "channels_last":
        raise NotImplementedError("tf.layers pooling: channels_last (NHWC) only")
    p = (pool_size, pool_size) if np.isscalar(pool_size) else tuple(pool_size)
    s = (strides, strides) if np.isscalar(strides) else tuple(strides)
    return fn(inputs, [1, p[0], p[1], 1], [1, s[0], s[1], 1], padding.upper(), name=name)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    return _pool(nn.max_pool, inputs, pool_size, strides, padding, name, data_format)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    return _pool(nn.avg_pool, inputs, pool_size, strides, padding, name, data_format)


def flatten(inputs, name=None, data_format="channels_last"):
    inputs = convert_to_tensor(inputs)
    dims = inputs.shape.as_list()[1:]
    if all(d is not None for d in dims):
        return array_ops.reshape(inputs, [-1, int(np.prod(dims))], name=name)
    return array_ops.reshape(inputs, array_ops.stack([array_ops.shape(inputs)[0], -1]), name=name)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Dropout while `training` (a bool or a bool tensor), the identity otherwise."""
    if isinstance(training, bool):
        return nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed, name=name) if training else \
            array_ops.identity(inputs, name=name)
    from actorflow import control_flow_ops
    return control_flow_ops.cond(training, lambda: nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed),
                                 lambda: array_ops.identity(inputs), name=name)


class losses(object):  # noqa: N801 (tf.losses)
    """tf.losses: the mean over the batch (weights scale each example), added to the LOSSES collection."""

    Reduction = type("Reduction", (), {"MEAN": "weighted_mean", "SUM": "weighted_sum",
                                       "SUM_BY_NONZERO_WEIGHTS": "weighted_sum_by_nonzero_weights"})

    @staticmethod
    def _finish(per_example, weights, scope, loss_collection, reduction=None):
        """TensorFlow's reductions: the weighted sum over the count of nonzero weights (the default), over
        the weights' sum (MEAN), or the sum (SUM)."""
        per_example = convert_to_tensor(per_example)
        w = convert_to_tensor(weights, dtype=per_example.dtype.base_dtype) * array_ops.ones_like(per_example)
        total = math_ops.reduce_sum(per_example * w)
        reduction = reduction or losses.Reduction.SUM_BY_NONZERO_WEIGHTS
        if reduction == losses.Reduction.SUM:
            loss = total
        elif reduction == losses.Reduction.MEAN:
            loss = math_ops.div_no_nan(total, math_ops.reduce_sum(w))
        else:
            nonzero = math_ops.reduce_sum(math_ops.cast(math_ops.not_equal(w, 0.0), per_example.dtype.base_dtype))
            loss = math_ops.div_no_nan(total, nonzero)
        if loss_collection:
            framework.add_to_collection(loss_collection, loss)
        return loss

    @staticmethod
    def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                                     reduction=None):
        with framework.name_scope(scope, "sparse_softmax_cross_entropy_loss"):
            per = nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            return losses._finish(per, weights, scope, loss_collection, reduction)

    @staticmethod
    def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                              loss_collection=GraphKeys.LOSSES, reduction=None):
        with framework.name_scope(scope, "softmax_cross_entropy_loss"):
            logits = convert_to_tensor(logits)
            labels = math_ops.cast(onehot_labels, logits.dtype.base_dtype)
            if label_smoothing:
                n = math_ops.cast(array_ops.shape(labels)[-1], logits.dtype.base_dtype)
                labels = labels * (1.0 - label_smoothing) + label_smoothing / n
            per = nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
            return losses._finish(per, weights, scope, loss_collection, reduction)

    @staticmethod
    def mean_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                           reduction=None):
        with framework.name_scope(scope, "mean_squared_error"):
            predictions = convert_to_tensor(predictions)
            labels = math_ops.cast(labels, predictions.dtype.base_dtype)
            return losses._finish(math_ops.squared_difference(predictions, labels), weights, scope,
                                  loss_collection, reduction)

    @staticmethod
    def get_losses(scope=None, loss_collection=GraphKeys.LOSSES):
        return framework.get_collection(loss_collection, scope)

    @staticmethod
    def get_regularization_loss(scope=None, name="total_regularization_loss"):
        reg = framework.get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)
        return math_ops.add_n(reg, name=name) if reg else array_ops.constant(0.0, dtype=dtypes.float32, name=name)

    @staticmethod
    def get_total_loss(add_regularization_losses=True, name="total_loss"):
        parts = losses.get_losses()
        if add_regularization_losses:
            parts = parts + framework.get_collection(GraphKeys.REGULARIZATION_LOSSES)
        return math_ops.add_n(parts, name=name)
