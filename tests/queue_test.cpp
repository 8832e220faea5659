// Queue actors through sessions (ops/queue, actors/queue_actor.hpp), one
// behaviour per test, for the FIFO and the random shuffle queue; then the
// padding and priority queues, shuffle quality, concurrency and shutdown.
// Every wait is bounded: a test fails, never hangs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "actorflow/actors/runtime.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/queue_ops.hpp"
#include "actorflow/client/session.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::MakeTensor;
using test::ToDef;
using test::Values;
using test::Finished;
using test::StillWaiting;
using test::TwoThreads;

namespace {

enum class Kind { kFifo, kShuffle };

// A queue of float scalars "q" with the usual ops around it:
//   x (fed float) -> "enq"; xs (fed [n] float) -> "enq_many"; "deq"; n (fed int32) -> "deq_many", "deq_up_to";
//   "close", "close_cancel", "size", "is_closed".
struct QueueGraph {
  QueueGraph(Kind kind, int64_t capacity, int64_t min_after_dequeue = 0, int64_t seed = 7,
             const std::string& shared_name = "") {
    Scope root = Scope::NewRootScope();
    ops::QueueOptions o;
    o.capacity = capacity;
    o.shapes = {PartialTensorShape::Scalar()};
    o.shared_name = shared_name;
    Output q = kind == Kind::kFifo
                   ? ops::FIFOQueue(root.WithOpName("q"), {DT_FLOAT}, o)
                   : ops::RandomShuffleQueue(root.WithOpName("q"), {DT_FLOAT}, min_after_dequeue, o, seed);
    auto x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    auto xs = ops::Placeholder(root.WithOpName("xs"), DT_FLOAT);
    auto n = ops::Placeholder(root.WithOpName("n"), DT_INT32);
    ops::QueueEnqueue(root.WithOpName("enq"), q, {x});
    ops::QueueEnqueueMany(root.WithOpName("enq_many"), q, {xs});
    ops::Identity(root.WithOpName("deq"), ops::QueueDequeue(root, q, {DT_FLOAT})[0]);
    ops::Identity(root.WithOpName("deq_many"), ops::QueueDequeueMany(root, q, n, {DT_FLOAT})[0]);
    ops::Identity(root.WithOpName("deq_up_to"), ops::QueueDequeueUpTo(root, q, n, {DT_FLOAT})[0]);
    ops::QueueClose(root.WithOpName("close"), q);
    ops::QueueClose(root.WithOpName("close_cancel"), q, true);
    ops::Identity(root.WithOpName("size"), ops::QueueSize(root, q));
    ops::Identity(root.WithOpName("is_closed"), ops::QueueIsClosed(root, q));
    def = ToDef(root);
  }
  proto::GraphDef def;
};

class Client : public test::StepClient {
 public:
  using StepClient::StepClient;
  void Enqueue(float v) { RunOk({{"x", Tensor::Scalar<float>(v)}}, {}, {"enq"}); }
  void EnqueueMany(const std::vector<float>& v) {
    RunOk({{"xs", MakeTensor<float>(v, {static_cast<int64_t>(v.size())})}}, {}, {"enq_many"});
  }
  float Dequeue() { return RunOk({}, {"deq"}, {})[0].scalar<float>(); }
  std::vector<float> DequeueMany(int n, const char* op = "deq_many") {
    return Values<float>(RunOk({{"n", Tensor::Scalar<int32_t>(n)}}, {op}, {})[0]);
  }
  int Size() { return RunOk({}, {"size"}, {})[0].scalar<int32_t>(); }
  bool IsClosed() { return RunOk({}, {"is_closed"}, {})[0].scalar<bool>(); }
  void Close(bool cancel = false) { RunOk({}, {}, {cancel ? "close_cancel" : "close"}); }
};

const char* Name(Kind k) { return k == Kind::kFifo ? "FIFO" : "shuffle"; }

}  // namespace

