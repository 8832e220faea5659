// ReaderResource: the state behind a reader handle (TensorFlow's
// ReaderInterface): a FileRecordReader, the file it is in (its current work
// unit), its counters, and the reads waiting their turn. The reader ops
// (ops/io/reader_ops.cpp) create one per reader declaration and find it again
// by the encoded handle through ReaderRegistry.
//
// A read takes records from the open file; when the file is exhausted it
// dequeues the next filename from the queue it was given, through
// ctx->queues() (an asynchronous request: no thread waits on the queue), and
// OutOfRange comes back once that queue is closed and empty. As TensorFlow's
// ReaderBase: a read of up to n records ends early at the end of a file when
// it has records, so a batch never spans files; an empty file is skipped.
// Opening and reading files runs on the compute pool, never on a device
// actor's thread.
//
// Unlike TensorFlow, a file that fails (it cannot be opened, a damaged
// record) is given up: the read fails with the reader's error (DataLoss naming
// file and offset), and the next read goes on with the next file. A read that
// had records before the damage returns them, and the error comes with the
// next read.
//
// Reads (and resets) of one reader are serialized: one works at a time, the
// others wait in arrival order, each holding no thread. The worker moves
// between a device actor's thread (the queue's answer) and pool threads; the
// waiting list is guarded by a mutex, the reader itself belongs to the one
// worker. A step cancelled while its read waits its turn fails that read at
// once (Cancelled); a read already working ends with its queue request or file
// read.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "actorflow/core/io/file_record_reader.hpp"
#include "actorflow/core/status.hpp"
#include "actorflow/ops/op_kernel.hpp"

namespace actorflow {

class ReaderResource : public std::enable_shared_from_this<ReaderResource> {
 public:
  struct Result {
    Status status;
    std::vector<std::string> keys, values;
  };
  /// Called exactly once per read or reset, from any thread.
  using Done = std::function<void(Result& result)>;

  /// `name` names the reader in messages; `reader` reads its files.
  ReaderResource(std::string name, std::unique_ptr<io::FileRecordReader> reader);
  ReaderResource(const ReaderResource&) = delete;
  ReaderResource& operator=(const ReaderResource&) = delete;

  /// Reads between 1 and `max_records` (>= 1) records of one file, dequeuing
  /// filenames from the queue of `queue_handle` as needed. `ctx` (the read
  /// op's context, alive until `done`) gives the queues, the step and the
  /// pool. Called on the device actor's thread.
  void Read(OpKernelContext* ctx, const std::string& queue_handle, int64_t max_records, Done done);
  /// Closes the file and zeroes the counters, in turn with the reads.
  void Reset(OpKernelContext* ctx, Done done);

  int64_t NumRecordsProduced() const { return records_produced_.load(std::memory_order_relaxed); }
  int64_t NumWorkUnitsCompleted() const { return work_finished_.load(std::memory_order_relaxed); }
  const std::string& name() const { return name_; }

 private:
  struct Pending;
  using PendingPtr = std::shared_ptr<Pending>;

  void Enqueue(PendingPtr p);
  /// The worker: runs `p`, then the reads waiting after it.
  void Start(PendingPtr p);
  void RequestWork(PendingPtr p);
  void ReadOnPool(const PendingPtr& p, const std::string* filename);
  void Finish(const PendingPtr& p, Status s);
  void CancelWaiting(uint64_t id);
  void CloseFile();

  const std::string name_;

  std::mutex mu_;
  std::deque<PendingPtr> waiting_;  // guarded by mu_
  bool busy_ = false;               // guarded by mu_: a worker runs
  uint64_t next_id_ = 1;            // guarded by mu_

  // The worker's alone (the one that set busy_).
  std::unique_ptr<io::FileRecordReader> reader_;
  bool file_open_ = false;
  Status deferred_;  // an error met after records were read: the next read reports it
  std::atomic<int64_t> records_produced_{0};
  std::atomic<int64_t> work_finished_{0};
};

/// The process's readers by (container, shared name), whichever device's
/// kernel declared them (ResourceIdentity of the encoded handle). A
/// reader lives while its declaring kernels hold it (the sessions that run
/// it); the registry only finds it.
class ReaderRegistry {
 public:
  static ReaderRegistry* Global();
  /// The reader of `handle`, made with `make` when there is none. A reader
  /// shared under one name must be declared alike (`signature`: the
  /// declaration's op and attrs): InvalidArgument naming both otherwise.
  Status LookupOrCreate(const std::string& handle, const std::string& signature,
                        const std::function<Status(std::shared_ptr<ReaderResource>*)>& make,
                        std::shared_ptr<ReaderResource>* out);
  /// NotFound when no live reader has `handle`.
  Status Lookup(const std::string& handle, std::shared_ptr<ReaderResource>* out);

 private:
  struct Entry {
    std::weak_ptr<ReaderResource> reader;
    std::string signature;
  };
  /// The identity of an encoded handle, decoded once per handle (a read op
  /// looks its reader up on every run). Called with mu_ held.
  const std::string& IdentityLocked(const std::string& handle);

  std::mutex mu_;
  std::unordered_map<std::string, Entry> readers_;         // by ResourceIdentity; guarded by mu_
  std::unordered_map<std::string, std::string> identity_;  // encoded handle -> its identity; guarded by mu_
};

}  // namespace actorflow
