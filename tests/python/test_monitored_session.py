"""tf.train.MonitoredSession over the C++ TrainingSupervisor: a lost peer (a parameter server killed by its PID
and restarted, or one that stays dead) is recovered from in a new session restored from the latest checkpoint,
at most max_recoveries times; queue runners and hooks start again in each new session; a hook's exception leaves
the session as itself; a worker without a chief gives up at its deadline."""

import gc
import os
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import actorflow as tf
from conftest import build_dir, free_ports, linear_regression as build_model


class CountSessions(tf.train.SessionRunHook):
    """Notes the global step each new session starts at; raises `fail` (once) from the first one's start."""

    def __init__(self, gs, fail=None):
        self.gs, self.fail, self.started = gs, fail, []

    def after_create_session(self, session, coord):
        self.started.append(int(session.run(self.gs)))
        if self.fail is not None:
            e, self.fail = self.fail, None
            raise e


def no_files(**kwargs):
    return dict(save_summaries_steps=None, save_summaries_secs=None, log_step_count_steps=None, **kwargs)


def test_a_recoverable_error_while_a_session_starts_makes_a_new_one_with_its_queue_runners():
    loss, train, gs = build_model()
    queue = tf.FIFOQueue(8, tf.float32, shapes=[[]])
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [queue.enqueue(tf.constant(1.0))]))
    step = tf.group(train, queue.dequeue())
    hook = CountSessions(gs, fail=tf.errors.UnavailableError(None, None, "a peer was lost"))
    with tf.train.MonitoredTrainingSession(hooks=[hook, tf.train.StopAtStepHook(last_step=20)], **no_files()) as sess:
        assert sess.recoveries == 1 and hook.started == [0, 0]
        threads = list(sess._threads)  # the second session's queue runner
        assert threads and all(t.is_alive() for t in threads)
        while not sess.should_stop():
            sess.run(step)  # dequeues what the second session's queue runner enqueues
        assert sess.run(gs) == 20 and sess.run(loss) < 1e-2
    assert not any(t.is_alive() for t in threads)


def test_a_hooks_exception_leaves_as_itself():
    class Oops(Exception):
        pass
    for error, cls in ((Oops("not a TensorFlow error"), Oops),
                       (tf.errors.InvalidArgumentError(None, None, "a bad hook"), tf.errors.InvalidArgumentError)):
        with tf.Graph().as_default():  # a monitored session finalizes its graph
            _, _, gs = build_model()
            with pytest.raises(cls, match=str(error)):
                tf.train.MonitoredTrainingSession(hooks=[CountSessions(gs, fail=error)], **no_files())
    # In a step: a hook's after_run error is raised from run(); the session is closed without the hooks' end.

    class Diverge(tf.train.SessionRunHook):
        def after_run(self, ctx, values):
            raise tf.train.NanLossDuringTrainingError

        def end(self, session):
            raise AssertionError("end() after an error")
    _, _, gs = build_model()
    with pytest.raises(tf.train.NanLossDuringTrainingError):
        with tf.train.MonitoredTrainingSession(hooks=[Diverge()], **no_files()) as sess:
            sess.run(gs)


