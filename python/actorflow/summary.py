"""tf.summary: scalar and histogram summaries (ops whose output is a serialized Summary), merge and merge_all,
and FileWriter, which writes them with the graph to an events file for TensorBoard."""

import glob
import os

from actorflow import _actorflow
from actorflow import framework
from actorflow import gen_ops
from actorflow.framework import GraphKeys

__all__ = ["scalar", "histogram", "merge", "merge_all", "FileWriter", "FileWriterCache", "summary_iterator"]


def _clean_tag(name):
    return name.replace(" ", "_")


def scalar(name, tensor, collections=None, family=None):
    """A Summary with one simple value named `name` (the scope's prefix included, as TensorFlow's)."""
    with framework.name_scope(_clean_tag(name)) as scope:
        out = gen_ops.scalar_summary(scope[:-1], tensor, name=None)
    for c in (collections if collections is not None else [GraphKeys.SUMMARIES]):
        framework.add_to_collection(c, out)
    return out


def histogram(name, values, collections=None, family=None):
    with framework.name_scope(_clean_tag(name)) as scope:
        out = gen_ops.histogram_summary(scope[:-1], values)
    for c in (collections if collections is not None else [GraphKeys.SUMMARIES]):
        framework.add_to_collection(c, out)
    return out


def merge(inputs, collections=None, name=None):
    out = gen_ops.merge_summary(list(inputs), name=name)
    for c in (collections or []):
        framework.add_to_collection(c, out)
    return out


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    items = framework.get_collection(key, scope)
    if not items:
        return None
    return merge(items, name=name)


class FileWriter(object):
    """Writes summaries (add_summary(summary, global_step)), the graph and events to `logdir`."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None, filename_suffix=None,
                 session=None):
        if not os.path.isdir(logdir):
            os.makedirs(logdir, exist_ok=True)
        self._logdir = logdir
        self._w = _actorflow.FileWriter(logdir, max_queue, float(flush_secs), filename_suffix or "")
        self._closed = False
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self):
        return self._logdir

    def add_summary(self, summary, global_step=None):
        if self._closed:
            raise RuntimeError("FileWriter is closed")
        self._w.add_summary(summary if isinstance(summary, bytes) else summary, int(global_step or 0))

    def add_graph(self, graph, global_step=None, graph_def=None):
        data = graph_def.SerializeToString() if graph_def is not None else graph.as_graph_def().SerializeToString()
        self._w.add_graph(data, int(global_step or 0))

    def add_session_log(self, session_log, global_step=None):
        pass

    def flush(self):
        self._w.flush()

    def close(self):
        if not self._closed:
            self._w.close()
            self._closed = True

    def reopen(self):
        if self._closed:
            self._w = _actorflow.FileWriter(self._logdir, 10, 120.0, "")
            self._closed = False

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.close()


class FileWriterCache(object):
    _cache = {}

    @staticmethod
    def get(logdir):
        if logdir not in FileWriterCache._cache:
            FileWriterCache._cache[logdir] = FileWriter(logdir, graph=framework.get_default_graph())
        return FileWriterCache._cache[logdir]

    @staticmethod
    def clear():
        for w in FileWriterCache._cache.values():
            w.close()
        FileWriterCache._cache = {}


def summary_iterator(path):
    """The events of an events file (wall_time, step, summary.value[i].tag / simple_value / histo, graph_def)."""
    return iter(_actorflow.read_events(path))


def _events_files(logdir):
    return sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*")))
