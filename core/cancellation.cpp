#include "actorflow/core/cancellation.hpp"

#include <vector>

namespace actorflow {

CancellationManager::Token CancellationManager::get_token() {
  std::lock_guard<std::mutex> l(mu_);
  return next_++;
}

bool CancellationManager::RegisterCallback(Token token, Callback cb) {
  std::lock_guard<std::mutex> l(mu_);
  if (cancelled_) return false;
  callbacks_.emplace(token, std::move(cb));
  return true;
}

bool CancellationManager::DeregisterCallback(Token token) {
  std::lock_guard<std::mutex> l(mu_);
  return callbacks_.erase(token) > 0;
}

void CancellationManager::StartCancel() {
  std::unordered_map<Token, Callback> cbs;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    cbs.swap(callbacks_);
  }
  for (auto& [token, cb] : cbs) cb();
}

bool CancellationManager::IsCancelled() const {
  std::lock_guard<std::mutex> l(mu_);
  return cancelled_;
}

}  // namespace actorflow
