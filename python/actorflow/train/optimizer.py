"""TensorFlow 1.x's optimizers: Optimizer (compute_gradients, apply_gradients, minimize, slots) and
GradientDescent, Momentum, Adam, Adagrad and RMSProp over the runtime's Apply* kernels, which update a
variable in place where it lives."""

from actorflow import array_ops
from actorflow import control_flow_ops
from actorflow import dtypes
from actorflow import framework
from actorflow import gen_ops
from actorflow.gradients import gradients as _gradients
from actorflow import variables
from actorflow.framework import GraphKeys, Tensor, convert_to_tensor

__all__ = ["Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer", "AdagradOptimizer",
           "RMSPropOptimizer", "get_global_step", "get_or_create_global_step", "create_global_step",
           "global_step"]


class Optimizer(object):
    """The base of the optimizers: gradients (tf.gradients), then one update op per variable, grouped."""

    GATE_NONE, GATE_OP, GATE_GRAPH = 0, 1, 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots = {}  # slot name -> {variable: slot variable}
        self._non_slot = {}

    def get_name(self):
        return self._name

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP, aggregation_method=None,
                          colocate_gradients_with_ops=False, grad_loss=None):
        if callable(loss):
            raise NotImplementedError("loss must be a tensor (graph mode)")
        if var_list is None:
            var_list = variables.trainable_variables() + framework.get_collection(
                GraphKeys.TRAINABLE_VARIABLES + "_resource")
        var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = _gradients(loss, var_list, grad_ys=grad_loss)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = [(g, v) for g, v in grads_and_vars]
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        if all(g is None for g, _ in grads_and_vars):
            raise ValueError("No gradients provided for any variable, check your graph for ops that do not support "
                             "gradients, between variables %s and loss." % ([str(v) for _, v in grads_and_vars],))
        var_list = [v for g, v in grads_and_vars if g is not None]
        with framework.control_dependencies(None):
            self._create_slots(var_list)
        updates = []
        with framework.name_scope(name, self._name) as scope:
            self._prepare()
            for g, v in grads_and_vars:
                if g is None:
                    continue
                with framework.name_scope("update_" + v.op.name), framework.colocate_with(v):
                    updates.append(self._apply_dense(convert_to_tensor(g), v))
            if global_step is None:
                apply_updates = self._finish(updates, scope[:-1])
            else:
                with framework.control_dependencies([self._finish(updates, "update")]):
                    apply_updates = variables.assign_add(global_step, convert_to_tensor(
                        1, dtype=global_step.dtype.base_dtype)).op
            train_op = framework.get_collection_ref(GraphKeys.TRAIN_OP)
            if apply_updates not in train_op:
                train_op.append(apply_updates)
            return apply_updates

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP, aggregation_method=None,
                 colocate_gradients_with_ops=False, name=None, grad_loss=None):
        grads_and_vars = self.compute_gradients(loss, var_list=var_list, grad_loss=grad_loss)
        if not [g for g, _ in grads_and_vars if g is not None]:
            raise ValueError("No gradients provided for any variable, check your graph for ops that do not support "
                             "gradients, between variables %s and loss %s." %
                             ([str(v) for _, v in grads_and_vars], loss))
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    # -- slots -----------------------------------------------------------------------------------
    def get_slot_names(self):
        return sorted(self._slots)

    def get_slot(self, var, name):
        return self._slots.get(name, {}).get(var)

    def variables(self):
        out = list(self._non_slot.values())
        for name in sorted(self._slots):
            out.extend(self._slots[name].values())
        return out

    def _slot(self, var, name, init):
        slots = self._slots.setdefault(name, {})
        if var not in slots:  # named TensorFlow's way: "w/Adam", "w/Adam_1"; on the variable's device
            with framework.name_scope(None), framework.colocate_with(var):
                slots[var] = variables.Variable(init, trainable=False, name=var.op.name + "/" + self._name,
                                                dtype=var.dtype.base_dtype)
        return slots[var]

    def _zeros_slot(self, var, name):
        shape = var.shape.as_list()
        return self._slot(var, name, lambda: array_ops.zeros(shape, dtype=var.dtype.base_dtype))

    def _non_slot_variable(self, name, initial_value, colocate_with):
        if name not in self._non_slot:
            with framework.name_scope(None), framework.colocate_with(colocate_with):
                self._non_slot[name] = variables.Variable(initial_value, name=name, trainable=False)
        return self._non_slot[name]

    def _create_slots(self, var_list):
        pass

    def _prepare(self):
        pass

    def _apply_dense(self, grad, var):
        raise NotImplementedError

    def _finish(self, update_ops, name_scope):
        return control_flow_ops.group(*update_ops, name=name_scope)

    def _hyper(self, value, name, dtype):
        return convert_to_tensor(value, dtype=dtype, name=name) if not isinstance(value, Tensor) else value


class _Wrapper(object):
    """What an optimizer that wraps another (`self._opt`: SyncReplicasOptimizer, AllReduceOptimizer) leaves to it."""

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self):
        return self._opt.variables()


class GradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super(GradientDescentOptimizer, self).__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _apply_dense(self, grad, var):
        lr = self._hyper(self._learning_rate, "learning_rate", var.dtype.base_dtype)
        return gen_ops.apply_gradient_descent(var._ref(), lr, grad, use_locking=self._use_locking).op


class MomentumOptimizer(Optimizer):
    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum", use_nesterov=False):
        super(MomentumOptimizer, self).__init__(use_locking, name)
        self._learning_rate, self._momentum, self._use_nesterov = learning_rate, momentum, use_nesterov

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "momentum")

    def _apply_dense(self, grad, var):
        d = var.dtype.base_dtype
        accum = self.get_slot(var, "momentum")
        return gen_ops.apply_momentum(var._ref(), accum._ref(), self._hyper(self._learning_rate, "learning_rate", d),
                                      grad, self._hyper(self._momentum, "momentum", d),
                                      use_locking=self._use_locking, use_nesterov=self._use_nesterov).op


class AdagradOptimizer(Optimizer):
    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False, name="Adagrad"):
        super(AdagradOptimizer, self).__init__(use_locking, name)
        self._learning_rate, self._initial = learning_rate, initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            shape, d, init = v.shape.as_list(), v.dtype.base_dtype, self._initial
            self._slot(v, "accumulator", lambda s=shape, d=d: array_ops.fill(s, convert_to_tensor(init, dtype=d)))

    def _apply_dense(self, grad, var):
        acc = self.get_slot(var, "accumulator")
        return gen_ops.apply_adagrad(var._ref(), acc._ref(), self._hyper(self._learning_rate, "learning_rate",
                                                                         var.dtype.base_dtype), grad,
                                     use_locking=self._use_locking).op


class RMSPropOptimizer(Optimizer):
    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking=False, centered=False,
                 name="RMSProp"):
        if centered:
            raise NotImplementedError("RMSPropOptimizer(centered=True): ApplyCenteredRMSProp is not registered")
        super(RMSPropOptimizer, self).__init__(use_locking, name)
        self._lr, self._decay, self._momentum, self._epsilon = learning_rate, decay, momentum, epsilon

    def _create_slots(self, var_list):
        for v in var_list:
            shape, d = v.shape.as_list(), v.dtype.base_dtype
            self._slot(v, "rms", lambda s=shape, d=d: array_ops.ones(s, dtype=d))
            self._zeros_slot(v, "momentum")

    def _apply_dense(self, grad, var):
        d = var.dtype.base_dtype
        return gen_ops.apply_rms_prop(var._ref(), self.get_slot(var, "rms")._ref(),
                                      self.get_slot(var, "momentum")._ref(), self._hyper(self._lr, "learning_rate", d),
                                      self._hyper(self._decay, "decay", d), self._hyper(self._momentum, "momentum", d),
                                      self._hyper(self._epsilon, "epsilon", d), grad,
                                      use_locking=self._use_locking).op


class AdamOptimizer(Optimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, use_locking=False, name="Adam"):
        super(AdamOptimizer, self).__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon

    def _create_slots(self, var_list):
        first = min(var_list, key=lambda v: v.name)
        self._non_slot_variable("beta1_power", float(self._beta1), first)
        self._non_slot_variable("beta2_power", float(self._beta2), first)
        for v in var_list:
            self._zeros_slot(v, "m")
            self._zeros_slot(v, "v")

    def _apply_dense(self, grad, var):
        d = var.dtype.base_dtype
        b1p, b2p = self._non_slot["beta1_power"], self._non_slot["beta2_power"]
        from actorflow.math_ops import cast
        return gen_ops.apply_adam(var._ref(), self.get_slot(var, "m")._ref(), self.get_slot(var, "v")._ref(),
                                  cast(b1p.value(), d), cast(b2p.value(), d), self._hyper(self._lr, "learning_rate", d),
                                  self._hyper(self._beta1, "beta1", d), self._hyper(self._beta2, "beta2", d),
                                  self._hyper(self._epsilon, "epsilon", d), grad, use_locking=self._use_locking).op

    def _finish(self, update_ops, name_scope):
        b1p, b2p = self._non_slot["beta1_power"], self._non_slot["beta2_power"]
        with framework.control_dependencies(update_ops), framework.colocate_with(b1p):
            u1 = b1p.assign(b1p.value() * self._beta1, use_locking=self._use_locking)
            u2 = b2p.assign(b2p.value() * self._beta2, use_locking=self._use_locking)
        return control_flow_ops.group(*(update_ops + [u1, u2]), name=name_scope)


# --- the global step --------------------------------------------------------------------------------

def get_global_step(graph=None):
    graph = graph or framework.get_default_graph()
    steps = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(steps) == 1:
        return steps[0]
    if len(steps) > 1:
        raise TypeError("Multiple tensors in global_step collection.")
    try:
        return graph.get_tensor_by_name("global_step:0")
    except (KeyError, ValueError):
        return None


def create_global_step(graph=None):
    graph = graph or framework.get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError("\"global_step\" already exists.")
    with graph.as_default(), framework.name_scope(None):
        return variables.Variable(array_ops.constant(0, dtype=dtypes.int64), trainable=False, name="global_step",
                                  collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


def global_step(sess, global_step_tensor):
    return int(sess.run(global_step_tensor))
