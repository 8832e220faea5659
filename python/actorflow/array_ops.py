"""TensorFlow 1.x's array ops: placeholder, constant, zeros/ones, reshape, concat, stack, slicing (t[1:, ::2]),
gather, one_hot, ... over the generated wrappers."""

import builtins

import numpy as np

from actorflow import dtypes
from actorflow import framework
from actorflow import gen_ops
from actorflow.framework import Tensor, constant, convert_to_tensor
from actorflow.tensor_shape import TensorShape, as_shape

__all__ = ["placeholder", "placeholder_with_default", "constant", "zeros", "ones", "zeros_like", "ones_like", "fill",
           "reshape", "shape", "size", "rank", "identity", "concat", "stack", "unstack", "pack", "unpack",
           "expand_dims", "squeeze", "transpose", "tile", "pad", "slice", "strided_slice", "split", "gather",
           "gather_nd", "one_hot", "where", "stop_gradient", "shape_n", "boolean_mask", "identity_n", "reverse",
           "unique", "setdiff1d", "scatter_nd", "invert_permutation", "broadcast_to", "matrix_transpose",
           "sequence_mask", "no_op", "newaxis"]

newaxis = None


def placeholder(dtype, shape=None, name=None):
    """A value fed at run time (feed_dict); `shape` None: any shape."""
    return gen_ops.placeholder(dtype=dtypes.as_dtype(dtype), shape=TensorShape(shape) if shape is not None else None,
                               name=name)


def placeholder_with_default(input, shape, name=None):  # noqa: A002
    return gen_ops.placeholder_with_default(input, shape=TensorShape(shape), name=name)


def _shape_arg(shape):
    if isinstance(shape, Tensor):
        return shape
    if isinstance(shape, TensorShape):
        shape = shape.as_list()
    if isinstance(shape, (list, tuple)) and any(isinstance(s, Tensor) for s in shape):
        return stack([s if isinstance(s, Tensor) else convert_to_tensor(s, dtype=dtypes.int32) for s in shape])
    try:
        arr = np.asarray(shape)
        if arr.dtype.kind not in "iu":
            raise TypeError
        return arr.astype(np.int32).reshape(-1)
    except (TypeError, ValueError):
        raise TypeError("Expected int32, got %r of type '%s' instead." % (shape, type(shape).__name__))


def _filled(shape, dtype, value, default_name, name):
    """A Const of `value` when the shape is known now, else Fill of a shape tensor."""
    dtype = dtypes.as_dtype(dtype)
    if not isinstance(shape, Tensor) and all(not isinstance(s, Tensor) for s in np.atleast_1d(np.asarray(shape, object))):
        dims = as_shape(shape).as_list() if not np.isscalar(shape) else [shape]
        return constant(np.full(dims, value, dtype=dtype.as_numpy_dtype), dtype=dtype, name=name or default_name)
    return gen_ops.fill(_shape_arg(shape), constant(value, dtype=dtype), name=name)


def zeros(shape, dtype=dtypes.float32, name=None):
    return _filled(shape, dtype, 0, "zeros", name)


def ones(shape, dtype=dtypes.float32, name=None):
    return _filled(shape, dtype, 1, "ones", name)


def fill(dims, value, name=None):
    return gen_ops.fill(_shape_arg(dims), value, name=name)


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    tensor = convert_to_tensor(tensor)
    if dtype is not None and dtypes.as_dtype(dtype) != tensor.dtype.base_dtype:
        from actorflow import math_ops
        return math_ops.cast(gen_ops.zeros_like(tensor), dtype, name=name)
    return gen_ops.zeros_like(tensor, name=name)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    tensor = convert_to_tensor(tensor)
    if dtype is not None and dtypes.as_dtype(dtype) != tensor.dtype.base_dtype:
        from actorflow import math_ops
        return math_ops.cast(gen_ops.ones_like(tensor), dtype, name=name)
    return gen_ops.ones_like(tensor, name=name)


def reshape(tensor, shape, name=None):
    return gen_ops.reshape(tensor, _shape_arg(shape), name=name)


def shape(input, name=None, out_type=dtypes.int32):  # noqa: A002
    return gen_ops.shape(input, out_type=out_type, name=name)


