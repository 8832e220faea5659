// ClientChannel (actors/client_channel.hpp): a request's answer is taken
// once. An answer and its callee's down message may reach the channel on two
// threads at once; the one that claims the request's id (one
// compare-and-swap) is the reply, the other is dropped, and nothing meant for
// an earlier request is taken as a later one's reply.
#include <catch2/catch.hpp>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/system_messages.hpp>

#include <atomic>
#include <string>
#include <thread>

#include "actorflow/actors/client_channel.hpp"
#include "actorflow/actors/runtime.hpp"
#include "test_util.hpp"

using namespace actorflow;

namespace {

// An actor that never answers: the tests answer for it (StartVia's ReplyFn).
caf::actor Silent(caf::actor_system& sys) {
  return sys.spawn([]() -> caf::behavior {
    return {[](int) {}};
  });
}

// Starts a request to `dest` on `ch`; its ReplyFn goes to `*reply`.
void StartTo(ClientChannel* ch, const caf::actor& dest, ClientChannel::ReplyFn* reply,
             std::shared_ptr<ReplyNotifier> notifier = nullptr) {
  const Status s = ch->StartVia(
      dest,
      [reply](ClientChannel::ReplyFn fn, ClientChannel::CancelFn*) {
        *reply = std::move(fn);
        return Status::OK();
      },
      std::move(notifier));
  REQUIRE(s.ok());
}

std::string Text(const caf::message& m) {
  return m.match_elements<std::string>() ? m.get_as<std::string>(0) : std::string("not a string");
}

uint64_t Replies(const ReplyNotifier& n) {
  std::lock_guard<std::mutex> l(const_cast<ReplyNotifier&>(n).mu);
  return n.replies;
}

// The notifier's count once a delivery has told it: a delivery marks the
// channel ready before it tells its notifier, so a Wait may return first.
uint64_t RepliesAfterWait(ReplyNotifier& n) {
  std::unique_lock<std::mutex> l(n.mu);
  n.cv.wait_for(l, std::chrono::seconds(10), [&] { return n.replies > 0; });
  return n.replies;
}

}  // namespace

TEST_CASE("client channel: an answer delivered twice is taken once, the first") {
  Runtime rt(test::TwoThreads());
  ClientChannel ch(rt.system());
  caf::actor dest = Silent(rt.system());
  auto notifier = std::make_shared<ReplyNotifier>();
  ClientChannel::ReplyFn reply;
  StartTo(&ch, dest, &reply, notifier);
  CHECK_FALSE(ch.Ready());
  reply(caf::make_message(std::string("first")));
  reply(caf::make_message(std::string("second")));
  CHECK(ch.Ready());
  CHECK(Replies(*notifier) == 1);
  caf::message m;
  REQUIRE(ch.Wait(std::chrono::milliseconds(1000), &m).ok());
  CHECK(Text(m) == "first");
  caf::anon_send_exit(dest, caf::exit_reason::kill);
}

TEST_CASE("client channel: a late answer to an earlier request is not taken as the next one's") {
  Runtime rt(test::TwoThreads());
  ClientChannel ch(rt.system());
  caf::actor dest = Silent(rt.system());
  ClientChannel::ReplyFn a, b;
  StartTo(&ch, dest, &a);
  a(caf::make_message(std::string("a")));
  caf::message m;
  REQUIRE(ch.Wait(std::chrono::milliseconds(1000), &m).ok());
  CHECK(Text(m) == "a");
  // The channel is reused for request b; a's answer comes again (a retry, a duplicate).
  StartTo(&ch, dest, &b);
  a(caf::make_message(std::string("a again")));
  CHECK_FALSE(ch.Ready());
  b(caf::make_message(std::string("b")));
  REQUIRE(ch.Wait(std::chrono::milliseconds(1000), &m).ok());
  CHECK(Text(m) == "b");
  caf::anon_send_exit(dest, caf::exit_reason::kill);
}

TEST_CASE("client channel: a callee that dies answers with its down message; an answer after that is dropped") {
  Runtime rt(test::TwoThreads());
  ClientChannel ch(rt.system());
  caf::actor dest = Silent(rt.system());
  auto notifier = std::make_shared<ReplyNotifier>();
  ClientChannel::ReplyFn reply;
  StartTo(&ch, dest, &reply, notifier);
  caf::anon_send_exit(dest, caf::exit_reason::kill);
  caf::message m;
  REQUIRE(ch.Wait(std::chrono::milliseconds(10000), &m).ok());
  CHECK(m.match_elements<caf::down_msg>());
  reply(caf::make_message(std::string("too late")));
  CHECK(RepliesAfterWait(*notifier) == 1);
  // The next request on the channel is not answered by the late one.
  caf::actor other = Silent(rt.system());
  ClientChannel::ReplyFn next;
  StartTo(&ch, other, &next);
  reply(caf::make_message(std::string("too late again")));
  CHECK_FALSE(ch.Ready());
  next(caf::make_message(std::string("next")));
  REQUIRE(ch.Wait(std::chrono::milliseconds(1000), &m).ok());
  CHECK(Text(m) == "next");
  caf::anon_send_exit(other, caf::exit_reason::kill);
}

TEST_CASE("client channel: an answer and the callee's death racing on two threads deliver exactly once") {
  Runtime rt(test::TwoThreads());
  int answers = 0, downs = 0;
  for (int i = 0; i < 200; ++i) {
    ClientChannel ch(rt.system());
    caf::actor dest = Silent(rt.system());
    auto notifier = std::make_shared<ReplyNotifier>();
    ClientChannel::ReplyFn reply;
    StartTo(&ch, dest, &reply, notifier);
    std::atomic<bool> go{false};
    std::thread answering([&] {
      while (!go.load()) {
      }
      reply(caf::make_message(std::string("answer")));
    });
    go.store(true);
    caf::anon_send_exit(dest, caf::exit_reason::kill);
    caf::message m;
    const Status s = ch.Wait(std::chrono::milliseconds(10000), &m);
    answering.join();
    REQUIRE(s.ok());
    const bool answered = m.match_elements<std::string>();
    CHECK((answered || m.match_elements<caf::down_msg>()));
    answers += answered;
    downs += !answered;
    // The other delivery may still be on its way: whatever it does, the count stays 1.
    CHECK(RepliesAfterWait(*notifier) == 1);
  }
  INFO(answers << " answers, " << downs << " down messages");
  CHECK(answers + downs == 200);
}
