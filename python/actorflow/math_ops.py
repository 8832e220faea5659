"""TensorFlow 1.x's math: tf.add ... tf.reduce_sum, tf.matmul, tf.cast, and Tensor's operators (+ - * / // % ** @
comparisons, unary - abs ~ and indexing), with broadcasting as the ops define it."""

import numpy as np

from actorflow import dtypes
from actorflow import framework
from actorflow import gen_ops
from actorflow.framework import Tensor, convert_to_tensor

__all__ = ["add", "add_n", "subtract", "multiply", "divide", "truediv", "realdiv", "floordiv", "floormod", "mod",
           "pow", "maximum", "minimum", "squared_difference", "negative", "abs", "exp", "log", "log1p", "expm1",
           "sqrt", "rsqrt", "square", "tanh", "sigmoid", "sign", "sin", "cos", "floor", "ceil", "round",
           "reciprocal", "erf", "matmul", "cast", "to_float", "to_int32", "to_int64", "to_double", "reduce_sum",
           "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_all", "reduce_any", "argmax",
           "argmin", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
           "logical_or", "logical_not", "logical_xor", "cumsum", "cumprod", "range", "div", "div_no_nan",
           "scalar_mul", "count_nonzero", "sub", "mul", "neg", "accumulate_n", "reduce_logsumexp", "is_nan", "is_finite",
           "is_inf"]


def _binary(fn, x, y, name):
    if not isinstance(x, Tensor) and isinstance(y, Tensor):
        x = convert_to_tensor(x, dtype=y.dtype.base_dtype)
    return fn(x, y, name=name)


def add(x, y, name=None):
    x = convert_to_tensor(x) if not isinstance(x, Tensor) and not isinstance(y, Tensor) else x
    if (isinstance(x, Tensor) and x.dtype.base_dtype == dtypes.string):
        return gen_ops.add(x, y, name=name)
    return _binary(gen_ops.add_v2, x, y, name)


def subtract(x, y, name=None):
    return _binary(gen_ops.sub, x, y, name)


def multiply(x, y, name=None):
    return _binary(gen_ops.mul, x, y, name)


def realdiv(x, y, name=None):
    return _binary(gen_ops.real_div, x, y, name)


def truediv(x, y, name=None):
    """Python 3's /: integers are divided as floats (float32 for int8/16, float64 for int32/64)."""
    x = x if isinstance(x, Tensor) else convert_to_tensor(x, dtype=y.dtype.base_dtype if isinstance(y, Tensor) else None)
    y = y if isinstance(y, Tensor) else convert_to_tensor(y, dtype=x.dtype.base_dtype)
    if x.dtype.base_dtype.is_integer:
        to = dtypes.float32 if x.dtype.base_dtype.size <= 2 else dtypes.float64
        x, y = cast(x, to), cast(y, to)
    return gen_ops.real_div(x, y, name=name)


def divide(x, y, name=None):
    return truediv(x, y, name)


def div(x, y, name=None):
    """TensorFlow 1.x's tf.div: floor division for integers, true division for floats."""
    return _binary(gen_ops.div, x, y, name)


def div_no_nan(x, y, name=None):
    return _binary(gen_ops.div_no_nan, x, y, name)


def floordiv(x, y, name=None):
    return _binary(gen_ops.floor_div, x, y, name)


def floormod(x, y, name=None):
    return _binary(gen_ops.floor_mod, x, y, name)


mod = floormod


def pow(x, y, name=None):  # noqa: A001 (TensorFlow's name)
    return _binary(gen_ops.pow, x, y, name)


def maximum(x, y, name=None):
    return _binary(gen_ops.maximum, x, y, name)


def minimum(x, y, name=None):
    return _binary(gen_ops.minimum, x, y, name)


def squared_difference(x, y, name=None):
    return _binary(gen_ops.squared_difference, x, y, name)


def negative(x, name=None):
    return gen_ops.neg(x, name=name)


