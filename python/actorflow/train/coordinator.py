"""tf.train.Coordinator: threads ask should_stop(), one asks request_stop() (with the exception that ended it),
join() waits for all of them and raises that exception again."""

import contextlib
import sys
import threading
import time

from actorflow import errors

__all__ = ["Coordinator", "LooperThread"]


class Coordinator(object):
    def __init__(self, clean_stop_exception_types=None):
        self._clean = tuple(clean_stop_exception_types or (errors.OutOfRangeError,))
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info = None
        self._registered = set()
        self._joined = False

    def request_stop(self, ex=None):
        """Asks the threads to stop; `ex` is raised by join() when it is the first reason (an error a thread
        meets once stopping was asked, such as a cancelled enqueue, is not)."""
        with self._lock:
            if ex is not None and self._exc_info is None and not self._stop_event.is_set():
                if isinstance(ex, tuple):
                    info = ex
                else:
                    info = sys.exc_info()
                    if info[1] is not ex:
                        info = (type(ex), ex, getattr(ex, "__traceback__", None))
                if not isinstance(info[1], self._clean):
                    self._exc_info = info
            self._stop_event.set()

    def clear_stop(self):
        with self._lock:
            self._joined = False
            self._exc_info = None
            self._stop_event.clear()

    def should_stop(self):
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        try:
            yield
        except Exception:  # noqa: BLE001 (every exception stops the threads)
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout=None):
        return self._stop_event.wait(timeout)

    def register_thread(self, thread):
        with self._lock:
            self._registered.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        threads = set(threads or []) | self._registered
        # Wait for a stop request (or for every thread to end), then for the threads within the grace period.
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(0.05):
            pass
        deadline = time.time() + stop_grace_period_secs
        for t in threads:
            t.join(max(0.0, deadline - time.time()))
        stragglers = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered = set()
            if self._exc_info:
                exc = self._exc_info[1]
                raise exc.with_traceback(self._exc_info[2])
        if stragglers and not ignore_live_threads:
            raise RuntimeError("Coordinator stopped with threads still running: %s" % " ".join(stragglers))

    @property
    def joined(self):
        return self._joined

    def raise_requested_exception(self):
        with self._lock:
            if self._exc_info:
                raise self._exc_info[1].with_traceback(self._exc_info[2])


class LooperThread(threading.Thread):
    """A thread that calls `target` every `timer_interval_secs` until the coordinator stops."""

    def __init__(self, coord, timer_interval_secs, target=None, args=None, kwargs=None):
        super(LooperThread, self).__init__(daemon=True)
        self._coord, self._interval = coord, timer_interval_secs
        self._target_fn, self._args, self._kwargs = target, args or (), kwargs or {}
        coord.register_thread(self)

    def run(self):
        with self._coord.stop_on_exception():
            while not self._coord.should_stop():
                self._target_fn(*self._args, **self._kwargs)
                if self._interval is not None and self._coord.wait_for_stop(self._interval):
                    break

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None):
        t = LooperThread(coord, timer_interval_secs, target, args, kwargs)
        t.start()
        return t
