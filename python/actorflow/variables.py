"""TensorFlow 1.x's variables (tf.Variable over VariableV2, a ref), their initializers, tf.get_variable with
variable scopes, and the collections they go to."""

import contextlib

import numpy as np

from actorflow import dtypes
from actorflow import framework
from actorflow import gen_ops
from actorflow.framework import GraphKeys, Tensor, convert_to_tensor
from actorflow.tensor_shape import TensorShape

__all__ = ["Variable", "global_variables", "local_variables", "trainable_variables", "model_variables",
           "all_variables", "moving_average_variables", "global_variables_initializer", "initialize_all_variables",
           "local_variables_initializer", "initialize_local_variables", "variables_initializer",
           "initialize_variables", "is_variable_initialized", "report_uninitialized_variables",
           "assert_variables_initialized", "assign", "assign_add", "assign_sub", "get_variable", "variable_scope",
           "get_variable_scope", "VariableScope", "AUTO_REUSE", "count_up_to"]


class Variable(object):
    """A mutable tensor that lives across steps (tf.Variable): `initializer` sets it, `value()` reads it."""

    def __init__(self, initial_value=None, trainable=True, collections=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None, expected_shape=None,
                 import_scope=None, constraint=None, use_resource=None, synchronization=None, aggregation=None,
                 shape=None):
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        init_from_fn = callable(initial_value)
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        collections = list(collections)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(GraphKeys.TRAINABLE_VARIABLES)
        graph = framework.get_default_graph()
        if not init_from_fn and isinstance(initial_value, Tensor):
            graph = initial_value.graph
        with graph.as_default(), graph._outside_control_flow(), \
                graph.name_scope(name if name is not None else "Variable") as scope:
            if init_from_fn:
                with framework.name_scope("Initializer"):
                    initial_value = initial_value()
            self._initial_value = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
            if shape is not None:
                var_shape = TensorShape(shape)
            elif validate_shape:
                var_shape = self._initial_value.shape
                if not var_shape.is_fully_defined():
                    raise ValueError("initial_value must have a shape specified: %s" % self._initial_value)
            else:
                var_shape = TensorShape(None)
            self._dtype = self._initial_value.dtype.base_dtype
            self._variable = gen_ops.variable_v2(shape=var_shape, dtype=self._dtype, container=None, name=scope)
            with graph.colocate_with(self._variable.op):  # where the variable is (its ref inputs must be)
                self._initializer_op = gen_ops.assign(self._variable, self._initial_value,
                                                      validate_shape=validate_shape, name="Assign").op
                self._snapshot = gen_ops.identity(self._variable, name="read")
        self._trainable = trainable
        self._constraint = constraint
        self._save_slice_info = None
        graph.add_to_collections(collections, self)

    # -- what it is ------------------------------------------------------------------------------
    @property
    def name(self):
        return self._variable.name

    @property
    def op(self):
        return self._variable.op

    @property
    def graph(self):
        return self._variable.graph

    @property
    def dtype(self):
        return self._variable.dtype

    @property
    def device(self):
        return self._variable.device

    @property
    def shape(self):
        return self._variable.shape

    def get_shape(self):
        return self.shape

    @property
    def initializer(self):
        return self._initializer_op

    @property
    def initial_value(self):
        return self._initial_value

    @property
    def trainable(self):
        return self._trainable

    @property
    def constraint(self):
        return self._constraint

    def value(self):
        return self._snapshot

    def read_value(self):
        return gen_ops.identity(self._variable, name="read")

    def initialized_value(self):
        from actorflow import control_flow_ops
        return control_flow_ops.cond(is_variable_initialized(self), self.read_value, lambda: self.initial_value)

    def _ref(self):
        return self._variable

    def _as_graph_element(self):
        return self._variable

    def eval(self, session=None):
        return self._variable.eval(session=session)

    def load(self, value, session=None):
        from actorflow.session import _get_session
        _get_session(session, self.graph).run(self._initializer_op, {self._initial_value: value})

    # -- updates -----------------------------------------------------------------------------
    # Updates go where the variable is (their ref input must be), whatever tf.device says.
    def assign(self, value, use_locking=False, name=None, read_value=True):
        with self.graph.colocate_with(self._variable.op):
            return gen_ops.assign(self._variable, value, use_locking=use_locking, name=name)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        with self.graph.colocate_with(self._variable.op):
            return gen_ops.assign_add(self._variable, delta, use_locking=use_locking, name=name)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        with self.graph.colocate_with(self._variable.op):
            return gen_ops.assign_sub(self._variable, delta, use_locking=use_locking, name=name)

    def count_up_to(self, limit):
        with self.graph.colocate_with(self._variable.op):
            return gen_ops.count_up_to(self._variable, limit=limit)

    def __repr__(self):
        return "<tf.Variable '%s' shape=%s dtype=%s>" % (self.name, self.shape, self.dtype.name)

    # Operators read the value.
    def __getitem__(self, item):
        return self._snapshot[item]

    def __iter__(self):
        raise TypeError("'Variable' object is not iterable.")

    def __hash__(self):
        return id(self)


