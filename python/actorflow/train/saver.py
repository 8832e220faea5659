"""tf.train.Saver and checkpoint files: SaveV2/RestoreV2 in TensorFlow's V2 format (<prefix>.index and
<prefix>.data-00000-of-00001), the `checkpoint` state file TensorFlow writes beside them (latest_checkpoint reads
it), and max_to_keep. Checkpoints written here load in TensorFlow, and TensorFlow's load here."""

import os
import re
import time

import numpy as np

from actorflow import array_ops
from actorflow import control_flow_ops
from actorflow import dtypes
from actorflow import errors
from actorflow import framework
from actorflow import gen_ops
from actorflow import variables

__all__ = ["Saver", "latest_checkpoint", "get_checkpoint_state", "checkpoint_exists", "update_checkpoint_state",
           "CheckpointState"]


class CheckpointState(object):
    def __init__(self, model_checkpoint_path, all_model_checkpoint_paths):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)


def _state_path(directory, latest_filename=None):
    return os.path.join(directory, latest_filename or "checkpoint")


def _quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None, latest_filename=None,
                            save_relative_paths=True):
    """Writes the `checkpoint` file (CheckpointState in protobuf text format, as TensorFlow writes it)."""
    paths = list(all_model_checkpoint_paths or [])
    if model_checkpoint_path not in paths:
        paths.append(model_checkpoint_path)

    def rel(p):  # a checkpoint in save_dir by its name, as TensorFlow writes it (read back joined to the dir)
        if save_relative_paths and os.path.abspath(os.path.dirname(p)) == os.path.abspath(save_dir):
            return os.path.basename(p)
        return p
    text = "model_checkpoint_path: %s\n" % _quote(rel(model_checkpoint_path))
    text += "".join("all_model_checkpoint_paths: %s\n" % _quote(rel(p)) for p in paths)
    tmp = _state_path(save_dir, latest_filename) + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, _state_path(save_dir, latest_filename))


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The CheckpointState in `checkpoint_dir`, or None when there is none."""
    path = _state_path(checkpoint_dir, latest_filename)
    if not os.path.exists(path):
        return None
    model, all_paths = None, []
    with open(path) as f:
        for line in f:
            m = re.match(r'\s*(model_checkpoint_path|all_model_checkpoint_paths)\s*:\s*"((?:[^"\\]|\\.)*)"', line)
            if not m:
                continue
            value = re.sub(r'\\(.)', r'\1', m.group(2))
            if not os.path.isabs(value):
                value = os.path.join(checkpoint_dir, value)
            if m.group(1) == "model_checkpoint_path":
                model = value
            else:
                all_paths.append(value)
    if model is None:
        raise ValueError("Invalid checkpoint state loaded from %s" % checkpoint_dir)
    return CheckpointState(model, all_paths)


def checkpoint_exists(checkpoint_prefix):
    return os.path.exists(checkpoint_prefix + ".index") or os.path.exists(checkpoint_prefix) or \
        os.path.exists(checkpoint_prefix + ".afckpt")


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest checkpoint in `checkpoint_dir`, or None."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and checkpoint_exists(state.model_checkpoint_path):
        return state.model_checkpoint_path
    return None


def _saveables(var_list):
    if var_list is None:
        var_list = variables.global_variables() + framework.get_collection("saveable_objects")
    if isinstance(var_list, dict):
        items = sorted(var_list.items())
    else:
        items = []
        for v in var_list:
            name = v.op.name
            items.append((name, v))
        items.sort(key=lambda kv: kv[0])
    names = [k for k, _ in items]
    if len(set(names)) != len(names):
        raise ValueError("At least two variables have the same name: %s" % sorted(
            n for n in set(names) if names.count(n) > 1)[0])
    return items


class Saver(object):
    """Saves and restores variables: save(sess, path, global_step) -> the checkpoint's prefix."""

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False, saver_def=None,
                 builder=None, defer_build=False, allow_empty=False, write_version=2, pad_step_number=False,
                 save_relative_paths=False, filename=None):
        items = _saveables(var_list)
        if not items and not allow_empty:
            raise ValueError("No variables to save")
        self._items = items
        self._max_to_keep = max_to_keep
        self._keep_every = keep_checkpoint_every_n_hours * 3600.0
        self._last_kept = time.time()
        self._pad = pad_step_number
        self._relative = save_relative_paths
        self._last_checkpoints = []
        with framework.name_scope(name, "save"):
            self._filename = array_ops.placeholder_with_default(
                array_ops.constant(filename or "model", dtype=dtypes.string), shape=[], name="Const")
            if items:
                names = array_ops.constant(np.array([k.encode() for k, _ in items], dtype=object))
                slices = array_ops.constant(np.array([b""] * len(items), dtype=object))
                tensors = [v.value() if isinstance(v, variables.Variable) else v for _, v in items]
                save = gen_ops.save_v2(self._filename, names, slices, tensors)
                with framework.control_dependencies([save]):
                    self._save_tensor = array_ops.identity(self._filename, name="control_dependency")
                restored = gen_ops.restore_v2(self._filename, names, slices,
                                              dtypes=[t.dtype.base_dtype for t in tensors])
                assigns = []
                for (k, v), r in zip(items, restored):
                    ref = v._ref() if isinstance(v, variables.Variable) else v
                    assigns.append(gen_ops.assign(ref, r, validate_shape=not reshape))
                self._restore_op = control_flow_ops.group(*assigns, name="restore_all")
            else:
                self._save_tensor = array_ops.identity(self._filename)
                self._restore_op = control_flow_ops.no_op(name="restore_all")

    @property
    def last_checkpoints(self):
        return list(self._last_checkpoints)

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time):
        self._last_checkpoints = [p for p, _ in last_checkpoints_with_time]

    def save(self, sess, save_path, global_step=None, latest_filename=None, meta_graph_suffix="meta",
             write_meta_graph=True, write_state=True, strip_default_attrs=False, save_debug_info=False):
        if global_step is not None:
            step = global_step if isinstance(global_step, (int, np.integer)) else int(sess.run(global_step))
            prefix = "%s-%08d" % (save_path, step) if self._pad else "%s-%d" % (save_path, step)
        else:
            prefix = save_path
        directory = os.path.dirname(prefix) or "."
        if not os.path.isdir(directory):
            raise ValueError("Parent directory of %s doesn't exist, can't save." % save_path)
        sess.run(self._save_tensor, {self._filename: prefix})
        if write_state:
            if prefix in self._last_checkpoints:
                self._last_checkpoints.remove(prefix)
            self._last_checkpoints.append(prefix)
            while self._max_to_keep and len(self._last_checkpoints) > self._max_to_keep:
                old = self._last_checkpoints.pop(0)
                if time.time() - self._last_kept >= self._keep_every:
                    self._last_kept = time.time()
                    continue
                self._delete(old)
            update_checkpoint_state(directory, prefix, self._last_checkpoints, latest_filename,
                                    save_relative_paths=True)
        return prefix

    @staticmethod
    def _delete(prefix):
        directory = os.path.dirname(prefix) or "."
        base = os.path.basename(prefix)
        for f in os.listdir(directory):
            if f == base + ".index" or f.startswith(base + ".data-") or f == base + ".meta" or \
                    f == base + ".afckpt":
                try:
                    os.remove(os.path.join(directory, f))
                except OSError:
                    pass

    def restore(self, sess, save_path):
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        if not checkpoint_exists(save_path):
            raise ValueError("The passed save_path is not a valid checkpoint: " + save_path)
        sess.run(self._restore_op, {self._filename: save_path})

    def recover_last_checkpoints(self, checkpoint_paths):
        self._last_checkpoints = [p for p in checkpoint_paths if checkpoint_exists(p)]

    def as_saver_def(self):
        return None


_ = errors
