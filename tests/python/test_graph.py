"""Graph construction as TensorFlow 1.x's: names and name scopes, devices, control dependencies, collections,
dtypes and static shapes, the generated op wrappers, and construction errors as TypeError/ValueError."""

import numpy as np
import pytest

import actorflow as tf
from actorflow import gen_ops


def test_names_are_unique_and_scoped():
    a = tf.constant(1.0, name="c")
    b = tf.constant(2.0, name="c")
    assert (a.name, b.name) == ("c:0", "c_1:0")
    with tf.name_scope("layer"):
        x = tf.add(a, b)
        with tf.name_scope("inner") as scope:
            assert scope == "layer/inner/"
            y = tf.multiply(x, 2.0, name="y")
    with tf.name_scope("layer"):  # a second scope of the same name is made unique
        z = tf.identity(y)
    assert x.op.name == "layer/AddV2"
    assert y.op.name == "layer/inner/y"
    assert z.op.name == "layer_1/Identity"
    with tf.name_scope("layer/"):  # re-entered exactly
        w = tf.identity(y, name="again")
    assert w.op.name == "layer/again"
    assert (a + b).op.name == "add"
    with tf.name_scope("a/b"):
        assert tf.constant(1).op.name == "a/b/Const"
    with tf.variable_scope("layer2"):
        w = tf.get_variable("weights", [2])
    assert w.initializer.name == "layer2/weights/Assign" and w.value().op.name == "layer2/weights/read"
    p = tf.placeholder(tf.bool, [])

    def branch():
        with tf.name_scope("inner") as scope:
            assert scope.startswith("cond") and scope.endswith("/inner/")
            return tf.identity(a, name="x")
    out = tf.cond(p, branch, lambda: a)
    assert out.op.name.startswith("cond")
    assert tf.get_default_graph().get_tensor_by_name("layer/inner/y:0") is y
    assert tf.get_default_graph().get_operation_by_name("c_1") is b.op


def test_variables_are_named_as_tensorflow_names_them():
    v = tf.Variable(tf.zeros([2, 3]), name="w")
    assert v.name == "w:0"
    assert v.op.type == "VariableV2"
    assert v.initializer.name == "w/Assign"
    assert v.value().op.name == "w/read"
    assert v.dtype == tf.float32_ref and v.dtype.base_dtype == tf.float32
    assert v.shape.as_list() == [2, 3]
    v2 = tf.Variable(1, name="w")
    assert v2.name == "w_1:0"
    with tf.variable_scope("net"):
        g = tf.get_variable("g", [4], initializer=tf.zeros_initializer())
        with pytest.raises(ValueError, match="already exists"):
            tf.get_variable("g", [4])
    with tf.variable_scope("net", reuse=True):
        assert tf.get_variable("g", [4]) is g
    assert g.name == "net/g:0"
    assert set(v.name for v in tf.trainable_variables()) == {"w:0", "w_1:0", "net/g:0"}
    assert tf.global_variables()[0] is v


def test_devices_merge_and_device_functions_see_each_op():
    with tf.device("/job:ps/task:0"):
        a = tf.constant(1.0)
        with tf.device("/device:CPU:0"):
            b = tf.constant(2.0)
        with tf.device("/job:worker"):
            c = tf.constant(3.0)
    assert a.device == "/job:ps/task:0"
    assert b.device == "/job:ps/task:0/device:CPU:0"
    assert c.device == "/job:worker/task:0"
    seen = []

    def fn(op):
        seen.append(op.type)
        return "/job:ps/task:1" if op.type == "VariableV2" else "/job:worker/task:0"
    with tf.device(fn):
        v = tf.Variable(1.0, name="v")
    assert v.device == "/job:ps/task:1"
    assert v.initial_value.device == "/job:worker/task:0"
    # The variable's Assign and read go where it is (their ref input), whatever the function says.
    assert v.initializer.device == "/job:ps/task:1" and v.value().device == "/job:ps/task:1"
    assert "VariableV2" in seen and "Assign" not in seen


