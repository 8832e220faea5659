"""tf.nn: activations, softmax and cross entropies, convolutions and pooling, bias_add, dropout, moments,
l2_loss, in_top_k, top_k, embedding_lookup."""

import numpy as np

from actorflow import array_ops
from actorflow import dtypes
from actorflow import framework
from actorflow import gen_ops
from actorflow import math_ops
from actorflow import random_ops
from actorflow.framework import convert_to_tensor

__all__ = ["relu", "relu6", "leaky_relu", "elu", "selu", "sigmoid", "tanh", "softplus", "softsign", "softmax",
           "log_softmax", "bias_add", "conv2d", "max_pool", "avg_pool", "dropout", "l2_loss", "l2_normalize",
           "moments", "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
           "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits", "in_top_k", "top_k",
           "embedding_lookup", "batch_normalization", "fused_batch_norm", "xw_plus_b", "zero_fraction"]

relu = gen_ops.relu
sigmoid = math_ops.sigmoid
tanh = math_ops.tanh
l2_loss = gen_ops.l2_loss


def relu6(features, name=None):
    return math_ops.minimum(gen_ops.relu(features), 6.0, name=name)


def leaky_relu(features, alpha=0.2, name=None):
    return gen_ops.leaky_relu(features, alpha=alpha, name=name)


def elu(features, name=None):
    with framework.name_scope(name, "Elu"):
        x = convert_to_tensor(features)
        return array_ops.where(x > 0, x, math_ops.expm1(x))


def selu(features, name=None):
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    with framework.name_scope(name, "Selu"):
        x = convert_to_tensor(features)
        return scale * array_ops.where(x > 0, x, alpha * math_ops.expm1(x))


def softplus(features, name=None):
    with framework.name_scope(name, "Softplus"):
        x = convert_to_tensor(features)
        return math_ops.maximum(x, 0.0) + math_ops.log1p(math_ops.exp(-math_ops.abs(x)))


def softsign(features, name=None):
    with framework.name_scope(name, "Softsign"):
        x = convert_to_tensor(features)
        return x / (1.0 + math_ops.abs(x))


def _last_axis(fn, logits, axis, name):
    logits = convert_to_tensor(logits)
    if axis is None or axis == -1 or (logits.shape.ndims is not None and axis == logits.shape.ndims - 1):
        return fn(logits, name=name)
    perm = list(range(logits.shape.ndims))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return array_ops.transpose(fn(array_ops.transpose(logits, perm)), perm, name=name)


def softmax(logits, axis=None, name=None, dim=None):
    return _last_axis(gen_ops.softmax, logits, axis if axis is not None else dim, name)


def log_softmax(logits, axis=None, name=None, dim=None):
    return _last_axis(gen_ops.log_softmax, logits, axis if axis is not None else dim, name)


def bias_add(value, bias, data_format=None, name=None):
    return gen_ops.bias_add(value, bias, data_format=data_format, name=name)


