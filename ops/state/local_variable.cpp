#include "actorflow/ops/state/local_variable.hpp"

#include <algorithm>

#include "actorflow/core/exception_status.hpp"

namespace actorflow {

namespace {

// "Assign of variable v", "ApplyAdam of variables var, m, v": what an update's errors name.
std::string UpdateContext(const VarUpdateRequest& req, const LocalVars& vars) {
  std::string out = strings::StrCat(VarUpdateName(static_cast<VarUpdateKind>(req.kind)), " of variable",
                                    vars.size() == 1 ? " " : "s ");
  for (size_t i = 0; i < vars.size(); ++i) out += (i ? ", " : "") + vars[i]->slot.name;
  return out;
}

// Running out of memory (a refused buffer: a Status or a
// TensorAllocationError) as ResourceExhausted naming the op, its variables
// and the bytes asked.
template <class Fn>
Status Catching(const VarUpdateRequest& req, const LocalVars& vars, Fn&& fn) noexcept {
  try {
    Status s = fn();
    if (s.code() == Code::kResourceExhausted) s = errors::ResourceExhausted(UpdateContext(req, vars), ": ", s.message());
    return s;
  } catch (...) {
    return CurrentExceptionStatusWith([&] { return UpdateContext(req, vars); });
  }
}

VarSlots Slots(const LocalVars& vars) {
  VarSlots slots;
  for (LocalVar* v : vars) slots.push_back(&v->slot);
  return slots;
}

RacingWrite* FindRacing(LocalVar* v, const void* data) {
  for (RacingWrite& w : v->racing)
    if (w.data == data) return &w;
  return nullptr;
}

// A racing update's writes into `data` (one buffer per variable) begin / end;
// the locks are held. Begin allocates (before it counts anything); End never.
void BeginRacing(const LocalVars& vars, void* const* data) {
  for (LocalVar* v : vars) v->racing.reserve(v->racing.size() + 1);
  for (size_t i = 0; i < vars.size(); ++i) {
    RacingWrite* w = FindRacing(vars[i], data[i]);
    if (!w) w = &vars[i]->racing.emplace_back(RacingWrite{data[i], 0, Tensor()});  // reserved: no throw
    ++w->writers;
  }
}

void EndRacing(const LocalVars& vars, void* const* data) noexcept {
  for (size_t i = 0; i < vars.size(); ++i) {
    auto& racing = vars[i]->racing;
    RacingWrite* w = FindRacing(vars[i], data[i]);
    if (!w || --w->writers > 0) continue;
    *w = std::move(racing.back());  // the last writer of that buffer: its kept value goes
    racing.pop_back();
  }
}

// A racing update (use_locking=false): checked under the locks; computed in
// place without them when no reader holds a value, else whole under them.
Status UpdateRacing(const VarUpdateRequest& req, const LocalVars& vars, ComputePool* pool) {
  VarSlots slots = Slots(vars);
  VarLocks locks(vars);
  void* data[3] = {};
  locks.Lock();
  AF_RETURN_IF_ERROR(CheckVarUpdate(req, slots));
  bool in_place = true;
  for (size_t i = 0; i < vars.size(); ++i) in_place = in_place && slots[i]->value.RefCountIsOne();
  if (!in_place) return ApplyLocked(req, vars, nullptr, nullptr, pool);
  for (size_t i = 0; i < vars.size(); ++i) data[i] = slots[i]->value.raw_data();
  BeginRacing(vars, data);  // the buffers stay alive until EndRacing
  const int64_t n = slots[0]->value.NumElements();
  const DataType dtype = slots[0]->dtype;
  locks.Unlock();
  Status s;
  try {
    ComputeVarUpdateInPlace(req, dtype, data, n, pool);  // sharding may allocate
  } catch (...) {
    s = CurrentExceptionStatus(VarUpdateName(static_cast<VarUpdateKind>(req.kind)));
  }
  locks.Lock();
  EndRacing(vars, data);
  return s;
}

}  // namespace

VarLocks::VarLocks(const LocalVars& vars) : order_(vars) {
  std::sort(order_.begin(), order_.end());
  order_.erase(std::unique(order_.begin(), order_.end()), order_.end());
}

void VarLocks::Lock() {
  for (LocalVar* v : order_) v->mu.lock();
  held_ = true;
}

bool VarLocks::TryLock() {
  for (size_t i = 0; i < order_.size(); ++i) {
    if (order_[i]->mu.try_lock()) continue;
    while (i > 0) order_[--i]->mu.unlock();
    return false;
  }
  held_ = true;
  return true;
}

void VarLocks::Unlock() {
  for (size_t i = order_.size(); i > 0; --i) order_[i - 1]->mu.unlock();
  held_ = false;
}

Status ReadLocalVars(const LocalVars& vars, bool check_only, std::vector<Tensor>* out) {
  VarLocks locks(vars);
  locks.Lock();
  return ReadLockedVars(vars, check_only, out);
}

Status ReadLockedVars(const LocalVars& vars, bool check_only, std::vector<Tensor>* out) {
  out->clear();
  out->resize(vars.size());
  Status s = ReadLockedVars(vars, check_only, out->data());
  if (!s.ok()) out->clear();
  return s;
}

Status ReadLockedVars(const LocalVars& vars, bool check_only, Tensor* out) {
  for (size_t i = 0; i < vars.size(); ++i) {
    const Tensor& value = vars[i]->slot.value;
    if (check_only) {
      out[i] = Tensor::Scalar<bool>(value.IsInitialized());
    } else if (!value.IsInitialized()) {
      return errors::FailedPrecondition("Attempting to use uninitialized value ", vars[i]->slot.name);
    } else {
      out[i] = value;
    }
  }
  return Status::OK();
}

Status ApplyLocked(const VarUpdateRequest& req, const LocalVars& vars, Tensor* answer,
                   std::vector<Tensor>* sources, ComputePool* pool) noexcept {
  return Catching(req, vars, [&] {
    // A value that racing updates write stays alive: a copy is held here (so
    // the update computes into a new buffer) and kept with their entry until
    // they end. Memory for keeping it is taken before anything changes.
    std::vector<Tensor> written(vars.size());
    for (size_t i = 0; i < vars.size(); ++i)
      if (FindRacing(vars[i], vars[i]->slot.value.raw_data())) written[i] = vars[i]->slot.value;
    VarSlots slots = Slots(vars);
    Status s = ApplyVarUpdate(req, slots, answer, sources, pool);
    for (size_t i = 0; i < vars.size(); ++i) {
      if (!written[i].IsInitialized() || written[i].raw_data() == vars[i]->slot.value.raw_data()) continue;
      if (RacingWrite* w = FindRacing(vars[i], written[i].raw_data())) w->keep = std::move(written[i]);
    }
    return s;
  });
}

void ApplyLockedAnswer(const VarUpdateRequest& req, const LocalVars& vars, VarUpdateResponse* r,
                       ComputePool* pool) noexcept {
  r->status = ApplyLocked(req, vars, &r->value, &r->sources, pool);
  if (!r->status.ok() || !req.on_device) return;
  try {
    for (LocalVar* v : vars) r->vars.push_back(v->slot.value);
  } catch (...) {
    r->status = OutOfMemoryStatus();
    r->vars.clear();
    r->sources.clear();
  }
}

Status UpdateLocalVars(const VarUpdateRequest& req, const LocalVars& vars, bool use_locking,
                       Tensor* answer, ComputePool* pool) noexcept {
  return Catching(req, vars, [&]() -> Status {
    const auto kind = static_cast<VarUpdateKind>(req.kind);
    const char* op = VarUpdateName(kind);
    for (size_t i = 0; i < vars.size(); ++i)
      for (size_t j = i + 1; j < vars.size(); ++j)
        if (vars[i] == vars[j]) return errors::InvalidArgument(op, " names variable ", vars[i]->slot.name, " twice");
    if (vars.empty() || vars.size() > 3) return errors::InvalidArgument(op, " of ", vars.size(), " variables");
    if (!use_locking && !req.on_device && req.kind >= 0 && req.kind <= static_cast<int32_t>(VarUpdateKind::kCountUpTo) &&
        MayRace(kind))
      return UpdateRacing(req, vars, pool);
    VarLocks locks(vars);
    locks.Lock();
    return ApplyLocked(req, vars, answer, nullptr, pool);
  });
}

}  // namespace actorflow
