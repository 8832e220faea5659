// Records/s through a shuffle queue: 2 producer clients run enqueue-many of
// 256 (and, separately, 4096) records of 64 float32 into a RandomShuffleQueue (capacity 8192,
// min_after_dequeue 1024), one consumer runs dequeue-many(64), as an input
// pipeline feeds training. Peer in the same run: a plain bounded queue of the
// same records (std::mutex + std::condition_variable, 2 producers pushing
// batches of the same 256 or 4096 records under one lock each, as many as fit
// and the rest as room comes, 1 consumer popping 64 at a time), the limit of a
// lock-based queue doing the same work. PyTorch's DataLoader is
// bench/peer_torch_dataloader.py.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "actorflow/actors/runtime.hpp"
#include "bench_util.hpp"
#include "actorflow/client/ops/cc_ops.hpp"
#include "actorflow/client/ops/queue_ops.hpp"
#include "actorflow/client/session.hpp"

using namespace actorflow;

namespace {

constexpr int kFloats = 64, kDequeueBatch = 64, kProducers = 2;
constexpr int64_t kCapacity = 8192, kMinAfterDequeue = 1024;

void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "bench_queue: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

// Seconds to dequeue `batches` batches of 64 while 2 producers keep the queue full.
double ActorflowRun(Runtime* rt, int batches, int enqueue_batch) {
  Scope root = Scope::NewRootScope();
  ops::QueueOptions o;
  o.capacity = kCapacity;
  o.shapes = {PartialTensorShape(std::vector<int64_t>{kFloats})};
  auto q = ops::RandomShuffleQueue(root.WithOpName("q"), {DT_FLOAT}, kMinAfterDequeue, o, 1);
  auto xs = ops::Placeholder(root.WithOpName("xs"), DT_FLOAT);
  ops::QueueEnqueueMany(root.WithOpName("enq"), q, {xs});
  ops::Identity(root.WithOpName("batch"), ops::QueueDequeueMany(root, q, kDequeueBatch, {DT_FLOAT})[0]);
  ops::QueueClose(root.WithOpName("close"), q, /*cancel_pending_enqueues=*/true);
  proto::GraphDef def;
  Check(root.ToGraphDef(&def));
  SessionOptions so;
  so.runtime = rt;
  Session session(so);
  Check(session.Create(def));
  Tensor records(DT_FLOAT, TensorShape{enqueue_batch, kFloats});
  for (int64_t i = 0; i < records.NumElements(); ++i) records.data<float>()[i] = static_cast<float>(i);
  std::atomic<bool> stop{false};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p)
    producers.emplace_back([&] {
      std::vector<Tensor> none;
      while (!stop.load()) {
        if (!session.Run({{"xs", records}}, {}, {"enq"}, &none).ok()) return;  // closed at the end
      }
    });
  std::vector<Tensor> out;
  for (int i = 0; i < 20; ++i) Check(session.Run({}, {"batch"}, {}, &out));  // warm up, queue filled
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < batches; ++i) Check(session.Run({}, {"batch"}, {}, &out));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stop = true;
  Check(session.Run({}, {}, {"close"}, &out));
  for (auto& t : producers) t.join();
  return secs;
}

// The peer: a bounded queue of records behind one mutex and two condition variables.
class BoundedQueue {
 public:
  using Record = std::array<float, kFloats>;
  explicit BoundedQueue(size_t capacity) : capacity_(capacity) {}
  // Enqueue-many: as many records as fit under one lock, then the rest as
  // room comes (TensorFlow's QueueEnqueueMany fills a queue the same way).
  bool PushMany(const std::vector<Record>& records) {
    std::unique_lock<std::mutex> l(mu_);
    for (size_t i = 0; i < records.size();) {
      not_full_.wait(l, [&] { return closed_ || items_.size() < capacity_; });
      if (closed_) return false;
      while (i < records.size() && items_.size() < capacity_) items_.push_back(records[i++]);
      not_empty_.notify_one();
    }
    return true;
  }
  void PopMany(int n, std::vector<Record>* out) {
    out->clear();
    std::unique_lock<std::mutex> l(mu_);
    while (static_cast<int>(out->size()) < n) {
      not_empty_.wait(l, [&] { return !items_.empty(); });
      while (!items_.empty() && static_cast<int>(out->size()) < n) {
        out->push_back(items_.front());
        items_.pop_front();
      }
      not_full_.notify_all();
    }
  }
  void Close() {
    std::lock_guard<std::mutex> l(mu_);
    closed_ = true;
    not_full_.notify_all();
  }

