"""Random tensors (tf.random_normal, tf.random_uniform, tf.truncated_normal, tf.random_shuffle), seeded by
TensorFlow's rules: the graph seed (tf.set_random_seed) and the op's seed."""

from actorflow import dtypes
from actorflow import framework
from actorflow import gen_ops
from actorflow.framework import convert_to_tensor

__all__ = ["random_normal", "random_uniform", "truncated_normal", "random_shuffle"]


def _shape(shape):
    from actorflow.array_ops import _shape_arg
    return _shape_arg(shape)


def _normal(op, default_name, shape, mean, stddev, dtype, seed, name):
    """mean + stddev * a draw of `op` (RandomStandardNormal or TruncatedNormal)."""
    dtype = dtypes.as_dtype(dtype)
    with framework.name_scope(name, default_name):
        s1, s2 = framework._seeds(seed)
        rnd = op(_shape(shape), dtype=dtype, seed=s1, seed2=s2)
        return gen_ops.add_v2(rnd * convert_to_tensor(stddev, dtype=dtype), convert_to_tensor(mean, dtype=dtype),
                              name="value")


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    return _normal(gen_ops.random_standard_normal, "random_normal", shape, mean, stddev, dtype, seed, name)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    return _normal(gen_ops.truncated_normal, "truncated_normal", shape, mean, stddev, dtype, seed, name)


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    dtype = dtypes.as_dtype(dtype)
    with framework.name_scope(name, "random_uniform"):
        s1, s2 = framework._seeds(seed)
        if dtype.is_integer:
            if maxval is None:
                raise ValueError("Must specify maxval for integer dtype %r" % dtype)
            return gen_ops.random_uniform_int(_shape(shape), convert_to_tensor(minval, dtype=dtype),
                                              convert_to_tensor(maxval, dtype=dtype), seed=s1, seed2=s2,
                                              name="value")
        maxval = 1 if maxval is None else maxval
        rnd = gen_ops.random_uniform(_shape(shape), dtype=dtype, seed=s1, seed2=s2)
        lo = convert_to_tensor(minval, dtype=dtype)
        return gen_ops.add_v2(rnd * (convert_to_tensor(maxval, dtype=dtype) - lo), lo, name="value")


def random_shuffle(value, seed=None, name=None):
    s1, s2 = framework._seeds(seed)
    return gen_ops.random_shuffle(value, seed=s1, seed2=s2, name=name)