TEST_CASE("queue: elements come out in order (FIFO) or all of them (shuffle); size and is_closed") {
  Runtime rt(TwoThreads());
  for (Kind kind : {Kind::kFifo, Kind::kShuffle}) {
    INFO(Name(kind));
    QueueGraph g(kind, 10);
    Client c(&rt, g.def);
    c.Enqueue(1);
    c.EnqueueMany({2, 3, 4});
    REQUIRE(c.Size() == 4);
    REQUIRE_FALSE(c.IsClosed());
    std::vector<float> got = {c.Dequeue()};
    for (float v : c.DequeueMany(3)) got.push_back(v);
    if (kind == Kind::kFifo) REQUIRE(got == std::vector<float>{1, 2, 3, 4});
    std::sort(got.begin(), got.end());
    REQUIRE(got == std::vector<float>{1, 2, 3, 4});
    REQUIRE(c.Size() == 0);
    c.Close();
    REQUIRE(c.IsClosed());
  }
}

TEST_CASE("queue: an enqueue waits while the queue is full and finishes when a dequeue makes room") {
  Runtime rt(TwoThreads());
  for (Kind kind : {Kind::kFifo, Kind::kShuffle}) {
    INFO(Name(kind));
    QueueGraph g(kind, 2);
    Client c(&rt, g.def);
    c.EnqueueMany({1, 2});
    std::vector<Tensor> out;
    auto blocked = c.Start({{"x", Tensor::Scalar<float>(3)}}, {}, {"enq"}, &out);
    REQUIRE(StillWaiting(blocked));
    REQUIRE(c.Size() == 2);
    float first = c.Dequeue();
    REQUIRE(Finished(blocked).ok());
    REQUIRE(c.Size() == 2);
    if (kind == Kind::kFifo) REQUIRE(first == 1);
  }
}

TEST_CASE("queue: enqueue-many pushes element by element and may wait part-way") {
  Runtime rt(TwoThreads());
  QueueGraph g(Kind::kFifo, 2);
  Client c(&rt, g.def);
  std::vector<Tensor> out;
  auto many = c.Start({{"xs", MakeTensor<float>({1, 2, 3, 4, 5}, {5})}}, {}, {"enq_many"}, &out);
  REQUIRE(StillWaiting(many));
  REQUIRE(c.Size() == 2);  // the first two went in whole; the rest waits
  REQUIRE(c.DequeueMany(2) == std::vector<float>{1, 2});
  REQUIRE(c.Dequeue() == 3);
  REQUIRE(c.DequeueMany(2) == std::vector<float>{4, 5});
  REQUIRE(Finished(many).ok());
}

TEST_CASE("queue: a dequeue waits while the queue is empty (shuffle: while it holds no more than min_after_dequeue)") {
  Runtime rt(TwoThreads());
  {
    QueueGraph g(Kind::kFifo, 10);
    Client c(&rt, g.def);
    std::vector<Tensor> out;
    auto waiting = c.Start({}, {"deq"}, {}, &out);
    REQUIRE(StillWaiting(waiting));
    c.Enqueue(42);
    REQUIRE(Finished(waiting).ok());
    REQUIRE(out[0].scalar<float>() == 42);
  }
  {
    QueueGraph g(Kind::kShuffle, 10, /*min_after_dequeue=*/2);
    Client c(&rt, g.def);
    c.EnqueueMany({1, 2});
    std::vector<Tensor> out;
    auto waiting = c.Start({}, {"deq"}, {}, &out);
    REQUIRE(StillWaiting(waiting));  // 2 elements, min_after_dequeue 2: nothing may leave
    c.Enqueue(3);
    REQUIRE(Finished(waiting).ok());
    REQUIRE(c.Size() == 2);
    // After close, min_after_dequeue no longer holds: the rest drains.
    c.Close();
    REQUIRE(c.DequeueMany(2).size() == 2);
  }
}

