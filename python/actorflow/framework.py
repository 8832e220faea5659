"""Graphs, operations and tensors: TensorFlow 1.x's tf.Graph, tf.Operation, tf.Tensor.

A Graph holds the C++ builder's graph (client/builder.hpp, through _actorflow.Scope) and what TensorFlow's
Python keeps beside it: the name-scope, device and control-dependency stacks, and collections. Every op is
built by `_apply_op` (the generated wrappers in gen_ops.py call it): it converts Python and numpy values to
constants of the dtype the op wants, infers type attrs from the inputs (in C++), puts the op in the current
name scope, on the current device, after the current control dependencies, and returns its outputs as
Tensors. Construction never computes; a Session runs the graph.
"""

import contextlib
import re
import threading

from actorflow import _actorflow
from actorflow import dtypes
from actorflow.device_spec import _OpStub, _merge_device  # noqa: F401 (_merge_device: for train/)
from actorflow.tensor_shape import TensorShape, as_shape

__all__ = ["Graph", "Operation", "Tensor", "get_default_graph", "reset_default_graph", "name_scope", "device",
           "control_dependencies", "convert_to_tensor", "GraphKeys", "add_to_collection", "get_collection",
           "get_collection_ref", "colocate_with", "container", "get_name_scope", "set_random_seed",
           "register_tensor_conversion_function", "is_tensor", "RegisterGradient", "NoGradient",
           "import_graph_def"]


class GraphKeys(object):
    """TensorFlow's standard collection names."""
    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    TRAIN_OP = "train_op"
    VARIABLES = GLOBAL_VARIABLES


class Operation(object):
    """A node of a Graph (tf.Operation): its type, inputs, outputs, device and attrs."""

    def __init__(self, c_op, graph):
        self._c_op = c_op
        self._graph = graph
        self._outputs = [Tensor(self, i, dtypes.as_dtype(c_op.output(i).dtype if not c_op.output(i).is_ref
                                                         else c_op.output(i).dtype + 100))
                         for i in range(c_op.num_outputs)]

    @property
    def name(self):
        return self._c_op.name

    @property
    def type(self):
        return self._c_op.type

    @property
    def graph(self):
        return self._graph

    @property
    def device(self):
        return self._c_op.device

    @property
    def outputs(self):
        return list(self._outputs)

    @property
    def inputs(self):
        out = []
        for i in range(self._c_op.num_inputs):
            src = self._c_op.input(i)
            out.append(self._graph._wrap_op(src.op).outputs[src.index])
        return out

    @property
    def control_inputs(self):
        return [self._graph._wrap_op(o) for o in self._c_op.control_inputs]

    @property
    def node_def(self):
        return self._c_op.node_def()

    def get_attr(self, name):
        value = self._c_op.get_attr(name)
        sig = _signature(self.type)
        kind = next((a["kind"] for a in sig["attrs"] if a["name"] == name), None)
        if kind == "type":
            return dtypes.as_dtype(value)
        if kind == "list(type)":
            return [dtypes.as_dtype(v) for v in value]
        if kind == "shape":
            return TensorShape(value)
        return value

    def values(self):
        return tuple(self._outputs)

    def run(self, feed_dict=None, session=None):
        from actorflow.session import _get_session
        _get_session(session, self._graph).run(self, feed_dict)

    def _add_control_input(self, op):
        raise NotImplementedError("adding control inputs after construction")

    def __repr__(self):
        return "<tf.Operation '%s' type=%s>" % (self.name, self.type)

    def __str__(self):
        return 'name: "%s"\nop: "%s"' % (self.name, self.type)


