"""Building ops from Python values (TensorFlow's op_def_library): the registry's op signatures,
convert_to_tensor and constant (Python and numpy values to Const ops of the dtype an op wants), and _apply_op,
the body of every generated wrapper in gen_ops.py: it converts the inputs, infers type attrs from the given
tensors, builds the node in the current name scope, device and control dependencies (framework.Graph), and
returns its outputs as Tensors (a namedtuple for several outputs, lists for list outputs)."""

import collections
import contextlib

import numpy as np

from actorflow import dtypes
from actorflow.framework import Operation, Tensor, _signature, get_default_graph
from actorflow.tensor_shape import as_shape

__all__ = ["convert_to_tensor", "constant", "register_tensor_conversion_function", "is_tensor"]

# --- converting values to tensors -------------------------------------------------------------

_conversion_functions = []


def register_tensor_conversion_function(base_type, conversion_func, priority=100):
    _conversion_functions.append((priority, base_type, conversion_func))
    _conversion_functions.sort(key=lambda e: e[0])


def is_tensor(x):
    return isinstance(x, Tensor)


def _default_dtype(value):
    if isinstance(value, (bool, np.bool_)):
        return dtypes.bool
    if isinstance(value, int):
        return dtypes.int32 if -2 ** 31 <= value < 2 ** 31 else dtypes.int64
    if isinstance(value, float):
        return dtypes.float32
    if isinstance(value, (str, bytes)):
        return dtypes.string
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return dtypes.as_dtype(value.dtype)
    arr = np.asarray(value)
    if arr.dtype == np.float64:
        return dtypes.float32
    if arr.dtype == np.int64:
        return dtypes.int32 if arr.size == 0 or (arr.min() >= -2 ** 31 and arr.max() < 2 ** 31) else dtypes.int64
    if arr.dtype.kind in "SUO":
        return dtypes.string
    return dtypes.as_dtype(arr.dtype)


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None, as_ref=False):
    """A Tensor for `value`: itself, a Variable's value, or a Const of a Python or numpy value."""
    if isinstance(value, Tensor):
        if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
            raise ValueError("Tensor conversion requested dtype %s for Tensor with dtype %s: %r" %
                             (dtypes.as_dtype(dtype).name, value.dtype.name, value))
        return value
    for _, base_type, fn in _conversion_functions:
        if isinstance(value, base_type):
            t = fn(value, dtype=dtype, name=name, as_ref=as_ref)
            if t is not NotImplemented:
                return t
    if isinstance(value, Operation):
        raise TypeError("Can't convert Operation '%s' to Tensor (target dtype=%s, name=%s, as_ref=%s)" %
                        (value.name, dtype, name, as_ref))
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) or hasattr(v, "_as_graph_element")
                                                 for v in _flatten(value)):
        from actorflow import array_ops
        return array_ops._autopacking(value, dtype, name)
    return constant(value, dtype=dtype if dtype is not None else preferred_dtype, name=name or "Const")


