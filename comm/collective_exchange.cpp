// The data of collectives (comm/collective_executor_impl.hpp): a rank's
// sends and what it does with what arrives, for an all-reduce of two ranks
// (one exchange), of more (a ring), across hosts (a host's tensors to its
// leader, the leaders' ring or exchange, the result back), and a broadcast.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "actorflow/core/allocator.hpp"
#include "actorflow/comm/collective_executor_impl.hpp"

namespace actorflow {

using namespace collective_internal;

namespace {

// The first line where two plans differ, for the mismatch error.
std::string FirstDifference(const std::string& mine, const std::string& theirs, const std::string& peer) {
  std::istringstream a(mine), b(theirs);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ha = static_cast<bool>(std::getline(a, la));
    const bool hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) return "the plans hash differently";
    if (!ha) la = "(nothing)";
    if (!hb) lb = "(nothing)";
    if (!ha || !hb || la != lb)
      return "first difference at line " + std::to_string(line) + ": this task has '" + la + "', " + peer + " has '" +
             lb + "'";
  }
}

// Piece `i` of `t` cut into `n` (comm/collective_layout.hpp), copied into a new tensor.
Status Piece(const Tensor& t, int64_t n, int64_t i, Tensor* out) {
  const auto [offset, len] = CollectivePiece(t.NumElements(), n, i);
  AF_RETURN_IF_ERROR(Tensor::Create(cpu_allocator(), t.dtype(), TensorShape{len}, out));
  const size_t elem = DataTypeSize(t.dtype());
  if (len > 0) std::memcpy(out->raw_data(), static_cast<const char*>(t.raw_data()) + offset * elem, len * elem);
  return Status::OK();
}

// `value` as piece `i` of `out` cut into `n`.
void Place(const Tensor& value, int64_t n, int64_t i, Tensor* out) {
  const int64_t offset = CollectivePiece(out->NumElements(), n, i).first;
  const size_t elem = DataTypeSize(out->dtype());
  if (value.NumElements() > 0)
    std::memcpy(static_cast<char*>(out->raw_data()) + offset * elem, value.raw_data(), value.NumElements() * elem);
}

// The chunks, in order, into `out` (as many elements as they have together).
void ConcatInto(const std::vector<Tensor>& chunks, Tensor* out) {
  char* p = static_cast<char*>(out->raw_data());
  const size_t elem = DataTypeSize(out->dtype());
  for (const Tensor& c : chunks) {
    if (c.NumElements() > 0) std::memcpy(p, c.raw_data(), c.NumElements() * elem);
    p += c.NumElements() * elem;
  }
}

}  // namespace

// --- data ----------------------------------------------------------------
Status CollectiveExecutor::Impl::SendTo(const Group& g, int64_t rank, const Op& op, int64_t phase,
                                        const Tensor& value) {
  CollectiveMessage m = CollectiveMessage::Of(CollectiveMessage::kData, g.key, g.epoch);
  m.instance = op.p.instance_key;
  m.execution = op.execution;
  m.phase = phase;
  m.from = g.rank;
  m.dtype = static_cast<int32_t>(op.input.dtype());
  m.elements = op.input.NumElements();
  m.plan = op.plan_hash;
  return transport->Send(g.members[rank], Channel::kCollective, EncodeCollectiveMessage(m), value);
}