def abs(x, name=None):  # noqa: A001
    return gen_ops.abs(x, name=name)


exp, log, log1p, expm1 = gen_ops.exp, gen_ops.log, gen_ops.log1p, gen_ops.expm1
sqrt, rsqrt, square, tanh, sigmoid, sign = gen_ops.sqrt, gen_ops.rsqrt, gen_ops.square, gen_ops.tanh, \
    gen_ops.sigmoid, gen_ops.sign
sin, cos, floor, ceil, reciprocal, erf = gen_ops.sin, gen_ops.cos, gen_ops.floor, gen_ops.ceil, gen_ops.reciprocal, \
    gen_ops.erf
sub, mul, neg = subtract, multiply, negative


def round(x, name=None):  # noqa: A001
    return gen_ops.round(x, name=name)


def equal(x, y, name=None):
    return _binary(gen_ops.equal, x, y, name)


def not_equal(x, y, name=None):
    return _binary(gen_ops.not_equal, x, y, name)


def less(x, y, name=None):
    return _binary(gen_ops.less, x, y, name)


def less_equal(x, y, name=None):
    return _binary(gen_ops.less_equal, x, y, name)


def greater(x, y, name=None):
    return _binary(gen_ops.greater, x, y, name)


def greater_equal(x, y, name=None):
    return _binary(gen_ops.greater_equal, x, y, name)


logical_and, logical_or, logical_not = gen_ops.logical_and, gen_ops.logical_or, gen_ops.logical_not


def logical_xor(x, y, name="LogicalXor"):
    with framework.name_scope(name):
        return logical_and(logical_or(x, y), logical_not(logical_and(x, y)))


def is_nan(x, name=None):
    x = convert_to_tensor(x)
    return not_equal(x, x, name=name)


def is_finite(x, name=None):
    """x - x is 0 exactly when x is finite (inf - inf and NaN - NaN are NaN)."""
    x = convert_to_tensor(x)
    return equal(x - x, convert_to_tensor(0, dtype=x.dtype.base_dtype), name=name)


def is_inf(x, name=None):
    x = convert_to_tensor(x)
    return logical_and(logical_not(is_finite(x)), equal(x, x), name=name)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
           b_is_sparse=False, name=None):
    return gen_ops.mat_mul(a, b, transpose_a=transpose_a or adjoint_a, transpose_b=transpose_b or adjoint_b,
                           name=name)


def add_n(inputs, name=None):
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and shape")
    inputs = [convert_to_tensor(i) for i in inputs]
    if len(inputs) == 1:
        return gen_ops.identity(inputs[0], name=name) if name else inputs[0]
    return gen_ops.add_n(inputs, name=name)


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    return add_n(inputs, name=name)


def scalar_mul(scalar, x, name=None):
    return multiply(scalar, x, name=name)


def cast(x, dtype, name=None):
    dtype = dtypes.as_dtype(dtype).base_dtype
    x = convert_to_tensor(x)
    if x.dtype.base_dtype == dtype:
        return x
    return gen_ops.cast(x, DstT=dtype, name=name)


def to_float(x, name="ToFloat"):
    return cast(x, dtypes.float32, name=name)


def to_double(x, name="ToDouble"):
    return cast(x, dtypes.float64, name=name)


def to_int32(x, name="ToInt32"):
    return cast(x, dtypes.int32, name=name)


def to_int64(x, name="ToInt64"):
    return cast(x, dtypes.int64, name=name)


def _axes(x, axis, reduction_indices):
    if axis is None:
        axis = reduction_indices
    if axis is None:
        rank = x.shape.ndims
        if rank is not None:
            return np.arange(rank, dtype=np.int32)
        return gen_ops.range(0, gen_ops.rank(x), 1)
    return axis


