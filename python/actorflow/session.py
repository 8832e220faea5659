"""tf.Session: runs steps of a graph. `run(fetches, feed_dict)` takes TensorFlow's fetch structures (a tensor, an
op, a name, a variable, or nested lists, tuples, namedtuples and dicts of them) and returns numpy values in the
same structure (None for an op). Feeds are keyed by tensors or names; numpy arrays go in without a copy where
the dtype and alignment allow, and results come out without one where no one else holds their buffer. The
GIL is released while a step runs, so other Python threads (queue runners) run meanwhile."""

import atexit
import collections
import threading
import weakref

import numpy as np

from actorflow import _actorflow
from actorflow import errors
from actorflow import framework
from actorflow.framework import Operation, Tensor

__all__ = ["Session", "InteractiveSession", "get_default_session"]


class _DefaultSessionStack(threading.local):
    def __init__(self):
        self.stack = []


_default_session_stack = _DefaultSessionStack()
_live_sessions = weakref.WeakSet()


def get_default_session():
    return _default_session_stack.stack[-1] if _default_session_stack.stack else None


def _get_session(session, graph):
    session = session or get_default_session()
    if session is None:
        raise ValueError("Cannot evaluate tensor using `eval()`: No default session is registered. Use `with "
                         "sess.as_default()` or pass an explicit session to `eval(session=sess)`")
    if session.graph is not graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's graph is different from "
                         "the session's graph.")
    return session


class _FetchPlan(object):
    """How a fetch structure maps to the flat lists Session::Run takes, and back."""

    __slots__ = ("names", "targets", "build")

    def __init__(self, graph, fetches):
        self.names = []
        self.targets = []
        index = {}

        def element(f):
            if f is None:
                raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
            if hasattr(f, "_as_graph_element") and not isinstance(f, (Tensor, Operation)):
                f = f._as_graph_element()
            try:
                e = graph.as_graph_element(f)
            except TypeError:
                raise TypeError("Fetch argument %r has invalid type %s, must be a string or Tensor. (Can not convert "
                                "a %s into a Tensor or Operation.)" % (f, type(f), type(f).__name__))
            except ValueError as err:
                raise ValueError("Fetch argument %r cannot be interpreted as a Tensor. (%s)" % (f, err))
            except KeyError as err:
                raise ValueError("Fetch argument %r cannot be interpreted as a Tensor. (%s)" % (f, err.args[0]))
            if isinstance(e, Operation):
                self.targets.append(e.name)
                return lambda values: None
            i = index.get(e.name)
            if i is None:
                i = index[e.name] = len(self.names)
                self.names.append(e.name)
            return lambda values: values[i]

        def plan(f):
            if isinstance(f, (Tensor, Operation, str)) or hasattr(f, "_as_graph_element"):
                return element(f)
            if isinstance(f, dict):
                keys = list(f.keys())
                subs = [plan(f[k]) for k in keys]
                cls = type(f)
                return lambda values: cls(zip(keys, [s(values) for s in subs])) if cls is dict else cls(
                    {k: s(values) for k, s in zip(keys, subs)})
            if isinstance(f, (list, tuple)):
                subs = [plan(x) for x in f]
                if hasattr(f, "_fields"):  # a namedtuple
                    return lambda values: type(f)(*[s(values) for s in subs])
                cls = type(f)
                return lambda values: cls(s(values) for s in subs)
            return element(f)

        self.build = plan(fetches)