def _install_variable_operators():
    names = ["add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv", "rfloordiv", "mod",
             "rmod", "pow", "rpow", "matmul", "rmatmul", "lt", "le", "gt", "ge", "and", "rand", "or", "ror", "xor",
             "neg", "abs", "invert"]
    for n in names:
        dunder = "__%s__" % n

        def op(self, *args, _d=dunder):
            return getattr(self._snapshot, _d)(*args)
        setattr(Variable, dunder, op)


_install_variable_operators()
framework.register_tensor_conversion_function(
    Variable, lambda v, dtype=None, name=None, as_ref=False: v._variable if as_ref else (
        v._snapshot if dtype is None or dtypes.as_dtype(dtype) == v.dtype.base_dtype else NotImplemented))


def _at(ref):
    ref = ref._ref() if isinstance(ref, Variable) else ref
    return ref, ref.graph.colocate_with(ref.op)


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    ref, where = _at(ref)
    with where:
        return gen_ops.assign(ref, value, validate_shape=validate_shape, use_locking=use_locking, name=name)


def assign_add(ref, value, use_locking=None, name=None):
    ref, where = _at(ref)
    with where:
        return gen_ops.assign_add(ref, value, use_locking=use_locking, name=name)


def assign_sub(ref, value, use_locking=None, name=None):
    ref, where = _at(ref)
    with where:
        return gen_ops.assign_sub(ref, value, use_locking=use_locking, name=name)


def count_up_to(ref, limit, name=None):
    ref, where = _at(ref)
    with where:
        return gen_ops.count_up_to(ref, limit=limit, name=name)


def global_variables(scope=None):
    return framework.get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


all_variables = global_variables


def local_variables(scope=None):
    return framework.get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def trainable_variables(scope=None):
    return framework.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def model_variables(scope=None):
    return framework.get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope=None):
    return framework.get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    if var_list:
        from actorflow import control_flow_ops
        return control_flow_ops.group(*[v.initializer for v in var_list], name=name)
    return gen_ops.no_op(name=name)


initialize_variables = variables_initializer


def global_variables_initializer():
    return variables_initializer(global_variables())


initialize_all_variables = global_variables_initializer


def local_variables_initializer():
    return variables_initializer(local_variables(), name="init")


initialize_local_variables = local_variables_initializer


def is_variable_initialized(variable):
    return gen_ops.is_variable_initialized(variable._ref() if isinstance(variable, Variable) else variable)


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    from actorflow import array_ops
    if var_list is None:
        var_list = global_variables() + local_variables()
    with framework.name_scope(name):
        if not var_list:
            return array_ops.constant(np.array([], dtype=object), dtype=dtypes.string)
        inited = array_ops.stack([is_variable_initialized(v) for v in var_list])
        names = array_ops.constant(np.array([v.op.name.encode() for v in var_list], dtype=object))
        return array_ops.boolean_mask(names, gen_ops.logical_not(inited))


def assert_variables_initialized(var_list=None):
    from actorflow import array_ops, math_ops
    if var_list is None:
        var_list = global_variables() + local_variables()
    if not var_list:
        return None
    return math_ops.reduce_all(array_ops.stack([is_variable_initialized(v) for v in var_list]))


# --- variable scopes and get_variable ---------------------------------------------------------

AUTO_REUSE = "AUTO_REUSE"


