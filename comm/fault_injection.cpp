#include "actorflow/comm/fault_injection.hpp"

#include <boost/asio.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <vector>

namespace actorflow {

namespace {

// A number (the whole item's value), or false.
bool ParseNumber(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && *out == *out;  // not NaN
}

}  // namespace

Status TransportFaults::Parse(const std::string& spec, TransportFaults* out) {
  TransportFaults f;
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    double v = 0;
    if (eq == std::string::npos || !ParseNumber(item.substr(eq + 1), &v))
      return errors::InvalidArgument("transport faults: '", item, "' is not KEY=NUMBER");
    if (key == "delay_ms" || key == "jitter_ms") {
      if (v < 0 || v > 3600e3) return errors::InvalidArgument("transport faults: ", key, " must be in [0, 3600000]");
      (key == "delay_ms" ? f.delay_ms : f.jitter_ms) = v;
    } else if (key == "drop" || key == "cut") {
      if (v < 0 || v > 1) return errors::InvalidArgument("transport faults: ", key, " is a probability, in [0, 1]");
      (key == "drop" ? f.drop : f.cut) = v;
    } else if (key == "seed") {
      if (v < 0 || v != static_cast<double>(static_cast<uint64_t>(v)))
        return errors::InvalidArgument("transport faults: seed must be a whole number >= 0");
      f.seed = static_cast<uint64_t>(v);
    } else {
      return errors::InvalidArgument("transport faults: unknown key '", key,
                                     "' (delay_ms, jitter_ms, drop, cut, seed)");
    }
  }
  if (f.jitter_ms > f.delay_ms)
    return errors::InvalidArgument("transport faults: jitter_ms (", f.jitter_ms, ") must not exceed delay_ms (",
                                   f.delay_ms, ")");
  *out = f;
  return Status::OK();
}

std::string TransportFaults::ToString() const {
  std::ostringstream s;
  s << "delay_ms=" << delay_ms << ",jitter_ms=" << jitter_ms << ",drop=" << drop << ",cut=" << cut
    << ",seed=" << seed;
  return s.str();
}

Status TransportFaultsFromEnvironment(TransportFaults* out) {
  const char* v = std::getenv(kTransportFaultsVariable);
  *out = TransportFaults();
  if (v == nullptr || *v == '\0') return Status::OK();
  Status s = TransportFaults::Parse(v, out);
  if (!s.ok()) return errors::InvalidArgument(kTransportFaultsVariable, "=\"", v, "\": ", s.message());
  return Status::OK();
}

// One peer's messages in line, released in order by one timer.
struct FaultInjector::Link {
  explicit Link(boost::asio::io_context& io) : timer(io) {}
  std::deque<Held> held;
  std::chrono::steady_clock::time_point last{};  // the latest release so far: none before it
  boost::asio::steady_timer timer;
  bool armed = false;  // a release is scheduled (or being posted)
};

FaultInjector::FaultInjector(const TransportFaults& faults, const std::string& salt, boost::asio::io_context& io)
    : faults_(faults), io_(io), rng_(faults.seed ^ std::hash<std::string>()(salt)) {
  static std::once_flag said;
  std::call_once(said, [&] {
    std::fprintf(stderr, "actorflow: TEST-ONLY fault injection on the tensor transport (%s)\n",
                 faults.ToString().c_str());
  });
}

FaultInjector::~FaultInjector() = default;

void FaultInjector::Send(const std::string& task, std::function<void()> deliver, std::function<void()> cut) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  if (faults_.drop > 0 && unit(rng_) < faults_.drop) {
    ++dropped_;
    return;
  }
  double ms = faults_.delay_ms;
  if (faults_.jitter_ms > 0) ms += std::uniform_real_distribution<double>(-faults_.jitter_ms, faults_.jitter_ms)(rng_);
  const bool cut_now = faults_.cut > 0 && unit(rng_) < faults_.cut;
  if (cut_now) ++cut_;
  auto& link = links_[task];
  if (!link) link = std::make_unique<Link>(io_);
  const auto release = std::max(
      link->last, std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double, std::milli>(std::max(0.0, ms))));
  link->last = release;
  link->held.push_back({release, cut_now ? std::move(cut) : std::move(deliver)});
  if (link->armed) return;
  link->armed = true;
  boost::asio::post(io_, [this, task] { Arm(task); });
}

// On io's thread: the timer for `task`'s first message held.
void FaultInjector::Arm(const std::string& task) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = links_.find(task);
  if (stopped_ || it == links_.end() || it->second->held.empty()) return;
  Link& link = *it->second;
  link.timer.expires_at(link.held.front().release);
  link.timer.async_wait([this, task](const boost::system::error_code& ec) {
    if (!ec) Release(task);
  });
}

// On io's thread: runs the actions of `task`'s messages that are due, in order.
void FaultInjector::Release(const std::string& task) {
  std::vector<std::function<void()>> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(task);
    if (stopped_ || it == links_.end()) return;
    Link& link = *it->second;
    const auto now = std::chrono::steady_clock::now();
    while (!link.held.empty() && link.held.front().release <= now) {
      due.push_back(std::move(link.held.front().action));
      link.held.pop_front();
    }
    if (link.held.empty()) {
      link.armed = false;
    } else {
      link.timer.expires_at(link.held.front().release);
      link.timer.async_wait([this, task](const boost::system::error_code& ec) {
        if (!ec) Release(task);
      });
    }
  }
  for (auto& action : due) action();
}

void FaultInjector::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  for (auto& [task, link] : links_) {
    link->timer.cancel();
    link->held.clear();  // their actions hold the transport: let it go
  }
}

bool FaultInjector::idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [task, link] : links_)
    if (!link->held.empty()) return false;
  return true;
}

uint64_t FaultInjector::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

uint64_t FaultInjector::cut() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cut_;
}

}  // namespace actorflow