class Tensor(object):
    """One output of an Operation (tf.Tensor): a handle, computed by Session.run."""

    __array_priority__ = 100  # numpy defers to Tensor's operators (np.float32(2) * t is a Tensor)

    def __init__(self, op, value_index, dtype):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype

    @property
    def op(self):
        return self._op

    @property
    def graph(self):
        return self._op._graph

    @property
    def value_index(self):
        return self._value_index

    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self):
        return "%s:%d" % (self._op.name, self._value_index)

    @property
    def device(self):
        return self._op.device

    @property
    def shape(self):
        return TensorShape(self._op._graph._scope.shape(self._c_output()))

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        """Refines the static shape (ValueError when incompatible); ops built after it see it."""
        self._op._graph._scope.set_shape(self._c_output(), as_shape(shape).as_list() if as_shape(shape).ndims
                                         is not None else None)
        self._shape_version = getattr(self, "_shape_version", 0) + 1  # sessions look at it again

    def consumers(self):
        out = []
        for op in self._op._c_op.consumers:
            wrapped = self._op._graph._wrap_op(op)
            if any(t is self for t in wrapped.inputs):
                out.append(wrapped)
        return out

    def eval(self, feed_dict=None, session=None):
        from actorflow.session import _get_session
        return _get_session(session, self.graph).run(self, feed_dict)

    def _c_output(self):
        return self._op._c_op.output(self._value_index)

    def __repr__(self):
        return "<tf.Tensor '%s' shape=%s dtype=%s>" % (self.name, self.shape, self._dtype.name)

    __str__ = lambda self: 'Tensor("%s", shape=%s, dtype=%s)' % (self.name, self.shape, self._dtype.name)

    def __hash__(self):
        return id(self)

    def __iter__(self):
        raise TypeError("'Tensor' object is not iterable.")

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. Use `if t is not None:` instead of "
                        "`if t:` to test if a tensor is defined, and use TensorFlow ops such as tf.cond to execute "
                        "subgraphs conditioned on the value of a tensor.")

    # Operators come from math_ops (installed when actorflow is imported).


# --- the default graph --------------------------------------------------------------------------

class _DefaultStack(threading.local):
    def __init__(self):
        self.stack = []


_default_graph_stack = _DefaultStack()
_global_default_graph = None


def get_default_graph():
    """The graph new ops go to: the innermost `with g.as_default()`, else the process's global graph."""
    if _default_graph_stack.stack:
        return _default_graph_stack.stack[-1]
    global _global_default_graph
    if _global_default_graph is None:
        _global_default_graph = Graph()
    return _global_default_graph


def reset_default_graph():
    """Replaces the global default graph with a new, empty one (not inside a `with g.as_default()`)."""
    if _default_graph_stack.stack:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. If you need a cleared "
                             "graph, exit the nesting and create a new graph.")
    global _global_default_graph
    _global_default_graph = Graph()


_signatures = {}


def _signature(op_type):
    sig = _signatures.get(op_type)
    if sig is None:
        sig = _signatures[op_type] = _actorflow.op_signature(op_type)
    return sig


