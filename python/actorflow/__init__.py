"""actorflow: TensorFlow 1.x's Python API over actorflow's actor runtime.

    import actorflow as tf

    x = tf.placeholder(tf.float32, [None, 784])
    w = tf.Variable(tf.zeros([784, 10]))
    y = tf.matmul(x, w)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        print(sess.run(y, {x: batch}))

Everything a TensorFlow 1.x program names through `tf.` (or `tf.compat.v1.`) that the runtime has: graphs,
ops (every op of the registry is in `actorflow.gen_ops`, generated at build time), variables, gradients,
optimizers, control flow, sessions and TensorFlow's exception classes.
"""

from actorflow import _actorflow  # noqa: F401 (the C++ runtime)
from actorflow import dtypes
from actorflow import errors
from actorflow import framework
from actorflow import gen_ops
from actorflow.dtypes import *  # noqa: F401,F403
from actorflow.dtypes import DType, as_dtype
from actorflow.framework import (Graph, GraphKeys, Operation, Tensor, add_to_collection, add_to_collections,  # noqa
                                 colocate_with, constant, container, control_dependencies, convert_to_tensor,
                                 device, get_collection, get_collection_ref, get_default_graph, get_name_scope,
                                 import_graph_def, is_tensor, name_scope, NoGradient, register_tensor_conversion_function,
                                 RegisterGradient, reset_default_graph, set_random_seed)
from actorflow.tensor_shape import Dimension, TensorShape  # noqa: F401
from actorflow import math_ops
from actorflow.math_ops import *  # noqa: F401,F403
from actorflow import array_ops
from actorflow.array_ops import *  # noqa: F401,F403
from actorflow import random_ops
from actorflow.random_ops import *  # noqa: F401,F403
from actorflow import init_ops
from actorflow.init_ops import *  # noqa: F401,F403
from actorflow import variables
from actorflow.variables import *  # noqa: F401,F403
from actorflow import control_flow_ops
from actorflow.control_flow_ops import Assert, case, cond, group, tuple, while_loop  # noqa: F401,A004
from actorflow.gradients import gradients, stop_gradient  # noqa: F401
from actorflow import nn
from actorflow import data_flow_ops
from actorflow.data_flow_ops import (FIFOQueue, FixedLengthRecordReader, IdentityReader, PaddingFIFOQueue,  # noqa
                                     PriorityQueue, QueueBase, RandomShuffleQueue, ReaderBase, TextLineReader,
                                     TFRecordReader)
from actorflow import session as _session
from actorflow.session import (ConfigProto, GPUOptions, InteractiveSession, RunMetadata, RunOptions,  # noqa: F401
                               Session, get_default_session)
from actorflow import clip_ops
from actorflow.clip_ops import clip_by_global_norm, clip_by_norm, clip_by_value, global_norm  # noqa: F401
from actorflow import layers
from actorflow.layers import losses  # noqa: F401 (tf.losses)
from actorflow import python_io
from actorflow import saved_model
from actorflow import summary
from actorflow import train
from actorflow.train import start_queue_runners  # noqa: F401 (tf.train.start_queue_runners, also as tf.)

newaxis = None
decode_raw = gen_ops.decode_raw
string_to_number = gen_ops.string_to_number


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None, na_value="",
               select_cols=None):
    """The columns of CSV `records`, one tensor per column, of the dtype of its default."""
    defaults = [convert_to_tensor(d) for d in record_defaults]
    return gen_ops.decode_csv(records, defaults, field_delim=field_delim, use_quote_delim=use_quote_delim,
                              na_value=na_value, select_cols=select_cols, name=name)


zeros_like = array_ops.zeros_like
ones_like = array_ops.ones_like
identity = array_ops.identity
no_op = array_ops.no_op
global_variables_initializer = variables.global_variables_initializer
float32 = dtypes.float32


class _Compat(object):
    """tf.compat.v1: this module (TensorFlow 1.x's API is actorflow's)."""

    def __init__(self, module):
        self.v1 = module


class _Namespace(object):
    def __init__(self, **members):
        self.__dict__.update(members)


import sys as _sys  # noqa: E402

compat = _Compat(_sys.modules[__name__])
# tf.contrib: the one part of it that input pipelines on GPUs use.
contrib = _Namespace(staging=_Namespace(StagingArea=data_flow_ops.StagingArea))
__version__ = "1.15.0-actorflow"
VERSION = __version__
