// Tensors: sharing, reshaping, proto conversion, and the CAF wire format.
#include <catch2/catch.hpp>

#include <cstring>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "actorflow/core/allocator.hpp"
#include "actorflow/core/proto/tensor.pb.h"
#include "actorflow/core/tensor.hpp"
#include "actorflow/core/tensor_eigen.hpp"
#include "actorflow/core/tensor_proto.hpp"
#include "actorflow/net/protocol.hpp"
#include "test_util.hpp"

using namespace actorflow;
using test::MakeTensor;
using test::Values;

TEST_CASE("tensor copies share one buffer") {
  Tensor a = MakeTensor<float>({1, 2, 3, 4}, {2, 2});
  Tensor b = a;
  REQUIRE(b.SharesBufferWith(a));
  REQUIRE_FALSE(a.RefCountIsOne());
  b.data<float>()[0] = 9;
  REQUIRE(a.data<float>()[0] == 9);
  Tensor r = a.Reshaped(TensorShape{4});
  REQUIRE(r.SharesBufferWith(a));
  REQUIRE(r.shape() == TensorShape{4});
  Tensor d = a.DeepCopy();
  REQUIRE_FALSE(d.SharesBufferWith(a));
  REQUIRE(TensorEquals(a, d));
  { Tensor moved = std::move(b); REQUIRE(moved.SharesBufferWith(a)); }
}

TEST_CASE("tensor buffers are 64-byte aligned and freed with their last reference") {
  Tensor t(DT_DOUBLE, TensorShape{3, 5});
  REQUIRE(reinterpret_cast<uintptr_t>(t.raw_data()) % kTensorAlignment == 0);
  REQUIRE(t.RefCountIsOne());
}

namespace {
// Memory a tensor borrows (as the Python module lends numpy arrays): given
// back once, with its last reference.
struct Lender : Allocator {
  int* returned;
  explicit Lender(int* r) : returned(r) {}
  std::string Name() const override { return "lender"; }
  void* AllocateRaw(size_t, size_t) override { return nullptr; }
  void DeallocateRaw(void*, size_t bytes) override {
    *returned += static_cast<int>(bytes);
    delete this;
  }
};
}  // namespace

TEST_CASE("a tensor over borrowed memory reads it in place and gives it back with its last reference") {
  alignas(kTensorAlignment) float mem[16] = {1, 2, 3, 4, 5, 6};
  int returned = 0;
  Tensor t;
  REQUIRE(Tensor::Borrow(DT_FLOAT, TensorShape{2, 3}, mem, new Lender(&returned), &t).ok());
  CHECK(t.data<float>() == mem);
  CHECK(t.InHostMemory());
  CHECK(t.buffer()->allocator() != cpu_allocator());  // never the device's: no kernel writes it in place
  {
    Tensor copy = t.Reshaped(TensorShape{6});
    t = Tensor();
    CHECK(returned == 0);
    CHECK(copy.data<float>()[5] == 6.f);
  }
  CHECK(returned == 24);
  // Refused: memory not aligned for Eigen's maps (16 bytes), and strings.
  Tensor bad;
  Lender* unaligned = new Lender(&returned);
  CHECK(Tensor::Borrow(DT_FLOAT, TensorShape{2}, mem + 1, unaligned, &bad).code() == Code::kInvalidArgument);
  CHECK(Tensor::Borrow(DT_STRING, TensorShape{1}, mem, unaligned, &bad).code() == Code::kInvalidArgument);
  CHECK_FALSE(bad.IsInitialized());
  delete unaligned;
}

TEST_CASE("the CPU allocator reuses freed large blocks and accounts bytes in use") {
  Allocator* a = cpu_allocator();
  a->ReleaseCache();
  const int64_t before = a->bytes_in_use();
  const size_t big = (size_t{3} << 20) + 100;  // 3 MB and a bit: a cached size class
  void* p = a->AllocateRaw(kTensorAlignment, big);
  REQUIRE(p != nullptr);
  REQUIRE(reinterpret_cast<uintptr_t>(p) % kTensorAlignment == 0);
  std::memset(p, 1, big);  // all of it is ours
  CHECK(a->bytes_in_use() == before + static_cast<int64_t>(big));
  a->DeallocateRaw(p, big);
  CHECK(a->bytes_in_use() == before);
  CHECK(a->cached_bytes() >= static_cast<int64_t>(big));
  // A slightly smaller request in the same size class gets the same block back.
  void* q = a->AllocateRaw(kTensorAlignment, big - 64);
  CHECK(q == p);
  CHECK(a->cached_bytes() == 0);
  a->DeallocateRaw(q, big - 64);
  CHECK(a->ReleaseCache() > 0);
  CHECK(a->cached_bytes() == 0);
  // Small blocks are not cached.
  void* s = a->AllocateRaw(kTensorAlignment, 1000);
  a->DeallocateRaw(s, 1000);
  CHECK(a->cached_bytes() == 0);
}