void CollectiveExecutor::Impl::Launch(Group& g, Op& op) {
  if (g.elastic && op.p.kind == CollectiveKind::kReduce && (g.synced_digest != g.digest || g.synced_epoch != g.epoch))
    return Finish(op.id, errors::Aborted(Describe(op), " on ", task, ": elastic group ", g.key, " of ", g.size,
                                         " members (epoch ", g.epoch, ") has not synced since it last formed: ",
                                         "every member runs a CollectiveBcastFirst (BroadcastVariables), then the ",
                                         "step again"),
                  Tensor());
  op.running = true;
  op.execution = g.next_execution[op.p.instance_key]++;
  const int64_t n = g.size, r = g.rank;
  Status s;
  if (n == 1 && op.p.kind == CollectiveKind::kReduce) {  // an elastic group down to this task: its own input
    Tensor out = op.output;
    if (!out.IsInitialized() || out.NumElements() != op.input.NumElements() || out.dtype() != op.input.dtype()) {
      s = Tensor::Create(cpu_allocator(), op.input.dtype(), op.input.shape(), &out);
      if (!s.ok()) return Fail(op.id, s);
    }
    if (op.input.TotalBytes() > 0 && out.raw_data() != op.input.raw_data())
      std::memcpy(out.raw_data(), op.input.raw_data(), op.input.TotalBytes());
    op.p.reduction->Finalize(&out, 1);
    return Finish(op.id, Status::OK(), out);
  }
  if (op.plan_hash != 0 && g.plans_sent.insert(op.plan_hash).second) {
    Tensor text(DT_STRING, TensorShape{});
    text.scalar<std::string>() = *op.p.plan;
    CollectiveMessage plan = CollectiveMessage::Of(CollectiveMessage::kPlan, g.key, g.epoch);
    plan.plan = op.plan_hash;
    plan.from = r;
    const std::string meta = EncodeCollectiveMessage(plan);
    for (int64_t m = 0; m < n && s.ok(); ++m)
      if (m != r) s = transport->Send(g.members[m], Channel::kCollective, meta, text);
  }
  if (op.p.kind == CollectiveKind::kBroadcastFirst) {  // the group's source sends; the others receive its tensor
    op.syncs = true;
    op.epoch = g.epoch;
    op.p.dtype = op.input.dtype();
    op.p.shape = op.input.shape();
    op.p.kind = r == g.source ? CollectiveKind::kBroadcastSend : CollectiveKind::kBroadcastRecv;
  }
  if (s.ok() && op.p.kind == CollectiveKind::kBroadcastSend) {
    for (int64_t m = 0; m < n && s.ok(); ++m)
      if (m != r) s = SendTo(g, m, op, -1, op.input);
    if (s.ok()) return Finish(op.id, Status::OK(), op.input);
  }
  if (s.ok() && op.p.kind == CollectiveKind::kReduce) {
    op.sum = op.input;
    if (g.hierarchical && g.layout.sharded) {
      // Shard i of the input to the host's task i (copied: the input may be
      // shared, and lent tensors must not change until returned); shard
      // local_pos is this task's to sum.
      const int64_t k = static_cast<int64_t>(g.local.size());
      for (int64_t i = 0; i < k && s.ok(); ++i) {
        Tensor shard;
        s = Piece(op.input, k, i, &shard);
        if (!s.ok()) break;
        if (i == g.local_pos) op.sum = std::move(shard);
        else s = SendTo(g, g.local[i], op, kHostReducePhase, shard);
      }
      op.stage = Op::kGather;
      op.local = NextLocal(g, 0);
    } else if (g.hierarchical && g.local_pos != 0) {
      // A task of a host: its tensor (sent as it is, never changed) to the
      // host's leader, then the result back from it.
      op.stage = Op::kShare;
      op.local = 0;
      s = SendTo(g, g.local.front(), op, kHostReducePhase, op.input);
    } else if (g.hierarchical && g.local.size() > 1) {
      op.stage = Op::kGather;  // a leader: its host's tensors first
      op.local = 1;
    } else {
      s = StartRing(g, op);
    }
  }
  if (!s.ok()) return Fail(op.id, errors::Unavailable(Describe(op), " on ", task, ": ", s.message()));
  Progress(g, op.id);
}

