// The header of every message of the collective executor
// (comm/collective_executor.hpp): the meta bytes of a message on the tensor
// transport's collective channel (comm/tensor_transport.hpp), a fixed-width
// binary layout (core/io/fixed_width.hpp, little endian), 88 bytes:
//
//   u8 kind | u8 forming | u16 flags | i32 dtype | i64 group | i64 size | u64 epoch | u64 incarnation
//   | u64 plan | i64 from | i64 instance | i64 execution | i64 phase | i64 elements
//
// kind 1 JOIN (no tensor): the sender joins `group` (of `size` members) at
//        `epoch`; `forming` 1: it still waits for JOINs (a formed member
//        answers it); `incarnation`: the sender's; `plan`: the hash of the
//        layout it derived from the members' hosts (0: flat;
//        comm/collective_layout.hpp); flags bit 0: an elastic group
//        (group_size 0: the job's live tasks), whose `size` is how many
//        members the sender counts and `instance` a digest of them (their
//        names and incarnations): ranks form only when their digests agree,
//        and `execution` the epoch of the sender's last sync (0: none; the
//        source of the group's next sync is a member that synced last)
// kind 2 PLAN: a bucket plan's text (a string scalar) of hash `plan`, at
//        `epoch`, from rank `from`
// kind 3 DATA: a chunk (phase >= 0) or a broadcast (phase -1) of
//        (`instance`, `execution`) at `epoch`, from rank `from`, of an op
//        whose input is dtype[elements] with bucket-plan hash `plan`
// Fields a kind does not use are zero. Decode checks the length, the kind,
// the flags (bit 0 only, on a JOIN only) and each field's range (a malformed
// header is DataLoss).
#pragma once

#include <cstdint>
#include <string>

#include "actorflow/core/status.hpp"

namespace actorflow {

struct CollectiveMessage {
  enum Kind : uint8_t { kJoin = 1, kPlan = 2, kData = 3 };
  static constexpr size_t kBytes = 88;

  /// A header of `kind` for `group` at `epoch`, its other fields zero.
  static CollectiveMessage Of(Kind kind, int64_t group, uint64_t epoch) {
    CollectiveMessage m;
    m.kind = kind;
    m.group = group;
    m.epoch = epoch;
    return m;
  }

  Kind kind = kJoin;
  bool forming = false;
  bool elastic = false;  // a JOIN's flags bit 0
  int32_t dtype = 0;
  int64_t group = 0;
  int64_t size = 0;
  uint64_t epoch = 0;
  uint64_t incarnation = 0;
  uint64_t plan = 0;
  int64_t from = 0;
  int64_t instance = 0;
  int64_t execution = 0;
  int64_t phase = 0;
  int64_t elements = 0;
};

std::string EncodeCollectiveMessage(const CollectiveMessage& m);
Status DecodeCollectiveMessage(const std::string& meta, CollectiveMessage* out);

}  // namespace actorflow