class PsTask(object):
    """`actorflow server` as the cluster's ps task: a process of its own, started and ended by PID."""

    def __init__(self, cluster, tmp_path):
        self.cli = os.path.join(build_dir(), "actorflow")
        if not os.path.exists(self.cli):
            pytest.skip("no actorflow CLI in the build")
        self.cluster, self.port_file, self.proc = cluster, str(tmp_path / "ps.port"), None

    def start(self):
        if os.path.exists(self.port_file):
            os.remove(self.port_file)
        self.proc = subprocess.Popen([self.cli, "server", "--cluster", self.cluster, "--job", "ps", "--task", "0",
                                      "--port-file", self.port_file, "--threads", "1"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while not os.path.exists(self.port_file):
            assert self.proc.poll() is None, "the ps task exited with %s" % self.proc.returncode
            assert time.time() < deadline, "the ps task did not serve within 60 s"
            time.sleep(0.02)

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


@pytest.fixture
def ps_cluster(tmp_path):
    ps_port, worker_port = free_ports(2)
    cluster = '{"ps": ["127.0.0.1:%d"], "worker": ["127.0.0.1:%d"]}' % (ps_port, worker_port)
    ps = PsTask(cluster, tmp_path)
    ps.start()
    spec = tf.train.ClusterSpec({"ps": ["127.0.0.1:%d" % ps_port], "worker": ["127.0.0.1:%d" % worker_port]})
    worker = tf.train.Server(spec, "worker", 0)
    try:
        yield spec, ps, worker
    finally:
        ps.kill()
        worker.stop()


def test_a_ps_task_killed_and_restarted_is_recovered_from_the_latest_checkpoint(ps_cluster, tmp_path):
    spec, ps, worker = ps_cluster
    with tf.device(tf.train.replica_device_setter(cluster=spec, worker_device="/job:worker/task:0")):
        loss, train, gs = build_model()
    hook = CountSessions(gs)
    ckpt = str(tmp_path / "ckpt")
    with tf.train.MonitoredTrainingSession(master=worker.target, checkpoint_dir=ckpt, hooks=[hook],
                                           **no_files(save_checkpoint_steps=5)) as sess:
        for _ in range(12):
            sess.run(train)  # checkpoints at steps 0, 5 and 10
        assert sess.run(gs) == 12 and sess.recoveries == 0
        ps.kill()
        ps.start()  # the ps task comes back empty
        sess.run(train)
        assert sess.recoveries >= 1
        assert hook.started[0] == 0 and hook.started[-1] == 10  # restored from model.ckpt-10, not from zero
        assert sess.run(gs) == 11
        assert sess.run(loss) < 1e-2  # the trained model (a fresh one: about 4)
    assert tf.train.latest_checkpoint(ckpt).endswith("model.ckpt-11")


def test_a_ps_task_that_stays_dead_ends_training_after_max_recoveries(ps_cluster):
    spec, ps, worker = ps_cluster
    with tf.device(tf.train.replica_device_setter(cluster=spec, worker_device="/job:worker/task:0")):
        _, train, gs = build_model()
    creator = tf.train.ChiefSessionCreator(master=worker.target)
    with tf.train.MonitoredSession(creator, max_recoveries=2, recovery_backoff_secs=0.05) as sess:
        sess.run(train)
        ps.kill()
        with pytest.raises(tf.errors.UnavailableError, match="giving up after 2 recoveries") as e:
            sess.run(train)
        assert "/job:ps" in str(e.value)


def test_a_worker_without_a_chief_gives_up_at_its_deadline(ps_cluster):
    spec, ps, worker = ps_cluster
    with tf.device(tf.train.replica_device_setter(cluster=spec, worker_device="/job:worker/task:0")):
        build_model()
    start = time.time()
    with pytest.raises(tf.errors.DeadlineExceededError, match="not ready"):
        tf.train.MonitoredTrainingSession(master=worker.target, is_chief=False, max_wait_secs=1)
    assert time.time() - start < 30


def test_a_hooks_own_run_that_loses_a_peer_is_recovered_and_the_hooked_step_run_again():
    loss, train, gs = build_model()

    class LosePeerOnce(CountSessions):
        before = 0

        def before_run(self, ctx):
            self.before += 1

        def after_run(self, ctx, values):
            if self.before == 3:  # the third step's hook: as a checkpoint write to a lost ps would
                raise tf.errors.UnavailableError(None, None, "lost the ps while saving")
    hook = LosePeerOnce(gs)
    with tf.train.MonitoredTrainingSession(hooks=[hook], **no_files()) as sess:
        for _ in range(5):
            sess.run(train)
        assert sess.recoveries == 1 and len(hook.started) == 2
        assert hook.before == 6  # the third step's hooks ran again with it, in the new session
        assert sess.run(gs) == 3  # in-process, no checkpoint: the new session initialized, then 3 steps


def test_closing_from_another_thread_ends_a_blocked_step():
    queue = tf.FIFOQueue(1, tf.float32, shapes=[[]])
    value = queue.dequeue()  # never fed
    sess = tf.train.MonitoredTrainingSession(**no_files())
    outcome = []

    def step():
        try:
            sess.run(value)
        except Exception as e:  # noqa: BLE001
            outcome.append(e)
    t = threading.Thread(target=step, daemon=True)
    t.start()
    deadline = time.time() + 30
    while tf._actorflow._steps_in_run() == 0 and t.is_alive():  # until the step is under way in C++
        assert time.time() < deadline, "the step did not start"
        time.sleep(0.01)
    sess.close()
    t.join(timeout=60)
    assert not t.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], tf.errors.CancelledError), outcome
    with pytest.raises(RuntimeError, match="closed"):
        sess.run(value)