class BaseSession(object):
    def __init__(self, target="", graph=None, config=None, _calls=None):
        self._graph = graph if graph is not None else framework.get_default_graph()
        self._target = target.decode() if isinstance(target, bytes) else target
        self._config = config
        self._closed = False
        filters = list(getattr(config, "device_filters", None) or [])
        # What runs the steps: a session of its own, or (_calls) a MonitoredSession's supervisor.
        self._c = _calls if _calls is not None else _actorflow.Session(self._graph._scope, self._target, filters)
        self._plans = {}
        self._feed_info = {}  # feed key -> what _feed_key found (a shape refined by set_shape is looked at again)
        _live_sessions.add(self)

    @property
    def graph(self):
        return self._graph

    @property
    def graph_def(self):
        return self._graph.as_graph_def()

    @property
    def sess_str(self):
        return self._target

    def as_default(self):
        return _SessionContext(self)

    def close(self):
        if not self._closed:
            self._closed = True
            self._c.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 (at interpreter exit the module may be gone)
            pass

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs one step: the values of `fetches`, in their structure, with `feed_dict`'s values fed."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        plan = self._plan(fetches)
        feeds = self._feeds(feed_dict) if feed_dict else []
        timeout = getattr(options, "timeout_in_ms", 0) if options is not None else 0
        values = self._c.run(feeds, plan.names, plan.targets, timeout)
        return plan.build(values)

    def _plan(self, fetches):
        # A tensor or op (the common case) is planned once per session.
        key = fetches if isinstance(fetches, (Tensor, Operation, str)) else None
        if key is not None:
            plan = self._plans.get(key)
            if plan is None:
                plan = self._plans[key] = _FetchPlan(self._graph, fetches)
            return plan
        return _FetchPlan(self._graph, fetches)

    def _feeds(self, feed_dict):
        feeds = []
        for key, value in feed_dict.items():
            info = self._feed_info.get(key) if isinstance(key, (Tensor, str)) else None
            if info is None or (isinstance(key, Tensor) and info[3] != getattr(key, "_shape_version", 0)):
                info = self._feed_key(key)
            name, enum, dims = info[0], info[1], info[2]
            if isinstance(value, Tensor):
                raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable feed values include "
                                "Python scalars, strings, lists, numpy ndarrays, or TensorHandles. For reference, "
                                "the tensor object was %s which was passed to the feed with key %s." % (value, key))
            if dims is not None:
                vshape = value.shape if isinstance(value, np.ndarray) else np.shape(value)
                if len(vshape) != len(dims) or any(d is not None and d != v for d, v in zip(dims, vshape)):
                    raise ValueError("Cannot feed value of shape %r for Tensor %r, which has shape %r" %
                                     (tuple(vshape), name, "(%s)" % ", ".join("?" if d is None else str(d)
                                                                            for d in dims)))
            feeds.append((name, value, enum))
        return feeds

    def _feed_key(self, key):
        """(name, dtype enum, static dims or None, shape version) of a feed key, kept for the next runs."""
        graph = self._graph
        original = key
        if hasattr(key, "_as_graph_element") and not isinstance(key, Tensor):
            key = key._as_graph_element()
        if isinstance(key, str):
            try:
                key = graph.as_graph_element(key, allow_operation=False)
            except (KeyError, ValueError) as e:
                raise TypeError("Cannot interpret feed_dict key as Tensor: " + str(e))
        elif not isinstance(key, Tensor):
            raise TypeError("Cannot interpret feed_dict key as Tensor: Can not convert a %s into a Tensor." %
                            type(key).__name__)
        if key.graph is not graph:
            raise ValueError("Cannot interpret feed_dict key as Tensor: Tensor %s is not an element of this "
                             "graph." % key.name)
        shape = key.shape
        dims = None if shape.ndims is None else shape.as_list()
        info = (key.name, key.dtype.base_dtype.as_datatype_enum, dims, getattr(key, "_shape_version", 0))
        if isinstance(original, (Tensor, str)):
            self._feed_info[original] = info
        return info

    def reset(self, containers=None):
        self._c.reset(list(containers or []))

    def list_devices(self):
        return []


class Session(BaseSession):
    """A session over `graph` (the default graph) on `target`: "" runs in this process; a Server's target or
    "actorflow://host:port" / "grpc://host:port" runs on a cluster."""

    def __enter__(self):
        self._context = self.as_default()
        self._context.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._context.__exit__(exc_type, exc, tb)
        self.close()

    @staticmethod
    def reset(target, containers=None, config=None):
        s = _actorflow.Session(framework.Graph()._scope, target.decode() if isinstance(target, bytes) else target, [])
        s.reset(list(containers or []))
        s.close()


class InteractiveSession(BaseSession):
    """A session that makes itself the default on construction (for shells and notebooks)."""

    def __init__(self, target="", graph=None, config=None):
        super(InteractiveSession, self).__init__(target, graph, config)
        self._context = self.as_default()
        self._context.__enter__()

    def close(self):
        if not self._closed and getattr(self, "_context", None) is not None:
            try:
                self._context.__exit__(None, None, None)
            except IndexError:
                pass
            self._context = None
        super(InteractiveSession, self).close()


class _SessionContext(object):
    def __init__(self, session):
        self._session = session
        self._graph_ctx = None

    def __enter__(self):
        _default_session_stack.stack.append(self._session)
        self._graph_ctx = self._session.graph.as_default()
        self._graph_ctx.__enter__()
        return self._session

    def __exit__(self, *args):
        self._graph_ctx.__exit__(*args)
        if _default_session_stack.stack and _default_session_stack.stack[-1] is self._session:
            _default_session_stack.stack.pop()
        else:
            _default_session_stack.stack.remove(self._session)


class RunOptions(object):
    """TensorFlow's RunOptions: timeout_in_ms bounds a step (DeadlineExceededError)."""
    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = range(4)

    def __init__(self, timeout_in_ms=0, trace_level=0):
        self.timeout_in_ms = timeout_in_ms
        self.trace_level = trace_level


class RunMetadata(object):
    pass


class ConfigProto(object):
    """TensorFlow's session config: `device_filters` (the tasks a cluster session uses; by default, with
    parameter servers, those and the session's own task) is honoured; thread-pool sizes are the runtime's
    (ACTORFLOW_NUM_THREADS)."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


class GPUOptions(ConfigProto):
    pass


@atexit.register
def _close_all():
    # Interpreter exit: end what runs (queue-runner threads blocked in a step return with CancelledError),
    # wait until every thread is out of its step (back in Python, where finalization may end it safely),
    # then stop giving fed arrays back from other threads.
    for s in list(_live_sessions):
        try:
            s.close()
        except Exception:  # noqa: BLE001
            pass
    _actorflow._wait_for_steps(30000)
    _actorflow._stop_releasing()


_ = collections, errors
