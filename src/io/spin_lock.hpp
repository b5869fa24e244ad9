// SPDX-License-Identifier: Apache-2.0
// A test-and-test-and-set lock for the per-descriptor state: held for a few
// instructions, by a parking ULT's suspend hook (which must not sleep) and by
// the poller thread.
#pragma once

#include <atomic>

#include "arch/context.hpp"

namespace ito::detail {

class spin_lock {
 public:
  void lock() noexcept {
    while (held_.exchange(true, std::memory_order_acquire))
      while (held_.load(std::memory_order_relaxed)) arch::cpu_relax();
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

}  // namespace ito::detail
