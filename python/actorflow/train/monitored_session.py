"""Monitored training (tf.train.MonitoredTrainingSession) over the C++ TrainingSupervisor: a session that
initializes the model or restores its latest checkpoint (the chief) or waits until the chief has (the others),
runs hooks around each step (basic_session_run_hooks.py: stop at a step, save checkpoints and summaries, log
tensors, stop on NaN), and recovers from a lost peer: a step that fails with AbortedError or UnavailableError is
run again in a new session, restored from the latest checkpoint, as TensorFlow's _RecoverableSession does, with
a bound on the recoveries."""

import logging
import time
import weakref

import numpy as np

from actorflow import _actorflow
from actorflow import control_flow_ops
from actorflow import errors
from actorflow import framework
from actorflow import session as session_lib
from actorflow import summary as summary_lib
from actorflow import variables
from actorflow.framework import GraphKeys
from actorflow.train import queue_runner
from actorflow.train.basic_session_run_hooks import (  # noqa: F401 (tf.train's names)
    CheckpointSaverHook, FeedFnHook, FinalOpsHook, LoggingTensorHook, NanLossDuringTrainingError, NanTensorHook,
    SessionRunArgs, SessionRunContext, SessionRunHook, SessionRunValues, StepCounterHook, StopAtStepHook,
    SummarySaverHook)
from actorflow.train.coordinator import Coordinator
from actorflow.train.optimizer import get_global_step
from actorflow.train.saver import Saver, latest_checkpoint

__all__ = ["Scaffold", "SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues",
           "StopAtStepHook", "CheckpointSaverHook", "SummarySaverHook", "LoggingTensorHook", "NanTensorHook",
           "NanLossDuringTrainingError", "StepCounterHook", "FinalOpsHook", "FeedFnHook", "SessionManager",
           "ChiefSessionCreator", "WorkerSessionCreator", "MonitoredSession", "SingularMonitoredSession",
           "MonitoredTrainingSession"]

log = logging.getLogger("actorflow")
USE_DEFAULT = object()


class Scaffold(object):
    """What a training session needs beyond the model: init, ready and local-init ops, a saver, a summary op."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None, ready_for_local_init_op=None,
                 local_init_op=None, summary_op=None, saver=None, copy_from_scaffold=None):
        self.init_op, self.init_feed_dict = init_op, init_feed_dict
        # Given as init_fn(scaffold, session); called as init_fn(session), as TensorFlow's Scaffold does.
        self.init_fn = (lambda sess: init_fn(self, sess)) if init_fn is not None else None
        self.ready_op, self.ready_for_local_init_op = ready_op, ready_for_local_init_op
        self.local_init_op, self.summary_op, self.saver = local_init_op, summary_op, saver
        self._finalized = False

    def finalize(self):
        if self._finalized:
            return self
        if self.init_op is None:
            self.init_op = variables.global_variables_initializer()
        if self.ready_op is None:
            self.ready_op = variables.report_uninitialized_variables()
        if self.ready_for_local_init_op is None:
            self.ready_for_local_init_op = variables.report_uninitialized_variables(variables.global_variables())
        if self.local_init_op is None:
            self.local_init_op = control_flow_ops.group(variables.local_variables_initializer())
        if self.summary_op is None:
            self.summary_op = summary_lib.merge_all()
        if self.saver is None:
            savers = framework.get_collection(GraphKeys.SAVERS)
            if savers:
                self.saver = savers[0]
            elif variables.global_variables():
                self.saver = Saver(allow_empty=True)
                framework.add_to_collection(GraphKeys.SAVERS, self.saver)
        framework.get_default_graph().finalize()
        self._finalized = True
        return self


class _SyncReplicasOptimizerHook(SessionRunHook):
    def __init__(self, sync_optimizer, is_chief, num_tokens):
        self._opt, self._is_chief, self._num_tokens = sync_optimizer, is_chief, num_tokens

    def begin(self):
        self._local_init = self._opt.chief_init_op if self._is_chief else self._opt.local_step_init_op
        self._ready = self._opt.ready_for_local_init_op
        self._qr = self._opt.get_chief_queue_runner() if self._is_chief else None
        self._init_tokens = self._opt.get_init_tokens_op(self._num_tokens) if self._is_chief else None

    def after_create_session(self, session, coord):
        session.run(self._local_init)
        if self._is_chief:
            self._qr.create_threads(session, coord=coord, daemon=True, start=True)
            session.run(self._init_tokens)


def _restore_or_initialize(sess, saver, path, init_op, init_feed_dict, init_fn):
    """The chief's start: `saver` restores `path`, or (none) init_op runs and then init_fn(sess)."""
    if saver is not None and path:
        saver.restore(sess, path)
        return
    if init_op is not None:
        sess.run(init_op, feed_dict=init_feed_dict)
    if init_fn is not None:
        init_fn(sess)