def shape_n(input, out_type=dtypes.int32, name=None):  # noqa: A002
    return gen_ops.shape_n(list(input), out_type=out_type, name=name)


def size(input, name=None, out_type=dtypes.int32):  # noqa: A002
    return gen_ops.size(input, out_type=out_type, name=name)


def rank(input, name=None):  # noqa: A002
    return gen_ops.rank(input, name=name)


def identity(input, name=None):  # noqa: A002
    if hasattr(input, "_as_graph_element") and not isinstance(input, Tensor):
        input = convert_to_tensor(input)
    return gen_ops.identity(input, name=name)


def identity_n(input, name=None):  # noqa: A002
    return gen_ops.identity_n(list(input), name=name)


def stop_gradient(input, name=None):  # noqa: A002
    return gen_ops.stop_gradient(input, name=name)


def concat(values, axis, name="concat"):
    values = list(values)
    if len(values) == 1:
        return identity(values[0], name=name)
    return gen_ops.concat_v2(values, axis, name=name)


def stack(values, axis=0, name="stack"):
    return gen_ops.pack(list(values), axis=axis, name=name)


pack = stack


def unstack(value, num=None, axis=0, name="unstack"):
    value = convert_to_tensor(value)
    if num is None:
        s = value.shape
        if s.ndims is None or s[axis].value is None:
            raise ValueError("Cannot infer num from shape %s" % s)
        num = s[axis].value
    return gen_ops.unpack(value, num=num, axis=axis, name=name)


unpack = unstack


def _autopacking(values, dtype, name):
    """A list mixing tensors and Python values, stacked (TensorFlow's autopacking)."""
    def pack_one(v):
        if isinstance(v, (list, tuple)):
            return stack([pack_one(x) for x in v])
        return convert_to_tensor(v, dtype=dtype)
    return pack_one(values)


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    return gen_ops.expand_dims(input, axis if axis is not None else dim, name=name)


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002
    axis = axis if axis is not None else squeeze_dims
    if axis is not None and np.isscalar(axis):
        axis = [axis]
    return gen_ops.squeeze(input, squeeze_dims=list(axis) if axis is not None else [], name=name)


def transpose(a, perm=None, name="transpose", conjugate=False):
    a = convert_to_tensor(a)
    if perm is None:
        r = a.shape.ndims
        if r is None:
            from actorflow import math_ops
            rk = gen_ops.rank(a)
            perm = math_ops.range(rk - 1, -1, -1)
        else:
            perm = np.arange(r - 1, -1, -1, dtype=np.int32)
    return gen_ops.transpose(a, perm, name=name)


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    a = convert_to_tensor(a)
    r = a.shape.ndims
    perm = list(np.arange(r - 2)) + [r - 1, r - 2]
    return gen_ops.transpose(a, np.asarray(perm, np.int32), name=name)


def tile(input, multiples, name=None):  # noqa: A002
    return gen_ops.tile(input, multiples, name=name)


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    if mode.upper() != "CONSTANT" or constant_values != 0:
        raise NotImplementedError("pad: only CONSTANT mode with zeros")
    return gen_ops.pad(tensor, paddings, name=name)


def slice(input_, begin, size, name=None):  # noqa: A001
    return gen_ops.slice(input_, begin, size, name=name)


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                  shrink_axis_mask=0, var=None, name=None):
    if strides is None:
        strides = np.ones(len(begin), np.int32) if not isinstance(begin, Tensor) else ones_like(begin)
    return gen_ops.strided_slice(input_, begin, end, strides, begin_mask=begin_mask, end_mask=end_mask,
                                 ellipsis_mask=ellipsis_mask, new_axis_mask=new_axis_mask,
                                 shrink_axis_mask=shrink_axis_mask, name=name)


