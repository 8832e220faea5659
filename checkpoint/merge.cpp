#include "actorflow/checkpoint/merge.hpp"

#include <filesystem>
#include <map>

#include "actorflow/checkpoint/atomic_file.hpp"
#include "actorflow/checkpoint/sstable.hpp"
#include "actorflow/checkpoint/tf_bundle_format.hpp"
#include "actorflow/core/io/file_io.hpp"
#include "actorflow/core/proto/tensor_bundle.pb.h"

namespace actorflow {
namespace {

struct Input {
  std::string prefix;
  int num_shards = 0;
  int first_shard = 0;  // its shard 0's number in the destination
  sstable::Entries entries;  // without the header
};

// Max bytes of an index read here (as BundleReader's default).
constexpr size_t kMaxIndexBytes = size_t{256} << 20;

}  // namespace

Status MergeCheckpoints(const std::vector<std::string>& prefixes, const std::string& destination,
                        bool delete_old_dirs, bool allow_missing_files) {
  if (destination.empty()) return errors::InvalidArgument("MergeCheckpoints: empty destination prefix");
  // Read and check every input first.
  std::vector<Input> inputs;
  int total_shards = 0;
  for (const auto& prefix : prefixes) {
    const std::string path = tf_bundle::IndexFileName(prefix);
    if (allow_missing_files && !file_io::FileExists(path)) continue;
    std::string bytes;
    AF_RETURN_IF_ERROR(file_io::ReadFileToString(path, kMaxIndexBytes, &bytes)
                           .WithContext("merging checkpoints into '" + destination + "'"));
    Input in;
    in.prefix = prefix;
    AF_RETURN_IF_ERROR(sstable::Parse(path, bytes.data(), bytes.size(), &in.entries));
    if (in.entries.empty() || !in.entries[0].first.empty())
      return errors::DataLoss("checkpoint index '", path, "' is corrupt: its first entry is not the header");
    AF_RETURN_IF_ERROR(tf_bundle::DecodeHeader(path, in.entries[0].second, &in.num_shards));
    in.entries.erase(in.entries.begin());
    for (int shard = 0; shard < in.num_shards; ++shard) {
      const std::string data = tf_bundle::DataFileName(prefix, shard, in.num_shards);
      if (!file_io::FileExists(data))
        return errors::NotFound("checkpoint '", path, "' lacks its data file '", data, "'");
    }
    in.first_shard = total_shards;
    total_shards += in.num_shards;
    if (total_shards > tf_bundle::kMaxShards)
      return errors::InvalidArgument("merging more than ", tf_bundle::kMaxShards, " data files into '", destination, "'");
    inputs.push_back(std::move(in));
  }
  if (inputs.empty())
    return errors::InvalidArgument("MergeCheckpoints into '", destination, "': none of the ", prefixes.size(),
                                   " input checkpoints exists");
  // The merged entries, with their shards renumbered.
  std::map<std::string, proto::BundleEntryProto> merged;
  for (const auto& in : inputs) {
    for (const auto& [key, value] : in.entries) {
      proto::BundleEntryProto e;
      if (!e.ParseFromString(value))
        return errors::DataLoss("checkpoint index '", tf_bundle::IndexFileName(in.prefix), "' is corrupt: the entry of '",
                                key, "' does not parse");
      if (e.slices_size() == 0 && (e.shard_id() < 0 || e.shard_id() >= in.num_shards))
        return errors::DataLoss("checkpoint index '", tf_bundle::IndexFileName(in.prefix), "' is corrupt: tensor '", key,
                                "' names data file ", e.shard_id(), " of ", in.num_shards);
      e.set_shard_id(e.shard_id() + in.first_shard);
      auto it = merged.find(key);
      if (it == merged.end()) {
        merged.emplace(key, std::move(e));
      } else if (it->second.slices_size() > 0 && e.slices_size() > 0) {
        for (const auto& slice : e.slices()) *it->second.add_slices() = slice;
      } else {
        return errors::InvalidArgument("merging checkpoints into '", destination, "': tensor '", key,
                                       "' is in two of them (the second: '", in.prefix, "')");
      }
    }
  }
  AF_RETURN_IF_ERROR(file_io::CreateDirectories(file_io::Dirname(destination)));
  // Move the data, then write the index that names it, then drop the inputs' indexes.
  for (const auto& in : inputs)
    for (int shard = 0; shard < in.num_shards; ++shard) {
      const std::string from = tf_bundle::DataFileName(in.prefix, shard, in.num_shards);
      const std::string to = tf_bundle::DataFileName(destination, in.first_shard + shard, total_shards);
      if (from != to) AF_RETURN_IF_ERROR(file_io::RenameFile(from, to));
    }
  sstable::Entries table;
  table.emplace_back("", tf_bundle::EncodeHeader(total_shards));
  for (const auto& [key, e] : merged) table.emplace_back(key, e.SerializeAsString());
  std::string index;
  AF_RETURN_IF_ERROR(sstable::Build(table, &index));
  AF_RETURN_IF_ERROR(WriteFileAtomically(tf_bundle::IndexFileName(destination), index));
  const std::string dest_dir = file_io::Dirname(destination);
  for (const auto& in : inputs) {
    if (in.prefix == destination) continue;
    AF_RETURN_IF_ERROR(file_io::DeleteFile(tf_bundle::IndexFileName(in.prefix)));
    const std::string dir = file_io::Dirname(in.prefix);
    if (delete_old_dirs && dir != dest_dir) {
      std::error_code ec;
      std::filesystem::remove(dir, ec);  // only when empty: what else is there is not ours
    }
  }
  return Status::OK();
}

}  // namespace actorflow
