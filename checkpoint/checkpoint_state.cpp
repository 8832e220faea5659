#include "actorflow/checkpoint/checkpoint_state.hpp"

#include <unistd.h>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>

#include "actorflow/checkpoint/atomic_file.hpp"
#include "actorflow/checkpoint/bundle_format.hpp"
#include "actorflow/core/io/crc32c.hpp"
#include "actorflow/core/io/file_io.hpp"
#include "actorflow/core/proto/checkpoint_state.pb.h"
#include "actorflow/checkpoint/tf_bundle_format.hpp"

namespace actorflow {
namespace {

// TensorFlow's text format, with two comment lines TensorFlow skips: the
// first says actorflow wrote the file, the last is the CRC32C of every byte
// before it (required in a file whose first line is ours).
constexpr char kOurFirstLine[] = "# actorflow checkpoint state: the last line checks the lines above";
constexpr char kCrcComment[] = "# crc32c ";
// The older actorflow format (read, no longer written).
constexpr char kFirstLine[] = "actorflow checkpoint state 1";
constexpr char kVersionPrefix[] = "actorflow checkpoint state ";
constexpr char kLatest[] = "latest ";
constexpr char kKept[] = "kept ";
constexpr char kCrc[] = "crc32c ";
// A state file names checkpoints, not data: anything larger is not one.
constexpr size_t kMaxStateFileBytes = 16 << 20;

std::string StatePath(const std::string& dir) { return file_io::JoinPath(dir, kCheckpointStateFile); }

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

/// How `prefix` is written in the state file of `dir`: relative to `dir` when
/// inside it, else absolute.
Status StoredForm(const std::string& dir, const std::string& prefix, std::string* out) {
  if (prefix.empty()) return errors::InvalidArgument("checkpoint state of '", dir, "': empty checkpoint prefix");
  if (prefix.find_first_of("\r\n") != std::string::npos)
    return errors::InvalidArgument("checkpoint state of '", dir, "': checkpoint prefix '", prefix,
                                   "' holds a line break");
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  if (d != "." && prefix.size() > d.size() + 1 && prefix.compare(0, d.size(), d) == 0 &&
      (prefix[d.size()] == '/' || d == "/")) {
    *out = prefix.substr(d == "/" ? 1 : d.size() + 1);
    return Status::OK();
  }
  if (prefix.front() == '/') {
    *out = prefix;
    return Status::OK();
  }
  if (d == ".") {  // relative prefixes are inside the working directory
    *out = prefix;
    return Status::OK();
  }
  char cwd[4096];
  if (::getcwd(cwd, sizeof(cwd)) == nullptr) return file_io::IOError("get the working directory for", prefix, errno);
  *out = file_io::JoinPath(cwd, prefix);
  return Status::OK();
}

std::string CrcLine(const std::string& body, const char* prefix = kCrc) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%s%08x\n", prefix, crc32c::Value(body.data(), body.size()));
  return buf;
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class LineErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (first.empty()) first = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " + message;
  }
  std::string first;
};

/// Parses a state file in TensorFlow's text format (stored forms).
Status ParseTextState(const std::string& path, const std::string& text, CheckpointState* state) {
  if (text.rfind(kOurFirstLine, 0) == 0) {
    // Ours: the last line checks the rest.
    const size_t last_break = text.size() < 2 ? std::string::npos : text.rfind('\n', text.size() - 2);
    const size_t crc_start = last_break == std::string::npos ? 0 : last_break + 1;
    if (text.back() != '\n' || text.compare(crc_start, std::string::npos, CrcLine(text.substr(0, crc_start), kCrcComment)) != 0)
      return errors::DataLoss("checkpoint state file '", path,
                              "' is truncated or damaged: its last line is not the checksum of the lines above");
  }
  proto::CheckpointState p;
  LineErrors errs;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errs);
  if (!parser.ParseFromString(text, &p))
    return errors::DataLoss("checkpoint state file '", path, "' is corrupt: ", errs.first);
  if (p.model_checkpoint_path().empty())
    return errors::DataLoss("checkpoint state file '", path, "' is corrupt: no model_checkpoint_path");
  CheckpointState s;
  s.latest = p.model_checkpoint_path();
  s.all.assign(p.all_model_checkpoint_paths().begin(), p.all_model_checkpoint_paths().end());
  if (p.all_model_checkpoint_timestamps_size() == p.all_model_checkpoint_paths_size())
    s.timestamps.assign(p.all_model_checkpoint_timestamps().begin(), p.all_model_checkpoint_timestamps().end());
  s.last_preserved_timestamp = p.last_preserved_timestamp();
  // As TensorFlow's readers do: the latest is kept even when the list misses it.
  if (std::find(s.all.begin(), s.all.end(), s.latest) == s.all.end()) {
    s.all.push_back(s.latest);
    if (!s.timestamps.empty()) s.timestamps.push_back(NowSeconds());
  }
  *state = std::move(s);
  return Status::OK();
}