def _not_ready(sess, op):
    """The names `op` (report_uninitialized_variables) reports, joined; None when none (or no op)."""
    if op is None:
        return None
    missing = sess.run(op)
    return None if np.size(missing) == 0 else ", ".join(m.decode() for m in np.ravel(missing))


def _check_ready(sess, ready_op, init_op, init_fn, local_init_op):
    not_ready = _not_ready(sess, ready_op)
    if not_ready:
        raise RuntimeError("Init operations did not make model ready. Init op: %s, init fn: %s, local_init_op: "
                           "%s, error: Variables not initialized: %s" % (init_op, init_fn, local_init_op, not_ready))


class SessionManager(object):
    """Makes sessions whose model is ready: the chief initializes or restores it, the others wait for it."""

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None, graph=None,
                 recovery_wait_secs=0.5, local_init_feed_dict=None):
        self._local_init_op, self._ready_op = local_init_op, ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph or framework.get_default_graph()
        self._wait = recovery_wait_secs

    def _new(self, master, config):
        return session_lib.Session(master, graph=self._graph, config=config)

    def prepare_session(self, master, init_op=None, saver=None, checkpoint_dir=None, checkpoint_filename_with_path=None,
                        wait_for_checkpoint=False, max_wait_secs=7200, config=None, init_feed_dict=None,
                        init_fn=None):
        sess = self._new(master, config)
        path = checkpoint_filename_with_path or (latest_checkpoint(checkpoint_dir) if checkpoint_dir else None)
        _restore_or_initialize(sess, saver, path, init_op, init_feed_dict, init_fn)
        if self._local_init_op is not None:
            sess.run(self._local_init_op)
        _check_ready(sess, self._ready_op, init_op, init_fn, self._local_init_op)
        return sess

    def wait_for_session(self, master, config=None, max_wait_secs=float("inf")):
        deadline = time.time() + max_wait_secs
        while True:
            sess = self._new(master, config)
            if not _not_ready(sess, self._ready_for_local_init_op):
                if self._local_init_op is not None:
                    sess.run(self._local_init_op)
                if not _not_ready(sess, self._ready_op):
                    return sess
            sess.close()
            if time.time() + self._wait > deadline:
                raise errors.DeadlineExceededError(None, None, "Session was not ready after waiting %d secs." %
                                                   max_wait_secs)
            time.sleep(self._wait)


class ChiefSessionCreator(object):
    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None, checkpoint_filename_with_path=None):
        self._scaffold = scaffold or Scaffold()
        self._master, self._config = master, config
        self._dir, self._path = checkpoint_dir, checkpoint_filename_with_path

    def create_session(self):
        s = self._scaffold.finalize()
        return SessionManager(s.local_init_op, s.ready_op, s.ready_for_local_init_op).prepare_session(
            self._master, init_op=s.init_op, saver=s.saver, checkpoint_dir=self._dir,
            checkpoint_filename_with_path=self._path, config=self._config, init_feed_dict=s.init_feed_dict,
            init_fn=s.init_fn)


