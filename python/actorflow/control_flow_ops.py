"""Control flow (tf.while_loop, tf.cond, tf.group, tf.tuple, tf.case, tf.Assert): loops and conditionals are
built by the C++ builder (client/ops/control_flow.hpp, TensorFlow 1.x's frames and node names), which calls the
Python functions to build the condition, the body and the branches."""

import builtins as _builtins

from actorflow import dtypes
from actorflow import framework
from actorflow import gen_ops
from actorflow.framework import Operation, Tensor, convert_to_tensor

_builtin_tuple = _builtins.tuple

__all__ = ["while_loop", "cond", "group", "tuple", "no_op", "case", "Assert", "identity", "with_dependencies"]


def no_op(name=None):
    return gen_ops.no_op(name=name)


def group(*inputs, **kwargs):
    """One op that runs after all of `inputs` (a NoOp with control inputs)."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError("Unknown keyword arguments: " + ", ".join(kwargs))
    ops = []
    for i in inputs:
        if isinstance(i, (list, _builtin_tuple)):
            ops.extend(i)
        elif i is not None:
            ops.append(i)
    deps = []
    for o in ops:
        if hasattr(o, "_as_graph_element"):
            o = o._as_graph_element()
        deps.append(o.op if isinstance(o, Tensor) else o)
    graph = framework._graph_of(deps) or framework.get_default_graph()
    with graph.as_default(), graph.control_dependencies(deps):
        return gen_ops.no_op(name=name)


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001 (TensorFlow's name)
    """The tensors, each available only once all of them are computed."""
    with framework.name_scope(name, "tuple"):
        gate = group(*[t for t in tensors if t is not None] + list(control_inputs or []))
        out = []
        with framework.control_dependencies([gate]):
            for t in tensors:
                out.append(None if t is None else gen_ops.identity(t) if isinstance(t, Tensor) else gate)
        return out


def with_dependencies(dependencies, output_tensor, name=None):
    with framework.name_scope(name, "control_dependency"):
        with framework.control_dependencies(dependencies):
            return gen_ops.identity(output_tensor)


def identity(x, name=None):
    return gen_ops.identity(x, name=name)


def _flatten(structure):
    if isinstance(structure, (list, _builtin_tuple)):
        out = []
        for s in structure:
            out.extend(_flatten(s))
        return out
    if isinstance(structure, dict):
        out = []
        for k in sorted(structure):
            out.extend(_flatten(structure[k]))
        return out
    return [structure]


def _pack_as(structure, flat, start=0):
    if isinstance(structure, (list, _builtin_tuple)):
        out = []
        for s in structure:
            v, start = _pack_as(s, flat, start)
            out.append(v)
        if isinstance(structure, _builtin_tuple):
            out = type(structure)(*out) if hasattr(structure, "_fields") else _builtin_tuple(out)
        return out, start
    if isinstance(structure, dict):
        out = {}
        for k in sorted(structure):
            out[k], start = _pack_as(structure[k], flat, start)
        return out, start
    return flat[start], start + 1


def _wrap(graph, outputs):
    return [graph._wrap_op(o.op).outputs[o.index] for o in outputs]


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,
               swap_memory=False, name=None, maximum_iterations=None, return_same_structure=False):
    """Repeats `body` while `cond` is true (tf.while_loop): iterations run concurrently as far as their inputs
    allow (`parallel_iterations`), each under its frame tag."""
    if not callable(cond) or not callable(body):
        raise TypeError("cond and body must be callable.")
    single = not isinstance(loop_vars, (list, _builtin_tuple, dict))
    structure = [loop_vars] if single else loop_vars
    flat = [convert_to_tensor(v) for v in _flatten(structure)]
    if not flat:
        raise ValueError("No loop variables provided")
    graph = framework._graph_of(flat) or framework.get_default_graph()
    invariants = []
    if shape_invariants is not None:
        invariants = [None if s is None else s for s in _flatten([shape_invariants] if single else shape_invariants)]
    loop_name = name or "while"

    def call(fn, scope, vars_):
        with graph._in_c_scope(scope):
            packed, _ = _pack_as(structure, _wrap(graph, vars_))
            if single:
                return fn(packed[0])
            if isinstance(structure, dict):
                return fn(packed)
            return fn(*packed)

    def cond_fn(scope, vars_):
        r = call(cond, scope, vars_)
        with graph._in_c_scope(scope):
            return convert_to_tensor(r, dtype=dtypes.bool)._c_output()

    def body_fn(scope, vars_):
        r = call(body, scope, vars_)
        with graph._in_c_scope(scope):
            if single:
                r = [r] if not isinstance(r, (list, _builtin_tuple)) or len(flat) > 1 else list(r)
            out = _flatten(r)
            if len(out) != len(flat):
                raise ValueError("The two structures don't have the same number of elements: body returned %d "
                                 "values for %d loop variables" % (len(out), len(flat)))
            res = []
            for o, v in zip(out, flat):
                t = o if isinstance(o, Tensor) else (
                    o if isinstance(o, Operation) else convert_to_tensor(o, dtype=v.dtype.base_dtype))
                if isinstance(t, Operation):
                    raise TypeError("While loop body returned an Operation where a Tensor was expected: %s" % t.name)
                res.append(t._c_output())
            return res

    scope = graph._scope_stack[-1][1]
    outs = scope.while_loop([t._c_output() for t in flat], cond_fn, body_fn, parallel_iterations,
                            -1 if maximum_iterations is None else int(maximum_iterations), invariants, loop_name)
    packed, _ = _pack_as(structure, _wrap(graph, outs))
    return packed[0] if single else packed


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """`true_fn()`'s results when `pred` is true, else `false_fn()`'s; the branch not taken does not run."""
    true_fn = true_fn or fn1
    false_fn = false_fn or fn2
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("true_fn and false_fn must be callable.")
    pred = convert_to_tensor(pred, dtype=dtypes.bool)
    graph = pred.graph
    structure = {}

    def branch(fn, key):
        def build(scope):
            with graph._in_c_scope(scope):
                r = fn()
                structure[key] = r
                flat = _flatten(r if isinstance(r, (list, _builtin_tuple, dict)) else [r])
                outs = []
                for t in flat:
                    if isinstance(t, Operation):
                        with framework.control_dependencies([t]):
                            t = gen_ops.identity(convert_to_tensor(True))
                    outs.append(convert_to_tensor(t)._c_output())
                return outs
        return build

    scope = graph._scope_stack[-1][1]
    outs = scope.cond(pred._c_output(), branch(true_fn, True), branch(false_fn, False), name or "cond")
    r = structure[True]
    tensors = _wrap(graph, outs)
    if isinstance(r, (list, _builtin_tuple, dict)):
        packed, _ = _pack_as(r, tensors)
        return packed
    return tensors[0]


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The first true predicate's function's result (nested conds), else default()'s."""
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else list(pred_fn_pairs)
    if default is None:
        pairs, (_, default) = pairs[:-1], pairs[-1]
    with framework.name_scope(name):
        fn = default
        for p, f in reversed(pairs):
            fn = (lambda p_, f_, rest: lambda: cond(p_, f_, rest))(p, f, fn)
        return fn()


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 (TensorFlow's name)
    """An op that fails the step with InvalidArgument (naming the data) when `condition` is false."""
    data = [convert_to_tensor(d) for d in data]
    return gen_ops.assert_(condition, data, summarize=summarize, name=name)
