"""tf.train.QueueRunner and start_queue_runners: threads that run a queue's enqueue ops until the input ends
(OutOfRangeError: the queue is closed, so its readers drain it and then see OutOfRangeError too) or the
coordinator stops them (the queue is closed with cancel_pending_enqueues, so no enqueue waits forever)."""

import threading

from actorflow import errors
from actorflow import framework
from actorflow.framework import GraphKeys

__all__ = ["QueueRunner", "add_queue_runner", "start_queue_runners"]


class QueueRunner(object):
    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None, import_scope=None):
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops or [])
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        self._closed_types = tuple(queue_closed_exception_types or (errors.OutOfRangeError,))
        self._lock = threading.Lock()
        self._runs = {}
        self._exceptions = []

    @property
    def queue(self):
        return self._queue

    @property
    def enqueue_ops(self):
        return self._enqueue_ops

    @property
    def close_op(self):
        return self._close_op

    @property
    def cancel_op(self):
        return self._cancel_op

    @property
    def exceptions_raised(self):
        return self._exceptions

    @property
    def name(self):
        return self._queue.name

    def _run(self, sess, enqueue_op, coord):
        decremented = False
        try:
            while not (coord is not None and coord.should_stop()):
                try:
                    sess.run(enqueue_op)
                except self._closed_types:
                    # The input ended: the last of the enqueue threads closes the queue.
                    with self._lock:
                        self._runs[sess] -= 1
                        decremented = True
                        if self._runs[sess] == 0:
                            try:
                                sess.run(self._close_op)
                            except Exception:  # noqa: BLE001 (a closed session: nothing to close)
                                pass
                    return
        except Exception as e:  # noqa: BLE001
            if coord is not None:
                coord.request_stop(e)
            else:
                with self._lock:
                    self._exceptions.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs[sess] -= 1

    def _close_on_stop(self, sess, coord):
        coord.wait_for_stop()
        try:
            sess.run(self._cancel_op)
        except Exception:  # noqa: BLE001 (the session may be closed already)
            pass

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        with self._lock:
            if self._runs.get(sess, 0) > 0:
                return []
            self._runs[sess] = len(self._enqueue_ops)
            self._exceptions = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord), daemon=True,
                                    name="QueueRunnerThread-%s-%s" % (self.name, op.name))
                   for op in self._enqueue_ops]
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop, args=(sess, coord), daemon=True,
                                            name="QueueRunnerCloser-%s" % self.name))
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if start:
                t.start()
        return threads


def add_queue_runner(qr, collection=GraphKeys.QUEUE_RUNNERS):
    framework.add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True, collection=GraphKeys.QUEUE_RUNNERS):
    from actorflow.session import get_default_session
    sess = sess or get_default_session()
    if sess is None:
        raise ValueError("Cannot start queue runners: No default session is registered. Use `with "
                         "sess.as_default()` or pass an explicit session to tf.start_queue_runners(sess=sess)")
    threads = []
    for qr in sess.graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
