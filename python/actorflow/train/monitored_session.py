"""Monitored training (tf.train.MonitoredTrainingSession): a session that initializes the model or restores its
latest checkpoint (the chief) or waits until the chief has (the others), runs hooks around each step
(stop at a step, save checkpoints and summaries, log tensors, stop on NaN), and recovers from a lost peer:
an AbortedError or UnavailableError in a step closes the session and makes a new one, restored from the latest
checkpoint, as TensorFlow's _RecoverableSession does."""

import logging
import os
import time

import numpy as np

from actorflow import control_flow_ops
from actorflow import errors
from actorflow import framework
from actorflow import session as session_lib
from actorflow import summary as summary_lib
from actorflow import variables
from actorflow.framework import GraphKeys
from actorflow.train import queue_runner
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
        self.init_op, self.init_feed_dict, self.init_fn = init_op, init_feed_dict, init_fn
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


class SessionRunArgs(object):
    def __init__(self, fetches, feed_dict=None, options=None):
        self.fetches, self.feed_dict, self.options = fetches, feed_dict, options


class SessionRunValues(object):
    def __init__(self, results, options=None, run_metadata=None):
        self.results, self.options, self.run_metadata = results, options, run_metadata


class SessionRunContext(object):
    def __init__(self, original_args, session):
        self.original_args, self.session = original_args, session
        self._stop_requested = False

    def request_stop(self):
        self._stop_requested = True

    @property
    def stop_requested(self):
        return self._stop_requested


class SessionRunHook(object):
    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


class StopAtStepHook(SessionRunHook):
    """Stops once the global step reaches `last_step` (or `num_steps` past where it began)."""

    def __init__(self, num_steps=None, last_step=None):
        if (num_steps is None) == (last_step is None):
            raise ValueError("One of num_steps or last_step must be specified.")
        self._num_steps, self._last_step = num_steps, last_step

    def begin(self):
        self._global_step = get_global_step()
        if self._global_step is None:
            raise RuntimeError("Global step should be created to use StopAtStepHook.")

    def after_create_session(self, session, coord):
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step)) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        if int(run_values.results) + 1 >= self._last_step:
            step = int(run_context.session.run(self._global_step))
            if step >= self._last_step:
                run_context.request_stop()


class _Timer(object):
    def __init__(self, every_secs=None, every_steps=None):
        self.secs, self.steps = every_secs, every_steps
        self.last_time, self.last_step = None, None

    def should_trigger(self, step):
        if self.last_step is None:
            return True
        if self.steps is not None and step >= self.last_step + self.steps:
            return True
        if self.secs is not None and time.time() >= self.last_time + self.secs:
            return True
        return False

    def update(self, step):
        self.last_time, self.last_step = time.time(), step


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint every `save_secs` or `save_steps`, and at the end."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None, checkpoint_basename="model.ckpt",
                 scaffold=None, listeners=None):
        if (save_secs is None) == (save_steps is None):
            raise ValueError("exactly one of save_secs and save_steps must be given")
        self._dir, self._saver, self._scaffold = checkpoint_dir, saver, scaffold
        self._path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._timer = _Timer(save_secs, save_steps)

    def begin(self):
        self._global_step = get_global_step()
        if self._global_step is None:
            raise RuntimeError("Global step should be created to use CheckpointSaverHook.")

    def _get_saver(self):
        return self._saver or (self._scaffold.saver if self._scaffold is not None else None) or \
            (framework.get_collection(GraphKeys.SAVERS) or [None])[0]

    def after_create_session(self, session, coord):
        step = int(session.run(self._global_step))
        self._save(session, step)
        self._timer.update(step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        step = int(run_values.results) + 1
        if self._timer.should_trigger(step):
            step = int(run_context.session.run(self._global_step))
            self._timer.update(step)
            self._save(run_context.session, step)

    def end(self, session):
        step = int(session.run(self._global_step))
        if step != self._timer.last_step:
            self._save(session, step)

    def _save(self, session, step):
        saver = self._get_saver()
        if saver is not None:
            os.makedirs(self._dir, exist_ok=True)
            saver.save(session, self._path, global_step=step)


class SummarySaverHook(SessionRunHook):
    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None, scaffold=None,
                 summary_op=None):
        self._timer = _Timer(save_secs, save_steps)
        self._output_dir, self._writer, self._scaffold, self._summary_op = output_dir, summary_writer, scaffold, \
            summary_op

    def begin(self):
        if self._writer is None and self._output_dir:
            self._writer = summary_lib.FileWriterCache.get(self._output_dir)
        self._global_step = get_global_step()
        self._next_step = None

    def _op(self):
        return self._summary_op if self._summary_op is not None else (
            self._scaffold.summary_op if self._scaffold is not None else summary_lib.merge_all())

    def before_run(self, run_context):
        fetches = {"global_step": self._global_step}
        op = self._op()
        self._request = op is not None and (self._next_step is None or self._timer.should_trigger(self._next_step))
        if self._request:
            fetches["summary"] = op
        return SessionRunArgs(fetches)

    def after_run(self, run_context, run_values):
        step = int(run_values.results["global_step"])
        if self._request and self._writer is not None:
            self._timer.update(step)
            self._writer.add_summary(run_values.results["summary"], step)
        self._next_step = step + 1

    def end(self, session=None):
        if self._writer is not None:
            self._writer.flush()


