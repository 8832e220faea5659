// Whether a test program may replace the global operator new: not under a
// sanitizer, whose runtime brings its own (AF_NO_NEW_REPLACEMENT is defined
// there; a case that needs the replacement skips: tests/skip.hpp).
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(AF_SANITIZED)
#define AF_NO_NEW_REPLACEMENT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || __has_feature(thread_sanitizer)
#define AF_NO_NEW_REPLACEMENT 1
#endif
#endif