TEST_CASE("queue: after close, enqueues fail with Cancelled and dequeues drain, then OutOfRange") {
  Runtime rt(TwoThreads());
  for (Kind kind : {Kind::kFifo, Kind::kShuffle}) {
    INFO(Name(kind));
    QueueGraph g(kind, 10, kind == Kind::kShuffle ? 3 : 0);
    Client c(&rt, g.def);
    c.EnqueueMany({1, 2, 3});
    c.Close();
    std::vector<Tensor> out;
    Status s = c.Run({{"x", Tensor::Scalar<float>(9)}}, {}, {"enq"}, &out);
    REQUIRE(s.code() == Code::kCancelled);
    REQUIRE_THAT(s.message(), Catch::Contains("closed"));
    std::vector<float> got = {c.Dequeue()};
    for (float v : c.DequeueMany(2)) got.push_back(v);
    std::sort(got.begin(), got.end());
    REQUIRE(got == std::vector<float>{1, 2, 3});
    s = c.Run({}, {"deq"}, {}, &out);
    REQUIRE(s.code() == Code::kOutOfRange);
    REQUIRE_THAT(s.message(), Catch::Contains("closed") && Catch::Contains("'q"));
  }
}

TEST_CASE("queue: a dequeue-many that fails at close returns its elements to the queue in order; up-to returns them") {
  Runtime rt(TwoThreads());
  QueueGraph g(Kind::kFifo, 10);
  Client c(&rt, g.def);
  c.EnqueueMany({1, 2});
  std::vector<Tensor> out;
  auto many = c.Start({{"n", Tensor::Scalar<int32_t>(5)}}, {"deq_many"}, {}, &out);
  REQUIRE(StillWaiting(many));  // holds 1 and 2, waits for three more
  REQUIRE(c.Size() == 0);
  c.Close();
  Status s = Finished(many);
  REQUIRE(s.code() == Code::kOutOfRange);
  REQUIRE(c.Size() == 2);  // given back
  REQUIRE(c.DequeueMany(5, "deq_up_to") == std::vector<float>{1, 2});
  std::vector<Tensor> empty;
  REQUIRE(c.Run({{"n", Tensor::Scalar<int32_t>(5)}}, {"deq_up_to"}, {}, &empty).code() == Code::kOutOfRange);
}

TEST_CASE("queue: close with cancel_pending_enqueues cancels waiting enqueues; without, they still go in") {
  Runtime rt(TwoThreads());
  for (bool cancel : {true, false}) {
    INFO("cancel_pending_enqueues " << cancel);
    QueueGraph g(Kind::kFifo, 1);
    Client c(&rt, g.def);
    c.Enqueue(1);
    std::vector<Tensor> out;
    auto waiting = c.Start({{"x", Tensor::Scalar<float>(2)}}, {}, {"enq"}, &out);
    REQUIRE(StillWaiting(waiting));
    c.Close(cancel);
    if (cancel) {
      REQUIRE(Finished(waiting).code() == Code::kCancelled);
      REQUIRE(c.Dequeue() == 1);
    } else {
      REQUIRE(StillWaiting(waiting));
      REQUIRE(c.Dequeue() == 1);
      REQUIRE(Finished(waiting).ok());
      REQUIRE(c.Dequeue() == 2);
    }
    std::vector<Tensor> none;
    REQUIRE(c.Run({}, {"deq"}, {}, &none).code() == Code::kOutOfRange);
  }
}

TEST_CASE("queue: dequeue-many(0) returns an empty batch at once when shapes are known") {
  Runtime rt(TwoThreads());
  QueueGraph g(Kind::kFifo, 10);
  Client c(&rt, g.def);
  std::vector<Tensor> out = c.RunOk({{"n", Tensor::Scalar<int32_t>(0)}}, {"deq_many"}, {});
  REQUIRE(out[0].shape() == TensorShape{0});
  // Without declared shapes it is refused rather than guessed.
  Scope root = Scope::NewRootScope();
  auto q = ops::FIFOQueue(root.WithOpName("q"), {DT_FLOAT});
  ops::Identity(root.WithOpName("deq_many"), ops::QueueDequeueMany(root, q, 0, {DT_FLOAT})[0]);
  Client c2(&rt, ToDef(root));
  std::vector<Tensor> none;
  Status s = c2.Run({}, {"deq_many"}, {}, &none);
  REQUIRE(s.code() == Code::kInvalidArgument);
}