class Graph(object):
    """A dataflow graph under construction (tf.Graph)."""

    def __init__(self):
        self._scope = _actorflow.Scope.new_root()
        self._ops = {}
        self._scope_stack = [("", self._scope)]  # (name scope, C++ scope)
        self._device_stack = []
        self._control_stack = []
        self._collections = {}
        self._finalized = False
        self._seed = None
        self._lock = threading.RLock()
        self._names_in_use = {}
        self._container = ""
        self._colocation = None
        self._control_flow_depth = 0  # loops' and conds' bodies being built (their C++ scopes)

    # -- contexts ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
        _default_graph_stack.stack.append(self)
        try:
            yield self
        finally:
            _default_graph_stack.stack.pop()

    def get_name_scope(self):
        return self._scope_stack[-1][0]

    @contextlib.contextmanager
    def name_scope(self, name):
        """TensorFlow's name scopes: "a" in "outer" is "outer/a" (made unique: "outer/a_1"); "a/" is
        "a" exactly; None or "" the graph's root. An op named "a/" in it is named "a" exactly."""
        if name is None or name == "":
            full, scope = "", self._scope.graph_root()
        elif name.endswith("/"):
            full = name[:-1]
            scope = self._scope.graph_root().new_sub_scope(full)
        else:
            parent_full = self._scope_stack[-1][0]
            full = self._unique_scope_name(parent_full + "/" + name if parent_full else name)
            scope = self._scope.graph_root().new_sub_scope(full)
        self._scope_stack.append((full, scope))
        try:
            yield (full + "/") if full else ""
        finally:
            self._scope_stack.pop()

    def _unique_scope_name(self, base):
        n = self._names_in_use.get(base, 0)
        while True:
            candidate = base if n == 0 else "%s_%d" % (base, n)
            n += 1
            if (candidate == base or candidate not in self._names_in_use) and \
                    self._scope.find_node(candidate) is None:
                break
        self._names_in_use[base] = n
        self._names_in_use.setdefault(candidate, 1)
        return candidate

    @contextlib.contextmanager
    def _in_c_scope(self, scope):
        """Builds in `scope`, a C++ scope a builder callback gave (a while loop's body: "while/"), whose name
        prefix the C++ builder chose (read back through a name made in it)."""
        probe = scope.unique_name("_scope_probe")
        self._scope_stack.append((probe.rpartition("/")[0], scope))
        self._control_flow_depth += 1
        try:
            yield
        finally:
            self._control_flow_depth -= 1
            self._scope_stack.pop()

    @contextlib.contextmanager
    def _outside_control_flow(self):
        """What is built inside stays out of the loop or cond being built (TensorFlow's init_scope): no
        control dependencies, and the builder's capture skips its nodes."""
        first = self._scope.num_node_ids()
        with self.control_dependencies(None):
            yield
        if self._control_flow_depth:
            self._scope.mark_outside_control_flow(first, self._scope.num_node_ids())

    def unique_name(self, name, mark_as_used=True):
        parent_full = self._scope_stack[-1][0]
        return self._unique_scope_name(parent_full + "/" + name if parent_full else name)

    @contextlib.contextmanager
    def device(self, device_name_or_function):
        self._device_stack.append(device_name_or_function)
        try:
            yield
        finally:
            self._device_stack.pop()

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        if control_inputs is None:
            saved, self._control_stack = self._control_stack, []
            try:
                yield
            finally:
                self._control_stack = saved
            return
        ops = []
        for c in control_inputs:
            if hasattr(c, "_as_graph_element"):
                c = c._as_graph_element()
            if isinstance(c, Tensor):
                c = c.op
            if not isinstance(c, Operation):
                raise TypeError("Control input must be Operation or Tensor: %s" % (c,))
            if c.graph is not self:
                raise ValueError("Control input %s is not an element of this graph." % (c.name,))
            ops.append(c)
        self._control_stack.append(ops)
        try:
            yield
        finally:
            self._control_stack.pop()

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):
        """Ops built inside go on `op`'s device, whatever tf.device says (a variable's Assign, read and slots)."""
        if op is None:
            saved, self._colocation = self._colocation, None
        else:
            if hasattr(op, "_as_graph_element") and not isinstance(op, (Tensor, Operation)):
                op = op._as_graph_element()
            op = op.op if isinstance(op, Tensor) else op
            saved, self._colocation = self._colocation, op
        try:
            yield
        finally:
            self._colocation = saved

    @contextlib.contextmanager
    def container(self, container_name):
        saved, self._container = self._container, container_name
        try:
            yield
        finally:
            self._container = saved

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map):
        raise NotImplementedError("gradient_override_map: gradients are the C++ registry's")

    # -- ops ---------------------------------------------------------------------------------
    def _current_device(self, op_type, name):
        device = ""
        stack = self._device_stack
        start = max((i + 1 for i, d in enumerate(stack) if d is None), default=0)  # tf.device(None) resets
        for d in stack[start:]:
            if callable(d):
                device = d(_OpStub(op_type, name, device)) or device
            else:
                device = _merge_device(device, d.to_string() if hasattr(d, "to_string") else d)
        return device

    def _wrap_op(self, c_op):
        op = self._ops.get(c_op.name)
        if op is None:
            op = self._ops[c_op.name] = Operation(c_op, self)
        return op

    def _create_op(self, op_type, name, args, attrs):
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        control = []
        for ops in self._control_stack:
            control.extend(o._c_op for o in ops)
        scope = self._scope_stack[-1][1]
        if name is not None and name.endswith("/"):  # exactly this name (a name scope's own op)
            parent, _, last = name[:-1].rpartition("/")
            scope = self._scope.graph_root().new_sub_scope(parent) if parent else self._scope.graph_root()
            name = last
        if self._colocation is not None:
            device = self._colocation.device
        else:
            device = self._current_device(op_type, name) if self._device_stack else ""
        if "container" in attrs and attrs["container"] is None and self._container:
            attrs["container"] = self._container
        c_op = scope.add_op(op_type, name, args, attrs, device, control)
        return self._wrap_op(c_op)

    # -- lookup ------------------------------------------------------------------------------
    def get_operation_by_name(self, name):
        c_op = self._scope.find_node(name)
        if c_op is None:
            raise KeyError("The name %s refers to an Operation not in the graph." % repr(name))
        return self._wrap_op(c_op)

    def get_tensor_by_name(self, name):
        op_name, _, index = name.partition(":")
        if not index:
            raise ValueError("The name %s looks like an (invalid) Operation name, not a Tensor. Tensor names must "
                             "be of the form \"<op_name>:<output_index>\"." % repr(name))
        op = self.get_operation_by_name(op_name)
        i = int(index)
        if i >= len(op.outputs):
            raise KeyError("The name %s refers to a Tensor which does not exist. The operation, %s, exists but "
                           "only has %d outputs." % (repr(name), repr(op_name), len(op.outputs)))
        return op.outputs[i]

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        if hasattr(obj, "_as_graph_element"):
            obj = obj._as_graph_element()
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            if allow_operation:
                return self.get_operation_by_name(obj)
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise ValueError("%s is not an element of this graph." % (obj,))
            return obj
        raise TypeError("Can not convert a %s into a %s." % (type(obj).__name__,
                                                             "Tensor or Operation" if allow_operation else "Tensor"))

    def get_operations(self):
        return [self._wrap_op(o) for o in self._scope.operations()]

    def as_graph_def(self, add_shapes=False):
        return GraphDef(self._scope.graph_def())

    def finalize(self):
        self._finalized = True

    @property
    def finalized(self):
        return self._finalized

    @property
    def seed(self):
        return self._seed

    @seed.setter
    def seed(self, value):
        self._seed = value
        self._scope.set_graph_seed(int(value))

    @property
    def version(self):
        return self._scope.num_node_ids()

    # -- collections -------------------------------------------------------------------------
    def add_to_collection(self, name, value):
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        for n in ([names] if isinstance(names, str) else names):
            self.add_to_collection(n, value)

    def get_collection_ref(self, name):
        return self._collections.setdefault(name, [])

    def get_collection(self, name, scope=None):
        items = self._collections.get(name, [])
        if scope is None:
            return list(items)
        regex = re.compile(scope)
        return [i for i in items if hasattr(i, "name") and regex.match(i.name)]

    def get_all_collection_keys(self):
        return [k for k in self._collections if self._collections[k]]

    def clear_collection(self, name):
        self._collections.pop(name, None)