def _reduce(fn, input_tensor, axis, keepdims, name, reduction_indices, keep_dims):
    x = convert_to_tensor(input_tensor)
    if keep_dims is not None:
        keepdims = keep_dims
    axes = _axes(x, axis, reduction_indices)
    if not isinstance(axes, Tensor):
        axes = np.asarray(axes, dtype=np.int32)
    return fn(x, axes, keep_dims=bool(keepdims), name=name)


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    return _reduce(gen_ops.sum, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    return _reduce(gen_ops.mean, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    return _reduce(gen_ops.max, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    return _reduce(gen_ops.min, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_prod(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    return _reduce(gen_ops.prod, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_all(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    return _reduce(gen_ops.all, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_any(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    return _reduce(gen_ops.any, input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None, keep_dims=None):
    with framework.name_scope(name, "ReduceLogSumExp"):
        x = convert_to_tensor(input_tensor)
        m = gen_ops.stop_gradient(reduce_max(x, axis, keepdims=True, reduction_indices=reduction_indices))
        out = log(reduce_sum(exp(x - m), axis, keepdims=True, reduction_indices=reduction_indices)) + m
        if not (keep_dims if keep_dims is not None else keepdims):
            from actorflow import array_ops
            out = array_ops.squeeze(out, axis if axis is not None else reduction_indices)
        return out


def count_nonzero(input_tensor, axis=None, keepdims=None, dtype=dtypes.int64, name=None, reduction_indices=None,
                  keep_dims=None):
    x = convert_to_tensor(input_tensor)
    zero = convert_to_tensor(np.zeros((), dtype=x.dtype.as_numpy_dtype))
    return cast(reduce_sum(cast(not_equal(x, zero), dtypes.int64), axis, keepdims, None, reduction_indices,
                           keep_dims), dtype, name=name)


def argmax(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    axis = dimension if axis is None else axis
    return gen_ops.arg_max(input, 0 if axis is None else axis, output_type=output_type, name=name)


def argmin(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    axis = dimension if axis is None else axis
    return gen_ops.arg_min(input, 0 if axis is None else axis, output_type=output_type, name=name)


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    return gen_ops.cumsum(x, axis, exclusive=exclusive, reverse=reverse, name=name)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    return gen_ops.cumprod(x, axis, exclusive=exclusive, reverse=reverse, name=name)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    if limit is None:
        start, limit = 0, start
    values = [start, limit, delta]
    if dtype is None:
        dtype = max((v.dtype.base_dtype if isinstance(v, Tensor) else framework._default_dtype(v) for v in values),
                    key=lambda d: [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64].index(d))
    values = [cast(v, dtype) if isinstance(v, Tensor) else convert_to_tensor(v, dtype=dtype) for v in values]
    return gen_ops.range(*values, name=name)


# --- Tensor's operators ---------------------------------------------------------------------------

def _install_operators():
    def binary(fn, reverse=False, name=None):
        if reverse:
            return lambda self, other: fn(convert_to_tensor(other, dtype=self.dtype.base_dtype), self, name=name)
        return lambda self, other: fn(self, other, name=name)

    ops = {"add": add, "sub": subtract, "mul": multiply, "truediv": truediv, "floordiv": floordiv,
           "mod": floormod, "pow": pow, "matmul": matmul}
    for key, fn in ops.items():
        setattr(Tensor, "__%s__" % key, binary(fn, name=key))
        setattr(Tensor, "__r%s__" % key, binary(fn, reverse=True, name=key))
    Tensor.__lt__ = binary(less)
    Tensor.__le__ = binary(less_equal)
    Tensor.__gt__ = binary(greater)
    Tensor.__ge__ = binary(greater_equal)
    Tensor.__and__ = binary(logical_and)
    Tensor.__rand__ = binary(logical_and, reverse=True)
    Tensor.__or__ = binary(logical_or)
    Tensor.__ror__ = binary(logical_or, reverse=True)
    Tensor.__xor__ = binary(logical_xor)
    Tensor.__neg__ = lambda self: negative(self)
    Tensor.__abs__ = lambda self: abs(self)
    Tensor.__invert__ = lambda self: logical_not(self)


_install_operators()