/// Parses the text of a state file in the older actorflow format (stored forms).
Status ParseLegacyState(const std::string& path, const std::string& text, CheckpointState* state) {
  auto corrupt = [&](int line, const auto&... what) {
    return errors::DataLoss("checkpoint state file '", path, "' is corrupt: line ", line, ": ", what...);
  };
  if (text.empty() || text.back() != '\n')
    return errors::DataLoss("checkpoint state file '", path, "' is truncated: it does not end with a line break");
  // The last line, "crc32c <8 hex digits>", covers every byte before it.
  const size_t last_break = text.size() < 2 ? std::string::npos : text.rfind('\n', text.size() - 2);
  const size_t crc_start = last_break == std::string::npos ? 0 : last_break + 1;
  const std::string body = text.substr(0, crc_start);
  const std::string crc_line = text.substr(crc_start);
  const std::string expected = CrcLine(body);
  const int num_lines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  if (crc_line != expected) {
    if (!StartsWith(crc_line, kCrc))
      return corrupt(num_lines, "the last line is not the checksum line (the file is truncated or damaged)");
    const size_t digits = sizeof(kCrc) - 1;
    return corrupt(num_lines, "checksum mismatch: the lines above give ", expected.substr(digits, 8),
                   ", the file says '", crc_line.substr(digits, crc_line.size() - digits - 1), "'");
  }
  CheckpointState s;
  bool have_latest = false;
  size_t pos = 0;
  for (int line = 1; pos < body.size(); ++line) {
    const size_t eol = body.find('\n', pos);
    const std::string l = body.substr(pos, eol - pos);
    pos = eol + 1;
    if (line == 1) {
      if (l == kFirstLine) continue;
      if (StartsWith(l, kVersionPrefix))
        return errors::Unimplemented("checkpoint state file '", path, "' has format '", l, "'; this reader reads '",
                                     kFirstLine, "'");
      return corrupt(line, "expected '", kFirstLine, "'");
    }
    if (StartsWith(l, kLatest) && l.size() > sizeof(kLatest) - 1) {
      if (have_latest) return corrupt(line, "a second 'latest' line");
      s.latest = l.substr(sizeof(kLatest) - 1);
      have_latest = true;
    } else if (StartsWith(l, kKept) && l.size() > sizeof(kKept) - 1) {
      s.all.push_back(l.substr(sizeof(kKept) - 1));
    } else {
      return corrupt(line, "unexpected line '", l.substr(0, 80), "'");
    }
  }
  if (!have_latest) return errors::DataLoss("checkpoint state file '", path, "' is corrupt: no 'latest' line");
  if (std::find(s.all.begin(), s.all.end(), s.latest) == s.all.end())
    return errors::DataLoss("checkpoint state file '", path, "' is corrupt: latest checkpoint '", s.latest,
                            "' is not among the kept ones");
  *state = std::move(s);
  return Status::OK();
}

/// The state of `dir` in stored forms; an empty state when there is no file.
Status ReadStoredState(const std::string& dir, CheckpointState* state, bool* exists) {
  const std::string path = StatePath(dir);
  std::string text;
  Status s = file_io::ReadFileToString(path, kMaxStateFileBytes, &text);
  *exists = !errors::IsNotFound(s);
  if (!*exists) {
    *state = CheckpointState();
    return Status::OK();
  }
  AF_RETURN_IF_ERROR(s);
  if (text.rfind(kVersionPrefix, 0) == 0) return ParseLegacyState(path, text, state);
  return ParseTextState(path, text, state);
}

/// Writes the state file in TensorFlow's text format. `timestamps`, when as
/// many as `all`, are kept; missing ones are now.
Status WriteStoredState(const std::string& dir, const std::string& latest, const std::vector<std::string>& all,
                        const std::vector<double>& timestamps = {}, double last_preserved = 0) {
  proto::CheckpointState p;
  p.set_model_checkpoint_path(latest);
  const double now = NowSeconds();
  for (size_t i = 0; i < all.size(); ++i) {
    p.add_all_model_checkpoint_paths(all[i]);
    p.add_all_model_checkpoint_timestamps(timestamps.size() == all.size() ? timestamps[i] : now);
  }
  if (last_preserved > 0) p.set_last_preserved_timestamp(last_preserved);
  std::string body;
  if (!google::protobuf::TextFormat::PrintToString(p, &body))
    return errors::Internal("cannot print the checkpoint state of '", dir, "'");
  std::string text = std::string(kOurFirstLine) + "\n" + body;
  text += CrcLine(text, kCrcComment);
  return WriteFileAtomically(StatePath(dir), text).WithContext("writing the checkpoint state of '" + dir + "'");
}

}  // namespace