class WorkerSessionCreator(object):
    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        self._scaffold = scaffold or Scaffold()
        self._master, self._config, self._max_wait = master, config, max_wait_secs

    def create_session(self):
        s = self._scaffold.finalize()
        return SessionManager(s.local_init_op, s.ready_op, s.ready_for_local_init_op).wait_for_session(
            self._master, config=self._config, max_wait_secs=self._max_wait)


class _SupervisorCalls(object):
    """What a BaseSession calls (run, close, reset), sent to the supervisor: its step with recovery (`step`) or a
    run on its session of the moment (hooks' and queue runners')."""

    def __init__(self, sup, step):
        self._sup = sup
        self.run = sup.run if step else sup.raw_run

    def close(self):
        self._sup.end()

    def reset(self, containers):
        self._sup.reset(containers)


def _name(x):
    return x.name if hasattr(x, "name") else x


def _weak(obj, method):
    """obj.method through a weak reference: the supervisor's callbacks keep no MonitoredSession alive (the cycle
    through the C++ object would never be collected)."""
    ref = weakref.ref(obj)

    def call(*args):
        o = ref()
        return getattr(o, method)(*args) if o is not None else None
    return call


class MonitoredSession(object):
    """Runs steps with hooks over the C++ TrainingSupervisor (client/train/supervisor.hpp), which owns the session:
    the chief restores the latest checkpoint or initializes (its Scaffold's saver, init_op and init_fn), another
    worker waits until the chief's model is ready; a step that fails with UnavailableError or AbortedError (a lost
    or restarted peer) closes the session and is run again in a new one, made ready as at the start, at most
    `max_recoveries` times in the session's life, each after `recovery_backoff_secs`; queue runners and hooks'
    after_create_session run again in each new session. `should_stop()` once a hook asked or the input ended
    (OutOfRangeError). A session creator other than Chief/WorkerSessionCreator makes the one session, without
    recovery."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120, recoverable=True,
                 max_recoveries=5, recovery_backoff_secs=0.5):
        self._creator = session_creator or ChiefSessionCreator()
        self._hooks = list(hooks or [])
        self._grace = stop_grace_period_secs
        for h in self._hooks:
            h.begin()
        self._graph = framework.get_default_graph()
        self._sup = None
        self._coord = None
        self._threads = []
        self._stop = False
        self._closed = False
        if not isinstance(self._creator, (ChiefSessionCreator, WorkerSessionCreator)):
            self._sess = self._step_sess = self._creator.create_session()
            self._session_ready()
            return
        self._start(self._creator, max_recoveries if recoverable else 0, recovery_backoff_secs)

    def _start(self, creator, max_recoveries, backoff_secs):
        scaffold = creator._scaffold.finalize()
        self._scaffold, self._is_chief = scaffold, isinstance(creator, ChiefSessionCreator)
        config = creator._config
        gs = get_global_step(self._graph)
        # A worker waits for the chief's global variables (TensorFlow's ready_for_local_init_op), then runs the
        # local init op; the chief checks scaffold.ready_op after its own (_session_ready).
        self._sup = _actorflow.Supervisor(
            self._graph._scope, creator._master.decode() if isinstance(creator._master, bytes) else creator._master,
            list(getattr(config, "device_filters", None) or []), self._is_chief, init_op="",
            local_init_op=_name(scaffold.local_init_op) if scaffold.local_init_op is not None else "",
            ready_checks=[_name(scaffold.ready_for_local_init_op)] if scaffold.ready_for_local_init_op is not None
            else [], global_step=_name(gs._as_graph_element() if hasattr(gs, "_as_graph_element") else gs)
            if gs is not None else "",
            max_recoveries=max_recoveries, backoff_ms=int(backoff_secs * 1000),
            ready_timeout_ms=int(min(getattr(creator, "_max_wait", 7200), 1e9) * 1000),
            chief_prepare=_weak(self, "_chief_prepare") if self._is_chief else None,
            on_session_ready=_weak(self, "_session_ready"), on_session_closed=_weak(self, "_session_closed"),
            on_recovery=_weak(self, "_on_recovery"))
        target = creator._master
        self._sess = session_lib.BaseSession(target, self._graph, config, _calls=_SupervisorCalls(self._sup, False))
        self._step_sess = session_lib.BaseSession(target, self._graph, config,
                                                  _calls=_SupervisorCalls(self._sup, True))
        try:
            self._sup.start()
        except BaseException:
            self._closed = True
            self._sup.end()
            self._join_threads(raise_errors=False)
            raise

    # The supervisor's callbacks, on the thread running its call, the GIL taken back for them.
    def _chief_prepare(self):
        s, creator = self._scaffold, self._creator
        path = creator._path or (latest_checkpoint(creator._dir) if creator._dir else None)
        _restore_or_initialize(self._sess, s.saver, path, s.init_op, s.init_feed_dict, s.init_fn)

    def _session_ready(self):
        if self._sup is not None and self._is_chief:  # after the local init op, which the supervisor ran
            s = self._scaffold
            _check_ready(self._sess, s.ready_op, s.init_op, s.init_fn, s.local_init_op)
        self._coord = Coordinator(clean_stop_exception_types=(errors.OutOfRangeError,))
        self._threads = queue_runner.start_queue_runners(self._sess, self._coord)
        # A broadcast of the variables (all-reduce's) first: the other hooks then read the values it set.
        first = [h for h in self._hooks if getattr(h, "_after_create_session_first", False)]
        for h in first + [h for h in self._hooks if h not in first]:
            h.after_create_session(self._sess, self._coord)

    def _session_closed(self):
        # The session is closed: what its threads waited in has ended; they are joined.
        self._join_threads(raise_errors=False)

    def _on_recovery(self, code, message, n):
        log.warning("%s: %s: the session is made again (recovery %d)",
                    errors.exception_type_from_error_code(code).__name__, message, n)

    @property
    def graph(self):
        return self._graph

    @property
    def recoveries(self):
        """How many times the session was made again after a lost peer."""
        return self._sup.recoveries if self._sup is not None else 0

    def should_stop(self):
        return self._stop or self._closed or (self._coord is not None and self._coord.should_stop())

    _RECOVERABLE = (errors.AbortedError, errors.UnavailableError)

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._closed:
            raise RuntimeError("Run called on a MonitoredSession that is closed.")
        while True:
            try:
                return self._run_hooked(fetches, feed_dict, options)
            except self._RECOVERABLE as e:
                # A hook's own run failed (the step's failures the supervisor recovers from itself): a new
                # session, then the hooked step again, as TensorFlow's _RecoverableSession does.
                if self._sup is None:
                    raise
                self._sup.recover(e.error_code, e.message)

    def _run_hooked(self, fetches, feed_dict, options):
        ctx = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self._sess)
        extra, feeds = [], dict(feed_dict or {})
        for h in self._hooks:
            args = h.before_run(ctx)
            extra.append(args.fetches if args is not None else None)
            if args is not None and args.feed_dict:
                for k in args.feed_dict:
                    if k in feeds:
                        raise RuntimeError("Same tensor is fed by a SessionRunHook and user.")
                feeds.update(args.feed_dict)
        try:
            results = self._step_sess.run([fetches, [e for e in extra if e is not None]], feed_dict=feeds or None,
                                          options=options)
        except errors.OutOfRangeError:
            self._stop = True
            raise
        outputs, hook_results = results
        it = iter(hook_results)
        for h, e in zip(self._hooks, extra):
            h.after_run(ctx, SessionRunValues(next(it) if e is not None else None, options))
        self._stop = self._stop or ctx.stop_requested
        return outputs

    def run_step_fn(self, step_fn):
        class _StepContext(object):
            def __init__(ctx, sess):
                ctx.session = sess

            def run_with_hooks(ctx, *args, **kwargs):
                return self.run(*args, **kwargs)

            def request_stop(ctx):
                raise StopIteration("step_fn has requested the iterations to stop.")
        try:
            return step_fn(_StepContext(self._sess))
        except StopIteration:
            self._stop = True
            return None

    def _join_threads(self, raise_errors):
        coord, threads = self._coord, self._threads
        self._coord, self._threads = None, []
        if coord is None:
            return
        coord.request_stop()
        try:
            coord.join(threads, stop_grace_period_secs=self._grace, ignore_live_threads=True)
        except Exception:  # noqa: BLE001
            if raise_errors:
                raise

    def close(self, exception_type=None):
        """Ends the hooks (not when an exception is leaving: a diverged model is not saved), the input threads
        (an input thread's error is raised here, as TensorFlow's) and the session."""
        if self._closed:
            return
        self._closed = True
        try:
            if exception_type is None:
                for h in self._hooks:
                    h.end(self._sess)
        finally:
            try:
                if self._coord is not None:
                    # The session still open, the queue runners' closers cancel their queues (shared ones too,
                    # which peers read: briefly waited for); closing the session then ends what the other threads
                    # still wait in (an accumulator's take, a dequeue).
                    self._coord.request_stop()
                    deadline = time.time() + 2.0
                    for t in self._threads:
                        if t.name.startswith("QueueRunnerCloser"):
                            t.join(max(0.0, deadline - time.time()))
                coord, threads = self._coord, self._threads
                if self._sup is None:
                    self._sess.close()
                elif exception_type is None:
                    self._sup.finish()
                else:
                    self._sup.end()
            finally:
                # Joined here when the supervisor did not already (an exception leaving, another creator).
                self._coord, self._threads = coord, threads
                self._join_threads(raise_errors=exception_type is None)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        clean = exc_type in (errors.OutOfRangeError, StopIteration)
        self.close(None if clean else exc_type)
        return clean


class SingularMonitoredSession(MonitoredSession):
    def __init__(self, hooks=None, scaffold=None, master="", config=None, checkpoint_dir=None,
                 stop_grace_period_secs=120, checkpoint_filename_with_path=None):
        super(SingularMonitoredSession, self).__init__(
            ChiefSessionCreator(scaffold, master, config, checkpoint_dir, checkpoint_filename_with_path), hooks,
            stop_grace_period_secs, recoverable=False)

    def raw_session(self):
        return self._sess


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None, scaffold=None, hooks=None,  # noqa: N802
                             chief_only_hooks=None, save_checkpoint_secs=USE_DEFAULT, save_summaries_steps=USE_DEFAULT,
                             save_summaries_secs=USE_DEFAULT, config=None, stop_grace_period_secs=120,
                             log_step_count_steps=100, max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None):
    """TensorFlow's MonitoredTrainingSession: the chief restores or initializes and saves checkpoints and
    summaries into `checkpoint_dir`; the others wait for the chief's model."""
    scaffold = scaffold or Scaffold()
    all_hooks = list(hooks or [])
    if not is_chief:
        return MonitoredSession(WorkerSessionCreator(scaffold, master, config, max_wait_secs), all_hooks,
                                stop_grace_period_secs)
    if save_checkpoint_secs is USE_DEFAULT and save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_secs, save_checkpoint_steps = 600, None
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    all_hooks.extend(chief_only_hooks or [])
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(StepCounterHook(log_step_count_steps, output_dir=summary_dir))
        if save_summaries_steps or save_summaries_secs:
            all_hooks.append(SummarySaverHook(save_summaries_steps, save_summaries_secs, output_dir=summary_dir,
                                              scaffold=scaffold))
    if checkpoint_dir and (save_checkpoint_secs or save_checkpoint_steps):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_secs=save_checkpoint_secs,
                                             save_steps=save_checkpoint_steps, scaffold=scaffold))
    return MonitoredSession(ChiefSessionCreator(scaffold, master, config, checkpoint_dir), all_hooks,
                            stop_grace_period_secs)