TEST_CASE("empty tensors, scalars and strings") {
  Tensor e(DT_FLOAT, TensorShape{0, 3});
  REQUIRE(e.NumElements() == 0);
  REQUIRE(e.IsInitialized());
  Tensor s = Tensor::Scalar<int64_t>(7);
  REQUIRE(s.dims() == 0);
  REQUIRE(s.scalar<int64_t>() == 7);
  Tensor str(DT_STRING, TensorShape{2});
  str.data<std::string>()[1] = "hello";
  REQUIRE(str.DeepCopy().data<std::string>()[1] == "hello");
  REQUIRE(str.SummarizeValue() == "\"\" \"hello\"");
}

TEST_CASE("Eigen views map the tensor's memory") {
  Tensor t = MakeTensor<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto m = TensorView<float, 2>(t);
  REQUIRE(m(1, 2) == 6);
  m(0, 0) = 10;
  REQUIRE(t.data<float>()[0] == 10);
  REQUIRE(FlatArrayView<float>(t).sum() == Approx(10 + 2 + 3 + 4 + 5 + 6));
}

TEST_CASE("TensorProto round trip, tensor_content and typed fields") {
  Tensor t = MakeTensor<int32_t>({1, -2, 3, 4, 5, 6}, {3, 2});
  for (bool content : {true, false}) {
    proto::TensorProto p;
    TensorToProto(t, &p, content);
    REQUIRE(p.tensor_content().empty() == !content);
    Tensor back;
    REQUIRE(TensorFromProto(p, &back).ok());
    REQUIRE(TensorEquals(t, back));
  }
  Tensor s = MakeTensor<std::string>({"a", "bc"}, {2});
  proto::TensorProto ps;
  TensorToProto(s, &ps);
  Tensor sback;
  REQUIRE(TensorFromProto(ps, &sback).ok());
  REQUIRE(TensorEquals(s, sback));
}

TEST_CASE("TensorProto: a single typed value fills the shape; bad protos are errors") {
  proto::TensorProto p;
  p.set_dtype(proto::DT_FLOAT);
  p.mutable_tensor_shape()->add_dim()->set_size(3);
  p.add_float_val(2.5f);
  Tensor t;
  REQUIRE(TensorFromProto(p, &t).ok());
  REQUIRE(Values<float>(t) == std::vector<float>{2.5f, 2.5f, 2.5f});

  p.clear_float_val();
  p.set_tensor_content(std::string(5, '\0'));  // 5 bytes for 3 floats
  Status s = TensorFromProto(p, &t);
  REQUIRE(s.code() == Code::kInvalidArgument);
  REQUIRE_THAT(s.message(), Catch::Contains("12"));

  proto::TensorProto neg;
  neg.set_dtype(proto::DT_FLOAT);
  neg.mutable_tensor_shape()->add_dim()->set_size(-4);
  REQUIRE(TensorFromProto(neg, &t).code() == Code::kInvalidArgument);
}

namespace {
template <class T>
T RoundTrip(caf::actor_system& sys, const T& value) {
  std::vector<char> buf;
  caf::binary_serializer sink(sys, buf);
  T copy = value;
  REQUIRE_FALSE(sink(copy));
  caf::binary_deserializer source(sys, buf);
  T out;
  REQUIRE_FALSE(source(out));
  return out;
}
}  // namespace

TEST_CASE("wire format: tensors, statuses and step messages serialize losslessly") {
  caf::actor_system_config cfg;
  RegisterMessageTypes(cfg);
  caf::actor_system sys{cfg};
  Tensor f = MakeTensor<float>({1.5f, -2, 3, 4}, {2, 2});
  REQUIRE(TensorEquals(RoundTrip(sys, f), f));
  Tensor s = MakeTensor<std::string>({"x", "", "yz"}, {3});
  REQUIRE(TensorEquals(RoundTrip(sys, s), s));
  Tensor empty(DT_INT64, TensorShape{0, 4});
  REQUIRE(TensorEquals(RoundTrip(sys, empty), empty));
  Status st = errors::OutOfRange("end of input in 'f.txt'");
  REQUIRE(RoundTrip(sys, st) == st);
  RunStepResponse resp;
  resp.status = errors::Cancelled("x");
  resp.retvals = {f, s};
  resp.stats = {NodeExecStats{"mm", "MatMul", "pool", 7, 10, 250, "/device:CPU:0", 123456, {{DT_DOUBLE, {2, 4}, 64}}}};
  RunStepResponse back = RoundTrip(sys, resp);
  REQUIRE(back.status == resp.status);
  REQUIRE(back.retvals.size() == 2);
  REQUIRE(TensorEquals(back.retvals[1], s));
  REQUIRE(back.stats.size() == 1);
  REQUIRE(back.stats[0].where == "pool");
  REQUIRE(back.stats[0].end_us == 250);
  REQUIRE(back.stats[0].device == "/device:CPU:0");
  REQUIRE(back.stats[0].all_start_us == 123456);
  REQUIRE(back.stats[0].outputs.size() == 1);
  REQUIRE(back.stats[0].outputs[0].dtype == DT_DOUBLE);
  REQUIRE(back.stats[0].outputs[0].shape == std::vector<int64_t>{2, 4});
  REQUIRE(back.stats[0].outputs[0].bytes == 64);
  // The container actor's protocol.
  VarUpdateRequest up;
  up.kind = 4;
  up.handles = {"h1", "h2"};
  up.args = {f, Tensor::Scalar<float>(0.5f)};
  up.use_nesterov = true;
  VarUpdateRequest up_back = RoundTrip(sys, up);
  REQUIRE(up_back.kind == 4);
  REQUIRE(up_back.handles == up.handles);
  REQUIRE(TensorEquals(up_back.args[0], f));
  REQUIRE(up_back.use_nesterov);
  VarReadResponse rr;
  rr.status = errors::FailedPrecondition("Attempting to use uninitialized value w");
  rr.values = {s};
  VarReadResponse rr_back = RoundTrip(sys, rr);
  REQUIRE(rr_back.status == rr.status);
  REQUIRE(TensorEquals(rr_back.values[0], s));
  ResetContainersRequest reset{{"a", ""}};
  REQUIRE(RoundTrip(sys, reset).containers == reset.containers);
}

