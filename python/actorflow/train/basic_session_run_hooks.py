"""Session-run hooks (tf.train.SessionRunHook and TensorFlow's basic hooks): code a MonitoredSession runs when it
is made ready, around each step (extra fetches and feeds for the step, a stop request after it) and at the end:
stop at a step, save checkpoints and summaries, log tensors, count steps, stop on NaN, run final ops, feed."""

import logging
import os
import time

import numpy as np

from actorflow import framework
from actorflow import summary as summary_lib
from actorflow.framework import GraphKeys
from actorflow.train.optimizer import get_global_step

__all__ = ["SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues", "StopAtStepHook",
           "CheckpointSaverHook", "SummarySaverHook", "LoggingTensorHook", "NanTensorHook",
           "NanLossDuringTrainingError", "StepCounterHook", "FinalOpsHook", "FeedFnHook"]

log = logging.getLogger("actorflow")


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
