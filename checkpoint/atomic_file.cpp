#include "actorflow/checkpoint/atomic_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

namespace actorflow {
namespace {

std::string RandomHex16() {
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    const uint64_t now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    std::seed_seq seq{rd(), rd(), static_cast<uint32_t>(::getpid()), static_cast<uint32_t>(now),
                      static_cast<uint32_t>(now >> 32)};
    return std::mt19937_64(seq);
  }());
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

}  // namespace

Status AtomicFileWriter::Create(const std::string& path, std::unique_ptr<AtomicFileWriter>* out) {
  // O_EXCL makes the name ours; a collision of 64 random bits is retried, not trusted.
  Status s;
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::string temp_path = path + ".tmp-" + RandomHex16();
    file_io::File file;
    s = file_io::File::CreateExclusive(temp_path, &file);
    if (s.ok()) {
      out->reset(new AtomicFileWriter(path, std::move(temp_path), std::move(file)));
      return Status::OK();
    }
    if (!errors::IsAlreadyExists(s)) break;
  }
  return s.WithContext("creating a temporary file to write '" + path + "'");
}

AtomicFileWriter::~AtomicFileWriter() {
  if (done_) return;
  file_.Close();
  file_io::DeleteFile(temp_path_);
}

Status AtomicFileWriter::CheckCrash(size_t* n) {
  if (crash_after_ < 0 || written_ + *n <= static_cast<uint64_t>(crash_after_)) {
    written_ += *n;
    return Status::OK();
  }
  done_ = true;  // leave the temporary file behind, as a dead process would
  *n = static_cast<size_t>(static_cast<uint64_t>(crash_after_) - std::min<uint64_t>(written_, crash_after_));
  written_ += *n;
  return errors::Aborted("simulated crash after ", crash_after_, " bytes written to '", temp_path_, "'");
}

Status AtomicFileWriter::Append(const void* data, size_t n) {
  if (!file_.is_open()) return errors::FailedPrecondition("'", temp_path_, "' is no longer open for writing");
  Status crash = CheckCrash(&n);
  AF_RETURN_IF_ERROR(file_.Write(data, n));
  size_ += n;
  if (!crash.ok()) file_.Close();
  return crash;
}

Status AtomicFileWriter::WriteAt(uint64_t offset, const void* data, size_t n) {
  if (!file_.is_open()) return errors::FailedPrecondition("'", temp_path_, "' is no longer open for writing");
  if (offset > size_ || n > size_ - offset)
    return errors::Internal("write of ", n, " bytes at ", offset, " past the end (", size_, ") of '", temp_path_, "'");
  Status crash = CheckCrash(&n);
  AF_RETURN_IF_ERROR(file_.WriteAt(offset, data, n));
  if (!crash.ok()) file_.Close();
  return crash;
}

Status AtomicFileWriter::Commit() {
  if (!file_.is_open()) return errors::FailedPrecondition("'", temp_path_, "' is no longer open for writing");
  AF_RETURN_IF_ERROR(file_.Sync());
  AF_RETURN_IF_ERROR(file_.Close());
  AF_RETURN_IF_ERROR(file_io::RenameFile(temp_path_, path_));
  done_ = true;  // the temporary name is gone: nothing is left to remove
  return file_io::SyncDirectory(file_io::Dirname(path_));
}

Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  std::unique_ptr<AtomicFileWriter> w;
  AF_RETURN_IF_ERROR(AtomicFileWriter::Create(path, &w));
  AF_RETURN_IF_ERROR(w->Append(contents.data(), contents.size()));
  return w->Commit();
}

}  // namespace actorflow
