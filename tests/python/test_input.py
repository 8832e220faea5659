"""Queue-based input pipelines as TensorFlow 1.x writes them: queues, readers over files, input producers for
some epochs, batching and shuffling by QueueRunners on Python threads, the Coordinator stopping them, and
OutOfRangeError at the end of the input."""

import threading

import numpy as np
import pytest

import actorflow as tf


def test_queue_ops():
    q = tf.FIFOQueue(10, [tf.int32, tf.float32], shapes=[[], [2]])
    enq = q.enqueue_many([[1, 2, 3], [[1, 1], [2, 2], [3, 3]]])
    a, b = q.dequeue()
    many = q.dequeue_many(2)
    with tf.Session() as sess:
        sess.run(enq)
        assert sess.run(q.size()) == 3
        assert sess.run(a) == 1
        got = sess.run(many)
        np.testing.assert_array_equal(got[0], [2, 3])
        np.testing.assert_array_equal(got[1], [[2, 2], [3, 3]])
        sess.run(q.close())
        assert sess.run(q.is_closed())
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(a)
        with pytest.raises(tf.errors.CancelledError):
            sess.run(q.enqueue([4, [4.0, 4.0]]))
    assert many[0].shape.as_list() == [2] and b.shape.as_list() == [2]


def test_sessions_have_their_own_queues_and_variables():
    q = tf.FIFOQueue(5, [tf.int32], shapes=[[]])
    v = tf.Variable(1, name="v")
    s1, s2 = tf.Session(), tf.Session()
    s1.run(q.enqueue([7]))
    s1.run(v.initializer)
    assert s2.run(q.size()) == 0
    with pytest.raises(tf.errors.FailedPreconditionError):
        s2.run(v)
    s1.close()
    s2.close()


def write_files(tmp_path, n_files, lines_per_file):
    names = []
    for f in range(n_files):
        p = tmp_path / ("part-%d.csv" % f)
        p.write_text("".join("%d,%d\n" % (f, i) for i in range(lines_per_file)))
        names.append(str(p))
    return names


def test_reader_pipeline_with_queue_runners_and_epochs(tmp_path):
    files = write_files(tmp_path, 3, 5)
    filename_queue = tf.train.string_input_producer(files, num_epochs=2, shuffle=False)
    reader = tf.TextLineReader()
    key, value = reader.read(filename_queue)
    f, i = tf.decode_csv(value, record_defaults=[[0], [0]]) if hasattr(tf, "decode_csv") else \
        tf.gen_ops.decode_csv(value, [tf.constant([0]), tf.constant([0])])
    batch_f, batch_i = tf.train.batch([f, i], batch_size=4, allow_smaller_final_batch=True)
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        assert threads
        seen = []
        try:
            while not coord.should_stop():
                bf, bi = sess.run([batch_f, batch_i])
                seen.extend(zip(bf.tolist(), bi.tolist()))
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
        coord.join(threads)
    # Two epochs of 3 files x 5 lines, every line twice, in file order within each epoch.
    assert len(seen) == 30
    assert sorted(seen) == sorted([(fi, li) for fi in range(3) for li in range(5)] * 2)
    assert seen[:5] == [(0, li) for li in range(5)]


def test_shuffle_batch_and_coordinator_stop():
    data = np.arange(100, dtype=np.int32)
    x = tf.train.slice_input_producer([tf.constant(data)], shuffle=False)[0]
    batch = tf.train.shuffle_batch([x], batch_size=10, capacity=50, min_after_dequeue=20, num_threads=2, seed=3)
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        got = np.concatenate([sess.run(batch) for _ in range(5)])
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=30)
    assert got.shape == (50,)
    assert not np.array_equal(got, np.sort(got))  # shuffled
    assert set(got.tolist()) <= set(data.tolist())
    assert not any(t.is_alive() for t in threads)


def test_coordinator_reraises_the_first_error():
    coord = tf.train.Coordinator()

    def work():
        with coord.stop_on_exception():
            raise ValueError("from a thread")
    t = threading.Thread(target=work)
    coord.register_thread(t)
    t.start()
    with pytest.raises(ValueError, match="from a thread"):
        coord.join()
    assert coord.should_stop()


def test_staging_area_prefetches_one_step_ahead():
    """tf.contrib.staging.StagingArea: each step gets the batch the step before put, in the queue's order."""
    q = tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[3], []])
    fill = q.enqueue_many([np.arange(15, dtype=np.float32).reshape(5, 3), np.arange(5, dtype=np.int32)])
    area = tf.contrib.staging.StagingArea([tf.float32, tf.int32], shapes=[[3], []], names=["x", "k"], capacity=1)
    x, k = q.dequeue()
    put = area.put({"x": x, "k": k})
    got = area.get()
    total = tf.reduce_sum(got["x"])
    assert got["x"].shape.as_list() == [3]
    with tf.Session() as sess:
        sess.run(fill)
        sess.run(put)  # warm-up
        assert sess.run(area.size()) == 1
        for i in range(4):
            t, ki, _ = sess.run([total, got["k"], put])
            assert ki == i and t == 9 * i + 3
        assert sess.run(got["k"]) == 4
        sess.run(fill)
        sess.run(put)
        assert sess.run(area.size()) == 1
        sess.run(area.clear())
        assert sess.run(area.size()) == 0
    with pytest.raises(ValueError):
        area.put([1.0])