Status CollectiveExecutor::Impl::StartRing(Group& g, Op& op) {
  op.stage = Op::kRing;
  op.phase = 0;
  const int64_t n = static_cast<int64_t>(g.ring.size()), pos = g.ring_pos;
  // Two in the ring: one exchange of the whole tensor, each merging into its
  // output: the same bytes as a ring, half its round trips, and no copies.
  if (n == 2) return SendTo(g, g.ring[1 - pos], op, 0, op.sum);
  // The chunks: the sum cut into n nearly equal pieces, copied (the input
  // may be shared; lent chunks must not change until returned).
  op.chunks.resize(n);
  for (int64_t c = 0; c < n; ++c) AF_RETURN_IF_ERROR(Piece(op.sum, n, c, &op.chunks[c]));
  return SendTo(g, g.ring[(pos + 1) % n], op, 0, op.chunks[pos]);
}

void CollectiveExecutor::Impl::Reduced(Group& g, Op& op) {
  Status s;
  if (g.hierarchical && g.layout.sharded) {
    // This task's reduced shard: into the output and to the host's others.
    Tensor shard;
    if (op.chunks.size() == 1) {
      shard = op.chunks.front();
    } else {
      s = Tensor::Create(cpu_allocator(), op.sum.dtype(), TensorShape{op.sum.NumElements()}, &shard);
      if (s.ok()) ConcatInto(op.chunks, &shard);
    }
    op.chunks.clear();
    if (s.ok()) Place(shard, static_cast<int64_t>(g.local.size()), g.local_pos, &op.output);
    for (size_t i = 0; i < g.local.size() && s.ok(); ++i)
      if (static_cast<int64_t>(i) != g.local_pos) s = SendTo(g, g.local[i], op, kHostSharePhase, shard);
    if (s.ok()) {
      op.stage = Op::kShare;
      op.local = NextLocal(g, 0);
      return;  // Progress goes on with the others' shards
    }
  } else {
    ConcatInto(op.chunks, &op.output);  // none after an exchange: the output has it
    op.chunks.clear();
    if (g.hierarchical)  // a leader: the result to its host's tasks
      for (size_t i = 1; i < g.local.size() && s.ok(); ++i) s = SendTo(g, g.local[i], op, kHostSharePhase, op.output);
  }
  if (!s.ok()) return Fail(op.id, errors::Unavailable(Describe(op), " on ", task, ": ", s.message()));
  Finish(op.id, Status::OK(), op.output);
}

int64_t CollectiveExecutor::Impl::NextLocal(const Group& g, int64_t i) const { return i == g.local_pos ? i + 1 : i; }

std::pair<int64_t, int64_t> CollectiveExecutor::Impl::Awaited(const Group& g, const Op& op) const {
  if (op.p.kind == CollectiveKind::kBroadcastRecv) return {-1, -1};  // from whichever rank is the source
  switch (op.stage) {
    case Op::kShare: return {kHostSharePhase, g.local[op.local]};
    case Op::kGather: return {kHostReducePhase, g.local[op.local]};
    case Op::kRing: break;
  }
  const int64_t n = static_cast<int64_t>(g.ring.size());
  return {op.phase, g.ring[(g.ring_pos + n - 1) % n]};
}

std::string CollectiveExecutor::Impl::Waiting(const Group& g, const Op& op) const {
  const auto [phase, from] = Awaited(g, op);
  if (from < 0) return "the broadcast from its source";
  const std::string what = g.layout.sharded ? "shard" : "tensor";
  if (phase == kHostSharePhase) return "the reduced " + what + " of " + g.members[from] + " (a task of its host)";
  if (phase == kHostReducePhase) return "the " + what + " of " + g.members[from] + " to sum (a task of its host)";
  return "phase " + std::to_string(phase) + " from " + g.members[from] + (g.hierarchical ? " (a ring across hosts)" : "");
}