class LoggingTensorHook(SessionRunHook):
    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False, formatter=None):
        self._tensors = tensors if isinstance(tensors, dict) else {
            (t if isinstance(t, str) else t.name): t for t in tensors}
        self._timer = _Timer(every_n_secs, every_n_iter)
        self._iter, self._formatter, self._at_end = 0, formatter, at_end

    def before_run(self, run_context):
        self._log = self._timer.should_trigger(self._iter)
        return SessionRunArgs(self._tensors) if self._log else None

    def after_run(self, run_context, run_values):
        if self._log:
            self._timer.update(self._iter)
            values = run_values.results
            log.info(self._formatter(values) if self._formatter else ", ".join(
                "%s = %s" % (k, values[k]) for k in sorted(values)))
        self._iter += 1


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self):
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss, self._fail = loss_tensor, fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            if self._fail:
                raise NanLossDuringTrainingError
            log.warning("Model diverged with loss = NaN.")
            run_context.request_stop()


class StepCounterHook(SessionRunHook):
    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None, summary_writer=None):
        self._timer = _Timer(every_n_secs, every_n_steps if every_n_secs is None else None)
        self._writer, self._output_dir = summary_writer, output_dir

    def begin(self):
        self._global_step = get_global_step()
        if self._writer is None and self._output_dir:
            self._writer = summary_lib.FileWriterCache.get(self._output_dir)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        step = int(run_values.results)
        if self._timer.should_trigger(step):
            if self._timer.last_step is not None and step > self._timer.last_step:
                rate = (step - self._timer.last_step) / max(1e-9, time.time() - self._timer.last_time)
                if self._writer is not None:
                    self._writer._w.add_scalar("global_step/sec", rate, step)
                log.info("global_step/sec: %g", rate)
            self._timer.update(step)


class FinalOpsHook(SessionRunHook):
    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._ops, self._feed, self.final_ops_values = final_ops, final_ops_feed_dict, None

    def end(self, session):
        if self._ops is not None:
            self.final_ops_values = session.run(self._ops, feed_dict=self._feed)


class FeedFnHook(SessionRunHook):
    def __init__(self, feed_fn):
        self._feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self._feed_fn())


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

    def _not_ready(self, sess, op):
        if op is None:
            return None
        missing = sess.run(op)
        return None if np.size(missing) == 0 else ", ".join(m.decode() for m in np.ravel(missing))

    def prepare_session(self, master, init_op=None, saver=None, checkpoint_dir=None, checkpoint_filename_with_path=None,
                        wait_for_checkpoint=False, max_wait_secs=7200, config=None, init_feed_dict=None,
                        init_fn=None):
        sess = self._new(master, config)
        path = checkpoint_filename_with_path or (latest_checkpoint(checkpoint_dir) if checkpoint_dir else None)
        if saver is not None and path:
            saver.restore(sess, path)
        else:
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn is not None:
                init_fn(sess)
        if self._local_init_op is not None:
            sess.run(self._local_init_op)
        not_ready = self._not_ready(sess, self._ready_op)
        if not_ready:
            raise RuntimeError("Init operations did not make model ready. Init op: %s, init fn: %s, local_init_op: "
                               "%s, error: Variables not initialized: %s" % (init_op, init_fn, self._local_init_op,
                                                                             not_ready))
        return sess

    def wait_for_session(self, master, config=None, max_wait_secs=float("inf")):
        deadline = time.time() + max_wait_secs
        while True:
            sess = self._new(master, config)
            if not self._not_ready(sess, self._ready_for_local_init_op):
                if self._local_init_op is not None:
                    sess.run(self._local_init_op)
                if not self._not_ready(sess, self._ready_op):
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


