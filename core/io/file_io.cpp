#include "actorflow/core/io/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace actorflow {
namespace file_io {

Status IOError(const std::string& op, const std::string& path, int err) {
  const std::string msg = strings::StrCat("could not ", op, " '", path, "': ", std::strerror(err));
  switch (err) {
    case ENOENT: case ENOTDIR: return errors::NotFound(msg);
    case EACCES: case EPERM: case EROFS: return errors::PermissionDenied(msg);
    case EEXIST: return errors::AlreadyExists(msg);
    case ENOSPC: case EDQUOT: case ENOMEM: case EMFILE: case ENFILE: return errors::ResourceExhausted(msg);
    case EISDIR: case ENAMETOOLONG: case EINVAL: return errors::InvalidArgument(msg);
    case EIO: return errors::DataLoss(msg);
    default: return errors::Unknown(msg);
  }
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

Status File::OpenForRead(const std::string& path, File* out) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return IOError("open", path, errno);
  *out = File(fd, path);
  return Status::OK();
}

Status File::CreateExclusive(const std::string& path, File* out) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return IOError("create", path, errno);
  *out = File(fd, path);
  return Status::OK();
}

Status File::CreateOrTruncate(const std::string& path, File* out) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return IOError("create", path, errno);
  *out = File(fd, path);
  return Status::OK();
}

Status File::Write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return IOError("write", path_, errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

Status File::WriteAt(uint64_t offset, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return IOError("write", path_, errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return Status::OK();
}

Status File::ReadAt(uint64_t offset, void* data, size_t n, size_t* got) const {
  char* p = static_cast<char*>(data);
  *got = 0;
  while (*got < n) {
    const ssize_t r = ::pread(fd_, p + *got, n - *got, static_cast<off_t>(offset + *got));
    if (r < 0) {
      if (errno == EINTR) continue;
      return IOError("read", path_, errno);
    }
    if (r == 0) break;  // end of file
    *got += static_cast<size_t>(r);
  }
  return Status::OK();
}

Status File::Size(uint64_t* size) const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return IOError("stat", path_, errno);
  *size = static_cast<uint64_t>(st.st_size);
  return Status::OK();
}

Status File::Sync() {
  if (::fsync(fd_) != 0) return IOError("fsync", path_, errno);
  return Status::OK();
}

Status File::Close() {
  if (fd_ < 0) return Status::OK();
  const int fd = fd_;
  fd_ = -1;
  // Linux closes the descriptor even when close() fails (EINTR included): never retry.
  if (::close(fd) != 0) return IOError("close", path_, errno);
  return Status::OK();
}

Status SyncDirectory(const std::string& dir) {
  int fd;
  do {
    fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return IOError("open directory", dir, errno);
  File f(fd, dir);
  AF_RETURN_IF_ERROR(f.Sync());
  return f.Close();
}

Status CreateDirectories(const std::string& dir) {
  struct stat st;
  if (dir.empty() || ::stat(dir.c_str(), &st) == 0) {
    if (!dir.empty() && !S_ISDIR(st.st_mode))
      return errors::FailedPrecondition("'", dir, "' exists and is not a directory");
    return Status::OK();
  }
  const std::string parent = Dirname(dir);
  if (parent != dir) AF_RETURN_IF_ERROR(CreateDirectories(parent));
  if (::mkdir(dir.c_str(), 0755) != 0) {
    if (errno != EEXIST) return IOError("create directory", dir, errno);
    // Another process made it first; it must be a directory.
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return errors::FailedPrecondition("'", dir, "' exists and is not a directory");
    return Status::OK();
  }
  return SyncDirectory(parent);
}

Status DeleteFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0) return IOError("delete", path, errno);
  return Status::OK();
}

Status RenameFile(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    return IOError("rename", from, errno).WithContext("renaming it to '" + to + "'");
  return Status::OK();
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Status ReadFileToString(const std::string& path, size_t max_bytes, std::string* out) {
  File f;
  AF_RETURN_IF_ERROR(File::OpenForRead(path, &f));
  uint64_t size = 0;
  AF_RETURN_IF_ERROR(f.Size(&size));
  if (size > max_bytes) return errors::DataLoss("file '", path, "' has ", size, " bytes, more than the ", max_bytes, " expected");
  std::string data(static_cast<size_t>(size), '\0');
  size_t got = 0;
  AF_RETURN_IF_ERROR(f.ReadAt(0, data.data(), data.size(), &got));
  data.resize(got);  // the file may have shrunk since fstat: what was read is what it holds
  *out = std::move(data);
  return Status::OK();
}

std::string Dirname(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (!name.empty() && name.front() == '/') return name;
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

}  // namespace file_io
}  // namespace actorflow