def _flatten(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            for x in _flatten(v):
                yield x
    else:
        yield value


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    """A Const op holding `value` (a Python or numpy value), converted to `dtype`, broadcast to `shape`."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype).base_dtype
    else:
        dtype = _default_dtype(value)
    if dtype == dtypes.string:
        arr = np.asarray(value, dtype=object)
    else:
        if isinstance(value, (list, tuple)) and any(isinstance(v, (str, bytes)) for v in _flatten(value)):
            raise TypeError("Expected %s, got %r of type 'str' instead." % (dtype.name, next(
                v for v in _flatten(value) if isinstance(v, (str, bytes)))))
        src = np.asarray(value)
        if src.dtype.kind == "f" and dtype.is_integer:
            raise TypeError("Expected %s, got %r of type '%s' instead." % (dtype.name, value, type(value).__name__))
        if src.dtype.kind in "SUO" and dtype != dtypes.string:
            raise TypeError("Expected %s, got %r of type '%s' instead." % (dtype.name, value, type(value).__name__))
        arr = src.astype(dtype.as_numpy_dtype)
    if shape is not None:
        shape = list(as_shape(shape).as_list())
        if arr.shape != tuple(shape):
            if verify_shape:
                raise TypeError("Expected Tensor's shape: %s, got %s." % (tuple(shape), arr.shape))
            if arr.size == 1:
                arr = np.full(shape, arr.reshape(()), dtype=arr.dtype)
            elif arr.size == int(np.prod(shape)):
                arr = arr.reshape(shape)
            else:
                raise TypeError("Expected Tensor's shape: %s, got %s." % (tuple(shape), arr.shape))
    g = get_default_graph()
    return g._create_op("Const", name, [], {"value": np.array(arr, order="C", copy=False), "dtype": dtype})._outputs[0]


def _graph_of(values, default=None):
    graph = default
    first = None
    for v in values:
        if hasattr(v, "graph") and isinstance(v, (Tensor, Operation)):
            if graph is None:
                graph, first = v.graph, v
            elif v.graph is not graph:
                raise ValueError("Tensor(\"%s\") must be from the same graph as Tensor(\"%s\")." %
                                 (v.name, first.name if first is not None else "?"))
    return graph


def _apply_op(op_type, name, inputs, attrs):
    """Builds one op from Python values: the body of every generated wrapper."""
    sig = _signature(op_type)
    in_args = sig["inputs"]
    if len(inputs) != len(in_args):
        raise TypeError("%s takes %d inputs, got %d" % (op_type, len(in_args), len(inputs)))
    flat = []
    for v, arg in zip(inputs, in_args):
        if arg["number_attr"] or arg["type_list_attr"]:
            if not isinstance(v, (list, tuple)):
                raise TypeError("Expected list for '%s' argument to '%s' Op, not %r." % (arg["name"], op_type, v))
            flat.extend(v)
        else:
            flat.append(v)
    ctx_graph = get_default_graph()
    graph = _graph_of([v._as_graph_element() if hasattr(v, "_as_graph_element") else v for v in flat]) or ctx_graph
    # Type attrs the given tensors decide, then the other values converted to them.
    bound = {k: dtypes.as_dtype(v) for k, v in attrs.items() if v is not None and any(
        a["name"] == k and a["kind"] == "type" for a in sig["attrs"])}
    for v, arg in zip(inputs, in_args):
        ta = arg["type_attr"]
        if ta and ta not in bound:
            for x in (v if isinstance(v, (list, tuple)) and arg["number_attr"] else [v]):
                if isinstance(x, Tensor):
                    bound[ta] = x.dtype.base_dtype
                    break
                if hasattr(x, "_as_graph_element") and hasattr(x, "dtype"):
                    bound[ta] = dtypes.as_dtype(x.dtype).base_dtype
                    break
    args = []
    with graph.as_default() if graph is not ctx_graph else contextlib.nullcontext():
        for v, arg in zip(inputs, in_args):
            want = None
            if arg["type"]:
                want = dtypes.as_dtype(arg["type"])
            elif arg["type_attr"] and arg["type_attr"] in bound:
                want = bound[arg["type_attr"]]
            if arg["number_attr"] or arg["type_list_attr"]:
                ts = [_to_input(x, want, arg, op_type) for x in v]
            else:
                ts = [_to_input(v, want, arg, op_type)]
                if arg["type_attr"] and arg["type_attr"] not in bound:
                    bound[arg["type_attr"]] = ts[0].dtype.base_dtype
            args.append([t._c_output() for t in ts])
        op = graph._create_op(op_type, name, args, dict(attrs))
    return _outputs_of(op, sig)


def _to_input(value, want, arg, op_type):
    if hasattr(value, "_as_graph_element") and not isinstance(value, Tensor):
        if arg["is_ref"] and hasattr(value, "_ref"):
            return value._ref()
        value = convert_to_tensor(value, as_ref=arg["is_ref"])
    if isinstance(value, Tensor):
        if want is not None and value.dtype.base_dtype != want:
            raise TypeError("Input '%s' of '%s' Op has type %s that does not match expected type of %s." %
                            (arg["name"], op_type, value.dtype.base_dtype.name, want.name))
        return value
    try:
        return convert_to_tensor(value, dtype=want)
    except (TypeError, ValueError) as e:
        raise TypeError("Expected %s passed to parameter '%s' of op '%s', got %r of type '%s' instead. Error: %s" %
                        (want.name if want is not None else "a tensor", arg["name"], op_type, value,
                         type(value).__name__, e))


def _outputs_of(op, sig):
    outs = sig["outputs"]
    if not outs:
        return op
    tensors = op._outputs
    if len(outs) == 1 and not outs[0]["number_attr"] and not outs[0]["type_list_attr"]:
        return tensors[0]
    result, i = [], 0
    for arg in outs:
        if arg["number_attr"]:
            n = op.get_attr(arg["number_attr"])
            result.append(tensors[i:i + n])
            i += n
        elif arg["type_list_attr"]:
            n = len(op._c_op.get_attr(arg["type_list_attr"]))
            result.append(tensors[i:i + n])
            i += n
        else:
            result.append(tensors[i])
            i += 1
    if len(outs) == 1:
        return result[0]
    return _output_tuple(op.type, [a["name"] for a in outs])(*result)


_tuples = {}


def _output_tuple(op_type, names):
    t = _tuples.get(op_type)
    if t is None:
        t = _tuples[op_type] = collections.namedtuple(op_type, names)
    return t