// Takes the messages that have come for `id`, in phase order.
void CollectiveExecutor::Impl::Progress(Group& g, uint64_t id) {
  for (;;) {
    auto oit = ops.find(id);
    if (oit == ops.end() || !oit->second.running) return;
    Op& op = oit->second;
    const int64_t size = g.size;
    const bool bcast = op.p.kind == CollectiveKind::kBroadcastRecv;
    auto m = g.inbox.end();
    if (bcast) {
      m = g.inbox.lower_bound(InboxKey{op.p.instance_key, op.execution, -1, 0});
      if (m != g.inbox.end() &&
          (std::get<0>(m->first) != op.p.instance_key || std::get<1>(m->first) != op.execution ||
           std::get<2>(m->first) != -1))
        m = g.inbox.end();
    } else {
      const auto [phase, from] = Awaited(g, op);
      m = g.inbox.find(InboxKey{op.p.instance_key, op.execution, phase, from});
    }
    if (m == g.inbox.end()) return;
    const int64_t from = std::get<3>(m->first);
    // The same collective on both sides?
    if (m->second.plan != op.plan_hash && m->second.plan != 0 && op.plan_hash != 0) {
      // The sender's plan text went first; should it come later all the
      // same, the refusal names the difference once it is here (bounded by
      // the collective's deadline; the tensor stays in the inbox till then).
      auto text = g.peer_plans.find({from, m->second.plan});
      if (text == g.peer_plans.end()) return;
      return Fail(id, errors::InvalidArgument(Describe(op), ": the bucket plans of ", task, " and ", g.members[from],
                                              " differ (", FirstDifference(*op.p.plan, text->second, g.members[from]),
                                              "): every rank must build the same model and bucket options"));
    }
    Msg msg = std::move(m->second);
    g.inbox.erase(m);
    const DataType want_dtype = bcast ? op.p.dtype : op.input.dtype();
    const int64_t want_elements = bcast ? op.p.shape.num_elements() : op.input.NumElements();
    if (msg.dtype != want_dtype || msg.elements != want_elements) {
      return Fail(id, errors::InvalidArgument(Describe(op), ": this task (", task, ") has ",
                                              DataTypeString(want_dtype), "[", want_elements, " elements], ",
                                              g.members[from], " has ", DataTypeString(msg.dtype), "[",
                                              msg.elements, " elements]: the ranks' graphs differ"));
    }
    if (bcast) {
      Tensor out = msg.value.Reshaped(op.p.shape);
      return Finish(id, Status::OK(), std::move(out));
    }
    if (op.stage != Op::kRing || g.ring.size() == 2) {  // a whole tensor (or shard) from one task
      const int64_t k = static_cast<int64_t>(g.local.size());
      // What it must hold: a shard (sharded: this task's to sum, or the
      // sender's reduced one), or the sum being reduced.
      const int64_t piece = !g.layout.sharded || !g.hierarchical ? -1
                            : op.stage == Op::kShare             ? op.local
                                                                 : g.local_pos;
      const int64_t want = piece < 0 ? op.input.NumElements() : CollectivePiece(op.input.NumElements(), k, piece).second;
      if (msg.value.NumElements() != want || msg.value.dtype() != op.input.dtype())
        return Fail(id, errors::DataLoss(Describe(op), ": a tensor of the wrong size from ", g.members[from]));
      if (op.stage == Op::kShare) {  // the result, or a reduced shard of it
        Place(msg.value, piece < 0 ? 1 : k, piece < 0 ? 0 : piece, &op.output);
        op.local = NextLocal(g, op.local + 1);
        if (piece >= 0 && op.local < k) continue;
        return Finish(id, Status::OK(), op.output);
      }
      if (op.stage == Op::kRing && piece < 0) {  // the exchange of two: straight into the output
        op.p.reduction->Merge(op.sum, msg.value, &op.output);
        op.p.reduction->Finalize(&op.output, size);
        return Reduced(g, op);
      }
      // The sum so far, plus the received (merged into the received tensor:
      // the input may be shared, and is never changed).
      Tensor received = std::move(msg.value);
      if (!received.RefCountIsOne()) received = received.DeepCopy();
      op.p.reduction->Merge(op.sum, received, &received);
      if (op.stage == Op::kRing) {  // a sharded exchange of two
        op.p.reduction->Finalize(&received, size);
        op.chunks = {std::move(received)};
        Reduced(g, op);
        continue;
      }
      op.sum = std::move(received);
      op.local = NextLocal(g, op.local + 1);
      if (op.local < k) continue;
      const Status s = StartRing(g, op);
      if (!s.ok()) return Fail(id, errors::Unavailable(Describe(op), " on ", task, ": ", s.message()));
      continue;
    }
    const int64_t n = static_cast<int64_t>(g.ring.size()), r = g.ring_pos;
    const int64_t phase = op.phase;
    const int64_t last_rs = n - 2;
    int64_t idx;
    if (phase <= last_rs) {
      idx = ((r - phase - 1) % n + n) % n;
      Tensor& own = op.chunks[idx];
      Tensor received = std::move(msg.value);
      if (received.NumElements() != own.NumElements() || received.dtype() != own.dtype())
        return Fail(id, errors::DataLoss(Describe(op), ": a chunk of the wrong size from ", g.members[from]));
      if (!received.RefCountIsOne()) received = received.DeepCopy();
      op.p.reduction->Merge(own, received, &received);
      if (phase == last_rs) op.p.reduction->Finalize(&received, size);
      own = std::move(received);
    } else {
      idx = ((r - (phase - (n - 1))) % n + n) % n;
      if (msg.value.NumElements() != op.chunks[idx].NumElements())
        return Fail(id, errors::DataLoss(Describe(op), ": a chunk of the wrong size from ", g.members[from]));
      op.chunks[idx] = std::move(msg.value);
    }
    op.phase = phase + 1;
    if (op.phase <= 2 * n - 3) {
      const Status s = SendTo(g, g.ring[(r + 1) % n], op, op.phase, op.chunks[idx]);
      if (!s.ok()) return Fail(id, errors::Unavailable(Describe(op), " on ", task, ": ", s.message()));
      continue;
    }
    Reduced(g, op);  // done: the chunks, in order
  }
}

