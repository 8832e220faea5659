// Replaces the test program's operator new with one that fails on demand:
// include it in exactly one .cpp of a test executable (it defines the global
// operator new and delete). What fails, on demand:
//  - every allocation of at least `g_fail_from_bytes` bytes, on any thread,
//    while that is non-zero;
//  - the next `t_fail_next` allocations on a thread (memory exhausted for a
//    moment, as when other steps are still giving theirs back);
//  - the one allocation on a thread after `t_fail_after` more succeed (a
//    sweep over every allocation of a call: 0, 1, 2, ...; -1: off).
// Each refusal is counted in `g_refused`.
//
// ASan and its runtime bring their own operator new: the replacement exists
// only in builds without a sanitizer (AF_NO_NEW_REPLACEMENT is defined where
// it does not); a case that needs it skips there (tests/skip.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "new_replacement.hpp"

namespace {
std::atomic<size_t> g_fail_from_bytes{0};  // 0: off
thread_local int t_fail_next = 0;
thread_local int t_fail_after = -1;
std::atomic<int64_t> g_refused{0};  // allocations refused so far

[[maybe_unused]] void* Allocate(size_t n) {
  const size_t from = g_fail_from_bytes.load(std::memory_order_relaxed);
  if (t_fail_after >= 0 && t_fail_after-- == 0) {
    g_refused.fetch_add(1, std::memory_order_relaxed);
    throw std::bad_alloc();
  }
  if (t_fail_next > 0 || (from != 0 && n >= from)) {
    if (t_fail_next > 0) --t_fail_next;
    g_refused.fetch_add(1, std::memory_order_relaxed);
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
}  // namespace

#ifndef AF_NO_NEW_REPLACEMENT
void* operator new(size_t n) { return Allocate(n); }
void* operator new[](size_t n) { return Allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
#endif
