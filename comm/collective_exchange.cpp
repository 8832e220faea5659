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
  op.running = true;
  op.execution = g.next_execution[op.p.instance_key]++;
  const int64_t n = g.size, r = g.rank;
  Status s;
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
  if (s.ok() && op.p.kind == CollectiveKind::kBroadcastSend) {
    for (int64_t m = 0; m < n && s.ok(); ++m)
      if (m != r) s = SendTo(g, m, op, -1, op.input);
    if (s.ok()) return Finish(op.id, Status::OK(), op.input);
  }
  if (s.ok() && op.p.kind == CollectiveKind::kReduce) {
    op.sum = op.input;
    if (g.hierarchical && g.local.front() != r) {
      // A task of a host: its tensor (sent as it is, never changed) to the
      // host's leader, then the result back from it.
      op.stage = Op::kShare;
      s = SendTo(g, g.local.front(), op, kToLeaderPhase, op.input);
    } else if (g.hierarchical && g.local.size() > 1) {
      op.stage = Op::kGather;  // a leader: its host's tensors first
      op.gathered = 1;
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
  const int64_t total = op.sum.NumElements();
  const size_t elem = DataTypeSize(op.sum.dtype());
  int64_t offset = 0;
  op.chunks.resize(n);
  for (int64_t c = 0; c < n; ++c) {
    const int64_t len = total / n + (c < total % n ? 1 : 0);
    Tensor t;
    AF_RETURN_IF_ERROR(Tensor::Create(cpu_allocator(), op.sum.dtype(), TensorShape{len}, &t));
    if (len > 0) std::memcpy(t.raw_data(), static_cast<const char*>(op.sum.raw_data()) + offset * elem, len * elem);
    op.chunks[c] = std::move(t);
    offset += len;
  }
  return SendTo(g, g.ring[(pos + 1) % n], op, 0, op.chunks[pos]);
}

void CollectiveExecutor::Impl::Reduced(Group& g, Op& op) {
  if (g.hierarchical)  // a leader: the result to its host's tasks
    for (size_t i = 1; i < g.local.size(); ++i) {
      const Status s = SendTo(g, g.local[i], op, kFromLeaderPhase, op.output);
      if (!s.ok()) return Fail(op.id, errors::Unavailable(Describe(op), " on ", task, ": ", s.message()));
    }
  Finish(op.id, Status::OK(), op.output);
}

std::pair<int64_t, int64_t> CollectiveExecutor::Impl::Awaited(const Group& g, const Op& op) const {
  if (op.p.kind == CollectiveKind::kBroadcastRecv) return {-1, -1};  // from whichever rank is the source
  switch (op.stage) {
    case Op::kShare: return {kFromLeaderPhase, g.local.front()};
    case Op::kGather: return {kToLeaderPhase, g.local[op.gathered]};
    case Op::kRing: break;
  }
  const int64_t n = static_cast<int64_t>(g.ring.size());
  return {op.phase, g.ring[(g.ring_pos + n - 1) % n]};
}

std::string CollectiveExecutor::Impl::Waiting(const Group& g, const Op& op) const {
  const auto [phase, from] = Awaited(g, op);
  if (from < 0) return "the broadcast from its source";
  if (phase == kFromLeaderPhase) return "the result from its host's leader " + g.members[from];
  if (phase == kToLeaderPhase) return "the tensor of " + g.members[from] + " (a task of its host)";
  return "phase " + std::to_string(phase) + " from " + g.members[from] + (g.hierarchical ? " (the hosts' ring)" : "");
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
    Msg msg = std::move(m->second);
    g.inbox.erase(m);
    // The same collective on both sides?
    const DataType want_dtype = bcast ? op.p.dtype : op.input.dtype();
    const int64_t want_elements = bcast ? op.p.shape.num_elements() : op.input.NumElements();
    if (msg.plan != op.plan_hash && msg.plan != 0 && op.plan_hash != 0) {
      auto text = g.peer_plans.find({from, msg.plan});
      return Fail(id, errors::InvalidArgument(
                          Describe(op), ": the bucket plans of ", task, " and ", g.members[from], " differ (",
                          text == g.peer_plans.end() ? std::string("hashes differ")
                                                     : FirstDifference(*op.p.plan, text->second, g.members[from]),
                          "): every rank must build the same model and bucket options"));
    }
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
    if (op.stage != Op::kRing || g.ring.size() == 2) {  // a whole tensor: a host's, a leader's, the other leader's
      const Tensor& other = msg.value;
      if (other.NumElements() != op.input.NumElements() || other.dtype() != op.input.dtype())
        return Fail(id, errors::DataLoss(Describe(op), ": a tensor of the wrong size from ", g.members[from]));
      if (op.stage == Op::kShare) {
        if (other.NumElements() > 0)
          std::memcpy(op.output.raw_data(), other.raw_data(), other.NumElements() * DataTypeSize(other.dtype()));
        return Finish(id, Status::OK(), op.output);
      }
      if (op.stage == Op::kRing) {
        op.p.reduction->Merge(op.sum, other, &op.output);
        op.p.reduction->Finalize(&op.output, size);
        return Reduced(g, op);
      }
      // kGather: the host's sum so far, plus this task's (merged into the
      // received tensor: the input may be shared, and is never changed).
      Tensor received = std::move(msg.value);
      if (!received.RefCountIsOne()) received = received.DeepCopy();
      op.p.reduction->Merge(op.sum, received, &received);
      op.sum = std::move(received);
      if (++op.gathered < g.local.size()) continue;
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
    // Done: the chunks, in order, into the output.
    char* out = static_cast<char*>(op.output.raw_data());
    const size_t elem = DataTypeSize(op.output.dtype());
    for (const Tensor& c : op.chunks) {
      if (c.NumElements() > 0) std::memcpy(out, c.raw_data(), c.NumElements() * elem);
      out += c.NumElements() * elem;
    }
    op.chunks.clear();
    return Reduced(g, op);
  }
}

void CollectiveExecutor::Impl::OnData(const CollectiveMessage& m, Tensor value) {
  auto git = groups.find(m.group);
  if (git == groups.end()) return;
  Group& g = git->second;
  if (m.epoch != g.epoch || m.from >= g.size || m.from == g.rank) return;  // a past epoch's
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
      return OnJoin(m.group, m.size, m.epoch, m.forming, from, m.incarnation, m.plan);
    case CollectiveMessage::kPlan: {
      auto git = groups.find(m.group);
      if (git == groups.end() || git->second.epoch != m.epoch || !value.IsInitialized() ||
          value.dtype() != DT_STRING || value.NumElements() != 1)
        return;
      git->second.peer_plans[{m.from, m.plan}] = value.scalar<std::string>();
      return;
    }
    case CollectiveMessage::kData:
      return OnData(m, std::move(value));
  }
}
}  // namespace actorflow
