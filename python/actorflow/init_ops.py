"""Initializers (tf.zeros_initializer, tf.glorot_uniform_initializer, ...): callables from (shape, dtype) to a
tensor that initializes a variable."""

import math

import numpy as np

from actorflow import array_ops
from actorflow import dtypes
from actorflow import random_ops

__all__ = ["Initializer", "zeros_initializer", "ones_initializer", "constant_initializer",
           "random_normal_initializer", "random_uniform_initializer", "truncated_normal_initializer",
           "glorot_uniform_initializer", "glorot_normal_initializer", "variance_scaling_initializer"]


class Initializer(object):
    def __call__(self, shape, dtype=None, partition_info=None):
        raise NotImplementedError


class zeros_initializer(Initializer):  # noqa: N801 (TensorFlow's names)
    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.zeros(shape, dtype or self.dtype)


class ones_initializer(Initializer):  # noqa: N801
    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.ones(shape, dtype or self.dtype)


class constant_initializer(Initializer):  # noqa: N801
    def __init__(self, value=0, dtype=dtypes.float32, verify_shape=False):
        self.value, self.dtype = value, dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.constant(self.value, dtype=dtype or self.dtype, shape=shape)


class random_normal_initializer(Initializer):  # noqa: N801
    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        self.mean, self.stddev, self.seed, self.dtype = mean, stddev, seed, dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_normal(shape, self.mean, self.stddev, dtype or self.dtype, seed=self.seed)


class truncated_normal_initializer(Initializer):  # noqa: N801
    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        self.mean, self.stddev, self.seed, self.dtype = mean, stddev, seed, dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.truncated_normal(shape, self.mean, self.stddev, dtype or self.dtype, seed=self.seed)


class random_uniform_initializer(Initializer):  # noqa: N801
    def __init__(self, minval=0, maxval=None, seed=None, dtype=dtypes.float32):
        self.minval, self.maxval, self.seed, self.dtype = minval, maxval, seed, dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_uniform(shape, self.minval, self.maxval, dtype or self.dtype, seed=self.seed)


class variance_scaling_initializer(Initializer):  # noqa: N801
    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None, dtype=dtypes.float32):
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        shape = list(shape)
        fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1]) if shape else 1.0
        fan_out = float(shape[-1]) if shape else 1.0
        if len(shape) > 2:
            receptive = float(np.prod(shape[:-2]))
            fan_in, fan_out = fan_in * receptive, fan_out * receptive
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        dtype = dtype or self.dtype
        if self.distribution in ("normal", "truncated_normal"):
            return random_ops.truncated_normal(shape, 0.0, math.sqrt(scale) / .87962566103423978, dtype,
                                               seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(shape, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)


def glorot_uniform_initializer(seed=None, dtype=dtypes.float32):
    return variance_scaling_initializer(1.0, "fan_avg", "uniform", seed, dtype)


def glorot_normal_initializer(seed=None, dtype=dtypes.float32):
    return variance_scaling_initializer(1.0, "fan_avg", "truncated_normal", seed, dtype)