 private:
  size_t capacity_;
  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Record> items_;
  bool closed_ = false;
};

double PeerRun(int batches, int enqueue_batch) {
  BoundedQueue queue(kCapacity);
  std::vector<BoundedQueue::Record> records(static_cast<size_t>(enqueue_batch));
  for (size_t r = 0; r < records.size(); ++r)
    for (int f = 0; f < kFloats; ++f) records[r][f] = static_cast<float>(r * kFloats + f);
  std::atomic<bool> stop{false};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p)
    producers.emplace_back([&] {
      while (!stop.load())
        if (!queue.PushMany(records)) return;
    });
  std::vector<BoundedQueue::Record> out;
  for (int i = 0; i < 20; ++i) queue.PopMany(kDequeueBatch, &out);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < batches; ++i) queue.PopMany(kDequeueBatch, &out);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stop = true;
  queue.Close();
  for (auto& t : producers) t.join();
  return secs;
}

}  // namespace

int main(int argc, char** argv) {
  // `bench_queue ENQUEUE_BATCH THREADS [BATCHES]` runs only actorflow in that
  // setting, for profiling; it prints records/s.
  if (argc >= 3) {
    RuntimeOptions o;
    o.num_threads = std::atoi(argv[2]);
    Runtime rt(o);
    const int n = argc > 3 ? std::atoi(argv[3]) : 30000;
    const double secs = ActorflowRun(&rt, n, std::atoi(argv[1]));
    std::printf("%.0f records/s\n", n * kDequeueBatch / secs);
    return 0;
  }
  // actorflow with 1 and with 2 worker threads (as the training figures: the
  // better setting counts), each interleaved with the peer: a slow spell of
  // this shared machine hits both.
  const int batches = 10000;  // 640k records per measurement
  // One runtime at a time: an idle runtime's workers would poll for work.
  auto ours = [&](int threads, int enqueue_batch) {
    RuntimeOptions o;
    o.num_threads = threads;
    Runtime rt(o);
    return ActorflowRun(&rt, batches, enqueue_batch);
  };
  auto stats = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return bench::Stats{v[v.size() / 2], v.front(), v.back(), static_cast<int>(v.size())};
  };
  const double records = static_cast<double>(batches) * kDequeueBatch;
  // Producers enqueue-many 256 records (a reader's read-up-to batch) or 4096 (fewer, larger steps).
  for (int enqueue_batch : {256, 4096}) {
    std::vector<double> ours1, ours2, peer;
    for (int round = 0; round < 5; ++round) {
      ours1.push_back(ours(1, enqueue_batch));
      peer.push_back(PeerRun(batches, enqueue_batch));
      ours2.push_back(ours(2, enqueue_batch));
    }
    const std::string p = "\"record_floats\":64,\"producers\":2,\"enqueue_many\":" + std::to_string(enqueue_batch) +
                          ",\"dequeue_many\":64";
    bench::Print("queue_records", p + ",\"threads\":1,\"impl\":\"actorflow RandomShuffleQueue\"", "throughput",
                 "records/s", stats(ours1), records, true);
    bench::Print("queue_records", p + ",\"threads\":2,\"impl\":\"actorflow RandomShuffleQueue\"", "throughput",
                 "records/s", stats(ours2), records, true);
    bench::Print("queue_records", p + ",\"impl\":\"mutex+condvar bounded queue\"", "throughput", "records/s",
                 stats(peer), records, true);
    const double best = std::min(stats(ours1).median, stats(ours2).median);
    std::printf("{\"bench\":\"queue_records_ratio\",\"params\":{%s},\"metric\":\"best actorflow / mutex+condvar\","
                "\"unit\":\"ratio\",\"median\":%.3f,\"best_records_per_s\":%.0f}\n",
                p.c_str(), stats(peer).median / best, records / best);
    std::fflush(stdout);
  }
  return 0;
}