def _slice_helper(tensor, slice_spec):
    """t[...]: TensorFlow's strided slices (ints, slices, Ellipsis, newaxis)."""
    if isinstance(slice_spec, Tensor) and slice_spec.dtype == dtypes.bool:
        return boolean_mask(tensor, slice_spec)
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]
    begin, end, strides = [], [], []
    shrink, new_axis, ellipsis, begin_mask, end_mask = 0, 0, 0, 0, 0
    for i, s in enumerate(slice_spec):
        if s is Ellipsis:
            begin.append(0), end.append(0), strides.append(1)
            ellipsis |= 1 << i
        elif s is None:
            begin.append(0), end.append(0), strides.append(1)
            new_axis |= 1 << i
        elif isinstance(s, builtins.slice):
            begin.append(0 if s.start is None else s.start)
            end.append(0 if s.stop is None else s.stop)
            strides.append(1 if s.step is None else s.step)
            if s.start is None:
                begin_mask |= 1 << i
            if s.stop is None:
                end_mask |= 1 << i
        else:
            begin.append(s), end.append(s + 1 if not isinstance(s, Tensor) else s + 1), strides.append(1)
            shrink |= 1 << i
    def pack(v):
        if any(isinstance(x, Tensor) for x in v):
            return stack([x if isinstance(x, Tensor) else convert_to_tensor(x, dtype=dtypes.int32) for x in v])
        return np.asarray(v, dtype=np.int32)
    return strided_slice(tensor, pack(begin), pack(end), pack(strides), begin_mask=begin_mask, end_mask=end_mask,
                         ellipsis_mask=ellipsis, new_axis_mask=new_axis, shrink_axis_mask=shrink)


Tensor.__getitem__ = _slice_helper


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    if isinstance(num_or_size_splits, int):
        return gen_ops.split(axis, value, num_split=num_or_size_splits, name=name)
    raise NotImplementedError("split with sizes (SplitV is not registered)")


def gather(params, indices, validate_indices=None, name=None, axis=0):
    if hasattr(params, "_as_graph_element") and not isinstance(params, Tensor):
        params = convert_to_tensor(params)
    return gen_ops.gather_v2(params, indices, axis, name=name)


def gather_nd(params, indices, name=None):
    return gen_ops.gather_nd(params, indices, name=name)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    dtype = dtypes.as_dtype(dtype) if dtype is not None else (
        on_value.dtype.base_dtype if isinstance(on_value, Tensor) else dtypes.float32)
    on = convert_to_tensor(1 if on_value is None else on_value, dtype=dtype)
    off = convert_to_tensor(0 if off_value is None else off_value, dtype=dtype)
    return gen_ops.one_hot(indices, convert_to_tensor(depth, dtype=dtypes.int32), on, off,
                           axis=-1 if axis is None else axis, name=name)


def where(condition, x=None, y=None, name=None):
    if x is None and y is None:
        return gen_ops.where(condition, name=name)
    return gen_ops.select(condition, x, y, name=name)


def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    with framework.name_scope(name):
        tensor = convert_to_tensor(tensor)
        idx = squeeze(where(mask), axis=[1])
        return gen_ops.gather_v2(tensor, idx, 0)


def reverse(tensor, axis, name=None):
    raise NotImplementedError("reverse (ReverseV2 is not registered)")


def unique(x, out_idx=dtypes.int32, name=None):
    return gen_ops.unique(x, out_idx=out_idx, name=name)


def setdiff1d(x, y, index_dtype=dtypes.int32, name=None):
    return gen_ops.list_diff(x, y, out_idx=index_dtype, name=name)


def scatter_nd(indices, updates, shape, name=None):
    return gen_ops.scatter_nd(indices, updates, shape, name=name)


def invert_permutation(x, name=None):
    return gen_ops.invert_permutation(x, name=name)


def broadcast_to(input, shape, name=None):  # noqa: A002
    return convert_to_tensor(input) + zeros(shape, dtype=convert_to_tensor(input).dtype)


def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool, name=None):
    from actorflow import math_ops
    lengths = convert_to_tensor(lengths)
    if maxlen is None:
        maxlen = math_ops.reduce_max(lengths)
    r = math_ops.range(0, maxlen, 1, dtype=lengths.dtype.base_dtype)
    mask = math_ops.less(r, expand_dims(lengths, -1))
    return mask if dtypes.as_dtype(dtype) == dtypes.bool else math_ops.cast(mask, dtype, name=name)


def no_op(name=None):
    return gen_ops.no_op(name=name)
