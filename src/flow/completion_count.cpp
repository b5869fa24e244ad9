// SPDX-License-Identifier: Apache-2.0
// The completion words (see completion_count.hpp).
#include "flow/completion_count.hpp"

#include "arch/context.hpp"

namespace ito::flow::detail {
namespace {

// Puts w on `list` unless `satisfied(word)` holds already. The CAS that finds
// it unsatisfied also sets the waiters bit, under the list's lock, so a
// completer that misses the bit cannot miss w.
template <class Satisfied>
bool enlist_unless(std::atomic<std::uint64_t>& word, std::uint64_t waiters_bit, waiter_list& list,
                   flow_waiter* w, Satisfied satisfied) {
  list.lock();
  std::uint64_t old = word.load(std::memory_order_acquire);
  do {
    if (satisfied(old)) {
      list.unlock();
      return false;
    }
  } while (!word.compare_exchange_weak(old, old | waiters_bit, std::memory_order_acq_rel,
                                       std::memory_order_acquire));
  list.push(w);
  list.unlock();
  return true;
}

}  // namespace

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
  return enlist_unless(self->word_, waiters_bit, self->waiters_, w,
                       [w](std::uint64_t word) { return count_of(word) >= w->target; });
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
  // Idle now, or it dropped to zero since the caller looked: no need to wait.
  return enlist_unless(self->word_, waiters_bit, self->waiters_, w, [seen_drops](std::uint64_t word) {
    return (word >> outstanding_shift) == 0 || drops_of(word) != seen_drops;
  });
}

void idle_count::wait() {
  std::uint64_t w = word_.load(std::memory_order_acquire);
  if ((w >> outstanding_shift) != 0) block(&enlist, this, drops_of(w));
  while ((word_.load(std::memory_order_acquire) & busy_mask) != 0) arch::cpu_relax();
}

}  // namespace ito::flow::detail