class MonitoredSession(object):
    """Runs steps with hooks; recreates its session after AbortedError/UnavailableError (restoring the latest
    checkpoint); `should_stop()` once a hook asked or the input ended (OutOfRangeError)."""

    _RECOVERABLE = (errors.AbortedError, errors.UnavailableError)

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120, recoverable=True,
                 max_recoveries=5, recovery_backoff_secs=0.5):
        self._creator = session_creator or ChiefSessionCreator()
        self._hooks = list(hooks or [])
        self._grace = stop_grace_period_secs
        self._recoverable = recoverable
        # As the C++ TrainingSupervisor (client/train/supervisor.hpp): at most this many recoveries in the
        # session's life, each after a pause; then the error is raised, naming them.
        self._max_recoveries, self._backoff, self._recoveries = max_recoveries, recovery_backoff_secs, 0
        for h in self._hooks:
            h.begin()
        self._graph = framework.get_default_graph()
        self._sess = None
        self._coord = None
        self._threads = []
        self._stop = False
        self._closed = False
        self._create()

    def _create(self):
        # A peer still down while the session is made again: more tries, each a recovery (TensorFlow's
        # _RecoverableSession loops likewise).
        while True:
            try:
                self._sess = self._creator.create_session()
                break
            except self._RECOVERABLE as e:
                if not self._recoverable or self._recoveries >= self._max_recoveries:
                    raise
                self._recoveries += 1
                log.warning("%s: making the session again (recovery %d of at most %d)", e, self._recoveries,
                            self._max_recoveries)
                time.sleep(self._backoff)
        self._coord = Coordinator(clean_stop_exception_types=(errors.OutOfRangeError,))
        self._threads = queue_runner.start_queue_runners(self._sess, self._coord)
        for h in self._hooks:
            h.after_create_session(self._sess, self._coord)

    @property
    def graph(self):
        return self._graph

    def should_stop(self):
        return self._stop or self._closed or (self._coord is not None and self._coord.should_stop())

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._sess is None:
            raise RuntimeError("Run called on a MonitoredSession that is closed or could not be made again.")
        while True:
            try:
                return self._run_once(fetches, feed_dict, options)
            except self._RECOVERABLE as e:
                if not self._recoverable:
                    raise
                if self._recoveries >= self._max_recoveries:
                    raise type(e)(e.node_def, e.op, "%s (after %d recoveries of the training session)" %
                                  (e.message, self._recoveries))
                self._recoveries += 1
                log.warning("%s: the session is created again (recovery %d of at most %d)", e, self._recoveries,
                            self._max_recoveries)
                self._close_internal()
                time.sleep(self._backoff)
                self._create()

    def _run_once(self, fetches, feed_dict, options):
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
            results = self._sess.run([fetches, [e for e in extra if e is not None]], feed_dict=feeds or None,
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
                self._stop = True
        return step_fn(_StepContext(self._sess))

    def _close_internal(self, raise_input_errors=False):
        """Stops the input threads and closes the session; an input thread's error is raised again when asked
        (at close: TensorFlow's), not when the session is only being made anew."""
        try:
            if self._coord is not None:
                self._coord.request_stop()
                # The session still open, the queue runners' closers cancel their queues (shared ones too,
                # which peers read: briefly waited for); then the session closes, which ends what the other
                # threads still wait in (an accumulator's take, a dequeue); then they are joined.
                deadline = time.time() + 2.0
                for t in self._threads:
                    if t.name.startswith("QueueRunnerCloser"):
                        t.join(max(0.0, deadline - time.time()))
            if self._sess is not None:
                self._sess.close()
            if self._coord is not None:
                try:
                    self._coord.join(self._threads, stop_grace_period_secs=self._grace, ignore_live_threads=True)
                except Exception:  # noqa: BLE001
                    if raise_input_errors:
                        raise
        finally:
            self._sess = None

    def close(self, exception_type=None):
        """Ends the hooks (not when an exception is leaving: a diverged model is not saved) and the session."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._sess is not None and exception_type is None:
                for h in self._hooks:
                    h.end(self._sess)
        finally:
            self._close_internal(raise_input_errors=exception_type is None)

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
