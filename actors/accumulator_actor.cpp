#include "actorflow/actors/accumulator_actor.hpp"

#include <caf/all.hpp>

#include <deque>

#include "actorflow/actors/queue_reply.hpp"
#include "actorflow/core/exception_status.hpp"
#include "actorflow/net/protocol.hpp"

namespace actorflow {
namespace {

// A TakeGradient waiting for gradients.
struct Take {
  caf::response_promise promise;
  caf::actor_addr sender;
  int64_t step_id = 0;
  int64_t num_required = 1;
};

struct AccumulatorState {
  QueueSpec spec;
  DataType dtype = DT_FLOAT;
  PartialTensorShape shape;  // declared
  std::string acc_name;
  Tensor sum;  // of the gradients counted; may share the first gradient's buffer
  int64_t counter = 0, global_step = 0;
  int64_t dropped = 0;  // stale gradients dropped, ever
  std::deque<Take> takes;  // in arrival order
  static const char* name;
};
const char* AccumulatorState::name = "accumulator_actor";

using AccumulatorActor = caf::stateful_actor<AccumulatorState>;

std::string Describe(const AccumulatorState& st) { return "ConditionalAccumulator '" + st.acc_name + "'"; }

void Reply(caf::response_promise& rp, QueueResponse r) noexcept { ReplyQueueResponse(rp, std::move(r)); }
void Answer(caf::response_promise& rp, Status s, std::vector<Tensor> out = {}, int64_t value = 0) noexcept {
  Reply(rp, QueueResponse{std::move(s), std::move(out), value});
}

// out = a + b (element-wise, float or double); `out` may be `a`.
template <class T>
void Add(const Tensor& a, const Tensor& b, Tensor* out) {
  const T* x = a.data<T>();
  const T* y = b.data<T>();
  T* o = out->data<T>();
  const int64_t n = a.NumElements();
  for (int64_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
}
template <class T>
void Scale(const Tensor& a, T factor, Tensor* out) {
  const T* x = a.data<T>();
  T* o = out->data<T>();
  const int64_t n = a.NumElements();
  for (int64_t i = 0; i < n; ++i) o[i] = x[i] * factor;
}

// A buffer for a new value of `t`: its own when nobody else holds it (throws when none can be allocated).
Tensor Writable(const Tensor& t) { return t.RefCountIsOne() ? t : Tensor(t.dtype(), t.shape()); }

void Apply(AccumulatorActor* self, QueueRequest& req, caf::response_promise& rp) noexcept {
  auto& st = self->state;
  if (req.components.size() != 1)
    return Answer(rp, Safely([&] {
                    return errors::InvalidArgument(Describe(st), ": a gradient is one tensor, got ",
                                                   req.components.size());
                  }));
  const Tensor& g = req.components[0];
  if (req.num < st.global_step) {  // stale: dropped, as TensorFlow does (and counted)
    ++st.dropped;
    return Answer(rp, Status::OK());
  }
  if (g.dtype() != st.dtype)
    return Answer(rp, Safely([&] {
                    return errors::InvalidArgument(Describe(st), " holds ", DataTypeString(st.dtype),
                                                   " gradients, got ", DataTypeString(g.dtype()));
                  }));
  if (st.counter > 0 && st.sum.shape() != g.shape())
    return Answer(rp, Safely([&] {
                    return errors::InvalidArgument(Describe(st), ": Shape mismatch: expected ",
                                                   st.sum.shape().DebugString(), ", got ", g.shape().DebugString());
                  }));
  if (!st.shape.IsCompatibleWith(g.shape()))
    return Answer(rp, Safely([&] {
                    return errors::InvalidArgument(Describe(st), ": Shape mismatch: expected ", st.shape.DebugString(),
                                                   ", got ", g.shape().DebugString());
                  }));
  if (st.counter == 0) {
    st.sum = g;  // shared: copied only when the next gradient is added
  } else {
    try {
      Tensor out = Writable(st.sum);
      if (st.dtype == DT_FLOAT) Add<float>(st.sum, g, &out);
      else Add<double>(st.sum, g, &out);
      st.sum = std::move(out);
    } catch (...) {
      return Answer(rp, CurrentExceptionStatusWith([&] { return Describe(st) + ": cannot add a gradient"; }));
    }
  }
  ++st.counter;
  Answer(rp, Status::OK());
}

// Serves the waiting takes that the count satisfies, in arrival order.
void Serve(AccumulatorActor* self) noexcept {
  auto& st = self->state;
  while (!st.takes.empty() && st.counter >= st.takes.front().num_required) {
    Take t = std::move(st.takes.front());
    st.takes.pop_front();
    Tensor out = st.sum;
    if (st.spec.reduction == 0 && st.counter > 1) {
      try {
        Tensor mean = Writable(out);
        if (st.dtype == DT_FLOAT) Scale<float>(out, 1.f / static_cast<float>(st.counter), &mean);
        else Scale<double>(out, 1.0 / static_cast<double>(st.counter), &mean);
        out = std::move(mean);
      } catch (...) {  // this take fails; the gradients stay for the next
        Answer(t.promise, CurrentExceptionStatusWith([&] { return Describe(st) + ": cannot average the gradients"; }));
        continue;
      }
    }
    st.sum = Tensor();
    st.counter = 0;
    ++st.global_step;
    std::vector<Tensor> result;
    try {
      result.push_back(std::move(out));
    } catch (...) {
      Answer(t.promise, OutOfMemoryStatus());
      continue;
    }
    Answer(t.promise, Status::OK(), std::move(result));
  }
}

void CancelStep(AccumulatorActor* self, const caf::actor_addr& sender, int64_t step_id, const Status& s) noexcept {
  auto& takes = self->state.takes;
  for (auto it = takes.begin(); it != takes.end();) {
    if (it->sender != sender || it->step_id != step_id) {
      ++it;
      continue;
    }
    Answer(it->promise, s);
    it = takes.erase(it);
  }
  Serve(self);  // a cancelled take at the head may have held others back
}

}  // namespace

Status CheckAccumulatorSpec(const QueueSpec& spec, const std::string& name) {
  if (spec.kind != static_cast<int32_t>(QueueKind::kAccumulator))
    return errors::InvalidArgument("'", name, "' is not declared as an accumulator");
  if (spec.component_types.size() != 1 || spec.shapes.size() > 1)
    return errors::InvalidArgument("ConditionalAccumulator '", name, "' holds one gradient type and shape");
  const auto t = static_cast<DataType>(spec.component_types[0]);
  if (t != DT_FLOAT && t != DT_DOUBLE)
    return errors::InvalidArgument("ConditionalAccumulator '", name, "': dtype ", DataTypeString(t),
                                   " is not supported (float, double)");
  if (spec.reduction != 0 && spec.reduction != 1)
    return errors::InvalidArgument("ConditionalAccumulator '", name, "': unknown reduction ", spec.reduction);
  return Status::OK();
}

caf::actor SpawnAccumulatorActor(caf::actor_system& sys, const QueueSpec& spec, const std::string& name) {
  return sys.spawn([spec, name](AccumulatorActor* self) -> caf::behavior {
    auto& st = self->state;
    st.spec = spec;
    st.dtype = static_cast<DataType>(spec.component_types[0]);
    st.shape = spec.shapes.empty() ? PartialTensorShape() : spec.shapes[0];
    st.acc_name = name;
    // On exit, answer every waiting take: its step could never end otherwise.
    self->set_exit_handler([self](const caf::exit_msg& msg) {
      auto& s = self->state;
      const Status gone = Safely([&] { return errors::Cancelled(Describe(s), " was destroyed"); });
      for (Take& t : s.takes) Answer(t.promise, gone);
      s.takes.clear();
      self->quit(msg.reason);
    });
    return {
        // Every path answers, and nothing escapes: an exception would end the actor.
        [self](QueueRequest& req) {
          auto& st = self->state;
          caf::actor_addr sender;
          caf::response_promise rp;
          try {
            if (self->current_sender()) sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
            rp = self->make_response_promise();  // after the sender, which it takes over
          } catch (...) {
            return;
          }
          switch (static_cast<QueueOp>(req.op)) {
            case QueueOp::kApplyGradient:
              Apply(self, req, rp);
              Serve(self);
              return;
            case QueueOp::kTakeGradient:
              if (req.num < 1)
                return Answer(rp, Safely([&] {
                                return errors::InvalidArgument("Argument num_required must be positive, but was ",
                                                               req.num, " (", Describe(st), ")");
                              }));
              try {
                st.takes.push_back(Take{std::move(rp), sender, req.step_id, req.num});
              } catch (...) {
                return Answer(rp, OutOfMemoryStatus());
              }
              Serve(self);
              return;
            case QueueOp::kNumAccumulated: return Answer(rp, Status::OK(), {}, st.counter);
            case QueueOp::kNumDropped: return Answer(rp, Status::OK(), {}, st.dropped);
            case QueueOp::kSetGlobalStep:
              st.global_step = req.num;
              return Answer(rp, Status::OK());
            default: break;
          }
          Answer(rp, Safely([&] {
                   return errors::InvalidArgument(Describe(st), ": unknown accumulator operation ", req.op);
                 }));
        },
        [self](const QueueCancelStep& c) {
          CancelStep(self, caf::actor_cast<caf::actor_addr>(self->current_sender()), c.step_id, c.status);
        },
    };
  });
}

}  // namespace actorflow