class GraphDef(object):
    """A serialized GraphDef (TensorFlow's field numbers): SerializeToString() gives its bytes."""

    def __init__(self, data=b""):
        self._data = bytes(data)

    def SerializeToString(self):
        return self._data

    def ParseFromString(self, data):
        self._data = bytes(data)

    @classmethod
    def FromString(cls, data):
        return cls(data)

    def ByteSize(self):
        return len(self._data)


# --- module-level shorthands (tf.name_scope, tf.device, ...) ---------------------------------

def name_scope(name, default_name=None, values=None):
    if values is not None:
        g = _graph_of(list(_flatten(values)))
        if g is not None and g is not get_default_graph():
            return _in_graph_scope(g, name or default_name)
    return get_default_graph().name_scope(name if name is not None else default_name)


@contextlib.contextmanager
def _in_graph_scope(graph, name):
    with graph.as_default(), graph.name_scope(name) as scope:
        yield scope


def get_name_scope():
    return get_default_graph().get_name_scope()


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def colocate_with(op, ignore_existing=False):
    return get_default_graph().colocate_with(op, ignore_existing)


def container(container_name):
    return get_default_graph().container(container_name)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    get_default_graph().add_to_collections(names, value)


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)


def set_random_seed(seed):
    get_default_graph().seed = seed


def _seeds(op_seed):
    return get_default_graph()._scope.get_seeds(-1 if op_seed is None else int(op_seed))


class RegisterGradient(object):
    """Gradients are registered in C++ (client/gradients/); Python registrations are refused."""

    def __init__(self, op_type):
        self._op_type = op_type

    def __call__(self, f):
        raise NotImplementedError("gradient functions are registered in C++ (client/gradients/): %s" % self._op_type)


def NoGradient(op_type):  # noqa: N802 (TensorFlow's name)
    pass


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None, op_dict=None,
                     producer_op_list=None):
    """Loads a GraphDef (bytes or GraphDef) into the default graph, which must be empty (no prefix, no input_map)."""
    if input_map:
        raise NotImplementedError("import_graph_def with input_map")
    data = graph_def.SerializeToString() if hasattr(graph_def, "SerializeToString") else bytes(graph_def)
    g = get_default_graph()
    g._scope.import_graph_def(data)
    if return_elements is None:
        return None
    return [g.as_graph_element(e) for e in return_elements]


# The conversions, defined over Graph, Operation and Tensor (op_def_library imports them).
from actorflow.op_def_library import (_apply_op, _default_dtype, _flatten, _graph_of, constant,  # noqa: E402,F401
                                      convert_to_tensor, is_tensor, register_tensor_conversion_function)