TEST_CASE("queue: a step timeout cancels its waiting dequeue with DeadlineExceeded; the queue stays usable") {
  Runtime rt(TwoThreads());
  for (Kind kind : {Kind::kFifo, Kind::kShuffle}) {
    INFO(Name(kind));
    QueueGraph g(kind, 10);
    Client c(&rt, g.def);
    std::vector<Tensor> out;
    Status s = c.Run({}, {"deq"}, {}, &out, /*timeout_ms=*/200);
    REQUIRE(s.code() == Code::kDeadlineExceeded);
    // The cancelled dequeue is gone: it does not take the next element.
    c.Enqueue(5);
    REQUIRE(c.Size() == 1);
    REQUIRE(c.Dequeue() == 5);
    // A waiting dequeue-many gives back what it held when its step times out.
    c.Enqueue(6);
    s = c.Run({{"n", Tensor::Scalar<int32_t>(3)}}, {"deq_many"}, {}, &out, 200);
    REQUIRE(s.code() == Code::kDeadlineExceeded);
    REQUIRE(c.Size() == 1);
    // And a waiting enqueue of a full queue.
    QueueGraph small(kind, 1);
    Client f(&rt, small.def);
    f.Enqueue(1);
    s = f.Run({{"x", Tensor::Scalar<float>(2)}}, {}, {"enq"}, &out, 200);
    REQUIRE(s.code() == Code::kDeadlineExceeded);
    REQUIRE(f.Size() == 1);
    REQUIRE(f.Dequeue() == 1);
  }
}

TEST_CASE("queue: closing the session cancels its waiting queue ops; a shared queue stays usable") {
  Runtime rt(TwoThreads());
  QueueGraph g(Kind::kFifo, 10, 0, 0, "shared_q");
  Client other(&rt, g.def);
  std::future<Status> waiting;
  std::vector<Tensor> out;
  {
    Client c(&rt, g.def);
    waiting = c.Start({}, {"deq"}, {}, &out, 0);  // no deadline: only the close ends it
    REQUIRE(StillWaiting(waiting));
    REQUIRE(c.session->Close().ok());
    REQUIRE(Finished(waiting).code() == Code::kCancelled);
  }
  other.Enqueue(8);
  REQUIRE(other.Dequeue() == 8);
}