TEST_CASE("wire format: resource handles, rendezvous keys and queue messages cross processes as their values") {
  caf::actor_system_config cfg;
  RegisterMessageTypes(cfg);
  caf::actor_system sys{cfg};
  Tensor handle(DT_RESOURCE, TensorShape{});
  handle.scalar<std::string>() = std::string("encoded\0handle", 14);
  Tensor handle_back = RoundTrip(sys, handle);
  REQUIRE(handle_back.dtype() == DT_RESOURCE);
  REQUIRE(handle_back.scalar<std::string>() == handle.scalar<std::string>());
  // A key's text crosses; its hash is the same on the other side, so it matches there.
  RendezvousKey key = MakeRendezvousKey("/job:a/device:CPU:0", 7, "/job:b/device:CPU:0", "x:0", 1, 2);
  RendezvousKey key_back = RoundTrip(sys, key);
  REQUIRE(key_back.str() == key.str());
  REQUIRE(key_back.hash() == key.hash());
  REQUIRE(key_back == key);
  QueueSpec spec;
  spec.kind = static_cast<int32_t>(QueueKind::kPaddingFifo);
  spec.component_types = {DT_FLOAT, DT_STRING};
  spec.shapes = {PartialTensorShape(std::vector<int64_t>{-1, 3}), PartialTensorShape()};
  spec.capacity = 10;
  QueueOpenRequest open{"h", spec, true};
  QueueOpenRequest open_back = RoundTrip(sys, open);
  REQUIRE(QueueSpecMismatch(open_back.spec, spec).empty());
  REQUIRE(open_back.spec.shapes[1].unknown_rank());
  REQUIRE(open_back.create);
  QueueRequest req;
  req.op = static_cast<int32_t>(QueueOp::kEnqueueMany);
  req.step_id = 42;
  req.components = {MakeTensor<float>({1, 2, 3}, {1, 3})};
  QueueRequest req_back = RoundTrip(sys, req);
  REQUIRE(req_back.step_id == 42);
  REQUIRE(TensorEquals(req_back.components[0], req.components[0]));
}

TEST_CASE("wire format: a corrupt tensor header is an error, not a crash") {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  std::vector<char> buf;
  caf::binary_serializer sink(sys, buf);
  int32_t dtype = 77;  // no such dtype
  std::vector<int64_t> dims{2};
  REQUIRE_FALSE(sink(dtype, dims));
  caf::binary_deserializer source(sys, buf);
  Tensor t;
  REQUIRE(source(t));  // returns an error
}

TEST_CASE("wire format: a tensor header claiming more bytes than the message holds is refused before allocating") {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  for (int32_t dtype : {static_cast<int32_t>(DT_FLOAT), static_cast<int32_t>(DT_STRING)}) {
    std::vector<char> buf;
    caf::binary_serializer sink(sys, buf);
    std::vector<int64_t> dims{int64_t{1} << 40};  // 4 TiB of floats, 2^40 strings
    REQUIRE_FALSE(sink(dtype, dims));
    buf.resize(buf.size() + 64, 0);  // a few bytes of "payload"
    const int64_t in_use = cpu_allocator()->bytes_in_use();
    caf::binary_deserializer source(sys, buf);
    Tensor t;
    auto err = source(t);
    REQUIRE(err);
    REQUIRE_THAT(caf::to_string(err), Catch::Contains("claims more bytes than it holds"));
    REQUIRE(cpu_allocator()->bytes_in_use() == in_use);
  }
}
