// SPDX-License-Identifier: Apache-2.0
// The completion words (see completion_count.hpp).
#include "flow/completion_count.hpp"

#include "arch/context.hpp"

namespace ito::flow::detail {

std::uint64_t completion_count::observe() noexcept {
  observed_.store(true, std::memory_order_seq_cst);
  return count_of(word_.load(std::memory_order_seq_cst)) + 1;
}

void completion_count::complete() noexcept {
  std::uint64_t old = word_.load(std::memory_order_relaxed);
  std::uint64_t next;
  do {
    next = old + (std::uint64_t{1} << count_shift);
    if (old & waiters_bit) next += busy_one;
  } while (!word_.compare_exchange_weak(old, next, std::memory_order_acq_rel,
                                        std::memory_order_relaxed));
  if (!(old & waiters_bit)) return;
  waiters_.lock();
  flow_waiter* woken = waiters_.take_reached(count_of(next));
  if (waiters_.empty()) word_.fetch_and(~waiters_bit, std::memory_order_relaxed);
  waiters_.unlock();
  // The last touch of this node's memory: from here a waiter may free it.
  word_.fetch_sub(busy_one, std::memory_order_release);
  wake_all(woken);
}

bool completion_count::reached(std::uint64_t target) const noexcept {
  std::uint64_t w = word_.load(std::memory_order_acquire);
  return count_of(w) >= target && (w & busy_mask) == 0;
}

bool completion_count::enlist(flow_waiter* w, void* p) {
  auto* self = static_cast<completion_count*>(p);
  self->waiters_.lock();
  std::uint64_t old = self->word_.load(std::memory_order_acquire);
  do {
    if (count_of(old) >= w->target) {
      self->waiters_.unlock();
      return false;
    }
  } while (!self->word_.compare_exchange_weak(old, old | waiters_bit, std::memory_order_acq_rel,
                                              std::memory_order_acquire));
  self->waiters_.push(w);
  self->waiters_.unlock();
  return true;
}

void completion_count::wait(std::uint64_t target) {
  if (count_of(word_.load(std::memory_order_acquire)) < target) block(&enlist, this, target);
  // A completer that has not left complete() yet still touches this word.
  while (!reached(target)) arch::cpu_relax();
}

void idle_count::sub(std::uint64_t n) noexcept {
  std::uint64_t old = word_.load(std::memory_order_relaxed);
  std::uint64_t next;
  bool dropped;
  do {
    next = old - (n << outstanding_shift);
    dropped = (next >> outstanding_shift) == 0;
    if (dropped) {
      next = (next & ~drops_mask) | ((next + (std::uint64_t{1} << drops_shift)) & drops_mask);
      if (old & waiters_bit) next += busy_one;
    }
  } while (!word_.compare_exchange_weak(old, next, std::memory_order_acq_rel,
                                        std::memory_order_relaxed));
  if (!dropped || !(old & waiters_bit)) return;
  waiters_.lock();
  flow_waiter* woken = waiters_.take_reached(~std::uint64_t{0});
  word_.fetch_and(~waiters_bit, std::memory_order_relaxed);
  waiters_.unlock();
  // The last touch of the graph's memory: from here a waiter may free it.
  word_.fetch_sub(busy_one, std::memory_order_release);
  wake_all(woken);
}

bool idle_count::idle() const noexcept {
  std::uint64_t w = word_.load(std::memory_order_acquire);
  return (w >> outstanding_shift) == 0 && (w & busy_mask) == 0;
}

bool idle_count::enlist(flow_waiter* w, void* p) {
  auto* self = static_cast<idle_count*>(p);
  const auto seen_drops = static_cast<std::uint32_t>(w->target);
  self->waiters_.lock();
  std::uint64_t old = self->word_.load(std::memory_order_acquire);
  do {
    // Idle now, or it dropped to zero since the caller looked: no need to wait.
    if ((old >> outstanding_shift) == 0 || drops_of(old) != seen_drops) {
      self->waiters_.unlock();
      return false;
    }
  } while (!self->word_.compare_exchange_weak(old, old | waiters_bit, std::memory_order_acq_rel,
                                              std::memory_order_acquire));
  self->waiters_.push(w);
  self->waiters_.unlock();
  return true;
}

void idle_count::wait() {
  std::uint64_t w = word_.load(std::memory_order_acquire);
  if ((w >> outstanding_shift) != 0) block(&enlist, this, drops_of(w));
  while ((word_.load(std::memory_order_acquire) & busy_mask) != 0) arch::cpu_relax();
}

}  // namespace ito::flow::detail