TEST_CASE("queue: a shared name is one queue across sessions; declared differently it is an error saying how") {
  Runtime rt(TwoThreads());
  QueueGraph a(Kind::kFifo, 10, 0, 0, "common");
  Client c1(&rt, a.def), c2(&rt, a.def);
  c1.Enqueue(1);
  REQUIRE(c2.Dequeue() == 1);
  QueueGraph other_capacity(Kind::kFifo, 5, 0, 0, "common");
  Client c3(&rt, other_capacity.def);
  std::vector<Tensor> out;
  Status s = c3.Run({}, {"size"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("common") && Catch::Contains("capacity") && Catch::Contains("10") &&
                                Catch::Contains("5"));
  QueueGraph other_kind(Kind::kShuffle, 10, 0, 3, "common");
  Client c4(&rt, other_kind.def);
  s = c4.Run({}, {"size"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("RandomShuffleQueue"));
  // Private queues (no shared name) are one per session.
  QueueGraph mine(Kind::kFifo, 10);
  Client p1(&rt, mine.def), p2(&rt, mine.def);
  p1.Enqueue(3);
  REQUIRE(p2.Size() == 0);
  REQUIRE(p1.Size() == 1);
}

TEST_CASE("queue: bad declarations and elements are InvalidArgument naming what is wrong") {
  Runtime rt(TwoThreads());
  QueueGraph g(Kind::kShuffle, 5, /*min_after_dequeue=*/5);
  Client c(&rt, g.def);
  std::vector<Tensor> out;
  Status s = c.Run({}, {"size"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("min_after_dequeue") && Catch::Contains("capacity"));
  QueueGraph ok(Kind::kFifo, 5);
  Client d(&rt, ok.def);
  s = d.Run({{"x", MakeTensor<float>({1, 2}, {2})}}, {}, {"enq"}, &out);  // declared scalar
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("shape"));
  REQUIRE(d.Size() == 0);
  s = d.Run({{"n", Tensor::Scalar<int32_t>(-1)}}, {"deq_many"}, {}, &out);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("negative") && Catch::Contains("QueueDequeueManyV2"));
}

TEST_CASE("queue: the padding queue pads a batch to its largest element; the priority queue orders by priority") {
  Runtime rt(TwoThreads());
  {
    Scope root = Scope::NewRootScope();
    ops::QueueOptions o;
    o.shapes = {PartialTensorShape(std::vector<int64_t>{-1})};
    auto q = ops::PaddingFIFOQueue(root.WithOpName("q"), {DT_INT32}, o);
    auto v = ops::Placeholder(root.WithOpName("v"), DT_INT32);
    ops::QueueEnqueue(root.WithOpName("enq"), q, {v});
    ops::Identity(root.WithOpName("batch"), ops::QueueDequeueMany(root, q, 3, {DT_INT32})[0]);
    Client c(&rt, ToDef(root));
    c.RunOk({{"v", MakeTensor<int32_t>({1}, {1})}}, {}, {"enq"});
    c.RunOk({{"v", MakeTensor<int32_t>({2, 3, 4}, {3})}}, {}, {"enq"});
    c.RunOk({{"v", MakeTensor<int32_t>({5, 6}, {2})}}, {}, {"enq"});
    Tensor batch = c.RunOk({}, {"batch"}, {})[0];
    REQUIRE(batch.shape() == TensorShape{3, 3});
    REQUIRE(Values<int32_t>(batch) == std::vector<int32_t>{1, 0, 0, 2, 3, 4, 5, 6, 0});
  }
  {
    Scope root = Scope::NewRootScope();
    ops::QueueOptions o;
    o.shapes = {PartialTensorShape::Scalar()};
    auto q = ops::PriorityQueue(root.WithOpName("q"), {DT_STRING}, o);
    auto p = ops::Placeholder(root.WithOpName("p"), DT_INT64);
    auto s = ops::Placeholder(root.WithOpName("s"), DT_STRING);
    ops::QueueEnqueueMany(root.WithOpName("enq"), q, {p, s});
    auto deq = ops::QueueDequeueMany(root, q, 4, {DT_INT64, DT_STRING});
    ops::Identity(root.WithOpName("prio"), deq[0]);
    ops::Identity(root.WithOpName("val"), deq[1]);
    Client c(&rt, ToDef(root));
    c.RunOk({{"p", MakeTensor<int64_t>({5, 1, 3, 1}, {4})},
             {"s", MakeTensor<std::string>({"e", "a", "c", "b"}, {4})}},
            {}, {"enq"});
    auto out = c.RunOk({}, {"prio", "val"}, {});
    REQUIRE(Values<int64_t>(out[0]) == std::vector<int64_t>{1, 1, 3, 5});
    REQUIRE(Values<std::string>(out[1]) == std::vector<std::string>{"a", "b", "c", "e"});  // ties in arrival order
  }
}

TEST_CASE("shuffle queue: every record once per epoch, uniform positions, seeds decide the order") {
  Runtime rt(TwoThreads());
  constexpr int kRecords = 20, kEpochs = 400;
  auto epochs = [&](int64_t seed, int epochs_wanted) {
    QueueGraph g(Kind::kShuffle, kRecords + 1, /*min_after_dequeue=*/0, seed);
    Client c(&rt, g.def);
    std::vector<std::vector<float>> orders;
    std::vector<float> all(kRecords);
    for (int i = 0; i < kRecords; ++i) all[static_cast<size_t>(i)] = static_cast<float>(i);
    for (int e = 0; e < epochs_wanted; ++e) {
      c.EnqueueMany(all);
      orders.push_back(c.DequeueMany(kRecords));
    }
    return orders;
  };
  auto orders = epochs(11, kEpochs);
  // position_counts[record][position]
  std::vector<std::vector<int>> counts(kRecords, std::vector<int>(kRecords, 0));
  for (const auto& order : orders) {
    std::vector<float> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < kRecords; ++i) REQUIRE(sorted[static_cast<size_t>(i)] == static_cast<float>(i));
    for (int pos = 0; pos < kRecords; ++pos) ++counts[static_cast<size_t>(order[static_cast<size_t>(pos)])][static_cast<size_t>(pos)];
  }
  // Chi-squared over the 20x20 table: expected kEpochs / kRecords = 20 per cell, 361 degrees of freedom.
  // The 0.999 quantile of chi2(361) is about 462.
  double chi2 = 0;
  const double expected = static_cast<double>(kEpochs) / kRecords;
  for (const auto& row : counts)
    for (int n : row) chi2 += (n - expected) * (n - expected) / expected;
  INFO("chi2 = " << chi2);
  REQUIRE(chi2 < 462);
  REQUIRE(epochs(11, 3) == std::vector<std::vector<float>>(orders.begin(), orders.begin() + 3));  // same seed, same order
  REQUIRE(epochs(12, 3) != std::vector<std::vector<float>>(orders.begin(), orders.begin() + 3));
}

