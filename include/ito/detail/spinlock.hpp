// SPDX-License-Identifier: Apache-2.0
// ito's one spinlock, for state held a few instructions at a time (wait
// queues, descriptor state, waiter lists): never held across a switch or a
// sleep. Public only because the sync types embed it; its slow path is in
// src/os/spinlock.cpp.
#pragma once

#include <atomic>
#include <cstdint>

namespace ito::detail {

class spinlock {
 public:
  constexpr spinlock() noexcept = default;
  void lock() noexcept {
    if (word_.exchange(1, std::memory_order_acquire) != 0) lock_contended();
  }
  void unlock() noexcept { word_.store(0, std::memory_order_release); }

 private:
  void lock_contended() noexcept;
  std::atomic<std::uint32_t> word_{0};
};

}  // namespace ito::detail
