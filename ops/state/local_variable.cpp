#include "actorflow/ops/state/local_variable.hpp"

#include <algorithm>

#include "actorflow/core/exception_status.hpp"

namespace actorflow {

namespace {

// "Assign of variable v", "ApplyAdam of variables var, m, v": what an update's errors name.
std::string UpdateContext(const VarUpdateRequest& req, const std::vector<LocalVar*>& vars) {
  std::string out = strings::StrCat(VarUpdateName(static_cast<VarUpdateKind>(req.kind)), " of variable",
                                    vars.size() == 1 ? " " : "s ");
  for (size_t i = 0; i < vars.size(); ++i) out += (i ? ", " : "") + vars[i]->slot.name;
  return out;
}

// Running out of memory (a refused buffer: a Status or a
// TensorAllocationError) as ResourceExhausted naming the op, its variables
// and the bytes asked.
template <class Fn>
Status Catching(const VarUpdateRequest& req, const std::vector<LocalVar*>& vars, Fn&& fn) noexcept {
  try {
    Status s = fn();
    if (s.code() == Code::kResourceExhausted) s = errors::ResourceExhausted(UpdateContext(req, vars), ": ", s.message());
    return s;
  } catch (...) {
    return CurrentExceptionStatusWith([&] { return UpdateContext(req, vars); });
  }
}

// `vars` (at most three: an update's) in address order, each once; no allocation.
struct Ordered {
  LocalVar* v[3] = {};
  size_t n = 0;
  explicit Ordered(const std::vector<LocalVar*>& vars) {
    for (LocalVar* x : vars) {
      if (n == 3 || std::find(v, v + n, x) != v + n) continue;
      v[n++] = x;
    }
    std::sort(v, v + n);
  }
};

std::vector<VarSlot*> Slots(const std::vector<LocalVar*>& vars) {
  std::vector<VarSlot*> slots;
  slots.reserve(vars.size());
  for (LocalVar* v : vars) slots.push_back(&v->slot);
  return slots;
}

// Ends a racing update of `vars` (locks held).
void EndRacing(const std::vector<LocalVar*>& vars) noexcept {
  for (LocalVar* v : vars)
    if (--v->racing == 0) v->retired.clear();
}

// A racing update (use_locking=false): checked under the locks; computed in
// place without them when no reader holds a value, else whole under them.
Status UpdateRacing(const VarUpdateRequest& req, const std::vector<LocalVar*>& vars, ComputePool* pool) {
  std::vector<VarSlot*> slots = Slots(vars);
  void* data[3] = {};
  int64_t n = 0;
  {
    VarLocks locked(vars);
    locked.Lock();
    AF_RETURN_IF_ERROR(CheckVarUpdate(req, slots));
    bool in_place = true;
    for (size_t i = 0; i < vars.size(); ++i) in_place = in_place && slots[i]->value.RefCountIsOne();
    if (!in_place) return ApplyLocked(req, vars, nullptr, nullptr, pool);
    for (size_t i = 0; i < vars.size(); ++i) {
      data[i] = slots[i]->value.raw_data();
      ++vars[i]->racing;  // keeps the buffer alive until EndRacing (retired)
    }
    n = slots[0]->value.NumElements();
  }
  ComputeVarUpdateInPlace(req, slots[0]->dtype, data, n, pool);  // allocates nothing
  VarLocks locked(vars);
  locked.Lock();
  EndRacing(vars);
  return Status::OK();
}

}  // namespace

Status ReadLocalVars(const std::vector<LocalVar*>& vars, bool check_only, std::vector<Tensor>* out) {
  std::vector<LocalVar*> order = vars;
  std::sort(order.begin(), order.end());
  order.erase(std::unique(order.begin(), order.end()), order.end());
  out->clear();
  out->reserve(vars.size());
  size_t locked = 0;
  struct Unlock {
    std::vector<LocalVar*>& order;
    size_t& locked;
    ~Unlock() {
      while (locked > 0) order[--locked]->mu.unlock();
    }
  } unlock{order, locked};
  for (; locked < order.size(); ++locked) order[locked]->mu.lock();
  for (LocalVar* v : vars) {
    if (check_only) {
      out->push_back(Tensor::Scalar<bool>(v->slot.value.IsInitialized()));
    } else if (!v->slot.value.IsInitialized()) {
      out->clear();
      return errors::FailedPrecondition("Attempting to use uninitialized value ", v->slot.name);
    } else {
      out->push_back(v->slot.value);
    }
  }
  return Status::OK();
}

void LockVars(const std::vector<LocalVar*>& vars) {
  const Ordered o(vars);
  for (size_t i = 0; i < o.n; ++i) o.v[i]->mu.lock();
}

void UnlockVars(const std::vector<LocalVar*>& vars) {
  const Ordered o(vars);
  for (size_t i = o.n; i > 0; --i) o.v[i - 1]->mu.unlock();
}

bool TryLockVars(const std::vector<LocalVar*>& vars) {
  const Ordered o(vars);
  for (size_t i = 0; i < o.n; ++i) {
    if (o.v[i]->mu.try_lock()) continue;
    while (i > 0) o.v[--i]->mu.unlock();
    return false;
  }
  return true;
}

Status ApplyLocked(const VarUpdateRequest& req, const std::vector<LocalVar*>& vars, Tensor* answer,
                   std::vector<Tensor>* sources, ComputePool* pool) noexcept {
  return Catching(req, vars, [&] {
    // While racing updates write a value, it stays alive: the update leaves
    // it (a copy is held here, so it computes into a new buffer) and it is
    // kept among the retired until they end.
    std::vector<Tensor> racing_values;
    for (LocalVar* v : vars)
      if (v->racing > 0) racing_values.push_back(v->slot.value);
    std::vector<VarSlot*> slots = Slots(vars);
    Status s = ApplyVarUpdate(req, slots, answer, sources, pool);
    size_t k = 0;
    for (LocalVar* v : vars)
      if (v->racing > 0) v->retired.push_back(std::move(racing_values[k++]));
    return s;
  });
}

Status UpdateLocalVars(const VarUpdateRequest& req, const std::vector<LocalVar*>& vars, bool use_locking,
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
    VarLocks locked(vars);
    locked.Lock();
    return ApplyLocked(req, vars, answer, nullptr, pool);
  });
}

}  // namespace actorflow
