"""Clipping (tf.clip_by_value, tf.clip_by_norm, tf.global_norm, tf.clip_by_global_norm)."""

from actorflow import array_ops
from actorflow import framework
from actorflow import math_ops
from actorflow.framework import convert_to_tensor

__all__ = ["clip_by_value", "clip_by_norm", "global_norm", "clip_by_global_norm"]


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    with framework.name_scope(name, "clip_by_value"):
        t = convert_to_tensor(t)
        return math_ops.minimum(math_ops.maximum(t, clip_value_min), clip_value_max)


def clip_by_norm(t, clip_norm, axes=None, name=None):
    with framework.name_scope(name, "clip_by_norm"):
        t = convert_to_tensor(t)
        l2sum = math_ops.reduce_sum(t * t, axes, keepdims=True)
        positive = math_ops.greater(l2sum, 0.0)
        # TensorFlow's guard: the norm of an all-zero input is taken as 1 (no NaN in its gradient).
        l2 = array_ops.where(positive, math_ops.sqrt(array_ops.where(positive, l2sum, array_ops.ones_like(l2sum))),
                             l2sum)
        clip = convert_to_tensor(clip_norm, dtype=t.dtype.base_dtype)
        return t * clip / math_ops.maximum(l2, clip)


def global_norm(t_list, name=None):
    """sqrt(sum of the squared L2 norms of the tensors); None entries are left out."""
    with framework.name_scope(name, "global_norm"):
        parts = [math_ops.reduce_sum(math_ops.square(convert_to_tensor(t))) for t in t_list if t is not None]
        return math_ops.sqrt(math_ops.add_n(parts))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """The tensors scaled by clip_norm / max(global_norm, clip_norm), and the global norm."""
    t_list = list(t_list)
    with framework.name_scope(name, "clip_by_global_norm"):
        norm = use_norm if use_norm is not None else global_norm(t_list)
        present = [t for t in t_list if t is not None]
        dtype = convert_to_tensor(present[0]).dtype.base_dtype if present else None
        clip = convert_to_tensor(clip_norm, dtype=dtype)
        # An infinite or NaN norm makes every tensor NaN, as TensorFlow's does.
        nan = convert_to_tensor(float("nan"), dtype=dtype)
        scale = array_ops.where(math_ops.is_finite(norm), clip / math_ops.maximum(norm, clip), nan)
        out = [None if t is None else array_ops.identity(convert_to_tensor(t) * scale) for t in t_list]
        return out, norm