def test_ctrl_c_ends_a_worker_waiting_for_its_chief(ps_cluster):
    spec, ps, worker = ps_cluster
    with tf.device(tf.train.replica_device_setter(cluster=spec, worker_device="/job:worker/task:0")):
        build_model()
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    start = time.time()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            tf.train.MonitoredTrainingSession(master=worker.target, is_chief=False, max_wait_secs=120)
    finally:
        timer.cancel()
    assert time.time() - start < 30


def test_sessions_closed_in_a_loop_give_their_variables_back():
    def rss_mib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2.0 ** 20
    big = np.ones([16, 1024, 1024], np.float32)  # 64 MiB per session's variable
    before = None
    for i in range(12):
        with tf.Graph().as_default():
            v = tf.Variable(tf.constant(big), name="big")
            total = tf.reduce_sum(v)
            if i % 2:
                with tf.Session() as sess:
                    sess.run(v.initializer)
                    assert sess.run(total) == big.size
            else:
                with tf.train.MonitoredTrainingSession(**no_files()) as sess:
                    assert sess.run(total) == big.size
        gc.collect()  # the graphs (their 64 MiB constants) are cycles of Python objects
        before = before or rss_mib()  # after the first: its allocator's pools are there
    # Kept, the other 11 variables would add 704 MiB.
    assert rss_mib() - before < 300


def test_session_creators_and_the_session_manager_used_directly(tmp_path):
    loss, train, gs = build_model()
    nothing = tf.no_op()  # (the scaffold finalizes the graph)
    scaffold = tf.train.Scaffold()
    sess = tf.train.ChiefSessionCreator(scaffold=scaffold).create_session()  # initialized, ready
    sess.run(train)
    assert sess.run(gs) == 1
    scaffold.saver.save(sess, str(tmp_path / "model.ckpt"), global_step=1)
    sess.close()
    restored = tf.train.ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=str(tmp_path)).create_session()
    assert restored.run(gs) == 1  # from the checkpoint
    restored.close()
    # An init op that leaves a variable uninitialized: the model is not ready, and the message names it.
    manager = tf.train.SessionManager(ready_op=scaffold.ready_op)
    with pytest.raises(RuntimeError, match="Variables not initialized: .*global_step"):
        manager.prepare_session("", init_op=nothing)


def test_the_global_step_is_read_as_int32_or_int64_and_any_other_dtype_is_refused():
    with tf.Graph().as_default():
        gs = tf.Variable(7, dtype=tf.int32, name="global_step")
        tf.add_to_collection(tf.GraphKeys.GLOBAL_STEP, gs)
        with tf.train.MonitoredTrainingSession(**no_files()) as sess:
            assert sess._sup.global_step == 7  # read by the supervisor when the session was made ready
    with tf.Graph().as_default():
        gs = tf.Variable(7.0, name="global_step")
        tf.add_to_collection(tf.GraphKeys.GLOBAL_STEP, gs)
        with pytest.raises(tf.errors.InvalidArgumentError, match="global_step.*not an int32 or int64 scalar"):
            tf.train.MonitoredTrainingSession(**no_files())
