// SPDX-License-Identifier: Apache-2.0
// How waiters learn that something finished, without a lock on the path that
// finishes it: one atomic word per event holds the count of completions, how
// many completers are still inside their wake-up code (busy), and whether any
// waiter is enlisted. A completer takes the waiter list's lock only when that
// bit is set; a waiter that finds the count reached returns only when no
// completer is busy, so it may free the memory at once.
#pragma once

#include <atomic>
#include <cstdint>

#include "flow/waiting.hpp"

namespace ito::flow::detail {

// A node's completed activations, for node::completion() futures.
class completion_count {
 public:
  // Counted only once someone asked for a future: a plain node pays nothing.
  bool observed() const noexcept { return observed_.load(std::memory_order_relaxed); }
  // Marks the node observed; returns the count a future should wait beyond.
  std::uint64_t observe() noexcept;
  // One activation ended.
  void complete() noexcept;
  bool reached(std::uint64_t target) const noexcept;
  void wait(std::uint64_t target);

 private:
  static constexpr std::uint64_t waiters_bit = 1;
  static constexpr std::uint64_t busy_one = 2;
  static constexpr std::uint64_t busy_mask = 0xFFFE;  // 15 bits: completers inside complete()
  static constexpr int count_shift = 16;
  static std::uint64_t count_of(std::uint64_t w) noexcept { return w >> count_shift; }
  static bool enlist(flow_waiter* w, void* self);

  std::atomic<bool> observed_{false};
  std::atomic<std::uint64_t> word_{0};
  waiter_list waiters_;
};

// A graph's activations in flight (runnable or running, plus holds), and how
// often that number has dropped to zero: graph::wait() waits for a drop.
class idle_count {
 public:
  void add(std::uint64_t n) noexcept {
    word_.fetch_add(n << outstanding_shift, std::memory_order_relaxed);
  }
  // Returns n activations; the one that brings the count to zero wakes the waiters.
  void sub(std::uint64_t n) noexcept;
  std::uint64_t outstanding() const noexcept {
    return word_.load(std::memory_order_acquire) >> outstanding_shift;
  }
  // Nothing in flight and no completer still inside sub().
  bool idle() const noexcept;
  void wait();

 private:
  static constexpr std::uint64_t waiters_bit = 1;
  static constexpr std::uint64_t busy_one = 2;
  static constexpr std::uint64_t busy_mask = 0xFE;
  static constexpr int drops_shift = 8;
  static constexpr std::uint64_t drops_mask = 0xFFFFFFull << drops_shift;  // 24 bits, wrapping
  static constexpr int outstanding_shift = 32;
  static std::uint32_t drops_of(std::uint64_t w) noexcept {
    return static_cast<std::uint32_t>((w & drops_mask) >> drops_shift);
  }
  static bool enlist(flow_waiter* w, void* self);

  std::atomic<std::uint64_t> word_{0};
  waiter_list waiters_;
};

}  // namespace ito::flow::detail
