// SPDX-License-Identifier: Apache-2.0
// Spinning before a futex sleep, with a budget that adapts to how often it pays.
#pragma once

#include <time.h>

#include "arch/cpu_relax.hpp"

namespace ito::os {

// How long a thread about to sleep on a futex first spins for its condition.
// A hand-off that completes within microseconds then needs no futex sleep and
// no wake-up of a sleeping CPU (in a virtual machine that alone can cost tens
// of microseconds). Adaptive, as glibc's adaptive mutexes: a spin that
// succeeds doubles the next budget (up to max_ns), one that fails halves it,
// down to no spinning at all; on a loaded machine, where the partner rarely
// runs within the budget, spinning thus stops instead of taking CPU time the
// partner needs (it is retried, briefly, every 64th wait).
class adaptive_spin {
 public:
  static constexpr long max_ns = 20'000;
  static constexpr long min_ns = 500;

  template <class Pred>
  bool wait(Pred&& pred) noexcept {
    if (pred()) return true;
    long budget = budget_;
    if (budget == 0) {
      if (++skipped_ % 64 != 0) return false;
      budget = min_ns;
    }
    const bool ok = spin_for(pred, budget);
    budget_ = ok ? (budget * 2 > max_ns ? max_ns : budget * 2) : (budget / 2 < min_ns ? 0 : budget / 2);
    return ok;
  }

 private:
  template <class Pred>
  static bool spin_for(Pred& pred, long budget_ns) noexcept {
    timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
      for (int i = 0; i < 32; ++i) {
        if (pred()) return true;
        arch::cpu_relax();
      }
      clock_gettime(CLOCK_MONOTONIC, &now);
      if ((now.tv_sec - start.tv_sec) * 1'000'000'000L + (now.tv_nsec - start.tv_nsec) > budget_ns)
        return pred();
    }
  }

  long budget_ = max_ns;
  unsigned skipped_ = 0;
};

}  // namespace ito::os