void CollectiveExecutor::Impl::OnData(const std::string& sender, const CollectiveMessage& m, Tensor value) {
  auto git = groups.find(m.group);
  if (git == groups.end()) return;
  Group& g = git->second;
  if (m.epoch != g.epoch || m.from >= g.size || m.from == g.rank) return;  // a past epoch's
  // Elastic: the epoch alone does not say who counted whom: the rank must be its sender's here.
  if (g.elastic && (static_cast<size_t>(m.from) >= g.members.size() || g.members[m.from] != sender)) return;
  Msg msg{static_cast<DataType>(m.dtype), m.elements, m.plan, std::move(value)};
  g.inbox[InboxKey{m.instance, m.execution, m.phase, m.from}] = std::move(msg);
  const std::vector<uint64_t> ids(g.ops.begin(), g.ops.end());
  for (uint64_t id : ids) {
    auto it = ops.find(id);
    if (it != ops.end() && it->second.running && it->second.p.instance_key == m.instance &&
        it->second.execution == m.execution)
      Progress(g, id);
  }
}

void CollectiveExecutor::Impl::OnMessage(const std::string& from, const CollectiveMessage& m, Tensor value) {
  switch (m.kind) {
    case CollectiveMessage::kJoin:
      return OnJoin(m.group, m.size, m.epoch, m.forming, from, m.incarnation, m.plan, m.elastic,
                    static_cast<uint64_t>(m.instance), static_cast<uint64_t>(m.execution));
    case CollectiveMessage::kPlan: {
      auto git = groups.find(m.group);
      if (git == groups.end() || git->second.epoch != m.epoch || !value.IsInitialized() ||
          value.dtype() != DT_STRING || value.NumElements() != 1)
        return;
      Group& g = git->second;
      g.peer_plans[{m.from, m.plan}] = value.scalar<std::string>();
      const std::vector<uint64_t> ids(g.ops.begin(), g.ops.end());  // one may wait for it to say what differs
      for (uint64_t id : ids) Progress(g, id);
      return;
    }
    case CollectiveMessage::kData:
      return OnData(from, m, std::move(value));
  }
}
}  // namespace actorflow
