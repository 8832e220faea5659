// AtomicFileWriter: replaces a file so that, whatever happens, readers find
// either its previous contents or the complete new ones.
//
//   std::unique_ptr<AtomicFileWriter> w;
//   AF_RETURN_IF_ERROR(AtomicFileWriter::Create("/ckpt/checkpoint", &w));
//   AF_RETURN_IF_ERROR(w->Append(text.data(), text.size()));
//   AF_RETURN_IF_ERROR(w->Commit());
//
// Bytes go to a new file `<path>.tmp-<16 random hex digits>` in the same
// directory. Commit fsyncs it, closes it, renames it over `path` (atomic on
// POSIX file systems) and fsyncs the directory, so the rename itself survives
// a power loss. A writer destroyed before Commit (an error, an exception)
// removes its temporary file; a crashed process leaves it behind, and the
// file at `path` untouched. Not thread-safe: one thread writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "actorflow/core/io/file_io.hpp"
#include "actorflow/core/status.hpp"

namespace actorflow {

class AtomicFileWriter {
 public:
  static Status Create(const std::string& path, std::unique_ptr<AtomicFileWriter>* out);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  /// Appends n bytes.
  Status Append(const void* data, size_t n);
  /// Overwrites n bytes already appended, at `offset` (offset + n <= size()).
  Status WriteAt(uint64_t offset, const void* data, size_t n);
  /// Bytes appended so far.
  uint64_t size() const { return size_; }
  /// Makes the new contents durable and visible at path(); the writer is done.
  Status Commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

  /// Test hook: once `bytes` bytes were written (appended or overwritten, in
  /// all), the write in progress stops there and fails with Aborted, and the
  /// temporary file stays behind, as if the process had died mid-write.
  void SimulateCrashAfterBytesForTesting(int64_t bytes) { crash_after_ = bytes; }

 private:
  AtomicFileWriter(std::string path, std::string temp_path, file_io::File file)
      : path_(std::move(path)), temp_path_(std::move(temp_path)), file_(std::move(file)) {}
  // Cuts *n to the bytes that may still be written before the simulated crash.
  Status CheckCrash(size_t* n);

  std::string path_;
  std::string temp_path_;
  file_io::File file_;
  uint64_t size_ = 0;
  bool done_ = false;  // committed, or crashed on purpose: the temporary file is not ours to remove
  int64_t crash_after_ = -1;
  uint64_t written_ = 0;  // bytes written in all, for the crash hook
};

/// Replaces the file at `path` with `contents` through an AtomicFileWriter.
Status WriteFileAtomically(const std::string& path, const std::string& contents);

}  // namespace actorflow
