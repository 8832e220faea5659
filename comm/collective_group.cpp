// The groups of the collective executor (comm/collective_executor_impl.hpp):
// how a group forms from the membership (its members, ranks and layout; the
// JOINs every member sends, at an epoch; an elastic group's count and its
// digest), forms again when a member fails, restarts or is rejected, and
// what that does to the collectives begun before.
#include <algorithm>

#include "actorflow/comm/collective_executor_impl.hpp"

namespace actorflow {

using namespace collective_internal;

// --- membership ----------------------------------------------------------
// A group that had formed and forms again (a member's collective failed, or
// it restarted) fails every collective begun before: on every surviving rank
// the step fails alike (Aborted), so every supervisor recovers, instead of
// one rank's step waiting for a partner that went on to something else. A
// rank forming for the first time (a restarted one) keeps what waits.
// `new_members_only`: the same epoch, the members looked at again.
void CollectiveExecutor::Impl::Form(Group& g, uint64_t epoch, bool new_members_only) {
  if (!new_members_only)
    FailGroup(g, errors::Aborted("collective group ", g.key, " re-formed at epoch ", epoch, " (a member's ",
                                 "collective failed or it restarted); the step may be run again"),
              /*only_running=*/!g.formed_once);
  std::vector<std::string> members{task};
  std::map<std::string, std::string> hosts{{task, SelfHost()}};
  std::map<std::string, uint64_t> incarnations{{task, transport->incarnation()}};
  for (const auto& t : membership->Tasks())
    if (t.name != task && JobOf(t.name) == job && !t.host.empty() && t.port != 0 &&
        !(g.elastic && t.liveness == TaskRecord::Liveness::kFailed)) {  // an elastic group goes on without it
      members.push_back(t.name);
      hosts[t.name] = t.host;
      incarnations[t.name] = t.incarnation;
    }
  std::sort(members.begin(), members.end());
  g.grow_pending = false;  // counted now
  uint64_t digest = 0;
  if (g.elastic) {  // a digest of who, which the others' must match
    uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over "name#incarnation;" of each, in order
    for (const auto& m : members)
      for (char c : m + "#" + std::to_string(incarnations[m]) + ";") h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
    digest = h;
  }
  // An elastic group counted again at the same epoch with the same members
  // keeps what its peers sent already (they may have formed first).
  const bool same = g.elastic && new_members_only && epoch == g.epoch && digest == g.digest && g.digest != 0;
  g.epoch = epoch;
  if (!same) {
    g.inbox.clear();
    g.next_execution.clear();
    g.peer_plans.clear();
    g.plans_sent.clear();
  }
  if (g.elastic && static_cast<int64_t>(members.size()) < options.elastic_min_members) {
    std::string list;
    for (const auto& m : members) list += " " + m;
    g.state = Group::kBroken;
    g.broken = errors::Unavailable("elastic collective group ", g.key, " on ", task, ": ", members.size(),
                                   " live tasks of job '", job, "' here (", list.substr(1), "), fewer than its quorum ",
                                   options.elastic_min_members, " (ACTORFLOW_MIN_WORKERS): cut off from the others, ",
                                   "or they are gone");
    FailGroup(g, g.broken, false);
    return;
  }
  if (g.elastic) {  // as many as there are
    g.size = static_cast<int64_t>(members.size());
    g.digest = digest;
  }
  if (static_cast<int64_t>(members.size()) != g.size) {
    std::string list;
    for (const auto& m : members) list += " " + m;
    if (static_cast<int64_t>(members.size()) < g.size) {
      // Not every member found yet (this process's sessions find the tasks):
      // wait for them, within the collectives' deadlines.
      g.state = Group::kAwaiting;
      g.known = "group_size " + std::to_string(g.size) + ", but job '" + job + "' has " +
                std::to_string(members.size()) + " tasks this process knows:" + list;
      resend_at = std::min(resend_at, Clock::now() + kResend);
      return;
    }
    g.state = Group::kBroken;
    g.broken = errors::InvalidArgument("collective group ", g.key, " has group_size ", g.size, ", but job '", job,
                                       "' has ", members.size(), " tasks this process knows:", list,
                                       " (a group is every task of the job; a session finds them)");
    FailGroup(g, g.broken, false);
    return;
  }
  g.members = std::move(members);
  g.rank = std::find(g.members.begin(), g.members.end(), task) - g.members.begin();
  std::vector<std::string> member_hosts;
  for (const auto& m : g.members) member_hosts.push_back(hosts[m]);
  g.layout = PlanCollectiveLayout(member_hosts, options.algorithm);
  g.state = Group::kForming;
  g.incarnations.clear();
  for (const auto& m : g.members) {
    if (m == task) continue;
    if (!SendJoin(g, m, true)) return;
  }
  resend_at = Clock::now() + kResend;
  MaybeFormed(g);
}

bool CollectiveExecutor::Impl::SendJoin(Group& g, const std::string& to, bool forming) {
  CollectiveMessage m = CollectiveMessage::Of(CollectiveMessage::kJoin, g.key, g.epoch);
  m.size = g.size;
  m.forming = forming;
  m.incarnation = transport->incarnation();
  m.plan = g.layout.hash;
  m.elastic = g.elastic;
  if (g.elastic) {
    m.instance = static_cast<int64_t>(g.digest);
    m.execution = static_cast<int64_t>(g.synced_epoch);
  }
  const Status s = transport->SendMessage(to, Channel::kCollective, EncodeCollectiveMessage(m));
  if (s.ok()) return true;
  g.state = Group::kBroken;
  g.broken = errors::Unavailable("collective group ", g.key, ": cannot reach ", to, ": ", s.message());
  FailGroup(g, g.broken, false);
  return false;
}

// JOINs go again to whoever has not answered (one sent before the peer
// knew this task was dropped by its transport).
void CollectiveExecutor::Impl::ResendJoins() {
  bool forming = false;
  for (auto& [key, g] : groups) {
    if (g.state == Group::kAwaiting && !g.ops.empty()) {
      Form(g, g.epoch, /*new_members_only=*/true);
      forming = forming || g.state == Group::kAwaiting || g.state == Group::kForming;
      continue;
    }
    if (g.state != Group::kForming) continue;
    forming = true;
    if (g.elastic && g.ops.empty()) continue;  // nothing waits for it: no JOIN storm
    if (g.elastic) {  // who is alive may have changed here since (a failure seen late): count again, JOIN again
      Form(g, g.epoch, /*new_members_only=*/true);
      continue;
    }
    for (const auto& m : g.members) {
      if (m == task || JoinedNow(g, m)) continue;
      if (!SendJoin(g, m, true)) break;
    }
  }
  resend_at = forming ? Clock::now() + kResend : Clock::time_point::max();
}

bool CollectiveExecutor::Impl::JoinedNow(const Group& g, const std::string& m) const {
  auto it = joins.find({g.key, m});
  return it != joins.end() && it->second.epoch == g.epoch && CurrentMember(m, it->second.incarnation) &&
         (!g.elastic || it->second.digest == g.digest);
}

std::string CollectiveExecutor::Impl::SelfHost() const {
  auto self = membership->Find(task);
  if (self && !self->host.empty()) return self->host;
  const std::string& bound = transport->host();
  return bound == "0.0.0.0" || bound == "::" ? std::string() : bound;
}

void CollectiveExecutor::Impl::MaybeFormed(Group& g) {
  if (g.state != Group::kForming) return;
  // Every member joined this group at this epoch, as the incarnation the
  // membership knows (not one it has replaced since).
  for (const auto& m : g.members)
    if (m != task && !JoinedNow(g, m)) return;
  g.hierarchical = g.layout.hierarchical();
  for (const auto& m : g.members)
    if (m != task) {
      g.incarnations[m] = joins[{g.key, m}].incarnation;
      g.hierarchical = g.hierarchical && joins[{g.key, m}].layout == g.layout.hash;
    }
  g.local.clear();
  g.local_pos = 0;
  if (g.hierarchical) {
    g.ring = g.layout.Ring(g.rank);
    g.local = g.layout.ranks_of_host[g.layout.host[g.rank]];
    g.local_pos = std::find(g.local.begin(), g.local.end(), g.rank) - g.local.begin();
  } else {
    g.ring.clear();
    for (int64_t r = 0; r < g.size; ++r) g.ring.push_back(r);
  }
  g.ring_pos = std::find(g.ring.begin(), g.ring.end(), g.rank) - g.ring.begin();
  if (g.ring_pos == static_cast<int64_t>(g.ring.size())) g.ring_pos = -1;
  g.source = 0;
  if (g.elastic) {  // the first of the members that synced last (every rank derives the same from the JOINs)
    uint64_t latest = 0;
    for (int64_t r = 0; r < g.size; ++r) {
      const std::string& m = g.members[static_cast<size_t>(r)];
      const uint64_t synced = m == task ? g.synced_epoch : joins[{g.key, m}].synced;
      if (synced > latest) {
        latest = synced;
        g.source = r;
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(layouts_mu);
    layouts[g.key] = g.hierarchical ? g.layout.DebugString() : "flat";
    formed_members[g.key] = g.members;
  }
  g.state = Group::kFormed;
  g.formed_once = true;
  formed.fetch_add(1);
  const std::vector<uint64_t> ids(g.ops.begin(), g.ops.end());
  for (uint64_t id : ids) {
    if (g.state != Group::kFormed) return;  // a launch failed and re-formed it
    auto it = ops.find(id);
    if (it != ops.end() && !it->second.running) Launch(g, it->second);
  }
}

void CollectiveExecutor::Impl::OnJoin(int64_t group, int64_t size, uint64_t epoch, bool forming,
                                      const std::string& from, uint64_t incarnation, uint64_t layout, bool elastic,
                                      uint64_t digest, uint64_t synced) {
  auto& known = join_epoch[from];
  if (known.second != incarnation) known = {0, incarnation};
  known.first = std::max(known.first, epoch);
  Joined& j = joins[{group, from}];
  if (j.incarnation != incarnation || epoch >= j.epoch) j = Joined{epoch, incarnation, layout, digest, size, synced};
  Group& g = groups[group];
  if (!g.configured) {
    g.configured = true;
    g.key = group;
    g.elastic = elastic;
    g.size = elastic ? 0 : size;
  }
  // Another kind or size: its collectives time out naming the group; nothing to agree on.
  if (g.elastic != elastic || (!elastic && g.size != size)) return;
  if (g.elastic) {
    const bool member = std::find(g.members.begin(), g.members.end(), from) != g.members.end();
    // A live task of the job that is not a member wants in (one this
    // process holds failed is not counted: a resumed worker finds the others
    // again through a new session, which tells them it is alive).
    if (!member && Countable(from, incarnation)) {
      if (g.state == Group::kFormed) {  // at this group's next collective
        g.grow_pending = true;
        return;
      }
      if (g.state == Group::kForming && epoch <= g.epoch) return Form(g, g.epoch, /*new_members_only=*/true);
    }
    if (!member) return;
    // A member formed or forming at this epoch that counts others than this
    // rank did: meet again at a new epoch (what waits fails, recoverably).
    if (g.state == Group::kFormed && epoch == g.epoch && digest != g.digest) return Form(g, g.epoch + 1);
  }
  if (g.state == Group::kFormed) {
    auto inc = g.incarnations.find(from);
    if (inc != g.incarnations.end() && inc->second != incarnation)  // it restarted: meet it at a new epoch
      return Form(g, std::max(epoch, g.epoch) + 1);
  }
  if (epoch > g.epoch) return Form(g, epoch);
  if (epoch == g.epoch && g.state == Group::kForming) return MaybeFormed(g);
  if (epoch == g.epoch && g.state == Group::kFormed) {
    // It still waits for ours (the first was dropped: its transport did
    // not know this task yet): answer, as formed (no answer to that).
    if (forming) SendJoin(g, from, false);
    return;
  }
  if (g.state == Group::kForming) {  // it is behind: tell it where we are
    SendJoin(g, from, true);
    return;
  }
  if (g.state == Group::kFormed) return;  // a late copy of an old JOIN
  Form(g, g.epoch + 1);  // we had broken off: meet at a new epoch
}

void CollectiveExecutor::Impl::OnChange(const MembershipChange& c) {
  const std::string& peer = c.task.name;
  if (peer == task || JobOf(peer) != job) return;
  Status why;
  uint64_t incarnation = 0;
  switch (c.kind) {
    case MembershipChange::Kind::kAdded:
      return;  // a group waiting for its members looks again at its next resend
    case MembershipChange::Kind::kFailed:
      why = c.task.failure;
      break;
    case MembershipChange::Kind::kReplaced:
      if (!c.Superseded()) return;  // alive again, the same process: nothing ended
      why = errors::Unavailable("task ", peer, " was replaced (incarnation ", c.task.incarnation, " at ", c.task.host,
                                ":", c.task.port, "; it was ", c.previous.incarnation, ")");
      incarnation = c.task.incarnation;
      break;
    case MembershipChange::Kind::kRemoved:
      why = errors::Unavailable("task ", peer, " left the cluster");
      break;
  }
  Post([this, peer, why, incarnation] {
    if (!stopping) OnPeerFailed(peer, why, incarnation);
  });
}

void CollectiveExecutor::Impl::OnPeerFailed(const std::string& peer, const Status& s, uint64_t incarnation) {
  for (auto& [key, g] : groups) {
    if (g.state != Group::kFormed && g.state != Group::kForming) continue;
    if (std::find(g.members.begin(), g.members.end(), peer) == g.members.end()) continue;
    if (incarnation != 0) {  // replaced: a group that met the new incarnation already goes on
      auto formed = g.incarnations.find(peer);
      auto joined = join_epoch.find(peer);
      if (g.state == Group::kFormed && formed != g.incarnations.end() && formed->second == incarnation) continue;
      if (g.state == Group::kForming && joined != join_epoch.end() && joined->second.first == g.epoch &&
          joined->second.second == incarnation)
        continue;
    }
    if (g.elastic && g.state == Group::kForming) {  // nothing exchanged yet: count again, without it
      Form(g, g.epoch, /*new_members_only=*/true);
      continue;
    }
    g.state = Group::kBroken;
    FailGroup(g, errors::Unavailable("collective group ", key, " on ", task, ": peer ", peer, " failed: ",
                                     s.message()),
              false);
  }
}

// A collective message this task's transport could not take: most often
// from a member that restarted, which this process does not know yet (its
// JOINs are dropped until a session finds the new incarnation). What was
// exchanging fails, and so does what waits for the group to form, with the
// transport's status (Aborted: a supervisor re-creates its session, which
// finds the task again, and the step runs again).
void CollectiveExecutor::Impl::OnRejected(const Status& s) {
  for (auto& [key, g] : groups) {
    if (g.state == Group::kForming) {
      g.state = Group::kBroken;
      FailGroup(g, Status(s.code(), "collective group " + std::to_string(key) + " on " + task + ": " + s.message()),
                false);
      continue;
    }
    if (g.state != Group::kFormed) continue;
    bool any = false;
    for (uint64_t id : g.ops) {
      auto it = ops.find(id);
      any = any || (it != ops.end() && it->second.running);
    }
    if (!any) continue;
    g.state = Group::kBroken;
    FailGroup(g, s, true);
  }
}

}  // namespace actorflow