class VariableScope(object):
    def __init__(self, reuse, name="", initializer=None, dtype=dtypes.float32):
        self.name = name
        self.reuse = reuse
        self.initializer = initializer
        self.dtype = dtype
        self.original_name_scope = name + "/" if name else ""

    def reuse_variables(self):
        self.reuse = True

    def set_initializer(self, initializer):
        self.initializer = initializer


_var_scope_key = "__variable_scope_stack"
_var_store_key = "__variable_store"


def _scope_stack():
    return framework.get_default_graph().get_collection_ref(_var_scope_key)


def get_variable_scope():
    stack = _scope_stack()
    return stack[-1] if stack else VariableScope(False)


def _store():
    ref = framework.get_default_graph().get_collection_ref(_var_store_key)
    if not ref:
        ref.append({})
    return ref[0]


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None, reuse=None, dtype=None,
                   auxiliary_name_scope=True, **kwargs):
    """TensorFlow's variable scopes: get_variable names ("scope/name") and reuse, with a name scope of the same
    name for the ops built inside."""
    outer = get_variable_scope()
    if isinstance(name_or_scope, VariableScope):
        full = name_or_scope.name
    elif name_or_scope is not None:
        full = outer.name + "/" + name_or_scope if outer.name else name_or_scope
    else:  # a default name is made unique among the scopes under `outer`: "dense", "dense_1", ...
        counts = framework.get_default_graph().get_collection_ref("__variable_scope_counts")
        if not counts:
            counts.append({})
        base = outer.name + "/" + default_name if outer.name else default_name
        n = counts[0].get(base, 0)
        counts[0][base] = n + 1
        full = base if n == 0 else "%s_%d" % (base, n)
    if reuse is None or reuse is False:
        reuse_value = outer.reuse if outer.reuse else (reuse or False)
    else:
        reuse_value = reuse
    scope = VariableScope(reuse_value, full, initializer or outer.initializer, dtype or outer.dtype)
    stack = _scope_stack()
    stack.append(scope)
    try:
        if auxiliary_name_scope:
            with framework.name_scope(full.rsplit("/", 1)[-1] if name_or_scope is not None or True else None):
                yield scope
        else:
            yield scope
    finally:
        stack.pop()


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=True,
                 collections=None, caching_device=None, partitioner=None, validate_shape=True, use_resource=None,
                 custom_getter=None, constraint=None, **kwargs):
    """The variable `scope/name`: made on first use, returned again under reuse=True (or AUTO_REUSE)."""
    scope = get_variable_scope()
    full = scope.name + "/" + name if scope.name else name
    store = _store()
    if full in store:
        if not scope.reuse:
            raise ValueError("Variable %s already exists, disallowed. Did you mean to set reuse=True or "
                             "reuse=tf.AUTO_REUSE in VarScope?" % full)
        v = store[full]
        if shape is not None and not v.shape.is_compatible_with(shape):
            raise ValueError("Trying to share variable %s, but specified shape %s and found shape %s." %
                             (full, TensorShape(shape), v.shape))
        return v
    if scope.reuse is True:
        raise ValueError("Variable %s does not exist, or was not created with tf.get_variable(). Did you mean to "
                         "set reuse=tf.AUTO_REUSE in VarScope?" % full)
    dtype = dtypes.as_dtype(dtype or scope.dtype)
    initializer = initializer or scope.initializer
    if initializer is None:
        from actorflow import init_ops
        initializer = init_ops.glorot_uniform_initializer() if dtype.is_floating else init_ops.zeros_initializer()
    if callable(initializer):
        if shape is None:
            raise ValueError("Shape of a new variable (%s) must be fully defined, but instead was None." % full)
        init = lambda: initializer(list(TensorShape(shape).as_list()), dtype=dtype)  # noqa: E731
    else:
        init = initializer
    with framework.name_scope(None):
        v = Variable(init, trainable=trainable, collections=collections, validate_shape=validate_shape,
                     name=full, dtype=dtype if not isinstance(init, Tensor) else None, constraint=constraint)
    store[full] = v
    if regularizer is not None:
        with framework.name_scope(full + "/Regularizer/"):
            loss = regularizer(v)
        if loss is not None:
            framework.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return v
