#include "actorflow/actors/queue_actor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "actorflow/actors/queue_elements.hpp"
#include "actorflow/actors/queue_reply.hpp"
#include "actorflow/core/exception_status.hpp"
#include "actorflow/net/protocol.hpp"

namespace actorflow {

namespace {

using namespace queue_detail;  // NOLINT: the elements and their store

// Memory. Every handler either cannot throw or catches: an exception escaping
// a CAF 0.17 handler kills the actor for good, and with it the queue and
// every step waiting on it. A request whose memory is refused (a batch
// tensor over the budget, an index of more elements than memory holds) is
// answered ResourceExhausted naming the queue and the bytes asked; its
// elements go back to the queue; the queue and every other request go on.


// An operation waiting in the queue.
struct Pending {
  caf::response_promise promise;
  caf::actor_addr sender;
  int64_t step_id = 0;
  QueueOp op = QueueOp::kEnqueue;
  Elements elements;              // an enqueue: to push (from `next`); a dequeue: taken so far
  size_t next = 0;
  int64_t num = 1;                // a dequeue: elements wanted
};

struct QueueState {
  QueueSpec spec;
  QueueKind kind = QueueKind::kFifo;
  std::string queue_name;
  std::unique_ptr<Store> store;
  bool closed = false;
  std::deque<Pending> enqueues, dequeues;  // in arrival order
  static const char* name;
};
const char* QueueState::name = "queue_actor";

using QueueActor = caf::stateful_actor<QueueState>;

std::string Describe(const QueueState& st) { return std::string(QueueKindName(st.kind)) + " '" + st.queue_name + "'"; }

DataType ComponentType(const QueueState& st, size_t i) { return static_cast<DataType>(st.spec.component_types[i]); }

// Checks one element (or, `many`, a batch of them along dimension 0) against the queue's types and shapes.
Status CheckComponents(const QueueState& st, const std::vector<Tensor>& c, bool many, int64_t* batch) {
  const size_t n = st.spec.component_types.size();
  if (c.size() != n)
    return errors::InvalidArgument(Describe(st), " has ", n, " components, the enqueue gives ", c.size());
  *batch = -1;
  for (size_t i = 0; i < n; ++i) {
    if (!c[i].IsInitialized() || c[i].dtype() != ComponentType(st, i))
      return errors::InvalidArgument(Describe(st), " component ", i, " is ", DataTypeString(ComponentType(st, i)),
                                     ", the enqueue gives ",
                                     c[i].IsInitialized() ? DataTypeString(c[i].dtype()) : "no tensor");
    TensorShape element = c[i].shape();
    if (many) {
      if (element.dims() == 0)
        return errors::InvalidArgument(Describe(st), ": enqueue-many component ", i, " is a scalar, not a batch");
      if (*batch >= 0 && element.dim_size(0) != *batch)
        return errors::InvalidArgument(Describe(st), ": enqueue-many components have batch sizes ", *batch, " and ",
                                       element.dim_size(0));
      *batch = element.dim_size(0);
      element.RemoveDim(0);
    }
    if (!st.spec.shapes.empty() && !st.spec.shapes[i].IsCompatibleWith(element))
      return errors::InvalidArgument(Describe(st), " component ", i, " has shape ", st.spec.shapes[i].DebugString(),
                                     ", the enqueue gives ", element.DebugString());
  }
  if (st.kind == QueueKind::kPriority && !many && c[0].NumElements() != 1)
    return errors::InvalidArgument(Describe(st), ": the priority (component 0) must be a scalar");
  return Status::OK();
}

// The elements as one batch per component (a new dimension 0). Throws
// std::bad_alloc (TensorAllocationError naming the bytes) when a batch does
// not fit the budget.
Status Batch(const QueueState& st, Elements& elements, int64_t n, std::vector<Tensor>* out) {
  out->clear();
  const size_t num_components = st.spec.component_types.size();
  for (size_t c = 0; c < num_components; ++c) {
    TensorShape element;
    if (st.kind == QueueKind::kPaddingFifo) {
      // Each dimension as large as the largest element's (at least the declared size).
      const PartialTensorShape& declared = st.spec.shapes[c];
      std::vector<int64_t> dims(static_cast<size_t>(declared.dims()), 0);
      for (int d = 0; d < declared.dims(); ++d) dims[static_cast<size_t>(d)] = std::max<int64_t>(0, declared.dim_size(d));
      for (const Element& e : elements)
        for (int d = 0; d < declared.dims(); ++d)
          dims[static_cast<size_t>(d)] = std::max(dims[static_cast<size_t>(d)], e[c].dim_size(d));
      if (!TensorShape::FromDims(dims, &element).ok())  // the largest of each dimension may overflow together
        return errors::ResourceExhausted(Describe(st), ": padding component ", c, " of ", elements.size(),
                                         " elements takes more than 2^63-1 elements");
    } else if (!elements.empty()) {
      element = elements[0][c].shape();
      for (const Element& e : elements)
        if (!e[c].HasShape(element))
          return errors::InvalidArgument(Describe(st), ": cannot batch component ", c, " of shapes ",
                                         element.DebugString(), " and ", e[c].shape().DebugString(),
                                         " (declare the queue's shapes, or use a padding queue)");
    } else {
      st.spec.shapes[c].AsTensorShape(&element);
    }
    std::vector<int64_t> dims = element.dim_sizes();
    dims.insert(dims.begin(), n);
    TensorShape shape;
    if (!TensorShape::FromDims(dims, &shape).ok())
      return errors::ResourceExhausted(Describe(st), ": a batch of ", n, " elements of shape ", element.DebugString(),
                                       " (component ", c, ") has more than 2^63-1 elements");
    Tensor batch(ComponentType(st, c), shape);
    if (st.kind == QueueKind::kPaddingFifo && !DataTypeIsStringLike(batch.dtype()) && batch.TotalBytes() > 0)
      std::memset(batch.raw_data(), 0, batch.TotalBytes());
    const int64_t per = element.num_elements();
    for (int64_t i = 0; i < static_cast<int64_t>(elements.size()); ++i) {
      const Part part = elements[static_cast<size_t>(i)][c];
      if (part.HasShape(element)) CopyElements(part.source, part.First(), &batch, i * per, per);
      else CopyPadded(part.Materialize(), &batch, i);
    }
    out->push_back(std::move(batch));
  }
  return Status::OK();
}

// How many elements a dequeue may take now.
size_t Available(const QueueState& st) {
  const size_t size = st.store->size();
  if (st.kind != QueueKind::kRandomShuffle || st.closed) return size;
  const auto keep = static_cast<size_t>(st.spec.min_after_dequeue);
  return size > keep ? size - keep : 0;
}

caf::actor_addr Sender(QueueActor* self) {
  return self->current_sender() ? caf::actor_cast<caf::actor_addr>(self->current_sender()) : caf::actor_addr();
}

bool Batched(QueueOp op) { return op == QueueOp::kDequeueMany || op == QueueOp::kDequeueUpTo; }

void Reply(caf::response_promise& rp, QueueResponse r) noexcept { ReplyQueueResponse(rp, std::move(r)); }

void Answer(Pending& p, Status s, std::vector<Tensor> components = {}, int64_t value = 0) noexcept {
  QueueResponse r;
  r.status = std::move(s);
  r.components = std::move(components);
  r.value = value;
  Reply(p.promise, std::move(r));
}

// Puts `taken` back in the queue (Store::Return); never throws.
void GiveBack(QueueState& st, Elements& taken) noexcept {
  if (!taken.empty()) st.store->Return(taken);
}

// Answers a dequeue with what it took (batched unless a single dequeue).
// When the answer cannot be built (a batch over the memory budget), the
// elements go back to the queue and the dequeue fails with ResourceExhausted
// naming the queue and the bytes asked.
void AnswerDequeue(QueueActor* self, Pending& p) noexcept {
  auto& st = self->state;
  std::vector<Tensor> out;
  Status s;
  try {
    if (!Batched(p.op)) {
      for (size_t c = 0; c < p.elements[0].size(); ++c) out.push_back(p.elements[0][c].Materialize());
    } else {
      s = Batch(st, p.elements, static_cast<int64_t>(p.elements.size()), &out);
    }
  } catch (...) {
    s = CurrentExceptionStatusWith([&] {
      return Batched(p.op) ? strings::StrCat(Describe(st), ": cannot batch ", p.elements.size(), " elements")
                           : strings::StrCat(Describe(st), ": cannot dequeue an element");
    });
  }
  if (!s.ok()) {
    out.clear();
    GiveBack(st, p.elements);  // nothing is lost to a bad batch
    Answer(p, s);
    return;
  }
  Answer(p, Status::OK(), std::move(out));
}

// Makes room in a dequeue's list for `take` more elements, so that moving
// them out of the store cannot fail half-way; false when it is refused (the
// dequeue is then answered with why, its elements back in the queue).
bool Reserve(QueueState& st, Pending& p, size_t take) noexcept {
  const size_t need = p.elements.size() + take;
  if (p.elements.capacity() >= need) return true;
  try {
    // Geometric growth (elements may come one by one), never past what was asked.
    p.elements.reserve(std::max(need, std::min(2 * p.elements.capacity(), static_cast<size_t>(p.num))));
    return true;
  } catch (...) {
    const Status s =
        CurrentExceptionStatusWith([&] { return strings::StrCat(Describe(st), ": cannot take ", need, " elements"); });
    GiveBack(st, p.elements);
    Answer(p, s);
    return false;
  }
}

// Serves waiting operations, in arrival order, as far as the queue allows.
// Never throws: an operation that runs out of memory is answered with
// ResourceExhausted (an enqueue keeps the elements it already pushed, as
// when it is cancelled part-way) and the others go on.
void Pump(QueueActor* self) noexcept {
  auto& st = self->state;
  for (bool progress = true; progress;) {
    progress = false;
    while (!st.enqueues.empty()) {
      Pending& p = st.enqueues.front();
      Status failed;
      try {
        while (p.next < p.elements.size() &&
               (st.spec.capacity < 0 || st.store->size() < static_cast<size_t>(st.spec.capacity))) {
          st.store->Push(std::move(p.elements[p.next]));  // on failure the element stays in the enqueue
          ++p.next;
          progress = true;
        }
      } catch (...) {
        failed = CurrentExceptionStatusWith([&] {
          return strings::StrCat(Describe(st), ": cannot store element ", p.next, " of ", p.elements.size(),
                                 " (the queue holds ", st.store->size(), ")");
        });
      }
      if (failed.ok() && p.next < p.elements.size()) break;  // full: the rest waits (and the enqueues behind it)
      Answer(p, failed);
      st.enqueues.pop_front();
      progress = true;
    }
    while (!st.dequeues.empty()) {
      Pending& p = st.dequeues.front();
      const size_t take = std::min(Available(st), static_cast<size_t>(p.num) - p.elements.size());
      if (take > 0 && !Reserve(st, p, take)) {
        st.dequeues.pop_front();
        progress = true;
        continue;
      }
      for (size_t i = 0; i < take; ++i) {
        p.elements.push_back(st.store->Pop());  // room reserved: cannot throw
        progress = true;
      }
      if (static_cast<int64_t>(p.elements.size()) == p.num) {
        AnswerDequeue(self, p);
        st.dequeues.pop_front();
        continue;
      }
      if (!st.closed || !st.enqueues.empty()) break;  // more may come
      if (p.op == QueueOp::kDequeueUpTo && !p.elements.empty()) {
        AnswerDequeue(self, p);
      } else {
        GiveBack(st, p.elements);
        const Status s = Safely([&] {
          return errors::OutOfRange(Describe(st), " is closed and has insufficient elements (requested ", p.num,
                                    ", current size ", st.store->size(), ")");
        });
        Answer(p, s);
      }
      st.dequeues.pop_front();
      progress = true;
    }
  }
}

// A new request's Pending: its sender and promise.
Pending Request(QueueActor* self) {
  Pending p;
  p.sender = Sender(self);  // before the promise, which takes the sender over
  p.promise = self->make_response_promise();
  return p;
}

void EnqueueChecked(QueueActor* self, QueueRequest& req, bool many, Pending& p);

void Enqueue(QueueActor* self, QueueRequest& req, bool many, Pending& p) noexcept {
  // Counted first: the components move on.
  const int64_t n = many && !req.components.empty() && req.components[0].dims() > 0 ? req.components[0].dim_size(0) : 1;
  try {
    EnqueueChecked(self, req, many, p);
  } catch (...) {  // nothing was queued: push_back is its last step, and leaves `p` intact when it throws
    auto& st = self->state;
    Answer(p,
           CurrentExceptionStatusWith([&] { return strings::StrCat(Describe(st), ": cannot enqueue ", n, " elements"); }));
    return;
  }
  Pump(self);
}

void EnqueueChecked(QueueActor* self, QueueRequest& req, bool many, Pending& p) {
  auto& st = self->state;
  if (st.closed) {
    Answer(p, errors::Cancelled(Describe(st), " is closed"));
    return;
  }
  int64_t batch = 0;
  Status s = CheckComponents(st, req.components, many, &batch);
  if (!s.ok()) {
    Answer(p, s);
    return;
  }
  if (many) {
    p.elements = Split(std::move(req.components), batch);
    if (st.kind == QueueKind::kPriority)
      for (const Element& e : p.elements)
        if (e[0].NumElements() != 1) {
          Answer(p, errors::InvalidArgument(Describe(st), ": each priority (component 0) must be a scalar"));
          return;
        }
  } else {
    p.elements.emplace_back(std::make_shared<const Chunk>(Chunk{std::move(req.components)}), -1);
  }
  p.step_id = req.step_id;
  p.op = many ? QueueOp::kEnqueueMany : QueueOp::kEnqueue;
  st.enqueues.push_back(std::move(p));
}

void DequeueChecked(QueueActor* self, QueueRequest& req, QueueOp op, Pending& p);

void Dequeue(QueueActor* self, QueueRequest& req, QueueOp op, Pending& p) noexcept {
  try {
    DequeueChecked(self, req, op, p);
  } catch (...) {  // nothing was queued nor taken
    auto& st = self->state;
    Answer(p, CurrentExceptionStatusWith(
                  [&] { return strings::StrCat(Describe(st), ": cannot dequeue ", req.num, " elements"); }));
    return;
  }
  Pump(self);
}

void DequeueChecked(QueueActor* self, QueueRequest& req, QueueOp op, Pending& p) {
  auto& st = self->state;
  p.op = op;
  p.num = Batched(op) ? req.num : 1;
  if (p.num < 0) {
    Answer(p, errors::InvalidArgument(Describe(st), ": cannot dequeue a negative number of elements (", p.num, ")"));
    return;
  }
  if (Batched(op)) {
    const bool padded = st.kind == QueueKind::kPaddingFifo;
    bool known = !st.spec.shapes.empty();
    for (const auto& s : st.spec.shapes) known = known && (padded ? !s.unknown_rank() : s.IsFullyDefined());
    if (!known && (padded || p.num == 0))
      return Answer(p, errors::InvalidArgument(Describe(st), ": dequeue-many",
                                               p.num == 0 ? " of 0 elements" : "",
                                               " needs the queue's component shapes declared"));
    if (p.num == 0) {  // an empty batch, at once
      std::vector<Tensor> empty;
      Status s = Batch(st, p.elements, 0, &empty);
      if (!s.ok()) empty.clear();
      Answer(p, s, std::move(empty));
      return;
    }
  }
  p.step_id = req.step_id;
  st.dequeues.push_back(std::move(p));
}

// Fails the operations `sender` sent for `step_id` with `s`; a dequeue's elements go back.
void CancelStep(QueueActor* self, const caf::actor_addr& sender, int64_t step_id, const Status& s) noexcept {
  auto& st = self->state;
  auto cancel = [&](std::deque<Pending>& list, bool dequeue) {
    for (auto it = list.begin(); it != list.end();) {
      if (it->sender != sender || it->step_id != step_id) {
        ++it;
        continue;
      }
      if (dequeue) GiveBack(st, it->elements);
      Answer(*it, s);
      it = list.erase(it);
    }
  };
  cancel(st.enqueues, false);
  cancel(st.dequeues, true);
  Pump(self);
}

}  // namespace

Status CheckQueueSpec(const QueueSpec& spec, const std::string& name) {
  const auto kind = static_cast<QueueKind>(spec.kind);
  const std::string what = std::string(QueueKindName(kind)) + " '" + name + "'";
  if (spec.kind < 0 || spec.kind > static_cast<int32_t>(QueueKind::kPriority))
    return errors::InvalidArgument("unknown queue kind ", spec.kind, " for '", name, "'");
  if (spec.component_types.empty()) return errors::InvalidArgument(what, " has no component types");
  for (int32_t t : spec.component_types)
    if (!DataTypeIsSupported(static_cast<DataType>(t)) || IsRefType(static_cast<DataType>(t)))
      return errors::InvalidArgument(what, " has an unsupported component type ",
                                     DataTypeString(static_cast<DataType>(t)));
  if (!spec.shapes.empty() && spec.shapes.size() != spec.component_types.size())
    return errors::InvalidArgument(what, " has ", spec.component_types.size(), " component types but ",
                                   spec.shapes.size(), " shapes");
  if (spec.capacity < -1) return errors::InvalidArgument(what, ": capacity ", spec.capacity, " (-1 is unbounded)");
  if (kind == QueueKind::kPaddingFifo && spec.shapes.empty())
    return errors::InvalidArgument(what, ": a padding queue needs its component shapes (rank known)");
  if (kind == QueueKind::kPaddingFifo)
    for (const auto& s : spec.shapes)
      if (s.unknown_rank()) return errors::InvalidArgument(what, ": a padding queue needs every component's rank");
  if (kind == QueueKind::kRandomShuffle) {
    if (spec.min_after_dequeue < 0)
      return errors::InvalidArgument(what, ": min_after_dequeue ", spec.min_after_dequeue, " is negative");
    if (spec.capacity >= 0 && spec.min_after_dequeue >= spec.capacity)
      return errors::InvalidArgument(what, ": min_after_dequeue (", spec.min_after_dequeue,
                                     ") must be below capacity (", spec.capacity, ")");
  }
  if (kind == QueueKind::kPriority) {
    if (static_cast<DataType>(spec.component_types[0]) != DT_INT64)
      return errors::InvalidArgument(what, ": component 0 (the priority) must be int64");
    if (!spec.shapes.empty() && !spec.shapes[0].IsCompatibleWith(TensorShape{}))
      return errors::InvalidArgument(what, ": component 0 (the priority) must be a scalar");
  }
  return Status::OK();
}

caf::actor SpawnQueueActor(caf::actor_system& sys, const QueueSpec& spec, const std::string& name) {
  return sys.spawn([spec, name](QueueActor* self) -> caf::behavior {
    auto& st = self->state;
    st.spec = spec;
    st.kind = static_cast<QueueKind>(spec.kind);
    st.queue_name = name;
    st.store = std::make_unique<Store>(st.kind, static_cast<uint64_t>(spec.seed) * 0x9e3779b97f4a7c15ULL ^
                                                    static_cast<uint64_t>(spec.seed2),
                                       spec.seed != 0 || spec.seed2 != 0);
    // On exit, answer everything that waits: its step could never end otherwise.
    self->set_exit_handler([self](const caf::exit_msg& msg) {
      auto& s = self->state;
      const Status gone = Safely([&] { return errors::Cancelled(Describe(s), " was destroyed"); });
      for (auto* list : {&s.enqueues, &s.dequeues})
        for (Pending& p : *list) Answer(p, gone);
      s.enqueues.clear();
      s.dequeues.clear();
      self->quit(msg.reason);
    });
    return {
        // Every path answers the request, and nothing escapes (see "Memory" above).
        [self](QueueRequest& req) {
          auto& st = self->state;
          Pending p;
          try {
            p = Request(self);
          } catch (...) {  // no promise to answer with: nothing more can be done for this request
            return;
          }
          const auto op = static_cast<QueueOp>(req.op);
          switch (op) {
            case QueueOp::kEnqueue:
            case QueueOp::kEnqueueMany: return Enqueue(self, req, op == QueueOp::kEnqueueMany, p);
            case QueueOp::kDequeue:
            case QueueOp::kDequeueMany:
            case QueueOp::kDequeueUpTo: return Dequeue(self, req, op, p);
            case QueueOp::kClose: {
              st.closed = true;
              if (req.flag) {
                const Status closed = Safely([&] { return errors::Cancelled(Describe(st), " is closed"); });
                for (Pending& e : st.enqueues) Answer(e, closed);
                st.enqueues.clear();
              }
              Pump(self);
              Answer(p, Status::OK());
              return;
            }
            case QueueOp::kSize: return Answer(p, Status::OK(), {}, static_cast<int64_t>(st.store->size()));
            case QueueOp::kIsClosed: return Answer(p, Status::OK(), {}, st.closed ? 1 : 0);
            case QueueOp::kClear: {  // what waited for room may enqueue now
              int64_t dropped = 0;
              for (; st.store->size() > 0; ++dropped) st.store->Pop();
              Pump(self);
              return Answer(p, Status::OK(), {}, dropped);
            }
            default: break;  // an accumulator's operation: not a queue's
          }
          Answer(p, Safely([&] { return errors::InvalidArgument("unknown queue operation ", req.op); }));
        },
        [self](const QueueCancelStep& c) {
          CancelStep(self, caf::actor_cast<caf::actor_addr>(self->current_sender()), c.step_id, c.status);
        },
    };
  });
}

}  // namespace actorflow
