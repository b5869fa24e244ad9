// SPDX-License-Identifier: Apache-2.0
// Shared by the tests: sizes that shrink under sanitizers (which slow ULT
// switches 10-100x and give each TSan fiber megabytes of shadow state).
#pragma once

#include <sys/resource.h>

#include <cstddef>

#include "arch/sanitizer.hpp"
#include "ito/error.hpp"
#include "ito/thread.hpp"

namespace ito::test {

#if ITO_TSAN
inline constexpr bool tsan = true;
#else
inline constexpr bool tsan = false;
#endif
#if ITO_ASAN
inline constexpr bool asan = true;
#else
inline constexpr bool asan = false;
#endif

// A cross build's tests run under qemu-user (tests/CMakeLists.txt defines
// ITO_TEST_UNDER_EMULATOR), 10-50x slower than natively.
#if ITO_TEST_UNDER_EMULATOR
inline constexpr bool emulated = true;
#else
inline constexpr bool emulated = false;
#endif

// n in plain builds, n/20 under ASan, n/100 under TSan, n/10 under emulation
// (at least 1).
constexpr std::size_t scaled(std::size_t n) {
  std::size_t s = tsan ? n / 100 : asan ? n / 20 : emulated ? n / 10 : n;
  return s ? s : 1;
}

// ULTs alive at once: n, but under TSan n / tsan_divisor (at least 4). Every
// live ULT holds a TSan fiber (about a megabyte, and a slower switch), on top
// of what scaled() does to iteration counts.
constexpr std::size_t live_ults(std::size_t n, std::size_t tsan_divisor = 20) {
  return tsan ? (n / tsan_divisor > 4 ? n / tsan_divisor : 4) : n;
}

// The error code of the ito::usage_error fn throws, or 0.
template <class F>
int usage_error_code(F&& fn) {
  try {
    fn();
  } catch (const ito::usage_error& e) {
    return e.code();
  }
  return 0;
}

// The death-test style of tests whose parent process runs threads. The
// "threadsafe" style re-executes the test binary, which under qemu-user fails
// (the host kernel cannot execute the target binary): there the child is
// forked as in the "fast" style, safe for statements that start their own
// runtime.
inline constexpr const char* threadsafe_death_style = emulated ? "fast" : "threadsafe";

// Peak resident set of this process, in KiB.
inline long peak_rss_kib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

// fib(n) with a ULT per call (the child computes fib(n - 1)): trees of ULTs.
inline long fib_ults(int n) {
  if (n < 2) return n;
  auto child = ito::create_thread(fib_ults, n - 1);
  long b = fib_ults(n - 2);
  return ito::join(child) + b;
}

}  // namespace ito::test
