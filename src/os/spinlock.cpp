// SPDX-License-Identifier: Apache-2.0
// The spinlock under contention. Holders never block or switch, so waiting
// is short unless the OS preempted the holder: then yield the CPU to it rather
// than burn the rest of our time slice.
#include <sched.h>

#include "arch/context.hpp"
#include "ito/detail/spinlock.hpp"

namespace ito::detail {

void spinlock::lock_contended() noexcept {
  constexpr int pauses_before_yield = 128;
  for (;;) {
    for (int i = 0; word_.load(std::memory_order_relaxed) != 0; ++i) {
      if (i < pauses_before_yield) {
        arch::cpu_relax();
      } else {
        sched_yield();
        i = 0;
      }
    }
    if (word_.exchange(1, std::memory_order_acquire) == 0) return;
  }
}

}  // namespace ito::detail