TEST_CASE("queue: many producers and consumers lose and duplicate nothing") {
  Runtime rt(TwoThreads());
  for (Kind kind : {Kind::kFifo, Kind::kShuffle}) {
    INFO(Name(kind));
    QueueGraph g(kind, 16, 0, 0, kind == Kind::kFifo ? "stress_fifo" : "stress_shuffle");
    constexpr int kProducers = 4, kConsumers = 4, kBatches = 25, kBatch = 8;
    const int total = kProducers * kBatches * kBatch;
    std::vector<std::unique_ptr<Client>> clients;
    for (int i = 0; i < kProducers + kConsumers; ++i) clients.push_back(std::make_unique<Client>(&rt, g.def));
    // No Catch assertion off the main thread (Catch is not thread-safe): the
    // threads count failures, the main thread checks.
    std::atomic<int> failures{0};
    std::vector<std::future<std::vector<float>>> consumers;
    for (int i = 0; i < kConsumers; ++i)
      consumers.push_back(std::async(std::launch::async, [&, i] {
        std::vector<float> got;
        Client& c = *clients[static_cast<size_t>(kProducers + i)];
        for (int b = 0; b < total / kConsumers / kBatch; ++b) {
          std::vector<Tensor> out;
          if (!c.Run({{"n", Tensor::Scalar<int32_t>(kBatch)}}, {"deq_many"}, {}, &out).ok()) {
            ++failures;
            break;
          }
          for (int k = 0; k < kBatch; ++k) got.push_back(out[0].data<float>()[k]);
        }
        return got;
      }));
    std::vector<std::future<void>> producers;
    for (int p = 0; p < kProducers; ++p)
      producers.push_back(std::async(std::launch::async, [&, p] {
        Client& c = *clients[static_cast<size_t>(p)];
        for (int b = 0; b < kBatches; ++b) {
          std::vector<float> v;
          for (int k = 0; k < kBatch; ++k) v.push_back(static_cast<float>((p * kBatches + b) * kBatch + k));
          std::vector<Tensor> out;
          if (!c.Run({{"xs", MakeTensor<float>(v, {kBatch})}}, {}, {"enq_many"}, &out).ok()) ++failures;
        }
      }));
    for (auto& f : producers) REQUIRE(f.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
    std::multiset<float> seen;
    for (auto& f : consumers) {
      REQUIRE(f.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
      for (float v : f.get()) seen.insert(v);
    }
    REQUIRE(failures.load() == 0);
    REQUIRE(static_cast<int>(seen.size()) == total);
    for (int i = 0; i < total; ++i) REQUIRE(seen.count(static_cast<float>(i)) == 1);
  }
}

TEST_CASE("queue: shutting the runtime down with ops waiting on a queue never hangs") {
  std::future<Status> waiting;
  std::vector<Tensor> out;
  {
    auto rt = std::make_unique<Runtime>(TwoThreads());
    QueueGraph g(Kind::kFifo, 1);
    auto c = std::make_unique<Client>(rt.get(), g.def);
    waiting = c->Start({}, {"deq"}, {}, &out, 0);
    REQUIRE(StillWaiting(waiting));
    REQUIRE(c->session->Close().ok());
    REQUIRE_FALSE(Finished(waiting).ok());
    c.reset();
  }  // the runtime and its queue actors go
}