def test_control_dependencies_and_group():
    a = tf.constant(1.0)
    b = tf.constant(2.0)
    with tf.control_dependencies([a]):
        c = tf.identity(b)
        with tf.control_dependencies(None):
            d = tf.identity(b)
    assert c.op.control_inputs == [a.op]
    assert d.op.control_inputs == []
    g = tf.group(a, c, name="both")
    assert g.type == "NoOp" and g.name == "both"
    assert set(o.name for o in g.control_inputs) == {a.op.name, c.op.name}


def test_static_shapes_and_dtypes():
    x = tf.placeholder(tf.float32, [None, 784])
    w = tf.zeros([784, 10])
    y = tf.matmul(x, w)
    assert y.shape.as_list() == [None, 10]
    assert y.dtype == tf.float32
    assert tf.reshape(y, [-1, 5, 2]).shape.as_list() == [None, 5, 2]
    assert tf.reduce_sum(y, axis=1).shape.as_list() == [None]
    assert tf.placeholder(tf.int32).shape.ndims is None
    assert tf.constant([1, 2, 3]).dtype == tf.int32
    assert tf.constant(np.arange(4, dtype=np.int64)).dtype == tf.int64
    assert tf.constant(1.5).dtype == tf.float32
    assert tf.constant([b"a", b"b"]).dtype == tf.string
    assert tf.cast(tf.constant(1), tf.float64).dtype == tf.float64
    assert tf.as_dtype("float32") is tf.float32 and tf.as_dtype(np.int64) is tf.int64


def test_generated_wrappers_carry_inputs_attrs_and_docs():
    assert "MatMul" in gen_ops.mat_mul.__doc__
    assert "transpose_a" in gen_ops.mat_mul.__doc__
    out = gen_ops.mat_mul(tf.ones([2, 3]), tf.ones([2, 3]), transpose_b=True)
    assert out.shape.as_list() == [2, 2]
    assert out.op.get_attr("transpose_b") is True
    assert out.op.get_attr("T") == tf.float32
    s = gen_ops.shape_n([tf.ones([2]), tf.ones([3, 4])])
    assert isinstance(s, list) and len(s) == 2
    top = gen_ops.top_kv2(tf.ones([5]), 2)
    assert top.values.dtype == tf.float32 and top.indices.dtype == tf.int32


def test_construction_errors_are_tensorflows():
    with pytest.raises(TypeError):
        tf.add(tf.constant(1.0), tf.constant(1))  # float32 + int32
    with pytest.raises(ValueError):
        tf.matmul(tf.ones([2, 3]), tf.ones([2, 3]))  # inner dimensions differ
    with pytest.raises(TypeError):
        tf.constant("text", dtype=tf.float32)
    g = tf.Graph()
    with g.as_default():
        other = tf.constant(1.0)
    with pytest.raises(ValueError, match="must be from the same graph"):
        tf.add(tf.constant(1.0), other)
    # The graph stays usable after a failed op.
    assert tf.add(tf.constant(1.0), 2.0).dtype == tf.float32
    with pytest.raises(TypeError, match="not iterable"):
        iter(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="bool"):
        bool(tf.constant(True))


def test_collections():
    tf.add_to_collection("mine", 1)
    tf.add_to_collection("mine", 2)
    assert tf.get_collection("mine") == [1, 2]
    tf.get_collection_ref("mine").append(3)
    assert tf.get_collection("mine") == [1, 2, 3]
    with tf.name_scope("a"):
        v = tf.Variable(1.0, name="v")
    tf.Variable(2.0, name="u")
    assert tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope="a") == [v]


def test_graph_def_round_trip():
    a = tf.constant([1.0, 2.0], name="a")
    tf.multiply(a, 3.0, name="b")
    data = tf.get_default_graph().as_graph_def().SerializeToString()
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(data)
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run("b:0"), [3.0, 6.0])