Status WriteCheckpointState(const std::string& dir, const std::string& latest, const std::vector<std::string>& all) {
  std::string stored_latest;
  AF_RETURN_IF_ERROR(StoredForm(dir, latest, &stored_latest));
  std::vector<std::string> stored;
  std::set<std::string> seen;
  for (const auto& p : all) {
    std::string sp;
    AF_RETURN_IF_ERROR(StoredForm(dir, p, &sp));
    if (!seen.insert(sp).second)
      return errors::InvalidArgument("checkpoint state of '", dir, "': checkpoint '", p, "' is listed twice");
    stored.push_back(std::move(sp));
  }
  if (!seen.count(stored_latest)) stored.push_back(stored_latest);
  return WriteStoredState(dir, stored_latest, stored);
}

Status ReadCheckpointState(const std::string& dir, CheckpointState* state) {
  CheckpointState s;
  bool exists = false;
  AF_RETURN_IF_ERROR(ReadStoredState(dir, &s, &exists));
  if (!exists) return errors::NotFound("no checkpoint state file '", StatePath(dir), "'");
  s.latest = file_io::JoinPath(dir, s.latest);
  for (auto& p : s.all) p = file_io::JoinPath(dir, p);
  *state = std::move(s);
  return Status::OK();
}

Status LatestCheckpoint(const std::string& dir, std::string* prefix) {
  CheckpointState s;
  AF_RETURN_IF_ERROR(ReadCheckpointState(dir, &s));
  if (!CheckpointExists(s.latest))
    return errors::NotFound("checkpoint state file '", StatePath(dir), "' names checkpoint '", s.latest, "', but neither '",
                            tf_bundle::IndexFileName(s.latest), "' nor '", bundle::BundleFileName(s.latest),
                            "' exists");
  *prefix = s.latest;
  return Status::OK();
}

Status RecordCheckpoint(const std::string& dir, const std::string& prefix, int max_to_keep,
                        std::vector<std::string>* deleted) {
  if (deleted) deleted->clear();
  std::string stored_prefix;
  AF_RETURN_IF_ERROR(StoredForm(dir, prefix, &stored_prefix));
  CheckpointState s;
  bool exists = false;
  AF_RETURN_IF_ERROR(ReadStoredState(dir, &s, &exists));
  // Saving a prefix again makes it the newest, not a second entry.
  if (s.timestamps.size() != s.all.size()) s.timestamps.assign(s.all.size(), NowSeconds());
  for (size_t i = s.all.size(); i-- > 0;) {
    if (s.all[i] != stored_prefix) continue;
    s.all.erase(s.all.begin() + static_cast<std::ptrdiff_t>(i));
    s.timestamps.erase(s.timestamps.begin() + static_cast<std::ptrdiff_t>(i));
  }
  s.all.push_back(stored_prefix);
  s.timestamps.push_back(NowSeconds());
  std::vector<std::string> dropped;
  if (max_to_keep > 0 && s.all.size() > static_cast<size_t>(max_to_keep)) {
    const auto n = static_cast<std::ptrdiff_t>(s.all.size() - static_cast<size_t>(max_to_keep));
    dropped.assign(s.all.begin(), s.all.begin() + n);
    s.all.erase(s.all.begin(), s.all.begin() + n);
    s.timestamps.erase(s.timestamps.begin(), s.timestamps.begin() + n);
  }
  AF_RETURN_IF_ERROR(WriteStoredState(dir, stored_prefix, s.all, s.timestamps, s.last_preserved_timestamp));
  // A crash from here on leaves bundles nothing names, never a name without a bundle.
  Status result;
  for (const auto& p : dropped) {
    const std::string full = file_io::JoinPath(dir, p);
    Status del = DeleteCheckpoint(full);
    if (del.ok() && deleted) deleted->push_back(full);
    if (!del.ok() && !errors::IsNotFound(del)) result.Update(del);
  }
  return result;
}

bool CheckpointExists(const std::string& prefix) {
  return file_io::FileExists(tf_bundle::IndexFileName(prefix)) || file_io::FileExists(bundle::BundleFileName(prefix));
}

Status DeleteCheckpoint(const std::string& prefix) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& f : {tf_bundle::IndexFileName(prefix), bundle::BundleFileName(prefix)})
    if (file_io::FileExists(f)) files.push_back(f);
  // The data files, whatever their number: the index may be damaged.
  const std::string dir = file_io::Dirname(prefix);
  const std::string base = prefix.substr(prefix.find_last_of('/') == std::string::npos ? 0 : prefix.find_last_of('/') + 1);
  static const std::regex kDataSuffix(R"(\.data-\d{5}-of-\d{5})");
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > base.size() && name.compare(0, base.size(), base) == 0 &&
        std::regex_match(name.substr(base.size()), kDataSuffix))
      files.push_back(file_io::JoinPath(dir, name));
  }
  if (files.empty())
    return errors::NotFound("no checkpoint '", prefix, "' to delete: neither '", tf_bundle::IndexFileName(prefix),
                            "' nor '", bundle::BundleFileName(prefix), "' exists");
  // The index first: a checkpoint without its index is no checkpoint.
  Status result;
  for (const auto& f : files) {
    Status s = file_io::DeleteFile(f);
    if (!errors::IsNotFound(s)) result.Update(s);
  }
  return result;
}

}  // namespace actorflow
