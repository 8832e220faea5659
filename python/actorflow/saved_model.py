"""tf.saved_model: loading a SavedModel (TensorFlow 1's tf.saved_model.loader.load, also what TensorFlow 2
writes) into a session: its graph goes into the session's graph, its variables are restored from
variables/variables, its main op runs with the assets' paths fed; the meta graph's signatures come back."""

import types

from actorflow import _actorflow
from actorflow.framework import GraphDef

__all__ = ["loader", "load", "tag_constants", "signature_constants"]


class tag_constants(object):  # noqa: N801 (TensorFlow's name)
    SERVING = "serve"
    TRAINING = "train"
    GPU = "gpu"
    TPU = "tpu"


class signature_constants(object):  # noqa: N801
    DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"
    PREDICT_METHOD_NAME = "tensorflow/serving/predict"
    CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
    REGRESS_METHOD_NAME = "tensorflow/serving/regress"


def _info(d):
    return types.SimpleNamespace(name=d["name"], dtype=d["dtype"])


def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    """Loads the meta graph of `export_dir` tagged `tags` into `sess` (whose graph must be empty) and returns it:
    `.signature_def[key].inputs[name].name` are the tensors to feed and fetch."""
    if import_scope:
        raise NotImplementedError("saved_model.loader.load(import_scope=...)")
    parts = _actorflow.saved_model_parts(export_dir, set(tags))
    graph = sess.graph
    graph._scope.import_graph_def(parts["graph_def"])
    if parts["variables"] is not None and parts["restore_op"]:
        sess.run(parts["restore_op"], {parts["filename_tensor"]: parts["variables"]})
    if parts["main_op"]:
        sess.run(parts["main_op"], {name: path for name, path in parts["assets"].items()} or None)
    signatures = {k: types.SimpleNamespace(inputs={n: _info(i) for n, i in v["inputs"].items()},
                                           outputs={n: _info(i) for n, i in v["outputs"].items()},
                                           method_name=v["method_name"])
                  for k, v in parts["signatures"].items()}
    meta = types.SimpleNamespace(signature_def=signatures, graph_def=GraphDef(parts["graph_def"]),
                                 meta_info_def=types.SimpleNamespace(tags=list(parts["tags"])),
                                 SerializeToString=lambda: parts["meta_graph_def"])
    return meta


loader = types.SimpleNamespace(load=load, maybe_saved_model_directory=lambda d: __import__("os").path.exists(
    __import__("os").path.join(d, "saved_model.pb")) or __import__("os").path.exists(
    __import__("os").path.join(d, "saved_model.pbtxt")))
