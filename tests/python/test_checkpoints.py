"""Savers (TensorFlow's checkpoint files and `checkpoint` state, max_to_keep, restore into a new graph), summaries
written to events files and read back, and monitored training: hooks, checkpoints, restore on restart
(recovery from lost peers: test_monitored_session.py)."""

import os

import numpy as np
import pytest

import actorflow as tf
from conftest import linear_regression as build_model


def test_saver_round_trip_and_max_to_keep(tmp_path):
    tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    step = tf.Variable(0, dtype=tf.int64, name="step")
    inc = step.assign_add(1)
    saver = tf.train.Saver(max_to_keep=2)
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        paths = []
        for i in range(3):
            sess.run(inc)
            paths.append(saver.save(sess, prefix, global_step=sess.run(step) - 1))  # a fetched scalar
    assert paths[-1] == prefix + "-2"
    assert os.path.exists(prefix + "-2.index") and os.path.exists(prefix + "-2.data-00000-of-00001")
    assert not os.path.exists(prefix + "-0.index")  # max_to_keep=2
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix + "-2"
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.all_model_checkpoint_paths == [prefix + "-1", prefix + "-2"]
    text = (tmp_path / "checkpoint").read_text()
    assert 'model_checkpoint_path: "model.ckpt-2"' in text
    # A new graph and session restore the values.
    tf.reset_default_graph()
    w2 = tf.Variable(tf.zeros([2, 3]), name="w")
    step2 = tf.Variable(0, dtype=tf.int64, name="step")
    saver2 = tf.train.Saver()
    with tf.Session() as sess:
        saver2.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
        np.testing.assert_array_equal(sess.run(w2), np.arange(6).reshape(2, 3))
        assert sess.run(step2) == 3
        with pytest.raises(ValueError, match="not a valid checkpoint"):
            saver2.restore(sess, str(tmp_path / "nothing"))
    # A variable whose shape differs is refused, naming it.
    tf.reset_default_graph()
    tf.Variable(tf.zeros([3, 3]), name="w")
    tf.Variable(0, dtype=tf.int64, name="step")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="w"):
            tf.train.Saver().restore(sess, prefix + "-2")


def test_summaries_reach_an_events_file(tmp_path):
    x = tf.placeholder(tf.float32, [None])
    tf.summary.scalar("loss", tf.reduce_mean(x))
    tf.summary.histogram("values", x)
    merged = tf.summary.merge_all()
    writer = tf.summary.FileWriter(str(tmp_path), tf.get_default_graph())
    with tf.Session() as sess:
        for step in range(3):
            writer.add_summary(sess.run(merged, {x: np.arange(4, dtype=np.float32) + step}), step)
    writer.close()
    files = [f for f in os.listdir(str(tmp_path)) if f.startswith("events.out.tfevents.")]
    assert len(files) == 1
    events = list(tf.train.summary_iterator(str(tmp_path / files[0])))
    assert events[0].file_version.startswith("brain.Event")
    assert any(e.graph_def for e in events)
    scalars = [(e.step, v.simple_value) for e in events for v in e.summary.value if v.tag == "loss"]
    assert scalars == [(0, 1.5), (1, 2.5), (2, 3.5)]
    histos = [v.histo for e in events for v in e.summary.value if v.tag == "values"]
    assert len(histos) == 3 and histos[0].num == 4 and histos[0].max == 3.0


def test_monitored_training_session_trains_saves_and_resumes(tmp_path):
    loss, train, gs = build_model()
    seen = []

    class Count(tf.train.SessionRunHook):
        def after_run(self, ctx, values):
            seen.append(values.results)

        def before_run(self, ctx):
            return tf.train.SessionRunArgs(loss)
    hooks = [tf.train.StopAtStepHook(last_step=50), Count(), tf.train.NanTensorHook(loss)]
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=hooks,
                                           save_checkpoint_steps=20) as sess:
        while not sess.should_stop():
            sess.run(train)
    assert len(seen) == 50 and seen[-1] < 1e-3 < seen[0]
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-50")
    assert any(f.startswith("events.out.tfevents.") for f in os.listdir(str(tmp_path)))
    # A new program resumes at step 50 and stops at 60.
    tf.reset_default_graph()
    loss, train, gs = build_model()
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                           hooks=[tf.train.StopAtStepHook(last_step=60)]) as sess:
        assert sess.run(gs) == 50
        n = 0
        while not sess.should_stop():
            sess.run(train)
            n += 1
    assert n == 10
