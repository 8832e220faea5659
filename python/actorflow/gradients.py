"""tf.gradients: the symbolic derivatives of ys with respect to xs, built by the C++ gradient registry
(client/gradients/gradients.hpp), through while loops and conds as well."""

from actorflow import framework
from actorflow import gen_ops
from actorflow.framework import Tensor, convert_to_tensor

__all__ = ["gradients", "stop_gradient"]


def _as_tensor(x, as_ref=False):
    if hasattr(x, "_as_graph_element") and not isinstance(x, Tensor):
        return x._as_graph_element()
    return convert_to_tensor(x)


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False, gate_gradients=False,
              aggregation_method=None, stop_gradients=None, unconnected_gradients="none"):
    """d(sum of ys)/d(each x), one per x: None where an x does not affect the ys (TensorFlow's default), or
    zeros with unconnected_gradients="zero"."""
    if stop_gradients:
        raise NotImplementedError("gradients(stop_gradients=...): use tf.stop_gradient in the graph")
    single_y = not isinstance(ys, (list, tuple))
    ys = [_as_tensor(y) for y in ([ys] if single_y else ys)]
    xs_list = [xs] if not isinstance(xs, (list, tuple)) else list(xs)
    xs_t = [_as_tensor(x) for x in xs_list]
    graph = framework._graph_of(ys + xs_t) or framework.get_default_graph()
    if grad_ys is not None and not isinstance(grad_ys, (list, tuple)):
        grad_ys = [grad_ys]
    with graph.as_default(), graph.name_scope(name):
        given = list(grad_ys) if grad_ys is not None else [None] * len(ys)
        grad_ys = [gen_ops.ones_like(y) if g is None else convert_to_tensor(g, dtype=y.dtype.base_dtype)
                   for g, y in zip(given, ys)]
    scope = graph._scope_stack[-1][1]
    out = scope.gradients([y._c_output() for y in ys], [x._c_output() for x in xs_t],
                          [g._c_output() for g in grad_ys])
    result = []
    for x, g in zip(xs_t, out):
        t = graph._wrap_op(g.op).outputs[g.index]
        if unconnected_gradients == "none" and t.op.type == "ZerosLike" and not _reaches(ys, x):
            t = None
        result.append(t)
    return result


def _reaches(ys, x):
    """Whether some y depends on x through data edges (an unconnected x's gradient is None, as TensorFlow's)."""
    target = x.op
    seen = set()
    stack = [y.op for y in ys]
    while stack:
        op = stack.pop()
        if op is target:
            return True
        if op.name in seen:
            continue
        seen.add(op.name)
        stack.extend(t.op for t in op.inputs)
    return False


def stop_gradient(input, name=None):  # noqa: A002
    from actorflow import gen_ops
    return gen_ops.stop_gradient(input, name=name)