def xw_plus_b(x, weights, biases, name=None):
    with framework.name_scope(name, "xw_plus_b"):
        return bias_add(math_ops.matmul(x, weights), biases)


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True, data_format="NHWC",  # noqa: A002
           dilations=(1, 1, 1, 1), name=None, filters=None):
    return gen_ops.conv2d(input, filter if filter is not None else filters, strides=list(strides), padding=padding,
                          data_format=data_format, dilations=list(dilations), name=name)


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
    return gen_ops.max_pool(value if value is not None else input, ksize=list(ksize), strides=list(strides),
                            padding=padding, data_format=data_format, name=name)


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
    return gen_ops.avg_pool(value if value is not None else input, ksize=list(ksize), strides=list(strides),
                            padding=padding, data_format=data_format, name=name)


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """Scales kept elements by 1/keep_prob and zeroes the others (keep_prob may be a fed tensor)."""
    if keep_prob is None:
        if rate is None:
            raise ValueError("dropout needs keep_prob or rate")
        keep_prob = 1 - rate if not isinstance(rate, framework.Tensor) else 1.0 - rate
    with framework.name_scope(name, "dropout"):
        x = convert_to_tensor(x)
        keep = convert_to_tensor(keep_prob, dtype=x.dtype.base_dtype)
        shape = noise_shape if noise_shape is not None else array_ops.shape(x)
        noise = keep + random_ops.random_uniform(shape, dtype=x.dtype.base_dtype, seed=seed)
        out = x / keep * math_ops.floor(noise)
        out.set_shape(x.shape)  # as TensorFlow's: the noise's shape comes from a tensor
        return out


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    with framework.name_scope(name, "l2_normalize"):
        x = convert_to_tensor(x)
        sq = math_ops.reduce_sum(math_ops.square(x), axis if axis is not None else dim, keepdims=True)
        return x * math_ops.rsqrt(math_ops.maximum(sq, epsilon))


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=False):
    keep = keep_dims if keep_dims is not None else keepdims
    with framework.name_scope(name, "moments"):
        x = convert_to_tensor(x)
        mean = math_ops.reduce_mean(x, axes, keepdims=True)
        variance = math_ops.reduce_mean(math_ops.squared_difference(x, gen_ops.stop_gradient(mean)), axes,
                                        keepdims=True)
        if not keep:
            mean = array_ops.squeeze(mean, axes)
            variance = array_ops.squeeze(variance, axes)
        return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    with framework.name_scope(name, "batchnorm"):
        inv = math_ops.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv = inv * scale
        return x * inv + ((offset - mean * inv) if offset is not None else -mean * inv)


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001, data_format="NHWC",
                     is_training=True, name=None):
    empty = np.zeros([0], np.float32)
    y, m, v, _, _ = gen_ops.fused_batch_norm(x, scale, offset, mean if mean is not None else empty,
                                             variance if variance is not None else empty, epsilon=epsilon,
                                             data_format=data_format, is_training=is_training, name=name)
    return y, m, v


def softmax_cross_entropy_with_logits_v2(labels=None, logits=None, axis=-1, name=None, dim=None, _sentinel=None):
    if labels is None or logits is None:
        raise ValueError("Only call `softmax_cross_entropy_with_logits` with named arguments (labels=..., logits=...)")
    with framework.name_scope(name, "softmax_cross_entropy_with_logits"):
        logits = convert_to_tensor(logits)
        labels = convert_to_tensor(labels, dtype=logits.dtype.base_dtype)
        loss, _ = gen_ops.softmax_cross_entropy_with_logits(logits, labels)
        return loss


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1, name=None, axis=None):
    return softmax_cross_entropy_with_logits_v2(labels=gen_ops.stop_gradient(convert_to_tensor(labels)),
                                                logits=logits, name=name)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    if labels is None or logits is None:
        raise ValueError("Only call `sparse_softmax_cross_entropy_with_logits` with named arguments "
                         "(labels=..., logits=...)")
    with framework.name_scope(name, "SparseSoftmaxCrossEntropyWithLogits"):
        loss, _ = gen_ops.sparse_softmax_cross_entropy_with_logits(logits, labels)
        return loss


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    with framework.name_scope(name, "logistic_loss"):
        logits = convert_to_tensor(logits)
        labels = convert_to_tensor(labels, dtype=logits.dtype.base_dtype)
        zeros = array_ops.zeros_like(logits)
        relu_logits = array_ops.where(logits >= zeros, logits, zeros)
        neg_abs = array_ops.where(logits >= zeros, -logits, logits)
        return relu_logits - logits * labels + math_ops.log1p(math_ops.exp(neg_abs))


def in_top_k(predictions, targets, k, name=None):
    return gen_ops.in_top_kv2(predictions, targets, convert_to_tensor(k, dtype=convert_to_tensor(targets).dtype),
                              name=name)


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002
    return gen_ops.top_kv2(input, convert_to_tensor(k, dtype=dtypes.int32), sorted=sorted, name=name)


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True, max_norm=None):
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError("embedding_lookup over partitioned params")
        params = params[0]
    return array_ops.gather(params, ids, name=name)


def zero_fraction(value, name=None):
    with framework.name_scope(name, "zero_fraction"):
        value = convert_to_tensor(value)
        return math_ops.reduce_mean(math_ops.cast(math_ops.equal(value, array_ops.zeros_like(value)),
                                                  dtypes.float32))
