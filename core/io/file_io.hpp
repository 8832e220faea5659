// POSIX file primitives that report a Status naming the file: the layer under
// checkpoint bundles, the checkpoint state file and the record files of
// core/io (file_input_stream.hpp, file_output_stream.hpp).
//
// Every call retries short transfers and EINTR. An errno becomes TensorFlow's
// code for it (ENOENT -> NotFound, EACCES -> PermissionDenied, ENOSPC ->
// ResourceExhausted, ...), with the file, the operation and strerror in the
// message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "actorflow/core/status.hpp"

namespace actorflow {
namespace file_io {

/// Status for a failed system call: `op` ("open", "write"...) on `path`, errno `err`.
Status IOError(const std::string& op, const std::string& path, int err);

/// An owned file descriptor; closes it when destroyed (errors ignored: call
/// Close() where they matter).
class File {
 public:
  File() = default;
  File(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~File();
  File(File&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  File& operator=(File&& o) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  static Status OpenForRead(const std::string& path, File* out);
  /// Creates a new file; AlreadyExists when `path` exists.
  static Status CreateExclusive(const std::string& path, File* out);
  /// Creates `path`, or empties it when it exists, for writing.
  static Status CreateOrTruncate(const std::string& path, File* out);

  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

  /// Writes all n bytes at the current position.
  Status Write(const void* data, size_t n);
  /// Writes all n bytes at `offset` (the position is unchanged).
  Status WriteAt(uint64_t offset, const void* data, size_t n);
  /// Reads up to n bytes at `offset`; *got < n only at the end of the file.
  Status ReadAt(uint64_t offset, void* data, size_t n, size_t* got) const;
  Status Size(uint64_t* size) const;
  Status Sync();
  Status Close();

 private:
  int fd_ = -1;
  std::string path_;
};

/// Makes the directory entries of `dir` durable (a rename into it, a new file).
Status SyncDirectory(const std::string& dir);
/// Creates `dir` and its missing parents, each made durable in its parent;
/// FailedPrecondition when one of them exists and is not a directory.
Status CreateDirectories(const std::string& dir);
/// Removes a file; NotFound when there is none.
Status DeleteFile(const std::string& path);
Status RenameFile(const std::string& from, const std::string& to);
bool FileExists(const std::string& path);
/// Reads a whole file of at most `max_bytes` (DataLoss naming the file when larger).
Status ReadFileToString(const std::string& path, size_t max_bytes, std::string* out);

/// "a/b/c" -> "a/b"; "c" -> "."; "/c" -> "/".
std::string Dirname(const std::string& path);
/// "a/b" + "c" -> "a/b/c"; an absolute `name` is returned as it is.
std::string JoinPath(const std::string& dir, const std::string& name);

}  // namespace file_io
}  // namespace actorflow
