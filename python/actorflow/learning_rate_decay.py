"""Learning-rate schedules over the global step (tf.train.exponential_decay, piecewise_constant, ...)."""

from actorflow import control_flow_ops
from actorflow import dtypes
from actorflow import framework
from actorflow import math_ops
from actorflow.framework import convert_to_tensor

__all__ = ["exponential_decay", "inverse_time_decay", "natural_exp_decay", "piecewise_constant",
           "polynomial_decay"]


def _rate(learning_rate):
    """The learning rate as a float tensor: its own dtype when a tensor, float32 for a Python number."""
    if isinstance(learning_rate, framework.Tensor) and learning_rate.dtype.base_dtype.is_floating:
        return learning_rate
    return convert_to_tensor(learning_rate, dtype=dtypes.float32)


def _step(global_step, dtype):
    if global_step is None:
        raise ValueError("global_step is required")
    return math_ops.cast(global_step, dtype)


def _decay(name, learning_rate, global_step, decay_steps, decay_rate, staircase, fn):
    """fn(lr, rate, p) with p = global_step / decay_steps (floored with staircase)."""
    with framework.name_scope(None, name):
        lr = _rate(learning_rate)
        p = _step(global_step, lr.dtype) / convert_to_tensor(decay_steps, dtype=lr.dtype)
        if staircase:
            p = math_ops.floor(p)
        return fn(lr, convert_to_tensor(decay_rate, dtype=lr.dtype), p)


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """learning_rate * decay_rate ^ (global_step / decay_steps) (the exponent floored with staircase)."""
    return _decay(name or "ExponentialDecay", learning_rate, global_step, decay_steps, decay_rate, staircase,
                  lambda lr, rate, p: lr * math_ops.pow(rate, p))


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    return _decay(name or "NaturalExpDecay", learning_rate, global_step, decay_steps, decay_rate, staircase,
                  lambda lr, rate, p: lr * math_ops.exp(-rate * p))


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    return _decay(name or "InverseTimeDecay", learning_rate, global_step, decay_steps, decay_rate, staircase,
                  lambda lr, rate, p: lr / (1.0 + rate * p))


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False,
                     name=None):
    if cycle:
        raise NotImplementedError("polynomial_decay(cycle=True)")
    with framework.name_scope(name, "PolynomialDecay"):
        lr = _rate(learning_rate)
        steps = convert_to_tensor(decay_steps, dtype=lr.dtype)
        p = math_ops.minimum(_step(global_step, lr.dtype), steps) / steps
        end = convert_to_tensor(end_learning_rate, dtype=lr.dtype)
        return (lr - end) * math_ops.pow(1.0 - p, power) + end


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <= boundaries[i], then values[-1]."""
    if len(values) != len(boundaries) + 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with framework.name_scope(name, "PiecewiseConstant"):
        x = convert_to_tensor(x)
        pairs = [(math_ops.less_equal(x, convert_to_tensor(b, dtype=x.dtype.base_dtype)), v)
                 for b, v in zip(boundaries, values[:-1])]
        dtype = framework._default_dtype(values[0])  # int values give int32, floats float32, as TensorFlow's
        fns = [(p, (lambda v=v: convert_to_tensor(v, dtype=dtype))) for p, v in pairs]
        return control_flow_ops.case(fns, default=lambda: convert_to_tensor(values[-1], dtype=dtype))
